"""What the hardware allows the vector models (GPU machine): GPU time of
minimal kernels that only read what TransE-L2 reads, FB15k-like, D = 512,
B = 16384 — every edge's head and tail rows (random entities) and its
relation row (Zipf) — next to contiguous reads of an L2-resident buffer
of the same size and of a buffer four times the L2. No scores are computed
beyond one sum per edge. Each kernel is timed over 200 back-to-back
launches with CUDA events (GPU time, no host overhead).

    python3 bench/proto/l2_gather_probe.py
"""
import pathlib
import sys

import cupy as cp
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import datasets  # noqa: E402

SOURCE = r"""
extern "C" __global__ void stream(const float4 *__restrict__ x, long n4, float *out) {
  float s = 0.f;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
    float4 v = __ldg(x + i);
    s += v.x + v.y + v.z + v.w;
  }
  if (s == 12345.f) out[0] = s;
}

// One warp per EDGES edges; lane l reads float4 l, l + 32, ... of each row.
// D = 512 floats = 128 float4 = 4 per lane per row; all loads of the warp's
// edges are issued before any is used.
template <int EDGES, int ROWS>
__device__ void gatherImpl(const float4 *__restrict__ E, const float4 *__restrict__ R,
                           const long *__restrict__ h, const long *__restrict__ r,
                           const long *__restrict__ t, int B, float *__restrict__ out) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  int first = warp * EDGES;
  if (first >= B) return;
  float4 v[EDGES][ROWS][4];
#pragma unroll
  for (int e = 0; e < EDGES; ++e) {
    int edge = min(first + e, B - 1);
    const float4 *rows[3] = {E + h[edge] * 128, E + t[edge] * 128, R + r[edge] * 128};
#pragma unroll
    for (int q = 0; q < ROWS; ++q)
#pragma unroll
      for (int c = 0; c < 4; ++c) v[e][q][c] = __ldg(rows[q] + lane + 32 * c);
  }
#pragma unroll
  for (int e = 0; e < EDGES; ++e) {
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      float4 a = v[e][0][c], b = v[e][1][c];
      float4 d = ROWS == 3 ? v[e][2][c] : make_float4(0, 0, 0, 0);
      float x = a.x + d.x - b.x, y = a.y + d.y - b.y, z = a.z + d.z - b.z, w = a.w + d.w - b.w;
      s += x * x + y * y + z * z + w * w;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0 && first + e < B) out[first + e] = s;
  }
}
extern "C" __global__ void gather1(const float4 *E, const float4 *R, const long *h, const long *r, const long *t, int B, float *out) { gatherImpl<1, 3>(E, R, h, r, t, B, out); }
extern "C" __global__ void gather2(const float4 *E, const float4 *R, const long *h, const long *r, const long *t, int B, float *out) { gatherImpl<2, 3>(E, R, h, r, t, B, out); }
extern "C" __global__ void gather4(const float4 *E, const float4 *R, const long *h, const long *r, const long *t, int B, float *out) { gatherImpl<4, 3>(E, R, h, r, t, B, out); }
extern "C" __global__ void gather2ht(const float4 *E, const float4 *R, const long *h, const long *r, const long *t, int B, float *out) { gatherImpl<2, 2>(E, R, h, r, t, B, out); }
"""

module = cp.RawModule(code=SOURCE, options=("-std=c++17",),
                      name_expressions=None)


def gpu_time(launch, calls=200):
    launch()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(calls):
        launch()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) * 1e3 / calls


def fb15k_batch(batch):
    """Head, relation and tail indices (CuPy) of `batch` edges drawn from the
    FB15k-like graph's triples as the benchmark draws them, and the numbers
    of entities and relations."""
    triples, entities, relations = datasets.fb15k_like()
    triples = torch.from_numpy(triples).cuda()
    g = torch.Generator(device="cuda").manual_seed(0)
    s = triples[torch.randint(0, len(triples), (batch,), generator=g, device="cuda")]
    h, r, t = (cp.asarray(s[:, i].contiguous()) for i in range(3))
    return h, r, t, entities, relations


def main():
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    out = cp.zeros(1 << 20, dtype=cp.float32)
    stream = module.get_function("stream")
    for label, megabytes in (("L2-resident 32 MB", 32), ("DRAM 1 GB", 1024)):
        x = cp.ones(megabytes << 18, dtype=cp.float32)
        n4 = x.size // 4
        us = gpu_time(lambda: stream((sms * 8,), (512,), (x, cp.int64(n4), out)))
        print(f"contiguous {label}: {us:.2f} us, {x.nbytes / us / 1e6:.2f} TB/s", flush=True)

    B, D = 16384, 512
    h, r, t, entities, relations = fb15k_batch(B)
    E = cp.random.standard_normal((entities, D), dtype=cp.float32)
    R = cp.random.standard_normal((relations, D), dtype=cp.float32)
    unique = len(cp.unique(cp.concatenate([h, t])))
    print(f"B={B} D={D}: {unique} distinct entities ({unique * D * 4 / 1e6:.1f} MB), "
          f"{len(cp.unique(r))} distinct relations; 3 rows per edge = {3 * B * D * 4 / 1e6:.1f} MB", flush=True)
    for name, edges in (("gather1", 1), ("gather2", 2), ("gather4", 4), ("gather2ht", 2)):
        kernel = module.get_function(name)
        warps = -(-B // edges)
        blocks = -(-warps * 32 // 256)
        us = gpu_time(lambda: kernel((blocks,), (256,), (E, R, h, r, t, cp.int32(B), out)))
        rows = 2 if name.endswith("ht") else 3
        print(f"{name} ({edges} edges per warp, {rows} rows per edge): {us:.2f} us, "
              f"{rows * B * D * 4 / us / 1e6:.2f} TB/s of rows", flush=True)


if __name__ == "__main__":
    main()
