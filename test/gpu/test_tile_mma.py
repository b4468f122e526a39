"""The tile dialect's tensor-core kernels (build_tile_bundles.py's
<KGE_GPU_TILE_BUNDLES>/mma bundles): GEMM in the four operand layouts and
the queries whose inner computation is a product, at f16, bf16, tf32 and
tf32x3, against NumPy at sizes whose rows are 16-byte aligned (the
tensor-core kernels run) and at sizes whose rows are not (the CUDA-core
kernel of the same bundle runs)."""

import numpy as np
import pytest
import torch

from test_tile import TILE_BUNDLES, TORCH_DTYPES, check_query, load
from tile_reference import inputs

MMA_BUNDLES = sorted((TILE_BUNDLES / "mma").glob("*.kgebundle"))
# (M, N, K): aligned (k tails of a partial stage, one block, the 128 x 128
# kernel's grid), then unaligned rows.
SIZES = [(130, 72, 48), (64, 64, 16), (200, 136, 296), (1536, 1536, 64), (53, 41, 45)]
LAYOUT_SHAPES = {"nn": ("MK", "KN"), "nt": ("MK", "NK"), "tn": ("KM", "KN"), "tt": ("KM", "NK")}


def truncate_tf32(a):
    """`a` (float32) as the tensor cores read it at TF32 (warpgroup MMA and
    mma.sync alike): the low 13 mantissa bits dropped."""
    bits = a.astype(np.float32).view(np.uint32)
    return (bits & np.uint32(0xFFFFE000)).view(np.float32)


def operands(precision, arrays):
    """The operands as the kernels see them (float64 NumPy, for the
    reference) and as tensors (half precision: typed tensors). TF32
    operands are rounded only when their rows are 16-byte multiples: else
    the CUDA-core kernel computes in FP32."""
    aligned = all(a.shape[1] % 4 == 0 for a in arrays.values())
    rounded, tensors = {}, {}
    for n, a in arrays.items():
        if precision in TORCH_DTYPES:
            t = torch.from_numpy(a).to(TORCH_DTYPES[precision])
            tensors[n] = t.cuda()
            rounded[n] = t.to(torch.float64).numpy()
        else:
            tf32 = precision == "tf32" and aligned
            rounded[n] = (truncate_tf32(a) if tf32 else a).astype(np.float64)
            tensors[n] = torch.from_numpy(a).cuda()
    return rounded, tensors


def test_mma_bundles_were_built():
    assert len(MMA_BUNDLES) == 36, "run test/gpu/build_tile_bundles.py"


# The warpgroup kernel's size (a grid that fills the GPU, K >= 1024 with a
# partial last stage), for the queries whose references are matrix products.
# TF32 takes warpgroup MMA too, an operand stored with k outermost read
# from the transposed copy the launch plan makes first.
WARPGROUP_BUNDLES = [p for p in MMA_BUNDLES if p.name.split(".")[1] in ("f16", "bf16", "tf32") and
                     p.name.split(".")[0] in ("gemm_nn", "gemm_nt", "gemm_tn", "gemm_tt",
                                              "q2_preference_by_zip", "q4_same_zip")]


# 1400 rows: 11 blocks of 128, so the last cluster of two along M has a
# block past the rows (it loads zeros for its partner and stores nothing);
# 3070 columns: rows of C that are not 16-byte multiples (the staged store
# iterator stores them element by element; B stored n-contiguous takes the
# CUDA-core kernel there).
WARPGROUP_SIZES = [(2048, 2304, 1040), (1400, 3072, 1096), (1300, 3070, 1096)]


@pytest.mark.parametrize("path", WARPGROUP_BUNDLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("M,N,K", WARPGROUP_SIZES,
                         ids=[f"{m}x{n}x{k}" for m, n, k in WARPGROUP_SIZES])
def test_warpgroup_kernel_matches_numpy(rt, path, M, N, K):
    # Warpgroup MMA reads TF32 operands from shared memory as stored: their
    # low bits are dropped, not rounded.
    test_tensor_core_query_matches_numpy(rt, path, M, N, K)


@pytest.mark.parametrize("path", MMA_BUNDLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("M,N,K", SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in SIZES])
def test_tensor_core_query_matches_numpy(rt, path, M, N, K):
    name, precision = path.name.split(".")[:2]
    rng = np.random.default_rng(M * 5 + N * 3 + K)
    if name.startswith("gemm_"):
        dims = {"M": M, "N": N, "K": K}
        a_shape, b_shape = LAYOUT_SHAPES[name[5:]]
        A = rng.standard_normal([dims[d] for d in a_shape]).astype(np.float32)
        B = rng.standard_normal([dims[d] for d in b_shape]).astype(np.float32)
        x, tensors = operands(precision, {"A": A, "B": B})
        a = x["A"] if a_shape == "MK" else x["A"].T
        b = x["B"] if b_shape == "KN" else x["B"].T
        program = load(rt, path)
        C = torch.zeros(M, N, device="cuda")
        program(**tensors, C=C)
        torch.cuda.synchronize()
        expected = a @ b
        scale = max(1.0, float(np.abs(expected).max(initial=0)))
        np.testing.assert_allclose(C.cpu().numpy(), expected, rtol=1e-4, atol=1e-4 * scale)
        return
    x = inputs(name, rng, M=M, N=N, K=K)
    rounded, tensors = operands(precision, {"P": x["P"], "R": x["R"]})
    x.update({n: v.astype(np.float32) for n, v in rounded.items()})
    typed = tensors if precision in TORCH_DTYPES else {}
    check_query(rt, path, name, x, typed, M, N)


def kernels_run(call):
    """Names of the kernels `call` launches."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    return {e.name for e in prof.events()}


@pytest.mark.parametrize("precision,M,N,K,kernel", [
    ("f16", 256, 256, 64, "gemm_nn_mma_small"), ("f16", 2304, 2304, 1024, "gemm_nn_wgmma"),
    ("f16", 1400, 3072, 1096, "gemm_nn_wgmma"), ("f16", 1300, 3064, 1096, "gemm_nn_wgmma"),
    ("f16", 2304, 2304, 64, "gemm_nn_mma"),
    ("f16", 256, 252, 64, "gemm_nn_small"), ("f16", 256, 256, 60, "gemm_nn_small"),
    ("tf32x3", 1536, 1536, 64, "gemm_nn_mma"), ("tf32x3", 256, 256, 64, "gemm_nn_mma_small"),
    ("tf32x3", 256, 254, 64, "gemm_nn_small")])
def test_launch_plan_picks_tensor_cores_for_aligned_rows(rt, precision, M, N, K, kernel):
    program = load(rt, TILE_BUNDLES / "mma" / f"gemm_nn.{precision}.kgebundle")
    dtype = torch.float16 if precision == "f16" else torch.float32
    A = torch.randn(M, K, device="cuda", dtype=dtype)
    B = torch.randn(K, N, device="cuda", dtype=dtype)
    C = torch.zeros(M, N, device="cuda")
    names = kernels_run(lambda: program(A=A, B=B, C=C))
    ours = {n for n in names if n.startswith("gemm_nn")}
    assert ours == {kernel}, names
    torch.testing.assert_close(C, A.float() @ B.float(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("layout,copies", [("nt", 0), ("nn", 1), ("tn", 2), ("tt", 1)])
def test_tf32_takes_warpgroup_mma_in_every_layout(rt, layout, copies):
    """Warpgroup MMA reads TF32 operands k-major only: an operand stored
    with k outermost (B[k, j], A[k, i]) is first copied transposed by the
    device library's kge_transpose_32, one launch per such operand, and the
    kernel reads the copy; k-major operands are read in place."""
    program = load(rt, TILE_BUNDLES / "mma" / f"gemm_{layout}.tf32.kgebundle")
    M, N, K = 2304, 2560, 1032
    A = torch.randn(*((K, M) if layout[0] == "t" else (M, K)), device="cuda")
    B = torch.randn(*((N, K) if layout[1] == "t" else (K, N)), device="cuda")
    B_before = B.clone()
    C = torch.zeros(M, N, device="cuda")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        program(A=A, B=B, C=C)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events()]
    assert {n for n in names if n.startswith("gemm_")} == {f"gemm_{layout}_wgmma"}, names
    assert names.count("kge_transpose_32") == copies, names
    a = A.double().T if layout[0] == "t" else A.double()
    b = B.double().T if layout[1] == "t" else B.double()
    expected = a @ b
    # TF32: about 10 bits of each operand (the warpgroup kernel truncates).
    assert float((C.double() - expected).abs().max() / expected.abs().max()) < 5e-3
    assert torch.equal(B, B_before), "the operand itself is not written"



@pytest.mark.parametrize("precision", ("tf32", "tf32x3"))
def test_tf32_keeps_nans(rt, precision):
    """NaNs never turn into finite values: 0x7FFFFFFF (CUDA's NaN) rounded
    to TF32 in software would carry into -0, 0xFFFFFFFF into +0. TF32 reads
    operands as stored (the tensor cores truncate: a NaN whose payload lies
    in the low bits, 0x7F800001, becomes an infinity); 3xTF32 rounds the big
    part, and the rest of a NaN is NaN. Rows of C that read such a value of
    A and columns that read one of B are not finite (3xTF32: NaN); the
    others are the product of the finite operands."""
    program = load(rt, TILE_BUNDLES / "mma" / f"gemm_nn.{precision}.kgebundle")
    M = N = 1536
    K = 64
    generator = torch.Generator(device="cuda").manual_seed(3)
    A = torch.randn(M, K, device="cuda", generator=generator)
    B = torch.randn(K, N, device="cuda", generator=generator)
    nans = torch.tensor([0x7F800001, 0x7FFFFFFF, -0x00000001], dtype=torch.int32).view(torch.float32)
    A[3, 5], A[700, 0], A[1535, 63] = nans.tolist()
    B[7, 9], B[0, 1000] = nans[:2].tolist()
    assert torch.isnan(A).sum() == 3 and torch.isnan(B).sum() == 2
    C = torch.zeros(M, N, device="cuda")
    names = kernels_run(lambda: program(A=A, B=B, C=C))
    assert {n for n in names if n.startswith("gemm_")} == {"gemm_nn_mma"}, names
    rows, cols = [3, 700, 1535], [9, 1000]
    assert not torch.isfinite(C[rows]).any() and not torch.isfinite(C[:, cols]).any()
    if precision == "tf32x3":
        assert torch.isnan(C[rows]).all() and torch.isnan(C[:, cols]).all()
    else:  # the rows of CUDA's NaN and of the negative one: NaN
        assert torch.isnan(C[[700, 1535]]).all() and torch.isnan(C[:, 1000]).all()
    keep_rows = torch.ones(M, dtype=torch.bool)
    keep_rows[rows] = False
    keep_cols = torch.ones(N, dtype=torch.bool)
    keep_cols[cols] = False
    finite = C[keep_rows][:, keep_cols]
    assert torch.isfinite(finite).all()
    expected = (A[keep_rows].double() @ B[:, keep_cols].double())
    assert float((finite.double() - expected).abs().max() / expected.abs().max()) < 5e-3


def test_runtime_refuses_a_scratch_view_larger_than_its_buffer(rt):
    """A bundle whose transposed copy is declared smaller than the view the
    kernel takes of it (a corrupt or hand-edited bundle) is refused before
    any launch, naming the buffer; the output is untouched."""
    import json
    bundle = json.loads((TILE_BUNDLES / "mma" / "gemm_nn.tf32.kgebundle").read_text())
    (copy,) = [s for s in bundle["scratch"] if s["name"] == "transposed_B"]
    copy["count"] = "K"
    program = rt.Program(json.dumps(bundle))
    M, N, K = 2304, 2560, 1032
    A = torch.randn(M, K, device="cuda")
    B = torch.randn(K, N, device="cuda")
    C = torch.full((M, N), 7.0, device="cuda")
    with pytest.raises(rt.ArgumentError,
                       match="views scratch buffer 'transposed_B' as 2560 x 1032 elements, "
                             "more than its 1032"):
        program(A=A, B=B, C=C)
    torch.cuda.synchronize()
    assert bool((C == 7.0).all())
    # Where the warpgroup kernel does not run, the copy is not viewed.
    small = torch.zeros(256, 256, device="cuda")
    program(A=A[:256, :64].contiguous(), B=B[:64, :256].contiguous(), C=small)
    # (TF32 operands truncated, 64 products of randn values a sum: errors
    # of about 1e-2 at the largest sums.)
    torch.testing.assert_close(small, A[:256, :64] @ B[:64, :256], rtol=1e-2, atol=5e-2)


@pytest.mark.parametrize("K", (512, 4096))
def test_tf32x3_is_as_accurate_as_fp32(rt, K):
    """3xTF32 carries FP32 accuracy over long reductions: each step's three
    products are summed from zero on the tensor cores and added to the
    running sum in FP32. Chained through one accumulator over all of K, the
    tensor cores' truncated sums drifted 8x past FP32's error (2e-6 against
    2.5e-7 at K = 512). Against float64, the mean relative error must stay
    within 1.5x that of FP32 summed in the kernel's order (8-wide steps
    added in turn) and within 3x that of cuBLAS in FP32 (TF32 off), whose
    blocked sums err less at large K."""
    program = load(rt, TILE_BUNDLES / "mma" / "gemm_nn.tf32x3.kgebundle")
    M = N = 1536
    generator = torch.Generator(device="cuda").manual_seed(K)
    # Positive operands: every partial sum grows, as in a norm's reduction,
    # so a one-sided rounding error accumulates instead of cancelling.
    A = torch.rand(M, K, device="cuda", generator=generator)
    B = torch.rand(K, N, device="cuda", generator=generator)
    C = torch.zeros(M, N, device="cuda")
    assert "gemm_nn_mma" in kernels_run(lambda: program(A=A, B=B, C=C))
    expected = A.double() @ B.double()
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        fp32 = A @ B
        in_order = torch.zeros(M, N, device="cuda")
        for k in range(0, K, 8):
            in_order += A[:, k:k + 8] @ B[k:k + 8]
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32

    def error(x):
        return float(((x.double() - expected).abs() / expected).mean())
    ours, cublas, sequential = error(C), error(fp32), error(in_order)
    print(f"K={K}: 3xTF32 {ours:.3g}, FP32 in order {sequential:.3g}, cuBLAS FP32 {cublas:.3g}")
    assert ours <= 1.5 * sequential and ours <= 3 * cublas, (ours, sequential, cublas)
