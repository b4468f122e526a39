"""Where the time of a KGE call goes: host overhead (batch of 1), the call
with and without a preallocated output, and the device time of each kernel
(torch.profiler). Used while tuning; see bench/NOTES.md."""
import argparse, pathlib, sys
import numpy as np, torch
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import datasets
from bench_score_functions import TORCH, make_tables, time_per_call
import kge_runtime

parser = argparse.ArgumentParser()
parser.add_argument("--bundles", type=pathlib.Path, required=True)
parser.add_argument("--models", nargs="*", default=["transe_l2", "transh", "complex", "transr"])
parser.add_argument("--length", type=int, default=512)
parser.add_argument("--batch", type=int, default=16384)
parser.add_argument("--variants", nargs="*", default=[""])
args = parser.parse_args()
triples, entities, relations = datasets.fb15k_like()
triples = torch.from_numpy(triples).cuda()
g = torch.Generator(device="cuda").manual_seed(0)
for model, variant in [(m, v) for m in args.models for v in args.variants]:
    path = args.bundles / f"{model}.pos.D{args.length}{variant}.kgebundle"
    if not path.exists():
        continue
    program = kge_runtime.Program(path.read_text())
    tables, _ = make_tables(program.signature, entities, relations, args.length, g)
    def inputs(batch):
        s = triples[torch.randint(0, len(triples), (batch,), generator=g, device="cuda")]
        return {**tables, "h": s[:, 0].contiguous(), "r": s[:, 1].contiguous(), "t": s[:, 2].contiguous()}
    big, one = inputs(args.batch), inputs(1)
    out = torch.empty(args.batch, device="cuda")
    t_default = time_per_call(lambda: program(**big))[0]
    t_out = time_per_call(lambda: program(**big, out={"score": out}))[0]
    t_one = time_per_call(lambda: program(**one))[0]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            program(**big, out={"score": out})
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            kernels.setdefault(e.name, []).append(e.device_time)
    summary = ", ".join(f"{n[:24]}={np.median(v):.1f}us" for n, v in kernels.items())
    print(f"{model + variant:14s} call {t_default:7.1f}us  with out {t_out:7.1f}us  B=1 {t_one:6.1f}us  kernels: {summary}", flush=True)
