"""The example queries of examples/tile: realistic inputs and NumPy
references (what Query.run_cpu returns for each)."""

import pathlib

import numpy as np

EXAMPLES_DIR = pathlib.Path(__file__).resolve().parents[2] / "examples" / "tile"


def zipf_keys(rng, count, groups, exponent=1.1):
    """Group keys with power-law skew (a few areas hold most people)."""
    weights = 1.0 / np.arange(1, groups + 1) ** exponent
    return rng.choice(groups, size=count, p=weights / weights.sum()).astype(np.int32)


def accumulate_f32(A, B, combine=lambda a, b: a * b):
    """sum_k combine(A[i, k], B[k, j]) in float32, k in order: the CPU
    path's rounding exactly, so thresholds decide the same way."""
    acc = np.zeros((A.shape[0], B.shape[1]), np.float32)
    for k in range(A.shape[1]):
        acc += combine(A[:, k, None], B[None, k, :]).astype(np.float32)
    return acc


def inputs(name, rng, M=53, N=41, K=64, zips=7):
    """Inputs of the example `name` (people x restaurants)."""
    P = rng.standard_normal((M, K)).astype(np.float32)
    R = rng.standard_normal((K, N)).astype(np.float32)
    pz, rz = zipf_keys(rng, M, zips), zipf_keys(rng, N, zips)
    if name == "gemm":
        return {"A": P, "B": R}
    if name == "q1_amplify":
        return {"S": P, "W": R, "thres": rng.uniform(0.0, 1.0, M).astype(np.float32)}
    if name in ("q2_preference_by_zip", "q3_strong_pairs_by_zip"):
        return {"P": P, "R": R, "Pzip": pz, "Rzip": rz, "C": np.zeros((zips, zips), np.float32)}
    if name == "q4_same_zip":
        return {"P": P, "R": R, "Pzip": pz, "Rzip": rz}
    if name in ("q5_strong_pairs", "q7_top_preferences"):
        return {"P": P, "R": R}
    if name == "transr_projection":
        return {"E": rng.standard_normal((M + 7, K)).astype(np.float32),
                "W": rng.standard_normal((zips, K, N)).astype(np.float32),
                "h": zipf_keys(rng, M, M + 7), "r": zipf_keys(rng, M, zips)}
    if name == "edge_scores":
        return {"E": rng.standard_normal((M + 7, K)).astype(np.float32),
                "T": rng.standard_normal((N + 3, K)).astype(np.float32),
                "bias": rng.standard_normal(M + 7).astype(np.float32),
                "h": zipf_keys(rng, M, M + 7), "t": zipf_keys(rng, N, N + 3)}
    if name == "transr_score":
        return {"E": rng.standard_normal((M + 7, K)).astype(np.float32),
                "W": (rng.standard_normal((zips, K, N)) / np.sqrt(K)).astype(np.float32),
                "R": rng.standard_normal((zips, N)).astype(np.float32),
                "h": zipf_keys(rng, M, M + 7), "t": zipf_keys(rng, M, M + 7),
                "r": zipf_keys(rng, M, zips)}
    if name == "typed_linear_gradient":
        # IN = M, OUT = N features; 4K edges of a graph of N + 3 nodes, their
        # types skewed; dW initialized (one matrix per type).
        edges, nodes = 4 * K, N + 3
        return {"x": rng.standard_normal((nodes, M)).astype(np.float32),
                "g": rng.standard_normal((nodes, N)).astype(np.float32),
                "norm": rng.uniform(0.1, 1.0, edges).astype(np.float32),
                "src": rng.integers(0, nodes, edges).astype(np.int32),
                "dst": rng.integers(0, nodes, edges).astype(np.int32),
                "etype": zipf_keys(rng, edges, zips),
                "dW": rng.standard_normal((zips, M, N)).astype(np.float32)}
    if name == "q6_complementary":
        S = np.abs(rng.standard_normal((M, 16))).astype(np.float32)
        T = np.abs(rng.standard_normal((16, N))).astype(np.float32)
        S /= np.linalg.norm(S, axis=1, keepdims=True)
        T /= np.linalg.norm(T, axis=0, keepdims=True)
        return {"S": S, "T": T}
    raise KeyError(name)


def _select(acc, keep):
    rows, cols = np.nonzero(keep)
    return rows.astype(np.int32), cols.astype(np.int32), acc[rows, cols]


def reference(name, x):
    """What the query returns for inputs `x`."""
    if name == "transr_projection":
        return np.einsum("bk,bkj->bj", x["E"][x["h"]].astype(np.float64), x["W"][x["r"]])
    if name == "edge_scores":
        d = x["E"][x["h"]][:, None, :].astype(np.float64) - x["T"][x["t"]][None, :, :]
        return (d * d + x["bias"][x["h"]][:, None, None]).sum(-1)
    if name == "transr_score":
        d = x["E"][x["h"]].astype(np.float64) - x["E"][x["t"]]
        p = np.einsum("bk,bkj->bj", d, x["W"][x["r"]]) + x["R"][x["r"]]
        return np.sqrt((p * p).sum(1))
    if name == "typed_linear_gradient":
        dW = x["dW"].astype(np.float64).copy()
        np.add.at(dW, x["etype"], x["norm"][:, None, None] * x["x"][x["src"]][:, :, None]
                  * x["g"][x["dst"]][:, None, :].astype(np.float64))
        return dW
    if name == "gemm":
        return x["A"].astype(np.float64) @ x["B"]
    if name == "q1_amplify":
        p = x["S"][:, :, None] * x["W"][None, :, :]
        th = x["thres"][:, None, None]
        return (p.astype(np.float64) + (p > th) * (p.astype(np.float64) - th)).sum(axis=1)
    if name == "q2_preference_by_zip":
        C = x["C"].astype(np.float64).copy()
        np.add.at(C, (x["Pzip"][:, None], x["Rzip"][None, :]), x["P"].astype(np.float64) @ x["R"])
        return C
    if name == "q3_strong_pairs_by_zip":
        C = x["C"].astype(np.float64).copy()
        np.add.at(C, (x["Pzip"][:, None], x["Rzip"][None, :]), accumulate_f32(x["P"], x["R"]) > 2)
        return C
    if name == "q4_same_zip":
        same = x["Pzip"][:, None] == x["Rzip"][None, :]
        return np.where(same, x["P"].astype(np.float64) @ x["R"], 0.0)
    if name == "q5_strong_pairs":
        acc = accumulate_f32(x["P"], x["R"])
        return _select(acc, acc > 10)
    if name == "q6_complementary":
        acc = accumulate_f32(x["S"], x["T"], lambda a, b: np.maximum(a, b) * np.maximum(a, b))
        return _select(acc, np.abs(acc) > 1.77)
    if name == "q7_top_preferences":
        acc = accumulate_f32(x["P"], x["R"])
        rows, cols = np.indices(acc.shape)
        order = np.lexsort((cols.ravel(), rows.ravel(), -acc.ravel()))[:128]
        return acc.ravel()[order], rows.ravel()[order].astype(np.int32), \
            cols.ravel()[order].astype(np.int32)
    raise KeyError(name)


EXAMPLES = sorted(p.stem for p in EXAMPLES_DIR.glob("*.gamut"))
# Queries with gathered subscripts (beyond GAMUT), in examples/tile/gathered.
GATHERED_EXAMPLES = sorted(p.stem for p in (EXAMPLES_DIR / "gathered").glob("*.gamut"))


def example_path(name):
    """The .gamut file of example `name` (GAMUT's or a gathered one)."""
    if name in GATHERED_EXAMPLES:
        return EXAMPLES_DIR / "gathered" / f"{name}.gamut"
    return EXAMPLES_DIR / f"{name}.gamut"
