"""Attention in the graph dialect on the CPU path: RGAT
(examples/graph/rgat.mlir and kge.graph.rgat_layer) forward and backward
against NumPy references, the edge softmax's stability, corner cases, bad
input, the decorator front end's attention operations, and the GPU
lowering's bundle (materialized intermediates, the softmax's maximum
cleared to -inf, the memset's value checked by the runtime)."""

import json
import pathlib

import numpy as np
import pytest

from kge import MLIRError, graph

ROOT = pathlib.Path(__file__).resolve().parents[2]
RGAT = (ROOT / "examples" / "graph" / "rgat.mlir").read_text()
ARGS = ("x", "weight", "query", "key", "src", "dst", "edge_type")


@pytest.fixture(scope="module")
def rgat():
    return graph.compile_cpu(RGAT, "rgat")


def inputs(g, features, outputs, seed):
    arrays = graph.rgat_inputs(g, features, outputs, seed)
    return {n: arrays[n] for n in ARGS}


def reference(x, g):
    return graph.rgat_reference(x["x"], x["weight"], x["query"], x["key"], g.src, g.dst, g.etype)


def close(out, expected, rtol=1e-4):
    scale = max(1.0, float(np.abs(expected).max()))
    return out.shape == expected.shape and np.allclose(out, expected, rtol=rtol,
                                                       atol=1e-5 * scale)


@pytest.mark.parametrize("name,scale,features,outputs", [
    ("aifb", 0.5, 16, 8), ("mutag", 0.1, 16, 16), ("fb15k", 0.05, 8, 4),
    ("biokg", 0.002, 32, 8)])
def test_rgat_matches_numpy(rgat, name, scale, features, outputs):
    g = graph.synthetic(name, seed=1, scale=scale)
    x = inputs(g, features, outputs, seed=2)
    results = rgat(x)
    assert close(results["out"], reference(x, g))
    # The materialized intermediates: the attention sums to one over each
    # node's incoming edges; the scores are x_dst W_r q + x_src W_r k.
    attention = results["attention"][:, 0].astype(np.float64)
    sums = np.zeros(g.num_nodes)
    np.add.at(sums, g.dst, attention)
    has_edges = np.bincount(g.dst, minlength=g.num_nodes) > 0
    assert np.allclose(sums[has_edges], 1.0, atol=1e-5)
    scores = ((x["x"][g.dst] * x["query"][g.etype, :, 0]).sum(1) +
              (x["x"][g.src] * x["key"][g.etype, :, 0]).sum(1))
    assert np.allclose(results["scores"][:, 0], scores, rtol=1e-4, atol=1e-4)


def test_rgat_on_wordnet(rgat):
    g = graph.wordnet()
    x = inputs(g, 8, 4, seed=3)
    assert close(rgat(x)["out"], reference(x, g))


def test_edge_softmax_is_stable_for_large_scores(rgat):
    """Scores in the thousands (each node's largest subtracted first, from
    -inf): no overflow of exp for large positive scores, no 0 / 0 where
    every score of a node is a large negative one."""
    g = graph.synthetic("aifb", seed=3, scale=0.2)
    x = inputs(g, 8, 4, seed=4)
    x["x"] = np.abs(x["x"]) + 0.5
    for sign in (1.0, -1.0):
        big = {**x, "query": np.full_like(x["query"], 300.0 * sign),
               "key": np.full_like(x["key"], -200.0 * sign)}
        out = rgat(big)["out"]
        assert np.isfinite(out).all()
        assert close(out, reference(big, g), rtol=1e-3)


def test_rgat_isolated_nodes_unused_types_and_empty_graph(rgat):
    g = graph.corner_case_graph()
    x = inputs(g, 8, 4, seed=5)
    x["weight"][1] = x["query"][1] = x["key"][1] = np.nan  # type 1 has no edges
    results = rgat(x)
    clean = {n: np.nan_to_num(v) for n, v in x.items()}
    assert close(results["out"], reference(clean, g))
    no_incoming = np.setdiff1d(np.arange(g.num_nodes), g.dst)
    assert not results["out"][no_incoming].any()
    empty = {**x, "src": np.zeros(0, np.int32), "dst": np.zeros(0, np.int32),
             "edge_type": np.zeros(0, np.int32)}
    assert not rgat(empty)["out"].any()


@pytest.mark.parametrize("param,value,message", [
    ("src", 6, "index 6 at position 12 of 'src' is out of range for table 'x' with 6 rows"),
    ("edge_type", 4, "index 4 at position 12 of 'edge_type' is out of range")])
def test_rgat_refuses_out_of_range_indices(rgat, param, value, message):
    g = graph.synthetic("aifb", seed=0, scale=0.001)
    g.src, g.dst, g.etype = g.src[:24] % 6, g.dst[:24] % 6, g.etype[:24] % 4
    g.ntype, g.num_edge_types = g.ntype[:6], 4
    x = inputs(g, 8, 4, seed=0)
    x[param] = x[param].copy()
    x[param][12] = value
    with pytest.raises(IndexError, match=message):
        rgat(x)


@pytest.fixture(scope="module")
def rgat_grad():
    return graph.compile_cpu(graph.differentiate(RGAT, keep_forward=False), "rgat_grad")


@pytest.mark.parametrize("name,scale", [("aifb", 0.3), ("mutag", 0.05), ("fb15k", 0.03)])
def test_rgat_backward_matches_numpy(rgat_grad, name, scale):
    g = graph.synthetic(name, seed=6, scale=scale)
    x = inputs(g, 16, 8, seed=7)
    dy = np.random.default_rng(8).standard_normal((g.num_nodes, 8)).astype(np.float32)
    grads = rgat_grad({**x, "grad_out": dy})
    expected = graph.rgat_gradients_reference(x["x"], x["weight"], x["query"], x["key"],
                                              g.src, g.dst, g.etype, dy)
    assert set(expected) <= set(grads)
    for key, value in expected.items():
        assert close(grads[key], value), key


def test_rgat_gradients_reference_is_the_derivative():
    """The NumPy reference of the gradients against central differences of
    the forward reference (float64)."""
    g = graph.synthetic("aifb", seed=9, scale=0.05)
    x = graph.rgat_inputs(g, 6, 3, seed=10)
    dy = np.random.default_rng(11).standard_normal((g.num_nodes, 3))
    grads = graph.rgat_gradients_reference(x["x"], x["weight"], x["query"], x["key"],
                                           g.src, g.dst, g.etype, dy)
    rng = np.random.default_rng(12)
    for name in ("x", "weight", "query", "key"):
        for _ in range(3):
            at = tuple(rng.integers(0, n) for n in x[name].shape)
            plus, minus = ({**x, name: x[name].astype(np.float64).copy()} for _ in range(2))
            plus[name][at] += 1e-6
            minus[name][at] -= 1e-6
            f = [(graph.rgat_reference(a["x"], a["weight"], a["query"], a["key"], g.src, g.dst,
                                       g.etype) * dy).sum() for a in (plus, minus)]
            assert np.isclose((f[0] - f[1]) / 2e-6, grads[f"grad_{name}"][at], rtol=1e-4,
                              atol=1e-6), (name, at)


def test_decorated_rgat_is_the_example():
    """kge.graph.rgat_layer (the decorator front end) computes what the
    example does, forward and backward."""
    g = graph.synthetic("mutag", seed=2, scale=0.05)
    x = inputs(g, 8, 8, seed=3)
    assert close(graph.rgat_layer.run_cpu(**x), reference(x, g))
    dy = np.random.default_rng(4).standard_normal((g.num_nodes, 8)).astype(np.float32)
    grads = graph.rgat_layer.run_backward_cpu(**x, grad_out=dy)
    expected = graph.rgat_gradients_reference(x["x"], x["weight"], x["query"], x["key"],
                                              g.src, g.dst, g.etype, dy)
    for key, value in expected.items():
        assert close(grads[key], value), key
    # Another slope is another layer.
    assert graph.rgat(0.1) is graph.rgat(0.1) and graph.rgat(0.1) is not graph.rgat_layer
    assert "slope(0.1)" in graph.rgat(0.1).text


def test_decorator_diagnoses_attention_misuse():
    from kge.graph import Graph, NodeData, TraceError, TypedWeights, layer, leaky_relu

    with pytest.raises(TraceError, match="edge_softmax takes per-edge scalars"):
        @layer
        def rows(g: Graph, x: NodeData, w: TypedWeights):
            return g.aggregate(g.typed_linear(x, w), weights=g.edge_softmax(
                g.typed_linear(x, w)))
    with pytest.raises(TraceError, match="leaky_relu takes per-row scalars"):
        @layer
        def wide(g: Graph, x: NodeData, w: TypedWeights):
            return g.aggregate(leaky_relu(g.typed_linear(x, w)))
    with pytest.raises(TraceError, match="columns=2"):
        TypedWeights(columns=2)
    with pytest.raises(TraceError, match="to='both' is not dst or src"):
        @layer
        def both(g: Graph, x: NodeData, w: TypedWeights, q: TypedWeights(columns=1)):
            return g.aggregate(g.typed_linear(x, w),
                               weights=g.edge_softmax(g.typed_linear(x, q), to="both"))


def test_attention_lowering_errors_name_the_operation():
    # Several heads: scores of two columns (the attention returned).
    text = RGAT.replace("tensor<?x?x1xf32>", "tensor<?x?x2xf32>").replace(
        "tensor<?x1xf32>", "tensor<?x2xf32>")
    text = text[:text.index("  %messages")] + "  return %alpha : tensor<?x2xf32>\n}\n"
    text = text.replace("-> (tensor<?x?xf32> {kge.param = \"out\"})",
                        "-> (tensor<?x2xf32> {kge.param = \"out\"})")
    with pytest.raises(MLIRError, match="as per-row scalars: the lowering to tile takes "
                                        r"\[R, 1\] here \(one attention head\)"):
        graph.compile_cpu(text, "rgat")


def gpu_bundle(text):
    from kge import ir
    module = ir.Module.parse(ir.Context(), text)
    pm = ir.PassManager(module.context)
    pm.add("convert-graph-to-tile,kge-lower-to-gpu")
    pm.run(module)
    return ir.to_bundle(module, False)


def test_rgat_bundle_materializes_the_attention():
    """The GPU bundle: the output, then the materialized intermediates as
    results (attention, scores, each node's largest score and sum); the
    largest scores cleared to -inf (0xff800000) before the aggregate by max,
    the sums and the output to zero; the scores' one-column matrices read
    as rows gathered by type (one sort by edge type: the messages')."""
    import kge_runtime as rt
    text = gpu_bundle(RGAT)
    signature = rt.validate_bundle(text)
    results = [p["name"] for p in signature["params"] if p["role"] == "result"]
    assert results == ["out", "attention", "scores", "attention_max", "attention_sum"]
    manifest = json.loads(text)
    memsets = {s["buffer"]: s.get("value", 0) for s in manifest["launches"]
               if s["kind"] == "memset" and s["buffer"].startswith("param:")}
    assert memsets == {"param:attention_max": 0xff800000, "param:attention_sum": 0,
                       "param:out": 0}
    kernels = [s["function"] for s in manifest["launches"] if s["kind"] == "kernel"]
    assert kernels.count("kge_key_histogram") == 1
    # The tasks over per-edge scalars (one column tile) put the edges'
    # row tiles along the grid's x: more than 65,535 of them fit.
    grids = {s["function"]: s["grid"] for s in manifest["launches"] if s["kind"] == "kernel"}
    assert grids["rgat"] == ["ceildiv(M, 128)", "1", "1"]
    assert grids["rgat_t4_small"] == ["ceildiv(M, 64)", "1", "1"]


@pytest.mark.parametrize("value,message", [
    (-1, "must be a 32-bit word"), (2**32, "must be a 32-bit word"), ("inf", "must be a 32-bit word")])
def test_runtime_refuses_bad_memset_values(value, message):
    import kge_runtime as rt
    manifest = json.loads(gpu_bundle(RGAT))
    step = next(s for s in manifest["launches"] if s.get("buffer") == "param:attention_max")
    step["value"] = value
    with pytest.raises(rt.BundleError, match=message):
        rt.validate_bundle(json.dumps(manifest))


def test_runtime_refuses_memset_values_on_wide_elements():
    import kge_runtime as rt
    manifest = json.loads(gpu_bundle(RGAT))
    step = next(s for s in manifest["launches"] if s.get("buffer") == "param:attention_max")
    manifest["function"]["params"][[p["name"] for p in manifest["function"]["params"]].index(
        "attention_max")]["dtype"] = "f64"
    with pytest.raises(rt.BundleError, match="fills 32-bit elements; the buffer holds f64"):
        rt.validate_bundle(json.dumps(manifest))
    assert step["value"] == 0xff800000


HGT = (ROOT / "examples" / "graph" / "hgt.mlir").read_text()
HGT_ARGS = ("k", "q", "v", "k_rel", "v_rel", "src", "dst", "edge_type")


@pytest.mark.parametrize("name,scale", [("aifb", 0.3), ("mutag", 0.05), ("biokg", 0.002)])
def test_hgt_forward_and_backward_match_numpy(name, scale):
    """HGT's attention (an inner product of each edge's key, computed in
    the task through its relation's matrix, with its destination's query)
    and messages, forward and backward."""
    g = graph.synthetic(name, seed=3, scale=scale)
    x = graph.hgt_inputs(g, 8, seed=4)
    results = graph.compile_cpu(HGT, "hgt")(x)
    assert close(results["out"], graph.hgt_reference(*(x[n] for n in HGT_ARGS)))
    dy = np.random.default_rng(5).standard_normal((g.num_nodes, 8)).astype(np.float32)
    backward = graph.compile_cpu(graph.differentiate(HGT, keep_forward=False), "hgt_grad")
    grads = backward({**x, "grad_out": dy})
    expected = graph.hgt_gradients_reference(*(x[n] for n in HGT_ARGS), dy)
    for key, value in expected.items():
        assert close(grads[key], value), key
    # The decorator front end's layer is the example.
    assert close(graph.hgt_layer.run_cpu(**x), results["out"])


def test_hgt_gradients_reference_is_the_derivative():
    g = graph.synthetic("aifb", seed=6, scale=0.05)
    x = {n: (a.astype(np.float64) if a.dtype == np.float32 else a)
         for n, a in graph.hgt_inputs(g, 4, seed=7).items()}
    dy = np.random.default_rng(8).standard_normal((g.num_nodes, 4))
    grads = graph.hgt_gradients_reference(*(x[n] for n in HGT_ARGS), dy)
    rng = np.random.default_rng(9)
    for name in ("k", "q", "v", "k_rel", "v_rel"):
        at = tuple(rng.integers(0, n) for n in x[name].shape)
        plus, minus = ({**x, name: x[name].copy()} for _ in range(2))
        plus[name][at] += 1e-6
        minus[name][at] -= 1e-6
        f = [(graph.hgt_reference(*(a[n] for n in HGT_ARGS)) * dy).sum() for a in (plus, minus)]
        assert np.isclose((f[0] - f[1]) / 2e-6, grads[f"grad_{name}"][at], rtol=1e-4,
                          atol=1e-6), name


def test_inner_product_of_node_rows_is_differentiated():
    """Scores of two nodes' rows (<k_src, q_dst>, no relation matrix): each
    side's gradient is the other's rows scaled by the scores' gradient,
    summed into its end (an aggregate of node rows). HGT with identity
    relation matrices is the reference."""
    text = HGT.replace("%s = graph.inner_product %g, %keys, %q rows(edges, dst)",
                       "%s = graph.inner_product %g, %k, %q rows(src, dst)")
    g = graph.synthetic("aifb", seed=1, scale=0.05)
    x = graph.hgt_inputs(g, 4, seed=2)
    x["k_rel"] = np.broadcast_to(np.eye(4, dtype=np.float32), x["k_rel"].shape).copy()
    assert close(graph.compile_cpu(text, "hgt")(x)["out"],
                 graph.hgt_reference(*(x[n] for n in HGT_ARGS)))
    dy = np.random.default_rng(3).standard_normal((g.num_nodes, 4)).astype(np.float32)
    grads = graph.compile_cpu(graph.differentiate(text, keep_forward=False), "hgt_grad")(
        {**x, "grad_out": dy})
    expected = graph.hgt_gradients_reference(*(x[n] for n in HGT_ARGS), dy)
    assert "grad_k_rel" not in grads
    for key in ("grad_k", "grad_q", "grad_v", "grad_v_rel"):
        assert close(grads[key], expected[key]), key
    # Per-edge rows on a side that are not a typed linear layer's used only
    # there (the keys also aggregated): no rule.
    with pytest.raises(MLIRError, match="not a typed linear layer's result used only here"):
        graph.differentiate(HGT.replace("%out = graph.aggregate %g, %values",
                                        "%out = graph.aggregate %g, %keys"))


def test_decorator_inner_product_checks_its_rows():
    from kge.graph import Graph, NodeData, TraceError, layer

    with pytest.raises(TraceError, match="rows 'nodes' is not one of src, dst, edges"):
        @layer
        def bad(g: Graph, x: NodeData):
            return g.inner_product(x, x, rows=("nodes", "dst"))
    with pytest.raises(TraceError, match="rows 'edges' reads edges rows, got nodes"):
        @layer
        def wrong(g: Graph, x: NodeData):
            return g.inner_product(x, x, rows=("edges", "dst"))


@pytest.mark.parametrize("name", ["aifb", "am"])
def test_relation_typed_graphs_join_one_type_to_one(name):
    """kge.graph.relation_typed: every relation joins one node type to one,
    edges and their types kept, endpoints within the node range."""
    g = graph.synthetic(name, seed=1, scale=0.01)
    typed = graph.relation_typed(g, seed=2)
    assert np.array_equal(typed.etype, g.etype) and np.array_equal(typed.ntype, g.ntype)
    assert typed.src.dtype == g.src.dtype and typed.src.max() < g.num_nodes
    triples = np.unique(np.stack([typed.ntype[typed.src], typed.etype,
                                  typed.ntype[typed.dst]], 1), axis=0)
    assert len(triples) == len(np.unique(g.etype))


def test_aggregate_of_node_rows_needs_weights():
    text = """
func.func @f(%x: tensor<?x4xf32>, %src: tensor<?xi32>, %dst: tensor<?xi32>, %t: tensor<?xi32>)
    -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %g = graph.coo %src, %dst, %t nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %o = graph.aggregate %g, %x rows(src) to(dst) reduce(sum) : tensor<?x4xf32> -> tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}"""
    with pytest.raises(MLIRError, match=r"rows\(src\) sums node rows read at an edge's end, each "
                                        r"scaled by its edge's weights: weights\(...\) required"):
        graph.compile_cpu(text, "f")
