#!/usr/bin/env python3
"""What the checked mode costs: every example, time per call unchecked and
checked (every index verified against its tables on the GPU before the
kernel, which synchronizes to read the verdict), in the same run, on the
FB15k-like graph. Writes JSON; see docs/Guarantees.md.

    python3 bench/bench_checked_mode.py --bundles .carry/bundles --out $OUT/checked.json
"""

import argparse
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import datasets  # noqa: E402
from bench_score_functions import MODELS, make_tables, time_per_call  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundles", type=pathlib.Path, required=True)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--models", nargs="*", default=MODELS)
    parser.add_argument("--batches", type=int, nargs="*", default=[4096, 16384])
    parser.add_argument("--length", type=int, default=512)
    args = parser.parse_args()
    import kge_runtime

    triples, entities, relations = datasets.fb15k_like()
    triples = torch.from_numpy(triples).cuda()
    generator = torch.Generator(device="cuda").manual_seed(0)
    results = {"device": torch.cuda.get_device_name(), "dataset": "fb15k", "length": args.length,
               "timing": "median of 7 rounds of 20 back-to-back calls (CUDA events), out= given",
               "entries": []}
    for model in args.models:
        program = kge_runtime.Program(
            (args.bundles / f"{model}.pos.D{args.length}.kgebundle").read_text())
        tables, _ = make_tables(program.signature, entities, relations, args.length, generator)
        for batch in args.batches:
            sample = triples[torch.randint(0, len(triples), (batch,), generator=generator,
                                           device="cuda")]
            inputs = {**tables, "h": sample[:, 0].contiguous(), "r": sample[:, 1].contiguous(),
                      "t": sample[:, 2].contiguous()}
            out = {"score": torch.empty(batch, device="cuda")}
            plain, _, _ = time_per_call(lambda: program(**inputs, out=out))
            checked, _, _ = time_per_call(lambda: program(**inputs, out=out, checked=True))
            entry = {"model": model, "batch": batch, "unchecked_us": plain, "checked_us": checked,
                     "overhead_us": checked - plain, "ratio": checked / plain}
            results["entries"].append(entry)
            print(f"{model:10s} B{batch:<6d} unchecked {plain:8.1f} us  checked {checked:8.1f} us"
                  f"  +{checked - plain:6.1f} us  x{checked / plain:5.2f}", flush=True)
        del program
    args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
