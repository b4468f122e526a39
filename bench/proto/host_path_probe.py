"""Where the host time of one KGE call goes (GPU machine): wall time per
call of the pieces, each in a loop of back-to-back calls.

    PYTHONPATH=/tmp/kge-runtime/python_packages python3 bench/proto/host_path_probe.py .carry/bundles
"""
import pathlib
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import datasets  # noqa: E402
from bench_score_functions import make_tables  # noqa: E402
import kge_runtime  # noqa: E402


def wall(fn, calls=4000):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) * 1e6 / calls)
        torch.cuda.synchronize()
    return best


bundles = pathlib.Path(sys.argv[1])
triples, entities, relations = datasets.fb15k_like()
triples = torch.from_numpy(triples).cuda()
g = torch.Generator(device="cuda").manual_seed(0)
program = kge_runtime.Program((bundles / "transe_l2.pos.D512.kgebundle").read_text())
tables, _ = make_tables(program.signature, entities, relations, 512, g)


def inputs(batch):
    s = triples[torch.randint(0, len(triples), (batch,), generator=g, device="cuda")]
    return {**tables, "h": s[:, 0].contiguous(), "r": s[:, 1].contiguous(), "t": s[:, 2].contiguous()}


small, empty = inputs(64), inputs(0)
order = [p["name"] for p in program.signature["params"] if p["role"] != "result"]
positional, positional0 = [small[k] for k in order], [empty[k] for k in order]
out64, out0 = torch.empty(64, device="cuda"), torch.empty(0, device="cuda")
h = small["h"]
captured = program.capture(**small)
half = kge_runtime.Program((bundles / "transe_l2.pos.bf16.D512.kgebundle").read_text())
small_half = {k: v.bfloat16() if v.is_floating_point() else v for k, v in small.items()}
rows = {
    "KGE call, B=64, bf16 tables": lambda: half(**small_half),
    "KGE captured call (CUDA graph), B=64": captured.replay,
    "KGE call, B=64": lambda: program(**small),
    "KGE call, B=64, out=": lambda: program(**small, out={"score": out64}),
    "KGE run(*arrays), B=64": lambda: program.run(*positional),
    "KGE run(*arrays, out), B=64": lambda: program.run(*positional, out64),
    "KGE run(*arrays, out), B=0 (no launch)": lambda: program.run(*positional0, out0),
    "KGE call, B=0 (no launch)": lambda: program(**empty),
    "KGE call, B=0, out=": lambda: program(**empty, out={"score": out0}),
    "t.data_ptr()": h.data_ptr,
    "t.shape": lambda: h.shape,
    "t.is_contiguous()": h.is_contiguous,
    "t.dtype": lambda: h.dtype,
    "t.get_device()": h.get_device,
    "t.new_empty((64,))": lambda: h.new_empty((64,)),
    "torch.empty(64, cuda)": lambda: torch.empty(64, device="cuda"),
    "torch add_ (one launch)": lambda: out64.add_(1.0),
    "empty python call": lambda: None,
}
for name, fn in rows.items():
    print(f"{name:32s} {wall(fn):7.2f} us", flush=True)
