#!/usr/bin/env python3
"""Scoring a batch against negatives shared by it (the score function as a
tile task, build_bundles.py's shared mode) against what users run today,
on the GPU machine: a PyTorch scorer in PyTorch-BigGraph's form (the
edges' side, the negatives' rows, then one torch.bmm of [chunks, C, D] by
[chunks, D, N], here one chunk: every edge shares the N negatives), eager
and under torch.compile.

Precisions, each against the baseline at the same one and against PyTorch's
default FP32 bmm:
- f32: KGE on CUDA cores (the .shared.D<n> bundles) / bmm with TF32 off;
- tf32: KGE's product forms on tensor cores (.shared.tf32.D<n>) / bmm
  with torch.set_float32_matmul_precision("high");
- bf16: bf16 tables (.shared.bf16.D<n>; KGE's scores f32) / bmm on bf16
  tables (bf16 scores).

DistMult and ComplEx (the issue's models) and TransE-L2 (a distance: no
product form, CUDA cores at every precision), FB15k-like tables (14,951
entities, 1,345 relations), B edges whose heads, relations and negatives
are drawn with power-law frequencies (Zipf, exponent 1.1, over a random
order of the rows), N in 256, 512, 1024, D = 512 (ComplEx: 256 + 256).
Times per call: median of interleaved rounds (CUDA events). Writes one
JSON file (--out).
"""

import argparse
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_score_functions import interleaved_per_call  # noqa: E402
from datasets import zipf_probabilities  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENTITIES, RELATIONS = 14951, 1345


def torch_scorer(name):
    """The PyTorch-BigGraph-style scorer of `name`: [B, N] scores."""
    def distmult(Eemb, Remb, h, r, t):
        left = Eemb[h] * Remb[r]
        return torch.bmm(left.unsqueeze(0), Eemb[t].unsqueeze(0).transpose(1, 2))[0]

    def complex_(Ere, Eim, Rre, Rim, h, r, t):
        hre, him, rre, rim = Ere[h], Eim[h], Rre[r], Rim[r]
        left = torch.cat([hre * rre - him * rim, hre * rim + him * rre], dim=1)
        right = torch.cat([Ere[t], Eim[t]], dim=1)
        return torch.bmm(left.unsqueeze(0), right.unsqueeze(0).transpose(1, 2))[0]

    def transe_l2(Eemb, Remb, h, r, t):
        left = Eemb[h] + Remb[r]
        return torch.cdist(left.unsqueeze(0), Eemb[t].unsqueeze(0))[0]

    return {"distmult": distmult, "complex": complex_, "transe_l2": transe_l2}[name]


def zipf(count, rows, generator):
    """`count` draws from `rows` rows with power-law frequencies (the
    datasets' exponent 1.1, over a random order of the rows)."""
    order = torch.randperm(rows, generator=generator, device="cuda")
    p = torch.from_numpy(zipf_probabilities(rows)).to("cuda")
    return order[torch.multinomial(p, count, replacement=True, generator=generator)]


class TF32:
    """PyTorch's float32 matrix products at TF32 for the calls inside
    (torch.set_float32_matmul_precision("high"), which torch.compile reads
    too)."""

    def __enter__(self):
        self.previous = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("high")

    def __exit__(self, *exc):
        torch.set_float32_matmul_precision(self.previous)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundles", type=pathlib.Path, default=ROOT / ".carry" / "bundles")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--edges", type=int, default=16384)
    parser.add_argument("--negatives", default="256,512,1024")
    parser.add_argument("--models", default="distmult,complex,transe_l2")
    parser.add_argument("--precisions", default="f32,tf32,bf16")
    parser.add_argument("--compare", default="",
                        help="a bundle suffix (build_bundles.py --suffix) whose bundles "
                             "also run, as kge<suffix>: e.g. .mma built with "
                             "--layout warpgroup=0")
    args = parser.parse_args()
    import kge_runtime as rt
    torch.set_float32_matmul_precision("highest")
    g = torch.Generator(device="cuda").manual_seed(0)
    results = {"device": torch.cuda.get_device_name(), "edges": args.edges,
               "indices": "zipf 1.1", "rows": []}
    B = args.edges
    for name in args.models.split(","):
        D = 256 if name == "complex" else 512
        scorer = torch_scorer(name)
        compiled = torch.compile(scorer)
        compiled_tf32 = torch.compile(torch_scorer(name))
        for precision in args.precisions.split(","):
            prefix = "" if precision in ("f32",) else f"{precision}."
            bundle = args.bundles / f"{name}.shared.{prefix}D{D}.kgebundle"
            program = rt.Program(bundle.read_text())
            other = None
            if args.compare:
                other = rt.Program(bundle.with_name(
                    bundle.name.replace(".kgebundle", f"{args.compare}.kgebundle")).read_text())
            params = json.loads(bundle.read_text())["function"]["params"]
            dtype = torch.bfloat16 if precision == "bf16" else torch.float32
            tables = {p["name"]: (torch.randn(RELATIONS if p["name"].startswith("R")
                                              else ENTITIES, D, generator=g, device="cuda")
                                  * D ** -0.5).to(dtype)
                      for p in params if p["role"] == "table"}
            for n in [int(s) for s in args.negatives.split(",")]:
                h = zipf(B, ENTITIES, g)
                r = zipf(B, RELATIONS, g)
                t = zipf(n, ENTITIES, g)
                scores = torch.empty(B, n, device="cuda")

                def bmm_tf32():
                    with TF32():
                        return scorer(**tables, h=h, r=r, t=t)

                def compile_tf32():
                    with TF32():
                        return compiled_tf32(**tables, h=h, r=r, t=t)

                fns = {"kge": lambda: program(**tables, h=h, r=r, t=t, score=scores),
                       "torch_bmm": lambda: scorer(**tables, h=h, r=r, t=t),
                       "torch_compile": lambda: compiled(**tables, h=h, r=r, t=t)}
                if other is not None:
                    fns["kge" + args.compare] = \
                        lambda: other(**tables, h=h, r=r, t=t, score=scores)
                if precision == "tf32":
                    fns["torch_bmm_tf32"] = bmm_tf32
                    fns["torch_compile_tf32"] = compile_tf32
                fns["kge"]()
                reference = scorer(**{k: v.double() for k, v in tables.items()},
                                   h=h, r=r, t=t)
                error = float((scores.double() - reference).abs().max()
                              / reference.abs().max())
                times = interleaved_per_call(fns, rounds=7, calls=10)
                row = {"model": name, "precision": precision, "B": B, "N": n, "D": D,
                       "times_us": times, "max_rel_error": error}
                for base in fns:
                    if base != "kge":
                        row[f"kge_over_{base}"] = times[base][0] / times["kge"][0]
                results["rows"].append(row)
                print(json.dumps(row), flush=True)
    args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
