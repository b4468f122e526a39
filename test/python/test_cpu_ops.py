"""Every bvec operation on the CPU path against NumPy (float64, i32 indices)."""

import pathlib

import numpy as np
import pytest

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


def gather_slices_reference(name, a):
    """NumPy results of the functions of Inputs/gather_slices.mlir."""
    if name == "complex_chunked":
        E, R, h, r, t = a["E"], a["R"], a["h"], a["r"], a["t"]
        hr, hi, rr, ri, tr, ti = E[h, :32], E[h, 32:], R[r, :32], R[r, 32:], E[t, :32], E[t, 32:]
        return {"score": ((hr * rr - hi * ri) * tr).sum(1) + ((hr * ri + hi * rr) * ti).sum(1)}
    if name == "unaligned":
        v = a["E"][a["h"]]
        return {"n": np.sqrt((v * v).sum(1)), "s": v[:, 2:10], "m": v[:, 2:10].max(1)}
    if name == "odd":
        v, w = a["E"][a["h"]], a["E"][a["t"]]
        return {"d": np.abs(v[:, 1:4] - v[:, 5:8] + w[:, 6:9]).sum(1)}
    if name == "outer":
        v, w = a["E"][a["h"]], a["E"][a["t"]]
        q = (v + w)[:, 2:6]
        return {"o": v[:, 4:8, None] * q[:, None, :], "q": q}
    assert name == "transh_half"
    d = a["E"][a["h"], 64:] - a["E"][a["t"], 64:]
    w = a["P"][a["r"]]
    e = d - (w * d).sum(1)[:, None] * w
    return {"score": np.sqrt((e * e).sum(1))}


GATHER_SLICES = kgetest.split_functions((INPUTS / "gather_slices.mlir").read_text())


@pytest.mark.parametrize("name", sorted(GATHER_SLICES))
def test_gather_slices_match_numpy(tools, tmp_path, name):
    """Slices of gathered rows (the GPU reads them from the table at the
    slice's offset; test/gpu compositions run these against this path)."""
    path = tmp_path / f"{name}.mlir"
    path.write_text(GATHER_SLICES[name])
    sig = kgetest.signature(tools, path)
    rng = np.random.default_rng(7)
    args = {}
    for p in sig["params"]:
        if p["role"] == "table":
            args[p["name"]] = rng.uniform(-1, 1, (11, p["shape"][1])).astype(np.float32)
        elif p["role"] == "indices":
            args[p["name"]] = rng.integers(0, 11, 37).astype(np.dtype(p["dtype"].replace("i", "int")))
    results = kgetest.run_cpu(tools, path, args, tmp_path)
    expected = gather_slices_reference(name, args)
    assert results.keys() == expected.keys()
    for key, value in results.items():
        assert kgetest.scores_match(value, expected[key]), key
