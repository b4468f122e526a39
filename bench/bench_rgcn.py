"""RGCN inference: KGE's graph bundle against PyG's RGCNConv and
FastRGCNConv, on graphs of Pigeon's dataset shapes (kge.graph.synthetic:
power-law endpoints, Zipf edge and node types) and WordNet.

One layer, hidden size 64 -> 64 (and 128 -> 128), aggr='mean', root
weight and bias, full graph, float32 (TF32 off for PyTorch, KGE's default
3xTF32 for the typed layer's tensor cores: FP32 accuracy). Per row: time
per call (median of interleaved rounds, CUDA events) of

  kge           the layer (norm given: computed once per graph)
  kge+norm      the layer and RGCN's per-relation mean normalization
                computed with torch each call (what PyG's layer does
                inside its forward)
  pyg           torch_geometric.nn.RGCNConv
  pyg_fast      torch_geometric.nn.FastRGCNConv (per-edge weights: runs
                out of memory on large graphs)

and the largest relative difference of each output from PyG's, peak memory
of PyTorch's allocator during one call.

    python3 bench/bench_rgcn.py --bundles /tmp/gb --out results.json
"""

import argparse
import json
import pathlib
import sys

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
from kge import graph  # noqa: E402
from bench_score_functions import interleaved_per_call, peak_bytes  # noqa: E402

DATASETS = ("aifb", "mutag", "bgs", "fb15k", "biokg", "am", "wikikg2")


def norm_torch(dst, etype, nodes, types):
    group = dst.long() * types + etype.long()
    counts = torch.bincount(group, minlength=nodes * types)
    return (1.0 / counts[group]).float()


def arguments(doc, extra=()):
    """The RGCN benchmarks' command line (`extra`: (flag, keywords) pairs
    of their own options)."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundles", type=pathlib.Path, required=True)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--hidden", type=int, nargs="*", default=[64, 128])
    parser.add_argument("--wordnet", type=pathlib.Path,
                        help="a .npz of kge.graph.wordnet() arrays (src, dst, etype, ntype)")
    for flag, keywords in extra:
        parser.add_argument(flag, **keywords)
    return parser.parse_args()


def graphs(args):
    """(name, graph) of the datasets asked for: Pigeon's shapes, then
    WordNet when its arrays are given."""
    result = [(name, graph.synthetic(name, seed=0)) for name in args.datasets]
    if args.wordnet:
        w = dict(np.load(args.wordnet))
        result.append(("wordnet", graph.HeteroGraph(w["src"], w["dst"], w["etype"], w["ntype"],
                                                     int(w["etype"].max()) + 1, 4)))
    return result


def main():
    args = arguments(__doc__)
    import kge_runtime as rt
    from torch_geometric.nn import FastRGCNConv, RGCNConv
    torch.backends.cuda.matmul.allow_tf32 = False
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "timing": "median (min, max) of interleaved rounds, CUDA events, us",
               "rows": []}
    for name, g in graphs(args):
        src = torch.from_numpy(g.src).cuda()
        dst = torch.from_numpy(g.dst).cuda()
        etype = torch.from_numpy(g.etype).cuda()
        edge_index = torch.stack([src, dst]).long()
        edge_type = etype.long()
        types = g.num_edge_types
        norm = norm_torch(dst, etype, g.num_nodes, types)
        for hidden in args.hidden:
            bundle = args.bundles / f"rgcn.F{hidden}.kgebundle"
            program = rt.Program(bundle.read_text())
            generator = torch.Generator(device="cuda").manual_seed(hidden)
            x = torch.randn(g.num_nodes, hidden, device="cuda", generator=generator)
            conv = RGCNConv(hidden, hidden, types, aggr="mean").cuda()
            fast = FastRGCNConv(hidden, hidden, types, aggr="mean").cuda()
            with torch.no_grad():
                fast.weight.copy_(conv.weight)
                fast.root.copy_(conv.root)
                fast.bias.copy_(conv.bias)
            weight, root, bias = conv.weight.detach(), conv.root.detach(), conv.bias.detach()

            def kge():
                return program(x=x, weight=weight, root=root, bias=bias, src=src, dst=dst,
                               edge_type=etype, norm=norm)["out"]

            def kge_norm():
                return program(x=x, weight=weight, root=root, bias=bias, src=src, dst=dst,
                               edge_type=etype,
                               norm=norm_torch(dst, etype, g.num_nodes, types))["out"]

            fns = {"kge": kge, "kge+norm": kge_norm,
                   "pyg": lambda: conv(x, edge_index, edge_type),
                   "pyg_fast": lambda: fast(x, edge_index, edge_type)}
            row = {"dataset": name, "nodes": g.num_nodes, "edges": g.num_edges,
                   "edge_types": types, "hidden": hidden, "errors": {}, "peak_bytes": {},
                   "out_of_memory": []}
            with torch.no_grad():
                reference = fns["pyg"]().double()
                for method in list(fns):
                    try:
                        out = fns[method]()
                        row["errors"][method] = float(
                            (out.double() - reference).abs().max() / reference.abs().max())
                        row["peak_bytes"][method] = peak_bytes(fns[method])
                    except torch.OutOfMemoryError:
                        row["out_of_memory"].append(method)
                        del fns[method]
                        torch.cuda.empty_cache()
                row["times_us"] = interleaved_per_call(fns, rounds=5)
            best = min(v[0] for k, v in row["times_us"].items() if k.startswith("pyg"))
            row["kge_speedup_over_best_pyg"] = best / row["times_us"]["kge"][0]
            row["kge_norm_speedup_over_best_pyg"] = best / row["times_us"]["kge+norm"][0]
            results["rows"].append(row)
            print(json.dumps(row), flush=True)
            del conv, fast, x
            torch.cuda.empty_cache()
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
