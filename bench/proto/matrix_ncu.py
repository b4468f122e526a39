"""Runs one call of each given matrix-model bundle (FB15k-like, D=512,
B=16384) so that ncu can profile its fused kernel:

    ncu -k regex:transr_ --section SpeedOfLight ... python3 bench/proto/matrix_ncu.py DIR transr.pos.D512.x ...
"""
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import datasets  # noqa: E402
from bench_score_functions import make_tables  # noqa: E402
import kge_runtime  # noqa: E402

directory = pathlib.Path(sys.argv[1])
triples, entities, relations = datasets.fb15k_like()
triples = torch.from_numpy(triples).cuda()
for name in sys.argv[2:]:
    g = torch.Generator(device="cuda").manual_seed(0)
    program = kge_runtime.Program((directory / f"{name}.kgebundle").read_text())
    tables, _ = make_tables(program.signature, entities, relations, 512, g)
    s = triples[torch.randint(0, len(triples), (16384,), generator=g, device="cuda")]
    inputs = {**tables, "h": s[:, 0].contiguous(), "r": s[:, 1].contiguous(), "t": s[:, 2].contiguous()}
    program(**inputs)
    torch.cuda.synchronize()
    print(name, "done", flush=True)
