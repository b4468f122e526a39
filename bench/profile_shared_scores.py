#!/usr/bin/env python3
"""Runs a DistMult shared-negatives bundle (build_bundles.py --modes shared)
three times on B = 16,384 edges against N negatives (FB15k-sized tables,
uniform indices), for a profiler to pick a launch:

    ncu --kernel-name regex:wgmma --launch-skip 2 --launch-count 1 \\
        python3 bench/profile_shared_scores.py distmult.shared.tf32.D512.kgebundle 1024
"""

import pathlib
import sys

import torch

import kge_runtime as rt

ENTITIES, RELATIONS, B, D = 14951, 1345, 16384, 512


def main():
    bundle, negatives = pathlib.Path(sys.argv[1]), int(sys.argv[2])
    program = rt.Program(bundle.read_text())
    g = torch.Generator(device="cuda").manual_seed(0)
    E = torch.randn(ENTITIES, D, device="cuda", generator=g) * D ** -0.5
    R = torch.randn(RELATIONS, D, device="cuda", generator=g) * D ** -0.5
    h = torch.randint(0, ENTITIES, (B,), device="cuda", generator=g)
    r = torch.randint(0, RELATIONS, (B,), device="cuda", generator=g)
    t = torch.randint(0, ENTITIES, (negatives,), device="cuda", generator=g)
    scores = torch.empty(B, negatives, device="cuda")
    for _ in range(3):
        program(Eemb=E, Remb=R, h=h, r=r, t=t, score=scores)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
