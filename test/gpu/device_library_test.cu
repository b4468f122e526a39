//===- device_library_test.cu - tests of the KGE device library -----------===//
//
// Runs the runtime inspector and the reorder/check kernels on the GPU and
// compares them with CPU references: tiles of every size up to 1024, keys
// all equal, all distinct and random; group sorts and the global counting
// sort; index checks with and without bad indices.
//
//   nvcc -arch=sm_90 -rdc=true -I runtime/device test/gpu/device_library_test.cu \
//        runtime/device/kge_device.cu -o device_library_test
//
//===----------------------------------------------------------------------===//

#include "kge_device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <utility>
#include <vector>

#define CHECK(call)                                                           \
  do {                                                                        \
    cudaError_t e = (call);                                                   \
    if (e != cudaSuccess) {                                                   \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, \
                  __LINE__);                                                  \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

static int failures = 0, passes = 0;
#define EXPECT(cond, ...)                                                     \
  do {                                                                        \
    if (cond) {                                                               \
      ++passes;                                                               \
    } else {                                                                  \
      ++failures;                                                             \
      std::printf("FAIL %s:%d: ", __FILE__, __LINE__);                       \
      std::printf(__VA_ARGS__);                                               \
      std::printf("\n");                                                      \
    }                                                                         \
  } while (0)

__device__ unsigned long long sharedAddress(void *p) {
  return static_cast<unsigned long long>(__cvta_generic_to_shared(p));
}

/// One block per tile: loads `count` keys, runs the inspector, writes out
/// uniq/slot/order/offsets/ranked and the two return values.
__global__ void inspectTiles(const int *keys, const int *counts, int tile,
                             int *out, int stride) {
  extern __shared__ int shared[];
  int *k = shared, *uniq = k + tile, *slot = uniq + tile, *order = slot + tile,
      *offsets = order + tile, *ranked = offsets + tile + 1,
      *scratch = ranked + tile;
  int count = counts[blockIdx.x];
  const int *tileKeys = keys + blockIdx.x * tile;
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    k[i] = tileKeys[i];
  __syncthreads();
  int nuniq = kge_inspect_unique(sharedAddress(k), count, sharedAddress(uniq),
                                 sharedAddress(slot), sharedAddress(order),
                                 sharedAddress(offsets), sharedAddress(scratch));
  int cached = kge_inspect_frequent(sharedAddress(offsets), nuniq,
                                    sharedAddress(ranked),
                                    sharedAddress(scratch));
  int *o = out + blockIdx.x * stride;
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    o[2 + i] = uniq[i];
    o[2 + tile + i] = slot[i];
    o[2 + 2 * tile + i] = order[i];
    o[2 + 3 * tile + i] = ranked[i];
  }
  for (int i = threadIdx.x; i <= count; i += blockDim.x)
    o[2 + 4 * tile + i] = offsets[i];
  if (threadIdx.x == 0) {
    o[0] = nuniq;
    o[1] = cached;
  }
}

static void testInspector(int tile, int blockSize, const char *kind,
                          std::mt19937 &rng) {
  const int tiles = 16;
  std::vector<int> keys(tiles * tile), counts(tiles);
  for (int t = 0; t < tiles; ++t) {
    counts[t] = t == 0 ? 0 : (t == 1 ? 1 : (t == 2 ? tile : 1 + rng() % tile));
    for (int i = 0; i < tile; ++i) {
      int key = static_cast<int>(rng() % 50);
      if (std::string(kind) == "same")
        key = 7;
      if (std::string(kind) == "distinct")
        key = 1000 + 3 * i;
      keys[t * tile + i] = key;
    }
  }
  int stride = 2 + 5 * tile + 1;
  int *dKeys, *dCounts, *dOut;
  CHECK(cudaMalloc(&dKeys, keys.size() * 4));
  CHECK(cudaMalloc(&dCounts, tiles * 4));
  CHECK(cudaMalloc(&dOut, tiles * stride * 4));
  CHECK(cudaMemcpy(dKeys, keys.data(), keys.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dCounts, counts.data(), tiles * 4, cudaMemcpyHostToDevice));
  int padded = 1;
  while (padded < tile)
    padded <<= 1;
  size_t shared = (6 * tile + 1 + 2 * padded) * 4;
  CHECK(cudaFuncSetAttribute(inspectTiles,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(shared)));
  inspectTiles<<<tiles, blockSize, shared>>>(dKeys, dCounts, tile, dOut, stride);
  CHECK(cudaGetLastError());
  std::vector<int> out(tiles * stride);
  CHECK(cudaMemcpy(out.data(), dOut, out.size() * 4, cudaMemcpyDeviceToHost));
  for (int t = 0; t < tiles; ++t) {
    int count = counts[t];
    const int *o = out.data() + t * stride;
    std::vector<std::pair<int, int>> sorted;
    for (int i = 0; i < count; ++i)
      sorted.push_back({keys[t * tile + i], i});
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> uniq;
    std::map<int, int> frequency;
    for (auto &[key, i] : sorted) {
      if (uniq.empty() || uniq.back() != key)
        uniq.push_back(key);
      ++frequency[key];
    }
    int nuniq = o[0];
    EXPECT(nuniq == static_cast<int>(uniq.size()),
           "tile %d (%s, %d of %d): %d unique keys, expected %zu", t, kind,
           count, tile, nuniq, uniq.size());
    if (nuniq != static_cast<int>(uniq.size()))
      continue;
    bool ok = true;
    for (int u = 0; u < nuniq; ++u)
      ok &= o[2 + u] == uniq[u];
    for (int i = 0; i < count; ++i) {
      int slot = o[2 + tile + i];
      ok &= slot >= 0 && slot < nuniq && uniq[slot] == keys[t * tile + i];
      ok &= o[2 + 2 * tile + i] == sorted[i].second;
    }
    for (int u = 0; u < nuniq; ++u) {
      int start = o[2 + 4 * tile + u], end = o[2 + 4 * tile + u + 1];
      ok &= end - start == frequency[uniq[u]];
    }
    ok &= o[2 + 4 * tile + nuniq] == count;
    int cached = 0;
    for (auto &[key, f] : frequency)
      cached += f >= 2;
    ok &= o[1] == cached;
    for (int r = 1; r < nuniq; ++r) {
      int a = o[2 + 3 * tile + r - 1], b = o[2 + 3 * tile + r];
      int fa = frequency[uniq[a]], fb = frequency[uniq[b]];
      ok &= fa > fb || (fa == fb && a < b);
    }
    EXPECT(ok, "tile %d (%s, %d of %d): wrong inspector outputs", t, kind,
           count, tile);
  }
  CHECK(cudaFree(dKeys));
  CHECK(cudaFree(dCounts));
  CHECK(cudaFree(dOut));
}

/// The global counting sort as the launch plans run it: `privatized` gives
/// the histogram and the scatter the shared memory of per-block counters
/// (chunks of KGE_SORT_CHUNK items, `grid` blocks of 512 threads, or one
/// per chunk) up to KGE_SORT_PRIVATE_KEYS keys; otherwise one thread per
/// item and global atomics.
static void countingSort(const long long *dKeys, long long n, long long numKeys,
                         int *dCounts, int *dPerm, bool privatized,
                         int grid = 0, int *dLengths = nullptr, int dTileRows = 0,
                         int *dTiles = nullptr, int dLongRows = 0,
                         int *dLongTiles = nullptr) {
  auto scan = [&] {
    if (dLengths)
      kge_key_scan_tiles<<<1, 1024>>>(dCounts, numKeys, dLengths, dTileRows, dTiles,
                                      dLongRows, dLongTiles);
    else
      kge_key_scan<<<1, 1024>>>(dCounts, numKeys);
  };
  CHECK(cudaMemset(dCounts, 0, numKeys * 4));
  if (privatized) {
    long long words = (numKeys + 1) / 2;
    int histogramBytes = 0, scatterBytes = 0;
    if (numKeys <= KGE_SORT_PRIVATE_KEYS) {
      histogramBytes = static_cast<int>(4 * words);
      scatterBytes = static_cast<int>(4 * ((words + 3) / 4 * 4) + 8 * KGE_SORT_CHUNK);
    }
    CHECK(cudaFuncSetAttribute(kge_key_histogram,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               histogramBytes));
    CHECK(cudaFuncSetAttribute(kge_key_scatter,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               scatterBytes));
    int blocks = grid ? grid : static_cast<int>((n + KGE_SORT_CHUNK - 1) / KGE_SORT_CHUNK);
    kge_key_histogram<<<blocks, 512, histogramBytes>>>(dKeys, 64, n, numKeys, dCounts);
    scan();
    kge_key_scatter<<<blocks, 512, scatterBytes>>>(dKeys, 64, n, numKeys, dCounts,
                                                   dPerm);
  } else {
    kge_key_histogram<<<(n + 255) / 256, 256>>>(dKeys, 64, n, numKeys, dCounts);
    scan();
    kge_key_scatter<<<(n + 255) / 256, 256>>>(dKeys, 64, n, numKeys, dCounts,
                                              dPerm);
  }
  CHECK(cudaGetLastError());
}

static void testSorts(std::mt19937 &rng) {
  struct Case {
    long long n, numKeys;
    bool hot; // a third of the items on one key (a skewed entity)
    int grid; // privatized blocks (0: one per chunk)
  };
  for (Case c : {Case{1, 1345, false, 0}, {37, 1345, false, 0}, {4096, 1345, false, 0},
                 {16384, 1345, false, 0}, {100000, 1345, false, 0}, {5, 93773, false, 0},
                 {262144, 93773, false, 0}, {3000, 1, false, 0}, {3000, 2000, false, 0},
                 {2048, 14951, true, 0}, {2049, 14951, true, 0}, {6143, 7, true, 0},
                 {262144, 14951, true, 0}, {100000, 14951, true, 3},
                 {70000, KGE_SORT_PRIVATE_KEYS, true, 0},
                 {70000, KGE_SORT_PRIVATE_KEYS + 1, true, 0}}) {
    long long n = c.n, numKeys = c.numKeys;
    std::vector<long long> keys(n);
    std::uniform_int_distribution<long long> dist(0, numKeys - 1);
    for (auto &k : keys)
      k = c.hot && dist(rng) % 3 == 0 ? numKeys / 2
                                       : dist(rng) % (1 + dist(rng)); // skewed towards small keys
    long long *dKeys;
    int *dPerm, *dCounts;
    CHECK(cudaMalloc(&dKeys, n * 8));
    CHECK(cudaMalloc(&dPerm, n * 4));
    CHECK(cudaMalloc(&dCounts, numKeys * 4));
    CHECK(cudaMemcpy(dKeys, keys.data(), n * 8, cudaMemcpyHostToDevice));
    std::map<long long, int> frequency;
    for (long long k : keys)
      ++frequency[k];
    // Rare keys first, then frequent ones; by key within each class.
    auto rank = [&](long long key) {
      return std::make_pair(frequency[key] >= KGE_RARE_KEY_COUNT, key);
    };
    std::vector<int> perm(n);
    // The privatized sort's scan is kge_key_scan_tiles (16-row tiles, runs
    // of 64 and more in 64-row ones): the run lengths and both tables are
    // checked against the runs the sort leaves.
    const int tileRows = 16, longRows = 64;
    long long capacity = 1 + 3 * ((n + tileRows - 1) / tileRows + numKeys);
    long long longCapacity = 1 + 3 * (n / longRows);
    int *dLengths, *dTiles, *dLongTiles;
    CHECK(cudaMalloc(&dLengths, numKeys * 4));
    CHECK(cudaMalloc(&dTiles, capacity * 4));
    CHECK(cudaMalloc(&dLongTiles, longCapacity * 4));
    for (bool privatized : {false, true}) {
      // Global counting sort.
      CHECK(cudaMemset(dPerm, 0xff, n * 4));
      CHECK(cudaMemset(dLengths, 0xff, numKeys * 4));
      countingSort(dKeys, n, numKeys, dCounts, dPerm, privatized, c.grid,
                   privatized ? dLengths : nullptr, tileRows, dTiles, longRows,
                   dLongTiles);
      if (privatized) {
        std::vector<int> lengths(numKeys), ends(numKeys), tiles(capacity),
            longTiles(longCapacity);
        CHECK(cudaMemcpy(lengths.data(), dLengths, numKeys * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(ends.data(), dCounts, numKeys * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(tiles.data(), dTiles, capacity * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(longTiles.data(), dLongTiles, longCapacity * 4,
                         cudaMemcpyDeviceToHost));
        bool lengthsOk = true;
        std::vector<int> expected = {0}, expectedLong = {0};
        for (long long g = 0; g < numKeys; ++g) {
          lengthsOk &= lengths[g] == (frequency.count(g) ? frequency[g] : 0);
          // After the scatter, ends[g] is where key g's run ends.
          int start = ends[g] - lengths[g];
          for (; start + longRows <= ends[g]; start += longRows) {
            expectedLong.insert(expectedLong.end(), {static_cast<int>(g), start, start + longRows});
            ++expectedLong[0];
          }
          for (; start < ends[g]; start += tileRows) {
            expected.insert(expected.end(),
                            {static_cast<int>(g), start, std::min(start + tileRows, ends[g])});
            ++expected[0];
          }
        }
        bool tilesOk = std::equal(expected.begin(), expected.end(), tiles.begin()) &&
                       std::equal(expectedLong.begin(), expectedLong.end(), longTiles.begin());
        EXPECT(lengthsOk && tilesOk, "kge_key_scan_tiles of %lld items, %lld keys: run lengths "
               "%s, tiles %s", n, numKeys, lengthsOk ? "right" : "wrong",
               tilesOk ? "right" : "wrong");
      }
      CHECK(cudaMemcpy(perm.data(), dPerm, n * 4, cudaMemcpyDeviceToHost));
      std::vector<int> seen(n, 0);
      bool ok = true;
      for (long long i = 0; i < n; ++i) {
        ok &= perm[i] >= 0 && perm[i] < n && !seen[perm[i]]++;
        if (ok && i)
          ok &= rank(keys[perm[i - 1]]) <= rank(keys[perm[i]]);
      }
      EXPECT(ok, "counting sort (%s) of %lld items, %lld keys: not a permutation "
             "that groups rare keys, then frequent keys, each by key",
             privatized ? "privatized" : "global atomics", n, numKeys);
    }
    // Sorts within groups.
    for (int group : {32, 1000, 4096}) {
      int padded = 1;
      while (padded < group)
        padded <<= 1;
      kge_sort_groups<<<(n + group - 1) / group, std::min(1024, padded),
                        8 * padded>>>(dKeys, 64, n, group, dPerm);
      CHECK(cudaGetLastError());
      CHECK(cudaMemcpy(perm.data(), dPerm, n * 4, cudaMemcpyDeviceToHost));
      bool groupOk = true;
      for (long long i = 0; i < n; ++i) {
        long long g = i / group;
        groupOk &= perm[i] / group == g;
        if (i % group)
          groupOk &= keys[perm[i - 1]] <= keys[perm[i]];
      }
      EXPECT(groupOk, "group sort of %lld keys in groups of %d is wrong", n,
             group);
    }
    CHECK(cudaFree(dKeys));
    CHECK(cudaFree(dPerm));
    CHECK(cudaFree(dCounts));
    CHECK(cudaFree(dLengths));
    CHECK(cudaFree(dTiles));
    CHECK(cudaFree(dLongTiles));
  }
}

static void testChecks() {
  long long n = 10000;
  std::vector<int> keys(n, 5);
  int *dKeys;
  long long *dBad;
  CHECK(cudaMalloc(&dKeys, n * 4));
  CHECK(cudaMalloc(&dBad, 8));
  for (long long badAt : {-1LL, 0LL, 777LL, 9999LL}) {
    std::fill(keys.begin(), keys.end(), 5);
    if (badAt >= 0) {
      keys[badAt] = 100;
      if (badAt + 10 < n)
        keys[badAt + 10] = -3;
    }
    CHECK(cudaMemcpy(dKeys, keys.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dBad, &n, 8, cudaMemcpyHostToDevice));
    kge_check_indices<<<40, 256>>>(dKeys, 32, n, 100, dBad);
    long long bad;
    CHECK(cudaMemcpy(&bad, dBad, 8, cudaMemcpyDeviceToHost));
    EXPECT(bad == (badAt < 0 ? n : badAt),
           "index check reports %lld, expected %lld", bad, badAt < 0 ? n : badAt);
  }
  CHECK(cudaFree(dKeys));
  CHECK(cudaFree(dBad));
}

/// Keys outside [0, numKeys) (an unchecked call's bad indices) are sorted as
/// the nearest key in range: the counters and the permutation get no write
/// outside them (guard words after both stay untouched) and the result is a
/// permutation.
static void testSortClampsKeys() {
  const long long numKeys = 100, n = 5000;
  std::vector<long long> keys(n);
  for (long long i = 0; i < n; ++i)
    keys[i] = i % 7 == 0 ? -1 - i : i % 11 == 0 ? numKeys + i * 1000 : i % numKeys;
  const int guard = 64, marker = 0x5a5a5a5a;
  long long *dKeys;
  int *dCounts, *dPerm;
  CHECK(cudaMalloc(&dKeys, n * 8));
  CHECK(cudaMalloc(&dCounts, (numKeys + guard) * 4));
  CHECK(cudaMalloc(&dPerm, (n + guard) * 4));
  CHECK(cudaMemcpy(dKeys, keys.data(), n * 8, cudaMemcpyHostToDevice));
  for (bool privatized : {false, true}) {
    CHECK(cudaMemset(dCounts, 0x5a, (numKeys + guard) * 4));
    CHECK(cudaMemset(dPerm, 0x5a, (n + guard) * 4));
    countingSort(dKeys, n, numKeys, dCounts, dPerm, privatized);
    std::vector<int> counts(numKeys + guard), perm(n + guard);
    CHECK(cudaMemcpy(counts.data(), dCounts, counts.size() * 4,
                     cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(perm.data(), dPerm, perm.size() * 4, cudaMemcpyDeviceToHost));
    bool guards = true;
    for (int g = 0; g < guard; ++g)
      guards &= counts[numKeys + g] == marker && perm[n + g] == marker;
    EXPECT(guards, "the sort wrote past its counters or permutation");
    std::vector<int> seen(n, 0);
    bool permutation = true, grouped = true;
    auto clamped = [&](long long key) {
      return key < 0 ? 0 : key >= numKeys ? numKeys - 1 : key;
    };
    for (long long i = 0; i < n; ++i)
      permutation &= perm[i] >= 0 && perm[i] < n && !seen[perm[i]]++;
    EXPECT(permutation, "keys out of range: not a permutation");
    // Every clamped key's items are consecutive.
    std::vector<long long> lastPosition(numKeys, -1);
    for (long long i = 0; permutation && i < n; ++i) {
      long long key = clamped(keys[perm[i]]);
      grouped &= lastPosition[key] < 0 || lastPosition[key] == i - 1;
      lastPosition[key] = i;
    }
    EXPECT(grouped, "keys out of range: items of one (clamped) key not consecutive");
  }
  CHECK(cudaFree(dKeys));
  CHECK(cudaFree(dCounts));
  CHECK(cudaFree(dPerm));
}

/// Segment tiles as kge_key_scan_tiles cuts them: each key's run where the
/// scan places it (rare keys first), empty keys without tiles, one key
/// with many tiles, more keys than threads; runs of at least long_rows
/// items in the second table.
static void testSegmentTiles(std::mt19937 &rng) {
  for (int numKeys : {1, 7, 1345, 70000}) {
    for (auto [tileRows, longRows] : {std::pair{1, 0}, std::pair{16, 0}, std::pair{64, 0},
                                      std::pair{16, 64}, std::pair{16, 32}, std::pair{1, 5}}) {
      std::vector<int> lengths(numKeys);
      std::uniform_int_distribution<int> length(0, 140);
      for (int &l : lengths)
        l = length(rng) % 3 == 0 ? 0 : length(rng);
      lengths[numKeys / 2] = 1000;
      long long n = 0;
      for (int l : lengths)
        n += l;
      long long capacity = 1 + 3 * ((n + tileRows - 1) / tileRows + numKeys);
      long long longCapacity = 1 + 3 * (longRows ? n / longRows : 0);
      int *dCounts, *dLengths, *dTiles, *dLong;
      CHECK(cudaMalloc(&dCounts, numKeys * 4));
      CHECK(cudaMalloc(&dLengths, numKeys * 4));
      CHECK(cudaMalloc(&dTiles, capacity * 4));
      CHECK(cudaMalloc(&dLong, longCapacity * 4));
      CHECK(cudaMemcpy(dCounts, lengths.data(), numKeys * 4, cudaMemcpyHostToDevice));
      CHECK(cudaMemset(dLengths, 0xff, numKeys * 4));
      CHECK(cudaMemset(dTiles, 0xff, capacity * 4));
      CHECK(cudaMemset(dLong, 0xff, longCapacity * 4));
      kge_key_scan_tiles<<<1, 1024>>>(dCounts, numKeys, dLengths, tileRows, dTiles, longRows,
                                      dLong);
      CHECK(cudaGetLastError());
      std::vector<int> starts(numKeys), kept(numKeys), tiles(capacity), longTiles(longCapacity);
      CHECK(cudaMemcpy(starts.data(), dCounts, numKeys * 4, cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(kept.data(), dLengths, numKeys * 4, cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(tiles.data(), dTiles, capacity * 4, cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(longTiles.data(), dLong, longCapacity * 4, cudaMemcpyDeviceToHost));
      // The runs the scan placed must tile [0, n) exactly.
      std::vector<int> covered(n, 0);
      for (int g = 0; g < numKeys; ++g)
        for (int p = starts[g]; p < starts[g] + lengths[g] && p >= 0 && p < n; ++p)
          ++covered[p];
      bool ok = kept == lengths &&
                std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; });
      std::vector<int> expected = {0}, expectedLong = {0};
      for (int g = 0; g < numKeys; ++g) {
        int start = starts[g], end = starts[g] + lengths[g];
        for (; longRows && start + longRows <= end; start += longRows) {
          expectedLong.insert(expectedLong.end(), {g, start, start + longRows});
          ++expectedLong[0];
        }
        for (; start < end; start += tileRows) {
          expected.insert(expected.end(), {g, start, std::min(start + tileRows, end)});
          ++expected[0];
        }
      }
      ok = ok && std::equal(expected.begin(), expected.end(), tiles.begin()) &&
           (expected.size() == tiles.size() || tiles[expected.size()] == -1);
      if (longRows)
        ok = ok && std::equal(expectedLong.begin(), expectedLong.end(), longTiles.begin()) &&
             (expectedLong.size() == longTiles.size() || longTiles[expectedLong.size()] == -1);
      else
        ok = ok && longTiles[0] == -1;
      EXPECT(ok, "segment tiles of %d keys, %d rows per tile (long runs: %d): %d + %d tiles, "
             "expected %d + %d", numKeys, tileRows, longRows, tiles[0], longTiles[0],
             expected[0], expectedLong[0]);
      CHECK(cudaFree(dCounts));
      CHECK(cudaFree(dLengths));
      CHECK(cudaFree(dTiles));
      CHECK(cudaFree(dLong));
    }
  }
}

/// The transposing copy: shapes below, at and across the 32 x 32 tiles,
/// a grid that strides over the tiles (fewer blocks than tiles), elements
/// past the matrix untouched.
static void testTranspose(std::mt19937 &rng) {
  // Multiples of 4 take 16-byte vectors, the others single words; an
  // offset of one word misaligns the source (single words again).
  struct Case { long long rows, cols; unsigned gx, gy; int offset; };
  for (Case c : {Case{1, 1, 1, 1, 0}, Case{31, 33, 2, 1, 0}, Case{64, 32, 2, 2, 0},
                 Case{1000, 7, 1, 32, 0}, Case{7, 1000, 32, 1, 0},
                 Case{513, 1025, 3, 5, 0}, Case{4096, 96, 3, 128, 0},
                 Case{4, 4, 1, 1, 0}, Case{68, 132, 2, 1, 0},
                 Case{1032, 2560, 7, 3, 0}, Case{1032, 2560, 40, 17, 1}}) {
    size_t n = static_cast<size_t>(c.rows * c.cols);
    std::vector<unsigned> src(n);
    for (unsigned &v : src)
      v = static_cast<unsigned>(rng());
    unsigned *dBase, *dDst;
    CHECK(cudaMalloc(&dBase, (n + 1) * 4));
    unsigned *dSrc = dBase + c.offset;
    CHECK(cudaMalloc(&dDst, (n + 64) * 4));
    CHECK(cudaMemcpy(dSrc, src.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dDst, 0xab, (n + 64) * 4));
    kge_transpose_32<<<dim3(c.gx, c.gy), 256>>>(dSrc, dDst, c.rows, c.cols);
    CHECK(cudaGetLastError());
    std::vector<unsigned> dst(n + 64);
    CHECK(cudaMemcpy(dst.data(), dDst, (n + 64) * 4, cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (long long r = 0; r < c.rows; ++r)
      for (long long col = 0; col < c.cols; ++col)
        wrong += dst[col * c.rows + r] != src[r * c.cols + col];
    for (size_t i = n; i < n + 64; ++i)
      wrong += dst[i] != 0xababababu;
    EXPECT(wrong == 0, "transpose of %lld x %lld (grid %u x %u): %zu wrong words",
           c.rows, c.cols, c.gx, c.gy, wrong);
    CHECK(cudaFree(dBase));
    CHECK(cudaFree(dDst));
  }
}

int main() {
  std::mt19937 rng(42);
  for (int tile : {1, 7, 32, 33, 64, 100, 256, 1024})
    for (const char *kind : {"random", "same", "distinct"})
      testInspector(tile, tile > 256 ? 1024 : 256, kind, rng);
  testSorts(rng);
  testSegmentTiles(rng);
  testSortClampsKeys();
  testChecks();
  testTranspose(rng);
  std::printf("device library: %d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
