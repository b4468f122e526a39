"""Reduce outputs on the GPU (build_tile_bundles.py --parts reduce:
<KGE_GPU_TILE_BUNDLES>/reduce/<task>.<precision>.kgebundle): TransR's score
through the segment iterators (a matrix per row's key, a pair operand, the
root in the finalize kernel), RESCAL's with a pair operand gathered by
another index, a joined row maximum without segments; at fma (CUDA cores),
tf32x3 and bf16 against NumPy in float64 on the inputs as stored, rows of
16-byte chunks on the tensor-core kernels, the others on the CUDA-core
ones; outputs poisoned with NaN first (every row written), results
bitwise-identical call after call."""

import sys

import numpy as np
import pytest
import torch

from test_tile import ROOT, TILE_BUNDLES, load
from test_tile_mma import kernels_run

sys.path.insert(0, str(ROOT / "test" / "python"))
from reduce_tasks import TASKS, check, inputs, reference  # noqa: E402

REDUCE = TILE_BUNDLES / "reduce"
PRECISIONS = ("fma", "tf32x3", "bf16")
TOLERANCES = {"fma": 2e-5, "tf32x3": 1e-4, "bf16": 3e-2}
# (M, N, K): one row, aligned rows (a partial stage, many keys, a long
# reduction, several column tiles), then rows that are not 16-byte chunks.
SIZES = [(1, 8, 8), (37, 64, 48), (2000, 128, 64), (300, 200, 520), (4096, 512, 512),
         (53, 41, 45)]


def test_reduce_bundles_were_built():
    assert len(list(REDUCE.glob("*.kgebundle"))) == len(TASKS) * len(PRECISIONS), \
        f"run test/gpu/build_tile_bundles.py --parts reduce --out {TILE_BUNDLES}"


@pytest.mark.parametrize("name", sorted(TASKS))
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("M,N,K", SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in SIZES])
def test_reduce_matches_numpy(rt, name, precision, M, N, K):
    if name == "row_max" and M * N * K > 2**28:
        pytest.skip("the dense GEMM's reference at this size: covered by the others")
    program = load(rt, REDUCE / f"{name}.{precision}.kgebundle")
    rng = np.random.default_rng(M * 7 + N * 3 + K + len(name))
    x = inputs(name, rng, M, N, K, rows=3000, keys=300)
    args, stored = {}, {}
    for n, a in x.items():
        t = torch.from_numpy(a).cuda()
        # bf16: the operands of the products (rows and matrices).
        if precision == "bf16" and a.dtype == np.float32 and n in ("E", "W", "A", "B"):
            t = t.to(torch.bfloat16)
        args[n] = t
        stored[n] = t.cpu().to(torch.float64).numpy() if a.dtype == np.float32 else a
    out = torch.full((M,), float("nan"), device="cuda")
    names = kernels_run(lambda: program(**args, S=out))
    aligned = precision != "fma" and K % 8 == 0 and N % 8 == 0
    assert any("_mma" in k for k in names) == aligned, names
    assert f"{name}_finalize" in names
    first = out.cpu().numpy().copy()
    expected = reference(name, stored)
    assert check(first, expected, TOLERANCES[precision]), \
        f"max error {np.nanmax(np.abs(first - expected))}"
    for _ in range(3):
        out.fill_(float("nan"))
        program(**args, S=out)
        assert np.array_equal(out.cpu().numpy(), first, equal_nan=True)
