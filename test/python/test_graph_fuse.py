"""Linear-operator fusion (Pigeon Section 3.2, graph-fuse-linear) on the CPU
path: RGAT as PyG writes it (kge.graph.rgat_unfused), unfused and fused,
against the NumPy reference forward and backward; chains of typed layers
(a second matrix per type, three layers) fused and unfused alike; the
composed weights derived and their gradients chained back."""

import numpy as np
import pytest

from kge import graph
from kge.graph import EdgeWeights, Graph, NodeData, TypedWeights


def close(out, expected, rtol=1e-4):
    scale = max(1.0, float(np.abs(expected).max()))
    return out.shape == expected.shape and np.allclose(out, expected, rtol=rtol,
                                                       atol=1e-5 * scale)


def rgat_case(name, scale, seed):
    g = graph.synthetic(name, seed=seed, scale=scale)
    arrays = graph.rgat_inputs(g, 16, 8, seed=seed + 1)
    rng = np.random.default_rng(seed + 2)
    q, k = (rng.standard_normal((8, 1)).astype(np.float32) for _ in range(2))
    x = {"x": arrays["x"], "weight": arrays["weight"], "attention_weight": arrays["weight"],
         "query": q, "key": k, "src": g.src, "dst": g.dst, "edge_type": g.etype}
    return g, x


@pytest.mark.parametrize("name,scale", [("aifb", 0.3), ("mutag", 0.05), ("biokg", 0.002)])
def test_rgat_unfused_and_fused_match_numpy(name, scale):
    """The scores (x_dst W_r) q + (x_src W_r) k: per edge (unfused) and by
    the composed W_r q, W_r k (fused, no per-edge rows of W_r x); both give
    RGAT's output and the gradients of x, the weights and q, k."""
    g, x = rgat_case(name, scale, seed=3)
    W = x["weight"]
    fused_weights = (W @ x["query"], W @ x["key"])
    reference = graph.rgat_reference(x["x"], W, *fused_weights, g.src, g.dst, g.etype)
    dy = np.random.default_rng(9).standard_normal((g.num_nodes, 8)).astype(np.float32)
    r = graph.rgat_gradients_reference(x["x"], W, *fused_weights, g.src, g.dst, g.etype, dy)
    W64 = W.astype(np.float64)
    expected = {
        "grad_x": r["grad_x"], "grad_weight": r["grad_weight"],
        "grad_attention_weight": r["grad_query"] @ x["query"].T[None] +
        r["grad_key"] @ x["key"].T[None],
        "grad_query": np.einsum("tkd,tko->do", W64, r["grad_query"]),
        "grad_key": np.einsum("tkd,tko->do", W64, r["grad_key"])}
    unfused = graph.rgat_unfused()
    fused = unfused.fused()
    assert "graph.linear" in unfused.text and "graph.linear" not in fused.text
    assert set(graph.derived_parameters(fused.text)) == {"attention_weight_query",
                                                         "attention_weight_key"}
    for layer in (unfused, fused):
        assert close(layer.run_cpu(**x), reference)
        grads = layer.run_backward_cpu(**x, grad_out=dy)
        assert not any(k.startswith("grad_attention_weight_") for k in grads)
        for key, value in expected.items():
            assert close(grads[key], value), (key, layer is fused)


def test_fused_rgat_is_the_hand_fused_layer():
    """The pass gives kge.graph.rgat()'s model: the composed matrices are
    its `query` and `key`."""
    g, x = rgat_case("aifb", 0.2, seed=5)
    fused = graph.rgat_unfused().fused()
    data = fused.graph_data(**x)
    assert np.allclose(data["attention_weight_query"], x["weight"] @ x["query"], atol=1e-6)
    hand = graph.rgat_layer.run_cpu(x=x["x"], weight=x["weight"],
                                    query=data["attention_weight_query"],
                                    key=data["attention_weight_key"], src=g.src, dst=g.dst,
                                    edge_type=g.etype)
    assert close(fused.run_cpu(**x), hand)


@graph.layer
def chained(g: Graph, x: NodeData, a: TypedWeights, b: TypedWeights, c: TypedWeights,
            norm: EdgeWeights):
    """x_src A_r B_r C_r per edge, summed into the destinations: a chain of
    three typed layers, the last two over the edges' rows."""
    h = g.typed_linear(g.typed_linear(x, a), b, rows="edges")
    return g.aggregate(g.typed_linear(h, c, rows="edges"), weights=norm)


def test_chains_of_typed_layers_fuse_into_one():
    """A B C composes as (A B) C, the second composition derived from the
    first; forward and every gradient as the unfused chain's and NumPy's."""
    fused = chained.fused()
    derived = graph.derived_parameters(fused.text)
    assert list(derived) == ["a_b", "a_b_c"]
    assert derived["a_b_c"] == ("compose", None, ("a_b", "c"))
    g = graph.synthetic("mutag", seed=4, scale=0.05)
    T = g.num_edge_types
    rng = np.random.default_rng(5)
    x = {"x": rng.standard_normal((g.num_nodes, 6)).astype(np.float32),
         "a": rng.standard_normal((T, 6, 5)).astype(np.float32),
         "b": rng.standard_normal((T, 5, 4)).astype(np.float32),
         "c": rng.standard_normal((T, 4, 3)).astype(np.float32),
         "norm": rng.uniform(0.1, 1.0, g.num_edges).astype(np.float32),
         "src": g.src, "dst": g.dst, "edge_type": g.etype}
    A, B, C = (x[n].astype(np.float64) for n in "abc")
    M = A @ B @ C
    messages = np.einsum("ek,ekn->en", x["x"][g.src].astype(np.float64), M[g.etype])
    expected = np.zeros((g.num_nodes, 3))
    np.add.at(expected, g.dst, x["norm"][:, None] * messages)
    dy = rng.standard_normal((g.num_nodes, 3)).astype(np.float32)
    dm = x["norm"][:, None] * dy[g.dst].astype(np.float64)
    dx = np.zeros((g.num_nodes, 6))
    np.add.at(dx, g.src, np.einsum("en,ekn->ek", dm, M[g.etype]))
    dM = np.zeros_like(M)
    for t in range(T):
        mask = g.etype == t
        dM[t] = x["x"][g.src[mask]].astype(np.float64).T @ dm[mask]
    T_ = lambda m: np.swapaxes(m, -1, -2)  # noqa: E731
    grads = {"grad_x": dx, "grad_a": dM @ T_(B @ C), "grad_b": T_(A) @ dM @ T_(C),
             "grad_c": T_(A @ B) @ dM}
    assert close(chained.run_cpu(**x), expected)
    assert close(fused.run_cpu(**x), expected)
    # (Unfused, the chain's per-edge layers under an aggregate are not
    # differentiated: graph-differentiate takes the fused form.)
    got = fused.run_backward_cpu(**x, grad_out=dy)
    assert not {"grad_a_b", "grad_a_b_c"} & set(got)
    for key, value in grads.items():
        assert close(got[key], value), key


@graph.layer
def node_chain(g: Graph(node_types=True), x: NodeData, a: TypedWeights, b: TypedWeights):
    """x_v A_t B_t by each node's type t."""
    return g.typed_linear(g.typed_linear(x, a, rows="nodes", by="ntype"), b, rows="nodes",
                          by="ntype")


def test_chains_over_node_rows_fuse_alike():
    fused = node_chain.fused()
    assert fused.text.count("graph.typed_linear") == 1
    g = graph.synthetic("aifb", seed=7, scale=0.1)
    rng = np.random.default_rng(8)
    types = g.num_node_types
    x = {"x": rng.standard_normal((g.num_nodes, 6)).astype(np.float32),
         "a": rng.standard_normal((types, 6, 5)).astype(np.float32),
         "b": rng.standard_normal((types, 5, 4)).astype(np.float32),
         "src": g.src, "dst": g.dst, "edge_type": g.etype, "node_type": g.ntype}
    dy = rng.standard_normal((g.num_nodes, 4)).astype(np.float32)
    outs = [layer.run_cpu(**x) for layer in (node_chain, fused)]
    M = x["a"].astype(np.float64) @ x["b"].astype(np.float64)
    expected = np.einsum("vk,vkn->vn", x["x"].astype(np.float64), M[g.ntype])
    assert close(outs[0], expected) and close(outs[1], expected)
    grads = [layer.run_backward_cpu(**x, grad_out=dy) for layer in (node_chain, fused)]
    for key in ("grad_x", "grad_a", "grad_b"):
        assert close(grads[1][key], grads[0][key].astype(np.float64)), key


def test_compose_backward_is_the_derivative():
    rng = np.random.default_rng(6)
    lhs = rng.standard_normal((3, 4, 5))
    for rhs in (rng.standard_normal((5, 2)), rng.standard_normal((3, 5, 2))):
        grad = rng.standard_normal((3, 4, 2))
        dl, dr = graph._compose_backward(grad, lhs, rhs)
        for array, analytic in ((lhs, dl), (rhs, dr)):
            at = tuple(rng.integers(0, n) for n in array.shape)
            saved = array[at]
            array[at] = saved + 1e-6
            plus = (np.matmul(lhs, rhs) * grad).sum()
            array[at] = saved - 1e-6
            minus = (np.matmul(lhs, rhs) * grad).sum()
            array[at] = saved
            assert np.isclose((plus - minus) / 2e-6, analytic[at], rtol=1e-5, atol=1e-7)


def test_derived_weights_need_their_sources():
    fused = chained.fused()
    with pytest.raises(KeyError, match="derived from a, b; missing b"):
        fused.graph_data(a=np.zeros((1, 2, 2), np.float32))
