"""What the hardware allows TransH and ComplEx (GPU machine): GPU time of
minimal kernels that read exactly the rows one edge of each model reads,
FB15k-like, D = 512, B = 16384, and write one sum per edge.

- TransE rows: E[h], E[t], R[r] (the floor of `l2_gather_probe.py`);
- TransH rows: E[h], E[t], R[r], P[r] (a second relation table);
- ComplEx rows: Ere[h], Eim[h], Ere[t], Eim[t], Rre[r], Rim[r] (two entity
  tables, 61 MB together, more than the 50 MB L2);
- ComplEx split: the same rows read in two passes over halves of D (the
  blocks of the first half numbered first), so that each pass touches
  30.6 MB of entity rows, which fit in L2; the halves add their sums with
  atomics;
- prefetched: one lane per row of the warp's edges first issues a bulk
  prefetch of the whole row into L2 (cp.async.bulk.prefetch.L2, sm_90),
  then the loads run as above.

Entities follow the triples of the FB15k-like graph (uniform), relations
are Zipf-skewed, as in the benchmark. Each kernel is timed over 200
back-to-back launches with CUDA events (GPU time, no host overhead).

    python3 bench/proto/row_floor_probe.py
"""
import pathlib
import sys

import cupy as cp

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from l2_gather_probe import fb15k_batch, gpu_time  # noqa: E402

SOURCE = r"""
// One warp per EDGES edges. Each of ET entity tables gives a head and a tail
// row, each of RT relation tables a relation row. D = 512 floats = 128
// float4; with SPLIT parts, part p of the grid reads float4
// [p * 128 / SPLIT, (p + 1) * 128 / SPLIT) of every row, lane l the float4
// l, l + 32, ... of that range. All loads of a warp are issued before use.
template <int EDGES, int ET, int RT, int SPLIT, int PREFETCH = 0>
__global__ void rows(const float4 *__restrict__ E0, const float4 *__restrict__ E1,
                     const float4 *__restrict__ R0, const float4 *__restrict__ R1,
                     const long *__restrict__ h, const long *__restrict__ r,
                     const long *__restrict__ t, int B, int blocksPerPart,
                     float *__restrict__ out) {
  constexpr int CHUNKS = 4 / SPLIT, ROWS = 2 * ET + RT;
  int part = blockIdx.x / blocksPerPart, block = blockIdx.x % blocksPerPart;
  int warp = (block * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  int first = warp * EDGES;
  if (first >= B) return;
  int base = part * 128 / SPLIT + lane;
  if (PREFETCH && lane < EDGES * ROWS) {
    // One lane per row: a bulk prefetch of the whole row into L2, so that
    // the loads below find it there (no registers held meanwhile).
    int e = lane / ROWS, q = lane % ROWS, edge = min(first + e, B - 1);
    long index = q < 2 * ET ? (q % 2 ? t[edge] : h[edge]) : r[edge];
    const float4 *table = q < 2 * ET ? (q < 2 ? E0 : E1) : (q == 2 * ET ? R0 : R1);
    size_t global;
    asm("cvta.to.global.u64 %0, %1;" : "=l"(global) : "l"(table + index * 128));
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], 2048;" :: "l"(global) : "memory");
  }
  float4 v[EDGES][ROWS][CHUNKS];
#pragma unroll
  for (int e = 0; e < EDGES; ++e) {
    int edge = min(first + e, B - 1);
    const float4 *src[6] = {E0 + h[edge] * 128, E0 + t[edge] * 128,
                            E1 + h[edge] * 128, E1 + t[edge] * 128,
                            R0 + r[edge] * 128, R1 + r[edge] * 128};
#pragma unroll
    for (int q = 0; q < ROWS; ++q) {
      const float4 *row = src[q < 2 * ET ? q : 4 + (q - 2 * ET)];
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) v[e][q][c] = __ldg(row + base + 32 * c);
    }
  }
#pragma unroll
  for (int e = 0; e < EDGES; ++e) {
    float s = 0.f;
#pragma unroll
    for (int q = 0; q < ROWS; ++q)
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c)
        s += v[e][q][c].x * v[e][q][c].y + v[e][q][c].z * v[e][q][c].w;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0 && first + e < B) {
      if (SPLIT == 1) out[first + e] = s;
      else atomicAdd(out + first + e, s);
    }
  }
}
"""

KERNELS = {
    # label: (template arguments, the first one edges per warp; rows per
    # edge; split)
    "TransE rows, 2 edges per warp": ("2, 1, 1, 1", 3, 1),
    "TransE rows, 4 edges per warp": ("4, 1, 1, 1", 3, 1),
    "TransH rows, 1 edge per warp": ("1, 1, 2, 1", 4, 1),
    "TransH rows, 2 edges per warp": ("2, 1, 2, 1", 4, 1),
    "TransH rows, 4 edges per warp": ("4, 1, 2, 1", 4, 1),
    "ComplEx rows, 1 edge per warp": ("1, 2, 2, 1", 6, 1),
    "ComplEx rows, 2 edges per warp": ("2, 2, 2, 1", 6, 1),
    "ComplEx rows, 2 halves of D, 2 edges per warp": ("2, 2, 2, 2", 6, 2),
    "ComplEx rows, 2 halves of D, 4 edges per warp": ("4, 2, 2, 2", 6, 2),
    "TransE rows, 4 edges per warp, rows prefetched to L2": ("4, 1, 1, 1, 1", 3, 1),
    "TransH rows, 1 edge per warp, rows prefetched to L2": ("1, 1, 2, 1, 1", 4, 1),
    "TransH rows, 4 edges per warp, rows prefetched to L2": ("4, 1, 2, 1, 1", 4, 1),
    "ComplEx rows, 1 edge per warp, rows prefetched to L2": ("1, 2, 2, 1, 1", 6, 1),
    "ComplEx rows, 2 edges per warp, rows prefetched to L2": ("2, 2, 2, 1, 1", 6, 1),
    "ComplEx rows, 4 edges per warp, rows prefetched to L2": ("4, 2, 2, 1, 1", 6, 1),
}
NAMES = {label: f"rows<{args}>" for label, (args, _, _) in KERNELS.items()}
module = cp.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=list(NAMES.values()))


def main():
    B, D = 16384, 512
    h, r, t, entities, relations = fb15k_batch(B)
    E0, E1 = (cp.random.standard_normal((entities, D), dtype=cp.float32) for _ in range(2))
    R0, R1 = (cp.random.standard_normal((relations, D), dtype=cp.float32) for _ in range(2))
    out = cp.zeros(B, dtype=cp.float32)
    unique = len(cp.unique(cp.concatenate([h, t])))
    print(f"B={B} D={D}: {unique} distinct entities, {len(cp.unique(r))} distinct relations; "
          f"one entity table {entities * D * 4 / 1e6:.1f} MB", flush=True)
    for label, (args, rows, split) in KERNELS.items():
        kernel = module.get_function(NAMES[label])
        edges = int(args.split(",")[0])
        warps = -(-B // edges)
        blocks = -(-warps * 32 // 256)
        us = gpu_time(lambda: kernel((blocks * split,), (256,),
                                     (E0, E1, R0, R1, h, r, t, cp.int32(B), cp.int32(blocks), out)))
        print(f"{label}: {us:.2f} us, {rows * B * D * 4 / us / 1e6:.2f} TB/s of rows "
              f"({rows} rows per edge)", flush=True)


if __name__ == "__main__":
    main()
