"""bvec's matrix products per edge through the tile level (TransR, RESCAL:
convert-bvec-to-tile{matrices}, what kge-lower-to-gpu does by default): on
the CPU path, the tile function's scores against the NumPy reference and
against bvec's own loops; its bundle keeps the bvec function's interface
(parameters, the score a result); functions of other forms are left to the
fused kernel."""

import zlib

import numpy as np
import pytest

import kgetest
from kge import compiler, ir
from reference import EXAMPLES

MATRIX_MODELS = ["transr", "rescal"]
# (edges, embedding length, table rows, index kind)
CASES = [(1, 7, 20, "uniform"), (37, 16, 50, "uniform"), (300, 33, 40, "duplicate_heavy"),
         (64, 20, 64, "all_identical"), (200, 12, 300, "duplicate_free")]


def _module(examples_dir, name):
    return ir.Module.parse(ir.Context(), (examples_dir / f"{name}.mlir").read_text())


@pytest.mark.parametrize("name", MATRIX_MODELS)
@pytest.mark.parametrize("edges,length,rows,kind", CASES,
                         ids=[f"B{b}-D{d}-{k}" for b, d, _, k in CASES])
def test_matrix_models_through_tile_match_numpy_and_bvec(tools, examples_dir, name, edges,
                                                         length, rows, kind):
    sig = kgetest.signature(tools, examples_dir / f"{name}.mlir")
    rng = np.random.default_rng(zlib.crc32(f"{name}-{edges}-{length}-{kind}".encode()))
    args = kgetest.make_inputs(sig, rng, edges, kgetest.sizes_for(sig, length), kind, rows)
    module = _module(examples_dir, name)
    tiled = compiler.matrix_products_through_tile(module)
    assert "tile.task" in str(tiled) and "output reduce" in str(tiled)
    scores = compiler.compile_cpu(tiled, name)(args)["score"]
    reference = np.asarray(EXAMPLES[name](**args))
    assert kgetest.scores_match(scores, reference), f"max error {np.abs(scores - reference).max()}"
    fused = compiler.compile_cpu(module, name)(args)["score"]
    np.testing.assert_allclose(scores, fused, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(fused).max()))
    # The comparison catches one wrong edge.
    scores[edges // 2] += 1e-3 * max(np.abs(reference).max(), 1.0)
    assert not kgetest.scores_match(scores, reference)


def test_half_precision_rescal_through_tile(examples_dir):
    """bf16 tables: rows and matrices widened in the inner computation and
    the projection, the score f32."""
    text = (examples_dir / "rescal.mlir").read_text().replace("xf32>", "xbf16>")
    text = text.replace("!bvec.scalar<?xbf16>", "!bvec.scalar<?xf32>")
    text = text.replace("-> !bvec.vec<?x?xbf16>", "-> !bvec.vec<?x?xf32>")
    text = text.replace("-> !bvec.mat<?x?x?xbf16>", "-> !bvec.mat<?x?x?xf32>")
    text = text.replace(": !bvec.vec<?x?xbf16>, !bvec.mat<?x?x?xbf16>", ": !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32>")
    text = text.replace(": !bvec.vec<?x?xbf16>, !bvec.vec<?x?xbf16>", ": !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32>")
    module = ir.Module.parse(ir.Context(), text)
    tiled = compiler.matrix_products_through_tile(module)
    assert "arith.extf" in str(tiled)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(3)
    E = rng.uniform(-1, 1, (40, 24)).astype(ml_dtypes.bfloat16)
    P = rng.uniform(-1, 1, (6, 24, 24)).astype(ml_dtypes.bfloat16)
    h, r, t = rng.integers(0, 40, 50), rng.integers(0, 6, 50), rng.integers(0, 40, 50)
    scores = compiler.compile_cpu(tiled, "rescal")({"Eemb": E, "Pm": P, "h": h, "r": r, "t": t})["score"]
    reference = EXAMPLES["rescal"](Eemb=E.astype(np.float64), Pm=P.astype(np.float64), h=h, r=r, t=t)
    assert kgetest.scores_match(scores, reference)


@pytest.mark.parametrize("name", MATRIX_MODELS)
def test_bundle_keeps_the_bvec_interface(examples_dir, name):
    """The tile path's bundle takes the same parameters, in the same order,
    as the fused kernel's, the score a result the runtime allocates."""
    module = _module(examples_dir, name)
    tiled = compiler.compile_bundle(module, cubin=False)
    fused = compiler.compile_bundle(module, cubin=False, fuse_matrix_products=True)
    assert ([(p["name"], p["role"], p["dtype"]) for p in tiled.params]
            == [(p["name"], p["role"], p["dtype"]) for p in fused.params])
    assert tiled.params[-1]["role"] == "result"
    assert f"{name}_finalize" in tiled.ptx and f"{name}_mma" in tiled.ptx
    assert f"{name}_finalize" not in fused.ptx


def test_other_forms_stay_bvec_functions(examples_dir):
    """No matrix product, or one the reduce output does not express (the
    tensor-core compositions of the GPU suite: two results), stays for the
    fused kernel."""
    for name in ("distmult", "transh", "transd"):
        module = compiler.matrix_products_through_tile(_module(examples_dir, name))
        assert "bvec.func" in str(module) and "tile.task" not in str(module)
    inputs = examples_dir.parent.parent / "test" / "python" / "Inputs"
    for name in ("matrix_runs", "two_products"):
        module = ir.Module.parse(ir.Context(), (inputs / f"{name}.mlir").read_text())
        assert "tile.task" not in str(compiler.matrix_products_through_tile(module))
