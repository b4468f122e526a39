"""First probe on the GPU machine: what PyTorch eager and torch.compile cost
for TransE and TransR at FB15k sizes, and what a plain fused CUDA kernel
(warp per edge, float4 loads, no dedup) reaches. Informs the kernel design."""
import time, json, sys
import numpy as np
import torch
import cupy as cp

torch.manual_seed(0)
dev = "cuda"
N, M = 14951, 1345

def zipf_rel(B, a=1.1):
    ranks = np.arange(1, M + 1)
    p = ranks ** -a; p /= p.sum()
    return torch.from_numpy(np.random.default_rng(0).choice(M, B, p=p)).to(dev)

def bench(fn, warm=10, iters=50):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5):
        s.record()
        for _ in range(iters): fn()
        e.record(); torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / iters * 1e3)
    return float(np.median(times))

def transe(E, R, h, r, t): return torch.linalg.vector_norm(E[h] - E[t] + R[r], dim=-1)
def transr(E, R, P, h, r, t):
    return torch.linalg.vector_norm(torch.bmm((E[h] - E[t]).unsqueeze(1), P[r]).squeeze(1) + R[r], dim=-1)

cte = torch.compile(transe)
ctr = torch.compile(transr)

kernel = cp.RawKernel(r'''
extern "C" __global__ void transe(const float* E, const float* R, const long long* h, const long long* r,
                                  const long long* t, float* out, int B, int D) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= B) return;
  const float4* eh = (const float4*)(E + h[warp] * (long long)D);
  const float4* et = (const float4*)(E + t[warp] * (long long)D);
  const float4* er = (const float4*)(R + r[warp] * (long long)D);
  float acc = 0.f;
  for (int i = lane; i < D / 4; i += 32) {
    float4 a = __ldg(eh + i), b = __ldg(et + i), c = __ldg(er + i);
    float x = a.x - b.x + c.x, y = a.y - b.y + c.y, z = a.z - b.z + c.z, w = a.w - b.w + c.w;
    acc += x * x + y * y + z * z + w * w;
  }
  for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
  if (lane == 0) out[warp] = sqrtf(acc);
}''', "transe")

res = {}
x = torch.empty(256 * 2**20, dtype=torch.uint8, device=dev); y = torch.empty_like(x)
t_copy = bench(lambda: y.copy_(x), iters=20)
res["copy_GBps"] = 2 * x.numel() / (t_copy * 1e-6) / 1e9
for D in (128, 512):
    E = torch.randn(N, D, device=dev); R = torch.randn(M, D, device=dev)
    for B in (4096, 16384):
        h = torch.randint(0, N, (B,), device=dev); t = torch.randint(0, N, (B,), device=dev); r = zipf_rel(B)
        out = torch.empty(B, device=dev)
        ref = transe(E, R, h, r, t)
        def raw():
            kernel(((B * 32 + 255) // 256,), (256,), (E.data_ptr(), R.data_ptr(), h.data_ptr(), r.data_ptr(), t.data_ptr(), out.data_ptr(), np.int32(B), np.int32(D)))
        raw(); torch.cuda.synchronize()
        err = float((out - ref).abs().max() / ref.abs().max())
        res[f"transe_D{D}_B{B}"] = dict(eager=bench(lambda: transe(E, R, h, r, t)), compile=bench(lambda: cte(E, R, h, r, t)), raw=bench(raw), raw_err=err)
        print(f"transe D{D} B{B}", res[f"transe_D{D}_B{B}"], flush=True)
D = 512
E = torch.randn(N, D, device=dev); R = torch.randn(M, D, device=dev); P = torch.randn(M, D, D, device=dev) / D ** 0.5
for B in (4096, 16384):
    h = torch.randint(0, N, (B,), device=dev); t = torch.randint(0, N, (B,), device=dev); r = zipf_rel(B)
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    te = bench(lambda: transr(E, R, P, h, r, t), warm=2, iters=5)
    peak_e = torch.cuda.max_memory_allocated() - base
    tc = bench(lambda: ctr(E, R, P, h, r, t), warm=3, iters=5)
    res[f"transr_D{D}_B{B}"] = dict(eager=te, compile=tc, eager_peak_GB=peak_e / 1e9, unique_r=int(torch.unique(r).numel()))
    print(f"transr B{B}", res[f"transr_D{D}_B{B}"], flush=True)
print(json.dumps(res))
