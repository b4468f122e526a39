"""The graph dialect on the CPU path: RGCN (examples/graph/rgcn.mlir,
lowered to tile tasks by convert-graph-to-tile) against a NumPy reference
on heterogeneous graphs of Pigeon's dataset shapes and on WordNet; bad
indices refused before running; the graph generators' shapes and skew."""

import pathlib

import numpy as np
import pytest

from kge import MLIRError, graph

ROOT = pathlib.Path(__file__).resolve().parents[2]
RGCN = (ROOT / "examples" / "graph" / "rgcn.mlir").read_text()


@pytest.fixture(scope="module")
def rgcn():
    return graph.compile_cpu(RGCN, "rgcn")


layer_inputs = graph.rgcn_inputs


def check(out, expected):
    scale = max(1.0, float(np.abs(expected).max()))
    return out.shape == expected.shape and np.allclose(out, expected, rtol=1e-4,
                                                       atol=1e-5 * scale)


@pytest.mark.parametrize("name,scale,features,outputs", [
    ("aifb", 1.0, 16, 8), ("mutag", 0.1, 16, 16), ("bgs", 0.02, 8, 8), ("fb15k", 0.05, 16, 4),
    ("biokg", 0.002, 32, 8)])
def test_rgcn_matches_numpy(rgcn, name, scale, features, outputs):
    g = graph.synthetic(name, seed=len(name), scale=scale)
    x = layer_inputs(g, features, outputs, seed=features)
    out = rgcn(x)["out"]
    expected = graph.rgcn_reference(x["x"], x["weight"], x["root"], x["bias"],
                                    g.src, g.dst, g.etype)
    assert check(out, expected), float(np.abs(out - expected).max())
    # The comparison catches one wrong element of a node with messages.
    v = int(g.dst[0])
    out[v, 0] += 1e-2 * max(1.0, float(np.abs(expected).max()))
    assert not check(out, expected)


def test_rgcn_on_wordnet(rgcn):
    """WordNet's synsets (typed by part of speech), its pointers typed by
    symbol, at the paper's hidden size 64 -> 16."""
    g = graph.wordnet()
    assert g.num_node_types == 4 and g.num_edge_types >= 20 and g.num_edges > 300_000
    x = layer_inputs(g, 64, 16, seed=1)
    out = rgcn(x)["out"]
    expected = graph.rgcn_reference(x["x"], x["weight"], x["root"], x["bias"],
                                    g.src, g.dst, g.etype)
    assert check(out, expected), float(np.abs(out - expected).max())


def test_rgcn_isolated_nodes_and_unused_types(rgcn):
    """Nodes without incoming edges get the root term alone; a type with no
    edges leaves its matrix unread; an empty graph gives the root term."""
    g = graph.corner_case_graph()
    x = layer_inputs(g, 8, 4, seed=3)
    x["weight"][1] = np.nan  # never read
    x["weight"][3] = np.nan
    out = rgcn(x)["out"]
    expected = graph.rgcn_reference(x["x"], np.nan_to_num(x["weight"]), x["root"], x["bias"],
                                    g.src, g.dst, g.etype)
    assert check(out, expected)
    root_only = x["x"] @ x["root"] + x["bias"]
    assert np.allclose(out[[0, 3, 4, 5]], root_only[[0, 3, 4, 5]], rtol=1e-5, atol=1e-6)
    # Node 1: the mean of its two type-0 messages plus its one type-2 message.
    assert np.allclose(x["norm"], [0.5, 0.5, 1.0, 1.0])
    empty = {**x, "src": np.zeros(0, np.int32), "dst": np.zeros(0, np.int32),
             "edge_type": np.zeros(0, np.int32), "norm": np.zeros(0, np.float32)}
    assert np.allclose(rgcn(empty)["out"], root_only, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("param,value,message", [
    ("src", 6, "index 6 at position 24 of 'src' is out of range for table 'x' with 6 rows"),
    ("dst", -1, "index -1 at position 24 of 'dst' is out of range for result 'out' with 6 rows"),
    ("edge_type", 4,
     "index 4 at position 24 of 'edge_type' is out of range for table 'weight' with 4 rows")])
def test_rgcn_refuses_out_of_range_indices(rgcn, param, value, message):
    g = graph.synthetic("aifb", seed=0, scale=0.001)
    g.src, g.dst = g.src % 6, g.dst % 6
    g.ntype = g.ntype[:6]
    g.etype = g.etype % 4
    g.num_edge_types = 4
    x = layer_inputs(g, 8, 4, seed=0)
    x[param] = x[param].copy()
    x[param][len(x[param]) // 2] = value
    with pytest.raises(IndexError, match=message):
        rgcn(x)


def test_rgcn_refuses_mismatched_arguments(rgcn):
    g = graph.synthetic("aifb", seed=0, scale=0.01)
    x = layer_inputs(g, 8, 4, seed=0)
    with pytest.raises(ValueError, match="table 'norm' has size 487 in dimension 0 but 'M1' "
                                         "is 488 \\(set by 'src'\\)"):
        rgcn({**x, "norm": x["norm"][:-1]})
    with pytest.raises(ValueError, match="table 'root' has size 7 in dimension 0 but 'K' is 8"):
        rgcn({**x, "root": np.zeros((7, 4), np.float32)})
    with pytest.raises(ValueError, match="table 'x' expects dtype f32, got f64"):
        rgcn({**x, "x": x["x"].astype(np.float64)})
    with pytest.raises(TypeError, match="'rgcn' is missing argument 'bias'"):
        rgcn({k: v for k, v in x.items() if k != "bias"})


def test_lowering_errors_name_the_operation():
    text = RGCN.replace("  return %out", "  %e = math.exp %out : tensor<?x?xf32>\n  return %e")
    with pytest.raises(MLIRError, match="'math.exp' op is not lowered to tile: a graph "
                                        "function's values are sums of linear and typed"):
        graph.compile_cpu(text, "rgcn")


def test_aggregate_alone_adds_into_a_cleared_result():
    """The messages alone (no root term to store the result first) add into
    a result that starts at zero."""
    text = RGCN.replace("%out = arith.addf %neighbours, %self : tensor<?x?xf32>\n"
                        "  return %out", "return %neighbours")
    g = graph.synthetic("aifb", seed=2, scale=0.1)
    x = layer_inputs(g, 8, 4, seed=1)
    out = graph.compile_cpu(text, "rgcn")(x)["out"]
    expected = graph.rgcn_reference(x["x"], x["weight"], np.zeros_like(x["root"]),
                                    np.zeros_like(x["bias"]), g.src, g.dst, g.etype)
    assert check(out, expected)


@pytest.mark.parametrize("name", sorted(graph.SHAPES))
def test_synthetic_graphs_have_the_papers_shapes(name):
    node_types, edge_types, nodes, edges = graph.SHAPES[name]
    scale = min(1.0, 200_000 / edges)
    g = graph.synthetic(name, seed=1, scale=scale)
    assert g.num_nodes == max(node_types, round(nodes * scale))
    assert g.num_edges == round(edges * scale)
    assert g.src.max() < g.num_nodes and g.dst.max() < g.num_nodes
    assert g.etype.max() < edge_types and g.ntype.max() < node_types
    # Power-law degrees: a hub far above the mean degree, most nodes small.
    degree = np.bincount(np.concatenate([g.src, g.dst]), minlength=g.num_nodes)
    assert degree.max() > 20 * degree.mean()
    assert np.median(degree) < degree.mean()
    # Skewed edge types: the most frequent type well above its fair share.
    if edge_types > 1:
        assert np.bincount(g.etype).max() > 1.5 * g.num_edges / edge_types


def test_rgcn_norm_is_the_mean_per_relation():
    dst = np.array([0, 0, 0, 1, 1], np.int32)
    etype = np.array([0, 0, 1, 1, 1], np.int32)
    assert np.allclose(graph.rgcn_norm(dst, etype, 2, 2), [0.5, 0.5, 1.0, 0.5, 0.5])


def test_rgcn_bundle_validates_and_runs_both_tasks():
    """The GPU lowering: one bundle whose launch plan runs the root term
    (a dense task) and then the messages (segment iterators over the edge
    types, the sort's scratch of the second task named t1_...), and whose
    signature the runtime accepts: the destinations index the result."""
    import kge_runtime
    from kge import ir
    module = ir.Module.parse(ir.Context(), RGCN)
    pm = ir.PassManager(module.context)
    pm.add("convert-graph-to-tile,kge-lower-to-gpu")
    pm.run(module)
    text = ir.to_bundle(module, False)
    signature = kge_runtime.validate_bundle(text)
    params = {p["name"]: p for p in signature["params"]}
    assert params["out"]["role"] == "result"
    assert params["dst"]["indexes"] == ["out"] and params["src"]["indexes"] == ["x"]
    assert params["edge_type"]["indexes"] == ["weight"]
    import json
    manifest = json.loads(text)
    kernels = [s["function"] for s in manifest["launches"] if s["kind"] == "kernel"]
    assert kernels[:2] == ["rgcn", "rgcn_small"]
    assert kernels[2:] == ["kge_key_histogram", "kge_key_scan_tiles", "kge_key_scan_tiles",
                           "kge_key_scatter", "rgcn_t1_mma_long", "rgcn_t1_mma", "rgcn_t1_small"]
    assert {s["name"] for s in manifest["scratch"]} == {
        "t1_perm", "t1_tiles", "t1_long_tiles", "t1_counts", "t1_lengths"}
    assert {c["param"]: c["bound"] for c in manifest["checks"]} == {
        "src": "M", "dst": "M", "edge_type": "weight_d0"}


def test_decorator_traces_rgcn():
    """The decorator front end gives the example's layer: same output on the
    CPU, and a GPU bundle with the same kernels."""
    rgcn = graph.rgcn_layer  # traced by kge.graph.layer
    assert rgcn.name == "rgcn_layer"
    assert "graph.typed_linear %__graph, %x, %weight rows(src) by(etype)" in rgcn.text
    g = graph.synthetic("mutag", seed=2, scale=0.05)
    x = layer_inputs(g, 16, 8, seed=4)
    out = rgcn.run_cpu(**x)
    expected = graph.rgcn_reference(x["x"], x["weight"], x["root"], x["bias"],
                                    g.src, g.dst, g.etype)
    assert check(out, expected)
    example = graph.compile_cpu(RGCN, "rgcn")(x)["out"]
    assert np.array_equal(out, example)
    kernels = [s["function"] for s in rgcn.compile(cubin=False).manifest["launches"]
               if s["kind"] == "kernel"]
    assert kernels[:2] == ["rgcn_layer", "rgcn_layer_small"] and kernels[-1] == "rgcn_layer_t1_small"


def test_decorator_diagnoses_what_the_dialect_cannot_express():
    from kge.graph import (EdgeData, Graph, NodeData, TraceError, TypedWeights, Weights, layer,
                           linear)
    with pytest.raises(TraceError, match="rows='middle' is not one of src, dst, edges, nodes"):
        @layer
        def bad_rows(g: Graph, x: NodeData, w: TypedWeights):
            return g.aggregate(g.typed_linear(x, w, rows="middle"))
    with pytest.raises(TraceError, match="parameter 'g' needs an annotation"):
        @layer
        def unannotated(g, x: NodeData):
            return x
    with pytest.raises(TraceError, match="rows='edges' reads edges rows, got nodes rows"):
        @layer
        def wrong_rows(g: Graph, x: NodeData, w: TypedWeights):
            return g.aggregate(g.typed_linear(x, w, rows="edges"))
    with pytest.raises(TraceError, match="aggregate sums per-edge rows, got nodes rows"):
        @layer
        def nodes_aggregated(g: Graph, x: NodeData):
            return g.aggregate(x)
    with pytest.raises(TraceError, match="'relu' is not an operation"):
        @layer
        def activation(g: Graph, x: NodeData, w: Weights):
            return linear(x, w).relu()
    with pytest.raises(TraceError, match="a layer returns per-node rows"):
        @layer
        def per_edge(g: Graph, x: NodeData, e: EdgeData, w: Weights):
            return linear(e, w)
    with pytest.raises(TraceError, match="a layer takes one Graph parameter, got 0"):
        @layer
        def no_graph(x: NodeData, w: Weights):
            return linear(x, w)
    with pytest.raises(TraceError, match="parameter 'dst' takes a name the layer's interface "
                                         "uses \\(dst, edge_type, out, src\\)"):
        @layer
        def clash(g: Graph, dst: NodeData, w: Weights):
            return linear(dst, w)


def test_decorator_names_and_sums():
    """Parameters named like the tracer's own values, a graph named src,
    sum() of terms and postponed annotations all trace."""
    from kge.graph import Graph, NodeData, Weights, layer, linear

    @layer
    def named(edges: Graph, nodes: NodeData, v0: Weights, c0: Weights):
        return sum([linear(nodes, v0), linear(nodes, c0)])

    x = np.ones((3, 2), np.float32)
    w = np.eye(2, dtype=np.float32)
    empty = np.zeros(0, np.int32)
    out = named.run_cpu(nodes=x, v0=w, c0=2 * w, src=empty, dst=empty, edge_type=empty)
    assert np.allclose(out, 3 * x)
    namespace = {}
    exec("from __future__ import annotations\n"
         "from kge.graph import Graph, NodeData, Weights, layer, linear\n"
         "@layer\n"
         "def postponed(g: Graph, x: NodeData, w: Weights):\n"
         "    return linear(x, w)\n", namespace)
    assert "graph.linear %x, %w" in namespace["postponed"].text


def test_two_results_share_destinations():
    """Two results scattered through the same destinations: the signature
    lets one index array address both, and both come out right."""
    text = RGCN.replace("-> (tensor<?x?xf32> {kge.param = \"out\"})",
                        "-> (tensor<?x?xf32> {kge.param = \"out\"}, tensor<?x?xf32> "
                        "{kge.param = \"again\"})").replace(
        "return %out : tensor<?x?xf32>", "return %out, %out : tensor<?x?xf32>, tensor<?x?xf32>")
    g = graph.synthetic("aifb", seed=4, scale=0.05)
    x = layer_inputs(g, 8, 4, seed=6)
    results = graph.compile_cpu(text, "rgcn")(x)
    expected = graph.rgcn_reference(x["x"], x["weight"], x["root"], x["bias"],
                                    g.src, g.dst, g.etype)
    assert check(results["out"], expected) and check(results["again"], expected)


# The backward function (graph-differentiate) on the CPU path.

@pytest.fixture(scope="module")
def rgcn_grad():
    return graph.compile_cpu(graph.differentiate(RGCN, keep_forward=False), "rgcn_grad")


def grad_inputs(g, features, outputs, seed):
    x = layer_inputs(g, features, outputs, seed)
    x["grad_out"] = np.random.default_rng(seed + 1).standard_normal(
        (g.num_nodes, outputs)).astype(np.float32)
    return x


@pytest.mark.parametrize("name,scale,features,outputs", [
    ("aifb", 0.5, 16, 8), ("mutag", 0.05, 8, 16), ("fb15k", 0.02, 16, 4)])
def test_rgcn_backward_matches_numpy(rgcn_grad, name, scale, features, outputs):
    g = graph.synthetic(name, seed=len(name) + 1, scale=scale)
    x = grad_inputs(g, features, outputs, seed=features)
    grads = rgcn_grad(x)
    expected = graph.rgcn_gradients_reference(x["x"], x["weight"], x["root"], g.src, g.dst,
                                              g.etype, x["grad_out"])
    assert sorted(grads) == ["grad_root", "grad_weight", "grad_x"]
    for key, value in expected.items():
        assert check(grads[key], value), (key, float(np.abs(grads[key] - value).max()))
    # The comparison catches one wrong element of a relation's gradient.
    r = int(g.etype[0])
    grads["grad_weight"][r, 0, 0] += 1e-2 * max(1.0, float(np.abs(expected["grad_weight"]).max()))
    assert not check(grads["grad_weight"], expected["grad_weight"])


def test_rgcn_backward_is_the_forwards_derivative(rgcn, rgcn_grad):
    """Central differences of the forward layer along random directions
    agree with the backward function's gradients (in float64 terms: the
    layer is linear in each of x, weight and root)."""
    g = graph.synthetic("aifb", seed=11, scale=0.1)
    x = grad_inputs(g, 8, 4, seed=3)
    grads = rgcn_grad(x)
    rng = np.random.default_rng(5)
    for param in ("x", "weight", "root"):
        direction = rng.standard_normal(x[param].shape).astype(np.float32)
        eps = 1e-2
        plus = {k: v for k, v in x.items() if k != "grad_out"}
        minus = dict(plus)
        plus[param] = x[param] + eps * direction
        minus[param] = x[param] - eps * direction
        change = (rgcn(plus)["out"].astype(np.float64) - rgcn(minus)["out"]) / (2 * eps)
        numeric = float((change * x["grad_out"]).sum())
        analytic = float((grads["grad_" + param].astype(np.float64) * direction).sum())
        assert abs(numeric - analytic) <= 1e-3 * max(1.0, abs(analytic)), (param, numeric, analytic)


def test_rgcn_backward_without_edges_of_a_type(rgcn_grad):
    """Types without edges get zero gradients (results start at zero), an
    empty graph the root term's alone."""
    g = graph.corner_case_graph()
    x = grad_inputs(g, 8, 8, seed=2)
    grads = rgcn_grad(x)
    assert not grads["grad_weight"][[1, 3]].any()
    expected = graph.rgcn_gradients_reference(x["x"], x["weight"], x["root"], g.src, g.dst,
                                              g.etype, x["grad_out"])
    for key, value in expected.items():
        assert check(grads[key], value), key
    empty = dict(x)
    for n in ("src", "dst", "edge_type", "norm"):
        empty[n] = x[n][:0]
    grads = rgcn_grad(empty)
    assert not grads["grad_weight"].any()
    assert check(grads["grad_x"], x["grad_out"].astype(np.float64) @ x["root"].T.astype(np.float64))


def test_rgcn_backward_refuses_out_of_range_types(rgcn_grad):
    g = graph.synthetic("aifb", seed=0, scale=0.05)
    x = grad_inputs(g, 8, 4, seed=0)
    x["edge_type"] = x["edge_type"].copy()
    x["edge_type"][3] = g.num_edge_types
    with pytest.raises(IndexError, match="edge_type"):
        rgcn_grad(x)


def test_decorated_layer_differentiates_like_the_example(rgcn_grad):
    """kge.nn's traced RGCN layer (kge.graph.rgcn_layer) has the example's
    backward function: the same gradients on the CPU."""
    rgcn = graph.rgcn_layer
    assert "func.func @rgcn_layer_grad" in rgcn.backward_text
    g = graph.synthetic("mutag", seed=1, scale=0.02)
    x = grad_inputs(g, 8, 8, seed=7)
    ours, example = rgcn.run_backward_cpu(**x), rgcn_grad(x)
    assert sorted(ours) == sorted(example)
    for key in ours:
        assert np.array_equal(ours[key], example[key]), key


# Typed linear layers as results (HGT's per-node-type projections, an
# edge's projected source row) and their backward functions.

@graph.layer
def node_type_projection(g: graph.Graph(node_types=True), x: graph.NodeData,
                         weight: graph.TypedWeights, root: graph.Weights):
    return g.typed_linear(x, weight, rows="nodes", by="ntype") + graph.linear(x, root)


def test_typed_linear_by_node_type_forward_and_backward():
    """x_v W[ntype v] + x_v W_0 and its gradients of x, W and W_0 (W's: an
    outer sum per node type over the nodes) against NumPy."""
    g = graph.synthetic("mutag", seed=6, scale=0.02)
    rng = np.random.default_rng(2)
    n, k, m = g.num_nodes, 8, 6
    x = {"x": rng.standard_normal((n, k)).astype(np.float32),
         "weight": rng.standard_normal((g.num_node_types, k, m)).astype(np.float32),
         "root": rng.standard_normal((k, m)).astype(np.float32),
         "src": g.src, "dst": g.dst, "edge_type": g.etype, "node_type": g.ntype}
    out = node_type_projection.run_cpu(**x)
    x64 = {p: x[p].astype(np.float64) for p in ("x", "weight", "root")}
    expected = np.einsum("vk,vkm->vm", x64["x"], x64["weight"][g.ntype]) + x64["x"] @ x64["root"]
    assert check(out, expected)
    dy = rng.standard_normal((n, m)).astype(np.float32)
    grads = node_type_projection.run_backward_cpu(**x, grad_out=dy)
    d64 = dy.astype(np.float64)
    grad_weight = np.zeros_like(x64["weight"])
    np.add.at(grad_weight, g.ntype, x64["x"][:, :, None] * d64[:, None, :])
    expected = {"grad_x": np.einsum("vm,vkm->vk", d64, x64["weight"][g.ntype]) + d64 @ x64["root"].T,
                "grad_weight": grad_weight, "grad_root": x64["x"].T @ d64}
    assert sorted(grads) == sorted(expected)
    for key, value in expected.items():
        assert check(grads[key], value), (key, float(np.abs(grads[key] - value).max()))


EDGE_PROJECTION = """
func.func @project(%x: tensor<?x?xf32> {kge.param = "x"},
                   %w: tensor<?x?x?xf32> {kge.param = "w"},
                   %src: tensor<?xi32> {kge.param = "src"},
                   %dst: tensor<?xi32> {kge.param = "dst"},
                   %etype: tensor<?xi32> {kge.param = "edge_type"})
    -> (tensor<?x?xf32> {kge.param = "y"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %y = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
"""


def test_edge_projection_forward_and_backward():
    """y_e = x[src e] W[etype e] (one row per edge) and its gradients: x's
    the rows summed back into the sources, W's an outer sum per edge
    type."""
    g = graph.synthetic("aifb", seed=3, scale=0.05)
    rng = np.random.default_rng(4)
    x = {"x": rng.standard_normal((g.num_nodes, 8)).astype(np.float32),
         "w": rng.standard_normal((g.num_edge_types, 8, 4)).astype(np.float32),
         "src": g.src, "dst": g.dst, "edge_type": g.etype}
    y = graph.compile_cpu(EDGE_PROJECTION, "project")(x)["y"]
    x64, w64 = x["x"].astype(np.float64), x["w"].astype(np.float64)
    assert check(y, np.einsum("ek,ekm->em", x64[g.src], w64[g.etype]))
    dy = rng.standard_normal((g.num_edges, 4)).astype(np.float32)
    backward = graph.compile_cpu(graph.differentiate(EDGE_PROJECTION, keep_forward=False),
                                 "project_grad")
    grads = backward({**x, "grad_y": dy})
    d64 = dy.astype(np.float64)
    grad_x = np.zeros_like(x64)
    np.add.at(grad_x, g.src, np.einsum("em,ekm->ek", d64, w64[g.etype]))
    grad_w = np.zeros_like(w64)
    np.add.at(grad_w, g.etype, x64[g.src][:, :, None] * d64[:, None, :])
    assert check(grads["grad_x"], grad_x) and check(grads["grad_w"], grad_w)


# The Python builder of graph functions (kge.ir.GraphBuilder).

def build_rgcn(ctx, backward=False):
    """RGCN built op by op (and, with `backward`, its backward function as
    graph-differentiate writes it)."""
    from kge import ir
    b = ir.GraphBuilder(ctx)
    module = b.create_module()
    rows, ints = ir.Type.tensor(ctx, [None, None]), ir.Type.tensor(ctx, [None], "i32")
    params = [("x", rows), ("weight", ir.Type.tensor(ctx, [None, None, None])),
              ("root", rows), ("bias", ir.Type.tensor(ctx, [None])), ("src", ints),
              ("dst", ints), ("edge_type", ints), ("norm", ir.Type.tensor(ctx, [None]))]
    if not backward:
        f = b.create_function(module, "rgcn", params)
        x, w, root, bias, src, dst, etype, norm = f.arguments
        g = b.coo(src, dst, etype, nodes_of=x)
        messages = b.typed_linear(g, x, w, rows="src", by="etype")
        b.ret([b.add(b.aggregate(g, messages, weights=norm, to="dst"),
                     b.linear(x, root, bias=bias))])
        return b, module
    f = b.create_function(module, "rgcn_grad", params + [("grad_out", rows)],
                          result_names=["grad_x", "grad_weight", "grad_root"])
    x, w, root, bias, src, dst, etype, norm, dy = f.arguments
    g = b.coo(src, dst, etype, nodes_of=x)
    back = b.typed_linear(g, dy, w, rows="dst", by="etype", transposed=True)
    grad_x = b.add(b.aggregate(g, back, weights=norm, to="src"),
                   b.linear(dy, root, transposed=True))
    grad_w = b.outer_sum(g, x, dy, rows=("src", "dst"), by="etype", types_of=w, weights=norm)
    b.ret([grad_x, grad_w, b.outer_sum(g, x, dy)])
    return b, module


def test_builder_builds_the_examples_layer_and_its_backward(rgcn, rgcn_grad):
    from kge import ir
    ctx = ir.Context()
    _, forward = build_rgcn(ctx)
    _, backward = build_rgcn(ctx, backward=True)
    assert "graph.typed_linear %0, %arg0, %arg1 rows(src) by(etype)" in str(forward)
    g = graph.synthetic("aifb", seed=8, scale=0.1)
    x = grad_inputs(g, 8, 4, seed=9)
    inputs = {k: v for k, v in x.items() if k != "grad_out"}
    built = graph.compile_cpu(str(forward), "rgcn")(inputs)["out"]
    assert np.array_equal(built, rgcn(inputs)["out"])
    grads = graph.compile_cpu(str(backward), "rgcn_grad")(x)
    expected = rgcn_grad(x)
    for key in expected:
        assert check(grads[key], expected[key].astype(np.float64)), key


def test_builder_diagnoses_bad_operations():
    from kge import ir
    ctx = ir.Context()
    b, module = build_rgcn(ctx)
    other = ir.GraphBuilder(ctx)
    other.create_module()
    rows = ir.Type.tensor(ctx, [None, None])
    ints = ir.Type.tensor(ctx, [None], "i32")
    f = other.create_function(other.create_module(), "f",
                              [("x", rows), ("w", ir.Type.tensor(ctx, [4, 8, 8])),
                               ("src", ints), ("dst", ints), ("t", ints)])
    x, w, src, dst, t = f.arguments
    g = other.coo(src, dst, t, nodes_of=x)
    with pytest.raises(ValueError, match="rows must be one of src, dst, edges, nodes, got 'middle'"):
        other.typed_linear(g, x, w, rows="middle")
    with pytest.raises(MLIRError, match="by\\(ntype\\) is for rows\\(nodes\\)"):
        other.typed_linear(g, x, w, rows="src", by="ntype")
    with pytest.raises(ValueError, match="outer_sum by\\(...\\) needs types_of"):
        other.outer_sum(g, x, x, rows=("src", "dst"), by="etype")
    with pytest.raises(ValueError, match="add takes two tensors of one type"):
        other.add(x, src)
    with pytest.raises(ValueError, match="belongs to another module"):
        b.linear(x, x)
    with pytest.raises(ValueError, match="returns 1 result"):
        other.ret([x, x])
    with pytest.raises(TypeError, match="must be a ranked tensor"):
        other.create_function(other.create_module(), "g", [("x", ir.Type.indices(ctx))])


def test_builder_leaves_nothing_behind_a_failed_operation():
    """An operation its verifier refuses leaves no operation behind, nor
    the sizes built for it; the function is then completed as usual."""
    from kge import ir
    ctx = ir.Context()
    b = ir.GraphBuilder(ctx)
    module = b.create_module()
    f = b.create_function(module, "f", [("x", ir.Type.tensor(ctx, [None, 8])),
                                        ("w", ir.Type.tensor(ctx, [4, 16, 8])),
                                        ("src", ir.Type.tensor(ctx, [4], "i32")),
                                        ("t", ir.Type.tensor(ctx, [5], "i32")),
                                        ("t4", ir.Type.tensor(ctx, [4], "i32"))])
    x, w, src, t, t4 = f.arguments
    before = str(module)
    with pytest.raises(MLIRError, match="the source indices' length has 4 but the edge "
                                        "types' has 5"):
        b.coo(src, src, t, nodes_of=x)
    assert str(module) == before
    g = b.coo(src, src, t4, nodes_of=x)
    after_coo = str(module)
    with pytest.raises(MLIRError, match="the input's row length has 8 but the weights' "
                                        "matrices' rows has 16"):
        b.typed_linear(g, x, w)
    assert str(module) == after_coo
    b.ret([x])
    assert "return %arg0" in str(module)
