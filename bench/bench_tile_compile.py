#!/usr/bin/env python3
"""Compile time of the matmul-like queries of examples/tile, on the machine
that compiles (no GPU needed): cold (parse, tile -> gpu -> NVVM, PTX, ptxas
to a cubin) and from the persistent bundle cache (parse, hash, read).
Median of --repeats runs each; writes one JSON file (--out)."""

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "build" / "python_packages"))
    import kge.tile

    os.environ["KGE_CACHE_DIR"] = tempfile.mkdtemp(prefix="kge-cache-")
    rows = []
    for path in sorted((ROOT / "examples" / "tile").glob("*.gamut")):
        text = path.read_text()
        cold, cached = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            kge.tile.query(text, name=path.stem).compile(cache=False)
            cold.append(time.perf_counter() - start)
        kge.tile.query(text, name=path.stem).compile()
        for _ in range(args.repeats):
            start = time.perf_counter()
            kge.tile.query(text, name=path.stem).compile()
            cached.append(time.perf_counter() - start)
        row = {"query": path.stem, "cold_s": statistics.median(cold),
               "cached_s": statistics.median(cached)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    result = {"machine": f"{os.cpu_count()} cores, no GPU (the compile machine)", "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
