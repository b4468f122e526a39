"""RGCN training: one step (forward, backward, Adam update) of
kge.nn.RGCNConv (KGE's forward and backward bundles through
torch.autograd) against PyG's RGCNConv and FastRGCNConv with the same
weights, on graphs of Pigeon's dataset shapes (kge.graph.synthetic) and
WordNet.

One layer, hidden size 64 -> 64 (and 128 -> 128), aggr='mean', root weight
and bias, full graph, float32 (TF32 off for PyTorch; KGE's default 3xTF32
for the typed layer's products: FP32 accuracy). The step back-propagates a
fixed output gradient (a loss's) and updates every parameter with
torch.optim.Adam. Per row: time per step (median of interleaved rounds,
CUDA events) of

  kge           kge.nn.RGCNConv (the graph's int32 arrays and RGCN's
                normalization kept across steps, as for a static graph)
  kge+graph     the same, the graph's arrays and normalization recomputed
                every step (what PyG's layer does inside its forward)
  pyg           torch_geometric.nn.RGCNConv
  pyg_fast      torch_geometric.nn.FastRGCNConv (per-edge weights: runs
                out of memory on large graphs)

the largest relative difference of KGE's gradients from PyG's after one
step, and the peak memory of PyTorch's allocator during one step.

    python3 bench/bench_rgcn_training.py --bundles .carry/graph --out results.json
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


def main():
    args = arguments(__doc__, [("--rounds", {"type": int, "default": 5})])
    from torch_geometric.nn import FastRGCNConv, RGCNConv
    torch.backends.cuda.matmul.allow_tf32 = False
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "timing": "median (min, max) of interleaved rounds, CUDA events, us per step",
               "rows": []}
    for name, g in graphs(args):
        edge_index = torch.from_numpy(np.stack([g.src, g.dst])).long().cuda()
        edge_type = torch.from_numpy(g.etype).long().cuda()
        types = g.num_edge_types
        for hidden in args.hidden:
            generator = torch.Generator(device="cuda").manual_seed(hidden)
            x = torch.randn(g.num_nodes, hidden, device="cuda", generator=generator)
            grad = torch.randn(g.num_nodes, hidden, device="cuda", generator=generator)
            layers = {"pyg": RGCNConv(hidden, hidden, types, aggr="mean").cuda()}
            layers["pyg_fast"] = FastRGCNConv(hidden, hidden, types, aggr="mean").cuda()
            bundles = nn.load_bundles(args.bundles, variant=f"F{hidden}")
            layers["kge"] = nn.RGCNConv(hidden, hidden, types, bundles=bundles).cuda()
            layers["kge+graph"] = nn.RGCNConv(hidden, hidden, types, bundles=bundles).cuda()
            state = layers["pyg"].state_dict()
            for layer in layers.values():
                layer.load_state_dict(state)
            optimizers = {k: torch.optim.Adam(v.parameters(), lr=1e-3) for k, v in layers.items()}

            def stepper(method):
                layer, optimizer = layers[method], optimizers[method]

                def step():
                    if method == "kge+graph":
                        layer._graph = None
                    optimizer.zero_grad(set_to_none=True)
                    layer(x, edge_index, edge_type).backward(grad)
                    optimizer.step()
                return step

            fns = {method: stepper(method) for method in layers}
            row = {"dataset": name, "nodes": g.num_nodes, "edges": g.num_edges,
                   "edge_types": types, "hidden": hidden, "grad_errors": {},
                   "peak_bytes": {}, "out_of_memory": []}
            # Gradients of one step from the same weights, against PyG's.
            grads = {}
            for method, layer in layers.items():
                try:
                    layer.zero_grad(set_to_none=True)
                    layer(x, edge_index, edge_type).backward(grad)
                    grads[method] = {n: p.grad.double() for n, p in layer.named_parameters()}
                    layer.zero_grad(set_to_none=True)
                    row["peak_bytes"][method] = peak_bytes(fns[method])
                except torch.OutOfMemoryError:
                    row["out_of_memory"].append(method)
                    del fns[method]
                    layer.zero_grad(set_to_none=True)
                    torch.cuda.empty_cache()
            if "pyg" in grads:
                for method, g_ in grads.items():
                    row["grad_errors"][method] = max(
                        float((g_[n] - ref).abs().max() / ref.abs().max().clamp(min=1e-30))
                        for n, ref in grads["pyg"].items())
            del grads
            row["times_us"] = interleaved_per_call(fns, rounds=args.rounds)
            pyg_times = [v[0] for k, v in row["times_us"].items() if k.startswith("pyg")]
            if pyg_times:
                best = min(pyg_times)
                row["kge_speedup_over_best_pyg"] = best / row["times_us"]["kge"][0]
                row["kge_graph_speedup_over_best_pyg"] = best / row["times_us"]["kge+graph"][0]
            results["rows"].append(row)
            print(json.dumps(row), flush=True)
            del layers, optimizers, fns, x, grad
            torch.cuda.empty_cache()
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
