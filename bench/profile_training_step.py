#!/usr/bin/env python3
"""Where a training step's time goes: KGE's step (kernels, row-sparse
optimizer) and the plain PyTorch step, phase by phase (CUDA events around
sampling, scoring, loss + backward, optimizer), on the WN18-like graph.

    python3 bench/profile_training_step.py --data .carry/wn18like.npz --bundles .carry/gradients
"""

import argparse
import json
import pathlib

import numpy as np
import torch

from kge import training

PHASES = ("sample", "score", "backward", "optimizer")


def profile(trainer, steps=60):
    torch.manual_seed(0)
    totals = dict.fromkeys(PHASES, 0.0)
    for k in range(steps):
        batch = trainer.triples[torch.randint(0, len(trainer.triples), (trainer.batch_size,),
                                              device="cuda")]
        events = [torch.cuda.Event(enable_timing=True) for _ in range(5)]
        events[0].record()
        h, r, t = batch[:, 0], batch[:, 1], batch[:, 2]
        b, n = len(h), trainer.negatives
        corrupt = torch.rand(b, 1, device="cuda") < 0.5
        negative = trainer.corruptions(h, t, corrupt, n)
        heads = torch.cat([h[:, None], torch.where(corrupt, negative, h[:, None])], 1)
        tails = torch.cat([t[:, None], torch.where(corrupt, t[:, None], negative)], 1)
        relations = r.repeat_interleave(n + 1)
        events[1].record()
        scores = trainer.model.plausibility(heads.reshape(-1), relations,
                                            tails.reshape(-1)).view(b, n + 1)
        events[2].record()
        loss = training._loss(trainer.loss, scores[:, 0], scores[:, 1:], trainer.margin,
                              trainer.temperature)
        if trainer.model.operator is None:
            trainer.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        events[3].record()
        if trainer.model.operator is None:
            trainer.optimizer.step()
        else:
            trainer.optimizer.step(trainer.model.operator.captured)
        events[4].record()
        torch.cuda.synchronize()
        if k >= 10:
            for i, phase in enumerate(PHASES):
                totals[phase] += events[i].elapsed_time(events[i + 1]) / (steps - 10)
    return totals


def graphed(trainer, steps=60):
    """Milliseconds a step as the Trainer runs it in a CUDA graph (warm-up
    and capture first; the batch copy into the graph's input counted)."""
    torch.manual_seed(0)
    batches = [trainer.triples[torch.randint(0, len(trainer.triples), (trainer.batch_size,),
                                             device="cuda")] for _ in range(steps + 4)]
    for batch in batches[:4]:
        trainer.graphed(batch)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for batch in batches[4:]:
        trainer.graphed(batch)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / steps


def kernels(trainer, steps=20, top=25):
    """GPU time per step by kernel (torch.profiler over `steps` eager steps):
    [(kernel, microseconds a step, launches a step)], the largest first."""
    from torch.profiler import ProfilerActivity, profile as torch_profile
    batches = [trainer.triples[torch.randint(0, len(trainer.triples), (trainer.batch_size,),
                                             device="cuda")] for _ in range(steps + 3)]
    for batch in batches[:3]:
        trainer.step(batch)
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
        for batch in batches[3:]:
            trainer.step(batch)
        torch.cuda.synchronize()
    rows = []
    for event in prof.key_averages():
        time = getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0)
        if time > 0 and event.count >= steps:
            rows.append((event.key[:90], round(time / steps, 2), event.count / steps))
    rows.sort(key=lambda r: -r[1])
    return rows[:top]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=pathlib.Path, required=True)
    parser.add_argument("--bundles", type=pathlib.Path, required=True)
    parser.add_argument("--models", nargs="*", default=["distmult", "transe_l2"])
    parser.add_argument("--loss", default="softplus")
    parser.add_argument("--optimizer", default="adagrad")
    parser.add_argument("--margin", type=float, default=1.0)
    parser.add_argument("--kernels", action="store_true",
                        help="also the GPU time of each kernel a step launches (torch.profiler)")
    args = parser.parse_args()
    data = np.load(args.data)
    entities, relations = int(data["num_entities"]), int(data["num_relations"])
    for name in args.models:
        fwd, grad, outer_sum = training.load_bundles(args.bundles, name, 128)
        for eager in (False, True):
            model = training.Model.create(name, fwd, grad, entities, relations, 128, eager=eager,
                                          gradients="sparse" if eager else "rows",
                                          outer_sum=outer_sum)
            trainer = training.Trainer(model, data["train"], batch_size=1024, negatives=64,
                                       loss=args.loss, optimizer=args.optimizer,
                                       margin=args.margin)
            totals = profile(trainer)
            print(json.dumps({"model": name, "eager": eager, "loss": args.loss,
                              "method": args.optimizer,
                              **{k: round(v, 3) for k, v in totals.items()},
                              "total_ms": round(sum(totals.values()), 3)}), flush=True)
            if args.kernels:
                table = kernels(trainer)
                print(json.dumps({"model": name, "eager": eager,
                                  "kernel_us_total": round(sum(r[1] for r in table), 1),
                                  "kernels": table}), flush=True)
            if trainer.graphed is not None:
                print(json.dumps({"model": name, "graphed_step_ms": round(graphed(trainer), 3),
                                  "captured": trainer.graphed.graph is not None}), flush=True)


if __name__ == "__main__":
    main()
