"""The kron dialect's solver from Python, on the CPU: the arrays the GPU
kernel reads (kge.kron.pack, octile_parts: kron-octile-tiling's derived
parameters; pair_schedule, workspace_size: convert-kron-to-gpu's) give,
through the kernel's algorithm run on the CPU (gram_octiles), the
reference's Gram matrices; compile_gram's bundles name those parameters in
their manifest; MarginalizedGraphKernel (CPU) works as scikit-learn's
precomputed kernel; networkx graphs and RDKit molecules convert; bad input
is refused with a message."""

import numpy as np
import pytest

from kge import kron


def random_graph(rng, n, p, node=("label",), edge=("length",)):
    return kron.random_labeled_graph(rng, n, p, node, edge)


def dataset(rng, sizes, **features):
    return [random_graph(rng, n, min(1.0, 3.0 / n), **features) for n in sizes]


NODE, EDGE = kron.KroneckerDelta(0.5), kron.SquareExponential(1.0)


def parts_of(packed, order):
    parts = kron.octile_parts(**packed, order=order)
    parts["nodes"] = packed["nodes"]
    return parts


@pytest.mark.parametrize("order", ["natural", "rcm", "pbr", "auto", "refined"])
def test_octile_solver_matches_the_reference(order):
    rng = np.random.default_rng(0)
    X = dataset(rng, [1, 4, 9, 17, 26])
    packed = kron.pack(X, ["label"], ["length"])
    parts = parts_of(packed, order)
    pairs = kron.pair_schedule(packed["nodes"], parts["tiles"])
    k, iterations = kron.gram_octiles(parts, pairs, NODE, EDGE, ["label"], ["length"],
                                      tol=1e-10)
    assert (iterations > 0).all()
    np.testing.assert_allclose(k, kron.gram(X, node_kernel=NODE, edge_kernel=EDGE), rtol=1e-5)


def test_octile_solver_with_scaled_degrees():
    rng = np.random.default_rng(4)
    X = dataset(rng, [1, 6, 13, 22])
    packed = kron.pack(X, ["label"], ["length"])
    parts = parts_of(packed, "auto")
    pairs = kron.pair_schedule(packed["nodes"], parts["tiles"])
    k, _ = kron.gram_octiles(parts, pairs, NODE, EDGE, ["label"], ["length"], tol=1e-10,
                             degrees="scaled")
    np.testing.assert_allclose(
        k, kron.gram(X, node_kernel=NODE, edge_kernel=EDGE, degrees="scaled"), rtol=1e-5)
    assert 'degrees("scaled")' in kron.gram_module(NODE, EDGE, ["label"], ["length"],
                                                   degrees="scaled")


def test_auto_order_weighs_natural_rcm_and_pbr():
    rng = np.random.default_rng(6)
    X = dataset(rng, [9, 30, 57, 80])
    packed = kron.pack(X, ["label"], ["length"])
    counts = {order: kron.octile_parts(**packed, order=order)["tiles"][:, 1]
              for order in ("natural", "rcm", "pbr", "auto")}
    np.testing.assert_array_equal(
        counts["auto"], np.minimum.reduce([counts["natural"], counts["rcm"], counts["pbr"]]))


def tiles_of(n, i, j, order):
    """The non-empty tiles of the graph of edges (i, j) with its nodes in
    `order`."""
    position = np.empty(n, np.int64)
    position[order] = np.arange(n)
    return kron._tile_count(n, i, j, position // 8)


def test_refined_order_swaps_nodes_while_the_tile_count_falls():
    """refined: auto's order improved by node swaps; never more tiles than
    auto, a permutation, its count the layout's; on graphs whose auto order
    leaves tiles to merge, fewer."""
    rng = np.random.default_rng(12)
    X = dataset(rng, [9, 30, 57, 80, 17, 120])
    packed = kron.pack(X, ["label"], ["length"])
    counts = {order: kron.octile_parts(**packed, order=order)["tiles"][:, 1]
              for order in ("auto", "refined")}
    assert (counts["refined"] <= counts["auto"]).all()
    assert counts["refined"].sum() < counts["auto"].sum()
    nodes, edges, ends = packed["nodes"], packed["edges"], packed["ends"]
    for g, order in enumerate(kron.graph_orders(nodes, edges, ends, "refined")):
        n = int(nodes[g, 1])
        assert sorted(order.tolist()) == list(range(n))
        i = ends[edges[g, 0]:edges[g, 0] + edges[g, 1], 0]
        j = ends[edges[g, 0]:edges[g, 0] + edges[g, 1], 1]
        assert tiles_of(n, i, j, order) == counts["refined"][g]
    # A ring numbered across its tile rows: swaps gather it.
    n = 24
    ring = np.arange(n)
    shuffled = np.random.default_rng(0).permutation(n)
    i, j = shuffled[ring], shuffled[(ring + 1) % n]
    natural = tiles_of(n, i, j, np.arange(n))
    assert tiles_of(n, i, j, kron._refine(n, i, j, np.arange(n))) < natural


@pytest.mark.parametrize("seed", range(6))
def test_refinement_run_to_the_end_leaves_no_swap_that_lowers_the_tile_count(seed):
    """The refinement weighs only the pairs whose swap can empty a tile:
    run until a round gains nothing, no swap of two nodes of different
    tile rows lowers the count (checked by brute force), so no improving
    pair was passed over."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(17, 41))
    a = np.triu(rng.random((n, n)) < rng.uniform(0.05, 0.3), 1)
    if seed == 0:
        a[3, 3] = True  # a self-loop is in no tile count's change
    i, j = np.nonzero(a)
    order = kron._refine(n, i, j, rng.permutation(n), rounds=10 * n)
    position = np.empty(n, np.int64)
    position[order] = np.arange(n)
    best = kron._tile_count(n, i, j, position // 8)
    for u in range(n):
        for v in range(u + 1, n):
            if position[u] // 8 != position[v] // 8:
                swapped = position.copy()
                swapped[[u, v]] = swapped[[v, u]]
                assert kron._tile_count(n, i, j, swapped // 8) >= best, (u, v)


def test_x_against_y_with_normalization_and_products_and_sums():
    rng = np.random.default_rng(1)
    node = kron.TensorProduct(label=kron.KroneckerDelta(0.3), charge=kron.SquareExponential(2.0))
    edge = kron.Additive(length=kron.SquareExponential(0.5), kind=kron.KroneckerDelta(0.5))
    features = dict(node=("label", "charge"), edge=("length", "kind"))
    X, Y = dataset(rng, [3, 11, 20], **features), dataset(rng, [2, 9], **features)
    px = kron.pack(X, ["label", "charge"], ["length", "kind"])
    py = kron.pack(Y, ["label", "charge"], ["length", "kind"])
    parts_x, parts_y = parts_of(px, "auto"), parts_of(py, "auto")
    pairs = kron.pair_schedule(px["nodes"], parts_x["tiles"], py["nodes"], parts_y["tiles"],
                               normalize=True)
    # Every Gram entry once, then each graph's self-kernel for normalization.
    assert sorted(map(tuple, pairs[pairs[:, 0] == 0][:, 1:])) == [
        (a, b) for a in range(3) for b in range(2)]
    assert len(pairs) == 6 + 3 + 2
    k, _ = kron.gram_octiles(parts_x, pairs, node, edge, ["label", "charge"],
                             ["length", "kind"], parts_y=parts_y, normalize=True, tol=1e-10)
    np.testing.assert_allclose(k, kron.gram(X, Y, node_kernel=node, edge_kernel=edge,
                                            normalize=True), rtol=1e-5)


def test_octiles_cover_every_edge_twice_in_bit_order():
    rng = np.random.default_rng(2)
    X = dataset(rng, [5, 30, 40])
    packed = kron.pack(X, ["label"], ["length"])
    parts = kron.octile_parts(**packed, order="rcm")
    assert len(parts["weights"]) == 2 * len(packed["weights"])
    bitmaps = parts["bitmaps"].view(np.uint64)
    counts = np.array([bin(int(b)).count("1") for b in bitmaps])
    np.testing.assert_array_equal(np.diff(np.r_[parts["offsets"], len(parts["weights"])]), counts)
    first, count = parts["tiles"][:, 0], parts["tiles"][:, 1]
    np.testing.assert_array_equal(first, np.r_[0, np.cumsum(count)[:-1]])
    # Tiles of a graph sorted by (row, column): the product-row primitive
    # finds a tile row's octiles by binary search.
    for g in range(len(X)):
        coords = parts["coords"][first[g]:first[g] + count[g]]
        assert (np.diff(coords) > 0).all()
    # Degrees are the weighted degrees, in the tiled order.
    assert parts["degrees"].sum() == pytest.approx(2 * packed["weights"].sum(), rel=1e-5)


def test_auto_order_takes_fewer_tiles_per_graph():
    ring = kron.LabeledGraph.from_edges(64, [(i, (i + 1) % 64) for i in range(64)])
    scrambled = np.random.default_rng(3).permutation(64)
    a = ring.adjacency[np.ix_(scrambled, scrambled)]
    packed = kron.pack([kron.LabeledGraph(a)])
    natural = kron.octile_parts(**packed, order="natural")["tiles"][0, 1]
    auto = kron.octile_parts(**packed, order="auto")["tiles"][0, 1]
    assert auto < natural / 2


def test_schedule_puts_the_costliest_pairs_first_and_sizes_the_workspace():
    nodes = np.array([[0, 5], [5, 40], [45, 12]], np.int32)
    tiles = np.array([[0, 1], [1, 12], [13, 3]], np.int32)
    pairs = kron.pair_schedule(nodes, tiles)
    assert tuple(pairs[0]) == (0, 1, 1)
    assert len(pairs) == 6
    # Each vector padded by 8 floats (the zeros the dense octile product
    # reads past p).
    assert kron.workspace_size(pairs, nodes, blocks=4, vectors=5) == 4 * 5 * (40 * 40 + 8)


@pytest.fixture(scope="module")
def compiled():
    pytest.importorskip("kge.ir")
    return kron.compile_gram(NODE, EDGE, ["label"], ["length"], normalize=True, cache=False)


def test_bundle_names_the_derived_parameters(compiled):
    derived = compiled.manifest["derived"]
    assert {f["part"] for f in derived.values() if f["function"] == "octiles"} == {
        "node_labels", "degrees", "rows", "tiles", "coords", "bitmaps", "offsets", "weights",
        "edge_labels"}
    assert derived["pairs"]["function"] == "pair_schedule"
    assert derived["workspace"]["function"] == "solver_workspace"
    roles = {p["name"]: p["role"] for p in compiled.params}
    assert roles["gram"] == roles["iterations"] == "result"
    assert roles["workspace"] == "output"
    kernels = [s["function"] for s in compiled.manifest["launches"] if s["kind"] == "kernel"]
    assert kernels == ["gram_solve", "gram_normalize"]
    rng = np.random.default_rng(4)
    packed = kron.pack(dataset(rng, [3, 8]), ["label"], ["length"])
    arrays = kron.derived_arrays(compiled, dict(packed))
    assert arrays["pairs"].shape == (3, 3)
    assert arrays["workspace"] == 3 * 4 * (64 + kron.SOLVER_VECTOR_PAD)


def test_solver_options_reach_the_pass():
    pytest.importorskip("kge.ir")
    with pytest.raises(TypeError, match="unknown solver option"):
        kron.compile_gram(NODE, EDGE, ["label"], ["length"], cache=False, warps=8)
    small = kron.compile_gram(NODE, EDGE, ["label"], ["length"], cache=False, cached_tiles=8)
    default = kron.compile_gram(NODE, EDGE, ["label"], ["length"], cache=False)
    # Two caches of 16 octiles (weights and one label feature, 512 bytes
    # per octile, bitmap and coordinates 12) against two of 8.
    assert (int(default.manifest["launches"][-1]["shared_bytes"]) -
            int(small.manifest["launches"][-1]["shared_bytes"])) == 2 * 8 * (512 + 12)


def test_kernel_class_on_the_cpu_is_a_precomputed_kernel():
    rng = np.random.default_rng(5)
    X = dataset(rng, [4, 6, 8, 10, 12, 14])
    kernel = kron.MarginalizedGraphKernel(NODE, EDGE, q=0.1, normalize=True, device="cpu")
    k = kernel(X)
    np.testing.assert_allclose(np.diag(k), 1.0)
    np.testing.assert_allclose(k, k.T)
    assert np.linalg.eigvalsh(k).min() > -1e-9
    np.testing.assert_allclose(kernel(X[:2], X), k[:2])
    np.testing.assert_allclose(kernel.diag(X), 1.0)
    sklearn = pytest.importorskip("sklearn.svm")
    model = sklearn.SVC(kernel="precomputed").fit(k, [0, 0, 0, 1, 1, 1])
    assert model.predict(kernel(X[:1], X)).shape == (1,)


def test_non_convergence_raises_or_is_reported():
    rng = np.random.default_rng(6)
    X = dataset(rng, [10, 12])
    kernel = kron.MarginalizedGraphKernel(NODE, EDGE, maxiter=1, device="cpu")
    with pytest.raises(kron.ConvergenceError, match="did not converge within 1 iterations"):
        kernel(X)
    lenient = kron.MarginalizedGraphKernel(NODE, EDGE, maxiter=1, device="cpu",
                                           raise_on_failure=False)
    k = lenient(X)
    assert lenient.failed_pairs and np.isnan(k[lenient.failed_pairs[0]])


@pytest.mark.parametrize("q", [0.0, 1.0, -0.1, 1.5])
def test_stopping_probability_outside_the_interval_is_refused(q):
    with pytest.raises(ValueError, match="stopping probability"):
        kron.MarginalizedGraphKernel(NODE, EDGE, q=q)
    with pytest.raises(ValueError, match="stopping probability"):
        kron.gram_module(NODE, EDGE, ["label"], ["length"], q=q)


def test_bad_datasets_are_refused():
    rng = np.random.default_rng(7)
    good = random_graph(rng, 4, 0.5)
    with pytest.raises(ValueError, match="holds no graph"):
        kron.pack([])
    with pytest.raises(ValueError, match="graph 1 has no node"):
        kron.pack([good, kron.LabeledGraph(np.zeros((0, 0)))], ["label"], ["length"])
    nan = kron.LabeledGraph(good.adjacency, {"label": np.array([0, np.nan, 1, 2])},
                            good.edge_labels)
    with pytest.raises(ValueError, match="graph 0: node label 'label' holds NaN"):
        kron.pack([nan], ["label"], ["length"])
    text = kron.LabeledGraph(good.adjacency, {"label": np.array(["C", "N", "O", "C"])},
                             good.edge_labels)
    with pytest.raises(TypeError, match="not numbers"):
        kron.pack([text], ["label"], ["length"])
    with pytest.raises(KeyError, match="no edge label 'order'"):
        kron.pack([good], ["label"], ["order"])
    with pytest.raises(TypeError, match="not a LabeledGraph"):
        kron.pack([good.adjacency])
    with pytest.raises(TypeError, match="not a base kernel"):
        kron.kernel_attribute(lambda x, y: 1.0)
    with pytest.raises(ValueError, match="node order"):
        kron.octile_parts(**kron.pack([good], ["label"], ["length"]), order="metis")


def test_single_node_disconnected_and_edgeless_graphs():
    single = kron.LabeledGraph(np.zeros((1, 1)), {"label": np.array([1])},
                               {"length": np.zeros((1, 1))})
    pair = kron.LabeledGraph.from_edges(4, [(0, 1), (2, 3)], node_labels={"label": np.arange(4)},
                                        edge_labels={"length": np.array([1.0, 2.0])})
    edgeless = kron.LabeledGraph(np.zeros((3, 3)), {"label": np.array([0, 1, 0])},
                                 {"length": np.zeros((3, 3))})
    X = [single, pair, edgeless]
    packed = kron.pack(X, ["label"], ["length"])
    parts = parts_of(packed, "auto")
    assert list(parts["tiles"][:, 1]) == [0, 1, 0]
    k, iterations = kron.gram_octiles(parts, kron.pair_schedule(packed["nodes"], parts["tiles"]),
                                      NODE, EDGE, ["label"], ["length"], tol=1e-12)
    np.testing.assert_allclose(k, kron.gram(X, node_kernel=NODE, edge_kernel=EDGE), rtol=1e-5)


def test_networkx_graphs_and_rdkit_molecules():
    nx = pytest.importorskip("networkx")
    g = nx.Graph()
    g.add_node("a", element=6.0)
    g.add_node("b", element=8.0)
    g.add_node("c", element=6.0)
    g.add_edge("a", "b", order=2.0, w=0.5)
    g.add_edge("b", "c", order=1.0, w=1.0)
    labeled = kron.from_networkx(g, weight="w")
    assert labeled.num_nodes == 3 and labeled.adjacency[0, 1] == 0.5
    assert set(labeled.node_labels) == {"element"} and set(labeled.edge_labels) == {"order"}
    with pytest.raises(ValueError, match="undirected"):
        kron.as_labeled_graph(nx.DiGraph(g))
    with pytest.raises(TypeError, match="cannot make a labeled graph"):
        kron.as_labeled_graph(42)
    chem = pytest.importorskip("rdkit.Chem")
    benzene = kron.from_molecule(chem.MolFromSmiles("c1ccccc1O"))
    assert benzene.num_nodes == 7
    assert benzene.node_labels["aromatic"].sum() == 6
    assert sorted(set(benzene.edge_labels["order"][benzene.adjacency > 0])) == [1.0, 1.5]
    kernel = kron.MarginalizedGraphKernel(
        kron.TensorProduct(element=kron.KroneckerDelta(0.5), aromatic=kron.KroneckerDelta(0.5)),
        kron.TensorProduct(order=kron.KroneckerDelta(0.5)), normalize=True, device="cpu")
    k = kernel([chem.MolFromSmiles(s) for s in ("CCO", "CCN", "c1ccccc1")])
    assert k[0, 1] > k[0, 2]


def test_datasets_of_the_benchmarks():
    nx = pytest.importorskip("networkx")  # noqa: F841
    for kind in ("nws", "ba", "geometric"):
        graphs = kron.synthetic_graphs(kind, 3, 40, seed=1)
        assert [g.num_nodes for g in graphs] == [40, 40, 40]
        assert all((g.adjacency > 0).sum() > 40 for g in graphs)
    with pytest.raises(ValueError, match="unknown synthetic graph kind"):
        kron.synthetic_graphs("er", 1, 10)
    pytest.importorskip("rdkit")
    import pathlib
    if not pathlib.Path(kron.RDKIT_DATA).exists():
        pytest.skip("Debian's rdkit-data is not installed")
    molecules = kron.nci_molecules(50)
    assert len(molecules) == 50
    proteins = kron.protein_segments(kron.PDB_FILES[:1])
    assert proteins and all(150 < g.num_nodes < 260 for g in proteins)
    d = np.array([3.0, 4.99, 5.0, 6.0])
    np.testing.assert_allclose(kron.smooth_cutoff(d, 5.0)[2:], 0.0)
    assert 0 < kron.smooth_cutoff(d, 5.0)[1] < kron.smooth_cutoff(d, 5.0)[0] < 1


def test_pbr_without_pymetis_says_what_is_missing(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "pymetis", None)
    monkeypatch.setattr(kron, "_PYMETIS", [])  # (the import is tried once per process)
    rng = np.random.default_rng(8)
    packed = kron.pack(dataset(rng, [20]), ["label"], ["length"])
    with pytest.raises(ImportError, match="pip install pymetis"):
        kron.octile_parts(**packed, order="pbr")


@pytest.mark.parametrize("order", ["auto", "pbr"])
def test_nodewise_similarities_from_the_octiles(order):
    """kron.nodewise's algorithm on the CPU: each pair's solution, in the
    tiled order, scattered back to the datasets' node order through the
    octiles' `rows`; the blocks' means are the Gram matrix."""
    rng = np.random.default_rng(12)
    X, Y = dataset(rng, [1, 7, 19, 30]), dataset(rng, [4, 23])
    px, py = kron.pack(X, ["label"], ["length"]), kron.pack(Y, ["label"], ["length"])
    parts_x, parts_y = parts_of(px, order), parts_of(py, order)
    assert sorted(parts_x["rows"]) == list(range(len(px["node_labels"])))
    pairs = kron.pair_schedule(px["nodes"], parts_x["tiles"])
    s, iterations = kron.gram_octiles(parts_x, pairs, NODE, EDGE, ["label"], ["length"],
                                      tol=1e-10, nodal=True)
    assert s.shape == (57, 57) and (iterations > 0).all()
    starts = np.r_[0, np.cumsum([g.num_nodes for g in X])]
    for a, g in enumerate(X):
        for b, h in enumerate(X):
            block = s[starts[a]:starts[a + 1], starts[b]:starts[b + 1]]
            np.testing.assert_allclose(block, kron.nodewise(g, h, NODE, EDGE), rtol=1e-6)
    pairs = kron.pair_schedule(px["nodes"], parts_x["tiles"], py["nodes"], parts_y["tiles"])
    s, _ = kron.gram_octiles(parts_x, pairs, NODE, EDGE, ["label"], ["length"],
                             parts_y=parts_y, tol=1e-10, nodal=True)
    k = kron.gram(X, Y, node_kernel=NODE, edge_kernel=EDGE)
    ends_y = np.r_[0, np.cumsum([g.num_nodes for g in Y])]
    for a in range(len(X)):
        for b in range(len(Y)):
            block = s[starts[a]:starts[a + 1], ends_y[b]:ends_y[b + 1]]
            assert block.mean() == pytest.approx(k[a, b], rel=1e-6)


def test_marginalized_graph_kernel_gives_nodal_similarities():
    rng = np.random.default_rng(13)
    X = dataset(rng, [3, 8, 12])
    kernel = kron.MarginalizedGraphKernel(NODE, EDGE, device="cpu", tol=1e-10)
    s, k = kernel(X, nodal=True), kernel(X)
    assert s.shape == (23, 23)
    np.testing.assert_allclose(s, s.T, rtol=1e-9)
    np.testing.assert_allclose(s[3:11, 11:].mean(), k[1, 2], rtol=1e-9)
    with pytest.raises(ValueError, match="not normalized"):
        kron.MarginalizedGraphKernel(NODE, EDGE, normalize=True, device="cpu")(X, nodal=True)
    with pytest.raises(ValueError, match="not normalized"):
        kron.gram_module(NODE, EDGE, ["label"], ["length"], normalize=True, nodal=True)


def test_nodewise_bundle_returns_the_similarities():
    bundle = kron.compile_gram(NODE, EDGE, ["label"], ["length"], nodal=True, cache=False)
    params = {p["name"]: p for p in bundle.params}
    assert params["similarity"]["shape"] == ["V", "V"] and params["similarity"]["role"] == "result"
    assert params["iterations"]["shape"] == ["G", "G"]
    assert bundle.manifest["derived"]["rows"]["part"] == "rows"
    assert "kron.nodewise" in kron.gram_module(NODE, EDGE, ["label"], ["length"], nodal=True)


def test_auto_order_without_pymetis_weighs_the_other_orders(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "pymetis", None)
    monkeypatch.setattr(kron, "_PYMETIS", [])
    monkeypatch.setattr(kron, "_warned", set())
    rng = np.random.default_rng(9)
    packed = kron.pack(dataset(rng, [20, 33]), ["label"], ["length"])
    with pytest.warns(RuntimeWarning, match="pymetis is not installed"):
        auto = kron.octile_parts(**packed, order="auto")["tiles"][:, 1]
    natural = kron.octile_parts(**packed, order="natural")["tiles"][:, 1]
    rcm = kron.octile_parts(**packed, order="rcm")["tiles"][:, 1]
    np.testing.assert_array_equal(auto, np.minimum(natural, rcm))


def blocks_of(world):
    """A `share` that computes the blocks of `world` ranks here (empty
    blocks skipped, as kge.distributed.gram's)."""
    def share(compute, count):
        bounds = [count * r // world for r in range(world + 1)]
        return [compute(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
    return share


@pytest.mark.parametrize("world", [1, 2, 3, 7, 12])
@pytest.mark.parametrize("order", ["natural", "rcm", "auto"])
def test_preparation_shared_by_blocks_equals_the_whole(world, order):
    """Packing and tiling blocks of graphs (one per rank) and concatenating
    them gives the arrays of the whole dataset, bit for bit: graphs without
    edges, single nodes, more ranks than graphs."""
    rng = np.random.default_rng(10 + world)
    X = dataset(rng, [1, 9, 2, 17, 26, 1, 8, 33, 5])
    whole = kron.pack(X, ["label"], ["length"])
    shared = kron.pack_shared(X, ["label"], ["length"], share=blocks_of(world))
    assert whole.keys() == shared.keys()
    for key in whole:
        assert whole[key].dtype == shared[key].dtype and np.array_equal(whole[key], shared[key])
    tiles = kron.octile_parts(**whole, order=order)
    shared_tiles = kron.octiles_shared(*(whole[k] for k in ("nodes", "node_labels", "edges",
                                                            "ends", "weights", "edge_labels")),
                                       order=order, share=blocks_of(world))
    assert tiles.keys() == shared_tiles.keys()
    for key in tiles:
        assert tiles[key].dtype == shared_tiles[key].dtype, key
        assert np.array_equal(tiles[key], shared_tiles[key]), key
    # A block is a dataset of its own: pack's arrays of those graphs.
    block = kron.packed_slice(whole, 2, 5)
    alone = kron.pack(X[2:5], ["label"], ["length"])
    for key in alone:
        assert np.array_equal(block[key], alone[key]), key
    for start, stop in ((3, 3), (-1, 2), (4, 10)):
        with pytest.raises(ValueError, match="not a block of the dataset's 9 graphs"):
            kron.packed_slice(whole, start, stop)
    with pytest.raises(ValueError, match="no blocks"):
        kron.concat_octiles([])


def test_derived_arrays_with_the_preparation_shared(compiled):
    rng = np.random.default_rng(11)
    packed = kron.pack(dataset(rng, [3, 8, 12, 30, 1]), ["label"], ["length"])
    whole = kron.derived_arrays(compiled, dict(packed))
    shared = kron.derived_arrays(compiled, dict(packed), share=blocks_of(3))
    assert whole.keys() == shared.keys()
    for key in whole:
        assert np.array_equal(whole[key], shared[key]), key


def test_refinement_finds_a_swap_that_empties_a_tile_only_the_two_nodes_together_do():
    """Two tile rows (0-7, 8-15), each a path; node 0's only edge goes to
    9 and node 8's only edge to 1: the tiles between the rows hold two
    edges, neither node's alone, and empty when 0 and 8 swap."""
    edges = ([(k, k + 1) for k in range(1, 7)] + [(k, k + 1) for k in range(9, 15)] +
             [(0, 9), (8, 1)])
    i, j = np.array(edges).T
    order = kron._refine(16, i, j, np.arange(16))
    assert order.tolist() == [8, *range(1, 8), 0, *range(9, 16)]
    assert tiles_of(16, i, j, np.arange(16)) == 4
    assert tiles_of(16, i, j, order) == 2


def test_an_unknown_node_order_is_refused_by_every_entry_point():
    rng = np.random.default_rng(2)
    packed = kron.pack(dataset(rng, [9, 12]), ["label"], ["length"])
    nodes, edges, ends = packed["nodes"], packed["edges"], packed["ends"]
    for bad in ("Auto", "bogus", ""):
        with pytest.raises(ValueError, match="the node order is 'natural', 'rcm'"):
            kron.graph_orders(nodes, edges, ends, bad)
        with pytest.raises(ValueError, match="the node order is 'natural', 'rcm'"):
            kron._graph_order(12, np.array([0, 1]), np.array([1, 2]), bad)
        with pytest.raises(ValueError, match="the node order is 'natural', 'rcm'"):
            kron.octile_parts(**packed, order=bad)


@pytest.mark.parametrize("total,chunk", [(0, 4), (1, 4), (4, 4), (5, 4), (17, 4), (9, 1),
                                         (16, 3)])
def test_the_staged_copy_drains_each_buffer_before_copying_into_it_again(total, chunk):
    """kron._staged (the schedule of the GPU result's copy to the host
    through two pinned buffers): every element arrives once, in place; a
    chunk is copied before the previous one is drained (the overlap); a
    buffer is never copied into while it holds a chunk not drained."""
    source = np.arange(total, dtype=np.float32) * 1.5
    out = np.full(total, np.nan)
    buffers = [np.full(chunk, np.nan, np.float32) for _ in range(2)]
    holding = [None, None]
    log = []

    def copy(which, start, stop):
        assert holding[which] is None, "a buffer overwritten before it was drained"
        buffers[which][:stop - start] = source[start:stop]
        holding[which] = (start, stop)
        log.append(("copy", start))

    def drain(which, start, stop):
        assert holding[which] == (start, stop)
        out[start:stop] = buffers[which][:stop - start]
        holding[which] = None
        log.append(("drain", start))
    kron._staged(total, chunk, copy, drain)
    np.testing.assert_array_equal(out, source.astype(np.float64))
    assert holding == [None, None]
    starts = list(range(0, total, chunk))
    assert [s for what, s in log if what == "copy"] == starts
    assert [s for what, s in log if what == "drain"] == starts
    for before, after in zip(starts, starts[1:]):
        # The next chunk's copy is issued before this chunk is drained.
        assert log.index(("copy", after)) < log.index(("drain", before))
