#!/usr/bin/env python3
"""Compiles the gradient functions (bvec-differentiate) of the example score
functions, and the functions themselves, into kernel bundles for the GPU
suite's gradient tests and bench/bench_gradients.py (run here, where the
compiler is; the bundles travel to the GPU machine):

  <out>/<example>.grad.<variant>.kgebundle   the gradient function
  <out>/<example>.fwd.<variant>.kgebundle    the score function
  <out>/outer_sum.kgebundle                  kge.autograd.OUTER_SUM
  <out>/shared.<math>/<product>.kgebundle    kge.shared_negatives.PRODUCTS at
                                             matrix math tf32 and tf32x3

variants: dyn (every length dynamic) and D<n> (lengths specialized to n).
Gradients are derived with factor-matrices: a table of matrices (TransR's,
RESCAL's) gets the factors of its outer products, which OUTER_SUM sums per
matrix. Examples whose gradient the GPU lowering refuses are listed in
<out>/skipped.json with the compiler's reason.
"""

import argparse
import json
import pathlib

from kge import ir
from kge.autograd import outer_sum_bundle
from kge.compiler import compile_bundle, gradient_module
from kge.shared_negatives import compile_products, save_products

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--lengths", type=int, nargs="*", default=[32, 128])
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    skipped = {}
    for path in sorted((ROOT / "examples" / "bvec").glob("*.mlir")):
        name = path.stem
        module = ir.Module.parse(ir.Context(), path.read_text())
        try:
            grad = gradient_module(module, name, factor_matrices=True)
        except ir.MLIRError as error:
            skipped[name] = "; ".join(error.diagnostics)
            continue
        symbols = sorted({d for p in ir.signature(module, name)["params"]
                          for d in p["shape"][1:] if isinstance(d, str)})
        variants = {"dyn": None}
        variants.update({f"D{n}": {s: n for s in symbols} for n in args.lengths})
        for variant, sizes in variants.items():
            try:
                bundle = compile_bundle(grad, sizes=sizes)
            except ir.MLIRError as error:
                skipped[name] = "; ".join(error.diagnostics)
                break
            bundle.save(args.out / f"{name}.grad.{variant}.kgebundle")
            compile_bundle(module, sizes=sizes).save(args.out / f"{name}.fwd.{variant}.kgebundle")
    outer_sum_bundle().save(args.out / "outer_sum.kgebundle")
    for matrix_math in ("tf32", "tf32x3"):
        save_products(compile_products(matrix_math), args.out / f"shared.{matrix_math}")
    (args.out / "skipped.json").write_text(json.dumps(skipped, indent=2) + "\n")
    print(f"bundles in {args.out}; skipped: {', '.join(skipped) or 'none'}")


if __name__ == "__main__":
    main()
