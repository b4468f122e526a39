// What query 1's inner computation costs on CUDA cores with nothing else:
// no global loads, no barriers, no output but one value per thread, the
// machine filled. Each thread keeps 4 x 8 accumulators (as the tuned 64 x 128
// kernel does) and runs `steps` reduction steps over operands it reads from
// shared memory in 16-byte vectors, computing per pair exactly the query's
//   p = s * w;  acc += p + (p > t) * (p - t)
// so that the compiler emits the same instructions as KGE's kernel. The
// total work is n^3 pair-steps (n = 1024, 2048); the time is the floor of
// any kernel of query 1 that computes it as written (IEEE, no reassociation).
//
//   nvcc -O3 -arch=sm_90 -o q1_floor_probe q1_floor_probe.cu && ./q1_floor_probe
//   cuobjdump -sass q1_floor_probe | grep -c FSETP   (the instruction mix)
#include <cstdio>
#include <cuda_runtime.h>

constexpr int TM = 4, TN = 8, KB = 8;

__global__ void __launch_bounds__(256) q1Floor(const float *thres, float *out, int steps) {
  __shared__ float4 sTile[KB][TM / 4 * 64];
  __shared__ float4 wTile[KB][TN / 4 * 64];
  int t = threadIdx.x;
  for (int k = 0; k < KB; ++k) {
    if (t < 64) sTile[k][t] = make_float4(t * 0.01f + k, -t * 0.02f, k * 0.03f, 0.5f);
    if (t < 128) wTile[k][t] = make_float4(0.25f * k, t * 0.001f, -0.75f, k * -0.01f);
  }
  __syncthreads();
  float th[TM];
  for (int r = 0; r < TM; ++r) th[r] = thres[(blockIdx.x * TM + r) & 1023];
  float acc[TM][TN] = {};
  int row = t % 64, col = t / 64;
  for (int step = 0; step < steps; step += KB) {
#pragma unroll 4
    for (int k = 0; k < KB; ++k) {
      float4 s = sTile[k][row];
      float4 w0 = wTile[k][col * 2], w1 = wTile[k][col * 2 + 1];
      float sv[TM] = {s.x, s.y, s.z, s.w};
      float wv[TN] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int c = 0; c < TN; ++c) {
          float p = sv[r] * wv[c];
          acc[r][c] += p + (p > th[r]) * (p - th[r]);
        }
    }
  }
  float sum = 0;
  for (int r = 0; r < TM; ++r)
    for (int c = 0; c < TN; ++c) sum += acc[r][c];
  out[blockIdx.x * blockDim.x + t] = sum;
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float *thres, *out;
  cudaMalloc(&thres, 1024 * sizeof(float));
  cudaMemset(thres, 0, 1024 * sizeof(float));
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (long n : {1024L, 2048L}) {
    for (int blocksPerSM : {2, 4, 8}) {
      long blocks = (long)sms * blocksPerSM, threads = blocks * 256;
      long pairSteps = n * n * n;
      // Steps per thread, rounded up to whole shared tiles.
      long steps = (pairSteps / (threads * TM * TN) + KB - 1) / KB * KB;
      cudaMalloc(&out, threads * sizeof(float));
      q1Floor<<<blocks, 256>>>(thres, out, (int)steps);
      cudaEventRecord(a);
      const int reps = 10;
      for (int i = 0; i < reps; ++i) q1Floor<<<blocks, 256>>>(thres, out, (int)steps);
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      float ms;
      cudaEventElapsedTime(&ms, a, b);
      double us = ms * 1e3 / reps;
      double done = (double)threads * steps * TM * TN;
      printf("n=%ld blocks/SM=%d steps/thread=%ld: %.1f us, scaled to n^3 pair-steps %.1f us "
             "(%.2f Tpair-steps/s) %s\n",
             n, blocksPerSM, steps, us, us * pairSteps / done, done / us / 1e6,
             cudaGetErrorString(cudaGetLastError()));
      cudaFree(out);
    }
  }
  return 0;
}
