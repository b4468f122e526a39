"""The query syntax's reduce and per-key outputs on the GPU
(build_tile_bundles.py --parts query_outputs:
<KGE_GPU_TILE_BUNDLES>/query_outputs/<query>.<precision>.kgebundle):
TransR's score written as a query (examples/tile/gathered/transr_score)
through the segment iterators and its finalize kernel, and a typed linear
layer's weight gradient (typed_linear_gradient: a matrix per key, rows
gathered along the reduction) against NumPy in float64, at fma and
tf32x3; kge.autograd.OUTER_SUM (a plain product per key) at fma and on
mma.sync at tf32 and tf32x3."""

import sys

import numpy as np
import pytest
import torch

from test_tile import ROOT, TILE_BUNDLES, load

sys.path.insert(0, str(ROOT / "test" / "python"))
from reduce_tasks import check, inputs, reference  # noqa: E402

OUTPUTS = TILE_BUNDLES / "query_outputs"
PRECISIONS = ("fma", "tf32x3")
TOLERANCES = {"fma": 2e-5, "tf32x3": 1e-4}


def test_query_output_bundles_were_built():
    assert len(list(OUTPUTS.glob("*.kgebundle"))) == 2 * len(PRECISIONS) + 3, \
        f"run test/gpu/build_tile_bundles.py --parts query_outputs --out {TILE_BUNDLES}"


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("M,N,K", [(1, 8, 8), (2000, 128, 64), (4096, 256, 256), (53, 41, 45)])
def test_transr_score_query_matches_numpy(rt, precision, M, N, K):
    program = load(rt, OUTPUTS / f"transr_score.{precision}.kgebundle")
    rng = np.random.default_rng(M + N + K)
    x = inputs("transr", rng, M, N, K, rows=3000, keys=300)
    out = torch.full((M,), float("nan"), device="cuda")
    program(**{n: torch.from_numpy(a).cuda() for n, a in x.items()}, S=out)
    expected = reference("transr", x)
    got = out.cpu().numpy()
    assert check(got, expected, TOLERANCES[precision]), \
        f"max error {np.nanmax(np.abs(got - expected))}"


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("edges,nodes,inner,outer,types", [
    (1, 4, 8, 8, 2), (20000, 3000, 64, 64, 12), (50000, 1000, 16, 130, 40)])
def test_typed_linear_gradient_query_matches_numpy(rt, precision, edges, nodes, inner, outer,
                                                   types):
    program = load(rt, OUTPUTS / f"typed_linear_gradient.{precision}.kgebundle")
    rng = np.random.default_rng(edges + types)
    a = {"x": rng.standard_normal((nodes, inner)).astype(np.float32),
         "g": rng.standard_normal((nodes, outer)).astype(np.float32),
         "norm": rng.uniform(0.1, 1, edges).astype(np.float32),
         "src": rng.integers(0, nodes, edges).astype(np.int32),
         "dst": rng.integers(0, nodes, edges).astype(np.int32),
         "etype": np.minimum(rng.zipf(1.6, edges) - 1, types - 1).astype(np.int32)}
    start = rng.standard_normal((types, inner, outer)).astype(np.float32)
    dW = torch.from_numpy(start).cuda()
    program(**{n: torch.from_numpy(v).cuda() for n, v in a.items()}, dW=dW)
    terms = (a["norm"][:, None, None] * a["x"][a["src"]][:, :, None].astype(np.float64)
             * a["g"][a["dst"]][:, None, :])
    expected, magnitude = start.astype(np.float64), np.abs(start).astype(np.float64)
    np.add.at(expected, a["etype"], terms)
    np.add.at(magnitude, a["etype"], np.abs(terms))
    got = dW.cpu().numpy()
    # Float sums in any order: within a few float32 roundings of the terms'
    # magnitude, entry by entry.
    assert np.all(np.abs(got - expected) <= 1e-6 * magnitude + 1e-6), \
        f"max error {np.abs(got - expected).max()}"


# Per-key sums of plain products: fma on CUDA cores; tf32 and tf32x3 on
# mma.sync where the rows are whole 16-byte chunks (else CUDA cores).
OUTER_SUM_TOLERANCE = {"fma": 1e-6, "tf32": 2e-3, "tf32x3": 1e-5}


@pytest.mark.parametrize("precision", list(OUTER_SUM_TOLERANCE))
@pytest.mark.parametrize("steps,m,n,keys", [
    (0, 8, 8, 3), (1, 4, 8, 2), (20000, 64, 128, 12), (8192, 512, 128, 8),
    (50000, 130, 64, 40), (3000, 36, 20, 5)])
def test_outer_sum_per_key_matches_numpy(rt, precision, steps, m, n, keys):
    """C[key[k]] += U[k] (x) V[k]: keys of Zipf frequencies (runs of one
    key longer than a tile of 512 steps, and empty keys), rows whole
    chunks or not (m = 130: the CUDA-core kernel runs), no steps at all
    (C unchanged)."""
    path = OUTPUTS / f"outer_sum.{precision}.kgebundle"
    if precision != "fma":
        assert "mma.sync" in path.read_text()
    program = load(rt, path)
    rng = np.random.default_rng(steps + m + n)
    U = rng.standard_normal((steps, m)).astype(np.float32)
    V = rng.standard_normal((steps, n)).astype(np.float32)
    key = np.minimum(rng.zipf(1.5, steps) - 1, keys - 1).astype(np.int32)
    start = rng.standard_normal((keys, m, n)).astype(np.float32)
    C = torch.from_numpy(start).cuda()
    program(U=torch.from_numpy(U).cuda(), V=torch.from_numpy(V).cuda(),
            key=torch.from_numpy(key).cuda(), C=C)
    terms = U[:, :, None].astype(np.float64) * V[:, None, :]
    expected, magnitude = start.astype(np.float64), np.abs(start).astype(np.float64)
    np.add.at(expected, key, terms)
    np.add.at(magnitude, key, np.abs(terms))
    got = C.cpu().numpy()
    tolerance = OUTER_SUM_TOLERANCE[precision]
    assert np.all(np.abs(got - expected) <= tolerance * magnitude + 1e-6), \
        f"max error {np.abs(got - expected).max()}"
