"""Every bvec operation on the CPU path against NumPy (float64, i32 indices)."""

import pathlib

import numpy as np

import kgetest

INPUTS = pathlib.Path(__file__).parent / "Inputs"


def reference(E, P, h, t):
    a, b, m = E[h], E[t], P[h]
    sigmoid = lambda x: 1 / (1 + np.exp(-x))
    unary = (sigmoid(np.tanh(a)) + np.cos(np.sin(b)) + np.sqrt(np.abs(a))
             + np.log(np.exp(b) + 1) + a)
    binary = np.maximum(a, b) * np.minimum(a, b) / (a * a + 2)
    dot = np.sum(a * b, axis=1)
    reductions = (a.sum(1) + b.mean(1) + a.max(1) - b.min(1)
                  + np.abs(a).sum(1) + np.sqrt((b * b).sum(1)) + dot)
    products = np.einsum("bk,bkj->bj", dot[:, None] * b, m)
    outer = a[:, 3:, None] * products[:, None, :]
    return {"unary": unary, "binary": binary, "reductions": reductions,
            "products": products, "outer": outer}


def test_all_operations_match_numpy(tools, tmp_path):
    rng = np.random.default_rng(3)
    args = {"E": rng.uniform(-1, 1, (30, 6)), "P": rng.uniform(-1, 1, (30, 6, 4)),
            "h": rng.integers(0, 30, 45).astype(np.int32),
            "t": rng.integers(0, 30, 45).astype(np.int32)}
    results = kgetest.run_cpu(tools, INPUTS / "all_ops.mlir", args, tmp_path)
    expected = reference(**args)
    assert results.keys() == expected.keys()
    for name, value in results.items():
        assert value.dtype == np.float64
        assert kgetest.scores_match(value, expected[name]), name


def test_composite_matrices_match_numpy(tools, tmp_path):
    rng = np.random.default_rng(5)
    args = {"E": rng.uniform(-1, 1, (30, 20)).astype(np.float32),
            "P": rng.uniform(-1, 1, (7, 20, 12)).astype(np.float32),
            "Q": rng.uniform(-1, 1, (7, 20, 12)).astype(np.float32),
            "h": rng.integers(0, 30, 45).astype(np.int32),
            "r": rng.integers(0, 7, 45).astype(np.int32)}
    results = kgetest.run_cpu(tools, INPUTS / "matrix_runs.mlir", args, tmp_path)
    E, P, Q, h, r = (args[k].astype(np.float64) if k in "EPQ" else args[k] for k in "EPQhr")
    y = np.einsum("bk,bkj->bj", E[h], P[r] * Q[r] + 0.5)
    assert kgetest.scores_match(results["y"], y)
    assert kgetest.scores_match(results["s"], np.sqrt((y * y).sum(1)))


def test_carried_stages_match_numpy(tools, tmp_path):
    """The three-stage composition whose GPU kernel carries vectors between
    stages in registers (test/gpu compositions run it against this path)."""
    rng = np.random.default_rng(6)
    args = {"E": rng.uniform(-1, 1, (30, 128)).astype(np.float32),
            "R": rng.uniform(-1, 1, (7, 128)).astype(np.float32),
            "S": rng.uniform(-1, 1, (7, 64)).astype(np.float32),
            "h": rng.integers(0, 30, 45).astype(np.int32),
            "r": rng.integers(0, 7, 45).astype(np.int32),
            "t": rng.integers(0, 30, 45).astype(np.int32)}
    results = kgetest.run_cpu(tools, INPUTS / "carried_stages.mlir", args, tmp_path)
    E, R, S = (args[k].astype(np.float64) for k in "ERS")
    h, r, t = args["h"], args["r"], args["t"]
    d = E[h] - E[t]
    n = np.sqrt((d * d).sum(1))
    m = n[:, None] * R[r] + d
    k = (m * R[r]).sum(1)
    w = k[:, None] * m - E[h]
    assert kgetest.scores_match(results["w"], w)
    assert kgetest.scores_match(results["score"], np.abs(w).sum(1))
    assert kgetest.scores_match(results["small"], (n[:, None] * S[r]).mean(1))


def test_batch_of_one_and_zero_rows_used(tools, tmp_path):
    """Batch size 1 works, and rows no index selects are never read."""
    rng = np.random.default_rng(4)
    E = rng.uniform(-1, 1, (5, 6))
    E[1:] = np.nan
    args = {"E": E, "P": rng.uniform(-1, 1, (5, 6, 4)),
            "h": np.array([0], np.int32), "t": np.array([0], np.int32)}
    results = kgetest.run_cpu(tools, INPUTS / "all_ops.mlir", args, tmp_path)
    expected = reference(**args)
    for name, value in results.items():
        assert kgetest.scores_match(value, expected[name]), name
