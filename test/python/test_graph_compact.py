"""Compact materialization (Pigeon Section 3.3, graph-compact-materialize)
on the CPU path: the compacted HGT, RGAT and a layer typed by its source's
node type against their NumPy references, forward and backward; the pairs'
graph data derived from the graph; the schedule as an attribute; errors."""

import pathlib

import numpy as np
import pytest

from kge import MLIRError, TraceError, graph
from kge.graph import Graph, NodeData, TypedWeights

ROOT = pathlib.Path(__file__).resolve().parents[2]
HGT_ARGS = ("k", "q", "v", "k_rel", "v_rel", "src", "dst", "edge_type")
RGAT_ARGS = ("x", "weight", "query", "key", "src", "dst", "edge_type")


def close(out, expected, rtol=1e-4):
    scale = max(1.0, float(np.abs(expected).max()))
    return out.shape == expected.shape and np.allclose(out, expected, rtol=rtol,
                                                       atol=1e-5 * scale)


def test_source_type_pairs_join_each_edge_to_its_pair():
    g = graph.synthetic("biokg", seed=1, scale=0.002)
    pairs = graph.source_type_pairs(g.src, g.etype)
    keys = g.src.astype(np.int64) * g.num_edge_types + g.etype
    assert len(pairs["pair_src"]) == len(np.unique(keys)) < g.num_edges
    assert np.array_equal(pairs["pair_src"][pairs["edge_pair"]], g.src)
    assert np.array_equal(pairs["pair_type"][pairs["edge_pair"]], g.etype)
    # Sorted by (source, type), as torch.unique orders them on the GPU.
    order = pairs["pair_src"].astype(np.int64) * g.num_edge_types + pairs["pair_type"]
    assert np.all(np.diff(order) > 0)
    # The type count only fixes the keys' spacing.
    again = graph.source_type_pairs(g.src, g.etype, g.num_edge_types + 5)
    assert all(np.array_equal(again[k], pairs[k]) for k in pairs)
    empty = graph.source_type_pairs(np.zeros(0, np.int32), np.zeros(0, np.int32))
    assert all(len(v) == 0 for v in empty.values())


@pytest.mark.parametrize("name,scale", [("aifb", 0.3), ("mutag", 0.05), ("biokg", 0.002)])
def test_compacted_hgt_equals_hgt(name, scale):
    """The pass's HGT (keys and values once per (source, type) pair) gives
    HGT's output and gradients; the pair rows are what it stores."""
    g = graph.synthetic(name, seed=5, scale=scale)
    x = graph.hgt_inputs(g, 8, seed=6)
    layer = graph.hgt_compact_layer
    assert layer.text.count("kge.derived") == 3
    pairs = layer.graph_data(**x)
    assert set(pairs) == {"pair_src", "pair_type", "edge_pair"}
    results = graph.compile_cpu(layer.text, layer.name)({**x, **pairs})
    assert results["keys"].shape == results["values"].shape == (len(pairs["pair_src"]), 8)
    expected_keys = np.einsum("pk,pkn->pn", x["k"][pairs["pair_src"]].astype(np.float64),
                              x["k_rel"][pairs["pair_type"]].astype(np.float64))
    assert close(results["keys"], expected_keys)
    reference = graph.hgt_reference(*(x[n] for n in HGT_ARGS))
    assert close(results["out"], reference)
    # run_cpu derives the pairs itself.
    assert close(layer.run_cpu(**x), reference)
    dy = np.random.default_rng(7).standard_normal((g.num_nodes, 8)).astype(np.float32)
    grads = layer.run_backward_cpu(**x, grad_out=dy)
    expected = graph.hgt_gradients_reference(*(x[n] for n in HGT_ARGS), dy)
    for key, value in expected.items():
        assert close(grads[key], value), key


def test_compacted_rgat_equals_rgat():
    """RGAT's messages compacted (its one-column attention layers are used
    by sums: they stay per edge), forward and backward."""
    layer = graph.rgat_layer.compacted()
    assert layer.text.count("kge.derived") == 3
    assert layer.text.count("rows(nodes)") == 0
    g = graph.synthetic("mutag", seed=2, scale=0.05)
    arrays = graph.rgat_inputs(g, 16, 8, seed=3)
    x = {n: arrays[n] for n in RGAT_ARGS}
    assert close(layer.run_cpu(**x), graph.rgat_reference(*(x[n] for n in RGAT_ARGS)))
    dy = np.random.default_rng(4).standard_normal((g.num_nodes, 8)).astype(np.float32)
    grads = layer.run_backward_cpu(**x, grad_out=dy)
    expected = graph.rgat_gradients_reference(*(x[n] for n in RGAT_ARGS), dy)
    for key, value in expected.items():
        assert close(grads[key], value), key


def test_marked_only_compacts_the_marked_layer():
    @graph.layer
    def messages(g: Graph, x: NodeData, a: TypedWeights(columns=1), w: TypedWeights,
                 u: TypedWeights):
        scores = g.edge_softmax(g.typed_linear(x, a, rows="dst"))
        first = g.aggregate(g.typed_linear(x, w, materialize="compact"), weights=scores)
        second = g.aggregate(g.typed_linear(x, u), weights=scores)
        return first + second

    marked = messages.compacted(marked_only=True)
    assert marked.text.count("rows(src) weights") == 1
    everything = messages.compacted()
    assert everything.text.count("rows(src) weights") == 2
    g = graph.synthetic("aifb", seed=3, scale=0.1)
    rng = np.random.default_rng(4)
    T = g.num_edge_types
    x = {"x": rng.standard_normal((g.num_nodes, 6)).astype(np.float32),
         "a": rng.standard_normal((T, 6, 1)).astype(np.float32),
         "w": rng.standard_normal((T, 6, 5)).astype(np.float32),
         "u": rng.standard_normal((T, 6, 5)).astype(np.float32),
         "src": g.src, "dst": g.dst, "edge_type": g.etype}
    vanilla = messages.run_cpu(**x)
    assert close(marked.run_cpu(**x), vanilla)
    assert close(everything.run_cpu(**x), vanilla)


def typed_by_source_reference(x, w, ntype, src, dst, nodes):
    """out[v] = sum over edges e into v of <x_src, x_src W[ntype_src]>
    x_dst W[ntype_dst], in float64."""
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    per_node = np.einsum("nk,nkj->nj", x64, w64[ntype])
    scores = (x64[src] * per_node[src]).sum(1)
    out = np.zeros((nodes, w.shape[2]))
    np.add.at(out, dst, scores[:, None] * per_node[dst])
    return out


def test_node_typed_layers_are_computed_once_per_node():
    """rows(src) by(src_ntype) is not lowered per edge; compacted, it is a
    layer over the nodes by their type read at the edge's end, and runs."""
    @graph.layer
    def by_node_type(g: Graph(node_types=True), x: NodeData, w: TypedWeights):
        keys = g.typed_linear(x, w, rows="src", by="src_ntype")
        scores = g.inner_product(x, keys, rows=("src", "edges"))
        values = g.typed_linear(x, w, rows="dst", by="dst_ntype")
        return g.aggregate(values, weights=scores, to="dst")

    with pytest.raises(MLIRError, match=r"by\((src|dst)_ntype\) is not lowered to tile"):
        by_node_type.run_cpu()
    layer = by_node_type.compacted()
    assert "kge.derived" not in layer.text and layer.text.count("rows(nodes) by(ntype)") == 2
    g = graph.synthetic("aifb", seed=8, scale=0.2)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((g.num_nodes, 4)).astype(np.float32)
    w = rng.standard_normal((g.num_node_types, 4, 4)).astype(np.float32) * 0.5
    args = {"x": x, "w": w, "src": g.src, "dst": g.dst, "edge_type": g.etype,
            "node_type": g.ntype}
    assert close(layer.run_cpu(**args),
                 typed_by_source_reference(x, w, g.ntype, g.src, g.dst, g.num_nodes))


def test_graph_data_needs_the_arrays_it_derives_from():
    layer = graph.hgt_compact_layer
    with pytest.raises(KeyError, match="derived from src, edge_type; missing src"):
        layer.graph_data(edge_type=np.zeros(3, np.int32))
    given = {"pair_src": np.zeros(1, np.int32), "pair_type": np.zeros(1, np.int32),
             "edge_pair": np.zeros(1, np.int32)}
    assert layer.graph_data(**given) == {}
    unknown = layer.text.replace('function = "source_type_pairs"', 'function = "other"')
    with pytest.raises(ValueError, match="derived by 'other'"):
        graph.graph_data(unknown, {"src": np.zeros(1, np.int32),
                                   "edge_type": np.zeros(1, np.int32)})


def test_compaction_diagnoses_a_graph_without_named_arrays():
    text = (ROOT / "examples" / "graph" / "hgt.mlir").read_text().replace(
        '%src: tensor<?xi32> {kge.param = "src"}', "%src: tensor<?xi32>")
    with pytest.raises(MLIRError, match="its graph's src and etype must be parameters"):
        graph.compact(text)


def test_tracer_checks_the_schedule_attributes():
    def traced(**options):
        @graph.layer
        def f(g: Graph, x: NodeData, w: TypedWeights):
            return g.aggregate(g.typed_linear(x, w, **options))
        return f

    assert 'kge.name = "m"' in traced(name="m").text
    assert 'kge.materialize = "vanilla"' in traced(materialize="vanilla").text
    with pytest.raises(TraceError, match="materialize='late' is not compact or vanilla"):
        traced(materialize="late")
    with pytest.raises(TraceError, match="name 'a b' is not an identifier"):
        traced(name="a b")


def test_preferred_materialization_follows_the_measured_edge_counts():
    for model, edges in graph.COMPACT_FROM_EDGES.items():
        assert graph.preferred_materialization(model, edges - 1) == "vanilla"
        assert graph.preferred_materialization(model, edges) == "compact"
    assert graph.preferred_materialization("hgt", 672_900) == "vanilla"  # bgs
    assert graph.preferred_materialization("rgat", 672_900) == "compact"
    with pytest.raises(ValueError, match="no measured schedule for 'rgcn'"):
        graph.preferred_materialization("rgcn", 10)
