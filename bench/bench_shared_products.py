#!/usr/bin/env python3
"""The products of training against shared negatives
(kge.shared_negatives.PRODUCTS: the scores of every chunk and side
S = Q E^T and, in backward, dQ = G E and dE = G^T Q, one segment product
each) on tile against cuBLAS (TF32: torch.set_float32_matmul_precision
"high") as PyTorch-BigGraph computes them — one torch.bmm per product
over [keys, C, ...] batches — and as one torch.matmul per chunk and side,
at the shapes of a step (keys = 2 x chunks, C positives per chunk, N
negatives, D), on the GPU machine.

    python3 bench/bench_shared_products.py --prepare DIR     # here (compiler)
    python3 bench/bench_shared_products.py --bundles DIR --out products.json

Times per step's three products: median of interleaved rounds (CUDA
events) of replays of a CUDA graph of CALLS calls (the GPU's time, as in
the trainer's graphed step), per product and in total; and the largest
error of each product against float64, relative to its largest value.
"""

import argparse
import json
import pathlib
import sys

CALLS = 20
SHAPES = [(8, 1024, 512, 128), (16, 1024, 512, 128), (8, 1024, 512, 256),
          (8, 512, 256, 128), (2, 4096, 1024, 128)]


def prepare(directory):
    from kge import shared_negatives
    shared_negatives.save_products(shared_negatives.compile_products("tf32"), directory)


def captured(fn):
    """A CUDA graph of CALLS calls of `fn` (warmed up on the capture
    stream first)."""
    import torch
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for _ in range(CALLS):
            fn()
    return graph


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prepare", type=pathlib.Path)
    parser.add_argument("--bundles", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    if args.prepare:
        return prepare(args.prepare)
    import torch
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from bench_score_functions import interleaved_per_call
    from kge.shared_negatives import TileProducts, load_products
    torch.set_float32_matmul_precision("high")
    tile = TileProducts(load_products(args.bundles))
    rows = []
    for keys, c, n, d in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(keys * c + n + d)
        m = keys * c
        Q = torch.randn(m, d, device="cuda", generator=g)
        E = torch.randn(keys, n, d, device="cuda", generator=g)
        G = torch.randn(m, n, device="cuda", generator=g)
        key = torch.arange(keys, device="cuda").repeat_interleave(c)
        S, dQ, dE = Q.new_empty(m, n), torch.empty_like(Q), torch.zeros_like(E)
        q3, g3 = Q.view(keys, c, d), G.view(keys, c, n)
        fns = {
            "tile.scores": lambda: tile.run("scores", S, Q=Q, E=E, key=key),
            "tile.query_gradient": lambda: tile.run("query_gradient", dQ, G=G, E=E, key=key),
            "tile.negative_gradient": lambda: tile.run("negative_gradient", dE.zero_(), G=G,
                                                       Q=Q, key=key),
            "bmm.scores": lambda: torch.bmm(q3, E.transpose(1, 2)),
            "bmm.query_gradient": lambda: torch.bmm(g3, E),
            "bmm.negative_gradient": lambda: torch.bmm(g3.transpose(1, 2), q3),
            "matmul.scores": lambda: [q3[k] @ E[k].T for k in range(keys)],
            "matmul.query_gradient": lambda: [g3[k] @ E[k] for k in range(keys)],
            "matmul.negative_gradient": lambda: [g3[k].T @ q3[k] for k in range(keys)],
        }
        for name in ("scores", "query_gradient", "negative_gradient"):
            fns["tile." + name]()
        qd, ed, gd = q3.double(), E.double(), g3.double()
        wanted = {"scores": (S.view(keys, c, n), torch.bmm(qd, ed.transpose(1, 2))),
                  "query_gradient": (dQ.view(keys, c, d), torch.bmm(gd, ed)),
                  "negative_gradient": (dE, torch.bmm(gd.transpose(1, 2), qd))}
        errors = {k: ((got.double() - want).abs().max() / want.abs().max()).item()
                  for k, (got, want) in wanted.items()}
        graphs = {name: captured(fn) for name, fn in fns.items()}
        times = interleaved_per_call({name: gr.replay for name, gr in graphs.items()}, calls=4)
        us = {name: t[0] / CALLS for name, t in times.items()}
        for way in ("tile", "bmm", "matmul"):
            us[way + ".total"] = sum(us[f"{way}.{p}"] for p in wanted)
        row = {"keys": keys, "C": c, "N": n, "D": d, "graph_us": us, "tile_errors": errors,
               "bmm_over_tile": us["bmm.total"] / us["tile.total"],
               "matmul_over_tile": us["matmul.total"] / us["tile.total"]}
        rows.append(row)
        print(keys, c, n, d, json.dumps({k: round(v, 1) for k, v in us.items()}),
              json.dumps(errors), flush=True)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
