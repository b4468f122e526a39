"""Layout study of the vector models (GPU machine): for each model and
bundle variant (<model>.pos.D512.<variant>.kgebundle), the time per call as
the benchmark measures it, the GPU time alone (20 calls in one CUDA graph)
and the relative error against PyTorch, next to torch.compile in the same
run. Time per call: the median over rounds of back-to-back calls (about
2 ms of calls per round unless --calls says otherwise), the rounds of all
variants (and torch.compile) interleaved, so that a drift of the machine
during the run does not favour one of them.

    PYTHONPATH=/tmp/kge-runtime/python_packages python3 bench/proto/variant_probe.py \\
        .carry/variants s25 s50 s101 ...
"""
import argparse
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import datasets  # noqa: E402
from bench_score_functions import TORCH, interleaved_per_call, make_tables  # noqa: E402
from vector_probe_lib import graph_time  # noqa: E402
import kge_runtime  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("directory", type=pathlib.Path)
parser.add_argument("variants", nargs="+")
parser.add_argument("--models", nargs="*", default=["transe_l1", "transe_l2", "transh", "transf", "distmult", "complex"])
parser.add_argument("--batch", type=int, default=16384)
parser.add_argument("--dataset", choices=["fb15k", "biokg"], default="fb15k")
parser.add_argument("--negatives", type=int, default=0, help="K: time negative-mode bundles, B/K edges")
parser.add_argument("--rounds", type=int, default=15)
parser.add_argument("--calls", type=int, default=None, help="calls per round (default: about 2 ms of calls)")
parser.add_argument("--no-compile", action="store_true", help="KGE's variants only (no torch.compile)")
args = parser.parse_args()
directory, variants, models = args.directory, args.variants, args.models
B, D = args.batch, 512
mode = "neg" if args.negatives else "pos"
triples, entities, relations = (datasets.biokg_like() if args.dataset == "biokg"
                                 else datasets.fb15k_like())
triples = torch.from_numpy(triples).cuda()
g = torch.Generator(device="cuda").manual_seed(0)
results = []


for model in models:
    first = kge_runtime.Program((directory / f"{model}.{mode}.D{D}.{variants[0]}.kgebundle").read_text())
    tables, _ = make_tables(first.signature, entities, relations, D, g)
    K = max(args.negatives, 1)
    s = triples[torch.randint(0, len(triples), (B // K,), generator=g, device="cuda")]
    inputs = {**tables, "h": s[:, 0].contiguous(), "r": s[:, 1].contiguous(), "t": s[:, 2].contiguous()}
    if args.negatives:
        inputs["t"] = torch.randint(0, entities, (B // K, K), generator=g, device="cuda")
    out = torch.empty(inputs["t"].shape, device="cuda")
    row = {"model": model}
    fns = {}
    if not args.negatives:
        ref = TORCH[model](**inputs)
    if not args.negatives and not args.no_compile:
        compiled = torch.compile(TORCH[model], dynamic=False)
        fns["compile"] = lambda: compiled(**inputs)
    programs, errors = {}, {}
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    variant_inputs = {}
    for variant in variants:
        program = kge_runtime.Program((directory / f"{model}.{mode}.D{D}.{variant}.kgebundle").read_text())
        programs[variant] = program
        # Tables in the bundle's precision (half-precision variants).
        own = dict(inputs)
        for p in program.signature["params"]:
            if p["role"] == "table":
                own[p["name"]] = inputs[p["name"]].to(dtypes[p["dtype"]])
        variant_inputs[variant] = own
        half = any(v.dtype != torch.float32 for v in own.values() if v.is_floating_point())
        errors[variant] = 0.0
        if not args.negatives:
            errors[variant] = float((program(**own)["score"] - ref).norm() / ref.norm())
            assert errors[variant] < (5e-3 if half else 1e-5), (model, variant, errors[variant])
        fns[variant] = lambda program=program, own=own: program(**own)
    per_call = {name: t[0] for name, t in interleaved_per_call(fns, args.rounds, calls=args.calls).items()}
    row["compile"] = per_call.get("compile", 0.0)
    for variant, program in programs.items():
        own = variant_inputs[variant]
        row[variant] = (per_call[variant],
                        graph_time(lambda st: program(**own, out={"score": out}, stream=st.cuda_stream)),
                        errors[variant])
    results.append(row)
    print(model, mode, f"compile {row.get('compile', 0):.1f}", "  ".join(
        f"{v}: {row[v][0]:.1f}/{row[v][1]:.1f} err {row[v][2]:.1e}" for v in variants), flush=True)
print(json.dumps(results))
