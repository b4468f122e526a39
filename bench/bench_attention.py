"""RGAT and HGT inference and training: kge.nn.RGATConv and
kge.nn.HGTConv (KGE's forward and backward bundles through torch.autograd)
against PyG's RGATConv and HGTConv with the same weights, on graphs of
Pigeon's dataset shapes (kge.graph.synthetic) and WordNet.

One layer, hidden size 64 -> 64 (and 128 -> 128), one head; RGAT with
additive self-attention across relations (PyG's defaults) and bias; HGT
over node types n<t> and edge types (n<s>, r<r>, n<d>), each relation
joining one node type to one (PyG's heterogeneous inputs); full graph, float32 (TF32 off for PyTorch; KGE's default 3xTF32 for the typed layer's
products: FP32 accuracy). Per row, the time (median of interleaved
rounds, CUDA events) of

  inference   the layer's forward under torch.no_grad()
  training    one step: forward, backward of a fixed output gradient, and
              torch.optim.Adam's update of every parameter

for `kge` (the graph's int32 arrays kept across calls, as for a static
graph), `kge+graph` (those recomputed every call, as PyG's layer does
inside its forward) and `pyg`; the largest relative difference of KGE's
output and gradients from PyG's; the peak memory of PyTorch's allocator
during one training step; and which methods ran out of memory.

    python3 bench/bench_attention.py --model rgat --bundles .carry/graph --out results.json

With `--ablation`, the rows compare KGE's schedules of the same model
instead (Pigeon's Table 5), PyG's layer giving the weights only:
`vanilla` (every per-edge typed linear layer computed per edge, in the task
that reads it), `compact` (graph-compact-materialize: once per (source
node, edge type) pair); for RGAT also `unfused` (the model as PyG writes
it: W_r x per edge, then its product with the attention's vector: Pigeon's
unoptimized code) and `unfused_compact`, against which `vanilla` measures
linear-operator fusion (W_r q composed first: F) and `compact` both (C+F).
Each row's `<schedule>_<phase>_speedup_over_<base>`: the base's time
over the schedule's (base: `unfused` for RGAT, `vanilla` for HGT).
"""

import json
import pathlib
import sys

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
from kge import graph, nn  # noqa: E402
from bench_rgcn import arguments, graphs  # noqa: E402
from bench_score_functions import interleaved_per_call, peak_bytes  # noqa: E402


def relative(a, b):
    return float((a.double() - b.double()).abs().max() / b.double().abs().max().clamp(min=1e-30))


def timed(fns, row, rounds):
    """interleaved_per_call of `fns`, less those that run out of memory
    beside the others (recorded in the row's out_of_memory)."""
    while fns:
        try:
            return interleaved_per_call(fns, rounds=rounds)
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()
            # The largest consumer goes: PyG's layer, whose per-edge tensors
            # are the memory's bulk.
            method = "pyg" if "pyg" in fns else next(iter(fns))
            del fns[method]
            if method not in row["out_of_memory"]:
                row["out_of_memory"].append(method)
    return {}


def hetero(g, features, generator):
    """`g` as PyG's heterogeneous inputs (x_dict, edge_index_dict,
    metadata), each relation joining one node type to one
    (kge.graph.relation_typed)."""
    g = graph.relation_typed(g)
    ntype = torch.from_numpy(g.ntype).cuda().long()
    src, dst = torch.from_numpy(g.src).cuda().long(), torch.from_numpy(g.dst).cuda().long()
    etype = torch.from_numpy(g.etype).cuda().long()
    local = torch.zeros_like(ntype)
    x_dict = {}
    for t in range(int(ntype.max()) + 1):
        members = (ntype == t).nonzero().flatten()
        local[members] = torch.arange(len(members), device="cuda")
        if len(members):
            x_dict[f"n{t}"] = torch.randn(len(members), features, device="cuda",
                                          generator=generator)
    key = (ntype[src] * (g.num_edge_types + 1) + etype) * (int(ntype.max()) + 1) + ntype[dst]
    order = torch.argsort(key)
    keys, counts = torch.unique_consecutive(key[order], return_counts=True)
    edge_index_dict = {}
    for k, part in zip(keys.tolist(), torch.split(order, counts.tolist())):
        s, rest = divmod(k, (g.num_edge_types + 1) * (int(ntype.max()) + 1))
        r, d = divmod(rest, int(ntype.max()) + 1)
        edge_index_dict[(f"n{s}", f"r{r}", f"n{d}")] = torch.stack(
            [local[src[part]], local[dst[part]]])
    return x_dict, edge_index_dict, (list(x_dict), list(edge_index_dict))


#: KGE's schedules of each model (--ablation): the bundles' name and the
#: layer's options.
SCHEDULES = {
    "rgat": {"vanilla": ("rgat", {}),
             "compact": ("rgat_compact", {"materialize": "compact"}),
             "unfused": ("rgat_unfused", {"fuse_linear": False}),
             "unfused_compact": ("rgat_unfused_compact",
                                 {"fuse_linear": False, "materialize": "compact"})},
    "hgt": {"vanilla": ("hgt", {"materialize": "vanilla"}),
            "compact": ("hgt_compact", {"materialize": "compact"})},
}


def rgat_layers(g, hidden, bundles_dir, ablation=False):
    from torch_geometric.nn import RGATConv
    layers = {"pyg": RGATConv(hidden, hidden, g.num_edge_types).cuda()}
    torch.nn.init.normal_(layers["pyg"].bias)
    methods = SCHEDULES["rgat"] if ablation else {
        m: SCHEDULES["rgat"]["vanilla"] for m in ("kge", "kge+graph")}
    for method, (name, options) in methods.items():
        bundles = nn.load_bundles(bundles_dir, name, variant=f"F{hidden}")
        layers[method] = nn.RGATConv(hidden, hidden, g.num_edge_types, bundles=bundles,
                                     **options).cuda()
    return layers


def hgt_layers(metadata, hidden, bundles_dir, ablation=False):
    from torch_geometric.nn import HGTConv
    layers = {"pyg": HGTConv(hidden, hidden, metadata, heads=1).cuda()}
    methods = SCHEDULES["hgt"] if ablation else {
        m: SCHEDULES["hgt"]["compact"] for m in ("kge", "kge+graph")}
    for method, (name, options) in methods.items():
        bundles = nn.load_bundles(bundles_dir, name, variant=f"F{hidden}")
        layers[method] = nn.HGTConv(hidden, hidden, metadata, bundles=bundles,
                                    **options).cuda()
    return layers


def main():
    args = arguments(__doc__, [("--rounds", {"type": int, "default": 5}),
                               ("--model", {"choices": ("rgat", "hgt"), "default": "rgat"}),
                               ("--ablation", {"action": "store_true"}),
                               ("--schedules", {"default": None,
                                                "help": "comma-separated subset of the "
                                                        "model's schedules (--ablation)"})])
    torch.backends.cuda.matmul.allow_tf32 = False
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "model": args.model, "ablation": args.ablation,
               "timing": "median (min, max) of interleaved rounds, CUDA events, us per call",
               "rows": []}
    for name, g in graphs(args):
        for hidden in args.hidden:
            generator = torch.Generator(device="cuda").manual_seed(hidden)
            torch.manual_seed(hidden)
            if args.model == "rgat":
                edge_index = torch.from_numpy(np.stack([g.src, g.dst])).long().cuda()
                edge_type = torch.from_numpy(g.etype).long().cuda()
                x = torch.randn(g.num_nodes, hidden, device="cuda", generator=generator)
                inputs = (x, edge_index, edge_type)
                layers = rgat_layers(g, hidden, args.bundles, args.ablation)
                grad = torch.randn(g.num_nodes, hidden, device="cuda", generator=generator)

                def loss(out):
                    return (out * grad).sum()

                def flat(out):
                    return out
            else:
                x_dict, edge_index_dict, metadata = hetero(g, hidden, generator)
                inputs = (x_dict, edge_index_dict)
                layers = hgt_layers(metadata, hidden, args.bundles, args.ablation)
                grads = {t: torch.randn(x.shape[0], hidden, device="cuda", generator=generator)
                         for t, x in x_dict.items()}

                def loss(out):
                    return sum((o * grads[t]).sum() for t, o in out.items())

                def flat(out):
                    return torch.cat([out[t] for t in sorted(out)])
            state = layers["pyg"].state_dict()
            for layer in layers.values():
                layer.load_state_dict(state)
            if args.ablation:
                # PyG's layer gave the weights; the schedules are compared.
                del layers["pyg"]
                if args.schedules:
                    for method in set(layers) - set(args.schedules.split(",")):
                        del layers[method]
            optimizers = {k: torch.optim.Adam(v.parameters(), lr=1e-3)
                          for k, v in layers.items()}

            def trainer(method):
                layer, optimizer = layers[method], optimizers[method]

                def step():
                    if method == "kge+graph":
                        layer._graph = None
                    optimizer.zero_grad(set_to_none=True)
                    loss(layer(*inputs)).backward()
                    optimizer.step()
                return step

            def inferer(method):
                layer = layers[method]

                def call():
                    if method == "kge+graph":
                        layer._graph = None
                    with torch.no_grad():
                        layer(*inputs)
                return call

            row = {"dataset": name, "nodes": g.num_nodes, "edges": g.num_edges,
                   "edge_types": len(metadata[1]) if args.model == "hgt" else g.num_edge_types,
                   "hidden": hidden, "errors": {}, "peak_bytes": {}, "out_of_memory": []}
            # Outputs and gradients of one step from the same weights.
            outs, param_grads = {}, {}
            training = {m: trainer(m) for m in layers}
            inference = {m: inferer(m) for m in layers}
            for method, layer in layers.items():
                try:
                    layer.zero_grad(set_to_none=True)
                    out = layer(*inputs)
                    loss(out).backward()
                    outs[method] = flat(out).detach()
                    param_grads[method] = {n: p.grad for n, p in layer.named_parameters()
                                           if p.grad is not None}
                    layer.zero_grad(set_to_none=True)
                    del out
                    row["peak_bytes"][method] = peak_bytes(training[method])
                except torch.OutOfMemoryError:
                    row["out_of_memory"].append(method)
                    del training[method], inference[method]
                    layer.zero_grad(set_to_none=True)
                    outs.pop(method, None)
                    param_grads.pop(method, None)
                    torch.cuda.empty_cache()
            if args.ablation and "vanilla" in outs:
                for method in outs:
                    row["errors"][method] = relative(outs[method], outs["vanilla"])
                    row["errors"][f"{method}_grads"] = max(
                        relative(param_grads[method][n], ref)
                        for n, ref in param_grads["vanilla"].items())
            if "pyg" in outs and "kge" in outs:
                row["errors"]["out"] = relative(outs["kge"], outs["pyg"])
                row["errors"]["grads"] = max(relative(param_grads["kge"][n], ref)
                                             for n, ref in param_grads["pyg"].items())
            del outs, param_grads
            row["inference_us"] = timed(inference, row, args.rounds)
            row["training_us"] = timed(training, row, args.rounds)
            for phase in ("inference", "training"):
                times = row[f"{phase}_us"]
                # Speed-ups over the unoptimized schedule (Table 5's base).
                base = "unfused" if "unfused" in SCHEDULES[args.model] else "vanilla"
                for method in times:
                    if args.ablation and method != base and base in times:
                        row[f"{method}_{phase}_speedup_over_{base}"] = (times[base][0] /
                                                                        times[method][0])
                if "pyg" in times and "kge" in times:
                    row[f"kge_{phase}_speedup_over_pyg"] = times["pyg"][0] / times["kge"][0]
                    row[f"kge+graph_{phase}_speedup_over_pyg"] = (times["pyg"][0] /
                                                                  times["kge+graph"][0])
            results["rows"].append(row)
            print(json.dumps(row), flush=True)
            del layers, optimizers, training, inference, inputs
            torch.cuda.empty_cache()
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
