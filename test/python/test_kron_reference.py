"""The marginalized graph kernel's NumPy reference (kge.kron), which the
kron dialect's kernels will be tested against: the on-the-fly XMV inside
the preconditioned conjugate gradient equals the formed product system's
direct solve; the unlabeled case is the random-walk kernel; Gram matrices
are symmetric and positive semi-definite; small stopping probabilities
converge; bad input is refused with a message."""

import networkx as nx
import numpy as np
import pytest

from kge import kron


def random_graph(rng, n, density=0.3, labels=True):
    upper = np.triu(rng.random((n, n)) < density, 1)
    a = upper * rng.uniform(0.5, 2.0, (n, n))
    a = a + a.T
    node = {"element": rng.integers(0, 3, n), "charge": rng.normal(0, 1, n)}
    order = np.triu(rng.integers(1, 4, (n, n)), 1)
    edge = {"order": order + order.T, "length": np.triu(rng.uniform(1, 2, (n, n)), 1)}
    edge["length"] = edge["length"] + edge["length"].T
    return kron.LabeledGraph(a, node if labels else {}, edge if labels else {})


NODE = kron.TensorProduct(element=kron.KroneckerDelta(0.5),
                          charge=kron.SquareExponential(1.0))
EDGE = kron.TensorProduct(order=kron.KroneckerDelta(0.3),
                          length=kron.SquareExponential(0.5))


@pytest.mark.parametrize("seed", range(5))
def test_on_the_fly_solver_equals_the_dense_product_system(seed):
    rng = np.random.default_rng(seed)
    g1, g2 = random_graph(rng, 7), random_graph(rng, 5, 0.5)
    dense = kron.dense_kernel(g1, g2, NODE, EDGE, q=0.05)
    value = kron.kernel(g1, g2, NODE, EDGE, q=0.05)
    assert np.isclose(value, dense, rtol=1e-9)
    assert np.isclose(kron.kernel(g2, g1, NODE, EDGE, q=0.05), value, rtol=1e-9)
    x = kron.nodewise(g1, g2, NODE, EDGE, q=0.05)
    assert x.shape == (7, 5) and np.all(x > 0)
    assert np.isclose((np.full((7, 5), 1 / 35) * x).sum(), value, rtol=1e-9)


def test_xmv_is_the_product_systems_matrix():
    rng = np.random.default_rng(1)
    g1, g2 = random_graph(rng, 4, 0.6), random_graph(rng, 3, 0.8)
    s = kron._system(g1, g2, NODE, EDGE, 0.1, None)
    matrix = np.stack([kron.xmv(s, e.reshape(4, 3)).ravel() for e in np.eye(12)], 1)
    assert np.allclose(matrix, matrix.T)
    assert np.all(np.linalg.eigvalsh(matrix) > 0)  # symmetric positive definite
    # Off the diagonal: -A_ij A'_kl ke(e_ij, e'_kl) at (ik, jl).
    (i, *_), (j, *_) = np.nonzero(g1.adjacency)
    (k, *_), (l, *_) = np.nonzero(g2.adjacency)
    ke = EDGE({n: v[i, j] for n, v in g1.edge_labels.items()},
              {n: v[k, l] for n, v in g2.edge_labels.items()})
    assert np.isclose(-matrix[i * 3 + k, j * 3 + l],
                      g1.adjacency[i, j] * g2.adjacency[k, l] * ke)


def test_unlabeled_graphs_give_the_random_walk_kernel():
    rng = np.random.default_rng(2)
    g1, g2 = random_graph(rng, 6, labels=False), random_graph(rng, 4, labels=False)
    q = 0.1
    a = np.kron(g1.adjacency, g2.adjacency)
    d = np.kron(g1.adjacency.sum(1) + q, g2.adjacency.sum(1) + q)
    p = np.full(24, 1 / 24)
    expected = p @ np.linalg.solve(np.diag(d) - a, d * q * q)
    one = kron.Constant(1.0)
    assert np.isclose(kron.kernel(g1, g2, one, one, q=q), expected, rtol=1e-9)


def test_scaled_degrees_give_the_transition_probability_walks():
    """degrees='scaled' (GraphDot's convention): D_x from d = sum / (1 - q),
    so that with constant kernels x = sum_k (P (x) P')^k q^2 1, P the walk's
    transition matrix (1 - q) A_ij / sum_j A_ij (an edgeless node: degree
    1)."""
    rng = np.random.default_rng(4)
    g1, g2 = random_graph(rng, 6, labels=False), random_graph(rng, 5, labels=False)
    a2 = g2.adjacency.copy()
    a2[4, :] = a2[:, 4] = 0  # an edgeless node
    g2 = kron.LabeledGraph(a2)
    q = 0.2

    def transition(a):
        sums = a.sum(1)
        return (1 - q) * a / np.where(sums == 0, 1.0, sums)[:, None]
    walk = np.kron(transition(g1.adjacency), transition(g2.adjacency))
    x = np.linalg.solve(np.eye(30) - walk, np.full(30, q * q))
    one = kron.Constant(1.0)
    assert np.isclose(kron.kernel(g1, g2, one, one, q=q, degrees="scaled"), x.mean(),
                      rtol=1e-9)
    assert np.isclose(kron.dense_kernel(g1, g2, one, one, q=q, degrees="scaled"), x.mean(),
                      rtol=1e-9)
    # The conventions differ (the paper's adds q to the degrees).
    assert not np.isclose(kron.kernel(g1, g2, one, one, q=q), x.mean(), rtol=1e-3)
    with pytest.raises(ValueError, match="degrees are 'additive' or 'scaled'"):
        kron.kernel(g1, g2, one, one, q=q, degrees="walk")


def test_gram_matrix_is_symmetric_positive_semidefinite():
    rng = np.random.default_rng(3)
    graphs = [random_graph(rng, n) for n in (3, 5, 6, 4, 7)]
    k = kron.gram(graphs, node_kernel=NODE, edge_kernel=EDGE, q=0.05)
    assert np.allclose(k, k.T)
    assert np.linalg.eigvalsh(k).min() > -1e-10
    kn = kron.gram(graphs, node_kernel=NODE, edge_kernel=EDGE, q=0.05, normalize=True)
    assert np.allclose(np.diag(kn), 1.0)
    cross = kron.gram(graphs[:2], graphs[2:], node_kernel=NODE, edge_kernel=EDGE, q=0.05)
    assert np.allclose(cross, k[:2, 2:])


def test_small_stopping_probabilities_converge():
    rng = np.random.default_rng(4)
    g1, g2 = random_graph(rng, 8, 0.4), random_graph(rng, 6, 0.4)
    for q in (0.05, 5e-3, 5e-4):
        x, iterations = kron.solve(g1, g2, NODE, EDGE, q=q)
        assert iterations < 48  # n n' = 48: CG's bound in exact arithmetic
        assert np.isclose(kron.kernel(g1, g2, NODE, EDGE, q=q),
                          kron.dense_kernel(g1, g2, NODE, EDGE, q=q), rtol=1e-8)
    with pytest.raises(RuntimeError, match="did not converge in 2 iterations"):
        kron.solve(g1, g2, NODE, EDGE, q=5e-4, maxiter=2)


def test_graphs_from_edges():
    g = kron.LabeledGraph.from_edges(4, [(0, 1), (1, 2), (2, 3)], weights=[1, 2, 3],
                                     node_labels={"element": [6, 6, 8, 1]},
                                     edge_labels={"order": [1, 2, 1]})
    assert g.adjacency[2, 1] == 2 and g.edge_labels["order"][1, 2] == 2
    with pytest.raises(IndexError, match=r"outside \[0, 4\)"):
        kron.LabeledGraph.from_edges(4, [(0, 4)])


@pytest.mark.parametrize("adjacency,labels,message", [
    (np.ones((2, 3)), {}, "square matrix"),
    (np.array([[0, 1], [2, 0]]), {}, "not symmetric"),
    (np.array([[0, -1], [-1, 0]]), {}, "negative or non-finite"),
    (np.array([[1, 1], [1, 0]]), {}, "self-loops"),
    (np.array([[0, 1], [1, 0]]), {"element": [1, 2, 3]}, "one value per node"),
])
def test_bad_graphs_are_refused(adjacency, labels, message):
    with pytest.raises(ValueError, match=message):
        kron.LabeledGraph(adjacency, labels)


def test_bad_kernels_and_probabilities_are_refused():
    rng = np.random.default_rng(5)
    g = random_graph(rng, 3, 0.9)
    with pytest.raises(ValueError, match=r"off-diagonal value must be in \(0, 1\]"):
        kron.KroneckerDelta(0)
    with pytest.raises(ValueError, match="length scale must be positive"):
        kron.SquareExponential(-1)
    with pytest.raises(ValueError, match=r"stopping probability must be in \(0, 1\]"):
        kron.kernel(g, g, NODE, EDGE, q=0)
    with pytest.raises(KeyError, match="reads feature.*mass"):
        kron.kernel(g, g, kron.TensorProduct(mass=kron.SquareExponential(1)), EDGE)
    with pytest.raises(ValueError, match="reads one label feature; the graph has 2"):
        kron.kernel(g, g, kron.KroneckerDelta(0.5), EDGE)
    with pytest.raises(ValueError, match="at least one node"):
        kron.kernel(kron.LabeledGraph(np.zeros((0, 0))), g, NODE, EDGE)


def banded_graph(rng, n, band):
    """A graph whose natural order has bandwidth `band`, scrambled."""
    a = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, min(n, i + band + 1)):
            if rng.random() < 0.7:
                a[i, j] = a[j, i] = rng.uniform(0.5, 1.5)
    perm = rng.permutation(n)
    order = rng.integers(1, 3, (n, n))
    return kron.LabeledGraph(a[np.ix_(perm, perm)], {}, {"order": np.triu(order, 1) +
                                                          np.triu(order, 1).T})


def test_octiles_store_the_non_empty_tiles_compactly():
    rng = np.random.default_rng(6)
    g = random_graph(rng, 21, 0.15)
    o = kron.octiles(g)
    assert np.array_equal(o.to_dense(), g.adjacency)
    popcount = np.array([bin(int(b)).count("1") for b in o.bitmaps])
    assert np.array_equal(popcount, o.nonzeros) and o.nonzeros.min() > 0
    assert o.nonzeros.sum() == np.count_nonzero(g.adjacency)
    assert len(o.coords) <= 9 and len(np.unique(o.coords, axis=0)) == len(o.coords)
    order = rng.permutation(21)
    assert np.array_equal(kron.octiles(g, order).to_dense(), g.adjacency)
    with pytest.raises(ValueError, match="permutation of the 21 nodes"):
        kron.octiles(g, np.zeros(21, dtype=int))


def test_rcm_order_gathers_the_non_zeros_into_fewer_octiles():
    rng = np.random.default_rng(7)
    g = banded_graph(rng, 64, 3)
    order = kron.rcm_order(g)
    assert sorted(order.tolist()) == list(range(64))
    position = np.empty(64, dtype=int)
    position[order] = np.arange(64)
    i, j = np.nonzero(g.adjacency)
    assert np.abs(position[i] - position[j]).max() <= 6  # near the band again
    assert len(kron.octiles(g, order).coords) < len(kron.octiles(g).coords) / 2


def ring_of_cliques(rng, cliques, size=8):
    """`cliques` cliques of `size` nodes, each joined to the next by one
    edge, the nodes scrambled; with each node's clique."""
    n = cliques * size
    edges = [(c * size + u, c * size + v) for c in range(cliques)
             for u in range(size) for v in range(u + 1, size)]
    edges += [(c * size, ((c + 1) % cliques) * size + 1) for c in range(cliques)]
    scramble = rng.permutation(n)
    clique = np.empty(n, dtype=int)
    clique[scramble] = np.arange(n) // size
    return kron.LabeledGraph.from_edges(
        n, [(scramble[u], scramble[v]) for u, v in edges]), clique


def test_pbr_order_finds_the_partition_into_tile_rows():
    rng = np.random.default_rng(9)
    g, clique = ring_of_cliques(rng, 12)
    order = kron.pbr_order(g)
    assert sorted(order.tolist()) == list(range(96))
    # Each tile row one clique: the diagonal tiles full, two tiles per
    # joining edge.
    rows = clique[order].reshape(12, 8)
    assert (rows == rows[:, :1]).all() and len(set(rows[:, 0])) == 12
    assert len(kron.octiles(g, order).coords) == 12 + 2 * 12
    assert len(kron.octiles(g).coords) > 3 * (12 + 2 * 12)  # scrambled: nearly all 144
    # Parts exactly balanced: a graph of 8 k + 3 nodes has its short tile
    # row last.
    h = random_graph(rng, 43, labels=False)
    position = np.empty(43, dtype=int)
    position[kron.pbr_order(h)] = np.arange(43)
    assert sorted(np.bincount(position // 8).tolist()) == [3, 8, 8, 8, 8, 8]


def test_xmv_over_octiles_equals_xmv():
    rng = np.random.default_rng(8)
    g1, g2 = random_graph(rng, 11, 0.3), random_graph(rng, 9, 0.4)
    x = rng.random((11, 9))
    s = kron._system(g1, g2, NODE, EDGE, 0.05, None)
    for order1, order2 in ((None, None), (kron.rcm_order(g1), kron.rcm_order(g2))):
        y = kron.xmv_octiles(kron.octiles(g1, order1), kron.octiles(g2, order2), g1, g2,
                             NODE, EDGE, x)
        assert np.allclose(y, kron.xmv(s, x), rtol=1e-12)
    h1, h2 = banded_graph(rng, 10, 2), banded_graph(rng, 12, 3)
    delta = kron.KroneckerDelta(0.4)
    s = kron._system(h1, h2, kron.Constant(1.0), delta, 0.05, None)
    x = rng.random((10, 12))
    assert np.allclose(kron.xmv_octiles(kron.octiles(h1), kron.octiles(h2), h1, h2,
                                        kron.Constant(1.0), delta, x), kron.xmv(s, x))


@pytest.mark.parametrize("degree,graphs", [
    (2, [nx.cycle_graph(n) for n in (3, 5, 8, 13)]),
    (4, [nx.circulant_graph(n, [1, 2]) for n in (6, 9, 11)]),
])
def test_equals_grakels_geometric_random_walk_on_regular_graphs(degree, graphs):
    """Where the two compute the same kernel: on graphs of one degree c,
    the unlabeled marginalized kernel's system is (c + q)^2 (I - lambda
    A_x) x = (c + q)^2 q^2 1 with lambda = 1 / (c + q)^2, so K n n' / q^2
    is GraKeL's geometric random-walk kernel sum((I - lambda A_x)^-1)."""
    from grakel import Graph
    from grakel.kernels import RandomWalk
    q = 0.05
    walk = RandomWalk(lamda=1 / (degree + q) ** 2, kernel_type="geometric",
                      method_type="baseline", normalize=False)
    expected = walk.fit_transform([Graph(nx.to_numpy_array(g)) for g in graphs])
    one = kron.Constant(1.0)
    k = kron.gram([kron.from_networkx(g) for g in graphs], node_kernel=one, edge_kernel=one,
                  q=q)
    n = np.array([g.number_of_nodes() for g in graphs], dtype=float)
    np.testing.assert_allclose(k * np.outer(n, n) / q ** 2, expected, rtol=1e-8)
