"""RGAT inference and training: kge.nn.RGATConv (KGE's forward and
backward bundles through torch.autograd) against PyG's RGATConv with the
same weights, on graphs of Pigeon's dataset shapes (kge.graph.synthetic)
and WordNet.

One layer, hidden size 64 -> 64 (and 128 -> 128), one head, additive
self-attention across relations (PyG's defaults), bias, full graph,
float32 (TF32 off for PyTorch; KGE's default 3xTF32 for the typed layer's
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

    python3 bench/bench_rgat.py --bundles .carry/graph --out results.json
"""

import json
import pathlib
import sys

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
from kge import nn  # noqa: E402
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


def main():
    args = arguments(__doc__, [("--rounds", {"type": int, "default": 5})])
    from torch_geometric.nn import RGATConv
    torch.backends.cuda.matmul.allow_tf32 = False
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "timing": "median (min, max) of interleaved rounds, CUDA events, us per call",
               "rows": []}
    for name, g in graphs(args):
        edge_index = torch.from_numpy(np.stack([g.src, g.dst])).long().cuda()
        edge_type = torch.from_numpy(g.etype).long().cuda()
        types = g.num_edge_types
        for hidden in args.hidden:
            generator = torch.Generator(device="cuda").manual_seed(hidden)
            x = torch.randn(g.num_nodes, hidden, device="cuda", generator=generator)
            grad = torch.randn(g.num_nodes, hidden, device="cuda", generator=generator)
            torch.manual_seed(hidden)
            layers = {"pyg": RGATConv(hidden, hidden, types).cuda()}
            torch.nn.init.normal_(layers["pyg"].bias)
            bundles = nn.load_bundles(args.bundles, "rgat", variant=f"F{hidden}")
            layers["kge"] = nn.RGATConv(hidden, hidden, types, bundles=bundles).cuda()
            layers["kge+graph"] = nn.RGATConv(hidden, hidden, types, bundles=bundles).cuda()
            state = layers["pyg"].state_dict()
            for layer in layers.values():
                layer.load_state_dict(state)
            optimizers = {k: torch.optim.Adam(v.parameters(), lr=1e-3)
                          for k, v in layers.items()}

            def trainer(method):
                layer, optimizer = layers[method], optimizers[method]

                def step():
                    if method == "kge+graph":
                        layer._graph = None
                    optimizer.zero_grad(set_to_none=True)
                    layer(x, edge_index, edge_type).backward(grad)
                    optimizer.step()
                return step

            def inferer(method):
                layer = layers[method]

                def call():
                    if method == "kge+graph":
                        layer._graph = None
                    with torch.no_grad():
                        layer(x, edge_index, edge_type)
                return call

            row = {"dataset": name, "nodes": g.num_nodes, "edges": g.num_edges,
                   "edge_types": types, "hidden": hidden, "errors": {}, "peak_bytes": {},
                   "out_of_memory": []}
            # Outputs and gradients of one step from the same weights.
            outs, grads = {}, {}
            training = {m: trainer(m) for m in layers}
            inference = {m: inferer(m) for m in layers}
            for method, layer in layers.items():
                try:
                    layer.zero_grad(set_to_none=True)
                    out = layer(x, edge_index, edge_type)
                    out.backward(grad)
                    outs[method] = out.detach()
                    grads[method] = {n: p.grad for n, p in layer.named_parameters()
                                     if p.grad is not None}
                    layer.zero_grad(set_to_none=True)
                    del out
                    row["peak_bytes"][method] = peak_bytes(training[method])
                except torch.OutOfMemoryError:
                    row["out_of_memory"].append(method)
                    del training[method], inference[method]
                    layer.zero_grad(set_to_none=True)
                    outs.pop(method, None)
                    grads.pop(method, None)
                    torch.cuda.empty_cache()
            if "pyg" in outs and "kge" in outs:
                row["errors"]["out"] = relative(outs["kge"], outs["pyg"])
                row["errors"]["grads"] = max(relative(grads["kge"][n], ref)
                                             for n, ref in grads["pyg"].items())
            del outs, grads
            row["inference_us"] = timed(inference, row, args.rounds)
            row["training_us"] = timed(training, row, args.rounds)
            for phase in ("inference", "training"):
                times = row[f"{phase}_us"]
                if "pyg" in times and "kge" in times:
                    row[f"kge_{phase}_speedup_over_pyg"] = times["pyg"][0] / times["kge"][0]
                    row[f"kge+graph_{phase}_speedup_over_pyg"] = (times["pyg"][0] /
                                                                  times["kge+graph"][0])
            results["rows"].append(row)
            print(json.dumps(row), flush=True)
            del layers, optimizers, training, inference, x, grad
            torch.cuda.empty_cache()
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
