"""Where the matrix kernels spend their time (GPU machine): GPU time per
call of TransR/RESCAL bundles at D = 512, B = 16384 on batches whose
relation mix differs — the FB15k-like Zipf batch, one relation for every
edge (long runs: compute and L1/L2), uniform relations, and every edge its
own matrix (DRAM streaming).

    PYTHONPATH=... python3 bench/proto/matrix_phase_probe.py DIR transr.pos.D512 ...
"""
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_score_functions import make_tables  # noqa: E402
from vector_probe_lib import fb15k_call, graph_time  # noqa: E402

B = 16384
directory = pathlib.Path(sys.argv[1])
for name in sys.argv[2:]:
    program, inputs, g, (entities, relations) = fb15k_call(directory / f"{name}.kgebundle", B)
    out = torch.empty(B, device="cuda")
    batches = {
        "zipf": inputs["r"],
        "one": torch.zeros(B, dtype=torch.int64, device="cuda"),
        "uniform": torch.randint(0, relations, (B,), generator=g, device="cuda"),
    }
    line = [name]
    for label, r in batches.items():
        call = {**inputs, "r": r}
        us = graph_time(lambda st: program(**call, out={"score": out}, stream=st.cuda_stream))
        line.append(f"{label} {us:.1f}")
    # Every edge its own matrix (a table of B relations, 16 GB at D = 512).
    wide, _ = make_tables(program.signature, entities, B, 512, g)
    call = {**inputs, **wide, "r": torch.randperm(B, generator=g, device="cuda")}
    us = graph_time(lambda st: program(**call, out={"score": out}, stream=st.cuda_stream))
    line.append(f"distinct {us:.1f}")
    del wide, call
    print("  ".join(line), flush=True)
