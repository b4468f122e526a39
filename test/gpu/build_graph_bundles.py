#!/usr/bin/env python3
"""Compiles the graph examples (examples/graph/*.mlir) into kernel bundles
for the GPU suite and the benchmarks (run here, where the compiler is; the
bundles travel to the GPU machine):

  <out>/<example>.<variant>.kgebundle       the layer
  <out>/<example>_grad.<variant>.kgebundle  its backward function

variants: default (kge-lower-to-gpu's defaults: f32 layers on CUDA cores,
typed linear layers' matrices per edge type at 3xTF32 through the segment
iterators), tf32 (matrix-math=tf32), fma (everything on CUDA cores), and
F<n> (the features' row lengths fixed to n, default options).
"""

import argparse
import pathlib
import re
import sys

from build_bundles import ROOT, run

VARIANTS = {"default": "", "tf32": "matrix-math=tf32", "fma": "matrix-math=fma"}
FIXED = (64, 128)


def fixed(text, n):
    """The example with every feature row length (the last dimension of
    each 2-D tensor and the two last of each weight) fixed to n."""
    text = re.sub(r"tensor<\?x\?xf32>", f"tensor<?x{n}xf32>", text)
    text = re.sub(r"tensor<\?x\?x\?xf32>", f"tensor<?x{n}x{n}xf32>", text)
    return re.sub(r"tensor<\?xf32> \{kge.param = \"bias\"\}",
                  f"tensor<{n}xf32> {{kge.param = \"bias\"}}", text).replace(
        f"bias(%bias : tensor<?xf32>)", f"bias(%bias : tensor<{n}xf32>)")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", type=pathlib.Path, default=ROOT / "build" / "bin")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    opt, translate = args.bin / "kge-opt", args.bin / "kge-translate"
    sys.path.insert(0, str(args.bin.parent / "python_packages"))
    from kge import graph
    # The examples (the vanilla layers kge.nn runs) and the layers kge.nn
    # runs with compact materialization (graph-compact-materialize).
    layers = [(source.stem, source.read_text())
              for source in sorted((ROOT / "examples" / "graph").glob("*.mlir"))]
    layers += [("rgat_unfused", graph.rgat_unfused().text),
               ("rgat_unfused_compact", graph.rgat_unfused().compacted().text),
               ("rgat_compact", graph.rgat_layer.compacted().text),
               ("hgt_compact", graph.hgt_compact_layer.text)]
    for stem_name, text in layers:
        variants = [(name, text, options) for name, options in VARIANTS.items()]
        variants += [(f"F{n}", fixed(text, n), "") for n in FIXED]
        for name, body, options in variants:
            lowering = f"-kge-lower-to-gpu={options}" if options else "-kge-lower-to-gpu"
            # The layer and its backward function (graph-differentiate).
            for stem, differentiate in ((stem_name, []),
                                        (stem_name + "_grad",
                                         ["-graph-differentiate=keep-forward=0"])):
                lowered = run(opt, "-", *differentiate, "-convert-graph-to-tile", lowering,
                              stdin=body)
                bundle = run(translate, "--kge-to-bundle", stdin=lowered)
                path = args.out / f"{stem}.{name}.kgebundle"
                path.write_text(bundle)
                print(path.name, len(bundle))


if __name__ == "__main__":
    main()
