#!/usr/bin/env python3
"""What autotuning gains over GAMUT's occupancy heuristic, on the GPU
machine. Variants come from test/gpu/build_tile_bundles.py --parts autotune
(--bundles, default .carry/tile/autotune/<query>/<variant>.kgebundle).

For each task every variant is timed beside the baseline users run today
in the same interleaved rounds (bench_score_functions.interleaved_per_call):

- query 1 (f32, CUDA cores), n = 1024, 2048, 4096: torch.compile of the
  k-chunked PyTorch function (bench_tile.py's);
- GEMM f32 on CUDA cores, n = 1024, 2048, 4096: cuBLAS FP32 (TF32 off);
- GEMM bf16 on tensor cores, n = 4096, 8192: cuBLAS BF16;
- query 5 (select, f32), n = 4096, K = 256: cuBLAS + nonzero.

Then kge.autotune.select (its own CUDA-event timer) picks a variant on the
same arrays: the row records its choice and times too. Writes one JSON
file (--out).
"""

import argparse
import json
import pathlib
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "python"))
from bench_score_functions import interleaved_per_call  # noqa: E402
from bench_tile import q1_torch  # noqa: E402

import kge.autotune  # noqa: E402


def relative_error(out, ref):
    """A check: the largest error of `out` relative to `ref`'s largest value."""
    return lambda: float((out.double() - ref).abs().max() / ref.abs().max())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundles", type=pathlib.Path, default=ROOT / ".carry" / "tile" / "autotune")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--tasks", default="q1,gemm,gemm_bf16,q5")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    import kge_runtime as rt
    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator().manual_seed(0)
    results = {"device": torch.cuda.get_device_name(), "rows": []}
    tasks = set(args.tasks.split(","))

    def variants(directory):
        return {p.stem: rt.Program(p.read_text())
                for p in sorted((args.bundles / directory).glob("*.kgebundle"))}

    def measure(task, n, directory, arrays, outputs, baselines, check):
        programs = variants(directory)
        fns = {f"kge:{name}": (lambda p=p: p(**arrays)) for name, p in programs.items()}
        fns.update(baselines)
        t = interleaved_per_call(fns, rounds=3 if n >= 4096 else 5, calls=2 if n >= 4096 else 5)
        kge_times = {name[4:]: v[0] for name, v in t.items() if name.startswith("kge:")}
        best = min(kge_times, key=kge_times.get)
        choice = kge.autotune.select(programs, arrays, outputs=outputs)
        errors = {}
        for name in ("auto", best, choice.best):
            programs[name](**arrays)
            errors[name] = check()
        row = {"task": task, "n": n, "times_us": t, "best": best,
               "auto_us": kge_times["auto"], "best_us": kge_times[best],
               "tuned_over_auto": kge_times["auto"] / kge_times[best],
               "select": {"best": choice.best,
                          "times_us": {k: v * 1e6 for k, v in choice.times.items()},
                          "failures": choice.failures},
               "errors": errors}
        for base in baselines:
            row[f"{base}_over_auto"] = t[base][0] / kge_times["auto"]
            row[f"{base}_over_best"] = t[base][0] / kge_times[best]
        results["rows"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "times_us"}), flush=True)

    sizes = [1024] if args.quick else [1024, 2048, 4096]
    compiled = torch.compile(q1_torch, dynamic=False)
    for n in sizes if "q1" in tasks else []:
        S, W = torch.randn(n, n, generator=g).cuda(), torch.randn(n, n, generator=g).cuda()
        thres = torch.rand(n, generator=g).cuda()
        Out = torch.empty(n, n, device="cuda")
        chunk = max(1, (1 << 28) // (n * n))
        ref = q1_torch(S.double(), W.double(), thres.double(), chunk)
        measure("q1", n, "q1_amplify", {"S": S, "W": W, "thres": thres, "Out": Out}, ["Out"],
                {"torch_compile": lambda S=S, W=W, t=thres, c=chunk: compiled(S, W, t, c)},
                relative_error(Out, ref))

    # GEMM on CUDA cores (f32) and on tensor cores (bf16) against cuBLAS.
    # (--tasks name, row task, bundle directory, dtype, baseline, sizes)
    gemms = [("gemm", "gemm_f32", "gemm", torch.float32, "cublas_fp32", sizes),
             ("gemm_bf16", "gemm_bf16", "gemm_bf16", torch.bfloat16, "cublas_bf16",
              [4096] if args.quick else [4096, 8192])]
    for selector, task, directory, dtype, baseline, gemm_sizes in gemms:
        for n in gemm_sizes if selector in tasks else []:
            A = torch.randn(n, n, generator=g).cuda().to(dtype)
            B = torch.randn(n, n, generator=g).cuda().to(dtype)
            C = torch.empty(n, n, device="cuda")
            measure(task, n, directory, {"A": A, "B": B, "C": C}, ["C"],
                    {baseline: lambda A=A, B=B: torch.matmul(A, B)},
                    relative_error(C, A.double() @ B.double()))

    for n in [4096] if "q5" in tasks else []:
        K = 256
        P, R = torch.randn(n, K, generator=g).cuda(), torch.randn(K, n, generator=g).cuda()
        capacity = 1 << 20
        out = {"C_rows": torch.zeros(capacity, dtype=torch.int32, device="cuda"),
               "C_cols": torch.zeros(capacity, dtype=torch.int32, device="cuda"),
               "C_values": torch.zeros(capacity, device="cuda"),
               "C_count": torch.zeros(1, dtype=torch.int64, device="cuda")}
        want = int(((P.double() @ R.double()) > 10).sum())

        def check(out=out, want=want):
            return abs(int(out["C_count"][0]) - want)

        def q5_torch(P=P, R=R):
            C = torch.matmul(P, R)
            idx = torch.nonzero(C > 10)
            return idx, C[idx[:, 0], idx[:, 1]]
        measure("q5", n, "q5_strong_pairs", {"P": P, "R": R, **out}, list(out),
                {"cublas_nonzero": q5_torch}, check)

    args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
