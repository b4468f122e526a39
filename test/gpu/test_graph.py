"""The graph dialect's bundles (build_graph_bundles.py into
KGE_GPU_GRAPH_BUNDLES, default .carry/graph) on the GPU: RGCN's forward and
backward functions against float64 and against PyG's RGCNConv with the
same weights, on graphs of Pigeon's dataset shapes; kge.nn.RGCNConv's
outputs, gradients and training against PyG's; bad indices refused before
launch."""

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


def program(rt, variant, stem="rgcn"):
    path = GRAPH_BUNDLES / f"{stem}.{variant}.kgebundle"
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
    g = graph.corner_case_graph()
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


@pytest.mark.parametrize("stem", ("rgcn", "rgcn_grad"))
@pytest.mark.parametrize("param,value", [("src", 10**6), ("dst", -1), ("edge_type", 104)])
def test_rgcn_refuses_bad_indices(rt, stem, param, value):
    """The layer and its backward function refuse a bad index before launch
    (checked mode)."""
    g = graph.synthetic("aifb", seed=0, scale=0.1)
    _, tensors = layer(g, 64, 64, seed=0)
    tensors[param] = tensors[param].clone()
    tensors[param][5] = value
    if stem == "rgcn_grad":
        tensors["grad_out"] = torch.zeros(g.num_nodes, 64, device="cuda")
    with pytest.raises(IndexError, match=f"of '{param}' is out of range"):
        program(rt, "default", stem=stem)(**tensors, checked=True)


# The backward function (graph-differentiate): the gradients of x, the
# relation matrices (segments of the reduction per edge type) and the root
# weight, against float64.
def grad_program(rt, variant):
    return program(rt, variant, stem="rgcn_grad")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name,scale", GRAPHS, ids=[g for g, _ in GRAPHS])
def test_rgcn_backward_matches_float64(rt, variant, name, scale):
    g = graph.synthetic(name, seed=9, scale=scale)
    arrays, tensors = layer(g, 64, 64, seed=len(name) + 1)
    grad_out = np.random.default_rng(3).standard_normal((g.num_nodes, 64)).astype(np.float32)
    grads = grad_program(rt, variant)(**tensors, grad_out=torch.from_numpy(grad_out).cuda())
    torch.cuda.synchronize()
    expected = graph.rgcn_gradients_reference(arrays["x"], arrays["weight"], arrays["root"],
                                              g.src, g.dst, g.etype, grad_out)
    for key, value in expected.items():
        error = relative_error(grads[key].cpu().numpy(), value)
        assert error < TOLERANCES[variant], (key, error)


def test_rgcn_backward_without_edges_of_a_type(rt):
    """Types without edges get zero gradients (the result is cleared before
    the segments add into it), an empty graph the root term's alone."""
    g = graph.corner_case_graph()
    arrays, tensors = layer(g, 64, 64, seed=2)
    grad_out = torch.randn(6, 64, device="cuda")
    for variant in VARIANTS:
        grads = grad_program(rt, variant)(**tensors, grad_out=grad_out)
        expected = graph.rgcn_gradients_reference(arrays["x"], arrays["weight"], arrays["root"],
                                                  g.src, g.dst, g.etype, grad_out.cpu().numpy())
        assert not grads["grad_weight"][[1, 3]].any(), variant
        for key, value in expected.items():
            assert relative_error(grads[key].cpu().numpy(), value) < TOLERANCES[variant], \
                (variant, key)
    empty = dict(tensors)
    for n in ("src", "dst", "edge_type", "norm"):
        empty[n] = tensors[n][:0]
    grads = grad_program(rt, "default")(**empty, grad_out=grad_out)
    assert not grads["grad_weight"].any()
    assert torch.allclose(grads["grad_x"], grad_out @ tensors["root"].T, rtol=1e-4, atol=1e-4)


def pyg_and_kge_layers(g, features, outputs, variant="default", **decomposition):
    """PyG's RGCNConv and kge.nn.RGCNConv with PyG's parameters loaded
    (`decomposition`: num_bases or num_blocks)."""
    pyg = pytest.importorskip("torch_geometric.nn")
    from kge import nn
    torch.manual_seed(0)
    reference = pyg.RGCNConv(features, outputs, g.num_edge_types, aggr="mean",
                             **decomposition).cuda()
    torch.nn.init.normal_(reference.bias)
    conv = nn.RGCNConv(features, outputs, g.num_edge_types,
                       bundles=nn.load_bundles(GRAPH_BUNDLES, variant=variant),
                       **decomposition).cuda()
    conv.load_state_dict(reference.state_dict())
    return reference, conv


DECOMPOSITIONS = [{}, {"num_bases": 8}, {"num_blocks": 4}]


@pytest.mark.parametrize("decomposition", DECOMPOSITIONS, ids=["full", "bases", "blocks"])
@pytest.mark.parametrize("variant", ("default", "F64"))
@pytest.mark.parametrize("name", ("aifb", "mutag"))
def test_rgcnconv_forward_and_backward_equal_pygs(variant, name, decomposition):
    """kge.nn.RGCNConv with PyG's weights: the same output and the same
    gradients of the input and of every parameter as PyG's RGCNConv (also
    with PyG's basis and block decompositions)."""
    g = graph.synthetic(name, seed=4, scale=0.5)
    reference, conv = pyg_and_kge_layers(g, 64, 64, variant, **decomposition)
    edge_index = torch.from_numpy(np.stack([g.src, g.dst])).long().cuda()
    edge_type = torch.from_numpy(g.etype).long().cuda()
    x = torch.randn(g.num_nodes, 64, device="cuda")
    target = torch.randn(g.num_nodes, 64, device="cuda")
    outs, grads = [], []
    for layer_ in (reference, conv):
        xi = x.clone().requires_grad_()
        out = layer_(xi, edge_index, edge_type)
        ((out - target) ** 2).sum().backward()
        outs.append(out.detach())
        grads.append({"x": xi.grad, **{n: p.grad for n, p in layer_.named_parameters()}})
    assert torch.allclose(outs[0], outs[1], rtol=1e-4, atol=1e-4)
    expected = {"x", "weight", "root", "bias"} | ({"comp"} if decomposition.get("num_bases")
                                                  else set())
    assert set(grads[0]) == set(grads[1]) == expected
    for key in grads[0]:
        scale = max(1.0, float(grads[0][key].abs().max()))
        error = float((grads[0][key] - grads[1][key]).abs().max()) / scale
        assert error < 1e-4, (key, error)


def ten_training_steps(g, layers, optimizer):
    """The losses of ten steps of a two-layer model (`layers`: pairs of
    PyG's layer and KGE's) on a node-classification loss over `g`, PyG's
    layers first: [PyG's losses, KGE's losses]."""
    edge_index = torch.from_numpy(np.stack([g.src, g.dst])).long().cuda()
    edge_type = torch.from_numpy(g.etype).long().cuda()
    x = torch.randn(g.num_nodes, 64, device="cuda")
    labels = torch.randint(0, 4, (g.num_nodes,), device="cuda")
    losses = []
    for side in (0, 1):
        model = [pair[side] for pair in layers]
        params = [p for m in model for p in m.parameters()]
        step = (torch.optim.SGD(params, lr=0.1, momentum=0.9) if optimizer == "sgd"
                else torch.optim.Adam(params, lr=1e-2))
        history = []
        for _ in range(10):
            step.zero_grad()
            h = torch.relu(model[0](x, edge_index, edge_type))
            loss = torch.nn.functional.cross_entropy(model[1](h, edge_index, edge_type), labels)
            loss.backward()
            step.step()
            history.append(float(loss))
        losses.append(history)
    return losses


@pytest.mark.parametrize("optimizer", ("sgd", "adam"))
def test_rgcnconv_trains_like_pyg(optimizer):
    """Ten steps of a two-layer RGCN on a node-classification loss: KGE's
    layers follow PyG's (the same losses; with SGD, whose updates are
    linear in the gradients, the same parameters; Adam divides each update
    by the gradient's running magnitude, which turns the rounding of
    near-zero gradients into differences of up to the learning rate)."""
    g = graph.synthetic("aifb", seed=5)
    layers = [pyg_and_kge_layers(g, 64, 64), pyg_and_kge_layers(g, 64, 4)]
    losses = ten_training_steps(g, layers, optimizer)
    assert losses[1][-1] < losses[1][0]
    assert np.allclose(losses[0], losses[1], rtol=1e-3), losses
    if optimizer == "sgd":
        for reference, conv in layers:
            ours = dict(conv.named_parameters())
            for name, p in reference.named_parameters():
                assert torch.allclose(p, ours[name], rtol=1e-3, atol=1e-4), name


def test_rgcnconv_refuses_bad_input():
    """Bad indices, feature sizes, dtypes and devices: clear errors before
    any launch (the indices checked once per graph)."""
    g = graph.synthetic("aifb", seed=1, scale=0.1)
    _, conv = pyg_and_kge_layers(g, 64, 64)
    edge_index = torch.from_numpy(np.stack([g.src, g.dst])).long().cuda()
    edge_type = torch.from_numpy(g.etype).long().cuda()
    x = torch.randn(g.num_nodes, 64, device="cuda")
    bad = edge_index.clone()
    bad[1, 3] = g.num_nodes
    with pytest.raises(IndexError, match=f"edge_index holds {g.num_nodes}, outside"):
        conv(x, bad, edge_type)
    bad_types = edge_type.clone()
    bad_types[0] = -1
    with pytest.raises(IndexError, match="edge_type holds -1, outside"):
        conv(x, edge_index, bad_types)
    with pytest.raises(ValueError, match=r"x must be \[N, 64\]"):
        conv(x[:, :32], edge_index, edge_type)
    with pytest.raises(TypeError, match="computes in float32"):
        conv(x.double(), edge_index, edge_type)
    with pytest.raises(ValueError, match="must be on x's device"):
        conv(x, edge_index.cpu(), edge_type)
    with pytest.raises(ValueError, match="edge_type must hold one type per edge"):
        conv(x, edge_index, edge_type[:-1])
    # A good call after the bad ones.
    assert conv(x, edge_index, edge_type).shape == (g.num_nodes, 64)


# RGAT: the attention's scores, edge softmax and weighted messages
# (examples/graph/rgat.mlir), and kge.nn.RGATConv against PyG's RGATConv.

def rgat_layer(g, features, outputs, seed):
    arrays = graph.rgat_inputs(g, features, outputs, seed)
    del arrays["q"], arrays["k"]
    return arrays, {n: torch.from_numpy(a).cuda() for n, a in arrays.items()}


def rgat_reference(arrays, g):
    return graph.rgat_reference(arrays["x"], arrays["weight"], arrays["query"], arrays["key"],
                                g.src, g.dst, g.etype)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name,scale", GRAPHS, ids=[g for g, _ in GRAPHS])
def test_rgat_matches_float64(rt, variant, name, scale):
    """The output and the attention (each node's incoming edges' sum to
    one) against float64."""
    g = graph.synthetic(name, seed=7, scale=scale)
    arrays, tensors = rgat_layer(g, 64, 64, seed=len(name))
    results = program(rt, variant, "rgat")(**tensors)
    torch.cuda.synchronize()
    error = relative_error(results["out"].cpu().numpy(), rgat_reference(arrays, g))
    assert error < TOLERANCES[variant], error
    attention = results["attention"].cpu().numpy()[:, 0].astype(np.float64)
    sums = np.zeros(g.num_nodes)
    np.add.at(sums, g.dst, attention)
    has_edges = np.bincount(g.dst, minlength=g.num_nodes) > 0
    assert np.allclose(sums[has_edges], 1.0, atol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name,scale", GRAPHS[:4], ids=[g for g, _ in GRAPHS[:4]])
def test_rgat_backward_matches_float64(rt, variant, name, scale):
    g = graph.synthetic(name, seed=8, scale=scale)
    arrays, tensors = rgat_layer(g, 64, 64, seed=len(name) + 1)
    grad_out = torch.randn(g.num_nodes, 64, device="cuda")
    grads = program(rt, variant, "rgat_grad")(**tensors, grad_out=grad_out)
    torch.cuda.synchronize()
    expected = graph.rgat_gradients_reference(
        arrays["x"], arrays["weight"], arrays["query"], arrays["key"], g.src, g.dst, g.etype,
        grad_out.cpu().numpy())
    for key, value in expected.items():
        error = relative_error(grads[key].cpu().numpy(), value)
        assert error < TOLERANCES[variant], (key, error)


def test_rgat_isolated_nodes_types_without_edges_and_empty_graph(rt):
    """Nodes without incoming edges get zeros, types without edges zero
    gradients, a graph without edges zero outputs and gradients."""
    g = graph.corner_case_graph()
    arrays, tensors = rgat_layer(g, 64, 64, seed=3)
    for variant in VARIANTS:
        out = program(rt, variant, "rgat")(**tensors)["out"].cpu().numpy()
        assert relative_error(out, rgat_reference(arrays, g)) < TOLERANCES[variant], variant
        grad_out = torch.randn(6, 64, device="cuda")
        grads = program(rt, variant, "rgat_grad")(**tensors, grad_out=grad_out)
        assert not grads["grad_weight"][[1, 3]].any(), variant
        assert not grads["grad_query"][[1, 3]].any(), variant
    empty = dict(tensors)
    for n in ("src", "dst", "edge_type"):
        empty[n] = tensors[n][:0]
    assert not program(rt, "default", "rgat")(**empty)["out"].any()
    grads = program(rt, "default", "rgat_grad")(**empty, grad_out=torch.randn(6, 64,
                                                                             device="cuda"))
    assert not any(grads[k].any() for k in ("grad_x", "grad_weight", "grad_query", "grad_key"))


@pytest.mark.parametrize("stem", ("rgat", "rgat_grad"))
@pytest.mark.parametrize("param,value", [("src", 10**6), ("dst", -1), ("edge_type", 104)])
def test_rgat_refuses_bad_indices(rt, stem, param, value):
    g = graph.synthetic("aifb", seed=2, scale=0.2)
    _, tensors = rgat_layer(g, 64, 64, seed=1)
    tensors[param] = tensors[param].clone()
    tensors[param][5] = value
    extra = {"grad_out": torch.randn(g.num_nodes, 64, device="cuda")} if "grad" in stem else {}
    with pytest.raises(IndexError, match=f"of '{param}' is out of range"):
        program(rt, "default", stem)(**tensors, **extra, checked=True)


def pyg_and_kge_rgat(g, features, outputs, variant="default", materialize="vanilla",
                     **decomposition):
    """PyG's RGATConv and kge.nn.RGATConv with PyG's parameters loaded."""
    fuse_linear = decomposition.pop("fuse_linear", True)
    pyg = pytest.importorskip("torch_geometric.nn")
    from kge import nn
    torch.manual_seed(0)
    reference = pyg.RGATConv(features, outputs, g.num_edge_types, **decomposition).cuda()
    torch.nn.init.normal_(reference.bias)
    name = ("rgat" if fuse_linear else "rgat_unfused") + (
        "_compact" if materialize == "compact" else "")
    conv = nn.RGATConv(features, outputs, g.num_edge_types,
                       bundles=nn.load_bundles(GRAPH_BUNDLES, name, variant=variant),
                       materialize=materialize, fuse_linear=fuse_linear,
                       **decomposition).cuda()
    conv.load_state_dict(reference.state_dict())
    return reference, conv


RGAT_OPTIONS = DECOMPOSITIONS + [{"heads": 2}, {"heads": 3, "concat": False, "num_bases": 4}]


@pytest.mark.parametrize("materialize,decomposition", [
    *(("vanilla", d) for d in RGAT_OPTIONS), ("compact", {}), ("compact", {"heads": 2}),
    ("vanilla", {"fuse_linear": False}), ("vanilla", {"fuse_linear": False, "heads": 2}),
    ("compact", {"fuse_linear": False})],
    ids=["full", "bases", "blocks", "heads", "heads-mean-bases", "compact-full",
         "compact-heads", "unfused-full", "unfused-heads", "unfused-compact-full"])
@pytest.mark.parametrize("variant", ("default", "F64"))
@pytest.mark.parametrize("name", ("aifb", "mutag"))
def test_rgatconv_forward_and_backward_equal_pygs(variant, name, materialize, decomposition):
    """kge.nn.RGATConv with PyG's weights: the same output, attention and
    gradients of the input and of every parameter as PyG's RGATConv; also
    with compact materialization (the messages once per (source, relation)
    pair) and without linear-operator fusion (W_r x per edge, then q, k)."""
    if (variant == "F64" and not decomposition.get("fuse_linear", True)
            and decomposition.get("heads", 1) > 1):
        pytest.skip("unfused, the scores read all heads' columns: the F64 bundles take 64")
    g = graph.synthetic(name, seed=4, scale=0.5)
    decomposition = dict(decomposition)
    reference, conv = pyg_and_kge_rgat(g, 64, 64, variant, materialize, **decomposition)
    edge_index = torch.from_numpy(np.stack([g.src, g.dst])).long().cuda()
    edge_type = torch.from_numpy(g.etype).long().cuda()
    x = torch.randn(g.num_nodes, 64, device="cuda")
    # (Several concatenated heads: 64 columns each.)
    width = 64 * decomposition.get("heads", 1) if decomposition.get("concat", True) else 64
    target = torch.randn(g.num_nodes, width, device="cuda")
    outs, grads, alphas = [], [], []
    for layer_ in (reference, conv):
        xi = x.clone().requires_grad_()
        out, (_, alpha) = layer_(xi, edge_index, edge_type, return_attention_weights=True)
        ((out - target) ** 2).sum().backward()
        outs.append(out.detach())
        alphas.append(alpha.detach().reshape(-1))
        grads.append({"x": xi.grad, **{n: p.grad for n, p in layer_.named_parameters()
                                       if p.grad is not None}})
    assert torch.allclose(outs[0], outs[1], rtol=1e-4, atol=1e-4)
    assert torch.allclose(alphas[0], alphas[1], rtol=1e-4, atol=1e-5)
    assert set(grads[0]) == set(grads[1])
    assert {"x", "q", "k", "bias"} <= set(grads[0])
    for key in grads[0]:
        scale = max(1.0, float(grads[0][key].abs().max()))
        error = float((grads[0][key] - grads[1][key]).abs().max()) / scale
        assert error < 1e-4, (key, error)


def test_rgatconv_trains_like_pyg():
    """Ten SGD steps of a two-layer RGAT: the same losses and parameters as
    PyG's."""
    g = graph.synthetic("aifb", seed=5)
    layers = [pyg_and_kge_rgat(g, 64, 64), pyg_and_kge_rgat(g, 64, 4)]
    losses = ten_training_steps(g, layers, "sgd")
    assert losses[1][-1] < losses[1][0]
    assert np.allclose(losses[0], losses[1], rtol=1e-3), losses
    for reference, conv in layers:
        ours = dict(conv.named_parameters())
        for name, p in reference.named_parameters():
            # (PyG leaves its unused cardinality parameters uninitialized:
            # NaN where the memory held one, copied as it is.)
            assert torch.allclose(p, ours[name], rtol=1e-3, atol=1e-4, equal_nan=True), name


def test_rgatconv_refuses_bad_input_and_other_configurations():
    from kge import nn
    g = graph.synthetic("aifb", seed=1, scale=0.1)
    _, conv = pyg_and_kge_rgat(g, 64, 64)
    edge_index = torch.from_numpy(np.stack([g.src, g.dst])).long().cuda()
    edge_type = torch.from_numpy(g.etype).long().cuda()
    x = torch.randn(g.num_nodes, 64, device="cuda")
    bad = edge_index.clone()
    bad[0, 3] = g.num_nodes
    with pytest.raises(IndexError, match=f"edge_index holds {g.num_nodes}, outside"):
        conv(x, bad, edge_type)
    with pytest.raises(ValueError, match=r"x must be \[N, 64\]"):
        conv(x[:, :32], edge_index, edge_type)
    with pytest.raises(TypeError, match="computes in float32"):
        conv(x.half(), edge_index, edge_type)
    for option in ({"heads": 0}, {"attention_mechanism": "within-relation"},
                   {"attention_mode": "multiplicative-self-attention"}, {"mod": "additive"}):
        with pytest.raises(ValueError, match="computes|heads must be positive"):
            nn.RGATConv(64, 64, 4, **option)
    assert conv(x, edge_index, edge_type).shape == (g.num_nodes, 64)


# HGT's attention and messages (examples/graph/hgt.mlir), and
# kge.nn.HGTConv against PyG's HGTConv.

def hgt_arrays(g, features, seed):
    arrays = graph.hgt_inputs(g, features, seed)
    return arrays, {n: torch.from_numpy(a).cuda() for n, a in arrays.items()}


HGT_ARGS = ("k", "q", "v", "k_rel", "v_rel", "src", "dst", "edge_type")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name,scale", GRAPHS[:4], ids=[g for g, _ in GRAPHS[:4]])
def test_hgt_forward_and_backward_match_float64(rt, variant, name, scale):
    g = graph.synthetic(name, seed=9, scale=scale)
    arrays, tensors = hgt_arrays(g, 64, seed=len(name))
    out = program(rt, variant, "hgt")(**tensors)["out"]
    expected = graph.hgt_reference(*(arrays[n] for n in HGT_ARGS))
    assert relative_error(out.cpu().numpy(), expected) < TOLERANCES[variant]
    grad_out = torch.randn(g.num_nodes, 64, device="cuda")
    grads = program(rt, variant, "hgt_grad")(**tensors, grad_out=grad_out)
    expected = graph.hgt_gradients_reference(*(arrays[n] for n in HGT_ARGS),
                                             grad_out.cpu().numpy())
    # (With TF32 the gradients of the scores' sides pass through two
    # TF32 products, the keys' and the messages': twice the forward's
    # tolerance.)
    tolerance = 2 * TOLERANCES[variant] if variant == "tf32" else TOLERANCES[variant]
    for key, value in expected.items():
        error = relative_error(grads[key].cpu().numpy(), value)
        assert error < tolerance, (key, error)


def hetero(g, features, seed):
    """`g` as PyG's heterogeneous inputs: node types n<t> (their features),
    edge types (n<s>, r<r>, n<d>), each relation joining one node type to
    one (graph.relation_typed)."""
    g = graph.relation_typed(g, seed)
    rng = np.random.default_rng(seed)
    local = np.zeros(g.num_nodes, np.int64)
    x_dict = {}
    for t in range(int(g.ntype.max()) + 1):
        members = np.flatnonzero(g.ntype == t)
        local[members] = np.arange(len(members))
        if len(members):
            x_dict[f"n{t}"] = torch.from_numpy(
                rng.standard_normal((len(members), features)).astype(np.float32)).cuda()
    edge_index_dict = {}
    triples = np.stack([g.ntype[g.src], g.etype, g.ntype[g.dst]], 1)
    for s, r, d in np.unique(triples, axis=0):
        mask = (triples == (s, r, d)).all(1)
        edge_index_dict[(f"n{s}", f"r{r}", f"n{d}")] = torch.from_numpy(
            np.stack([local[g.src[mask]], local[g.dst[mask]]])).cuda()
    return x_dict, edge_index_dict, (list(x_dict), list(edge_index_dict))


def pyg_and_kge_hgt(metadata, features, variant="default", heads=1, materialize="compact"):
    pyg = pytest.importorskip("torch_geometric.nn")
    from kge import nn
    torch.manual_seed(0)
    reference = pyg.HGTConv(features, features, metadata, heads=heads).cuda()
    with torch.no_grad():
        for p in list(reference.skip.values()) + list(reference.p_rel.values()):
            p.uniform_(0.5, 1.5)
    name = "hgt_compact" if materialize == "compact" else "hgt"
    conv = nn.HGTConv(features, features, metadata, heads=heads, materialize=materialize,
                      bundles=nn.load_bundles(GRAPH_BUNDLES, name, variant=variant)).cuda()
    conv.load_state_dict(reference.state_dict())
    return reference, conv


@pytest.mark.parametrize("materialize", ("compact", "vanilla"))
@pytest.mark.parametrize("heads", (1, 2))
@pytest.mark.parametrize("variant", ("default", "F64"))
@pytest.mark.parametrize("name", ("aifb", "mutag"))
def test_hgtconv_forward_and_backward_equal_pygs(variant, name, heads, materialize):
    """kge.nn.HGTConv with PyG's weights: the same outputs per node type and
    the same gradients of the inputs and of every parameter as PyG's
    HGTConv (one head, and two: each head's D = 32 columns; the F64
    bundles take one head of 64 only), with compact materialization (the
    default) and without."""
    if heads > 1 and variant == "F64":
        pytest.skip("the F64 bundles are compiled for rows of 64")
    g = graph.synthetic(name, seed=4, scale=0.3)
    x_dict, edge_index_dict, metadata = hetero(g, 64, seed=5)
    reference, conv = pyg_and_kge_hgt(metadata, 64, variant, heads, materialize)
    outs, grads = [], []
    for layer_ in (reference, conv):
        xs = {t: x.clone().requires_grad_() for t, x in x_dict.items()}
        out = layer_(xs, edge_index_dict)
        sum((o ** 2).sum() for o in out.values() if o is not None).backward()
        outs.append({t: o.detach() for t, o in out.items() if o is not None})
        grads.append({**{f"x.{t}": x.grad for t, x in xs.items() if x.grad is not None},
                      **{n: p.grad for n, p in layer_.named_parameters()
                         if p.grad is not None}})
    assert set(outs[0]) == set(outs[1])
    for t in outs[0]:
        assert torch.allclose(outs[0][t], outs[1][t], rtol=1e-4, atol=1e-4), t
    assert set(grads[0]) == set(grads[1])
    for key in grads[0]:
        scale = max(1.0, float(grads[0][key].abs().max()))
        error = float((grads[0][key] - grads[1][key]).abs().max()) / scale
        assert error < 1e-4, (key, error)


def test_hgtconv_refuses_bad_input():
    from kge import nn
    g = graph.synthetic("aifb", seed=1, scale=0.1)
    x_dict, edge_index_dict, metadata = hetero(g, 64, seed=2)
    _, conv = pyg_and_kge_hgt(metadata, 64)
    edge_type = next(iter(edge_index_dict))
    bad = dict(edge_index_dict)
    bad[edge_type] = bad[edge_type].clone()
    bad[edge_type][1, 0] = x_dict[edge_type[2]].shape[0]
    with pytest.raises(IndexError, match="outside"):
        conv(x_dict, bad)
    with pytest.raises(ValueError, match="must be"):
        conv({**x_dict, edge_type[0]: x_dict[edge_type[0]][:, :8]}, edge_index_dict)
    with pytest.raises(ValueError, match="not in the layer's metadata"):
        conv(x_dict, {("n0", "nope", "n0"): edge_index_dict[edge_type]})
    with pytest.raises(ValueError, match="must be divisible by the number of heads"):
        nn.HGTConv(64, 64, metadata, heads=3)
    assert set(conv(x_dict, edge_index_dict)) == {e[2] for e in metadata[1]}


def test_auto_materialization_picks_the_schedule_per_graph(monkeypatch):
    """materialize='auto': vanilla below kge.graph.COMPACT_FROM_EDGES,
    compact from it (the pairs computed only then), the same outputs as
    the explicit schedules; a pair of bundles is refused (it holds one
    schedule), a dict without the schedule picked is refused when called."""
    from kge import nn
    g = graph.synthetic("aifb", seed=4, scale=0.3)
    x_dict, edge_index_dict, metadata = hetero(g, 64, seed=5)
    pyg_layer, _ = pyg_and_kge_hgt(metadata, 64)
    both = {m: nn.load_bundles(GRAPH_BUNDLES, "hgt_compact" if m == "compact" else "hgt",
                               variant="default") for m in ("vanilla", "compact")}
    outs = {}
    for materialize in ("vanilla", "compact", "auto"):
        conv = nn.HGTConv(64, 64, metadata, materialize=materialize,
                          bundles=both if materialize == "auto" else both[materialize]).cuda()
        conv.load_state_dict(pyg_layer.state_dict())
        outs[materialize] = conv(x_dict, edge_index_dict)
        if materialize == "auto":
            assert len(conv._graph["arrays"]) == 3  # vanilla: no pairs
            monkeypatch.setitem(graph.COMPACT_FROM_EDGES, "hgt", 0)
            conv._graph = None
            outs["auto-compact"] = conv(x_dict, edge_index_dict)
            assert len(conv._graph["arrays"]) == 6
    for key in ("compact", "auto", "auto-compact"):
        for t in outs["vanilla"]:
            assert torch.allclose(outs[key][t], outs["vanilla"][t], rtol=1e-4, atol=1e-4), key
    with pytest.raises(ValueError, match="materialize='auto' picks the schedule per graph"):
        nn.HGTConv(64, 64, metadata, materialize="auto", bundles=both["vanilla"])
    with pytest.raises(ValueError, match="keyed by 'vanilla' and 'compact'"):
        nn.RGATConv(64, 64, 3, materialize="auto", bundles={"fast": both["vanilla"]})
    only = nn.HGTConv(64, 64, metadata, materialize="auto",
                      bundles={"vanilla": both["vanilla"]}).cuda()
    with pytest.raises(ValueError, match="no bundles of the 'compact' schedule"):
        only(x_dict, edge_index_dict)
    # RGAT alike: auto on a small graph runs the vanilla bundles.
    reference, conv = pyg_and_kge_rgat(g, 64, 64)
    auto = nn.RGATConv(64, 64, g.num_edge_types, materialize="auto", bundles={
        "vanilla": nn.load_bundles(GRAPH_BUNDLES, "rgat", variant="default"),
        "compact": nn.load_bundles(GRAPH_BUNDLES, "rgat_compact", variant="default")}).cuda()
    auto.load_state_dict(reference.state_dict())
    edge_index = torch.from_numpy(np.stack([g.src, g.dst])).long().cuda()
    edge_type = torch.from_numpy(g.etype).long().cuda()
    xs = torch.randn(g.num_nodes, 64, device="cuda")
    assert torch.allclose(auto(xs, edge_index, edge_type), conv(xs, edge_index, edge_type),
                          rtol=1e-4, atol=1e-4)
