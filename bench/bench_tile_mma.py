#!/usr/bin/env python3
"""The tile dialect's tensor-core kernels against what users run today, on
the GPU machine. Bundles come from test/gpu/build_tile_bundles.py
(<--bundles>/mma, default .carry/tile/mma).

- GEMM n x n x n, n = 4096, 8192, against cuBLAS through torch.matmul at
  the same precision: BF16 and FP16 operands (cuBLAS: same-dtype matmul),
  TF32 (allow_tf32 on), and KGE's 3xTF32 against cuBLAS FP32 (allow_tf32
  off), each with its error against an FP64 product of the same operands.
- Queries 2 (aggregate), 5 (select) and 7 (top-k) at n = 8192, K = 256 in
  BF16 and 3xTF32 against cuBLAS GEMM at the same precision + the PyTorch
  post-operation (index_put_ with accumulation; nonzero; topk); query 2
  also beside its algebraic rewrite (segment sums, then a small GEMM).
- Distinct (--tasks distinct; bundles in <--bundles>/../distinct) at
  n = 8192, K = 256 in BF16 against cuBLAS + torch.unique.

Times per call: median of interleaved rounds of back-to-back calls timed
with CUDA events. Writes one JSON file (--out).
"""

import argparse
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_score_functions import interleaved_per_call, peak_bytes  # noqa: E402
from bench_tile import zipf_keys  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "tf32": torch.float32,
          "tf32x3": torch.float32}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundles", type=pathlib.Path, default=ROOT / ".carry" / "tile" / "mma")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--sizes", default="4096,8192")
    parser.add_argument("--tasks", default="gemm,q2,q5,q7")
    parser.add_argument("--precisions", default=",".join(DTYPES),
                        help="GEMM precisions (bf16,f16,tf32,tf32x3)")
    parser.add_argument("--nt-precisions", default="tf32",
                        help="GEMM precisions also measured with B stored [N, K] (A @ B.T)")
    args = parser.parse_args()
    import kge_runtime as rt
    g = torch.Generator().manual_seed(0)
    results = {"device": torch.cuda.get_device_name(), "rows": []}
    tasks = set(args.tasks.split(","))

    def record(row):
        results["rows"].append(row)
        print(json.dumps(row), flush=True)

    def program(name, precision):
        return rt.Program((args.bundles / f"{name}.{precision}.kgebundle").read_text())

    def cublas(precision, fn):
        """`fn` under the matching cuBLAS math mode."""
        def call():
            torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
            return fn()
        return call

    for n in [int(s) for s in args.sizes.split(",")] if "gemm" in tasks else []:
        for precision in args.precisions.split(","):
            dtype = DTYPES[precision]
            for layout in ["nn"] + (["nt"] if precision in args.nt_precisions.split(",") else []):
                A = torch.randn(n, n, generator=g).to(dtype).cuda()
                B = torch.randn(n, n, generator=g).to(dtype).cuda()
                C = torch.empty(n, n, device="cuda")
                kge = program("gemm_" + layout, precision)
                # nt: B holds the transposed operand (A @ B.T, as torch.nn.Linear).
                operand = B if layout == "nn" else B.T
                fns = {"kge": lambda: kge(A=A, B=B, C=C),
                       "cublas": cublas(precision, lambda: torch.matmul(A, operand))}
                t = interleaved_per_call(fns, rounds=7, calls=5)
                ref = torch.matmul(A.double(), operand.double())
                kge(A=A, B=B, C=C)
                out = fns["cublas"]()
                scale = ref.abs().max()
                record({"task": "gemm", "layout": layout, "precision": precision, "n": n,
                        "times_us": t,
                        "baseline": "cuBLAS " + {"tf32x3": "FP32"}.get(precision, precision.upper()),
                        "tflops": {k: 2 * n**3 / v[0] / 1e6 for k, v in t.items()},
                        "kge_over_cublas": t["cublas"][0] / t["kge"][0],
                        "max_rel_error": {"kge": float((C.double() - ref).abs().max() / scale),
                                          "cublas": float((out.double() - ref).abs().max() / scale)}})
                del A, B, C, ref, out

    n, K = 8192, 256
    for precision in ("bf16", "tf32x3") if tasks & {"q2", "q5", "q7"} else ():
        dtype = DTYPES[precision]
        # P R scaled so that 10 is 3.7 standard deviations (1e-4 of pairs).
        scale = (10.0 / (3.7 * K ** 0.5)) ** 0.5
        P = (torch.randn(n, K, generator=g) * scale).to(dtype).cuda()
        R = (torch.randn(K, n, generator=g) * scale).to(dtype).cuda()
        if "q2" in tasks:
            # Query 2: the product summed into 100 x 100 groups of Zipf keys.
            zips = 100
            pz, rz = zipf_keys(g, n, zips), zipf_keys(g, n, zips)
            groups = torch.zeros(zips, zips, device="cuda")
            q2 = program("q2_preference_by_zip", precision)

            def q2_kge():
                groups.zero_()
                q2(P=P, R=R, Pzip=pz, Rzip=rz, C=groups)

            def q2_torch():
                out = torch.zeros(zips, zips, device="cuda")
                prod = torch.matmul(P, R).float()
                out.index_put_((pz.long()[:, None], rz.long()[None, :]), prod, accumulate=True)
                return out

            def q2_segment_sums():
                # Not the query's plan but its algebra: sum P's rows and R's
                # columns by key first, then one small product.
                left = torch.zeros(zips, K, device="cuda").index_add_(0, pz.long(), P.float())
                right = torch.zeros(K, zips, device="cuda").index_add_(1, rz.long(), R.float())
                return left @ right

            fns = {"kge": q2_kge, "cublas_plus_index_put": cublas(precision, q2_torch),
                   "segment_sums_then_gemm": cublas(precision, q2_segment_sums)}
            t = interleaved_per_call(fns, rounds=5, calls=3)
            q2_kge()
            ref = torch.zeros(zips, zips, dtype=torch.float64, device="cuda").index_put_(
                (pz.long()[:, None], rz.long()[None, :]), P.double() @ R.double(), accumulate=True)
            record({"task": "q2_aggregate", "precision": precision, "n": n, "K": K,
                    "times_us": t, "speedup": t["cublas_plus_index_put"][0] / t["kge"][0],
                    "max_rel_error": float((groups.double() - ref).abs().max() / ref.abs().max()),
                    "extra_bytes": {"kge": peak_bytes(q2_kge),
                                    "torch": peak_bytes(fns["cublas_plus_index_put"])}})
        if "q5" in tasks:
            capacity = 1 << 20
            rows = torch.empty(capacity, dtype=torch.int32, device="cuda")
            cols = torch.empty(capacity, dtype=torch.int32, device="cuda")
            vals = torch.empty(capacity, device="cuda")
            count = torch.zeros(1, dtype=torch.int64, device="cuda")
            q5 = program("q5_strong_pairs", precision)

            def q5_kge():
                q5(P=P, R=R, C_rows=rows, C_cols=cols, C_values=vals, C_count=count)

            def q5_torch():
                prod = torch.matmul(P, R)
                idx = (prod > 10).nonzero()
                return idx, prod[idx[:, 0], idx[:, 1]]

            fns = {"kge": q5_kge, "cublas_plus_nonzero": cublas(precision, q5_torch)}
            t = interleaved_per_call(fns, rounds=5, calls=3)
            q5_kge()
            idx, _ = fns["cublas_plus_nonzero"]()
            record({"task": "q5_select", "precision": precision, "n": n, "K": K, "times_us": t,
                    "selected": {"kge": int(count[0]), "torch": int(idx.shape[0])},
                    "speedup": t["cublas_plus_nonzero"][0] / t["kge"][0],
                    "extra_bytes": {"kge": peak_bytes(q5_kge),
                                    "torch": peak_bytes(fns["cublas_plus_nonzero"])}})
        if "q7" in tasks:
            tv = torch.empty(128, device="cuda")
            tr = torch.empty(128, dtype=torch.int32, device="cuda")
            tc = torch.empty(128, dtype=torch.int32, device="cuda")
            q7 = program("q7_top_preferences", precision)

            def q7_kge():
                q7(P=P, R=R, C_values=tv, C_rows=tr, C_cols=tc)

            def q7_torch():
                return torch.topk(torch.matmul(P, R).view(-1).float(), 128)

            fns = {"kge": q7_kge, "cublas_plus_topk": cublas(precision, q7_torch)}
            t = interleaved_per_call(fns, rounds=5, calls=3)
            q7_kge()
            ref_vals, _ = fns["cublas_plus_topk"]()
            record({"task": "q7_top_k", "precision": precision, "n": n, "K": K, "times_us": t,
                    "max_abs_error_of_values": float((tv - ref_vals).abs().max()),
                    "speedup": t["cublas_plus_topk"][0] / t["kge"][0],
                    "extra_bytes": {"kge": peak_bytes(q7_kge),
                                    "torch": peak_bytes(fns["cublas_plus_topk"])}})
    # Distinct (examples' distinct query: the sums not equal to 4, each
    # once) at n = 8192, K = 256 on BF16 tensor cores against cuBLAS +
    # torch.unique; integer entries in [-s, s]: few distinct values (s = 3,
    # every pair a duplicate) or many (s = 15).
    def matmul_f32(A, B):
        try:
            return torch.mm(A, B, out_dtype=torch.float32)
        except TypeError:  # a PyTorch without out_dtype: f32 operands (TF32)
            torch.backends.cuda.matmul.allow_tf32 = True
            return torch.mm(A.float(), B.float())

    for spread in (3, 15) if "distinct" in tasks else ():
        A = torch.randint(-spread, spread + 1, (n, K), generator=g).to(torch.bfloat16).cuda()
        B = torch.randint(-spread, spread + 1, (K, n), generator=g).to(torch.bfloat16).cuda()
        capacity = 1 << 20
        values = torch.empty(capacity, device="cuda")
        count = torch.zeros(1, dtype=torch.int64, device="cuda")
        distinct = rt.Program((args.bundles.parent / "distinct" / "bf16.auto.kgebundle").read_text())

        def distinct_kge():
            distinct(A=A, B=B, C_values=values, C_count=count)

        def distinct_torch():
            # cuBLAS with f32 results (a bf16 product would round the sums).
            u = torch.unique(matmul_f32(A, B))
            return u[u != 4]

        fns = {"kge": distinct_kge, "cublas_plus_unique": distinct_torch}
        t = interleaved_per_call(fns, rounds=5, calls=3)
        distinct_kge()
        want = distinct_torch()
        got = torch.sort(values[:int(count[0])]).values
        record({"task": "distinct", "precision": "bf16", "n": n, "K": K, "spread": spread,
                "times_us": t, "distinct": {"kge": int(count[0]), "torch": int(want.numel())},
                "equal": bool(got.numel() == want.numel() and torch.equal(got, want)),
                "speedup": t["cublas_plus_unique"][0] / t["kge"][0],
                "extra_bytes": {"kge": peak_bytes(distinct_kge),
                                "torch": peak_bytes(distinct_torch)}})
    torch.backends.cuda.matmul.allow_tf32 = False
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
