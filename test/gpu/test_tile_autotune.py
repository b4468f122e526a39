"""The autotuner's variants on the GPU (build_tile_bundles.py --parts
autotune: <KGE_GPU_TILE_BUNDLES>/autotune/<query>/<variant>.kgebundle):
every variant of every tuned query gives the query's results at odd and
tile-sized shapes, and kge.autotune.select times the real kernels with CUDA
events, picks one that runs, and leaves the caller's arrays as they were."""

import sys

import numpy as np
import pytest
import torch

from test_tile import ROOT, TILE_BUNDLES, check_query, typed_inputs
from tile_reference import inputs

# The pure-Python autotuner (no compiler needed) from the source tree.
sys.path.append(str(ROOT / "python"))
import kge.autotune  # noqa: E402

AUTOTUNE = TILE_BUNDLES / "autotune"
# directory -> (example, input precision)
QUERIES = {"q1_amplify": ("q1_amplify", None), "gemm": ("gemm", None),
           "q5_strong_pairs": ("q5_strong_pairs", None), "gemm_bf16": ("gemm", "bf16")}
VARIANTS = sorted(AUTOTUNE.glob("*/*.kgebundle"))
SIZES = [(130, 67, 45), (700, 333, 300)]
# Products large enough for warpgroup MMA (K >= 1024) and its grid.
LARGE = {"gemm": (2048, 2304, 1040), "gemm_bf16": (2048, 2304, 1040),
         "q5_strong_pairs": (1536, 1408, 1040)}


def test_variants_were_built():
    counts = {d: len(list((AUTOTUNE / d).glob("*.kgebundle"))) for d in QUERIES}
    assert counts == {"q1_amplify": 11, "gemm": 11, "q5_strong_pairs": 11, "gemm_bf16": 4}, \
        f"run test/gpu/build_tile_bundles.py --parts autotune --out {TILE_BUNDLES}"


@pytest.mark.parametrize("path", VARIANTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
@pytest.mark.parametrize("size", SIZES + ["large"])
def test_every_variant_gives_the_querys_results(rt, path, size):
    name, precision = QUERIES[path.parent.name]
    if size == "large" and path.parent.name not in LARGE:
        pytest.skip("small sizes only (the NumPy reference)")
    M, N, K = LARGE[path.parent.name] if size == "large" else size
    x = inputs(name, np.random.default_rng(M + N + K), M=M, N=N, K=K)
    x, typed = typed_inputs(name, x, precision)
    check_query(rt, path, name, x, typed, M, N, precision=precision)


def test_select_times_the_variants_and_keeps_the_callers_arrays(rt):
    n = 1024
    g = torch.Generator().manual_seed(0)
    arrays = {"S": torch.randn(n, n, generator=g).cuda(), "W": torch.randn(n, n, generator=g).cuda(),
              "thres": torch.rand(n, generator=g).cuda(),
              "Out": torch.full((n, n), 3.0, device="cuda")}
    programs = {p.stem: rt.Program(p.read_text())
                for p in sorted((AUTOTUNE / "q1_amplify").glob("*.kgebundle"))}
    choice = kge.autotune.select(programs, arrays, outputs=["Out"])
    assert set(choice.times) == set(programs) and not choice.failures
    assert all(0 < t < 0.1 for t in choice.times.values())
    assert choice.times[choice.best] == min(choice.times.values())
    assert bool((arrays["Out"] == 3.0).all())
    # The chosen kernel's result.
    programs[choice.best](**arrays)
    S, W = arrays["S"].double(), arrays["W"].double()
    th = arrays["thres"].double()[:, None, None]
    expected = torch.zeros(n, n, dtype=torch.float64, device="cuda")
    for k0 in range(0, n, 64):
        q = S[:, k0:k0 + 64, None] * W[None, k0:k0 + 64]
        expected += (q + (q > th) * (q - th)).sum(1)
    torch.testing.assert_close(arrays["Out"].double(), expected, rtol=1e-4,
                               atol=1e-4 * float(expected.abs().max()))
