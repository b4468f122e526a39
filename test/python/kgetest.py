"""Helpers of KGE's Python tests: signatures, random inputs, comparisons."""

import json
import re
import subprocess

import numpy as np

DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64,
          "i32": np.int32, "i64": np.int64}

# fp32 tolerance against a float64 reference: far tighter than the 1e-3
# relative perturbation the tests must detect.
RTOL = {np.float32: 2e-5, np.float64: 1e-12, np.float16: 2e-2}


def signature(tools, path):
    """The JSON signature of the only bvec.func of `path`."""
    out = subprocess.run([tools["kge-translate"], "--bvec-to-signature", str(path)],
                         check=True, capture_output=True, text=True).stdout
    (sig,) = json.loads(out)
    return sig


def make_indices(rng, kind, batch, rows):
    """Index batches of the four kinds the tests use."""
    if kind == "uniform":
        return rng.integers(0, rows, batch)
    if kind == "duplicate_heavy":
        return rng.integers(0, min(rows, 3), batch)
    if kind == "all_identical":
        return np.full(batch, rng.integers(0, rows))
    if kind == "duplicate_free":
        assert rows >= batch
        return rng.permutation(rows)[:batch]
    raise ValueError(kind)


def sizes_for(sig, length):
    """Embedding length `length` for every dynamic length; the relation space
    of TransR gets a different length to catch transposed projections."""
    sizes = {}
    for p in sig["params"]:
        for d in p["shape"][1:]:
            if isinstance(d, str):
                sizes.setdefault(d, length + 3 * len(sizes))
    return sizes


def printed_example(tools, path):
    """The IR of `path` as kge-opt prints it (without its final blank line)."""
    return subprocess.run([str(tools["kge-opt"]), str(path)], capture_output=True, text=True,
                          check=True).stdout.rstrip("\n") + "\n"


def make_inputs(sig, rng, batch, sizes, kind, rows):
    """Random arguments for `sig`: tables with `rows` rows whose symbolic
    item sizes come from `sizes`, index arrays of `kind`."""
    args = {}
    for p in sig["params"]:
        if p["role"] != "table":
            continue
        shape = [d if isinstance(d, int) else sizes.get(d, rows) for d in p["shape"]]
        shape[0] = rows if not isinstance(p["shape"][0], int) else shape[0]
        args[p["name"]] = rng.uniform(-1, 1, shape).astype(DTYPES[p["dtype"]])
    for p in sig["params"]:
        if p["role"] != "indices":
            continue
        bound = min(args[t].shape[0] for t in p["indexes"]) if p["indexes"] else 1
        args[p["name"]] = make_indices(rng, kind, batch, bound).astype(DTYPES[p["dtype"]])
    return args


def run_cpu(tools, path, args, tmp_path, extra=()):
    """Runs `path` on the CPU runner; returns {result name: array} or raises
    CalledProcessError with the runner's stderr."""
    command = [str(tools["kge-cpu-runner"]), str(path)]
    for name, array in args.items():
        file = tmp_path / f"arg_{name}.npy"
        np.save(file, array)
        command += ["--arg", f"{name}={file}"]
    sig = signature(tools, path)
    results = [p["name"] for p in sig["params"] if p["role"] == "result"]
    for name in results:
        command += ["--out", f"{name}={tmp_path / f'out_{name}.npy'}"]
    subprocess.run(command + list(extra), check=True, capture_output=True, text=True)
    return {name: np.load(tmp_path / f"out_{name}.npy") for name in results}


def run_cpu_failing(tools, path, args, tmp_path, extra=()):
    """Runs the CPU runner expecting failure; returns its stderr."""
    try:
        run_cpu(tools, path, args, tmp_path, extra)
    except subprocess.CalledProcessError as error:
        assert error.returncode == 1, error.stderr
        assert "PLEASE submit a bug report" not in error.stderr
        return error.stderr
    raise AssertionError("the runner accepted bad input")


def scores_match(actual, reference):
    """True when `actual` equals the float64 `reference` to the precision of
    its dtype (relative to the scale of the reference)."""
    reference = np.asarray(reference, dtype=np.float64)
    actual64 = np.asarray(actual, dtype=np.float64)
    if actual64.shape != reference.shape or not np.all(np.isfinite(actual64)):
        return False
    scale = max(np.max(np.abs(reference)), 1.0)
    return bool(np.all(np.abs(actual64 - reference) <= RTOL[actual.dtype.type] * scale))


def split_functions(text):
    """{function name: its text} of the `// -----`-separated pieces of a
    file's text, one bvec.func each (a bundle or a CPU run takes one)."""
    pieces = text.split("\n// -----\n")
    return {re.search(r"bvec\.func @(\w+)", p).group(1): p for p in pieces}
