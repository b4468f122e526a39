"""Bundles of bvec compositions beyond the examples (every operation; the
fuzzer's regressions) on the GPU against the CPU path's results, computed
where the compiler is by build_compositions.py."""

import os
import pathlib

import numpy as np
import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMPOSITIONS = pathlib.Path(os.environ.get("KGE_GPU_COMPOSITIONS",
                                           ROOT / ".carry" / "compositions"))
NAMES = sorted(p.stem for p in COMPOSITIONS.glob("*.kgebundle"))


def test_compositions_were_built():
    assert NAMES, f"no bundles in {COMPOSITIONS}; run test/gpu/build_compositions.py"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("checked", [False, True])
def test_composition_matches_the_cpu(rt, name, checked):
    program = rt.Program((COMPOSITIONS / f"{name}.kgebundle").read_text())
    data = np.load(COMPOSITIONS / f"{name}.npz")
    inputs = {k[3:]: torch.from_numpy(data[k]).cuda() for k in data.files if k.startswith("in_")}
    results = program(**inputs, checked=checked)
    torch.cuda.synchronize()
    for key in (k for k in data.files if k.startswith("out_")):
        expected = torch.from_numpy(data[key]).double().cuda()
        actual = results[key[4:]].double()
        assert actual.shape == expected.shape
        scale = max(1.0, expected.abs().max().item())
        error = (actual - expected).abs().max().item() / scale
        assert error < 1e-5, f"{key[4:]}: max error {error:.3g}"
