"""The reduce and per-key outputs in GAMUT's query syntax and from Python
(kge.tile.query, kge.tile.function): TransR's and RESCAL's scores and a
joined row maximum written as queries give the tasks of reduce_tasks.py
and their NumPy references; a typed linear layer's weight gradient
(a matrix per key, rows gathered along the reduction) against NumPy; the
syntax's errors as diagnostics at the query's position. The TransR and
weight-gradient queries are examples/tile/gathered's."""

import re

import numpy as np
import pytest

import kge.tile
from kge.errors import MLIRError
from kge.tile import i, j, k, reduce

from reduce_tasks import check, inputs, reference
from tile_reference import GATHERED_EXAMPLES, example_path
from tile_reference import inputs as tile_reference_inputs
from tile_reference import reference as tile_reference_output

QUERIES = {
    "transr": example_path("transr_score").read_text(),
    "rescal": """
where (i in [0, B], j in [0, N]) {
  accum = 0;
  reduce (k in [0, K]) { accum += E[h[i], k] * W[r[i], k, j]; }
  S[i] += accum * T[t[i], j];
}
""",
    "row_max": """
where (i in [0, M], j in [0, N]) when (lo[j] >= 0) {
  accum = 0;
  reduce (k in [0, K]) { accum += A[i, k] * B[k, j]; }
  S[i] = max(S[i], accum);
  S[i] = 0.5 * S[i];
}
""",
}
DTYPES = {"row_max": {"lo": "f32"}}


def traced(name):
    """The same three tasks from Python."""
    if name == "transr":
        def transr(E, W, R, h, r, t):
            p = reduce((E[h[i], k] - E[t[i], k]) * W[r[i], k, j])
            return kge.tile.reduce_rows((p + R[r[i], j]) * (p + R[r[i], j]),
                                        finalize=kge.tile.sqrt)
        return kge.tile.function(transr)
    if name == "rescal":
        def rescal(E, W, T, h, r, t):
            return kge.tile.reduce_rows(reduce(E[h[i], k] * W[r[i], k, j]) * T[t[i], j])
        return kge.tile.function(rescal)

    def row_max(A, B, lo):
        return kge.tile.reduce_rows(reduce(A[i, k] * B[k, j]), combine="max",
                                    finalize=lambda s: 0.5 * s)
    return kge.tile.function(row_max, when=lambda A, B, lo: lo[j] >= 0, dtypes={"lo": "f32"})


SIZES = [(1, 8, 8), (37, 20, 12), (130, 41, 45)]


@pytest.mark.parametrize("front", ["syntax", "python"])
@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("M,N,K", SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in SIZES])
def test_reduce_outputs_match_numpy(front, name, M, N, K):
    q = (kge.tile.query(QUERIES[name], name=name, dtypes=DTYPES.get(name)) if front == "syntax"
         else traced(name))
    assert "output reduce" in str(q.module)
    rng = np.random.default_rng(M * 31 + N * 7 + K)
    x = inputs(name, rng, M, N, K)
    out = q.run_cpu(**x)
    expected = reference(name, x)
    assert out.shape == (M,) and out.dtype == np.float32
    assert check(out, expected, 2e-5), f"max error {np.nanmax(np.abs(out - expected))}"
    # The comparison catches one wrong row.
    finite = np.flatnonzero(np.isfinite(expected))
    out[finite[len(finite) // 2]] += 1e-3 * max(1.0, np.abs(expected[finite]).max())
    assert not check(out, expected, 2e-5)


def test_the_query_reads_one_table_through_two_index_arrays():
    """E[h[i], k] and E[t[i], k]: one parameter, two task inputs, each
    gathered by its own index array (as the hand-written task has it)."""
    q = kge.tile.query(QUERIES["transr"], name="transr")
    text = str(q.module)
    assert [p["name"] for p in q.signature["params"]] == ["h", "E", "t", "r", "W", "R", "S"]
    assert "tile.task ins(%arg1, %arg1, %arg4, %arg5" in text
    assert "gathered = [[0, 0], [1, 0], [2, 0], [3, 0]]" in text
    assert "finalize {" in text and "math.sqrt" in text


def test_the_finalization_reads_the_row_index_and_rounds_to_the_output_type():
    q = kge.tile.query("""
        where (i in [0, M], j in [0, N]) {
          accum = 0;
          reduce (k in [0, K]) { accum += A[i, k] * B[k, j]; }
          S[i] = min(S[i], accum);
          S[i] = S[i] / (i + 1);
        }""", dtypes={"S": "f64"})
    rng = np.random.default_rng(5)
    A = rng.standard_normal((9, 4)).astype(np.float32)
    B = rng.standard_normal((4, 6)).astype(np.float32)
    out = q.run_cpu(A=A, B=B)
    assert out.dtype == np.float64
    expected = (A.astype(np.float64) @ B).min(1) / np.arange(1, 10)
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    # Without a finalization, the row's values still combine in f32 and are
    # rounded to the output's type once.
    plain = kge.tile.query("""
        where (i in [0, M], j in [0, N]) {
          accum = 0;
          reduce (k in [0, K]) { accum += A[i, k] * B[k, j]; }
          S[i] += accum;
        }""", dtypes={"S": "f16"})
    assert "finalize {" in str(plain.module) and "arith.truncf" in str(plain.module)


def weight_gradient(rng, edges=500, nodes=40, inner=12, outer=7, types=5):
    x = rng.standard_normal((nodes, inner)).astype(np.float32)
    g = rng.standard_normal((nodes, outer)).astype(np.float32)
    return {"x": x, "g": g,
            "norm": rng.uniform(0.1, 1, edges).astype(np.float32),
            "src": rng.integers(0, nodes, edges).astype(np.int32),
            "dst": rng.integers(0, nodes, edges).astype(np.int32),
            # Skewed types, one of them absent.
            "etype": np.minimum(rng.zipf(1.6, edges) - 1, types - 2).astype(np.int32)}


WEIGHT_GRADIENT = example_path("typed_linear_gradient").read_text()


@pytest.mark.parametrize("front", ["syntax", "python"])
def test_a_matrix_per_key_matches_numpy(front):
    if front == "syntax":
        q = kge.tile.query(WEIGHT_GRADIENT, name="wgrad")
    else:
        @kge.tile.function
        def wgrad(x, g, norm, src, dst, etype):
            return kge.tile.per_key(reduce(x[src[k], i] * g[dst[k], j] * norm[k]), etype[k])
        q = wgrad
    assert "output per_key" in str(q.module)
    rng = np.random.default_rng(7)
    a = weight_gradient(rng)
    start = rng.standard_normal((5, 12, 7)).astype(np.float32)
    dW = q.run_cpu(**a, dW=start.copy()) if front == "syntax" else \
        q.run_cpu(**a, C=start.copy())
    expected = tile_reference_output("typed_linear_gradient", {**a, "dW": start})
    np.testing.assert_allclose(dW, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(dW[4], start[4])  # the absent type keeps its matrix
    with pytest.raises(TypeError, match="pass the output 'dW' initialized"):
        kge.tile.query(WEIGHT_GRADIENT).run_cpu(**a)


def test_a_matrix_per_key_with_max():
    q = kge.tile.query("""
        where (i in [0, M], j in [0, N]) {
          accum = -inf;
          reduce (k in [0, K]) { accum = max(accum, A[k, i] + B[k, j]); }
          C[key[k], i, j] = max(C[key[k], i, j], accum);
        }""")
    rng = np.random.default_rng(8)
    A = rng.standard_normal((30, 3)).astype(np.float32)
    B = rng.standard_normal((30, 4)).astype(np.float32)
    key = rng.integers(0, 3, 30).astype(np.int32)
    C = q.run_cpu(A=A, B=B, key=key, C=np.full((3, 3, 4), -np.inf, np.float32))
    expected = np.full((3, 3, 4), -np.inf, np.float32)
    np.maximum.at(expected, key, A[:, :, None] + B[:, None, :])
    np.testing.assert_array_equal(C, expected)


def test_query_outputs_compile_for_the_gpu(tmp_path, monkeypatch):
    """The queries lower as the hand-written tasks do: TransR's through
    the segment iterators with one finalize kernel, the weight gradient
    through the per-key segments of the reduction."""
    monkeypatch.setenv("KGE_CACHE_DIR", str(tmp_path))
    transr = kge.tile.query(QUERIES["transr"], name="transr").compile(cubin=False)
    functions = [s.get("function", s["kind"]) for s in transr.manifest["launches"]]
    assert "kge_key_scan_tiles" in functions and functions[-1] == "transr_finalize"
    assert {"transr_mma_long", "transr_mma", "transr_small"} <= set(functions)
    wgrad = kge.tile.query(WEIGHT_GRADIENT, name="wgrad").compile(cubin=False)
    functions = [s.get("function", s["kind"]) for s in wgrad.manifest["launches"]]
    assert "kge_key_histogram" in functions and functions[-1] == "wgrad"


BAD = [
    ("S[j] += accum;", "a reduce output is indexed by the row axis 'i'", "1:"),
    ("S[i] = accum;", "a reduce output is written 'S[...] += e' or 'S[...] = max(S[...], e)'",
     ""),
    ("S[i] += accum;\n  S[i] = S[i] * c[i];", "the finalization of 'S' reads only S[i] and i, "
     "not 'c[...]'", ""),
    ("S[i] += accum;\n  S[i] = S[i] * j;", "the axis variable 'j' is not available in the "
     "finalization", ""),
    ("S[i] += accum;\n  S[i] = S[i] + accum;", "the accumulator 'accum' is not available in the "
     "finalization", ""),
    ("S[i] += accum;\n  S[i] = sqrt(S[i]);\n  S[i] = 1;",
     "a query has one output operator; 'S' is already its output and is finalized", ""),
    ("S[i] += accum;\n  S[i] 1;", "the finalization of the reduce output 'S' is written "
     "'S[i] = e;'", ""),
    ("S[i] += accum;\n  S[j] = S[j];", "the finalization of 'S' is written S[i] = e", ""),
    ("C[i, j, k, i] += accum;", "the output 'C' has 4 subscripts", ""),
]

BAD_PER_KEY = [
    ("accum += x[s[k], i] * g[d[k], j];", "W[t[k], i, j] += accum * 2;",
     "a matrix per key adds the accumulator 'accum' of each key's steps as it is"),
    ("accum += x[s[k], i] * g[d[k], j];", "W[t[k], i, j] = max(W[t[k], i, j], accum);",
     "a matrix per key combines with the accumulator's combination (add), not max"),
    ("accum += x[s[k], i] * g[d[k], j];", "W[t[k], j, i] += accum;",
     "a matrix per key is indexed by its key, then the two spatial axes: W[t[k], i, j]"),
    ("accum += x[s[k], i] * g[d[k], j];", "W[t[i], i, j] += accum;",
     "the key of a matrix per key must be an array indexed by the reduction axis 'k'"),
    ("accum += x[s[k], i] * g[d[k], j];", "C[i, j] = accum;",
     "'s' gathers along the reduction axis 'k'; only the spatial axes (i, j) are gathered, "
     "except into a matrix per key"),
]


@pytest.mark.parametrize("statements,message,_", BAD, ids=[m[:40] for _, m, _ in BAD])
def test_bad_reduce_outputs_are_diagnosed(statements, message, _):
    text = ("where (i in [0, M], j in [0, N]) {\n  accum = 0;\n  reduce (k in [0, K]) {\n"
            "    accum += A[i, k] * B[k, j];\n  }\n  " + statements + "\n}\n")
    with pytest.raises(MLIRError, match=re.escape(message)):
        kge.tile.query(text)


@pytest.mark.parametrize("update,statement,message", BAD_PER_KEY,
                         ids=[m[:40] for _, _, m in BAD_PER_KEY])
def test_bad_matrices_per_key_are_diagnosed(update, statement, message):
    text = ("where (i in [0, M], j in [0, N]) {\n  accum = 0;\n  reduce (k in [0, K]) {\n    "
            + update + "\n  }\n  " + statement + "\n}\n")
    with pytest.raises(MLIRError, match=re.escape(message)):
        kge.tile.query(text)


def test_a_matrix_per_key_starts_at_the_identity_and_takes_no_join():
    body = "  reduce (k in [0, K]) { accum += x[s[k], i] * g[d[k], j]; }\n" \
           "  W[t[k], i, j] += accum;\n}\n"
    with pytest.raises(MLIRError, match="starts every key's reduction at the accumulator's "
                                        "identity"):
        kge.tile.query("where (i in [0, M], j in [0, N]) {\n  accum = 1;\n" + body)
    with pytest.raises(MLIRError, match="a matrix per key takes every pair: no 'when'"):
        kge.tile.query("where (i in [0, M], j in [0, N]) when (a[i] == b[j]) {\n"
                       "  accum = 0;\n" + body)
    with pytest.raises(MLIRError, match="the matrices per key hold the accumulator's type f32, "
                                        "not f64"):
        kge.tile.query("where (i in [0, M], j in [0, N]) {\n  accum = 0;\n" + body,
                       dtypes={"W": "f64"})


@pytest.mark.parametrize("build,message", [
    (lambda: kge.tile.reduce_rows(1, combine="mul"), "combine with add, max or min"),
    (lambda: kge.tile.reduce_rows(1, finalize=3), "finalize must be a function"),
    (lambda: kge.tile.per_key(reduce(1) * 2, None), "pass reduce(...) itself"),
    (lambda: kge.tile.per_key(reduce(1), kge.tile.Array("t")[i]),
     "the key of a matrix per key is an array at k"),
])
def test_python_output_errors(build, message):
    with pytest.raises(kge.tile.TraceError, match=re.escape(message)):
        build()


def test_a_finalization_of_the_reduction_itself_is_refused():
    def bad(A, B):
        s = reduce(A[i, k] * B[k, j])
        return kge.tile.reduce_rows(s, finalize=lambda v: v + s)
    with pytest.raises(kge.tile.TraceError, match="computes on the row's value"):
        kge.tile.function(bad)


def test_an_array_read_along_other_axes_is_another_input():
    """A[i, k] * A[k, j]: one parameter read twice; the runner checks that
    the sizes the two reads tie together agree."""
    q = kge.tile.query("""
        where (i in [0, M], j in [0, N]) {
          accum = 0;
          reduce (k in [0, K]) { accum += A[i, k] * A[k, j]; }
          C[i, j] = accum;
        }""", name="square")
    assert [p["name"] for p in q.signature["params"]] == ["A", "C"]
    A = np.random.default_rng(9).standard_normal((6, 6)).astype(np.float32)
    np.testing.assert_allclose(q.run_cpu(A=A), A.astype(np.float64) @ A, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="'A'"):
        q.run_cpu(A=A[:, :4])


@pytest.mark.parametrize("name", GATHERED_EXAMPLES)
def test_every_gathered_example_matches_its_reference(name):
    """examples/tile/gathered as the main job (examples/run_examples.py)
    runs them: tile_reference's inputs, the CPU path against NumPy."""
    x = tile_reference_inputs(name, np.random.default_rng(0))
    got = kge.tile.query(example_path(name).read_text(), name=name).run_cpu(
        **{k: v.copy() for k, v in x.items()})
    expected = tile_reference_output(name, x)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5 * np.abs(expected).max())
