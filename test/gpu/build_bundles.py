#!/usr/bin/env python3
"""Compiles the example score functions into kernel bundles for the GPU
suite (run here, where the compiler is; the bundles travel to the GPU
machine):

  <out>/<example>.<mode>.<variant>.kgebundle

modes: pos (positive scoring), neg (tail corruption, K negatives per edge),
shared (every edge against N negatives shared by the batch, through a tile
task: convert-bvec-to-tile; the examples whose score is one reduction over
the embedding: dyn and D<n> on CUDA cores, tf32.<v> and tf32x3.<v> with
matrix-math=tf32 / tf32x3 and bf16.<v> with bf16 tables, for v in dyn and
D<n>: product forms take tensor cores);
variants: dyn (every length dynamic, 4-byte loads), D<n> (lengths
specialized to n, 16-byte loads), staged.dyn and staged.D128 (rows staged
in shared memory in every tile, layout option stage-repeats=0), and
bf16.<v> / f16.<v> (every table in half precision, its gathers widened to
f32) for v in dyn, D128, D512 and staged.D128.
"""

import argparse
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
LENGTHS = (32, 100, 128, 512)
HALF_VARIANTS = ("dyn", "D128", "D512", "staged.D128")
# Sorted by head only from 4096 edges on (layout option reorder-min-batch):
# the examples without matrix products, positive mode, D128.
SORT_LARGE = "reorder-key=h reorder-group=0 reorder-min-batch=4096"


def in_precision(text, precision):
    """The example with every table in `precision`; its gathers, which give
    f32 vectors and matrices, then widen the rows."""
    if precision == "f32":
        return text
    return (text.replace("!bvec.table<?x?xf32>", f"!bvec.table<?x?x{precision}>")
            .replace("!bvec.table<?x?x?xf32>", f"!bvec.table<?x?x?x{precision}>"))


def run(*command, stdin=None):
    result = subprocess.run([str(c) for c in command], input=stdin,
                            capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"{' '.join(map(str, command))} failed:\n{result.stderr}")
    return result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", type=pathlib.Path, default=ROOT / "build" / "bin")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--examples", nargs="*", default=None)
    parser.add_argument("--lengths", type=int, nargs="*", default=list(LENGTHS))
    parser.add_argument("--layout", default="",
                        help="bvec-fuse options for every bundle, e.g. tile=16 (tuning)")
    parser.add_argument("--suffix", default="", help="appended to the variant names")
    parser.add_argument("--modes", nargs="*", default=["pos", "neg", "shared"])
    parser.add_argument("--precisions", nargs="*", default=["f32", "bf16", "f16"],
                        help="table precisions: f32 builds every variant, bf16/f16 "
                             + ", ".join(HALF_VARIANTS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    opt, translate = args.bin / "kge-opt", args.bin / "kge-translate"
    sources = sorted((ROOT / "examples" / "bvec").glob("*.mlir"))
    if args.examples:
        sources = [s for s in sources if s.stem in args.examples]
    for source in sources:
        (sig,) = json.loads(run(translate, "--bvec-to-signature", source))
        lengths = sorted({d for p in sig["params"] for d in p["shape"][1:]
                          if isinstance(d, str)})
        for mode, options in (("pos", ""), ("neg", "negative=t"),
                              ("shared", "shared-negatives=t")):
            if mode not in args.modes:
                continue
            if mode == "shared" and not translates(opt, source):
                print(f"{source.stem}: not one reduction over the embedding, no shared mode")
                continue
            options = " ".join(o for o in (options, args.layout) if o)
            # Staged variants stage rows in every tile (stage-repeats=0): the
            # shared-memory path that the default layout leaves off.
            variants = ([("dyn", None, "")] + [(f"D{n}", n, "") for n in args.lengths]
                        + [("staged.dyn", None, "stage-repeats=0"),
                           ("staged.D128", 128, "stage-repeats=0")])
            variants = [(precision, v) for precision in args.precisions for v in variants
                        if precision == "f32" or v[0] in HALF_VARIANTS]
            if mode == "shared":
                # Tensor cores: f32 tables at tf32 / tf32x3, bf16 tables.
                plain = [v for p, v in variants
                         if p == "f32" and not v[0].startswith("staged")]
                variants = [("f32", v) for v in plain]
                for math in ("tf32", "tf32x3"):
                    variants += [("f32", (f"{math}.{name}", n, f"matrix-math={math}"))
                                 for name, n, _ in plain]
                if "bf16" in args.precisions:
                    variants += [("bf16", v) for v in plain]
            if mode == "pos" and "vec_mul_mat" not in source.read_text():
                variants.append(("f32", ("sort_large.D128", 128, SORT_LARGE)))
            if mode == "pos" and "vec_mul_mat" in source.read_text():
                # Matrix products go through tile by default; the fused
                # kernel's stays built and tested.
                variants += [("f32", (f"fused.D{n}", n, "fuse-matrix-products=1"))
                             for n in args.lengths]
            for precision, (name, n, extra) in variants:
                passes = []
                if n is not None:
                    sizes = ",".join(f"{s}={n}" for s in lengths)
                    passes.append(f"-bvec-specialize=sizes={sizes}")
                lowering = " ".join(o for o in (options, extra) if o)
                passes.append(f"-kge-lower-to-gpu={lowering}" if lowering else "-kge-lower-to-gpu")
                name += args.suffix
                if precision != "f32":
                    name = f"{precision}.{name}"
                lowered = run(opt, "-", *passes,
                              stdin=in_precision(source.read_text(), precision))
                bundle = run(translate, "--kge-to-bundle", stdin=lowered)
                path = args.out / f"{source.stem}.{mode}.{name}.kgebundle"
                path.write_text(bundle)
                print(path.name, len(bundle))


def translates(opt, source):
    """Whether convert-bvec-to-tile takes the example (shared negatives)."""
    return subprocess.run([str(opt), str(source), "--convert-bvec-to-tile=shared-negatives=t"],
                          capture_output=True).returncode == 0


if __name__ == "__main__":
    main()
