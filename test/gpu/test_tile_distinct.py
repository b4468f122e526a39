"""Distinct on the GPU (bundles of test/gpu/build_tile_bundles.py in
KGE_GPU_TILE_BUNDLES/distinct): the distinct sums of products kept where
the sum is not 4, against NumPy, for f32/f64/i32/i64/bf16 inputs (bf16 on
tensor cores in the auto bundles), with capacities that fit and that do
not (the count then exceeds the capacity and a retry at the count is
exact)."""

import os
import pathlib

import numpy as np
import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
TILE_BUNDLES = pathlib.Path(os.environ.get("KGE_GPU_TILE_BUNDLES", ROOT / ".carry" / "tile"))
BUNDLES = sorted((TILE_BUNDLES / "distinct").glob("*.kgebundle"))
SIZES = [(1, 1, 1), (53, 41, 64), (130, 67, 45), (700, 333, 300), (1536, 1536, 40)]
TORCH = {"f32": torch.float32, "f64": torch.float64, "i32": torch.int32,
         "i64": torch.int64, "bf16": torch.bfloat16}
_programs = {}


def program(rt, path):
    if path not in _programs:
        _programs[path] = rt.Program(path.read_text())
    return _programs[path]


def operands(dtype, M, N, K, spread, seed):
    """A and B with small integer entries (exact sums in every dtype);
    `spread` widens them for many distinct values. i64 entries straddle
    zero so that 0 (the value that encodes as an empty slot) occurs."""
    rng = np.random.default_rng(seed)
    low = -spread if dtype == "i64" else 0
    A = rng.integers(low, spread + 1, (M, K))
    B = rng.integers(low, spread + 1, (K, N))
    expected = np.unique(A @ B)
    expected = expected[expected != 4]
    return (torch.from_numpy(A).to(TORCH[dtype]).cuda(),
            torch.from_numpy(B).to(TORCH[dtype]).cuda(), expected)


def run(rt, path, dtype, A, B, capacity):
    # GAMUT's syntax accumulates integers in f32; the integer bundles are IR
    # of integer sums.
    value = {"f64": torch.float64, "i32": torch.int32, "i64": torch.int64}.get(dtype,
                                                                                torch.float32)
    values = torch.full((capacity,), 7, dtype=value, device="cuda")
    count = torch.full((1,), 12345, dtype=torch.int64, device="cuda")
    program(rt, path)(A=A, B=B, C_values=values, C_count=count)
    torch.cuda.synchronize()
    return values.cpu().numpy(), int(count.item())


def test_distinct_bundles_were_built():
    assert len(BUNDLES) == 10, f"run test/gpu/build_tile_bundles.py --out {TILE_BUNDLES}"


@pytest.mark.parametrize("path", BUNDLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("M,N,K", SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in SIZES])
@pytest.mark.parametrize("spread", [3, 200])
def test_distinct_matches_numpy(rt, path, M, N, K, spread):
    dtype = path.name.split(".")[0]
    if dtype == "bf16" and spread > 3:
        spread = 15  # bf16 holds integers up to 256 exactly: products of 15 are
    A, B, expected = operands(dtype, M, N, K, spread, seed=M + N + K + spread)
    values, count = run(rt, path, dtype, A, B, capacity=max(1, M * N))
    assert count == len(expected)
    np.testing.assert_array_equal(np.sort(values[:count]), expected)


@pytest.mark.parametrize("path", BUNDLES, ids=lambda p: p.stem)
def test_distinct_beyond_capacity_then_retried(rt, path):
    dtype = path.name.split(".")[0]
    A, B, expected = operands(dtype, 300, 200, 64, 3 if dtype == "bf16" else 40, seed=5)
    assert len(expected) > 16
    values, count = run(rt, path, dtype, A, B, capacity=16)
    # More values than the capacity: the count says so (it may count a
    # value twice once the set is full), the stored ones are values.
    assert count > 16
    assert set(values.tolist()) <= set(expected.tolist())
    values, count = run(rt, path, dtype, A, B, capacity=count)
    assert count == len(expected)
    np.testing.assert_array_equal(np.sort(values[:count]), expected)


def test_distinct_nan_is_one_value(rt):
    """inf * 0 gives NaNs: they are one value, and -0 is +0, as on the CPU."""
    path = TILE_BUNDLES / "distinct" / "f32.t64.kgebundle"
    A = torch.tensor([[float("inf")], [1.0], [2.0]], device="cuda")
    B = torch.tensor([[0.0, 1.0, -0.0]], device="cuda")
    values, count = run(rt, path, "f32", A, B, capacity=9)
    got = values[:count]
    # inf*0 = NaN, inf*1 = inf, 0 (+0 and -0 one value), 1, 2.
    assert count == 5 and np.isnan(got).sum() == 1
    np.testing.assert_array_equal(np.sort(got[~np.isnan(got)]), [0.0, 1.0, 2.0, np.inf])
