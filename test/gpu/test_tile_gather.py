"""Tasks with gathered rows on the GPU (build_tile_bundles.py --parts
gather: <KGE_GPU_TILE_BUNDLES>/gather/<task>.<shape>.kgebundle) against
PyTorch: rows of the tables read through index arrays with repeats and
skew, at odd and tile-sized shapes, every tile shape; a matrix per row's
key through the segment iterators (skewed keys, empty keys, keys with more
rows than a block tile, more keys than a grid's y extent); checked mode
refuses an out-of-range gather before launch."""

import pytest
import torch

from test_tile import TILE_BUNDLES, load

GATHER = TILE_BUNDLES / "gather"
SHAPES = ("t64", "t32", "auto")
# (batch rows M, batch columns N, table rows, reduction K)
SIZES = [(1, 1, 1, 1), (130, 67, 50, 45), (700, 333, 40, 300), (2048, 1536, 5000, 64)]


def skewed(g, count, rows):
    """Indices with a power-law skew (most rows repeat a few hot ones)."""
    w = 1.0 / torch.arange(1, rows + 1, dtype=torch.float64) ** 1.1
    return torch.multinomial(w, count, replacement=True, generator=g).to(torch.int32).cuda()


def test_gather_bundles_were_built():
    assert len(list(GATHER.glob("*.kgebundle"))) == 18, \
        f"run test/gpu/build_tile_bundles.py --parts gather --out {TILE_BUNDLES}"


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("M,N,rows,K", SIZES, ids=[f"{m}x{n}x{r}x{k}" for m, n, r, k in SIZES])
def test_gathered_scores_match_torch(rt, shape, M, N, rows, K):
    g = torch.Generator().manual_seed(M + N + K)
    E = torch.randn(rows, K, generator=g).cuda()
    T = torch.randn(rows + 3, K, generator=g).cuda()
    bias = torch.randn(rows, generator=g).cuda()
    h, t = skewed(g, M, rows), skewed(g, N, rows + 3)
    C = torch.full((M, N), float("nan"), device="cuda")
    load(rt, GATHER / f"scores.{shape}.kgebundle")(E=E, T=T, bias=bias, h=h, t=t, C=C)
    d = E.double()[h.long()][:, None, :] - T.double()[t.long()][None, :, :]
    expected = (d * d + bias.double()[h.long()][:, None, None]).sum(-1)
    torch.testing.assert_close(C.double(), expected, rtol=1e-4, atol=1e-4 * max(1.0, K))


# TF32 drops 13 bits of every operand: a looser bound.
TOLERANCE = {"tf32": 5e-3}


@pytest.mark.parametrize("shape", SHAPES + ("tf32x3", "tf32"))
@pytest.mark.parametrize("M,N,rows,K", SIZES, ids=[f"{m}x{n}x{r}x{k}" for m, n, r, k in SIZES])
def test_gathered_gemm_matches_torch(rt, shape, M, N, rows, K):
    g = torch.Generator().manual_seed(3 * M + N + K)
    E = torch.randn(rows, K, generator=g).cuda()
    B = torch.randn(K, N, generator=g).cuda()
    h = skewed(g, M, rows)
    C = torch.full((M, N), float("nan"), device="cuda")
    load(rt, GATHER / f"gemm.{shape}.kgebundle")(E=E, B=B, h=h, C=C)
    expected = E.double()[h.long()] @ B.double()
    tol = TOLERANCE.get(shape, 1e-4)
    torch.testing.assert_close(C.double(), expected, rtol=tol, atol=tol * max(1.0, K ** 0.5))


def test_checked_mode_refuses_an_out_of_range_gather(rt):
    g = torch.Generator().manual_seed(5)
    E, B = torch.randn(40, 16, generator=g).cuda(), torch.randn(16, 24, generator=g).cuda()
    h = skewed(g, 100, 40)
    h[37] = 40
    C = torch.zeros(100, 24, device="cuda")
    with pytest.raises(Exception, match="index 40 at position 37 of 'h' is out of range"):
        load(rt, GATHER / "gemm.t64.kgebundle")(E=E, B=B, h=h, C=C, checked=True)
    assert bool((C == 0).all())


# (rows M, columns N, entity rows, keys, reduction K)
PROJECTIONS = [(1, 1, 1, 1, 1), (300, 67, 50, 7, 45), (5000, 96, 400, 1345, 64),
               (2000, 40, 100, 70000, 16)]


@pytest.mark.parametrize("shape", SHAPES + ("t16", "t16n64", "t32n128", "tf32x3", "tf32"))
@pytest.mark.parametrize("M,N,rows,keys,K", PROJECTIONS,
                         ids=[f"{m}x{n}x{r}x{g}x{k}" for m, n, r, g, k in PROJECTIONS])
def test_a_matrix_per_key_matches_torch(rt, shape, M, N, rows, keys, K):
    g = torch.Generator().manual_seed(M + N + keys)
    E = torch.randn(rows, K, generator=g).cuda()
    W = torch.randn(keys, K, N, generator=g).cuda()
    h = skewed(g, M, rows)
    # Zipf keys: one key holds many rows (several block tiles), most none.
    r = skewed(g, M, keys).to(torch.int64)
    Y = torch.full((M, N), float("nan"), device="cuda")
    load(rt, GATHER / f"projection.{shape}.kgebundle")(E=E, W=W, h=h, r=r, Y=Y)
    expected = torch.einsum("bk,bkj->bj", E.double()[h.long()], W.double()[r])
    tol = TOLERANCE.get(shape, 1e-4)
    torch.testing.assert_close(Y.double(), expected, rtol=tol, atol=tol * max(1.0, K ** 0.5))


def test_checked_mode_refuses_an_out_of_range_key(rt):
    g = torch.Generator().manual_seed(6)
    E, W = torch.randn(40, 16, generator=g).cuda(), torch.randn(5, 16, 8, generator=g).cuda()
    h = skewed(g, 100, 40)
    r = skewed(g, 100, 5).to(torch.int64)
    r[61] = 5
    Y = torch.zeros(100, 8, device="cuda")
    with pytest.raises(Exception, match="index 5 at position 61 of 'r' is out of range"):
        load(rt, GATHER / "projection.t64.kgebundle")(E=E, W=W, h=h, r=r, Y=Y, checked=True)
    assert bool((Y == 0).all())


@pytest.mark.parametrize("shape", ("t64", "tf32x3"))
def test_an_aggregate_of_a_matrix_per_key_matches_torch(rt, shape):
    g = torch.Generator().manual_seed(8)
    M, N, K, rows, keys, groups = 3000, 96, 64, 400, 300, (17, 5)
    E = torch.randn(rows, K, generator=g).cuda()
    W = torch.randn(keys, K, N, generator=g).cuda()
    h, r = skewed(g, M, rows), skewed(g, M, keys)
    rg, cg = skewed(g, M, groups[0]), skewed(g, N, groups[1])
    C = torch.ones(groups, device="cuda")
    load(rt, GATHER / f"grouped.{shape}.kgebundle")(E=E, W=W, h=h, r=r, g=rg, c=cg, C=C)
    Y = torch.einsum("bk,bkj->bj", E.double()[h.long()], W.double()[r.long()])
    expected = torch.ones(groups, dtype=torch.float64, device="cuda")
    expected.index_put_((rg.long()[:, None], cg.long()[None, :]), Y, accumulate=True)
    # f32 atomics add thousands of terms with cancellation into a hot
    # group: bounded by the sum of the terms' magnitudes.
    magnitude = torch.zeros(groups, dtype=torch.float64, device="cuda")
    magnitude.index_put_((rg.long()[:, None], cg.long()[None, :]), Y.abs(), accumulate=True)
    assert bool(((C.double() - expected).abs() <= 1e-5 * magnitude + 1e-4).all()), \
        (C.double() - expected).abs().max()
