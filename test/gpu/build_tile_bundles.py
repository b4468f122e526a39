#!/usr/bin/env python3
"""Compiles the matmul-like queries of examples/tile into kernel bundles for
the GPU suite (here, where the compiler is; they travel to the GPU machine):

  <out>/<query>.<shape>.kgebundle

for every query and the tile shapes t64 (64x64x16 blocks, 4x4 per
thread), t128 (128x128x8, 8x8), t32 (32x32x8, 2x2) and auto (GAMUT's
heuristic: the 128 kernel when its grid fills the GPU, else the 64 one).
"""

import argparse
import pathlib

from build_bundles import ROOT, run
SHAPES = {"t64": "block-m=64 block-n=64 block-k=16 thread-m=4 thread-n=4",
          "t128": "block-m=128 block-n=128 block-k=8 thread-m=8 thread-n=8",
          "t32": "block-m=32 block-n=32 block-k=8 thread-m=2 thread-n=2",
          # GAMUT's heuristic: both 128 and 64 kernels, chosen at launch.
          "auto": ""}
# Input precisions: <query>.<dtype>.<shape>.kgebundle with the query's
# inputs in that dtype (keys stay i32).
PRECISIONS = {"gemm": {"A": None, "B": None}, "q2_preference_by_zip": {"P": None, "R": None}}
DTYPES = ("bf16", "f16", "f64")
# Outputs the GPU lowering does not take yet.
CPU_ONLY = set()
# Top-k sorts a block's pairs in shared memory: at most 4096 of them.
SHAPES_OF = {"q7_top_preferences": ("t64", "t32", "auto")}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", type=pathlib.Path, default=ROOT / "build" / "bin")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    count = 0
    for path in sorted((ROOT / "examples" / "tile").glob("*.gamut")):
        if path.stem in CPU_ONLY:
            continue
        tile_ir = run(args.bin / "kge-translate", "--import-gamut", f"--gamut-name={path.stem}", path)
        for shape, options in SHAPES.items():
            if shape not in SHAPES_OF.get(path.stem, SHAPES):
                continue
            lowered = run(args.bin / "kge-opt", "--convert-tile-to-gpu" +
                          (f"={options}" if options else ""), "--kge-lower-to-gpu", stdin=tile_ir)
            bundle = run(args.bin / "kge-translate", "--kge-to-bundle", stdin=lowered)
            (args.out / f"{path.stem}.{shape}.kgebundle").write_text(bundle)
            count += 1
        for dtype in DTYPES if path.stem in PRECISIONS else ():
            typed = run(args.bin / "kge-translate", "--import-gamut", f"--gamut-name={path.stem}",
                        "--gamut-dtype=" + ",".join(f"{n}:{dtype}" for n in PRECISIONS[path.stem]),
                        path)
            for shape in ("t64", "t128"):
                options = SHAPES[shape]
                lowered = run(args.bin / "kge-opt", "--convert-tile-to-gpu" +
                              (f"={options}" if options else ""), "--kge-lower-to-gpu", stdin=typed)
                bundle = run(args.bin / "kge-translate", "--kge-to-bundle", stdin=lowered)
                (args.out / f"{path.stem}.{dtype}.{shape}.kgebundle").write_text(bundle)
                count += 1
    print(f"{count} bundles in {args.out}")


if __name__ == "__main__":
    main()
