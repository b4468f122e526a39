"""Tables in half precision (f16, bf16): gathers widen their rows to f32, so
that a score function computes in f32 whatever its tables hold; the CPU
path against NumPy on the same (widened) numbers, dtype mismatches
refused, IEEE behaviour of values a half-precision table cannot hold."""

import ml_dtypes
import numpy as np
import pytest

import kge
from kge import Indices, Table

BF16 = ml_dtypes.bfloat16


@kge.function
def transe(E: Table(None, None, dtype="bf16"), R: Table(None, None, dtype="f16"),
           h: Indices, r: Indices, t: Indices):
    return kge.norm(E[h] + R[r] - E[t], p=2)


@kge.function
def rescal(E: Table(None, None, dtype="f16"), P: Table(None, None, None, dtype="bf16"),
           h: Indices, r: Indices, t: Indices):
    return kge.dot(E[h] @ P[r], E[t])


def inputs(rng, rows=50, relations=7, length=24, batch=33):
    return {"h": rng.integers(0, rows, batch), "r": rng.integers(0, relations, batch),
            "t": rng.integers(0, rows, batch)}


def test_gathers_widen_half_precision_rows_to_f32():
    assert "!bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>" in transe.ir
    assert "!bvec.table<?x?xf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>" in transe.ir
    assert ("!bvec.table<?x?x?xbf16>, !bvec.indices<?xi64> -> !bvec.mat<?x?x?xf32>"
            in rescal.ir)
    sig = transe.signature
    assert [p["dtype"] for p in sig["params"]] == ["bf16", "f16", "i64", "i64", "i64", "f32"]


@pytest.mark.parametrize("seed", range(3))
def test_half_precision_tables_on_the_cpu_like_numpy(seed):
    rng = np.random.default_rng(seed)
    args = inputs(rng)
    E = rng.standard_normal((50, 24)).astype(BF16)
    R = rng.standard_normal((7, 24)).astype(np.float16)
    score = transe.run_cpu(E=E, R=R, **args)
    e, r = E.astype(np.float64), R.astype(np.float64)
    expected = np.linalg.norm(e[args["h"]] + r[args["r"]] - e[args["t"]], axis=1)
    assert score.dtype == np.float32
    np.testing.assert_allclose(score, expected, rtol=2e-6)

    Eh = rng.standard_normal((50, 24)).astype(np.float16)
    P = (rng.standard_normal((7, 24, 24)) / 5).astype(BF16)
    score = rescal.run_cpu(E=Eh, P=P, **args)
    e, p = Eh.astype(np.float64), P.astype(np.float64)
    expected = np.einsum("bk,bkj,bj->b", e[args["h"]], p[args["r"]], e[args["t"]])
    np.testing.assert_allclose(score, expected, rtol=1e-5, atol=1e-5)


def test_a_table_of_the_wrong_precision_is_refused():
    rng = np.random.default_rng(0)
    args = inputs(rng)
    E = rng.standard_normal((50, 24)).astype(BF16)
    R = rng.standard_normal((7, 24)).astype(np.float16)
    with pytest.raises(ValueError, match="table 'E' expects dtype bf16, got f32"):
        transe.run_cpu(E=E.astype(np.float32), R=R, **args)
    with pytest.raises(ValueError, match="table 'R' expects dtype f16, got bf16"):
        transe.run_cpu(E=E, R=R.astype(BF16), **args)
    with pytest.raises(ValueError, match="table 'E' expects dtype bf16, got f16"):
        transe.run_cpu(E=E.astype(np.float16), R=R, **args)


def test_values_beyond_half_precision_follow_ieee():
    """float32 values beyond f16's range become +-inf when the table is
    converted (NumPy, like PyTorch, rounds them so); the scores of the edges
    that read them are inf (a norm) or NaN (inf - inf), the others finite."""
    rng = np.random.default_rng(1)
    E = rng.standard_normal((4, 8)).astype(BF16)
    big = rng.standard_normal((3, 8)).astype(np.float32)
    big[1, 2] = 1.0e6  # f16's largest finite value is 65504
    with np.errstate(over="ignore"):
        R = big.astype(np.float16)
    assert np.isinf(R[1, 2])
    h, t = np.array([0, 1, 2]), np.array([3, 2, 1])
    score = transe.run_cpu(E=E, R=R, h=h, r=np.array([0, 1, 2]), t=t)
    assert np.isfinite(score[[0, 2]]).all() and np.isinf(score[1])


def test_empty_batch_on_the_cpu():
    E = np.zeros((4, 8), BF16)
    R = np.zeros((3, 8), np.float16)
    empty = np.zeros(0, np.int64)
    score = transe.run_cpu(E=E, R=R, h=empty, r=empty, t=empty)
    assert score.shape == (0,) and score.dtype == np.float32


def test_half_precision_bundles_name_their_dtypes():
    bundle = transe.compile(sizes={"D_E": 64}, cubin=False)
    params = {p["name"]: p["dtype"] for p in bundle.manifest["function"]["params"]}
    assert params == {"E": "bf16", "R": "f16", "h": "i64", "r": "i64", "t": "i64",
                      "score": "f32"}
    assert "ld.global.v4.b16" in bundle.ptx and "cvt.f32.bf16" in bundle.ptx
