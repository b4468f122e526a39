"""Runs one call of each given matrix-model bundle (FB15k-like, D=512,
B=16384) so that ncu can profile its fused kernel:

    ncu -k regex:^transr$ --section SpeedOfLight ... python3 bench/proto/matrix_ncu.py DIR transr.pos.D512 ...
"""
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from vector_probe_lib import fb15k_call  # noqa: E402

directory = pathlib.Path(sys.argv[1])
for name in sys.argv[2:]:
    program, inputs, _, _ = fb15k_call(directory / f"{name}.kgebundle")
    program(**inputs)
    torch.cuda.synchronize()
    print(name, "done", flush=True)
