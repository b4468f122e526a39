#!/usr/bin/env python3
"""Probe: the kron solver's options (convert-kron-to-gpu's cached-tiles,
dense-threshold, blocks-per-sm) on the benchmark's sets. `--build DIR`
here compiles the variants; on the GPU machine `--run DIR --data DATA`
times each (GPU time of the Gram matrix, median of 2)."""

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "test" / "gpu"), str(ROOT / "bench")]
sys.path.append(str(ROOT / "python"))

VARIANTS = {
    # Rounds 1-4 (bench/results/2026-11-26-h100-kron/variants-round*.json)
    # chose 16 cached octiles, 8 blocks per SM, no dense primitive, vector
    # passes four at a time, product rows below a density product of 200.
    # Round 5: with the product rows' octiles staged in shared memory, the
    # blocks per SM again.
    "staged_b8": dict(blocks_per_sm=8),
    "staged_b6": dict(blocks_per_sm=6),
    "staged_b10": dict(blocks_per_sm=10),
}
SETS = {"nws160": "unlabeled", "ba160": "unlabeled", "geometric160": "unlabeled",
        "molecules": "molecules", "proteins": "proteins"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", type=pathlib.Path)
    parser.add_argument("--run", type=pathlib.Path)
    parser.add_argument("--data", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    from kron_configs import CONFIGS, bundle_name
    if args.build:
        sys.path.insert(0, str(ROOT / "build" / "python_packages"))
        from kge import kron
        for variant, options in VARIANTS.items():
            for config in set(SETS.values()):
                out = args.build / variant
                out.mkdir(parents=True, exist_ok=True)
                kron.compile_gram(**CONFIGS[config], order="auto", cache=False,
                                  **options).save(out / bundle_name(config, "auto"))
        return
    import bench_kron
    sets = bench_kron.datasets(args.data)
    results = {}
    for variant in VARIANTS:
        for name, config in SETS.items():
            graphs, _ = sets[name]
            k, iterations, seconds, _, pairs = bench_kron.time_kge(
                args.run / variant, config, graphs, "auto", 2)
            results[f"{variant}/{name}"] = seconds
            print(f"{variant:14s} {name:13s} {seconds * 1e3:9.2f} ms "
                  f"failed={(iterations <= 0).sum()}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
