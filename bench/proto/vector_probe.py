"""Where the time of a vector-model call goes (GPU machine): KGE's call as
the benchmark times it, its host path alone, its kernel alone (CUDA graph
of 20 calls), torch.compile, and plain warp-per-edge CUDA kernels as the
floor a direct design reaches.

    PYTHONPATH=/tmp/kge-runtime/python_packages python3 bench/proto/vector_probe.py .carry/bundles
"""
import pathlib
import sys
import time

import cupy as cp
import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import datasets  # noqa: E402
from bench_score_functions import TORCH, make_tables, time_per_call  # noqa: E402
import kge_runtime  # noqa: E402
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from vector_probe_lib import graph_time  # noqa: E402

bundles = pathlib.Path(sys.argv[1])
models = sys.argv[2:] or ["transe_l2", "complex", "transh"]
B, D = 16384, 512
triples, entities, relations = datasets.fb15k_like()
triples = torch.from_numpy(triples).cuda()
g = torch.Generator(device="cuda").manual_seed(0)


def host_time(fn, calls=2000):
    fn()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


PLAIN = r'''
__device__ __forceinline__ float4 ld(const float* base, long long row, int D, int i) {
  return __ldg(reinterpret_cast<const float4*>(base + row * D) + i);
}
extern "C" __global__ void transe_l2(const float* E, const float* R, const long long* h,
    const long long* r, const long long* t, float* out, int B) {
  const int D = 512;
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= B) return;
  long long hh = h[warp], rr = r[warp], tt = t[warp];
  float4 a[4], b[4], c[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) { a[k] = ld(E, hh, D, lane + 32 * k); b[k] = ld(E, tt, D, lane + 32 * k); c[k] = ld(R, rr, D, lane + 32 * k); }
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float x = a[k].x - b[k].x + c[k].x, y = a[k].y - b[k].y + c[k].y, z = a[k].z - b[k].z + c[k].z, w = a[k].w - b[k].w + c[k].w;
    acc += x * x + y * y + z * z + w * w;
  }
  for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
  if (lane == 0) out[warp] = sqrtf(acc);
}
extern "C" __global__ void complex_(const float* Ere, const float* Eim, const float* Rre, const float* Rim,
    const long long* h, const long long* r, const long long* t, float* out, int B) {
  const int D = 512;
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= B) return;
  long long hh = h[warp], rr = r[warp], tt = t[warp];
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    int i = lane + 32 * k;
    float4 hre = ld(Ere, hh, D, i), him = ld(Eim, hh, D, i), tre = ld(Ere, tt, D, i), tim = ld(Eim, tt, D, i);
    float4 rre = ld(Rre, rr, D, i), rim = ld(Rim, rr, D, i);
#define TERM(f) acc += (hre.f * rre.f - him.f * rim.f) * tre.f + (hre.f * rim.f + him.f * rre.f) * tim.f;
    TERM(x) TERM(y) TERM(z) TERM(w)
  }
  for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
  if (lane == 0) out[warp] = acc;
}
'''
module = cp.RawModule(code=PLAIN, options=("-std=c++14", "--use_fast_math"))

for model in models:
    program = kge_runtime.Program((bundles / f"{model}.pos.D{D}.kgebundle").read_text())
    tables, _ = make_tables(program.signature, entities, relations, D, g)
    s = triples[torch.randint(0, len(triples), (B,), generator=g, device="cuda")]
    idx = {"h": s[:, 0].contiguous(), "r": s[:, 1].contiguous(), "t": s[:, 2].contiguous()}
    inputs = {**tables, **idx}
    out = torch.empty(B, device="cuda")
    empty = {**tables, "h": idx["h"][:0], "r": idx["r"][:0], "t": idx["t"][:0]}
    out0 = out[:0]
    compiled = torch.compile(TORCH[model], dynamic=False)
    ref = TORCH[model](**inputs)
    row = {
        "kge": time_per_call(lambda: program(**inputs))[0],
        "kge_out": time_per_call(lambda: program(**inputs, out={"score": out}))[0],
        "kge_gpu": graph_time(lambda st: program(**inputs, out={"score": out}, stream=st.cuda_stream)),
        "kge_host_B0": host_time(lambda: program(**empty)),
        "kge_host_B0_out": host_time(lambda: program(**empty, out={"score": out0})),
        "new_empty": host_time(lambda: tables[next(iter(tables))].new_empty((B,))),
        "compile": time_per_call(lambda: compiled(**inputs))[0],
        "eager": time_per_call(lambda: TORCH[model](**inputs))[0],
    }
    err = float(((program(**inputs)["score"] - ref).norm() / ref.norm()))
    plain = {"transe_l2": ("transe_l2", ["Eemb", "Remb"]), "complex": ("complex_", ["Ere", "Eim", "Rre", "Rim"])}
    if model in plain:
        fname, names = plain[model]
        kernel = module.get_function(fname)
        args = [tables[n].data_ptr() for n in names] + [idx["h"].data_ptr(), idx["r"].data_ptr(),
                                                        idx["t"].data_ptr(), out.data_ptr(), np.int32(B)]

        def launch(st):
            with cp.cuda.ExternalStream(st.cuda_stream):
                kernel((B * 32 // 256,), (256,), tuple(args))
        row["plain_gpu"] = graph_time(launch)
        launch(torch.cuda.current_stream())
        row["plain_err"] = float(((out - ref).norm() / ref.norm()))
    print(model, {k: round(v, 2) for k, v in row.items()}, f"kge err {err:.1e}", flush=True)
