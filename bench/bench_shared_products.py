#!/usr/bin/env python3
"""The products of training against shared negatives
(kge.shared_negatives.PRODUCTS: S = Q E^T, dQ = G E, dE = G^T Q) on tile
against torch.matmul (cuBLAS, TF32: torch.set_float32_matmul_precision
"high"), at the shapes of a chunk (C positives, N negatives, D), for each
compile variant of the products (kge.tile.tuning_variants at TF32: the
heuristic's warpgroup kernel, clusters of 1 and 4, mma.sync), on the GPU
machine.

    python3 bench/bench_shared_products.py --prepare DIR     # here (compiler)
    python3 bench/bench_shared_products.py --bundles DIR --out products.json

Times per call: median of interleaved rounds (CUDA events), once as
called from Python (`us`: with the host's launch work, which is most of a
call at these sizes) and once replayed from a CUDA graph of CALLS calls
(`graph_us`: the GPU's time, as in the trainer's graphed step).
"""

import argparse
import json
import pathlib
import sys

CALLS = 50
SHAPES = [(1024, 512, 128), (1024, 1024, 128), (4096, 512, 128), (8192, 512, 128),
          (1024, 512, 256)]


def prepare(directory):
    from kge import shared_negatives, tile
    for name, text in shared_negatives.PRODUCTS.items():
        query = tile.query(text, name=name)
        for variant, options in tile.tuning_variants(query, "tf32").items():
            out = pathlib.Path(directory) / variant
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{name}.kgebundle").write_text(query.compile(**options).text)


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
    variants = {d.name: TileProducts(load_products(d)) for d in sorted(args.bundles.iterdir())}
    rows = []
    for c, n, d in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(0)
        Q = torch.randn(c, d, device="cuda", generator=g)
        E = torch.randn(n, d, device="cuda", generator=g)
        G = torch.randn(c, n, device="cuda", generator=g)
        fns = {"cublas.scores": lambda: Q @ E.T, "cublas.query_gradient": lambda: G @ E,
               "cublas.negative_gradient": lambda: G.T @ Q}
        for variant, p in variants.items():
            fns[f"{variant}.scores"] = (lambda p=p: p.run("scores", (c, n), Q, Q=Q, E=E))
            fns[f"{variant}.query_gradient"] = (
                lambda p=p: p.run("query_gradient", (c, d), Q, G=G, E=E))
            fns[f"{variant}.negative_gradient"] = (
                lambda p=p: p.run("negative_gradient", (n, d), Q, G=G, Q=Q))
        times = interleaved_per_call(fns)
        graphs = {name: captured(fn) for name, fn in fns.items()}
        replayed = interleaved_per_call({name: g.replay for name, g in graphs.items()}, calls=4)
        row = {"C": c, "N": n, "D": d, "us": {k: v[0] for k, v in times.items()},
               "graph_us": {k: v[0] / CALLS for k, v in replayed.items()}}
        for key in ("us", "graph_us"):
            for variant in ["cublas"] + list(variants):
                row[key][f"{variant}.total"] = sum(row[key][f"{variant}.{p}"] for p in (
                    "scores", "query_gradient", "negative_gradient"))
        rows.append(row)
        print(c, n, d, json.dumps({k: round(v, 1) for k, v in row["graph_us"].items()}),
              flush=True)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
