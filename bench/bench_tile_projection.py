#!/usr/bin/env python3
"""A matrix per row's key through the tile level's segment iterators:
TransR's projection (each edge's head row times its relation's matrix) on
FB15k-like sizes, D = 512, B = 16384 edges, relations drawn uniformly (as
the issue measures TransR) and with Zipf skew.

Bundles: test/gpu/build_tile_bundles.py --parts gather
(--bundles, default .carry/tile/gather/projection.<shape>.kgebundle).

Per shape: time per call (CUDA events, interleaved with the baseline), the
bytes that must move at least (each distinct relation matrix and head row
once, the output once) and that volume's time at the measured copy
bandwidth. Baselines: PyTorch as PyKEEN's TransR computes it (the batch's
relation matrices gathered, then bmm), and PyG's segment_matmul (pyg_lib,
the grouped GEMM of HeteroLinear / RGCNConv) after sorting the rows by
relation, when pyg_lib is importable. `--once` runs every KGE kernel once (for ncu:
ncu --metrics dram__bytes_read.sum -k regex:project python3 ... --once).
"""

import argparse
import json
import pathlib
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_score_functions import copy_bandwidth, interleaved_per_call  # noqa: E402

ROOT = HERE.parent
SHAPES = ("t16", "t32n128", "tf32x3", "tf32")


def zipf(g, count, rows, exponent=1.1):
    w = 1.0 / torch.arange(1, rows + 1, dtype=torch.float64) ** exponent
    return torch.multinomial(w, count, replacement=True, generator=g)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundles", type=pathlib.Path, default=ROOT / ".carry" / "tile" / "gather")
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--once", action="store_true")
    parser.add_argument("--batch", type=int, default=16384)
    args = parser.parse_args()
    import kge_runtime as rt
    torch.backends.cuda.matmul.allow_tf32 = False
    entities, relations, D, B = 14951, 1345, 512, args.batch
    g = torch.Generator().manual_seed(0)
    E = torch.randn(entities, D, generator=g).cuda()
    W = torch.randn(relations, D, D, generator=g).cuda() / D ** 0.5
    programs = {s: rt.Program((args.bundles / f"projection.{s}.kgebundle").read_text())
                for s in SHAPES}
    try:
        import pyg_lib
    except ImportError:
        pyg_lib = None
    results = {"device": torch.cuda.get_device_name(), "B": B, "D": D, "rows": []}
    bandwidth = None if args.once else copy_bandwidth()
    results["copy_bandwidth_GBps"] = bandwidth and bandwidth / 1e9
    for draw in ("uniform", "zipf"):
        h = zipf(g, B, entities, 0.7).to(torch.int32).cuda()
        r = (torch.randint(0, relations, (B,), generator=g) if draw == "uniform"
             else zipf(g, B, relations)).to(torch.int64).cuda()
        Y = torch.empty(B, D, device="cuda")
        fns = {f"kge_{s}": (lambda p=p: p(E=E, W=W, h=h, r=r, Y=Y)) for s, p in programs.items()}
        if args.once:
            for fn in fns.values():
                fn()
            torch.cuda.synchronize()
            continue
        # What PyTorch users write (PyKEEN's TransR gathers the relation
        # matrices of the batch): B x D x D floats gathered, then bmm.
        fns["torch_bmm_gathered"] = lambda h=h, r=r: torch.bmm(
            E[h.long()].unsqueeze(1), W[r]).squeeze(1)
        if pyg_lib is not None:
            def pyg(h=h, r=r):
                order = torch.argsort(r)
                ptr = torch.zeros(relations + 1, dtype=torch.int64, device="cuda")
                ptr[1:] = torch.cumsum(torch.bincount(r, minlength=relations), 0)
                out = pyg_lib.ops.segment_matmul(E[h[order].long()], ptr, W)
                result = torch.empty_like(out)
                result[order] = out
                return result
            fns["pyg_segment_matmul"] = pyg
        t = interleaved_per_call(fns, rounds=5, calls=3)
        expected = torch.einsum("bk,bkj->bj", E.double()[h.long()][:4096],
                                W.double()[r.long()[:4096]])
        errors = {}
        for s, fn in fns.items():
            out = (fn(), Y)[1] if s.startswith("kge") else fn()
            errors[s] = float((out[:4096].double() - expected).abs().max() / expected.abs().max())
        distinct = (torch.unique(r).numel() * D * D + torch.unique(h).numel() * D + B * D) * 4
        floor_us = distinct / bandwidth * 1e6
        row = {"draw": draw, "times_us": t, "errors": errors,
               "speedup_vs_torch_bmm": {s: t["torch_bmm_gathered"][0] / t[f"kge_{s}"][0]
                                        for s in SHAPES},
               "distinct_relations": int(torch.unique(r).numel()),
               "distinct_bytes": distinct, "floor_us": floor_us,
               "time_over_floor": {s: v[0] / floor_us for s, v in t.items()}}
        if "pyg_segment_matmul" in t:
            row["speedup_vs_pyg"] = {s: t["pyg_segment_matmul"][0] / t[f"kge_{s}"][0]
                                     for s in SHAPES}
        results["rows"].append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
