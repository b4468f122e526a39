#!/usr/bin/env python3
"""Score functions: KGE's fused kernels against PyTorch eager and
torch.compile, measured in one run on the GPU machine.

For every example score function, batch size and embedding length, on a
knowledge graph (FB15k-like and BioKG-like synthetic graphs with skewed
entities, or WN18-like from WordNet 3.0), with tables in f32 or, with
--precision, in bf16/f16 (PyTorch then runs on the same half-precision
tables, and KGE's kernel for f32 tables is timed beside):
time per call (median over rounds of back-to-back calls timed with CUDA events,
results allocated by each call, KGE called through its lean entry point
Program.run(*arrays); the rounds of KGE, eager and torch.compile taken in
turn), edges per second, peak GPU memory of one call, and
the fraction of the bytes-moved bound reached: the bytes of the unique rows
and matrices a batch needs (plus indices and scores) over the
device-to-device bandwidth measured in the same run.

    python3 bench/bench_score_functions.py --bundles .carry/bundles \\
        --dataset fb15k --out $OUT/fb15k.json

Bundles come from test/gpu/build_bundles.py (<model>.pos.D<length>,
<model>.pos.<precision>.D<length>).
"""

import argparse
import json
import math
import pathlib
import re
import sys
import time

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import datasets  # noqa: E402

MODELS = ["transe_l1", "transe_l2", "transh", "transr", "transf", "rescal", "distmult", "complex",
          "rotate", "transd", "simple", "crosse"]


# PyTorch implementations, as a KGE system writes them (fp32).
def transe(p):
    def fn(Eemb, Remb, h, r, t):
        return torch.linalg.vector_norm(Eemb[h] - Eemb[t] + Remb[r], ord=p, dim=-1)
    return fn


def transh(Eemb, Remb, Pv, h, r, t):
    d = Eemb[h] - Eemb[t]
    normal = Pv[r]
    return torch.linalg.vector_norm(d + Remb[r] - (normal * d).sum(-1, keepdim=True) * normal, dim=-1)


def transr(Eemb, Remb, Pm, h, r, t):
    projected = torch.bmm((Eemb[h] - Eemb[t]).unsqueeze(1), Pm[r]).squeeze(1)
    return torch.linalg.vector_norm(projected + Remb[r], dim=-1)


def transf(Eemb, Remb, h, r, t):
    head, tail = Eemb[h], Eemb[t]
    return 2 * (head * tail).sum(-1) + ((tail - head) * Remb[r]).sum(-1)


def rescal(Eemb, Pm, h, r, t):
    hm = torch.bmm(Eemb[h].unsqueeze(1), Pm[r]).squeeze(1)
    return (hm * Eemb[t]).sum(-1)


def distmult(Eemb, Remb, h, r, t):
    return (Eemb[h] * Remb[r] * Eemb[t]).sum(-1)


def complex_(Ere, Eim, Rre, Rim, h, r, t):
    hre, him, tre, tim, rre, rim = Ere[h], Eim[h], Ere[t], Eim[t], Rre[r], Rim[r]
    return ((hre * rre - him * rim) * tre + (hre * rim + him * rre) * tim).sum(-1)


def rotate(Ere, Eim, Rph, h, r, t):
    phase, hre, him = Rph[r], Ere[h], Eim[h]
    rre, rim = torch.cos(phase), torch.sin(phase)
    real = hre * rre - him * rim - Ere[t]
    imag = hre * rim + him * rre - Eim[t]
    return torch.sqrt(real * real + imag * imag).sum(-1)


def transd(Eemb, Ep, Remb, Rp, h, r, t):
    head, tail, rp = Eemb[h], Eemb[t], Rp[r]
    head = head + (Ep[h] * head).sum(-1, keepdim=True) * rp
    tail = tail + (Ep[t] * tail).sum(-1, keepdim=True) * rp
    return torch.linalg.vector_norm(head + Remb[r] - tail, dim=-1)


def simple(EH, ET, R, Rinv, h, r, t):
    return 0.5 * ((EH[h] * R[r] * ET[t]).sum(-1) + (EH[t] * Rinv[r] * ET[h]).sum(-1))


def crosse(Eemb, Remb, Cemb, Bias, h, r, t):
    crossed = Cemb[r] * Eemb[h]
    hidden = torch.tanh(crossed + crossed * Remb[r] + Bias[r])
    return torch.sigmoid((hidden * Eemb[t]).sum(-1))


TORCH = {"transe_l1": transe(1), "transe_l2": transe(2), "transh": transh, "transr": transr,
         "transf": transf, "rescal": rescal, "distmult": distmult, "complex": complex_,
         "rotate": rotate, "transd": transd, "simple": simple, "crosse": crosse}


class Scorer(torch.nn.Module):
    """A model's score function with its tables as (frozen) parameters:
    what torch.compile's CUDA graphs (mode="reduce-overhead") treat as
    static inputs, so that a call copies only its indices."""

    def __init__(self, fn, tables):
        super().__init__()
        self.fn = fn
        self.names = list(tables)
        for name, table in tables.items():
            self.register_parameter(name, torch.nn.Parameter(table, requires_grad=False))

    def forward(self, h, r, t):
        return self.fn(**{n: getattr(self, n) for n in self.names}, h=h, r=r, t=t)


def calls_per_round(fn, round_seconds=2e-3, min_calls=20, max_calls=2000):
    """Back-to-back calls in one timed round: enough for the round to last
    about `round_seconds`. A round starts on an idle GPU, which waits for
    the host to issue the first call; over a long round that wait is a
    negligible part of the time per call, over 20 calls of a GPU-bound
    function it is not (about 0.5 us per call)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(min_calls):
        fn()
    torch.cuda.synchronize()
    per_call = (time.perf_counter() - start) / min_calls
    return int(min(max_calls, max(min_calls, math.ceil(round_seconds / per_call))))


def interleaved_per_call(fns, rounds=7, warmup=5, calls=None):
    """Time per call (us) of each of `fns` (name -> callable): (median, min,
    max) over `rounds` rounds of back-to-back calls timed with CUDA events.
    The rounds of all functions are taken in turn, so that a drift of the
    machine during the measurement favours none of them. `calls`: calls per
    round, by default calls_per_round() of each function."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    counts = {name: calls or calls_per_round(fn) for name, fn in fns.items()}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            torch.cuda.synchronize()
            start.record()
            for _ in range(counts[name]):
                fns[name]()
            end.record()
            torch.cuda.synchronize()
            samples[name].append(start.elapsed_time(end) * 1e3 / counts[name])
    return {name: (float(np.median(s)), float(np.min(s)), float(np.max(s))) for name, s in samples.items()}


def time_per_call(fn, warmup=5, calls=None, rounds=7):
    """interleaved_per_call() of one function: (median, min, max) us."""
    return interleaved_per_call({"fn": fn}, rounds, warmup, calls)["fn"]


def peak_bytes(fn):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def copy_bandwidth():
    x = torch.empty(512 * 2**20, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    median, _, _ = time_per_call(lambda: y.copy_(x), calls=10)
    return 2 * x.numel() / (median * 1e-6)


def make_tables(signature, entities, relations, length, generator):
    tables = {}
    indexed_by = {}
    for p in signature["params"]:
        for table in p.get("indexes", []):
            indexed_by.setdefault(table, []).append(p["name"])
    for p in signature["params"]:
        if p["role"] != "table":
            continue
        rows = relations if indexed_by.get(p["name"]) == ["r"] else entities
        shape = [rows] + [length] * (len(p["shape"]) - 1)
        scale = length ** -0.5 if len(shape) == 3 else 0.1
        tables[p["name"]] = torch.randn(shape, generator=generator, device="cuda") * scale
    return tables, indexed_by


def bytes_bound(signature, tables, indices, batch):
    """Bytes a batch must move: unique rows of every gather, the index
    arrays, the scores."""
    total = 0
    for p in signature["params"]:
        if p["role"] != "indices":
            continue
        unique = torch.unique(indices[p["name"]]).numel()
        for table in p.get("indexes", []):
            item = tables[table][0]
            total += unique * item.numel() * item.element_size()
        total += batch * 8
    return total + batch * 4


def scratch_bytes(bundle, sizes):
    """The runtime's scratch buffers of one call (outside torch's allocator)."""
    total = 0
    for s in bundle["scratch"]:
        # Scratch counts are sums, products and minima of sizes.
        expression = re.sub(r"[A-Za-z_][A-Za-z0-9_]*",
                            lambda m: m.group(0) if m.group(0) in ("min", "max") else str(sizes[m.group(0)]),
                            s["count"])
        total += eval(expression, {"__builtins__": {}, "min": min, "max": max}) * 4  # noqa: S307
    return total


def load_graph(name, wn18_path):
    if name == "fb15k":
        return datasets.fb15k_like()
    if name == "biokg":
        return datasets.biokg_like()
    data = np.load(wn18_path)
    return data["triples"], int(data["entities"]), int(data["relations"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundles", type=pathlib.Path, required=True)
    parser.add_argument("--dataset", choices=["fb15k", "wn18", "biokg"], required=True)
    parser.add_argument("--wn18", type=pathlib.Path, default=pathlib.Path(".carry/wn18like.npz"))
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--models", nargs="*", default=MODELS)
    parser.add_argument("--batches", type=int, nargs="*", default=[16384, 262144])
    parser.add_argument("--lengths", type=int, nargs="*", default=[512])
    parser.add_argument("--precision", choices=["f32", "bf16", "f16"], default="f32",
                        help="table precision: bf16/f16 tables for KGE and PyTorch (its own "
                             "half-precision path), KGE with f32 tables in the same run")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--graphs", action="store_true",
                        help="also time both with CUDA graphs: KGE's captured call and "
                             "torch.compile(mode='reduce-overhead') on a module whose "
                             "tables are parameters")
    parser.add_argument("--calls", type=int, default=None,
                        help="calls per timed round (default: about 2 ms of calls, at least 20)")
    parser.add_argument("--variant", default="",
                        help="bundle name suffix (<model>.pos.D<length><variant>), for layout studies")
    args = parser.parse_args()

    import kge_runtime
    torch._dynamo.config.cache_size_limit = 64
    torch.backends.cuda.matmul.allow_tf32 = False

    triples, entities, relations = load_graph(args.dataset, args.wn18)
    skew = datasets.skew_summary(triples, entities)
    triples = torch.from_numpy(triples).cuda()
    bandwidth = copy_bandwidth()
    print(f"{torch.cuda.get_device_name()}: copy bandwidth {bandwidth / 1e9:.0f} GB/s; "
          f"{args.dataset}: {entities} entities, {relations} relations, {len(triples)} triples, "
          f"entity skew {skew}; tables {args.precision}", flush=True)

    half = {"bf16": torch.bfloat16, "f16": torch.float16}.get(args.precision)
    results = {"device": torch.cuda.get_device_name(), "dataset": args.dataset,
               "entities": entities, "relations": relations, "triples": len(triples),
               "entity_skew": skew, "precision": args.precision, "variant": args.variant,
               "copy_bandwidth_bytes_per_s": bandwidth, "torch": torch.__version__,
               "timing": "median of 7 rounds of back-to-back calls (CUDA events; "
               + (f"{args.calls} calls" if args.calls else "at least 20 calls and about 2 ms")
               + " per round), the rounds of KGE, eager and torch.compile taken in turn, after 5 warm-up calls",
               "entries": []}
    generator = torch.Generator(device="cuda").manual_seed(0)
    for model in args.models:
        compiled = None if args.no_compile else torch.compile(TORCH[model], dynamic=False)
        for length in args.lengths:
            name = f"{model}.pos.D{length}{args.variant}"
            bundle_text = (args.bundles / f"{name}.kgebundle").read_text()
            program = kge_runtime.Program(bundle_text)
            tables, _ = make_tables(program.signature, entities, relations, length, generator)
            f32_program = None
            if half is not None:
                # The same model with half-precision tables: KGE's bundle for
                # them, PyTorch's own path on them; the f32 tables stay for
                # KGE's f32 kernel and the reference.
                f32_program, f32_tables = program, tables
                bundle_text = (args.bundles / f"{model}.pos.{args.precision}.D{length}"
                               f"{args.variant}.kgebundle").read_text()
                program = kge_runtime.Program(bundle_text)
                tables = {k: v.to(half) for k, v in f32_tables.items()}
            for batch in args.batches:
                sample = triples[torch.randint(0, len(triples), (batch,), generator=generator, device="cuda")]
                indices = {"h": sample[:, 0].contiguous(), "r": sample[:, 1].contiguous(),
                           "t": sample[:, 2].contiguous()}
                inputs = {**tables, **indices}
                # The lean entry point: arrays in signature order, the
                # result allocated like PyTorch's.
                ordered = [inputs[p["name"]] for p in program.signature["params"]
                           if p["role"] != "result"]
                kge = lambda: program.run(*ordered)  # noqa: E731
                eager = lambda: TORCH[model](**inputs)  # noqa: E731
                reference = TORCH[model](**(f32_tables if half is not None else tables), **indices)
                relative = lambda x: ((x.float() - reference).norm() / reference.norm()).item()  # noqa: E731
                error = relative(kge())
                entry = {"model": model, "length": length, "batch": batch, "relative_error": error,
                         "unique_relations": torch.unique(indices["r"]).numel(),
                         "unique_entities": torch.unique(torch.cat([indices["h"], indices["t"]])).numel()}
                sizes = {"B": batch, **{f"N_{n}": t.shape[0] for n, t in tables.items()}}
                fns = {"kge": kge, "eager": eager}
                if half is not None:
                    entry["eager_relative_error"] = relative(eager())
                    f32_inputs = {**f32_tables, **indices}
                    f32_ordered = [f32_inputs[p["name"]] for p in f32_program.signature["params"]
                                   if p["role"] != "result"]
                    fns["kge_f32"] = lambda: f32_program.run(*f32_ordered)
                if compiled is not None:
                    t0 = time.time()
                    compiled(**inputs)
                    torch.cuda.synchronize()
                    entry["compile_seconds"] = time.time() - t0
                    fns["compile"] = lambda: compiled(**inputs)
                if args.graphs:
                    captured = program.capture(**inputs)
                    fns["kge_graph"] = captured.replay
                    scorer = torch.compile(Scorer(TORCH[model], tables), mode="reduce-overhead",
                                           dynamic=False)
                    for _ in range(3):  # record, then replay
                        scorer(**indices)
                    torch.cuda.synchronize()
                    entry["compile_graphs_relative_error"] = relative(scorer(**indices).clone())
                    fns["compile_graphs"] = lambda: scorer(**indices)
                for name, (median, best, worst) in interleaved_per_call(fns, calls=args.calls).items():
                    peak = peak_bytes(fns[name])
                    if name.startswith("kge"):
                        peak += scratch_bytes(json.loads(bundle_text), sizes)
                    entry[name] = {"us_per_call": median, "us_min": best, "us_max": worst,
                                   "edges_per_s": batch / (median * 1e-6), "peak_bytes": peak}
                bound = bytes_bound(program.signature, tables, indices, batch)
                entry["bytes_bound"] = bound
                entry["kge"]["fraction_of_bound"] = bound / bandwidth / (entry["kge"]["us_per_call"] * 1e-6)
                for base in ("eager", "compile", "kge_f32", "compile_graphs"):
                    if base in entry:
                        entry[f"speedup_vs_{base}"] = entry[base]["us_per_call"] / entry["kge"]["us_per_call"]
                        entry[f"memory_vs_{base}"] = entry["kge"]["peak_bytes"] / max(entry[base]["peak_bytes"], 1)
                if args.graphs:
                    entry["speedup_graphs"] = (entry["compile_graphs"]["us_per_call"]
                                               / entry["kge_graph"]["us_per_call"])
                results["entries"].append(entry)
                print(f"{model:10s} D{length:<4d} B{batch:<6d} kge {entry['kge']['us_per_call']:9.1f} us"
                      f"  eager {entry['eager']['us_per_call']:9.1f}"
                      + (f"  compile {entry['compile']['us_per_call']:9.1f}" if "compile" in entry else "")
                      + f"  x{entry.get('speedup_vs_compile', float('nan')):6.2f} vs compile"
                      f"  x{entry['speedup_vs_eager']:6.2f} vs eager"
                      + (f"  x{entry['speedup_vs_kge_f32']:5.2f} vs f32 tables" if half is not None else "")
                      + (f"  graphs: kge {entry['kge_graph']['us_per_call']:.1f} us, compile "
                         f"{entry['compile_graphs']['us_per_call']:.1f} us, x"
                         f"{entry['compile_graphs']['us_per_call'] / entry['kge_graph']['us_per_call']:.2f}"
                         if args.graphs else "")
                      + f"  bound {100 * entry['kge']['fraction_of_bound']:5.1f}%"
                      f"  mem {100 * entry['memory_vs_eager']:6.2f}% of eager  err {error:.1e}", flush=True)
                args.out.write_text(json.dumps(results, indent=1))
            del program
        torch.cuda.empty_cache()
    args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
