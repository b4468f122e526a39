"""The tile dialect's kernels (examples/tile, compiled by
build_tile_bundles.py into KGE_GPU_TILE_BUNDLES, default .carry/tile)
against NumPy at odd and large sizes, with every tile shape."""

import os
import pathlib
import sys

import numpy as np
import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test" / "python"))
from tile_reference import accumulate_f32, inputs, reference  # noqa: E402

TILE_BUNDLES = pathlib.Path(os.environ.get("KGE_GPU_TILE_BUNDLES", ROOT / ".carry" / "tile"))
BUNDLES = sorted(TILE_BUNDLES.glob("*.kgebundle"))
# 1536 x 1536 gives the 128 kernel 144 blocks: the auto bundles run it.
SIZES = [(53, 41, 64), (130, 67, 45), (1, 1, 1), (700, 333, 300), (64, 64, 16),
         (1536, 1536, 40)]
_programs = {}


def load(rt, path):
    if path not in _programs:
        _programs[path] = rt.Program(path.read_text())
    return _programs[path]


TORCH_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f64": torch.float64}
TYPED = {"gemm": ("A", "B"), "q2_preference_by_zip": ("P", "R")}


def precision_of(path):
    """The input dtype of a bundle <query>[.<dtype>].<shape>.kgebundle."""
    parts = path.name.split(".")
    return parts[1] if len(parts) == 4 else None


def typed_inputs(name, x, dtype):
    """`x` with the query's typed inputs rounded to `dtype` (as float32 or
    float64 NumPy arrays, for the reference) and their torch tensors."""
    if dtype is None:
        return x, {}
    rounded, tensors = dict(x), {}
    for n in TYPED[name]:
        t = torch.from_numpy(x[n].astype(np.float64 if dtype == "f64" else np.float32))
        t = t.to(TORCH_DTYPES[dtype])
        tensors[n] = t.cuda()
        rounded[n] = t.to(torch.float64).numpy()
    if name == "q2_preference_by_zip" and dtype == "f64":
        rounded["C"] = x["C"].astype(np.float64)
    return rounded, tensors


def run_query(rt, path, x, capacity, typed=None, name=None, precision=None):
    """Runs the bundle at `path` (of example `name` with inputs in
    `precision`; by default both read from the file name) on `x`."""
    program = load(rt, path)
    args = {k: torch.from_numpy(v.copy()).cuda() for k, v in x.items()}
    args.update(typed or {})
    outputs = {}
    name = name or path.name.split(".")[0]
    precision = precision or precision_of(path)
    out_dtype = torch.float64 if precision == "f64" else torch.float32
    M, N = next(v.shape[0] for k, v in x.items() if k in ("A", "S", "P")), \
        next(v.shape[1] for k, v in x.items() if k in ("B", "W", "R", "T"))
    if name in ("q5_strong_pairs", "q6_complementary"):
        outputs = {"C_rows": torch.zeros(capacity, dtype=torch.int32, device="cuda"),
                   "C_cols": torch.zeros(capacity, dtype=torch.int32, device="cuda"),
                   "C_values": torch.zeros(capacity, device="cuda"),
                   "C_count": torch.full((1,), 12345, dtype=torch.int64, device="cuda")}
    elif name == "q7_top_preferences":
        outputs = {"C_values": torch.zeros(128, device="cuda"),
                   "C_rows": torch.zeros(128, dtype=torch.int32, device="cuda"),
                   "C_cols": torch.zeros(128, dtype=torch.int32, device="cuda")}
    elif "C" not in args:
        target = "Out" if name == "q1_amplify" else "C"
        outputs = {target: torch.zeros(M, N, device="cuda", dtype=out_dtype)}
    program(**args, **outputs)
    torch.cuda.synchronize()
    return {k: (v.float() if v.dtype in (torch.bfloat16, torch.float16) else v).cpu().numpy()
            for k, v in {**args, **outputs}.items()}


def test_tile_bundles_were_built():
    assert len(BUNDLES) == 43, f"run test/gpu/build_tile_bundles.py --out {TILE_BUNDLES}"


@pytest.mark.parametrize("path", BUNDLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("M,N,K", SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in SIZES])
def test_query_matches_numpy(rt, path, M, N, K):
    name = path.name.split(".")[0]
    x = inputs(name, np.random.default_rng(M * 7 + N * 3 + K),
               M=M, N=N, K=16 if name == "q6_complementary" else K)
    x, typed = typed_inputs(name, x, precision_of(path))
    check_query(rt, path, name, x, typed, M, N)


def check_query(rt, path, name, x, typed, M, N, precision=None):
    """Runs the bundle at `path` of example `name` on inputs `x` (`typed`:
    its inputs as half-precision tensors) and checks it against NumPy."""
    out = run_query(rt, path, x, capacity=M * N, typed=typed, name=name, precision=precision)
    expected = reference(name, x)
    if name in ("q5_strong_pairs", "q6_complementary"):
        # FMA contraction on the GPU moves values by an ulp or so: pairs
        # whose value is within 1e-4 of the threshold may go either way.
        count = int(out["C_count"][0])
        rows, cols, vals = (out["C_" + s][:count] for s in ("rows", "cols", "values"))
        order = np.lexsort((cols, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        if name == "q5_strong_pairs":
            acc, threshold = accumulate_f32(x["P"], x["R"]), 10
        else:
            acc = accumulate_f32(x["S"], x["T"], lambda a, b: np.maximum(a, b) ** 2)
            threshold = 1.77
        got = set(zip(rows.tolist(), cols.tolist()))
        want = set(zip(*[a.tolist() for a in np.nonzero(acc > threshold)]))
        border = set(zip(*[a.tolist() for a in np.nonzero(np.abs(acc - threshold) < 1e-4)]))
        assert got - border == want - border
        assert len(got) == count
        np.testing.assert_allclose(vals, acc[rows, cols], rtol=1e-5, atol=1e-5)
        return
    if name == "q7_top_preferences":
        # FMA contraction moves values by an ulp or so: the returned pairs
        # are the k best up to ties within 1e-4 of the k-th value.
        acc = x["P"].astype(np.float64) @ x["R"]
        vals, rows, cols = out["C_values"], out["C_rows"], out["C_cols"]
        filled = rows >= 0
        count = min(128, acc.size)
        assert filled.sum() == count and np.all(filled[:count])
        vals, rows, cols = vals[:count], rows[:count], cols[:count]
        assert np.all(np.diff(vals) <= 1e-5), "not best first"
        np.testing.assert_allclose(vals, acc[rows, cols], rtol=1e-5, atol=1e-4)
        kth = np.sort(acc.ravel())[::-1][count - 1]
        want = set(zip(*[a.tolist() for a in np.nonzero(acc > kth + 1e-4)]))
        got_pairs = set(zip(rows.tolist(), cols.tolist()))
        assert want <= got_pairs and len(got_pairs) == count
        assert all(acc[r, c] >= kth - 1e-4 for r, c in got_pairs)
        return
    target = "Out" if name == "q1_amplify" else "C"
    got = out[target]
    if name == "q3_strong_pairs_by_zip":
        # Counts of pairs above a threshold: borderline pairs may differ.
        acc = accumulate_f32(x["P"], x["R"])
        border = np.abs(acc - 2) < 1e-4
        assert np.abs(got - expected).sum() <= border.sum()
        return
    scale = max(1.0, float(np.abs(expected).max(initial=0)))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * scale)


def test_select_counts_beyond_capacity(rt):
    path = TILE_BUNDLES / "q5_strong_pairs.t64.kgebundle"
    x = inputs("q5_strong_pairs", np.random.default_rng(3), M=300, N=200, K=64)
    out = run_query(rt, path, x, capacity=5)
    acc = accumulate_f32(x["P"], x["R"])
    assert abs(int(out["C_count"][0]) - np.count_nonzero(acc > 10)) <= \
        np.count_nonzero(np.abs(acc - 10) < 1e-4)
    assert int(out["C_count"][0]) > 5
    for r, c, v in zip(out["C_rows"], out["C_cols"], out["C_values"]):
        assert abs(acc[r, c] - v) < 1e-4 and v > 10 - 1e-4


def test_out_of_range_keys_are_refused_in_checked_mode(rt):
    path = TILE_BUNDLES / "q2_preference_by_zip.t64.kgebundle"
    x = inputs("q2_preference_by_zip", np.random.default_rng(4), M=100, N=90, K=8, zips=7)
    x["Rzip"][17] = 7
    program = load(rt, path)
    args = {k: torch.from_numpy(v).cuda() for k, v in x.items()}
    with pytest.raises(Exception, match="17"):
        program(**args, checked=True)
