"""TransR from Python on a GPU, in two steps on two machines:

  here (with the compiler):   python transr_gpu.py compile transr.kgebundle
  on the GPU machine:         python transr_gpu.py run transr.kgebundle

The GPU machine needs only the `kge` package sources (python/) and the
runtime module built from runtime/ (no MLIR): the bundle carries the PTX,
the cubin and the launch plan.
"""

import sys

import kge
from kge import Indices, Table


@kge.function
def transr(Eemb: Table, Remb: Table, Pm: Table(None, None, None),
           h: Indices, r: Indices, t: Indices):
    return kge.norm((Eemb[h] - Eemb[t]) @ Pm[r] + Remb[r], p=2)


def compile_bundle(path):
    bundle = transr.compile(sizes={"D_Eemb": 128, "D_Remb": 64})
    bundle.save(path)
    print(transr.ir)
    print(f"wrote {path}: {bundle}")


def run(path):
    import torch
    program = kge.Bundle.read(path).load()
    g = torch.Generator(device="cuda").manual_seed(0)
    entities, relations, batch = 14951, 1345, 4096
    args = {"Eemb": torch.randn(entities, 128, device="cuda", generator=g),
            "Remb": torch.randn(relations, 64, device="cuda", generator=g),
            "Pm": torch.randn(relations, 128, 64, device="cuda", generator=g) / 8,
            "h": torch.randint(0, entities, (batch,), device="cuda", generator=g),
            "r": torch.randint(0, relations, (batch,), device="cuda", generator=g),
            "t": torch.randint(0, entities, (batch,), device="cuda", generator=g)}
    score = program(**args)["score"]
    d = (args["Eemb"][args["h"]] - args["Eemb"][args["t"]]).double()
    expected = torch.linalg.vector_norm(
        torch.bmm(d.unsqueeze(1), args["Pm"][args["r"]].double()).squeeze(1)
        + args["Remb"][args["r"]].double(), dim=-1)
    error = ((score.double() - expected).abs().max() / expected.abs().max()).item()
    print(f"TransR on {torch.cuda.get_device_name()}: {batch} edges, scores {score[:4].tolist()}")
    print(f"max relative error vs PyTorch (float64): {error:.2e}")
    assert error < 1e-5, "KGE and PyTorch disagree"
    print("OK")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("compile", "run"):
        sys.exit(__doc__)
    (compile_bundle if sys.argv[1] == "compile" else run)(sys.argv[2])
