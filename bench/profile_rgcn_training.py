"""Per-kernel times of one RGCN training step of kge.nn.RGCNConv (forward,
backward, Adam) through torch.profiler: which kernels a step spends its
time in.

    python3 bench/profile_rgcn_training.py --bundles .carry/graph --dataset biokg
"""

import argparse
import pathlib
import sys

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
from kge import graph, nn  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundles", type=pathlib.Path, required=True)
    parser.add_argument("--dataset", default="biokg")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--wordnet", type=pathlib.Path)
    args = parser.parse_args()
    if args.dataset == "wordnet":
        w = dict(np.load(args.wordnet))
        g = graph.HeteroGraph(w["src"], w["dst"], w["etype"], w["ntype"],
                              int(w["etype"].max()) + 1, 4)
    else:
        g = graph.synthetic(args.dataset, seed=0)
    h = args.hidden
    edge_index = torch.from_numpy(np.stack([g.src, g.dst])).long().cuda()
    edge_type = torch.from_numpy(g.etype).long().cuda()
    x = torch.randn(g.num_nodes, h, device="cuda")
    grad = torch.randn(g.num_nodes, h, device="cuda")
    conv = nn.RGCNConv(h, h, g.num_edge_types,
                       bundles=nn.load_bundles(args.bundles, variant=f"F{h}")).cuda()
    optimizer = torch.optim.Adam(conv.parameters(), lr=1e-3)

    def step():
        optimizer.zero_grad(set_to_none=True)
        conv(x, edge_index, edge_type).backward(grad)
        optimizer.step()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=60))


if __name__ == "__main__":
    main()
