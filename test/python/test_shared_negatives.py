"""Scoring every edge against negatives shared by the batch (Legend's and
PyTorch-BigGraph's chunked negatives) through a tile task
(convert-bvec-to-tile), on the CPU path: each example whose score is one
reduction over the embedding gives, at (i, j), the positive-mode score of
edge i with its tail replaced by negative j (the NumPy reference on the
expanded pairs); the others are refused with the reason."""

import zlib

import numpy as np
import pytest

import kgetest
from kge import compiler, ir
from kge.errors import MLIRError
from reference import EXAMPLES

# Examples whose score is one reduction over the embedding (or a sum of
# sums), and those that are not.
SHARED = ["complex", "crosse", "distmult", "rotate", "simple", "transe_l1", "transe_l2",
          "transf"]
REFUSED = {"rescal": "'bvec.vec_mul_mat' op is a matrix product",
           "transr": "'bvec.vec_mul_mat' op is a matrix product",
           "transh": "'bvec.scal_mul_vec' op scales by a per-edge scalar",
           "transd": "'bvec.scal_mul_vec' op scales by a per-edge scalar"}

# (edges, negatives, embedding length, table rows)
CASES = [(1, 1, 7, 20), (9, 5, 16, 50), (64, 256, 33, 300), (300, 17, 100, 40)]


def test_every_example_is_covered(examples_dir):
    names = sorted(p.stem for p in examples_dir.glob("*.mlir"))
    assert sorted(SHARED + list(REFUSED)) == names


def _shared_module(examples_dir, name, negatives="t"):
    ctx = ir.Context()
    module = ir.Module.parse(ctx, (examples_dir / f"{name}.mlir").read_text())
    return compiler.against_shared_negatives(module, negatives)


@pytest.mark.parametrize("name", SHARED)
@pytest.mark.parametrize("edges,negatives,length,rows", CASES,
                         ids=[f"B{b}-N{n}-D{d}" for b, n, d, _ in CASES])
def test_scores_against_shared_negatives_match_expanded_pairs(tools, examples_dir, name, edges,
                                                              negatives, length, rows):
    sig = kgetest.signature(tools, examples_dir / f"{name}.mlir")
    rng = np.random.default_rng(zlib.crc32(f"{name}-{edges}-{negatives}-{length}".encode()))
    args = kgetest.make_inputs(sig, rng, edges, kgetest.sizes_for(sig, length), "uniform", rows)
    shared = rng.integers(0, rows, negatives)
    run = compiler.compile_cpu(_shared_module(examples_dir, name), name)
    scores = np.full((edges, negatives), np.nan, dtype=np.float32)
    run({**args, "t": shared, "score": scores})
    expanded = dict(args, h=np.repeat(args["h"], negatives), r=np.repeat(args["r"], negatives),
                    t=np.tile(shared, edges))
    reference = np.asarray(EXAMPLES[name](**expanded)).reshape(edges, negatives)
    assert kgetest.scores_match(scores, reference), f"max error {np.abs(scores - reference).max()}"
    # The comparison catches one wrong pair.
    scores[edges // 2, negatives - 1] += 1e-3 * max(np.abs(reference).max(), 1.0)
    assert not kgetest.scores_match(scores, reference)


@pytest.mark.parametrize("name", SHARED)
def test_the_task_reads_negatives_along_j(examples_dir, name):
    text = str(_shared_module(examples_dir, name))
    assert "bvec." not in text and text.count("tile.task") == 1
    assert "outs(" in text and "output dense" in text


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_scores_that_are_not_one_reduction_are_refused(examples_dir, name):
    with pytest.raises(MLIRError, match=REFUSED[name]):
        _shared_module(examples_dir, name)


def test_bad_options_are_refused(examples_dir):
    with pytest.raises(MLIRError, match="has no index array 'q' to take the shared negatives"):
        _shared_module(examples_dir, "distmult", "q")
    with pytest.raises(MLIRError, match="has no index array 'Eemb'"):
        _shared_module(examples_dir, "distmult", "Eemb")
    with pytest.raises(TypeError, match="shared_negatives must name an index array"):
        compiler.gpu_pipeline(shared_negatives="")
    with pytest.raises(ValueError, match="give one"):
        compiler.gpu_pipeline(negative="t", shared_negatives="t")
    assert "kge-lower-to-gpu{shared-negatives=t tile=64}" in compiler.gpu_pipeline(
        shared_negatives="t", tile=64)


def test_traced_function_scores_shared_negatives():
    """The decorator front end: run_cpu(shared_negatives=...) and compile."""
    import kge

    @kge.function
    def distmult(E: kge.Table, R: kge.Table, h: kge.Indices,
                 r: kge.Indices, t: kge.Indices):
        return kge.dot(E[h] * R[r], E[t])

    rng = np.random.default_rng(3)
    E = rng.standard_normal((40, 24)).astype(np.float32)
    R = rng.standard_normal((6, 24)).astype(np.float32)
    h, r, t = rng.integers(0, 40, 11), rng.integers(0, 6, 11), rng.integers(0, 40, 7)
    scores = distmult.run_cpu(E=E, R=R, h=h, r=r, t=t, shared_negatives="t")
    expected = (E[h].astype(np.float64) * R[r]) @ E[t].T.astype(np.float64)
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="needs the index arrays h"):
        distmult.run_cpu(E=E, R=R, r=r, t=t, shared_negatives="t")
    bundle = distmult.compile(shared_negatives="t", cubin=False)
    params = {p["name"]: p for p in bundle.manifest["function"]["params"]}
    assert params["t"]["shape"] == ["N"] and params[next(
        n for n, p in params.items() if p["role"] == "output")]["shape"] == ["M", "N"]


def test_static_batch_takes_any_number_of_negatives():
    """A function specialized to 64 edges still takes N != 64 negatives."""
    ctx = ir.Context()
    module = ir.Module.parse(ctx, """
bvec.func @static_batch(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<64xi64>, %t: !bvec.indices<64xi64>)
    -> (score: !bvec.scalar<64xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<64xi64> -> !bvec.vec<64x?xf32>
  %y = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<64xi64> -> !bvec.vec<64x?xf32>
  %s = bvec.vec_mul_vec %x, %y : !bvec.vec<64x?xf32>, !bvec.vec<64x?xf32> -> !bvec.scalar<64xf32>
  bvec.return %s : !bvec.scalar<64xf32>
}""")
    run = compiler.compile_cpu(compiler.against_shared_negatives(module, "t"), "static_batch")
    rng = np.random.default_rng(1)
    E = rng.standard_normal((30, 8)).astype(np.float32)
    h, t = rng.integers(0, 30, 64), rng.integers(0, 30, 5)
    scores = np.zeros((64, 5), np.float32)
    run({"E": E, "h": h, "t": t, "score": scores})
    np.testing.assert_allclose(scores, E[h].astype(np.float64) @ E[t].T, rtol=1e-5, atol=1e-5)


# Product forms (polynomials in the edge's and the negative's rows) take
# tensor cores at tf32 / tf32x3; RotatE's and TransE-L1's absolute values
# do not.
TENSOR_CORES = {"complex", "crosse", "distmult", "simple", "transe_l2", "transf"}


@pytest.mark.parametrize("name", SHARED)
@pytest.mark.parametrize("matrix_math", ["tf32", "tf32x3"])
def test_product_forms_compile_to_tensor_cores(examples_dir, name, matrix_math):
    module = ir.Module.parse(ir.Context(), (examples_dir / f"{name}.mlir").read_text())
    bundle = compiler.compile_bundle(module, shared_negatives="t", matrix_math=matrix_math,
                                     cubin=False)
    kernels = {launch["function"] for launch in bundle.manifest["launches"]
               if launch.get("kind") == "kernel"}
    assert (f"{name}_mma" in kernels) == (name in TENSOR_CORES), kernels
    # Rows that are not whole 16-byte chunks take the CUDA-core kernel.
    assert f"{name}_small" in kernels
