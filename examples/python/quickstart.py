"""KGE from Python: write TransE, look at its IR, run it on the CPU, compile
it into a GPU kernel bundle (and run that when a GPU is present)."""

import numpy as np

import kge
from kge import Indices, Table


@kge.function
def transe(Eemb: Table, Remb: Table, h: Indices, r: Indices, t: Indices):
    return kge.norm(Eemb[h] + Remb[r] - Eemb[t], p=2)


print(transe.ir)

rng = np.random.default_rng(0)
E = rng.standard_normal((1000, 64), dtype=np.float32)
R = rng.standard_normal((10, 64), dtype=np.float32)
h, r, t = rng.integers(0, 1000, 8), rng.integers(0, 10, 8), rng.integers(0, 1000, 8)

scores = transe.run_cpu(Eemb=E, Remb=R, h=h, r=r, t=t)
expected = np.linalg.norm(E[h] + R[r] - E[t], axis=1)
print("CPU:  ", np.round(scores, 4))
print("NumPy:", np.round(expected, 4))
assert np.allclose(scores, expected, rtol=1e-5)

bundle = transe.compile(sizes={"D_Eemb": 64})  # one fused kernel, PTX for sm_90
print(bundle, "calls", sorted(bundle.manifest["library"]))

try:
    import torch
    gpu = torch.cuda.is_available()
except ImportError:
    gpu = False
if gpu:
    program = bundle.load()
    on_gpu = {k: torch.from_numpy(v).cuda() for k, v in dict(Eemb=E, Remb=R, h=h, r=r, t=t).items()}
    print("GPU:  ", program(**on_gpu)["score"].cpu().numpy().round(4))
