#!/usr/bin/env python3
"""Compiles bvec functions beyond the examples — compositions of every
operation, and the fuzzer's regression inputs that the compiler accepts —
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
import sys

import numpy as np

from kge import compiler, ir

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test" / "python"))
import kgetest  # noqa: E402
SOURCES = {
    # Every operation; f32 (the GPU lowering takes f32 tables).
    "all_ops": (ROOT / "test" / "python" / "Inputs" / "all_ops.mlir", {"f64": "f32"}),
    # Static lengths, matrices shared by runs of edges: tensor cores.
    "matrix_runs": (ROOT / "test" / "python" / "Inputs" / "matrix_runs.mlir", {}),
    "two_products": (ROOT / "test" / "python" / "Inputs" / "two_products.mlir", {}),
    # Three stages, vectors carried between them in registers.
    "carried_stages": (ROOT / "test" / "python" / "Inputs" / "carried_stages.mlir", {}),
    "carried_across_matrix": (ROOT / "test" / "python" / "Inputs" / "carried_across_matrix.mlir", {}),
    # Elementwise functions (test_elementary.py also runs it over every
    # magnitude of float).
    "elementary": (ROOT / "test" / "python" / "Inputs" / "elementary.mlir", {}),
    # Slices of gathered rows, one function per `// -----` piece: each
    # compiled as it is and with rows staged in shared memory.
    "gather_slices": (ROOT / "test" / "python" / "Inputs" / "gather_slices.mlir", {}),
}
# Layouts besides the default, per source: {suffix: layout options}.
LAYOUTS = {"gather_slices": {"staged": {"stage_repeats": 0}}}
for path in sorted((ROOT / "test" / "fuzz" / "regressions").glob("*.mlir")):
    SOURCES[path.stem.replace("-", "_")] = (path, {})


def pieces(name, text):
    """(name, text) of each function of a file of `// -----`-separated
    pieces (a bundle holds one function); the name alone for one piece."""
    if "\n// -----\n" not in text:
        return [(name, text)]
    return [(f"{name}_{function}", piece)
            for function, piece in kgetest.split_functions(text).items()]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--batch", type=int, default=300)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for source, (path, substitutions) in SOURCES.items():
        text = path.read_text()
        for old, new in substitutions.items():
            text = re.sub(old, new, text)
        for name, piece in pieces(source, text):
            ctx = ir.Context()
            try:
                # Some regressions are inputs the compiler must refuse; they
                # have nothing to run (kge-fuzz replays them).
                module = ir.Module.parse(ctx, piece, str(path))
                bundles = {name: compiler.compile_bundle(module)}
                for suffix, layout in LAYOUTS.get(source, {}).items():
                    bundles[f"{name}_{suffix}"] = compiler.compile_bundle(module, **layout)
            except ir.MLIRError as error:
                print(name, "refused by the compiler:", error.diagnostics[0])
                continue
            signature = ir.signature(module)
            inputs = kgetest.make_inputs(signature, np.random.default_rng(0), args.batch,
                                         kgetest.sizes_for(signature, 8), "uniform", 40)
            expected = ir.CpuFunction.compile(module)(inputs)
            for each, bundle in bundles.items():
                bundle.save(args.out / f"{each}.kgebundle")
                np.savez(args.out / f"{each}.npz", **{f"in_{k}": v for k, v in inputs.items()},
                         **{f"out_{k}": v for k, v in expected.items()})
                print(each, sorted(expected))


if __name__ == "__main__":
    main()
