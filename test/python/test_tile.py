"""The `tile` dialect on the CPU path: GAMUT's queries (examples/tile) and
every output operator, accumulator and operand kind against NumPy, and the
diagnostics of bad queries and bad arguments."""

import subprocess
import zlib

import numpy as np
import pytest

import kge.tile
from kge.errors import MLIRError
from tile_reference import EXAMPLES, EXAMPLES_DIR, accumulate_f32, inputs, reference, zipf_keys

# (M, N, K): odd sizes, a single row / column / reduction step, empty axes.
SIZES = [(53, 41, 64), (1, 7, 3), (9, 1, 1), (64, 64, 128), (0, 5, 4), (6, 0, 4), (5, 6, 0)]


def check(name, got, expected):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == e.shape, f"{name}: shape {g.shape} != {e.shape}"
            np.testing.assert_array_equal(g, e.astype(g.dtype))
    else:
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5 * max(1, np.abs(expected).max(initial=0)))


@pytest.fixture(scope="module")
def queries():
    return {name: kge.tile.query((EXAMPLES_DIR / f"{name}.gamut").read_text(), name=name)
            for name in EXAMPLES}


def test_all_of_gamuts_queries_are_examples():
    assert EXAMPLES == ["gemm", "q1_amplify", "q2_preference_by_zip", "q3_strong_pairs_by_zip",
                        "q4_same_zip", "q5_strong_pairs", "q6_complementary",
                        "q7_top_preferences"]


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("M,N,K", SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in SIZES])
def test_example_matches_numpy(queries, name, M, N, K):
    if name == "q6_complementary" and K not in (64,):
        K = 16  # its style vectors have 16 features
    rng = np.random.default_rng(zlib.crc32(f"{name}-{M}-{N}-{K}".encode()))
    x = inputs(name, rng, M=M, N=N, K=K)
    if name == "q6_complementary" and 0 in (M, N):
        x = {k: v[:M] if k == "S" else v[:, :N] for k, v in x.items()}
    got = queries[name].run_cpu(**{k: v.copy() for k, v in x.items()})
    check(name, got, reference(name, x))


def test_queries_are_tile_functions_with_the_expected_operators(queries):
    text = {name: str(q.module) for name, q in queries.items()}
    assert "accumulate add output dense" in text["gemm"]
    assert "maps [#map, #map1, #map2]" in text["q1_amplify"]  # (i, k), (k, j), (i)
    assert "keys(" in text["q2_preference_by_zip"] and "output aggregate" in text["q2_preference_by_zip"]
    assert "project {" in text["q3_strong_pairs_by_zip"]
    assert "output dense when {" in text["q4_same_zip"]
    assert "output select" in text["q5_strong_pairs"] and "predicate {" in text["q5_strong_pairs"]
    assert "math.absf" in text["q6_complementary"]
    assert "k = 128" in text["q7_top_preferences"]
    sig = queries["q2_preference_by_zip"].signature["params"]
    assert [(p["name"], p["role"], p["shape"]) for p in sig] == [
        ("P", "table", ["M", "K"]), ("R", "table", ["K", "N"]), ("Pzip", "indices", ["M"]),
        ("Rzip", "indices", ["N"]), ("C", "output", ["C_d0", "C_d1"])]


QUERY = "where (i in [0, M], j in [0, N]) {{ accum = {init}; reduce (k in [0, K]) {{ {acc} }} {out} }}"


def run(acc="accum += A[i, k] * B[k, j];", out="C[i, j] = accum;", init="0", dtypes=None,
        M=13, N=11, K=9, seed=0, declare="", **extra):
    q = kge.tile.query(declare + QUERY.format(init=init, acc=acc, out=out), dtypes=dtypes)
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    return q.run_cpu(A=A, B=B, **extra), A, B, q


def test_transposed_dense_output():
    C, A, B, _ = run(out="C[j, i] = accum;")
    np.testing.assert_allclose(C, (A @ B).T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("acc,init,ref", [
    ("accum *= 1 + A[i, k] * B[k, j] / 8;", "1", lambda p: np.prod(1 + p / 8, axis=1)),
    ("accum = max(accum, A[i, k] - B[k, j]);", "-inf", None),
    ("accum = min(accum, A[i, k] * B[k, j]);", "inf", lambda p: p.min(axis=1)),
    ("accum += A[i, k] * B[k, j];", "5", lambda p: p.sum(axis=1) + 5),
    ("accum = max(accum, A[i, k] * B[k, j]);", "0.5", lambda p: np.maximum(p.max(axis=1), 0.5)),
])
def test_accumulators(acc, init, ref):
    C, A, B, _ = run(acc=acc, init=init)
    if ref is None:
        expected = (A[:, :, None] - B[None, :, :]).max(axis=1)
    else:
        expected = ref(A[:, :, None].astype(np.float64) * B[None, :, :])
    np.testing.assert_allclose(C, expected, rtol=1e-5, atol=1e-5)


def test_custom_accumulator_with_declared_associativity():
    # Probabilistic OR: 1 - prod(1 - p), associative and commutative.
    C, A, B, q = run(declare="associative combine(a, b) = a + b - a * b;\n",
                     acc="accum = combine(accum, sigmoid(A[i, k] * B[k, j]));")
    assert "accumulate custom" in str(q.module) and "associative" in str(q.module)
    p = 1 / (1 + np.exp(-(A[:, :, None].astype(np.float64) * B[None, :, :])))
    np.testing.assert_allclose(C, 1 - np.prod(1 - p, axis=1), rtol=1e-5, atol=1e-6)


def test_functions_and_conditionals():
    C, A, B, _ = run(acc="accum += A[i, k] > 0 ? exp(-abs(B[k, j])) : sqrt(pow(A[i, k], 2) + 1);",
                     out="C[i, j] = tanh(accum / 8) + (i > j && !(i == 3));")
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    terms = np.where(A64[:, :, None] > 0, np.exp(-np.abs(B64))[None], np.sqrt(A64**2 + 1)[:, :, None])
    i, j = np.indices(C.shape)
    np.testing.assert_allclose(C, np.tanh(terms.sum(1) / 8) + ((i > j) & (i != 3)), rtol=1e-5,
                               atol=1e-5)


def test_join_on_the_spatial_axes_skips_pairs():
    # A triangular join (a Gram matrix's upper half): i < j only.
    q = kge.tile.query("where (i in [0, M], j in [0, N]) when (i < j) { accum = 0; "
                       "reduce (k in [0, K]) { accum += A[i, k] * B[k, j]; } C[i, j] = accum; }")
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((8, 5)).astype(np.float32), rng.standard_normal((5, 8)).astype(np.float32)
    C = q.run_cpu(A=A, B=B)
    np.testing.assert_allclose(C, np.triu(A @ B, 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("combiner,op,init", [("max", np.maximum, -np.inf), ("min", np.minimum, np.inf)])
def test_aggregate_max_and_min(combiner, op, init):
    rng = np.random.default_rng(4)
    pz, rz = zipf_keys(rng, 13, 4), zipf_keys(rng, 11, 3)
    C0 = np.full((4, 3), init, np.float32)
    C, A, B, _ = run(out=f"C[Pzip[i], Rzip[j]] = {combiner}(C[Pzip[i], Rzip[j]], accum);",
                     Pzip=pz, Rzip=rz, C=C0)
    expected = np.full((4, 3), init)
    op.at(expected, (pz[:, None], rz[None, :]), A.astype(np.float64) @ B)
    np.testing.assert_allclose(C, expected, rtol=1e-5, atol=1e-5)
    assert C is C0  # updated in place


def test_select_with_a_small_capacity_is_retried_exactly():
    (rows, cols, vals), A, B, _ = run(out="if (accum > 1) C.put(accum * 2);", capacity=2)
    acc = accumulate_f32(A, B)
    r, c = np.nonzero(acc > 1)
    assert len(r) > 2
    np.testing.assert_array_equal(rows, r)
    np.testing.assert_array_equal(cols, c)
    np.testing.assert_array_equal(vals, acc[r, c] * 2)


def test_select_reports_the_total_count_beyond_capacity():
    q = kge.tile.query(QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];",
                                    out="if (accum > 0) C.put(accum);"))
    fn = kge.compiler.compile_cpu(q.module, q.name)
    rng = np.random.default_rng(5)
    A, B = rng.standard_normal((10, 4)).astype(np.float32), rng.standard_normal((4, 10)).astype(np.float32)
    out = {"C_rows": np.zeros(3, np.int32), "C_cols": np.zeros(3, np.int32),
           "C_values": np.zeros(3, np.float32), "C_count": np.zeros(1, np.int64)}
    fn({"A": A, "B": B, **out})
    assert out["C_count"][0] == np.count_nonzero(accumulate_f32(A, B) > 0) > 3


@pytest.mark.parametrize("method", ["top", "bottom"])
def test_top_and_bottom_k_with_ties_and_fewer_pairs_than_k(method):
    # Integer-valued inputs make ties; 6 x 5 = 30 pairs < k = 40.
    rng = np.random.default_rng(6)
    A = rng.integers(-2, 3, (6, 3)).astype(np.float32)
    B = rng.integers(-2, 3, (3, 5)).astype(np.float32)
    q = kge.tile.query(QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];",
                                    out=f"C.{method}(40, accum);"))
    vals, rows, cols = q.run_cpu(A=A, B=B)
    acc = A @ B
    i, j = np.indices(acc.shape)
    key = -acc.ravel() if method == "top" else acc.ravel()
    order = np.lexsort((j.ravel(), i.ravel(), key))
    np.testing.assert_array_equal(vals, acc.ravel()[order])
    np.testing.assert_array_equal(rows, i.ravel()[order])
    np.testing.assert_array_equal(cols, j.ravel()[order])


def test_top_k_with_a_condition():
    (vals, rows, cols), A, B, _ = run(out="if (j == 2) C.top(3, accum);")
    assert np.all(cols == 2) and len(vals) == 3
    acc = accumulate_f32(A, B)
    np.testing.assert_array_equal(vals, np.sort(acc[:, 2])[::-1][:3])


def test_distinct_values():
    rng = np.random.default_rng(7)
    A = rng.integers(0, 3, (20, 2)).astype(np.float32)
    B = rng.integers(0, 3, (2, 15)).astype(np.float32)
    q = kge.tile.query(QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];",
                                    out="if (accum != 4) C.distinct(accum);"))
    got = q.run_cpu(A=A, B=B, capacity=2)
    expected = np.unique(A @ B)
    np.testing.assert_array_equal(got, expected[expected != 4])


@pytest.mark.parametrize("dtype,tol", [("f64", 1e-12), ("f16", 2e-2), ("bf16", 2e-2)])
def test_input_precisions(dtype, tol):
    import ml_dtypes
    np_type = {"f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
    q = kge.tile.query(QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];", out="C[i, j] = accum;"),
                       dtypes={"A": dtype, "B": dtype})
    rng = np.random.default_rng(8)
    A = rng.standard_normal((7, 33)).astype(np_type)
    B = rng.standard_normal((33, 6)).astype(np_type)
    C = q.run_cpu(A=A, B=B)
    assert C.dtype == (np.float64 if dtype == "f64" else np.float32)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_allclose(C, exact, rtol=tol, atol=tol * np.abs(exact).max())


def test_reduction_only_and_column_operands():
    # w[k] weights the reduction, b[j] biases each column in the output.
    q = kge.tile.query("where (i in [0, M], j in [0, N]) { accum = 0; reduce (k in [0, K]) "
                       "{ accum += A[i, k] * w[k] * Bt[j, k]; } C[i, j] = accum + b[j]; }")
    rng = np.random.default_rng(9)
    A, Bt = rng.standard_normal((5, 4)), rng.standard_normal((6, 4))
    w, b = rng.standard_normal(4), rng.standard_normal(6)
    C = q.run_cpu(A=A.astype(np.float32), Bt=Bt.astype(np.float32), w=w.astype(np.float32),
                  b=b.astype(np.float32))
    np.testing.assert_allclose(C, (A * w) @ Bt.T + b, rtol=1e-5, atol=1e-5)


def test_static_sizes_from_the_query():
    q = kge.tile.query("where (i in [0, 4], j in [0, 3]) { accum = 0; reduce (k in [0, 2]) "
                       "{ accum += A[i, k] * B[k, j]; } C[i, j] = accum; }")
    assert "memref<4x2xf32>" in str(q.module)
    A, B = np.ones((4, 2), np.float32), np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(q.run_cpu(A=A, B=B), np.full((4, 3), 2.0))
    with pytest.raises(ValueError, match="expects size 2 in dimension 1"):
        q.run_cpu(A=np.ones((4, 5), np.float32), B=np.ones((5, 3), np.float32))


#
# Bad queries: a diagnostic naming the problem at its line and column.
#

BAD_QUERIES = [
    ("where (i in [0, M], j in [0, N], l in [0, L]) { }",
     "1:32: error: a matmul-like task has exactly two spatial axes and one reduction axis"),
    ("where (i in [1, M], j in [0, N]) { }", "1:14: error: the range of axis 'i' must start at 0"),
    (QUERY.format(init="0", acc="accum += A[i, k] * B[i, j];", out="C[i, j] = accum;"),
     "'B' is indexed by both spatial axes; an input of a matmul-like task has at most one spatial axis"),
    (QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];", out="C[i, k] = accum;"),
     "the output 'C' must be indexed by the two spatial axes (i, j) or by key arrays"),
    (QUERY.format(init="0", acc="accum = combine(accum, A[i, k]);", out="C[i, j] = accum;"),
     "'combine' is not declared"),
    ("combine(a, b) = a * b; " + QUERY.format(init="1", acc="accum = combine(accum, A[i, k]);",
                                               out="C[i, j] = accum;"),
     "1:1: error: a custom combination must be declared 'associative'"),
    (QUERY.format(init="0", acc="accum -= A[i, k];", out="C[i, j] = accum;"),
     "the reduction must be 'accum += e', 'accum *= e', 'accum = max(accum, e)', "
     "'accum = min(accum, e)' or 'accum = combine(accum, e)'"),
    (QUERY.format(init="0", acc="accum += A[i, k] @ B[k, j];", out="C[i, j] = accum;"),
     "1:87: error: unexpected character '@'"),
    (QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];", out="C[i, j] = accum + A[i, k];"),
     "'A' depends on the reduction axis 'k', which is reduced away in the output statement"),
    (QUERY.format(init="0", acc="accum += A[i, k] * accum;", out="C[i, j] = accum;"),
     "the accumulator 'accum' is not available in the reduction"),
    (QUERY.format(init="x", acc="accum += A[i, k] * B[k, j];", out="C[i, j] = accum;"),
     "the accumulator's initial value must be a constant"),
    (QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];", out="C.put(accum);"),
     "'put' stores the pairs a condition selects"),
    (QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];", out="C.top(0, accum);"),
     "the count of 'top' must be a positive integer below 2^31, got '0'"),
    (QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];", out="C[i, j] = accum; D[i, j] = accum;"),
     "a query has one output operator; 'C' is already its output"),
    (QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];", out=""),
     "the query has no output statement"),
    (QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];", out="C[i, j] = foo(accum);"),
     "unknown function 'foo'"),
    (QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];", out="C[Z[j], Y[i]] += accum;"),
     "the row key of an aggregate output must be an array indexed by 'i'"),
    (QUERY.format(init="0", acc="accum += A[i] * B[j];", out="C[i, j] = accum;"),
     "no array is indexed by the reduction axis 'k'"),
    (QUERY.format(init="0", acc="accum += A[i, k] * B[k, j] * A[k];", out="C[i, j] = accum;"),
     "'A' is indexed differently here than at"),
    (QUERY.format(init="0", acc="accum += A[i, k] * C[k, j];", out="C[i, j] = accum;"),
     "the output 'C' cannot be read by the query"),
    ("where (i in [0, M], j in [0, N]) { accum = 0; reduce (k in [0, K]) { accum += A[i, k]; }",
     "expected '}' to close the query body"),
    ("where (i in [0, M], j in [0, N]) { /* never closed", "unterminated comment"),
    ("associative combine(a, b) = a + X[a, b]; " +
     QUERY.format(init="0", acc="accum = combine(accum, A[i, k]);", out="C[i, j] = accum;"),
     "'X' is not available in the combination"),
]


@pytest.mark.parametrize("text,message", BAD_QUERIES, ids=[m[:40] for _, m in BAD_QUERIES])
def test_bad_queries_are_diagnosed(text, message):
    with pytest.raises(MLIRError) as error:
        kge.tile.query(text)
    assert message in str(error.value), str(error.value)


def test_unknown_dtype_is_diagnosed():
    with pytest.raises(MLIRError, match="unknown dtype 'f8' for 'A'"):
        kge.tile.query(QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];", out="C[i, j] = accum;"),
                       dtypes={"A": "f8"})


#
# Bad arguments: refused before anything runs.
#

def test_mismatched_reduction_extents_are_refused():
    q = kge.tile.query(QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];", out="C[i, j] = accum;"))
    with pytest.raises(ValueError, match="table 'B' has size 5 in dimension 0 but 'K' is 4"):
        q.run_cpu(A=np.ones((3, 4), np.float32), B=np.ones((5, 2), np.float32))
    with pytest.raises(ValueError, match="table 'A' expects dtype f32, got f64"):
        q.run_cpu(A=np.ones((3, 4)), B=np.ones((4, 2), np.float32))


@pytest.mark.parametrize("bad,position", [(-1, 3), (4, 7)])
def test_out_of_range_keys_are_refused(bad, position):
    q = kge.tile.query((EXAMPLES_DIR / "q2_preference_by_zip.gamut").read_text())
    x = inputs("q2_preference_by_zip", np.random.default_rng(0), M=10, N=10, K=4, zips=4)
    x["Pzip"][position] = bad
    with pytest.raises(IndexError, match=f"index {bad} at position {position} of 'Pzip' is out "
                                         "of range for output 'C' with 4 rows"):
        q.run_cpu(**x)
    x["Pzip"][position] = 0
    x["Rzip"][2] = 9
    with pytest.raises(IndexError, match="index 9 at position 2 of 'Rzip' is out of range for "
                                         "output 'C' with 4 columns"):
        q.run_cpu(**x)


def test_outputs_must_be_writable_and_contiguous():
    q = kge.tile.query(QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];", out="C[i, j] = accum;"))
    fn = kge.compiler.compile_cpu(q.module, q.name)
    A, B = np.ones((3, 4), np.float32), np.ones((4, 2), np.float32)
    with pytest.raises(TypeError, match="output 'C' must be a writable C-contiguous array"):
        fn({"A": A, "B": B, "C": np.zeros((2, 3), np.float32).T})
    frozen = np.zeros((3, 2), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(TypeError, match="output 'C' must be a writable C-contiguous array"):
        fn({"A": A, "B": B, "C": frozen})


def test_aggregate_output_must_be_passed():
    q = kge.tile.query((EXAMPLES_DIR / "q2_preference_by_zip.gamut").read_text())
    x = inputs("q2_preference_by_zip", np.random.default_rng(0))
    del x["C"]
    with pytest.raises(TypeError, match="pass the output 'C' initialized"):
        q.run_cpu(**x)


def test_kge_translate_imports_queries_and_reports_errors(tools, tmp_path):
    path = tmp_path / "bad.gamut"
    path.write_text("where (i in [0, M], j in [0, N]) {\n  accum = 0;\n  reduce (k in [0, K]) {\n"
                    "    accum += A[i, k] * B[k, j];\n  }\n  C[i, j] = accum +;\n}\n")
    result = subprocess.run([tools["kge-translate"], "--import-gamut", path], capture_output=True,
                            text=True)
    assert result.returncode != 0
    assert f"{path}:6:20: error: expected an expression, got ';'" in result.stderr
    good = subprocess.run([tools["kge-translate"], "--import-gamut", "--gamut-name=q2",
                           "--gamut-dtype=Pzip:i64,Rzip:i64",
                           EXAMPLES_DIR / "q2_preference_by_zip.gamut"],
                          capture_output=True, text=True, check=True).stdout
    assert "func.func @q2(" in good and "memref<?xi64> {kge.param = \"Pzip\"}" in good
    loops = subprocess.run([tools["kge-opt"], "--convert-tile-to-scf"], input=good,
                           capture_output=True, text=True, check=True).stdout
    assert "tile.task" not in loops and "scf.for" in loops


LINALG = """
func.func @mm(%A: memref<?x?xf32> {kge.param = "A"}, %B: memref<?x?xf32> {kge.param = "B"},
              %C: memref<?x?xf32> {kge.param = "C"}) {
  linalg.matmul ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
  return
}
func.func @max_plus(%A: memref<?x?xf32> {kge.param = "A"}, %B: memref<?x?xf32> {kge.param = "B"},
                    %C: memref<?x?xf32> {kge.param = "C"}) {
  linalg.generic {
      indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>,
                       affine_map<(i, j, k) -> (i, j)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    %m = arith.maximumf %out, %s : f32
    linalg.yield %m : f32
  }
  return
}
"""


def test_raised_linalg_runs_with_linalg_semantics():
    from kge import compiler, ir
    ctx = ir.Context()
    module = ir.Module.parse(ctx, LINALG)
    pm = ir.PassManager(ctx)
    pm.add("tile-raise-linalg")
    pm.run(module)
    assert "linalg." not in str(module) and str(module).count("tile.task") == 2
    rng = np.random.default_rng(10)
    A = rng.standard_normal((9, 5)).astype(np.float32)
    B = rng.standard_normal((5, 7)).astype(np.float32)
    C0 = rng.standard_normal((9, 7)).astype(np.float32)
    C = C0.copy()
    compiler.compile_cpu(module, "mm")({"A": A, "B": B, "C": C})
    np.testing.assert_allclose(C, C0 + A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)
    C = C0.copy()
    compiler.compile_cpu(module, "max_plus")({"A": A, "B": B, "C": C})
    np.testing.assert_allclose(C, np.maximum(C0, (A[:, :, None] + B[None]).max(axis=1)), rtol=1e-6)


def test_compiled_bundles_are_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("KGE_CACHE_DIR", str(tmp_path))
    q = kge.tile.query((EXAMPLES_DIR / "q5_strong_pairs.gamut").read_text(), name="q5")
    calls = []
    real = kge.tile._compile
    monkeypatch.setattr(kge.tile, "_compile", lambda *a: calls.append(a) or real(*a))
    first = q.compile(cubin=False)
    assert len(calls) == 1 and len(list(tmp_path.glob("*.kgebundle"))) == 1
    assert [launch["function"] for launch in first.manifest["launches"]] == \
        ["q5_clear", "q5", "q5_small"]
    assert [p["role"] for p in first.params] == ["table", "table", "output", "output", "output", "output"]
    # The same query, parsed again: read from the cache, not compiled.
    again = kge.tile.query((EXAMPLES_DIR / "q5_strong_pairs.gamut").read_text(), name="q5")
    assert again.compile(cubin=False).text == first.text and len(calls) == 1
    # Another tile shape, dtype or query is another bundle.
    q.compile(cubin=False, block_m=32, block_n=32, block_k=8, thread_m=2, thread_n=2)
    kge.tile.query(q.text, name="q5", dtypes={"P": "f64"}).compile(cubin=False)
    assert len(calls) == 3 and len(list(tmp_path.glob("*.kgebundle"))) == 3
    small = q.compile(cubin=False, block_m=32, block_n=32, block_k=8, thread_m=2, thread_n=2)
    assert small.manifest["launches"][1]["grid"] == ["ceildiv(N, 32)", "min(ceildiv(M, 32), 65535)",
                                                    "ceildiv(ceildiv(M, 32), 65535)"]
    with pytest.raises(TypeError, match="unknown tile option 'tile'"):
        q.compile(tile=3)
    with pytest.raises(MLIRError, match="invalid tile shape"):
        q.compile(cubin=False, cache=False, block_m=60, thread_m=8)


def test_products_take_the_tensor_cores(tmp_path, monkeypatch):
    monkeypatch.setenv("KGE_CACHE_DIR", str(tmp_path))
    text = (EXAMPLES_DIR / "gemm.gamut").read_text()
    half = kge.tile.query(text, name="g", dtypes={"A": "bf16", "B": "bf16"})
    bundle = half.compile(cubin=False)
    assert [launch["function"] for launch in bundle.manifest["launches"]] == \
        ["g_wgmma", "g_mma", "g_mma_small", "g_small"]
    assert bundle.manifest["target"]["chip"] == "sm_90a"
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in bundle.text
    # Without warpgroup MMA: mma.sync for sm_80 and newer.
    sync = half.compile(cubin=False, warpgroup=False)
    assert [launch["function"] for launch in sync.manifest["launches"]] == \
        ["g_mma", "g_mma_small", "g_small"]
    assert sync.manifest["target"]["chip"] == "sm_90" and "wgmma" not in sync.text
    # f32 products stay on CUDA cores unless asked; then 3xTF32 or TF32.
    single = kge.tile.query(text, name="g")
    assert "mma.sync" not in single.compile(cubin=False).text
    x3 = single.compile(cubin=False, matrix_math="tf32x3")
    assert x3.text.count("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") == \
        3 * single.compile(cubin=False, matrix_math="tf32").text.count(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
    assert len(list(tmp_path.glob("*.kgebundle"))) == 5
    # Warpgroup MMA for long reductions only.
    first = bundle.manifest["launches"][0]
    assert first["function"] == "g_wgmma" and first["when"].endswith("* min(1, K / 1024)")
    with pytest.raises(ValueError, match="matrix_math must be one of fma, tf32, tf32x3"):
        single.compile(matrix_math="tf16")
    with pytest.raises(TypeError, match="warpgroup must be a bool"):
        single.compile(warpgroup="no")
    # Clusters of two blocks along M by default (grids of whole clusters),
    # of one or four on request.
    assert first["grid"] == ["ceildiv(N, 256)", "2 * ceildiv(M, 256)", "1"]
    assert ".reqnctapercluster 1, 2, 1" in bundle.text
    alone = half.compile(cubin=False, cluster_m=1)
    assert alone.manifest["launches"][0]["grid"] == ["ceildiv(N, 256)", "ceildiv(M, 128)", "1"]
    assert "reqnctapercluster" not in alone.text and "multicast" not in alone.text
    four = half.compile(cubin=False, cluster_m=4)
    assert four.manifest["launches"][0]["grid"] == ["ceildiv(N, 256)", "4 * ceildiv(M, 512)", "1"]
    with pytest.raises(ValueError, match="cluster_m must be 1, 2 or 4"):
        half.compile(cluster_m=3)


def test_tensor_core_results_match_the_cpu_path_in_their_precision():
    """What the CPU path computes for the tensor cores' operands: 16-bit
    inputs widened exactly, so the f32 sums agree with NumPy's."""
    text = (EXAMPLES_DIR / "gemm.gamut").read_text()
    q = kge.tile.query(text, name="g", dtypes={"A": "f16", "B": "f16"})
    rng = np.random.default_rng(12)
    A = rng.standard_normal((33, 40)).astype(np.float16)
    B = rng.standard_normal((40, 17)).astype(np.float16)
    np.testing.assert_allclose(q.run_cpu(A=A, B=B), A.astype(np.float64) @ B,
                               rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", ["f32", "i32", "i64", "f64", "bf16"])
def test_distinct_compiles_to_a_hash_set_plan(dtype):
    """Distinct on the GPU: the plan clears the counter and the hash set,
    then runs the tiled kernel (large and small tiles); the cubin links."""
    q = kge.tile.query(QUERY.format(init="0", acc="accum += A[i, k] * B[k, j];",
                                    out="C.distinct(accum);"),
                       dtypes={"A": dtype, "B": dtype})
    bundle = q.compile(cache=False)
    manifest = bundle.manifest
    kinds = [launch["kind"] for launch in manifest["launches"]]
    # bf16 products also take the tensor cores' kernels.
    assert kinds == ["kernel", "memset"] + ["kernel"] * (4 if dtype == "bf16" else 2)
    assert manifest["launches"][0]["function"] == "query_clear"
    assert manifest["launches"][1]["buffer"] == "scratch:set"
    assert manifest["scratch"] == [{"name": "set", "dtype": "i64",
                                    "count": "2 * C_values_d0 + 1"}]


def test_gpu_lowering_diagnoses_outputs_it_lacks():
    top = kge.tile.query((EXAMPLES_DIR / "q7_top_preferences.gamut").read_text())
    manifest = top.compile(cubin=False, cache=False).manifest
    # The shards' locks cleared, their entries filled, the products, then
    # the k best of all shards.
    assert [launch["kind"] for launch in manifest["launches"]] \
        == ["memset", "kernel", "kernel", "kernel"]
    assert [launch.get("function") for launch in manifest["launches"]][1:] \
        == ["query_clear", "query", "query_merge"]
    assert [(s["name"], s["count"]) for s in manifest["scratch"]] == [
        ("locks", "32"), ("shard_values", "4096"), ("shard_rows", "4096"),
        ("shard_cols", "4096")]
    with pytest.raises(MLIRError, match="the block tile must hold a power of two of at most 4096"):
        top.compile(cubin=False, cache=False, block_m=128, block_n=128, block_k=8, thread_m=8,
                    thread_n=8)


#
# The decorator front end.
#

from kge.tile import i, j, k, reduce  # noqa: E402


def test_decorated_query_1_matches_the_syntax_example():
    @kge.tile.function
    def amplify(S, W, thres):
        p = S[i, k] * W[k, j]
        return reduce(p + (p > thres[i]) * (p - thres[i]))

    assert amplify.name == "amplify" and amplify.inputs == ["S", "W", "thres"]
    x = inputs("q1_amplify", np.random.default_rng(11))
    np.testing.assert_allclose(amplify.run_cpu(**x), reference("q1_amplify", x), rtol=2e-5, atol=1e-4)


def test_decorated_output_operators():
    rng = np.random.default_rng(12)
    x = inputs("q2_preference_by_zip", rng, M=20, N=15, K=8, zips=4)
    acc = accumulate_f32(x["P"], x["R"])

    @kge.tile.function
    def by_zip(P, R, Pzip, Rzip):
        return kge.tile.aggregate(reduce(P[i, k] * R[k, j]), Pzip[i], Rzip[j], combine="max")

    C = by_zip.run_cpu(**{**x, "C": np.full((4, 4), -np.inf, np.float32)})
    expected = np.full((4, 4), -np.inf)
    np.maximum.at(expected, (x["Pzip"][:, None], x["Rzip"][None, :]), acc)
    np.testing.assert_allclose(C, expected, rtol=1e-6)

    @kge.tile.function(when=lambda P, R, Pzip, Rzip: Pzip[i] == Rzip[j])
    def best_same_zip(P, R, Pzip, Rzip):
        s = reduce(P[i, k] * R[k, j])
        return kge.tile.top_k(s * 2, 5, where=s > -100)

    vals, rows, cols = best_same_zip.run_cpu(**{n: x[n] for n in ("P", "R", "Pzip", "Rzip")})
    same = x["Pzip"][:, None] == x["Rzip"][None, :]
    assert np.all(same[rows, cols])
    np.testing.assert_array_equal(vals, np.sort((acc * 2)[same])[::-1][:5])

    @kge.tile.function
    def strong(P, R):
        s = reduce(P[i, k] * R[k, j])
        return kge.tile.select(kge.tile.where(s > 2, s, -s), where=kge.tile.absolute(s) > 2)

    rows, cols, vals = strong.run_cpu(P=x["P"], R=x["R"])
    r, c = np.nonzero(np.abs(acc) > 2)
    np.testing.assert_array_equal(rows, r)
    np.testing.assert_array_equal(vals, np.abs(acc[r, c]))

    @kge.tile.function
    def transposed(P, R):
        return kge.tile.dense(reduce(kge.tile.maximum(P[i, k], R[k, j]), combine="min"),
                              transpose=True)

    np.testing.assert_array_equal(
        transposed.run_cpu(P=x["P"], R=x["R"]),
        np.maximum(x["P"][:, :, None], x["R"][None]).min(axis=1).T)


def test_decorated_custom_combination():
    @kge.tile.function
    def noisy_or(A, B):
        return reduce(kge.tile.sigmoid(A[i, k] * B[k, j]), combine=lambda a, b: a + b - a * b,
                      init=0)

    assert "associative combine(a, b) = ((a + b) - (a * b));" in noisy_or.text
    rng = np.random.default_rng(13)
    A, B = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    p = 1 / (1 + np.exp(-(A[:, :, None].astype(np.float64) * B[None])))
    np.testing.assert_allclose(noisy_or.run_cpu(A=A, B=B), 1 - np.prod(1 - p, axis=1), rtol=1e-5)


@pytest.mark.parametrize("body,message", [
    (lambda A, B: A[i, k] * B[k, j], "reduces nothing"),
    (lambda A, B: reduce(A[i, k]) + reduce(B[k, j]), "has 2 reductions; a matmul-like task has one"),
    (lambda A, B: reduce(A[i, k], combine=lambda a, b: a * b), "needs its identity as init="),
    (lambda A, B: reduce(A[i, k] if A[i, k] > 0 else B[k, j]), "has no truth value"),
    (lambda A, B: reduce(A[i, "k"]), "index A with the axes i, j, k"),
    (lambda A, B: reduce(A[i, k] * "x"), "computes on arrays and numbers, got str"),
])
def test_decorator_errors(body, message):
    def query(A, B):
        return body(A, B)
    with pytest.raises(kge.tile.TraceError, match=message):
        kge.tile.function(query)


def test_decorated_query_errors_come_from_the_parser():
    # A well-traced but invalid task (an input on both spatial axes).
    with pytest.raises(MLIRError, match="'A' is indexed by both spatial axes"):
        kge.tile.function(lambda A: reduce(A[i, j]))


def test_schedule_shows_the_kernels_as_tile_iterators(tmp_path, monkeypatch):
    """Query.schedule gives the IR of the kernels compile_query builds for
    the same options: the schedule that kge-opt --tile-schedule prints."""
    monkeypatch.setenv("KGE_CACHE_DIR", str(tmp_path))
    q = kge.tile.query((EXAMPLES_DIR / "gemm.gamut").read_text(), name="gemm")
    cuda = q.schedule()
    assert cuda.count("tile.kernel") == 2 and "tile.compute" in cuda and "tile.mma" not in cuda
    assert 'tile.kernel "" block [128, 128, 8] thread [8, 8]' in cuda
    tf32 = q.schedule(matrix_math="tf32")
    assert 'tile.kernel "_wgmma" block [128, 256, 32] thread [2, 64] stages 4 cluster_m 2 ' \
        'min_k 1024' in tf32
    # B[k, j] reaches warpgroup MMA through its transposed copy.
    assert "tile.load input 1 dense transposed via tma : !tile.tile<32x256xf32>" in tf32
    assert "_wgmma" not in q.schedule(matrix_math="tf32", warpgroup=False)
    assert "cluster_m" not in q.schedule(matrix_math="tf32", cluster_m=1)
    fixed = q.schedule(block_m=32, block_n=32, block_k=8, thread_m=2, thread_n=2)
    assert fixed.count("tile.kernel") == 1 and "block [32, 32, 8] thread [2, 2]" in fixed
    # The kernels of the schedule are the bundle's.
    bundle = q.compile(cubin=False, matrix_math="tf32")
    kernels = [launch["function"] for launch in bundle.manifest["launches"]
               if launch["module"] != "library"]
    assert kernels == ["gemm" + s for s in ("_wgmma", "_mma", "_mma_small", "_small")]
    assert "tile.kernel \"_mma_small\"" in tf32
    with pytest.raises(ValueError, match="matrix_math must be one of"):
        q.schedule(matrix_math="tf64")
    with pytest.raises(TypeError, match="unknown tile option 'tile'"):
        q.schedule(tile=3)
    # The query itself keeps no schedule.
    assert "schedule" not in str(q)
