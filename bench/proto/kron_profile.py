#!/usr/bin/env python3
"""Probe: one Gram matrix of kron_variants' dense64 set (complete graphs,
every octile full) with a variant's bundle, for a profiler to attach to:

    ncu -k gram_solve --launch-skip 1 --launch-count 1 \\
        python3 bench/proto/kron_profile.py DIR/VARIANT
"""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "test" / "gpu"), str(ROOT / "bench"), str(ROOT / "bench" / "proto")]


def main():
    import torch
    from kge import kron
    from kge.compiler import Bundle
    from kron_configs import CONFIGS, bundle_name
    from kron_variants import dense_graphs
    c = CONFIGS["delta_sqexp"]
    bundle = Bundle.read(pathlib.Path(sys.argv[1]) / bundle_name("delta_sqexp", "auto"))
    program = bundle.load()
    tensors = kron.gram_arguments(bundle, kron.pack(dense_graphs(), c["node_features"],
                                                    c["edge_features"]))
    for _ in range(2):  # the first launch loads the module
        program(**tensors)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
