#!/usr/bin/env python3
"""Probe: the kron solver's options (convert-kron-to-gpu's cached-tiles,
dense-threshold, blocks-per-sm) on the benchmark's sets. `--build DIR`
here compiles the variants; on the GPU machine `--run DIR --data DATA`
times each (GPU time of the Gram matrix, median of 2)."""

import argparse
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "test" / "gpu"), str(ROOT / "bench")]
sys.path.append(str(ROOT / "python"))

VARIANTS = {
    # Rounds 1-5 (bench/results/2026-11-26-h100-kron/variants-round*.json)
    # chose 16 cached octiles, 8 blocks per SM, no dense primitive, vector
    # passes four at a time, product rows below a density product of 200,
    # their octiles staged in shared memory.
    #
    # The ablation (the solver paper's Figure 9), each step keeping the
    # ones before: octile pairs over the non-empty tiles only, each octile
    # pair dense (64 x 64), natural order, one block per pair; + reorder
    # (auto: natural, RCM or PBR per graph); + adaptive dense / sparse
    # octile pairs (dense where the non-zero counts multiply to 1,024);
    # + compact (sparse octile pairs throughout); + dynamic scheduling
    # (1,024 resident blocks taking pairs from a counter, costliest first);
    # + product rows (KGE's primitive for sparse octiles, factored into
    # two sparse products for constant edge kernels: the default).
    "a_tiles": dict(order="natural", product_rows=False, dense_threshold=0, blocks=65536),
    "b_reorder": dict(product_rows=False, dense_threshold=0, blocks=65536),
    "c_adaptive": dict(product_rows=False, dense_threshold=1024, blocks=65536),
    "d_compact": dict(product_rows=False, blocks=65536),
    "e_dynsched": dict(product_rows=False),
    "f_rows": dict(),
    # The resident blocks per SM again (the solution no longer stored).
    "g_rows_b6": dict(blocks_per_sm=6),
    "g_rows_b12": dict(blocks_per_sm=12),
    "g_rows_b16": dict(blocks_per_sm=16),
    # The adaptive switch again on the default kernel (with the dense
    # primitive's row summed in eight partial sums, an experiment not kept:
    # variants-dense-partial-sums.json, no faster than one chain).
    "h_dense1024": dict(dense_threshold=1024),
    "h_dense2048": dict(dense_threshold=2048),
    # The register-blocked dense primitive: every octile pair dense, and
    # dense from a product of non-zero counts of 256, 512.
    "i_dense1": dict(dense_threshold=1),
    "i_dense128": dict(dense_threshold=128),
    # The default (dense from 128) at 6 and 4 blocks per SM (85 and 128
    # registers: the solver spills at 64).
    "j_b6": dict(blocks_per_sm=6),
    "j_b4": dict(blocks_per_sm=4),
    "j_b4_tiles32": dict(blocks_per_sm=4, cached_tiles=32),
    "i_dense256": dict(dense_threshold=256),
    "i_dense512": dict(dense_threshold=512),
    # Before/after runs: the previous compiler's f_rows and h_dense1024
    # bundles copied here (--build makes them with the current one).
    "before_f_rows": dict(),
    "before_h_dense1024": dict(dense_threshold=1024),
}
SETS = {"nws160": "unlabeled", "ba160": "unlabeled", "geometric160": "unlabeled",
        "molecules": "molecules", "proteins": "proteins", "dense64": "delta_sqexp"}


def dense_graphs(count=48, nodes=64, seed=5):
    """Complete graphs with random weights, node labels and edge lengths:
    every octile full, the edge kernel (a square exponential) evaluated
    for every pair of non-zeros (the XMV throughput set)."""
    from kge import kron
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        a = np.triu(rng.uniform(0.5, 1.0, (nodes, nodes)), 1)
        length = np.triu(rng.uniform(0.0, 2.0, (nodes, nodes)), 1)
        out.append(kron.LabeledGraph(a + a.T, {"label": rng.integers(0, 3, nodes).astype(float)},
                                     {"length": length + length.T}))
    return out


def fp32_peak():
    """The GPU's FP32 peak (FLOP/s): SMs x 128 lanes x 2 x the maximum SM
    clock (nvidia-smi)."""
    import subprocess
    import torch
    clock = float(subprocess.run(
        ["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
        capture_output=True, text=True, check=True).stdout.split()[0]) * 1e6
    return torch.cuda.get_device_properties(0).multi_processor_count * 128 * 2 * clock


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", type=pathlib.Path)
    parser.add_argument("--run", type=pathlib.Path)
    parser.add_argument("--data", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--variants", help="comma-separated: time only these")
    parser.add_argument("--sets", help="comma-separated: time only these")
    args = parser.parse_args()
    from kron_configs import CONFIGS, bundle_name
    if args.build:
        sys.path.insert(0, str(ROOT / "build" / "python_packages"))
        from kge import kron
        for variant, options in VARIANTS.items():
            if args.variants and variant not in args.variants.split(","):
                continue
            options = dict(options)
            order = options.pop("order", "auto")
            for config in set(SETS.values()):
                out = args.build / variant
                out.mkdir(parents=True, exist_ok=True)
                kron.compile_gram(**CONFIGS[config], order=order, cache=False,
                                  **options).save(out / bundle_name(config, order))
        return
    import bench_kron
    from kge import kron
    sets = bench_kron.datasets(args.data)
    sets["dense64"] = (dense_graphs(), "unlabeled")
    peak = fp32_peak()
    results = {"fp32_peak_flops": peak}
    chosen = args.variants.split(",") if args.variants else list(VARIANTS)
    reference = {}
    for variant, options in VARIANTS.items():
        if variant not in chosen:
            continue
        order = options.get("order", "auto")
        for name, config in SETS.items():
            if args.sets and name not in args.sets.split(","):
                continue
            graphs, _ = sets[name]
            k, iterations, seconds, _, pairs = bench_kron.time_kge(
                args.run / variant, config, graphs, order, 2)
            results[f"{variant}/{name}"] = seconds
            # Every variant computes the same matrix: its largest relative
            # difference from the first variant timed on the set.
            first = reference.setdefault(name, k)
            difference = float(np.nanmax(np.abs(k - first) / np.maximum(np.abs(first), 1e-30)))
            results[f"{variant}/{name}_max_relative_difference"] = difference
            line = (f"{variant:14s} {name:13s} {seconds * 1e3:9.2f} ms "
                    f"failed={(iterations <= 0).sum()} diff={difference:.1e}")
            if name == "dense64":
                # XMV's multiply-adds: every pair of directed non-zeros
                # once per iteration (2 flops each), over the pairs solved.
                z = np.array([np.count_nonzero(g.adjacency) for g in graphs], np.float64)
                pairs_a, pairs_b = np.triu_indices(len(graphs))
                its = np.abs(iterations[pairs_a, pairs_b]).astype(np.float64)
                flops = float((2 * z[pairs_a] * z[pairs_b] * its).sum())
                results[f"{variant}/dense64_xmv_flops"] = flops / seconds
                results[f"{variant}/dense64_fraction_of_peak"] = flops / seconds / peak
                line += f"  XMV {flops / seconds / 1e12:.2f} TFLOP/s = {flops / seconds / peak:.1%} of FP32 peak"
            print(line, flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
