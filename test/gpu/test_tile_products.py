"""Product forms on the GPU (build_tile_bundles.py --parts products:
<KGE_GPU_TILE_BUNDLES>/products/<task>.<precision>.kgebundle): DistMult's
(h * r) . t over gathered rows, ComplEx's four products (two terms, a tail
part stored k-outermost), factors of exp and quotients, and a matrix per
row's key times a factor of two rows (segment iterators), at f16, bf16,
tf32 and tf32x3 against NumPy in float64 on the inputs as stored; rows of
16-byte chunks take the tensor-core kernels, others the CUDA-core one."""

import sys

import numpy as np
import pytest
import torch

from test_tile import ROOT, TILE_BUNDLES, load
from test_tile_mma import kernels_run

sys.path.insert(0, str(ROOT / "test" / "python"))
from product_forms import THREAD_STAGES, TASKS, check, inputs, outputs, reference  # noqa: E402

PRODUCTS = TILE_BUNDLES / "products"
PRECISIONS = ("f16", "bf16", "tf32", "tf32x3")
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
# Factors rounded to the operands' precision before their products (f16:
# 11 bits, bf16: 8, TF32: 11, dropped low bits), accumulated in f32: errors
# relative to the largest output.
TOLERANCES = {"f16": 4e-3, "bf16": 3e-2, "tf32": 6e-3, "tf32x3": 1e-4}
# (M, N, K): aligned rows (a partial stage, one block, the 128 x 128
# kernel's grid, a long reduction), then rows that are not 16-byte chunks.
SIZES = [(130, 72, 48), (64, 64, 16), (1536, 1536, 64), (300, 200, 520), (53, 41, 45)]


def run_task(rt, bundle, name, precision, M, N, K, rng):
    """Runs task `name`'s `bundle` on inputs drawn from `rng` (float tables
    in `precision`'s dtype where it is 16-bit): the kernels it launched,
    its outputs (NumPy) and their float64 reference on the inputs as
    stored."""
    program = load(rt, bundle)
    x = inputs(name, rng, M, N, K, rows=2000, keys=40)
    args, stored = {}, {}
    for n, a in x.items():
        t = torch.from_numpy(a).cuda()
        if a.dtype == np.float32 and precision in DTYPES:
            t = t.to(DTYPES[precision])
        args[n] = t
        stored[n] = t.cpu().to(torch.float64).numpy() if a.dtype == np.float32 else a
    out = {n: torch.from_numpy(a).cuda() for n, a in outputs(name, M, N).items()}
    names = kernels_run(lambda: program(**args, **out))
    return (names, {n: t.cpu().numpy() for n, t in out.items()},
            reference(name, stored))


def test_product_bundles_were_built():
    assert len(list(PRODUCTS.glob("*.kgebundle"))) == len(TASKS) * len(PRECISIONS), \
        f"run test/gpu/build_tile_bundles.py --parts products --out {TILE_BUNDLES}"


@pytest.mark.parametrize("name", sorted(TASKS))
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("M,N,K", SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in SIZES])
def test_product_form_matches_numpy(rt, name, precision, M, N, K):
    rng = np.random.default_rng(M * 7 + N * 3 + K + len(name))
    names, out, expected = run_task(rt, PRODUCTS / f"{name}.{precision}.kgebundle", name,
                               precision, M, N, K, rng)
    aligned = K % 8 == 0 and N % 8 == 0
    assert any(k.endswith("_mma") or k.endswith("_mma_small") for k in names) == aligned, names
    check(name, out, expected, TOLERANCES[precision])


# Warpgroup MMA on stages the producer threads write (build_tile_bundles.py
# --parts thread_stages: the schedule cut to that kernel, so it runs at
# every size): gathered rows, factors computed by the threads, up to three
# terms (a stage each), partial last steps (K = 48 and 520 at tf32, whose
# steps are 32; every K at 16 bits below 64), rows and columns past the
# extents, K = 0.
THREAD_STAGE_BUNDLES = TILE_BUNDLES / "thread_stages"
THREAD_STAGE_PRECISIONS = ("f16", "bf16", "tf32")
THREAD_STAGE_SIZES = [(130, 72, 48), (64, 64, 16), (300, 200, 520), (257, 264, 640),
                      (1536, 1536, 64), (40, 24, 0)]


def test_thread_stage_bundles_were_built():
    assert len(list(THREAD_STAGE_BUNDLES.glob("*.kgebundle"))) == \
        len(THREAD_STAGES) * len(THREAD_STAGE_PRECISIONS), \
        f"run test/gpu/build_tile_bundles.py --parts thread_stages --out {TILE_BUNDLES}"


@pytest.mark.parametrize("name", THREAD_STAGES)
@pytest.mark.parametrize("precision", THREAD_STAGE_PRECISIONS)
@pytest.mark.parametrize("M,N,K", THREAD_STAGE_SIZES,
                         ids=[f"{m}x{n}x{k}" for m, n, k in THREAD_STAGE_SIZES])
def test_thread_stages_match_numpy(rt, name, precision, M, N, K):
    rng = np.random.default_rng(M * 5 + N * 11 + K + len(name))
    names, out, expected = run_task(rt, THREAD_STAGE_BUNDLES / f"{name}.{precision}.kgebundle",
                               name, precision, M, N, K, rng)
    assert any(k.endswith("_wgmma") for k in names), names
    check(name, out, expected, TOLERANCES[precision])
