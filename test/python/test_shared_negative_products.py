"""The products of training against shared negatives
(kge.shared_negatives.PRODUCTS) as tile queries: on the CPU they compute
S = Q E^T, dQ = G E and dE = G^T Q; each compiles for the GPU on tensor
cores (TF32 and 3xTF32) and the bundles round-trip through a directory."""

import numpy as np
import pytest

from kge import shared_negatives, tile


@pytest.mark.parametrize("m,n,k", [(7, 5, 3), (64, 96, 32), (33, 17, 40)])
def test_products_compute_the_scores_and_their_gradients(m, n, k):
    rng = np.random.default_rng(m + n + k)
    Q = rng.standard_normal((m, k)).astype(np.float32)
    E = rng.standard_normal((n, k)).astype(np.float32)
    G = rng.standard_normal((m, n)).astype(np.float32)
    q = {name: tile.query(text, name=name) for name, text in shared_negatives.PRODUCTS.items()}
    np.testing.assert_allclose(q["scores"].run_cpu(Q=Q, E=E), Q @ E.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(q["query_gradient"].run_cpu(G=G, E=E), G @ E, rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(q["negative_gradient"].run_cpu(G=G, Q=Q), G.T @ Q, rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(ValueError, match="'Q' expects rank 2"):
        q["scores"].run_cpu(Q=Q[0], E=E)


@pytest.mark.parametrize("matrix_math", ["tf32", "tf32x3"])
def test_products_compile_on_tensor_cores_and_round_trip(tmp_path, matrix_math):
    products = shared_negatives.compile_products(matrix_math)
    assert set(products) == set(shared_negatives.PRODUCTS)
    # TF32 on warpgroup MMA (sm_90a); 3xTF32 as three mma.sync products.
    instruction = "wgmma.mma_async" if matrix_math == "tf32" else "mma.sync"
    for name, bundle in products.items():
        assert instruction in bundle.text and ".tf32" in bundle.text, name
    shared_negatives.save_products(products, tmp_path)
    loaded = shared_negatives.load_products(tmp_path)
    assert loaded == {name: b.text for name, b in products.items()}
    (tmp_path / "scores.kgebundle").unlink()
    with pytest.raises(FileNotFoundError, match="scores.kgebundle"):
        shared_negatives.load_products(tmp_path)
