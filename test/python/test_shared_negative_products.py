"""The products of training against shared negatives
(kge.shared_negatives.PRODUCTS) as tile queries: on the CPU, with rows of
several keys in any order, they compute S[i] = E[key[i]] Q[i],
dQ[i] = G[i] E[key[i]] and dE[key] += G^T Q over each key's rows; each
compiles for the GPU (the segment products on tensor cores at TF32 and
3xTF32) and the bundles round-trip through a directory."""

import numpy as np
import pytest

from kge import shared_negatives, tile


def queries():
    return {name: tile.query(text, name=name, dtypes={"key": "i64"})
            for name, text in shared_negatives.PRODUCTS.items()}


@pytest.mark.parametrize("keys,rows,n,d", [(1, 7, 5, 3), (4, 64, 96, 32), (6, 33, 17, 40)])
def test_products_compute_the_scores_and_their_gradients(keys, rows, n, d):
    rng = np.random.default_rng(keys + rows + n + d)
    Q = rng.standard_normal((rows, d)).astype(np.float32)
    E = rng.standard_normal((keys, n, d)).astype(np.float32)
    G = rng.standard_normal((rows, n)).astype(np.float32)
    key = rng.integers(0, keys, rows)
    q = queries()
    np.testing.assert_allclose(q["scores"].run_cpu(Q=Q, E=E, key=key),
                               np.einsum("id,ijd->ij", Q, E[key]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(q["query_gradient"].run_cpu(G=G, E=E, key=key),
                               np.einsum("ij,ijd->id", G, E[key]), rtol=1e-5, atol=1e-5)
    want = np.zeros((keys, n, d))
    np.add.at(want, key, G[:, :, None] * Q[:, None, :])
    got = q["negative_gradient"].run_cpu(G=G, Q=Q, key=key, dE=np.zeros((keys, n, d),
                                                                        np.float32))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_products_refuse_bad_keys_and_shapes():
    q = queries()
    Q, E = np.ones((4, 3), np.float32), np.ones((2, 5, 3), np.float32)
    with pytest.raises(IndexError, match="index 2 at position 2 of 'key' is out of range for "
                                         "table 'E' with 2 rows"):
        q["scores"].run_cpu(Q=Q, E=E, key=np.array([0, 1, 2, 0]))
    with pytest.raises(ValueError, match="'Q' expects rank 2"):
        q["scores"].run_cpu(Q=Q[0], E=E, key=np.zeros(4, np.int64))


@pytest.mark.parametrize("matrix_math", ["tf32", "tf32x3"])
def test_products_compile_on_tensor_cores_and_round_trip(tmp_path, matrix_math):
    products = shared_negatives.compile_products(matrix_math)
    assert set(products) == set(shared_negatives.PRODUCTS)
    # The segment products and dE's sums per key on mma.sync at TF32
    # (3xTF32: three products of split operands).
    for name, bundle in products.items():
        assert "mma.sync" in bundle.text and ".tf32" in bundle.text, name
    shared_negatives.save_products(products, tmp_path)
    loaded = shared_negatives.load_products(tmp_path)
    assert loaded == {name: b.text for name, b in products.items()}
    (tmp_path / "scores.kgebundle").unlink()
    with pytest.raises(FileNotFoundError, match="scores.kgebundle"):
        shared_negatives.load_products(tmp_path)
