"""Tile tasks with a reduce output (a row's values combined along j, then
finalized) for the tests (test_tile_reduce.py here, test/gpu/test_tile_reduce.py
on the GPU machine, which has no compiler): the tasks' IR, their inputs and
their NumPy references."""

import numpy as np

from product_forms import typed

# TransR's score: || (E[h] - E[t]) W[r] + R[r] ||_2, a matrix per row's key
# (segment iterators), the relation's row a pair operand.
TRANSR = """
func.func @transr(%E: memref<?x?xELEMENT> {kge.param = "E"}, %W: memref<?x?x?xELEMENT> {kge.param = "W"},
                  %R: memref<?x?xf32> {kge.param = "R"},
                  %h: memref<?xi32> {kge.param = "h"}, %r: memref<?xi32> {kge.param = "r"},
                  %t: memref<?xi32> {kge.param = "t"}, %S: memref<?xf32> {kge.param = "S"}) {
  tile.task ins(%E, %E, %W, %R : memref<?x?xELEMENT>, memref<?x?xELEMENT>, memref<?x?x?xELEMENT>, memref<?x?xf32>)
      outs(%S : memref<?xf32>)
      gathers(%h, %t, %r, %r : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>,
            affine_map<(i, j, k) -> (i, k, j)>, affine_map<(i, j, k) -> (i, j)>]
      accumulate add output reduce {gathered = [[0, 0], [1, 0], [2, 0], [3, 0]]}
      inner {
      ^bb0(%a: ELEMENT, %b: ELEMENT, %w: ELEMENT, %rel: f32):
        %aw = WIDEN(%a)
        %bw = WIDEN(%b)
        %ww = WIDEN(%w)
        %d = arith.subf %aw, %bw : f32
        %v = arith.mulf %d, %ww : f32
        tile.yield %v : f32
      }
      project {
      ^bb0(%acc: f32, %i: index, %j: index, %rel: f32):
        %x = arith.addf %acc, %rel : f32
        %sq = arith.mulf %x, %x : f32
        tile.yield %sq : f32
      }
      finalize {
      ^bb0(%sum: f32, %i: index):
        %norm = math.sqrt %sum : f32
        tile.yield %norm : f32
      }
  return
}
"""

# RESCAL with another table for the tails (K != N): E[h] W[r] . T[t], the
# tail's row a pair operand gathered by another index than the key's; no
# finalize.
RESCAL = """
func.func @rescal(%E: memref<?x?xELEMENT> {kge.param = "E"}, %W: memref<?x?x?xELEMENT> {kge.param = "W"},
                  %T: memref<?x?xf32> {kge.param = "T"},
                  %h: memref<?xi32> {kge.param = "h"}, %r: memref<?xi32> {kge.param = "r"},
                  %t: memref<?xi32> {kge.param = "t"}, %S: memref<?xf32> {kge.param = "S"}) {
  tile.task ins(%E, %W, %T : memref<?x?xELEMENT>, memref<?x?x?xELEMENT>, memref<?x?xf32>)
      outs(%S : memref<?xf32>)
      gathers(%h, %r, %t : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k, j)>,
            affine_map<(i, j, k) -> (i, j)>]
      accumulate add output reduce {gathered = [[0, 0], [1, 0], [2, 0]]}
      inner {
      ^bb0(%a: ELEMENT, %w: ELEMENT, %x: f32):
        %aw = WIDEN(%a)
        %ww = WIDEN(%w)
        %v = arith.mulf %aw, %ww : f32
        tile.yield %v : f32
      }
      project {
      ^bb0(%acc: f32, %i: index, %j: index, %x: f32):
        %p = arith.mulf %acc, %x : f32
        tile.yield %p : f32
      }
  return
}
"""

# Without segments: half the largest value of each row of A B among the
# columns whose bound is not negative (a join); rows with none keep -inf.
ROW_MAX = """
func.func @row_max(%A: memref<?x?xELEMENT> {kge.param = "A"}, %B: memref<?x?xELEMENT> {kge.param = "B"},
                   %lo: memref<?xf32> {kge.param = "lo"}, %S: memref<?xf32> {kge.param = "S"}) {
  tile.task ins(%A, %B, %lo : memref<?x?xELEMENT>, memref<?x?xELEMENT>, memref<?xf32>)
      outs(%S : memref<?xf32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (j)>]
      accumulate add output reduce {aggregate = 2 : i32}
      when {
      ^bb0(%i: index, %j: index, %l: f32):
        %zero = arith.constant 0.0 : f32
        %keep = arith.cmpf oge, %l, %zero : f32
        tile.yield %keep : i1
      }
      inner {
      ^bb0(%a: ELEMENT, %b: ELEMENT, %l: f32):
        %aw = WIDEN(%a)
        %bw = WIDEN(%b)
        %p = arith.mulf %aw, %bw : f32
        tile.yield %p : f32
      }
      finalize {
      ^bb0(%m: f32, %i: index):
        %half = arith.constant 0.5 : f32
        %v = arith.mulf %m, %half : f32
        tile.yield %v : f32
      }
  return
}
"""

TASKS = {"transr": TRANSR, "rescal": RESCAL, "row_max": ROW_MAX}


def inputs(name, rng, M, N, K, rows=60, keys=9):
    """float32 inputs of task `name` for M rows, N columns, reduction K;
    keys drawn with skew (runs of one key longer than a tile)."""
    keyed = np.minimum(rng.zipf(1.5, M) - 1, keys - 1).astype(np.int32)
    if name == "transr":
        return {"E": rng.uniform(-1, 1, (rows, K)).astype(np.float32),
                "W": (rng.uniform(-1, 1, (keys, K, N)) / np.sqrt(K)).astype(np.float32),
                "R": rng.uniform(-1, 1, (keys, N)).astype(np.float32),
                "h": rng.integers(0, rows, M).astype(np.int32), "r": keyed,
                "t": rng.integers(0, rows, M).astype(np.int32)}
    if name == "rescal":
        return {"E": rng.uniform(-1, 1, (rows, K)).astype(np.float32),
                "W": (rng.uniform(-1, 1, (keys, K, N)) / np.sqrt(K)).astype(np.float32),
                "T": rng.uniform(-1, 1, (rows + 3, N)).astype(np.float32),
                "h": rng.integers(0, rows, M).astype(np.int32), "r": keyed,
                "t": rng.integers(0, rows + 3, M).astype(np.int32)}
    lo = rng.uniform(-1, 1, N).astype(np.float32)
    lo[: N // 3] = -1.0
    return {"A": rng.uniform(-1, 1, (M, K)).astype(np.float32),
            "B": rng.uniform(-1, 1, (K, N)).astype(np.float32), "lo": lo}


def reference(name, x):
    """The task's output in float64 from the inputs as given (any dtype)."""
    f = {n: np.asarray(v, dtype=np.float64) for n, v in x.items()}
    if name == "transr":
        p = np.einsum("bk,bkj->bj", f["E"][x["h"]] - f["E"][x["t"]], f["W"][x["r"]])
        return np.sqrt(((p + f["R"][x["r"]]) ** 2).sum(1))
    if name == "rescal":
        p = np.einsum("bk,bkj->bj", f["E"][x["h"]], f["W"][x["r"]])
        return (p * f["T"][x["t"]]).sum(1)
    p = f["A"] @ f["B"]
    kept = np.where(f["lo"][None, :] >= 0, p, -np.inf)
    return 0.5 * kept.max(1)


def check(out, expected, tolerance):
    """Whether `out` matches `expected` to `tolerance` of its largest
    finite magnitude (-inf rows exactly)."""
    out = np.asarray(out, dtype=np.float64)
    finite = np.isfinite(expected)
    if not np.array_equal(np.isfinite(out), finite) or not np.all(out[~finite] == expected[~finite]):
        return False
    scale = max(1.0, np.abs(expected[finite]).max(initial=0.0))
    return bool(np.all(np.abs(out[finite] - expected[finite]) <= tolerance * scale))


__all__ = ["TASKS", "inputs", "reference", "check", "typed"]
