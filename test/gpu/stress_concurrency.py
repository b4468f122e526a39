#!/usr/bin/env python3
"""Concurrent load-and-launch: N threads, each in a loop, pick a bundle,
load it (Program(bundle): the runtime's module cache, or a fresh JIT link
when the bundle text is new), call it on fresh random inputs on its own
stream and check the scores against PyTorch. Runs for --seconds; prints
"N passed, M failed" (calls). scripts/gpu-test.sh runs it, alone and under
compute-sanitizer.

    python3 test/gpu/stress_concurrency.py --threads 8 --seconds 60
"""

import argparse
import json
import os
import pathlib
import random
import sys
import threading
import time
import traceback

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import kge_runtime  # noqa: E402
from references import REFERENCES  # noqa: E402
from test_kernels import NEGATIVES, flatten_for_reference, make_inputs  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUNDLES = pathlib.Path(os.environ.get("KGE_GPU_BUNDLES", ROOT / ".carry" / "bundles"))


def worker(index, texts, deadline, counts, failures, lock, fresh_every):
    rng = random.Random(index)
    stream = torch.cuda.Stream()
    calls = 0
    while time.time() < deadline:
        name = rng.choice(sorted(texts))
        example, mode, variant = name.split(".")
        text = texts[name]
        calls += 1
        if calls % fresh_every == 0:
            # A bundle text no thread has loaded: a cache miss and a new link.
            bundle = json.loads(text)
            bundle["generator"] = f"KGE (stress {index}.{calls})"
            text = json.dumps(bundle)
        length = 128 if variant in ("dyn", "D128") else int(variant[1:])
        batch = rng.choice([1, 37, 300, 2048])
        try:
            # Everything on the thread's stream (inputs, call, reference,
            # comparison): work on other streams would need events.
            with torch.cuda.stream(stream):
                program = kge_runtime.Program(text)
                args = make_inputs(program.signature, mode, batch, length, "uniform",
                                   rng.randrange(1 << 30))
                out = program(**args, stream=stream.cuda_stream)["score"]
                reference = REFERENCES[example](**flatten_for_reference(args, mode, batch))
                actual = out.reshape(-1).double()
                scale = max(1.0, reference.abs().max().item())
                error = (actual - reference).abs().max().item() / scale
                stream.synchronize()
            ok = error < 1e-4
            message = f"{name} B={batch}: max error {error:.3g}"
        except Exception:  # noqa: BLE001 - every failure is reported
            ok, message = False, f"{name} B={batch}: {traceback.format_exc()}"
        with lock:
            counts[ok] += 1
            if not ok:
                failures.append(message)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--fresh-every", type=int, default=25,
                        help="every n-th call of a thread loads a new bundle text")
    parser.add_argument("--variants", nargs="*", default=["D128", "dyn"])
    args = parser.parse_args()
    texts = {p.name[:-len(".kgebundle")]: p.read_text()
             for p in sorted(BUNDLES.glob("*.kgebundle"))
             if p.name.split(".")[1] in ("pos", "neg") and p.name.split(".")[2] in args.variants}
    if not texts:
        sys.exit(f"no bundles in {BUNDLES}")
    counts, failures, lock = {True: 0, False: 0}, [], threading.Lock()
    deadline = time.time() + args.seconds
    threads = [threading.Thread(target=worker, args=(i, texts, deadline, counts, failures, lock,
                                                     args.fresh_every))
               for i in range(args.threads)]
    start = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for failure in failures[:10]:
        print("FAILED", failure)
    print(f"{args.threads} threads, {time.time() - start:.0f} s, {len(texts)} bundles")
    print(f"{counts[True]} passed, {counts[False]} failed")
    return 1 if counts[False] or not counts[True] else 0


if __name__ == "__main__":
    sys.exit(main())
