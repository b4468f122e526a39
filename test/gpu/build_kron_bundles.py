#!/usr/bin/env python3
"""Compiles the `kron` kernel configurations (test/gpu/kron_configs.py)
into kernel bundles for the GPU suite and the benchmarks (run here, where
the compiler is; the bundles travel to the GPU machine):

  <out>/<config>.<order>.kgebundle
"""

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT / "build" / "python_packages"))
    from kge import kron
    from kron_configs import CONFIGS, ORDERS, bundle_name
    for name, config in CONFIGS.items():
        for order in ORDERS:
            bundle = kron.compile_gram(**config, order=order, cache=False)
            bundle.save(args.out / bundle_name(name, order))
            print(f"{name}.{order}: {len(bundle.text)} bytes")


if __name__ == "__main__":
    main()
