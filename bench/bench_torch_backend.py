"""`torch.compile(model, backend="kge")` against `torch.compile` with
Inductor and against eager PyTorch, on unmodified PyTorch KGE models
(examples/python/plain_torch_models.py: TransE, DistMult, ComplEx, TransR,
RotatE).

Data: an FB15k-like graph (bench/datasets.py: FB15k's 14,951 entities and
1,345 relations, Zipf relations, power-law entity degrees), batches of
65,536 and 524,288 of its triples; D = 256 (TransR: 256 -> 128). For each model and each backend, one run on
one GPU:
  - forward: the scores of the batch;
  - train step: the logistic loss (F.softplus(-y * score).mean()) and its
    backward (the tables' gradients);
milliseconds per call issued back to back (20 calls between two CUDA
events, as a training loop issues steps: host work overlaps GPU work) and
alone (one call after a synchronize: the host's time in full), medians of
30; the first call's seconds (compile time); the largest difference from
eager's scores and gradients. The KGE column also reports what the backend replaced.

The GPU machine has no MLIR: the backend's kernels are compiled ahead on a
machine with the compiler into a bundle cache that travels with the run:

    # where the compiler is (CPU is enough)
    python3 bench/bench_torch_backend.py --prepare .carry/kge-cache
    # on the GPU machine (KGE_CACHE_DIR points at the carried cache)
    KGE_CACHE_DIR=.carry/kge-cache python3 bench/bench_torch_backend.py --out r.json
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples" / "python"))
sys.path.insert(0, str(HERE))

ENTITIES, RELATIONS, DIM, BATCH = 14951, 1345, 256, 65536
MODELS = ["transe", "distmult", "complex", "transr", "rotate"]
# The GPU tests' configurations (test/gpu/test_torch_backend.py).
TEST_SIZES = (1000, 20, 32)


def batch(device, size=BATCH, entities=ENTITIES, relations=RELATIONS, seed=0):
    """`size` triples of an FB15k-like graph (bench/datasets.py: Zipf
    relations, power-law entity degrees, the top entity in about 2 % of the
    triples; drawn with replacement), with +-1 labels; for other sizes than
    FB15k's, the same generator at those sizes."""
    import numpy as np
    import torch
    import datasets
    rng = np.random.default_rng(seed)
    if (entities, relations) == (ENTITIES, RELATIONS):
        triples, _, _ = datasets.fb15k_like(seed)
    else:
        triples, _, _ = datasets.skewed_graph(entities, relations, 20 * entities, seed)
    rows = triples[rng.integers(0, len(triples), size)]
    h, r, t = (torch.from_numpy(np.ascontiguousarray(rows[:, i])).to(device) for i in range(3))
    y = torch.from_numpy(np.where(rng.random(size) < 0.5, -1.0, 1.0).astype(np.float32))
    return h, r, t, y.to(device)


def build(name, entities=ENTITIES, relations=RELATIONS, dim=DIM, seed=0):
    import torch
    from plain_torch_models import MODELS as FACTORIES
    torch.manual_seed(seed)
    model = FACTORIES[name](entities, relations, dim)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(0.1)
    return model


def prepare(cache_dir):
    """Compiles the kernels of every benchmarked and tested model into
    `cache_dir` (run where the compiler is; CPU only)."""
    os.environ["KGE_CACHE_DIR"] = str(cache_dir)
    import torch
    from plain_torch_models import SoftplusLoss
    import kge.torch_backend as backend
    configs = [(name, (ENTITIES, RELATIONS, DIM)) for name in MODELS]
    configs += [(name, TEST_SIZES) for name in
                ["transe", "transe_l1", "distmult", "complex", "transr", "rotate",
                 "functional_distmult"]]
    for name, (entities, relations, dim) in configs:
        h, r, t, y = batch("cpu", 64, entities, relations)
        for model, inputs in ((build(name, entities, relations, dim), (h, r, t)),
                              (SoftplusLoss(build(name, entities, relations, dim)),
                               (h, r, t, y))):
            gm, report = backend.rewrite(torch.fx.symbolic_trace(model), inputs)
            kernels = [m for m in gm.modules() if isinstance(m, backend.KernelModule)]
            if len(kernels) != 1:
                raise SystemExit(f"{name}: expected one kernel, got {report}")
            forward, _ = kernels[0].compile()
            print(f"{name} {entities}x{dim}: {forward.name}", flush=True)


def timed(fn, repeats=30, warmup=5, calls=20):
    """(per call back to back, per call alone) in milliseconds: `calls`
    calls issued one after the other between two events (as a training loop
    issues its steps: the host's work overlaps the GPU's), and a single
    call between two events after a synchronize (host time in full); the
    median of `repeats` each."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()

    def measure(count):
        times = []
        for _ in range(repeats):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for _ in range(count):
                fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / count)
        return statistics.median(times)

    return measure(calls), measure(1)


def run_model(name, backends):
    import torch
    import torch.nn.functional as F
    import kge.torch_backend as kge_backend
    h, r, t, y = batch("cuda", BATCH)
    reference = build(name).cuda()
    with torch.no_grad():
        ref_scores = reference(h, r, t)
    ref_loss = F.softplus(-y * reference(h, r, t)).mean()
    ref_loss.backward()
    ref_grads = [p.grad.clone() for p in reference.parameters()]
    rows = {}
    for backend in backends:
        model = build(name).cuda()
        if backend == "eager":
            fn = model
        else:
            torch._dynamo.reset()
            fn = torch.compile(model, backend="kge" if backend == "kge" else "inductor",
                               dynamic=False)
        start = time.perf_counter()
        with torch.no_grad():
            scores = fn(h, r, t)
        torch.cuda.synchronize()
        first_forward = time.perf_counter() - start
        replaced = ([x.function.name for x in kge_backend.report().replaced]
                    if backend == "kge" else None)
        rejected = kge_backend.report().rejected if backend == "kge" else None

        def forward():
            with torch.no_grad():
                fn(h, r, t)

        def step():
            for p in model.parameters():
                p.grad = None
            F.softplus(-y * fn(h, r, t)).mean().backward()

        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        first_step = time.perf_counter() - start
        grads = [p.grad.clone() for p in model.parameters()]
        forward_ms, forward_alone_ms = timed(forward)
        step_ms, step_alone_ms = timed(step)
        rows[backend] = {
            "forward_ms": forward_ms, "step_ms": step_ms,
            "forward_alone_ms": forward_alone_ms, "step_alone_ms": step_alone_ms,
            "first_forward_s": first_forward, "first_step_s": first_step,
            "max_score_error": float((scores - ref_scores).abs().max()),
            "max_grad_error": max(float((g - e).abs().max()) for g, e in zip(grads, ref_grads)),
            "replaced": replaced, "rejected": rejected,
        }
        print(name, backend, json.dumps({k: v for k, v in rows[backend].items()
                                         if k not in ("rejected",)}), flush=True)
    for backend in backends:
        if backend != "kge":
            for what in ("forward_ms", "step_ms", "forward_alone_ms", "step_alone_ms"):
                rows["kge"][f"{what}_speedup_vs_{backend}"] = (
                    rows[backend][what] / rows["kge"][what])
    return rows


def write_results(results, out):
    """Prints the results as JSON and writes them to `out` (if given)."""
    text = json.dumps(results, indent=1)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    print(text)


def main():
    global BATCH
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prepare", type=pathlib.Path,
                        help="compile the kernels into this cache directory and stop")
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--models", nargs="*", default=MODELS)
    parser.add_argument("--batch", type=int, default=BATCH)
    args = parser.parse_args()
    BATCH = args.batch
    if args.prepare:
        prepare(args.prepare)
        return
    import torch
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "entities": ENTITIES, "relations": RELATIONS, "dim": DIM, "batch": BATCH,
               "models": {}}
    for name in args.models:
        results["models"][name] = run_model(name, ["eager", "inductor", "kge"])
    write_results(results, args.out)


if __name__ == "__main__":
    main()
