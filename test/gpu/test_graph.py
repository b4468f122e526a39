"""The graph dialect's bundles (build_graph_bundles.py into
KGE_GPU_GRAPH_BUNDLES, default .carry/graph) on the GPU: RGCN against a
float64 reference and against PyG's RGCNConv with the same weights, on
graphs of Pigeon's dataset shapes; bad indices refused before launch."""

import os
import pathlib
import sys

import numpy as np
import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
from kge import graph  # noqa: E402  (NumPy only: no compiler needed)

GRAPH_BUNDLES = pathlib.Path(os.environ.get("KGE_GPU_GRAPH_BUNDLES", ROOT / ".carry" / "graph"))
VARIANTS = ("default", "tf32", "fma", "F64")
# 3xTF32 and FP32 against float64; TF32 keeps 10 bits of each operand.
TOLERANCES = {"default": 1e-4, "fma": 1e-4, "F64": 1e-4, "tf32": 5e-3}
_programs = {}


def program(rt, variant):
    path = GRAPH_BUNDLES / f"rgcn.{variant}.kgebundle"
    if path not in _programs:
        if not path.exists():
            pytest.fail(f"missing {path}; run test/gpu/build_graph_bundles.py")
        _programs[path] = rt.Program(path.read_text())
    return _programs[path]


def layer(g, features, outputs, seed):
    arrays = graph.rgcn_inputs(g, features, outputs, seed)
    return arrays, {n: torch.from_numpy(a).cuda() for n, a in arrays.items()}


def relative_error(out, expected):
    return float(np.abs(out - expected).max() / max(1.0, np.abs(expected).max()))


GRAPHS = [("aifb", 1.0), ("mutag", 0.3), ("bgs", 0.1), ("fb15k", 0.2), ("biokg", 0.05)]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name,scale", GRAPHS, ids=[g for g, _ in GRAPHS])
def test_rgcn_matches_float64(rt, variant, name, scale):
    g = graph.synthetic(name, seed=7, scale=scale)
    arrays, tensors = layer(g, 64, 64, seed=len(name))
    out = program(rt, variant)(**tensors)["out"]
    torch.cuda.synchronize()
    expected = graph.rgcn_reference(arrays["x"], arrays["weight"], arrays["root"],
                                    arrays["bias"], g.src, g.dst, g.etype)
    error = relative_error(out.cpu().numpy(), expected)
    assert error < TOLERANCES[variant], error


@pytest.mark.parametrize("variant", ("default", "F64"))
def test_rgcn_equals_pyg(rt, variant):
    """PyG's RGCNConv (aggr='mean', root weight, bias) with KGE's weights
    copied in gives the same output."""
    pyg = pytest.importorskip("torch_geometric.nn")
    g = graph.synthetic("aifb", seed=3)
    arrays, tensors = layer(g, 64, 64, seed=5)
    conv = pyg.RGCNConv(64, 64, g.num_edge_types, aggr="mean").cuda()
    with torch.no_grad():
        conv.weight.copy_(tensors["weight"])
        conv.root.copy_(tensors["root"])
        conv.bias.copy_(tensors["bias"])
        edge_index = torch.stack([tensors["src"], tensors["dst"]]).long()
        expected = conv(tensors["x"], edge_index, tensors["edge_type"].long())
    out = program(rt, variant)(**tensors)["out"]
    torch.cuda.synchronize()
    assert torch.allclose(out, expected, rtol=1e-4, atol=1e-4), \
        float((out - expected).abs().max())


def test_rgcn_isolated_nodes_and_empty_graph(rt):
    g = graph.HeteroGraph(src=np.array([0, 1, 1, 3], np.int32), dst=np.array([1, 1, 2, 1], np.int32),
                          etype=np.array([0, 0, 2, 2], np.int32), ntype=np.zeros(6, np.int32),
                          num_edge_types=4, num_node_types=1)
    arrays, tensors = layer(g, 64, 64, seed=2)
    tensors["weight"][1] = float("nan")  # never read: no edge of types 1, 3
    tensors["weight"][3] = float("nan")
    for variant in VARIANTS:
        out = program(rt, variant)(**tensors)["out"].cpu().numpy()
        expected = graph.rgcn_reference(arrays["x"], arrays["weight"], arrays["root"],
                                        arrays["bias"], g.src, g.dst, g.etype)
        assert relative_error(out, expected) < TOLERANCES[variant], variant
    empty = dict(tensors)
    for n in ("src", "dst", "edge_type"):
        empty[n] = tensors[n][:0]
    empty["norm"] = tensors["norm"][:0]
    out = program(rt, "default")(**empty)["out"]
    root = arrays["x"] @ arrays["root"] + arrays["bias"]
    assert np.allclose(out.cpu().numpy(), root, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("param,value", [("src", 10**6), ("dst", -1), ("edge_type", 104)])
def test_rgcn_refuses_bad_indices(rt, param, value):
    g = graph.synthetic("aifb", seed=0, scale=0.1)
    _, tensors = layer(g, 64, 64, seed=0)
    tensors[param] = tensors[param].clone()
    tensors[param][5] = value
    with pytest.raises(IndexError, match=f"of '{param}' is out of range"):
        program(rt, "default")(**tensors, checked=True)
