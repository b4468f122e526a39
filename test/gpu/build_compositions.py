#!/usr/bin/env python3
"""Compiles bvec functions beyond the examples — compositions of every
operation, and the inputs the fuzzer once crashed the GPU lowering with —
into bundles, with inputs and the CPU path's results (MLIR ExecutionEngine)
next to them, so that test_compositions.py can check the GPU against the
CPU on the GPU machine:

  <out>/<name>.kgebundle, <out>/<name>.npz (inputs and expected results)

Run here, where the compiler is:
    PYTHONPATH=build/python_packages .venv/bin/python test/gpu/build_compositions.py --out .carry/compositions
"""

import argparse
import pathlib
import re

import numpy as np

from kge import compiler, ir

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = {
    # Every operation; f32 (the GPU lowering takes f32 tables).
    "all_ops": (ROOT / "test" / "python" / "Inputs" / "all_ops.mlir", {"f64": "f32"}),
}
for path in sorted((ROOT / "test" / "fuzz" / "regressions").glob("*.mlir")):
    SOURCES[path.stem.replace("-", "_")] = (path, {})


def random_inputs(signature, rng, batch, rows=40):
    arrays, sizes = {}, {}
    for p in signature["params"]:
        if p["role"] == "table":
            shape = [rows] + [d if isinstance(d, int) else sizes.setdefault(d, 8)
                              for d in p["shape"][1:]]
            arrays[p["name"]] = rng.uniform(-1, 1, shape).astype(np.float32)
    for p in signature["params"]:
        if p["role"] == "indices":
            bound = min(arrays[t].shape[0] for t in p["indexes"])
            dtype = np.int32 if p["dtype"] == "i32" else np.int64
            arrays[p["name"]] = rng.integers(0, bound, batch).astype(dtype)
    return arrays


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--batch", type=int, default=300)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (path, substitutions) in SOURCES.items():
        text = path.read_text()
        for old, new in substitutions.items():
            text = re.sub(old, new, text)
        ctx = ir.Context()
        module = ir.Module.parse(ctx, text, str(path))
        signature = ir.signature(module)
        inputs = random_inputs(signature, np.random.default_rng(0), args.batch)
        expected = ir.CpuFunction.compile(module)(inputs)
        bundle = compiler.compile_bundle(module)
        bundle.save(args.out / f"{name}.kgebundle")
        np.savez(args.out / f"{name}.npz", **{f"in_{k}": v for k, v in inputs.items()},
                 **{f"out_{k}": v for k, v in expected.items()})
        print(name, sorted(expected))


if __name__ == "__main__":
    main()
