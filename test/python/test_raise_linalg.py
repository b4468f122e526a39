"""bvec-raise-linalg: score functions written in linalg/tensor (as
torch-mlir lowers embeddings and elementwise/reduction math) become bvec
functions that compute what NumPy computes on the same arrays, and compile
to GPU bundles; a function with anything else stays as it was."""

import numpy as np
import pytest

from kge import compiler, ir
from linalg_functions import FUNCTIONS

ENTITIES, RELATIONS, BATCH = 97, 7, 129


def raised(text):
    context = ir.Context()
    module = ir.Module.parse(context, text)
    pm = ir.PassManager(context)
    pm.add("bvec-raise-linalg")
    pm.run(module)
    return module


def skewed(rng, n, size):
    p = np.arange(1, n + 1, dtype=np.float64) ** -0.7
    return rng.choice(n, size, p=p / p.sum()).astype(np.int64)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("dim", [16, 64])
def test_raised_functions_compute_what_numpy_computes(name, dim):
    text, reference = FUNCTIONS[name](dim)
    module = raised(text)
    printed = str(module)
    assert f"bvec.func @{name}" in printed and "linalg" not in printed, printed
    rng = np.random.default_rng(dim)
    tables = [p for p in reference.__code__.co_varnames[:reference.__code__.co_argcount]
              if p.isupper()]
    arrays = {t: rng.standard_normal((ENTITIES if t == "E" else RELATIONS, dim))
              .astype(np.float32) for t in tables}
    arrays.update(h=skewed(rng, ENTITIES, BATCH), t=skewed(rng, ENTITIES, BATCH),
                  r=rng.integers(0, RELATIONS, BATCH).astype(np.int64))
    scores = compiler.compile_cpu(module, name)(arrays)["score"]
    expected = reference(**arrays)
    np.testing.assert_allclose(scores, expected, rtol=2e-5, atol=2e-5)
    # And the same function compiles to a kernel bundle.
    bundle = compiler.compile_bundle(module, cubin=False, cache=False)
    assert bundle.name == name


def test_an_inner_product_becomes_vec_mul_vec():
    text, _ = FUNCTIONS["distmult"](32)
    printed = str(raised(text))
    assert "bvec.vec_mul_vec" in printed and "bvec.reduce" not in printed
    assert "bvec.mul %" in printed


def test_a_per_edge_scalar_broadcast_scales_vectors():
    text, _ = FUNCTIONS["transh"](32)
    assert "bvec.scal_mul_vec" in str(raised(text))


UNSUPPORTED = {
    "transposed input": ("indexing_maps = [#id, #id, #row]",
                         "indexing_maps = [#id, affine_map<(b, d) -> (d, b)>, #row]"),
    "reduction over the batch": ('iterator_types = ["parallel", "reduction"]',
                                 'iterator_types = ["reduction", "parallel"]'),
    "sum from one": ("%zero = arith.constant 0.0 : f32", "%zero = arith.constant 1.0 : f32"),
}


@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_functions_with_anything_else_stay_as_they_were(case):
    """(test/Dialect/BatchedVector/raise-linalg.mlir checks each remark.)"""
    text, _ = FUNCTIONS["distmult"](16)
    old, new = UNSUPPORTED[case]
    assert old in text
    printed = str(raised(text.replace(old, new, 1)))
    assert "func.func @distmult" in printed and "bvec.func" not in printed
