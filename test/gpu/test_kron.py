"""The `kron` dialect's solver on the GPU (bundles of
test/gpu/build_kron_bundles.py, KGE_GPU_KRON_BUNDLES): Gram matrices of
the marginalized graph kernel against the float64 reference of kge.kron
(dense solves and the on-the-fly CPU solver), symmetry and positive
semi-definiteness, X against Y, normalization, slow convergence (q =
5e-4), and non-convergence reported per pair."""

import os
import pathlib

import numpy as np
import pytest

from kge import kron
from kron_configs import CONFIGS, bundle_name

torch = pytest.importorskip("torch")
ROOT = pathlib.Path(__file__).resolve().parents[2]
BUNDLES = pathlib.Path(os.environ.get("KGE_GPU_KRON_BUNDLES", ROOT / ".carry" / "kron"))

_loaded = {}


def solver(config, order="auto"):
    key = (config, order)
    if key not in _loaded:
        path = BUNDLES / bundle_name(config, order)
        if not path.exists():
            pytest.skip(f"no bundle {path} (run test/gpu/build_kron_bundles.py)")
        from kge.compiler import Bundle
        bundle = Bundle.read(path)
        _loaded[key] = (bundle, bundle.load())
    return _loaded[key]


def random_graph(rng, n, p, features):
    """A graph of n nodes with the labels `features` names (node, edge)."""
    return kron.random_labeled_graph(rng, n, p, *features)


def dataset(rng, config, sizes):
    features = (CONFIGS[config]["node_features"], CONFIGS[config]["edge_features"])
    graphs = [random_graph(rng, n, min(1.0, 3.0 / max(n, 1)), features) for n in sizes]
    # A disconnected graph (two components) and, last (its tiles are the
    # arrays' end), one without edges.
    g = random_graph(rng, 12, 0.5, features)
    a = g.adjacency.copy()
    a[:6, 6:] = a[6:, :6] = 0
    graphs.append(kron.LabeledGraph(a, g.node_labels, {
        k: np.where(a > 0, v, 0) for k, v in g.edge_labels.items()}))
    graphs.append(random_graph(rng, 4, 0.0, features))
    return graphs


def reference(config, X, Y=None):
    c = CONFIGS[config]
    return kron.gram(X, Y, node_kernel=c["node_kernel"], edge_kernel=c["edge_kernel"],
                     q=c["q"], normalize=c["normalize"], tol=1e-10, maxiter=100000,
                     degrees=c.get("degrees", "additive"))


def run(config, X, Y=None, order="auto"):
    c = CONFIGS[config]
    bundle, program = solver(config, order)
    packed = lambda G: kron.pack(G, c["node_features"], c["edge_features"])
    return kron.run_gram(bundle, packed(X), None if Y is None else packed(Y), program=program)


@pytest.mark.parametrize("order", ["auto", "natural", "rcm", "pbr", "refined"])
@pytest.mark.parametrize("config", ["delta_sqexp", "unlabeled", "delta_sqexp_scaled",
                                    "unlabeled_scaled", "dense_octiles"])
def test_gram_matches_the_reference(config, order):
    if order == "pbr":
        # (The partition-based order is made on the host by METIS.)
        pytest.importorskip("pymetis", reason="order='pbr' needs pymetis on the host")
    rng = np.random.default_rng(17)
    X = dataset(rng, config, [1, 2, 7, 9, 16, 23, 31, 40])
    k, iterations = run(config, X, order=order)
    assert (iterations > 0).all()
    np.testing.assert_allclose(k, reference(config, X), rtol=2e-4, atol=1e-7)
    np.testing.assert_array_equal(k, k.T)
    assert np.linalg.eigvalsh(k.astype(np.float64)).min() > -1e-5 * np.abs(k).max()
    if CONFIGS[config]["normalize"]:
        np.testing.assert_allclose(np.diag(k), 1.0, rtol=1e-6)


def test_dense_octiles_on_nearly_complete_graphs():
    """The register-blocked octile product on full octiles and on the
    partial last tile row and column (9-30 nodes), against the
    reference."""
    rng = np.random.default_rng(23)
    features = (CONFIGS["dense_octiles"]["node_features"],
                CONFIGS["dense_octiles"]["edge_features"])
    X = [random_graph(rng, n, 0.9, features) for n in (9, 16, 21, 30)]
    k, iterations = run("dense_octiles", X)
    assert (iterations > 0).all()
    np.testing.assert_allclose(k, reference("dense_octiles", X), rtol=2e-4, atol=1e-7)


def test_a_workspace_without_padding_or_zeros_gives_the_same_values():
    """The workspace filled with NaN, and as long as the pairs' vectors
    without the 8 floats each that the dense octile product reads past p
    (the largest pairs then take sparse octile pairs): the same values."""
    rng = np.random.default_rng(29)
    features = (CONFIGS["dense_octiles"]["node_features"],
                CONFIGS["dense_octiles"]["edge_features"])
    X = [random_graph(rng, n, 0.9, features) for n in (9, 16, 21, 30)]
    c = CONFIGS["dense_octiles"]
    bundle, program = solver("dense_octiles")
    tensors = kron.gram_arguments(bundle, kron.pack(X, c["node_features"], c["edge_features"]))
    expected = reference("dense_octiles", X)
    padded = tensors["workspace"].numel()
    blocks, vectors = min(len(tensors["pairs"]), kron.RESIDENT_BLOCKS), padded // (
        min(len(tensors["pairs"]), kron.RESIDENT_BLOCKS) * (30 * 30 + kron.SOLVER_VECTOR_PAD))
    for length in (padded, blocks * vectors * 30 * 30):
        tensors["workspace"] = torch.full((length,), float("nan"), device="cuda")
        results = program(**tensors)
        k = results["gram"].cpu().numpy()
        assert (results["iterations"].cpu().numpy() > 0).all()
        np.testing.assert_allclose(k, expected, rtol=2e-4, atol=1e-7)


def test_single_pairs_against_the_dense_solve():
    rng = np.random.default_rng(3)
    X = dataset(rng, "unlabeled", [5, 8, 13])
    k, _ = run("unlabeled", X)
    c = CONFIGS["unlabeled"]
    for a, g in enumerate(X):
        for b, h in enumerate(X):
            exact = kron.dense_kernel(g, h, c["node_kernel"], c["edge_kernel"], c["q"])
            assert k[a, b] == pytest.approx(exact, rel=2e-4)


@pytest.mark.parametrize("config", ["delta_sqexp_xy", "product_sum_xy", "dense_octiles_xy"])
def test_x_against_y(config):
    rng = np.random.default_rng(5)
    X = dataset(rng, config, [3, 10, 17, 33])
    Y = dataset(rng, config, [1, 8, 25])
    k, iterations = run(config, X, Y)
    assert k.shape == (len(X), len(Y)) and (iterations > 0).all()
    np.testing.assert_allclose(k, reference(config, X, Y), rtol=2e-4, atol=1e-7)


def test_small_stopping_probability_converges():
    rng = np.random.default_rng(11)
    X = dataset(rng, "small_q", [4, 9, 20, 30])
    k, iterations = run("small_q", X)
    assert (iterations > 0).all(), iterations
    np.testing.assert_allclose(k, reference("small_q", X), rtol=2e-3)


def test_non_convergence_is_reported_per_pair():
    rng = np.random.default_rng(2)
    X = dataset(rng, "capped", [1, 12, 20])
    k, iterations = run("capped", X)
    # The one-node graph's pair with itself converges in one iteration;
    # larger pairs need more than the cap of two.
    assert iterations[0, 0] == 1
    assert (iterations[1:3, 1:3] == -2).all()
    assert np.isfinite(k).all()


def test_molecule_like_power_law_dataset():
    """Many graphs of very different sizes (power-law sizes, as in
    DrugBank): every pair solved once, the schedule's order irrelevant to
    the values."""
    rng = np.random.default_rng(23)
    sizes = np.minimum(2 + rng.pareto(1.5, 60) * 6, 90).astype(int)
    config = "delta_sqexp"
    X = dataset(rng, config, sizes)
    k, iterations = run(config, X)
    assert (iterations > 0).all()
    sub = [0, 5, 17, 33, len(X) - 2, len(X) - 1]
    np.testing.assert_allclose(k[np.ix_(sub, sub)], reference(config, [X[i] for i in sub]),
                               rtol=2e-4, atol=1e-7)


@pytest.mark.parametrize("config", ["nodal", "nodal_xy", "nodal_factored_xy", "nodal_pairs"])
def test_nodewise_similarities(config):
    """kron.nodewise: each pair's solution in the datasets' node order
    (scattered back from the tiled order), equal to the reference's."""
    rng = np.random.default_rng(29)
    X = dataset(rng, config, [1, 6, 13, 24, 40])
    symmetric = CONFIGS[config]["symmetric"]
    Y = None if symmetric else dataset(rng, config, [3, 17, 30])
    s, iterations = run(config, X, Y)
    Yr = X if symmetric else Y
    assert s.shape == (sum(g.num_nodes for g in X), sum(g.num_nodes for g in Yr))
    assert (iterations > 0).all()
    c = CONFIGS[config]
    sx = np.r_[0, np.cumsum([g.num_nodes for g in X])]
    sy = np.r_[0, np.cumsum([g.num_nodes for g in Yr])]
    for a, g in enumerate(X):
        for b, h in enumerate(Yr):
            expected = kron.nodewise(g, h, c["node_kernel"], c["edge_kernel"], c["q"])
            np.testing.assert_allclose(s[sx[a]:sx[a + 1], sy[b]:sy[b + 1]], expected,
                                       rtol=5e-4, atol=1e-9)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (7, 5), (333, 257), (1000, 1000)])
def test_results_copied_to_the_host_through_pinned_staging(monkeypatch, dtype, shape):
    # Small staging buffers: several chunks, a partial last one, both buffers reused.
    monkeypatch.setattr(kron, "STAGING_BYTES", 4096 * 8)
    monkeypatch.setattr(kron, "_STAGING", {})
    k = torch.randn(shape, dtype=dtype, device="cuda")
    host = kron._to_host(k)
    assert host.dtype == np.float64 and host.shape == shape
    np.testing.assert_array_equal(host, k.double().cpu().numpy())
    # A second matrix reuses the buffers and does not alias the first result.
    again = kron._to_host(k * 2)
    np.testing.assert_array_equal(host * 2, again)
    assert not np.shares_memory(host, again)
