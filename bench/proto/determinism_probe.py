"""Bitwise reproducibility and cost of the matrix kernels' deterministic
layout (GPU machine): for each variant bundle <model>.pos.D512.<variant>,
how many of 20 calls with identical inputs (FB15k-like batch, B = 16384)
differ bitwise from the first, the largest relative difference, and the
time per call, the variants' rounds interleaved.

    PYTHONPATH=/tmp/kge-runtime/python_packages python3 bench/proto/determinism_probe.py \\
        .carry/variants det anyorder --models transr rescal
"""
import argparse
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_score_functions import interleaved_per_call  # noqa: E402
from vector_probe_lib import fb15k_call  # noqa: E402
import kge_runtime  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("directory", type=pathlib.Path)
parser.add_argument("variants", nargs="+")
parser.add_argument("--models", nargs="*", default=["transr", "rescal"])
parser.add_argument("--calls", type=int, default=20)
args = parser.parse_args()
results = []
for model in args.models:
    base, inputs, _, _ = fb15k_call(args.directory / f"{model}.pos.D512.{args.variants[0]}.kgebundle")
    row = {"model": model}
    fns = {}
    for variant in args.variants:
        program = kge_runtime.Program(
            (args.directory / f"{model}.pos.D512.{variant}.kgebundle").read_text())
        first = program(**inputs)["score"].clone()
        differing, worst = 0, 0.0
        for _ in range(args.calls):
            score = program(**inputs)["score"]
            if not torch.equal(score, first):
                differing += 1
                worst = max(worst, ((score - first).abs() / first.abs().clamp_min(1e-30)).max().item())
        row[variant] = {"differing_calls": differing, "calls": args.calls, "max_relative_difference": worst}
        fns[variant] = lambda program=program: program(**inputs)
    for variant, (median, best, worst) in interleaved_per_call(fns, rounds=15).items():
        row[variant]["us_per_call"] = median
    results.append(row)
    print(model, "  ".join(f"{v}: {row[v]['differing_calls']}/{args.calls} differ "
                           f"(max rel {row[v]['max_relative_difference']:.1e}), {row[v]['us_per_call']:.1f} us"
                           for v in args.variants), flush=True)
print(json.dumps(results))
