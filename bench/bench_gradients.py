#!/usr/bin/env python3
"""Gradient steps of score functions: KGE's forward and gradient kernels
(bvec-differentiate) against PyTorch eager and torch.compile of the same
step, measured in one run on the GPU machine.

A step takes a batch of edges and per-edge seeds (the loss's gradient with
respect to the scores) and produces the scores and the dense gradients of
the tables: KGE runs the forward kernel, the gradient kernel (the gathered
rows' gradients) and one index_add_ per (table, index array); PyTorch runs
the model's forward in f32 and autograd's backward of sum(seed * score)
(eager, and the whole step under torch.compile, compile time excluded).
The batch comes from the FB15k-like graph (bench/datasets.py: FB15k's
sizes, power-law entities, skewed relations). Times are medians over rounds
of back-to-back steps timed with CUDA events.

    python3 bench/bench_gradients.py --bundles .carry/gradients --out $OUT/gradients.json

Bundles from test/gpu/build_gradient_bundles.py (<model>.{fwd,grad}.D128).
"""

import argparse
import json
import pathlib
import statistics
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "test" / "gpu"))
import datasets  # noqa: E402
import references  # noqa: E402

# The references in f32 (they read rows in float64 for the tests).
references._rows = lambda table, indices: table[indices]

MODELS = ["transe_l2", "transe_l1", "distmult", "complex", "rotate", "transh", "simple"]


def timed(fn, rounds, calls):
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundles", type=pathlib.Path, required=True)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--batch", type=int, default=65536)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()

    import kge_runtime
    triples, entities, relations = datasets.fb15k_like()
    batch = torch.as_tensor(triples[:args.batch], device="cuda")
    h, r, t = batch[:, 0].contiguous(), batch[:, 1].contiguous(), batch[:, 2].contiguous()
    seeds = torch.randn(args.batch, device="cuda")
    rows = []
    for model in MODELS:
        fwd = kge_runtime.Program((args.bundles / f"{model}.fwd.D{args.length}.kgebundle").read_text())
        grad = kge_runtime.Program((args.bundles / f"{model}.grad.D{args.length}.kgebundle").read_text())
        params = fwd.signature["params"]
        tables = {}
        for p in params:
            if p["role"] == "table":
                n = relations if p["name"].startswith("R") or p["name"] in ("Pv", "Rp", "Rph") else entities
                tables[p["name"]] = torch.randn(n, args.length, device="cuda") * 0.1
        index = {"h": h, "r": r, "t": t}
        targets = []
        for p in grad.signature["params"]:
            if p["role"] == "result":
                (pair,) = [(tb, i) for tb in tables for i in index if p["name"] == f"d_{tb}_{i}"]
                targets.append((p["name"],) + pair)
        inputs = {**tables, **index}

        def kge_step():
            scores = fwd(**inputs)["score"]
            out = grad(**inputs, d_score=seeds)
            dense = {n: torch.zeros_like(v) for n, v in tables.items()}
            for name, table, i in targets:
                dense[table].index_add_(0, index[i], out[name])
            return scores, dense

        leaves = {n: v.clone().requires_grad_() for n, v in tables.items()}

        def torch_step(**leaves):
            for v in leaves.values():
                v.grad = None
            scores = references.REFERENCES[model](**leaves, h=h, r=r, t=t)
            (scores * seeds).sum().backward()
            return scores

        compiled = torch.compile(torch_step)
        eager = lambda: torch_step(**leaves)
        compiled_step = lambda: compiled(**leaves)

        # Equal results before timing.
        scores, dense = kge_step()
        ref_scores = torch_step(**leaves)
        for n, v in leaves.items():
            error = ((dense[n] - v.grad).abs().max() / v.grad.abs().max().clamp_min(1)).item()
            assert error < 1e-4, (model, n, error)
        assert torch.allclose(scores, ref_scores, atol=1e-4, rtol=1e-4), model
        for _ in range(3):
            compiled_step()
        torch.cuda.synchronize()
        kge_ms = timed(kge_step, args.rounds, args.calls)
        eager_ms = timed(eager, args.rounds, args.calls)
        compile_ms = timed(compiled_step, args.rounds, args.calls)
        row = {"model": model, "batch": args.batch, "length": args.length,
               "kge_ms": kge_ms, "eager_ms": eager_ms, "compile_ms": compile_ms,
               "speedup_vs_eager": eager_ms / kge_ms,
               "speedup_vs_compile": compile_ms / kge_ms,
               "speedup_vs_best": min(eager_ms, compile_ms) / kge_ms}
        print(json.dumps(row), flush=True)
        rows.append(row)
    args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(),
                                    "torch": torch.__version__, "dataset": "fb15k_like",
                                    "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
