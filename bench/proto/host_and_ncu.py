"""Host overhead of a KGE call (empty batch: no launch) and one kernel run
for ncu to profile."""
import pathlib, sys, time
import torch
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import datasets
from bench_score_functions import make_tables, time_per_call
import kge_runtime

bundles = pathlib.Path(sys.argv[1]); model = sys.argv[2]; mode = sys.argv[3]
triples, entities, relations = datasets.fb15k_like()
triples = torch.from_numpy(triples).cuda()
g = torch.Generator(device="cuda").manual_seed(0)
program = kge_runtime.Program((bundles / f"{model}.pos.D512.kgebundle").read_text())
tables, _ = make_tables(program.signature, entities, relations, 512, g)
def inputs(batch):
    s = triples[torch.randint(0, len(triples), (batch,), generator=g, device="cuda")]
    return {**tables, "h": s[:, 0].contiguous(), "r": s[:, 1].contiguous(), "t": s[:, 2].contiguous()}
if mode == "host":
    empty = inputs(0); out = torch.empty(0, device="cuda")
    print(f"{model}: host overhead (B=0) {time_per_call(lambda: program(**empty))[0]:.1f} us,"
          f" with out {time_per_call(lambda: program(**empty, out={'score': out}))[0]:.1f} us")
    t0 = time.perf_counter()
    for _ in range(1000): program(**empty, out={'score': out})
    print(f"  wall per call (B=0, out): {(time.perf_counter() - t0) * 1e3:.1f} us")
else:
    big = inputs(16384)
    for _ in range(3): program(**big)
    torch.cuda.synchronize()
