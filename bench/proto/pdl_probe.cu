// Does programmatic dependent launch (sm_90) shorten back-to-back calls of
// a gather kernel like KGE's vector models? Each warp scores one edge of a
// TransE-like batch (FB15k sizes, D = 512, B = 16384): it reads the edge's
// head, relation and tail rows and writes one sum. 20 launches back to back,
// median of 7 repetitions, per launch:
//   plain      cudaLaunchKernelEx without attributes
//   pdl-wait   programmatic stream serialization; each kernel waits
//              (griddepcontrol.wait) before touching memory
//   pdl-early  the same, and each kernel lets its dependent launch at once
//              (griddepcontrol.launch_dependents)
//
//   nvcc -O3 -arch=sm_90 -o /tmp/pdl_probe bench/proto/pdl_probe.cu && /tmp/pdl_probe
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(x)                                                               \
  do {                                                                         \
    cudaError_t e = (x);                                                       \
    if (e != cudaSuccess) {                                                    \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e));                      \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

constexpr int kD = 512, kB = 16384, kEntities = 14951, kRelations = 1345;

template <int Mode>
__global__ void __launch_bounds__(256) score(const float4 *E, const float4 *R,
                                             const int *h, const int *r,
                                             const int *t, float *out) {
  if (Mode > 0)
    asm volatile("griddepcontrol.wait;" ::: "memory");
  if (Mode > 1)
    asm volatile("griddepcontrol.launch_dependents;");
  int edge = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
  const float4 *a = E + size_t(h[edge]) * (kD / 4);
  const float4 *b = R + size_t(r[edge]) * (kD / 4);
  const float4 *c = E + size_t(t[edge]) * (kD / 4);
  float sum = 0;
#pragma unroll
  for (int j = 0; j < kD / 128; ++j) {
    float4 x = a[j * 32 + lane], y = b[j * 32 + lane], z = c[j * 32 + lane];
    float4 d = {x.x + y.x - z.x, x.y + y.y - z.y, x.z + y.z - z.z,
                x.w + y.w - z.w};
    sum += d.x * d.x + d.y * d.y + d.z * d.z + d.w * d.w;
  }
  for (int o = 16; o; o /= 2)
    sum += __shfl_xor_sync(~0u, sum, o);
  if (lane == 0)
    out[edge] = sqrtf(sum);
}

template <int Mode>
float perLaunch(const float4 *E, const float4 *R, const int *h, const int *r,
                const int *t, float *out, cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = kB / 8;
  config.blockDim = 256;
  config.stream = stream;
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = Mode > 0 ? 1 : 0;
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int rep = 0; rep < 8; ++rep) {
    CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < 20; ++i)
      CHECK(cudaLaunchKernelEx(&config, score<Mode>, E, R, h, r, t, out));
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (rep)
      times.push_back(ms * 1000 / 20);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int main() {
  std::mt19937 rng(0);
  std::vector<int> h(kB), r(kB), t(kB);
  for (int i = 0; i < kB; ++i) {
    h[i] = rng() % kEntities;
    t[i] = rng() % kEntities;
    r[i] = rng() % kRelations;
  }
  float4 *E, *R;
  int *dh, *dr, *dt;
  float *out;
  CHECK(cudaMalloc(&E, size_t(kEntities) * kD * 4));
  CHECK(cudaMalloc(&R, size_t(kRelations) * kD * 4));
  CHECK(cudaMemset(E, 0, size_t(kEntities) * kD * 4));
  CHECK(cudaMemset(R, 0, size_t(kRelations) * kD * 4));
  CHECK(cudaMalloc(&dh, kB * 4));
  CHECK(cudaMalloc(&dr, kB * 4));
  CHECK(cudaMalloc(&dt, kB * 4));
  CHECK(cudaMalloc(&out, kB * 4));
  CHECK(cudaMemcpy(dh, h.data(), kB * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dr, r.data(), kB * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dt, t.data(), kB * 4, cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int round = 0; round < 3; ++round)
    std::printf("plain %.2f us  pdl-wait %.2f us  pdl-early %.2f us\n",
                perLaunch<0>(E, R, dh, dr, dt, out, stream),
                perLaunch<1>(E, R, dh, dr, dt, out, stream),
                perLaunch<2>(E, R, dh, dr, dt, out, stream));
  return 0;
}
