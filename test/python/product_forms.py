"""Product forms of tile tasks for the tests (test_tile_product_forms.py
here, test/gpu/test_tile_products.py on the GPU machine, which has no
compiler): the tasks' IR, their inputs and their NumPy references."""

import re

import numpy as np

# Gathered rows on both sides: each edge's (h, r) rows against every
# negative tail t's, through a score `inner` of (e, w, x) (widened to %ew,
# %ww, %xw) yielding %s; OUTPUTS, OUTS and OUTPUT the function's outputs,
# the task's and its output operator. ELEMENT: the tables' element type.
EDGE_TASK = """
func.func @NAME(%E: memref<?x?xELEMENT> {kge.param = "E"}, %R: memref<?x?xELEMENT> {kge.param = "R"},
                %h: memref<?xi32> {kge.param = "h"}, %r: memref<?xi32> {kge.param = "r"},
                %t: memref<?xi32> {kge.param = "t"}, OUTPUTS) {
  tile.task ins(%E, %R, %E : memref<?x?xELEMENT>, memref<?x?xELEMENT>, memref<?x?xELEMENT>)
      outs(OUTS)
      gathers(%h, %r, %t : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>,
            affine_map<(i, j, k) -> (j, k)>]
      accumulate add output OUTPUT
      inner {
      ^bb0(%e: ELEMENT, %w: ELEMENT, %x: ELEMENT):
        %ew = WIDEN(%e)
        %ww = WIDEN(%w)
        %xw = WIDEN(%x)
INNER
        tile.yield %s : f32
      }PROJECT
  return
}
"""


def edge_task(name, inner, project="", k=None):
    """EDGE_TASK named `name` with `inner`'s lines: a dense [M, N] output C
    (then `project`, a projection region's text), or the k best (C_values,
    C_rows, C_cols)."""
    if k is None:
        outputs = '%C: memref<?x?xf32> {kge.param = "C"}'
        outs = "%C : memref<?x?xf32>"
        output = "dense {gathered = [[0, 0], [1, 0], [2, 0]]}"
    else:
        outputs = (f'%v: memref<{k}xf32> {{kge.param = "C_values"}}, '
                   f'%rows: memref<{k}xi32> {{kge.param = "C_rows"}}, '
                   f'%cols: memref<{k}xi32> {{kge.param = "C_cols"}}')
        outs = f"%v, %rows, %cols : memref<{k}xf32>, memref<{k}xi32>, memref<{k}xi32>"
        output = f"top_k {{gathered = [[0, 0], [1, 0], [2, 0]], k = {k} : i64}}"
    lines = "\n".join("        " + line for line in inner)
    return (EDGE_TASK.replace("NAME", name).replace("OUTPUTS", outputs)
            .replace("OUTS", outs).replace("OUTPUT", output).replace("INNER", lines)
            .replace("PROJECT", project))


# DistMult's score.
DISTMULT_INNER = ["%hr = arith.mulf %ew, %ww : f32", "%s = arith.mulf %hr, %xw : f32"]
DISTMULT = edge_task("distmult", DISTMULT_INNER)

# ComplEx's Re(<a + ib, c + id, conj(x + iy)>) as its four products, the
# imaginary part of the tail stored k-outermost (Y[k, j]); a projection
# after the sum.
COMPLEX = """
func.func @complex(%A: memref<?x?xELEMENT> {kge.param = "A"}, %B: memref<?x?xELEMENT> {kge.param = "B"},
                   %C: memref<?x?xELEMENT> {kge.param = "C"}, %D: memref<?x?xELEMENT> {kge.param = "D"},
                   %X: memref<?x?xELEMENT> {kge.param = "X"}, %Y: memref<?x?xELEMENT> {kge.param = "Y"},
                   %S: memref<?x?xf32> {kge.param = "S"}) {
  tile.task ins(%A, %B, %C, %D, %X, %Y : memref<?x?xELEMENT>, memref<?x?xELEMENT>, memref<?x?xELEMENT>,
                memref<?x?xELEMENT>, memref<?x?xELEMENT>, memref<?x?xELEMENT>)
      outs(%S : memref<?x?xf32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>,
            affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>,
            affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (k, j)>]
      accumulate add output dense
      inner {
      ^bb0(%a: ELEMENT, %b: ELEMENT, %c: ELEMENT, %d: ELEMENT, %x: ELEMENT, %y: ELEMENT):
        %aw = WIDEN(%a)
        %bw = WIDEN(%b)
        %cw = WIDEN(%c)
        %dw = WIDEN(%d)
        %xw = WIDEN(%x)
        %yw = WIDEN(%y)
        %ac = arith.mulf %aw, %cw : f32
        %acx = arith.mulf %ac, %xw : f32
        %bd = arith.mulf %bw, %dw : f32
        %bdx = arith.mulf %xw, %bd : f32
        %re = arith.subf %acx, %bdx : f32
        %ad = arith.mulf %aw, %dw : f32
        %ady = arith.mulf %ad, %yw : f32
        %bc = arith.mulf %bw, %cw : f32
        %bcy = arith.mulf %bc, %yw : f32
        %im = arith.addf %ady, %bcy : f32
        %s = arith.addf %re, %im : f32
        tile.yield %s : f32
      } project {
      ^bb0(%acc: f32, %i: index, %j: index):
        %half = arith.constant 0.5 : f32
        %p = arith.mulf %acc, %half : f32
        tile.yield %p : f32
      }
  return
}
"""

# Factors of any elementwise operations of one side: (2 exp(u / 4) - v) .
# (w * w) / 2, summed.
FACTORS = """
func.func @factors(%U: memref<?x?xELEMENT> {kge.param = "U"}, %V: memref<?x?xELEMENT> {kge.param = "V"},
                   %W: memref<?x?xELEMENT> {kge.param = "W"}, %S: memref<?x?xf32> {kge.param = "S"}) {
  tile.task ins(%U, %V, %W : memref<?x?xELEMENT>, memref<?x?xELEMENT>, memref<?x?xELEMENT>)
      outs(%S : memref<?x?xf32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>,
            affine_map<(i, j, k) -> (j, k)>]
      accumulate add output dense
      inner {
      ^bb0(%u: ELEMENT, %v: ELEMENT, %w: ELEMENT):
        %uw = WIDEN(%u)
        %vw = WIDEN(%v)
        %ww = WIDEN(%w)
        %quarter = arith.constant 0.25 : f32
        %two = arith.constant 2.0 : f32
        %q = arith.mulf %uw, %quarter : f32
        %e = math.exp %q : f32
        %e2 = arith.mulf %two, %e : f32
        %a = arith.subf %e2, %vw : f32
        %sq = arith.mulf %ww, %ww : f32
        %p = arith.mulf %a, %sq : f32
        %s = arith.divf %p, %two : f32
        tile.yield %s : f32
      }
  return
}
"""

# A matrix per row's key times a factor of two gathered rows (TransR's
# projection of h * s): the segment iterators with a product form.
SEGMENTS = """
func.func @segments(%E: memref<?x?xELEMENT> {kge.param = "E"}, %G: memref<?x?xELEMENT> {kge.param = "G"},
                    %W: memref<?x?x?xELEMENT> {kge.param = "W"},
                    %h: memref<?xi32> {kge.param = "h"}, %r: memref<?xi32> {kge.param = "r"},
                    %Y: memref<?x?xf32> {kge.param = "Y"}) {
  tile.task ins(%E, %G, %W : memref<?x?xELEMENT>, memref<?x?xELEMENT>, memref<?x?x?xELEMENT>)
      outs(%Y : memref<?x?xf32>)
      gathers(%h, %h, %r : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>,
            affine_map<(i, j, k) -> (i, k, j)>]
      accumulate add output dense {gathered = [[0, 0], [1, 0], [2, 0]]}
      inner {
      ^bb0(%e: ELEMENT, %g: ELEMENT, %w: ELEMENT):
        %ew = WIDEN(%e)
        %gw = WIDEN(%g)
        %ww = WIDEN(%w)
        %eg = arith.mulf %ew, %gw : f32
        %s = arith.mulf %eg, %ww : f32
        tile.yield %s : f32
      }
  return
}
"""

# TransE's distance to every negative: sqrt(sum (h + r - t)^2), a square of
# a sum across the sides (three terms: ||h + r||^2, -2 (h + r) . t,
# ||t||^2), the square root in the projection.
TRANSE = edge_task("transe", ["%hr = arith.addf %ew, %ww : f32", "%d = arith.subf %hr, %xw : f32",
                               "%s = arith.mulf %d, %d : f32"], project=""" project {
      ^bb0(%acc: f32, %i: index, %j: index):
        %zero = arith.constant 0.0 : f32
        %clamped = arith.maximumf %acc, %zero : f32
        %root = math.sqrt %clamped : f32
        tile.yield %root : f32
      }""")

# Other output operators on a product form: the k best DistMult scores
# (top-k; 64, and 8: fewer shard entries than the merge kernel's threads)
# and the pairs scoring above 2 (select), with their coordinates.
COMPLEX_SELECT = """
func.func @complex_select(%A: memref<?x?xELEMENT> {kge.param = "A"}, %B: memref<?x?xELEMENT> {kge.param = "B"},
                          %C: memref<?x?xELEMENT> {kge.param = "C"}, %D: memref<?x?xELEMENT> {kge.param = "D"},
                          %X: memref<?x?xELEMENT> {kge.param = "X"}, %Y: memref<?x?xELEMENT> {kge.param = "Y"},
                          %rows: memref<?xi32> {kge.param = "S_rows"}, %cols: memref<?xi32> {kge.param = "S_cols"},
                          %v: memref<?xf32> {kge.param = "S_values"}, %n: memref<1xi64> {kge.param = "S_count"}) {
  tile.task ins(%A, %B, %C, %D, %X, %Y : memref<?x?xELEMENT>, memref<?x?xELEMENT>, memref<?x?xELEMENT>,
                memref<?x?xELEMENT>, memref<?x?xELEMENT>, memref<?x?xELEMENT>)
      outs(%rows, %cols, %v, %n : memref<?xi32>, memref<?xi32>, memref<?xf32>, memref<1xi64>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>,
            affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>,
            affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (k, j)>]
      accumulate add output select
      inner {
      ^bb0(%a: ELEMENT, %b: ELEMENT, %c: ELEMENT, %d: ELEMENT, %x: ELEMENT, %y: ELEMENT):
        %aw = WIDEN(%a)
        %bw = WIDEN(%b)
        %cw = WIDEN(%c)
        %dw = WIDEN(%d)
        %xw = WIDEN(%x)
        %yw = WIDEN(%y)
        %ac = arith.mulf %aw, %cw : f32
        %bd = arith.mulf %bw, %dw : f32
        %re = arith.subf %ac, %bd : f32
        %rex = arith.mulf %re, %xw : f32
        %ad = arith.mulf %aw, %dw : f32
        %bc = arith.mulf %bw, %cw : f32
        %im = arith.addf %ad, %bc : f32
        %imy = arith.mulf %im, %yw : f32
        %s = arith.addf %rex, %imy : f32
        tile.yield %s : f32
      } predicate {
      ^bb0(%value: f32, %acc: f32, %i: index, %j: index):
        %limit = arith.constant 2.0 : f32
        %keep = arith.cmpf ogt, %value, %limit : f32
        tile.yield %keep : i1
      }
  return
}
"""

# Factors that are not zero where their operands are (the stages'
# zero-filled padding past K must not count): (u + 1) . (w / 2 + 2) + u .
# 1 / (w^2 + 1).
AFFINE = """
func.func @affine(%U: memref<?x?xELEMENT> {kge.param = "U"}, %W: memref<?x?xELEMENT> {kge.param = "W"},
                  %S: memref<?x?xf32> {kge.param = "S"}) {
  tile.task ins(%U, %W : memref<?x?xELEMENT>, memref<?x?xELEMENT>) outs(%S : memref<?x?xf32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>]
      accumulate add output dense
      inner {
      ^bb0(%u: ELEMENT, %w: ELEMENT):
        %uw = WIDEN(%u)
        %ww = WIDEN(%w)
        %one = arith.constant 1.0 : f32
        %half = arith.constant 0.5 : f32
        %two = arith.constant 2.0 : f32
        %a = arith.addf %uw, %one : f32
        %b0 = arith.mulf %ww, %half : f32
        %b = arith.addf %b0, %two : f32
        %ab = arith.mulf %a, %b : f32
        %w2 = arith.mulf %ww, %ww : f32
        %d = arith.addf %w2, %one : f32
        %q = arith.divf %uw, %d : f32
        %s = arith.addf %ab, %q : f32
        tile.yield %s : f32
      }
  return
}
"""

TASKS = {"distmult": DISTMULT, "complex": COMPLEX, "factors": FACTORS, "segments": SEGMENTS,
         "transe": TRANSE, "distmult_topk": edge_task("distmult_topk", DISTMULT_INNER, k=64),
         "distmult_top8": edge_task("distmult_top8", DISTMULT_INNER, k=8),
         "complex_select": COMPLEX_SELECT, "affine": AFFINE}
# The tasks warpgroup MMA takes on stages the threads write (every operand
# stored k-contiguous, no top-k, no matrix per key, at most three terms).
THREAD_STAGES = ("affine", "distmult", "factors", "transe")
# Top-k tasks and their k.
TOP_K = {"distmult_topk": 64, "distmult_top8": 8}


def typed(text, element):
    """The task with its inputs of `element` (f32, f16 or bf16), widened to
    f32 where the inner computation reads them (f32 inputs are read as
    they are: `%xw` is `%x`)."""
    if element == "f32":
        text = re.sub(r" *%\w+ = WIDEN\(%\w+\)\n", "", text)
        text = re.sub(r"%(\w)w\b", r"%\1", text)
    else:
        text = re.sub(r"(%\w+) = WIDEN\((%\w+)\)", rf"\1 = arith.extf \2 : {element} to f32",
                      text)
    return text.replace("ELEMENT", element)


def inputs(name, rng, M, N, K, rows=50, keys=7):
    """Inputs of task `name` for an M x N output over K (float32 tables;
    gathered rows from `rows`-row tables with skew, `keys` matrices)."""
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    skewed = lambda count, n: np.minimum(  # noqa: E731
        rng.zipf(1.5, count) - 1, n - 1).astype(np.int32)
    if name in ("distmult", "transe") or name in TOP_K:
        return {"E": f(rows, K), "R": f(keys, K), "h": skewed(M, rows), "r": skewed(M, keys),
                "t": skewed(N, rows)}
    if name in ("complex", "complex_select"):
        return {"A": f(M, K), "B": f(M, K), "C": f(M, K), "D": f(M, K), "X": f(N, K),
                "Y": f(K, N)}
    if name == "factors":
        return {"U": f(M, K), "V": f(M, K), "W": f(N, K)}
    if name == "affine":
        return {"U": f(M, K), "W": f(N, K)}
    return {"E": f(rows, K), "G": f(rows, K), "W": f(keys, K, N), "h": skewed(M, rows),
            "r": skewed(M, keys)}


def reference(name, x):
    """The task's output in float64."""
    d = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in x.items()}
    if name == "distmult" or name in TOP_K:
        return (d["E"][d["h"]] * d["R"][d["r"]]) @ d["E"][d["t"]].T
    if name == "affine":
        u, w = d["U"], d["W"]
        return (u + 1) @ (w / 2 + 2).T + u @ (1 / (w * w + 1)).T
    if name in ("complex", "complex_select"):
        a, b, c, e = d["A"], d["B"], d["C"], d["D"]
        scale = 0.5 if name == "complex" else 1.0
        return scale * ((a * c - b * e) @ d["X"].T + (a * e + b * c) @ d["Y"])
    if name == "factors":
        return (2 * np.exp(d["U"] / 4) - d["V"]) @ (d["W"] * d["W"]).T / 2
    if name == "transe":
        left = d["E"][d["h"]] + d["R"][d["r"]]
        return np.sqrt(((left[:, None, :] - d["E"][d["t"]][None, :, :]) ** 2).sum(-1))
    left = d["E"][d["h"]] * d["G"][d["h"]]
    return np.einsum("bk,bkj->bj", left, d["W"][d["r"]])


# The dense outputs' names (top-k and select tasks write C_* / S_*).
OUTPUT = {"distmult": "C", "complex": "S", "factors": "S", "segments": "Y", "transe": "C",
          "affine": "S"}
# The pairs' value above which the select task keeps a pair.
SELECT_LIMIT = 2.0


def outputs(name, M, N):
    """The output arrays of task `name` for an M x N problem (dense ones
    poisoned with NaN; a select's capacity holds every pair)."""
    if name in TOP_K:
        k = TOP_K[name]
        return {"C_values": np.zeros(k, np.float32), "C_rows": np.zeros(k, np.int32),
                "C_cols": np.zeros(k, np.int32)}
    if name == "complex_select":
        return {"S_rows": np.zeros(M * N, np.int32), "S_cols": np.zeros(M * N, np.int32),
                "S_values": np.zeros(M * N, np.float32), "S_count": np.full(1, 12345, np.int64)}
    return {OUTPUT[name]: np.full((M, N), np.nan, np.float32)}


def check(name, out, expected, tolerance):
    """Asserts that the outputs `out` of task `name` hold what the float64
    values of every pair, `expected`, give, within `tolerance` relative to
    the largest value (at least 1): pairs within twice that of a top-k's
    k-th value or of a select's limit may go either way."""
    scale = max(1.0, float(np.abs(expected).max(initial=0)))
    tol = tolerance * scale
    if name in TOP_K:
        count = min(TOP_K[name], expected.size)
        vals, rows, cols = (out["C_" + k][:count] for k in ("values", "rows", "cols"))
        assert np.all(rows >= 0), "fewer than k pairs"
        assert np.all(np.diff(vals) <= tol), "not best first"
        np.testing.assert_allclose(vals, expected[rows, cols], atol=tol, rtol=0)
        got = set(zip(rows.tolist(), cols.tolist()))
        assert len(got) == count, "a pair twice"
        kth = np.sort(expected.ravel())[::-1][count - 1]
        assert set(zip(*[a.tolist() for a in np.nonzero(expected > kth + 2 * tol)])) <= got
        assert all(expected[r, c] >= kth - 2 * tol for r, c in got)
        return
    if name == "complex_select":
        count = int(out["S_count"][0])
        rows, cols, vals = (out["S_" + k][:count] for k in ("rows", "cols", "values"))
        got = set(zip(rows.tolist(), cols.tolist()))
        assert len(got) == count, "a pair twice"
        want = set(zip(*[a.tolist() for a in np.nonzero(expected > SELECT_LIMIT)]))
        border = set(zip(*[a.tolist() for a in
                           np.nonzero(np.abs(expected - SELECT_LIMIT) <= 2 * tol)]))
        assert got - border == want - border
        np.testing.assert_allclose(vals, expected[rows, cols], atol=tol, rtol=0)
        return
    error = float(np.abs(out[OUTPUT[name]].astype(np.float64) - expected).max()) / scale
    assert error < tolerance, f"max relative error {error}"
