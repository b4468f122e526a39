#!/usr/bin/env python3
"""TransR and RESCAL with their matrix products through the tile level
(kge-lower-to-gpu's default: the edges sorted by relation, each relation's
matrix read once per tile of its edges, 3xTF32 mma.sync, the reduce
output) against bvec's fused kernel (fuse-matrix-products=1, the path
before) and PyTorch (the batch's matrices gathered, then bmm; eager and
torch.compile), in the same interleaved rounds.

Edges: FB15k-sized tables (14,951 entities x 512, 1,345 relations: 512 x
512 matrices), B edges whose relations are drawn uniformly (the issue's
measurement) or from the FB15k-like graph's triples (bench/datasets.py:
skewed entities and relations). Per row: time per call, the distinct bytes
a call must read (every distinct matrix, relation row and entity row once,
indices, scores), that volume's time at the copy bandwidth measured in the
same run, and each kernel's ratio to it.

    python3 bench/bench_matrix_products.py --bundles .carry/matrix --out matrix.json
    ncu --metrics dram__bytes_read.sum python3 bench/bench_matrix_products.py \\
        --bundles .carry/matrix --once tile      (or: --once fused)

Bundles: test/gpu/build_bundles.py --examples transr rescal --modes pos
--lengths 512 (<model>.pos.D512 through tile, <model>.pos.fused.D512 fused).
"""

import argparse
import json
import pathlib
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import datasets  # noqa: E402
from bench_score_functions import TORCH, copy_bandwidth, interleaved_per_call  # noqa: E402

ENTITIES, RELATIONS, D = 14951, 1345, 512


def make_tables(model, generator):
    E = torch.randn(ENTITIES, D, generator=generator, device="cuda") * 0.1
    P = torch.randn(RELATIONS, D, D, generator=generator, device="cuda") / D ** 0.5
    if model == "transr":
        R = torch.randn(RELATIONS, D, generator=generator, device="cuda") * 0.1
        return {"Eemb": E, "Remb": R, "Pm": P}
    return {"Eemb": E, "Pm": P}


def distinct_bytes(model, tables, h, r, t):
    """What one call must read at least (and write: the scores)."""
    relations = torch.unique(r).numel()
    entities = torch.unique(torch.cat([h, t])).numel()
    total = relations * D * D * 4 + entities * D * 4 + 3 * h.numel() * 8 + h.numel() * 4
    if model == "transr":
        total += relations * D * 4
    return total


def kernel_times(fn, calls=20):
    """Mean GPU time per call of each kernel (and memset) `fn` launches."""
    fn()
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    totals = {}
    for average in prof.key_averages():
        total = getattr(average, "self_device_time_total", None)
        if total is None:  # older torch
            total = average.self_cuda_time_total
        if total > 0:
            totals[average.key] = total / calls
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundles", type=pathlib.Path, required=True)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--models", nargs="*", default=["transr", "rescal"])
    parser.add_argument("--batches", type=int, nargs="*", default=[16384, 4096])
    parser.add_argument("--once", choices=["tile", "fused"],
                        help="run that kernel once per model, batch and draw (for ncu)")
    parser.add_argument("--profile", choices=["tile", "fused"],
                        help="per-kernel GPU time of that path (torch.profiler, mean of 20 calls) "
                             "per model, batch and draw")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--extra", nargs="*", default=[], metavar="NAME=SUFFIX",
                        help="more bundles of each model timed beside (<model>.pos.D512SUFFIX), "
                             "for variant studies")
    args = parser.parse_args()
    import kge_runtime as rt
    torch.backends.cuda.matmul.allow_tf32 = False
    triples, entities, relations = datasets.fb15k_like()
    assert (entities, relations) == (ENTITIES, RELATIONS)
    triples = torch.from_numpy(triples).cuda()
    bandwidth = None if args.once or args.profile else copy_bandwidth()
    results = {"device": torch.cuda.get_device_name(), "D": D, "entities": ENTITIES,
               "relations": RELATIONS, "copy_bandwidth_GBps": bandwidth and bandwidth / 1e9,
               "torch": torch.__version__,
               "timing": "median (min, max) of interleaved rounds of back-to-back calls, CUDA events",
               "rows": []}
    generator = torch.Generator(device="cuda").manual_seed(0)
    for model in args.models:
        tables = make_tables(model, generator)
        programs = {"tile": rt.Program((args.bundles / f"{model}.pos.D{D}.kgebundle").read_text()),
                    "fused": rt.Program((args.bundles / f"{model}.pos.fused.D{D}.kgebundle")
                                        .read_text())}
        for extra in args.extra:
            name, suffix = extra.split("=", 1)
            path = args.bundles / f"{model}.pos.D{D}{suffix}.kgebundle"
            if path.exists():
                programs[name] = rt.Program(path.read_text())
        compiled = None if args.no_compile or args.once or args.profile else torch.compile(TORCH[model], dynamic=False)
        for batch in args.batches:
            for draw in ("uniform", "fb15k"):
                sample = triples[torch.randint(0, len(triples), (batch,), generator=generator,
                                               device="cuda")]
                h, r, t = (sample[:, c].contiguous() for c in range(3))
                if draw == "uniform":
                    r = torch.randint(0, RELATIONS, (batch,), generator=generator, device="cuda")
                inputs = {**tables, "h": h, "r": r, "t": t}
                fns = {}
                for name, program in programs.items():
                    ordered = [inputs[p["name"]] for p in program.signature["params"]
                               if p["role"] != "result"]
                    fns[f"kge_{name}"] = lambda p=program, o=ordered: p.run(*o)
                if args.once:
                    fns[f"kge_{args.once}"]()
                    torch.cuda.synchronize()
                    continue
                if args.profile:
                    row = {"model": model, "batch": batch, "draw": draw, "path": args.profile,
                           "kernels_us": kernel_times(fns[f"kge_{args.profile}"])}
                    results["rows"].append(row)
                    print(json.dumps(row), flush=True)
                    continue
                fns["torch_eager"] = lambda: TORCH[model](**inputs)
                if compiled is not None:
                    fns["torch_compile"] = lambda: compiled(**inputs)
                times = interleaved_per_call(fns, rounds=7)
                reference = TORCH[model](**{k: v.double() for k, v in tables.items()},
                                         h=h, r=r, t=t)
                errors = {n: float(((fn().double() - reference).norm() / reference.norm()).item())
                          for n, fn in fns.items()}
                volume = distinct_bytes(model, tables, h, r, t)
                floor_us = volume / bandwidth * 1e6
                row = {"model": model, "batch": batch, "draw": draw,
                       "distinct_relations": int(torch.unique(r).numel()),
                       "times_us": times, "relative_errors": errors,
                       "distinct_bytes": volume, "floor_us": floor_us,
                       "time_over_floor": {n: v[0] / floor_us for n, v in times.items()},
                       "tile_speedup": {n: v[0] / times["kge_tile"][0] for n, v in times.items()}}
                results["rows"].append(row)
                print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
