// What the launch plans' counting sort by entity costs (GPU machine): GPU
// time of its memset, histogram, scan and scatter, with global atomics per
// item (the launch without shared memory) and with per-block counters
// (privatized), on keys drawn like the benchmark's heads: P(rank) ~
// rank^-0.7 over the entities, ids shuffled. CUDA events over 200 rounds.
//
//   nvcc -arch=sm_90 -rdc=true -O2 -I runtime/device bench/proto/sort_probe.cu \
//        runtime/device/kge_device.cu -o sort_probe && ./sort_probe
#include "kge_device.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#define CHECK(call)                                                           \
  do {                                                                        \
    cudaError_t e = (call);                                                   \
    if (e != cudaSuccess) {                                                   \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, \
                  __LINE__);                                                  \
      return 1;                                                               \
    }                                                                         \
  } while (0)

int main() {
  std::mt19937_64 rng(7);
  cudaEvent_t marks[5];
  for (auto &m : marks)
    cudaEventCreate(&m);
  std::printf("%-8s %-8s %-10s %8s %8s %8s %8s %8s (us, GPU time)\n", "keys",
              "items", "counters", "memset", "histo", "scan", "scatter",
              "total");
  for (long long numKeys : {1345LL, 14951LL, 38000LL, 93773LL}) {
    std::vector<double> cdf(numKeys);
    double sum = 0;
    for (long long k = 0; k < numKeys; ++k)
      cdf[k] = sum += std::pow(static_cast<double>(k + 1), -0.7);
    std::vector<long long> ids(numKeys);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    for (long long n : {65536LL, 262144LL}) {
      std::uniform_real_distribution<double> u(0, sum);
      std::vector<long long> keys(n);
      for (auto &k : keys)
        k = ids[std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin()];
      long long *dKeys;
      int *dCounts, *dPerm;
      CHECK(cudaMalloc(&dKeys, n * 8));
      CHECK(cudaMalloc(&dCounts, numKeys * 4));
      CHECK(cudaMalloc(&dPerm, n * 4));
      CHECK(cudaMemcpy(dKeys, keys.data(), n * 8, cudaMemcpyHostToDevice));
      for (bool privatized : {false, true}) {
        long long words = (numKeys + 1) / 2;
        int histogramBytes = 0, scatterBytes = 0, blocks = (n + 255) / 256,
            threads = 256;
        if (privatized) {
          if (numKeys > KGE_SORT_PRIVATE_KEYS)
            continue;
          histogramBytes = static_cast<int>(4 * words);
          scatterBytes =
              static_cast<int>(4 * ((words + 3) / 4 * 4) + 8 * KGE_SORT_CHUNK);
          blocks = static_cast<int>((n + KGE_SORT_CHUNK - 1) / KGE_SORT_CHUNK);
          threads = 256; // as the launch plans
          CHECK(cudaFuncSetAttribute(kge_key_histogram,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     histogramBytes));
          CHECK(cudaFuncSetAttribute(kge_key_scatter,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     scatterBytes));
        }
        const int rounds = 200;
        float ms[4] = {0, 0, 0, 0};
        for (int r = 0; r < rounds + 5; ++r) {
          cudaEventRecord(marks[0]);
          cudaMemsetAsync(dCounts, 0, numKeys * 4);
          cudaEventRecord(marks[1]);
          kge_key_histogram<<<blocks, threads, histogramBytes>>>(
              dKeys, 64, n, numKeys, dCounts);
          cudaEventRecord(marks[2]);
          kge_key_scan<<<1, 1024>>>(dCounts, numKeys);
          cudaEventRecord(marks[3]);
          kge_key_scatter<<<blocks, threads, scatterBytes>>>(
              dKeys, 64, n, numKeys, dCounts, dPerm);
          cudaEventRecord(marks[4]);
          CHECK(cudaEventSynchronize(marks[4]));
          for (int s = 0; r >= 5 && s < 4; ++s) {
            float t;
            cudaEventElapsedTime(&t, marks[s], marks[s + 1]);
            ms[s] += t;
          }
        }
        CHECK(cudaGetLastError());
        std::vector<int> perm(n);
        CHECK(cudaMemcpy(perm.data(), dPerm, n * 4, cudaMemcpyDeviceToHost));
        std::vector<char> seen(n, 0);
        bool ok = true;
        for (long long i = 0; i < n; ++i)
          ok &= perm[i] >= 0 && perm[i] < n && !seen[perm[i]]++;
        float us[4], total = 0;
        for (int s = 0; s < 4; ++s)
          total += us[s] = ms[s] * 1e3f / rounds;
        std::printf("%-8lld %-8lld %-10s %8.1f %8.1f %8.1f %8.1f %8.1f%s\n",
                    numKeys, n, privatized ? "per-block" : "global", us[0],
                    us[1], us[2], us[3], total,
                    ok ? "" : "  NOT A PERMUTATION");
      }
      cudaFree(dKeys);
      cudaFree(dCounts);
      cudaFree(dPerm);
    }
  }
  return 0;
}
