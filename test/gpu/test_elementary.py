"""Elementwise functions of the GPU kernels over every magnitude of float:
sines and cosines (expanded by the compiler, Cody-Waite and Payne-Hanek
reductions) within 1.6 ulp of the float64 result and IEEE special values;
exp, log, tanh, sigmoid and sqrt as close as their libdevice and PTX
versions promise. The bundle comes from build_compositions.py."""

import numpy as np
import pytest
import torch

from test_compositions import COMPOSITIONS

LENGTH = 128


@pytest.fixture(scope="module")
def elementary(rt):
    path = COMPOSITIONS / "elementary.kgebundle"
    if not path.exists():
        pytest.fail(f"missing {path}; run test/gpu/build_compositions.py")
    return rt.Program(path.read_text())


def every_magnitude(rows, seed):
    """Floats with uniformly random bit patterns (every exponent, both
    signs), with the special values and the fast path's limit in row 0."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, (rows, LENGTH), dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x[~np.isfinite(x)] = 1.0
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 105615.0, -105615.0,
                        np.nextafter(np.float32(105615.0), np.float32(1e38)),
                        np.finfo(np.float32).max, np.finfo(np.float32).tiny,
                        np.float32(1.5707963), np.float32(-3.1415927)], dtype=np.float32)
    x[0, :len(special)] = special
    return x


def ulp_error(got, want):
    """|got - want| in units in the last place of float(want)."""
    nearest = want.float()
    ulp = (torch.nextafter(nearest.abs(), torch.tensor(float("inf"), device=want.device))
           - nearest.abs()).double()
    return (got.double() - want).abs() / ulp


def run(elementary, x):
    table = torch.from_numpy(x).cuda()
    h = torch.arange(table.shape[0], device="cuda")
    results = elementary(X=table, h=h)
    torch.cuda.synchronize()
    return table.double(), results


@pytest.mark.parametrize("seed", range(4))
def test_sin_cos_within_1_6_ulp_at_every_magnitude(elementary, seed):
    x, results = run(elementary, every_magnitude(4096, seed))
    finite = torch.isfinite(x)
    for name, reference in (("sin", torch.sin(x)), ("cos", torch.cos(x))):
        error = ulp_error(results[name], reference)[finite]
        assert error.max().item() <= 1.6, f"{name}: {error.max().item():.3f} ulp"
        assert torch.isnan(results[name][~finite]).all()


def test_sin_cos_special_values(elementary):
    x, results = run(elementary, every_magnitude(1, 0))
    sin, cos = results["sin"][0].cpu(), results["cos"][0].cpu()
    assert sin[0].item() == 0.0 and not torch.signbit(sin[0])
    assert sin[1].item() == 0.0 and torch.signbit(sin[1])
    assert cos[0].item() == 1.0 and cos[1].item() == 1.0
    assert torch.isnan(sin[2:5]).all() and torch.isnan(cos[2:5]).all()


def test_sines_of_huge_arguments_in_one_warp(elementary):
    """One huge argument among ordinary ones: the warp reruns its loop with
    the slow path, and every element (ordinary ones too) stays right."""
    x = np.random.default_rng(5).standard_normal((64, LENGTH)).astype(np.float32)
    x[17, 99] = np.float32(3.0e30)
    x[40, 3] = np.float32(-123456.78)
    table, results = run(elementary, x)
    for name, reference in (("sin", torch.sin(table)), ("cos", torch.cos(table))):
        assert ulp_error(results[name], reference).max().item() <= 1.6


def test_other_functions_at_every_magnitude(elementary):
    x, results = run(elementary, every_magnitude(2048, 9))
    finite = torch.isfinite(x)
    references = {"exp": torch.exp(x), "log": torch.log(x.abs()), "tanh": torch.tanh(x),
                  "sigmoid": torch.sigmoid(x), "sqrt": torch.sqrt(x.abs())}
    # libdevice: expf 2 ulp, logf 1 ulp, tanhf 2 ulp; sigmoid = 1 / (1 + exp(-x))
    # adds a division; sqrt.rn is correctly rounded.
    bounds = {"exp": 2.0, "log": 1.0, "tanh": 2.0, "sigmoid": 3.0, "sqrt": 0.5}
    for name, reference in references.items():
        representable = finite & torch.isfinite(reference) & (reference.abs() < 3.0e38)
        representable &= reference.abs() > 1.2e-38  # normal results
        error = ulp_error(results[name], reference)[representable]
        assert error.max().item() <= bounds[name], f"{name}: {error.max().item():.3f} ulp"
