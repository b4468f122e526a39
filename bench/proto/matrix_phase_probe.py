"""Where the matrix kernels spend their time (GPU machine): time per call of
TransR/RESCAL bundles on batches whose relation mix differs — the
FB15k-like Zipf batch, one relation for every edge (long runs: compute and
L1/L2), uniform relations, every edge its own matrix (DRAM streaming) — at D = 512.

    PYTHONPATH=... python3 bench/proto/matrix_phase_probe.py DIR transr.pos.D512.head ...
"""
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import datasets  # noqa: E402
from bench_score_functions import make_tables  # noqa: E402
from vector_probe_lib import graph_time  # noqa: E402
import kge_runtime  # noqa: E402

directory = pathlib.Path(sys.argv[1])
triples, entities, relations = datasets.fb15k_like()
triples = torch.from_numpy(triples).cuda()
for name in sys.argv[2:]:
    g = torch.Generator(device="cuda").manual_seed(0)
    program = kge_runtime.Program((directory / f"{name}.kgebundle").read_text())
    tables, _ = make_tables(program.signature, entities, relations, 512, g)
    B = 16384
    s = triples[torch.randint(0, len(triples), (B,), generator=g, device="cuda")]
    h, t = s[:, 0].contiguous(), s[:, 2].contiguous()
    batches = {
        "zipf": s[:, 1].contiguous(),
        "one": torch.zeros(B, dtype=torch.int64, device="cuda"),
        "uniform": torch.randint(0, relations, (B,), generator=g, device="cuda"),
    }
    line = [name]
    for label, r in batches.items():
        inputs = {**tables, "h": h, "r": r, "t": t}
        out = torch.empty(B, device="cuda")
        us = graph_time(lambda st: program(**inputs, out={"score": out}, stream=st.cuda_stream))
        line.append(f"{label} {us:.1f}")
    # Every edge its own matrix (a table of B relations, 16 GB at D = 512).
    wide, _ = make_tables(program.signature, entities, B, 512, g)
    inputs = {**wide, "h": h, "r": torch.randperm(B, generator=g, device="cuda"), "t": t}
    us = graph_time(lambda st: program(**inputs, out={"score": out}, stream=st.cuda_stream))
    line.append(f"distinct {us:.1f}")
    del wide, inputs
    print("  ".join(line), flush=True)
