//===- kge_device.cu - the KGE device library -----------------------------===//
//
// cuKE's runtime inspector (per-tile unique indices, buffer slots and
// frequency ranking) and the kernels of launch plans (edge reordering by
// key, index range checks). See kge_device.h for the contracts.
//
//===----------------------------------------------------------------------===//

#include "kge_device.h"

#include <climits>

namespace {

__device__ __forceinline__ int *shared(unsigned long long address) {
  return static_cast<int *>(__cvta_shared_to_generic(address));
}

__device__ __forceinline__ long long loadKey(const void *keys, int bits,
                                             long long i) {
  return bits == 32 ? static_cast<long long>(static_cast<const int *>(keys)[i])
                    : static_cast<const long long *>(keys)[i];
}

__device__ __forceinline__ int nextPow2(int n) {
  int p = 1;
  while (p < n)
    p <<= 1;
  return p;
}

/// (key, value) pairs ordered lexicographically.
__device__ __forceinline__ bool lessPair(int ka, int va, int kb, int vb) {
  return ka < kb || (ka == kb && va < vb);
}

/// Sorts (key, value) pairs held one per lane of a warp (32 lanes) in
/// ascending (key, value) order with a bitonic network of shuffles.
__device__ __forceinline__ void warpSortPairs(int &key, int &value) {
  const int lane = threadIdx.x & 31;
  for (int k = 2; k <= 32; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      int otherKey = __shfl_xor_sync(0xffffffffu, key, j);
      int otherValue = __shfl_xor_sync(0xffffffffu, value, j);
      bool ascending = (lane & k) == 0;
      bool lower = (lane & j) == 0;
      bool otherSmaller = lessPair(otherKey, otherValue, key, value);
      // The lower lane keeps the smaller pair in ascending runs.
      bool take = (lower == ascending) ? otherSmaller : !otherSmaller;
      if (take) {
        key = otherKey;
        value = otherValue;
      }
    }
  }
}

/// Sorts `n` (a power of two) (key, value) pairs in shared memory,
/// block-cooperatively.
__device__ void blockSortPairs(int *keys, int *values, int n) {
  for (int k = 2; k <= n; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < n; i += blockDim.x) {
        int partner = i ^ j;
        if (partner <= i)
          continue;
        bool ascending = (i & k) == 0;
        bool outOfOrder = lessPair(keys[partner], values[partner], keys[i],
                                   values[i]);
        if (outOfOrder == ascending) {
          int tk = keys[i], tv = values[i];
          keys[i] = keys[partner];
          values[i] = values[partner];
          keys[partner] = tk;
          values[partner] = tv;
        }
      }
      __syncthreads();
    }
  }
}

/// Exclusive prefix sum of one `value` per thread over the block; `total`
/// gets the block's sum. Needs `partials` of 32 ints; synchronizes.
__device__ int blockExclusivePrefix(int value, int *partials, int &total) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int inclusive = value;
  for (int d = 1; d < 32; d <<= 1) {
    int up = __shfl_up_sync(0xffffffffu, inclusive, d);
    if (lane >= d)
      inclusive += up;
  }
  if (lane == 31)
    partials[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    int warps = (blockDim.x + 31) >> 5;
    int p = lane < warps ? partials[lane] : 0;
    for (int d = 1; d < 32; d <<= 1) {
      int up = __shfl_up_sync(0xffffffffu, p, d);
      if (lane >= d)
        p += up;
    }
    partials[lane] = p; // inclusive over warps
  }
  __syncthreads();
  int warpOffset = warp == 0 ? 0 : partials[warp - 1];
  total = partials[((blockDim.x + 31) >> 5) - 1];
  __syncthreads();
  return warpOffset + inclusive - value;
}

/// Block-wide exclusive prefix sum of `data[0, n)` in place, returns the
/// total. Needs `partials` of 32 ints.
__device__ int blockExclusiveScan(int *data, int n, int *partials) {
  int total = 0;
  for (int base = 0; base < n; base += blockDim.x) {
    int i = base + threadIdx.x;
    int chunkTotal;
    int prefix = blockExclusivePrefix(i < n ? data[i] : 0, partials, chunkTotal);
    if (i < n)
      data[i] = total + prefix;
    total += chunkTotal;
  }
  return total;
}

} // namespace

extern "C" __device__ int kge_inspect_unique(unsigned long long keysAddress,
                                             int count,
                                             unsigned long long uniqAddress,
                                             unsigned long long slotAddress,
                                             unsigned long long orderAddress,
                                             unsigned long long offsetsAddress,
                                             unsigned long long scratchAddress) {
  int *keys = shared(keysAddress), *uniq = shared(uniqAddress);
  int *slot = shared(slotAddress), *order = shared(orderAddress);
  int *offsets = shared(offsetsAddress), *scratch = shared(scratchAddress);
  __shared__ int nuniqShared;
  if (count <= 0) {
    if (threadIdx.x == 0)
      offsets[0] = 0;
    __syncthreads();
    return 0;
  }

  if (count <= 32) {
    // Fast path: one warp sorts the tile with shuffles, no barriers.
    if (threadIdx.x < 32) {
      const int lane = threadIdx.x;
      bool valid = lane < count;
      int key = valid ? keys[lane] : INT_MAX;
      int edge = lane;
      warpSortPairs(key, edge);
      int previous = __shfl_up_sync(0xffffffffu, key, 1);
      bool head = valid && (lane == 0 || key != previous);
      unsigned heads = __ballot_sync(0xffffffffu, head);
      int u = __popc(heads & ((2u << lane) - 1u)) - 1;
      if (valid) {
        order[lane] = edge;
        slot[edge] = u;
        if (head) {
          uniq[u] = key;
          offsets[u] = lane;
        }
      }
      if (lane == 0) {
        nuniqShared = __popc(heads);
        offsets[__popc(heads)] = count;
      }
    }
    __syncthreads();
    int result = nuniqShared;
    __syncthreads();
    return result;
  }

  // General path: bitonic sort in shared memory, then a block-wide scan of
  // the run heads.
  int padded = nextPow2(count);
  int *sortedKeys = scratch, *sortedEdges = scratch + padded;
  for (int i = threadIdx.x; i < padded; i += blockDim.x) {
    sortedKeys[i] = i < count ? keys[i] : INT_MAX;
    sortedEdges[i] = i;
  }
  __syncthreads();
  blockSortPairs(sortedKeys, sortedEdges, padded);
  // heads -> exclusive scan gives each run its unique index.
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    order[i] = (i == 0 || sortedKeys[i] != sortedKeys[i - 1]) ? 1 : 0;
  __syncthreads();
  __shared__ int partials[32];
  int nuniq = blockExclusiveScan(order, count, partials);
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    // order[i] holds the number of run heads before position i: a head
    // starts run order[i], any other position belongs to the run before.
    bool head = i == 0 || sortedKeys[i] != sortedKeys[i - 1];
    int u = head ? order[i] : order[i] - 1;
    slot[sortedEdges[i]] = u;
    if (head) {
      uniq[u] = sortedKeys[i];
      offsets[u] = i;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    order[i] = sortedEdges[i];
  if (threadIdx.x == 0)
    offsets[nuniq] = count;
  __syncthreads();
  return nuniq;
}

extern "C" __device__ int
kge_inspect_frequent(unsigned long long offsetsAddress, int nuniq,
                     unsigned long long rankedAddress,
                     unsigned long long scratchAddress) {
  int *offsets = shared(offsetsAddress), *ranked = shared(rankedAddress);
  int *scratch = shared(scratchAddress);
  __shared__ int sharedCount;
  if (nuniq <= 32) {
    if (threadIdx.x < 32) {
      const int lane = threadIdx.x;
      bool valid = lane < nuniq;
      int frequency = valid ? offsets[lane + 1] - offsets[lane] : 0;
      int key = valid ? -frequency : INT_MAX, u = lane;
      warpSortPairs(key, u);
      if (valid)
        ranked[lane] = u;
      unsigned shared = __ballot_sync(0xffffffffu, valid && key <= -2);
      if (lane == 0)
        sharedCount = __popc(shared);
    }
    __syncthreads();
    int result = sharedCount;
    __syncthreads();
    return result;
  }
  int padded = nextPow2(nuniq);
  int *keys = scratch, *values = scratch + padded;
  if (threadIdx.x == 0)
    sharedCount = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < padded; i += blockDim.x) {
    int frequency = i < nuniq ? offsets[i + 1] - offsets[i] : 0;
    keys[i] = i < nuniq ? -frequency : INT_MAX;
    values[i] = i;
    if (i < nuniq && frequency >= 2)
      atomicAdd(&sharedCount, 1);
  }
  __syncthreads();
  blockSortPairs(keys, values, padded);
  for (int i = threadIdx.x; i < nuniq; i += blockDim.x)
    ranked[i] = values[i];
  __syncthreads();
  int result = sharedCount;
  __syncthreads();
  return result;
}

extern "C" __global__ void kge_sort_groups(const void *keys, int keyBits,
                                           long long n, int group, int *perm) {
  extern __shared__ int storage[];
  long long first = static_cast<long long>(blockIdx.x) * group;
  int count = static_cast<int>(min(static_cast<long long>(group), n - first));
  if (count <= 0)
    return;
  int padded = nextPow2(count);
  int *sortedKeys = storage, *items = storage + padded;
  for (int i = threadIdx.x; i < padded; i += blockDim.x) {
    sortedKeys[i] =
        i < count ? static_cast<int>(loadKey(keys, keyBits, first + i))
                  : INT_MAX;
    items[i] = i;
  }
  __syncthreads();
  blockSortPairs(sortedKeys, items, padded);
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    perm[first + i] = static_cast<int>(first + items[i]);
}

/// Adds to counter[key] the number of active lanes of the warp with the same
/// key, with one atomic per distinct key (frequent keys would otherwise
/// serialize the warp's atomics on one address); returns the counter's value
/// before this lane's own increment.
__device__ __forceinline__ int warpAggregatedIncrement(int *counter,
                                                       long long key) {
  unsigned active = __activemask();
  unsigned peers = __match_any_sync(active, key);
  int lane = threadIdx.x % 32;
  int leader = __ffs(peers) - 1;
  int before = 0;
  if (lane == leader)
    before = atomicAdd(counter, __popc(peers));
  before = __shfl_sync(peers, before, leader);
  return before + __popc(peers & ((1u << lane) - 1));
}

/// The key of item i, clamped into [0, numKeys): an index outside its table
/// (an unchecked call's bad input) must not make the sort write outside its
/// counters; it is then sorted with the last key (the kernel's gathers read
/// outside the table, as unsorted calls do).
__device__ long long clampedKey(const void *keys, int keyBits, long long i,
                                long long numKeys) {
  long long key = loadKey(keys, keyBits, i);
  return key < 0 ? 0 : key >= numKeys ? (numKeys > 0 ? numKeys - 1 : 0) : key;
}

/// Bytes of dynamic shared memory this launch was given.
__device__ __forceinline__ unsigned dynamicSharedBytes() {
  unsigned bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  return bytes;
}

/// Per-block counters of the privatized sort: two 16-bit counters per
/// 32-bit word (a chunk holds fewer than 2^16 items), key k in half k & 1
/// of word k / 2.
__device__ __forceinline__ unsigned packedHalf(unsigned word, long long key) {
  return (word >> (16 * (key & 1))) & 0xffffu;
}

extern "C" __global__ void kge_key_histogram(const void *keys, int keyBits,
                                             long long n, long long numKeys,
                                             int *counts) {
  extern __shared__ unsigned packed[];
  long long words = (numKeys + 1) / 2;
  if (numKeys > 0 && 4 * words <= dynamicSharedBytes()) {
    // Privatized: each block counts its chunks in shared memory, then adds
    // its nonzero counters to the global ones. A key of many items (skewed
    // entities) then costs one global atomic per chunk, not one per warp
    // that meets it, all serialized on one address.
    for (long long chunk = blockIdx.x * static_cast<long long>(KGE_SORT_CHUNK);
         chunk < n;
         chunk += static_cast<long long>(gridDim.x) * KGE_SORT_CHUNK) {
      for (long long w = threadIdx.x; w < words; w += blockDim.x)
        packed[w] = 0;
      __syncthreads();
      long long end = min(n, chunk + KGE_SORT_CHUNK);
      for (long long i = chunk + threadIdx.x; i < end; i += blockDim.x) {
        long long key = clampedKey(keys, keyBits, i, numKeys);
        atomicAdd(&packed[key >> 1], 1u << (16 * (key & 1)));
      }
      __syncthreads();
      for (long long w = threadIdx.x; w < words; w += blockDim.x) {
        unsigned word = packed[w];
        if (word & 0xffffu)
          atomicAdd(&counts[2 * w], static_cast<int>(word & 0xffffu));
        if (word >> 16)
          atomicAdd(&counts[2 * w + 1], static_cast<int>(word >> 16));
      }
      __syncthreads();
    }
    return;
  }
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) +
                     threadIdx.x;
       i < n; i += static_cast<long long>(gridDim.x) * blockDim.x) {
    long long key = clampedKey(keys, keyBits, i, numKeys);
    warpAggregatedIncrement(&counts[key], key);
  }
}

/// Inclusive prefix sum of one `value` per lane over the warp.
__device__ int warpInclusivePrefix(int value) {
  int lane = threadIdx.x & 31;
  for (int d = 1; d < 32; d <<= 1) {
    int up = __shfl_up_sync(0xffffffffu, value, d);
    if (lane >= d)
      value += up;
  }
  return value;
}

/// The keys [begin, end) of this thread's warp when one block's warps take
/// contiguous segments of `numKeys` keys, each a multiple of 32 long (so
/// that a warp reads its segment in coalesced runs of 32).
__device__ void warpKeySegment(long long numKeys, int &begin, int &end) {
  int n = static_cast<int>(numKeys);
  int warp = static_cast<int>(threadIdx.x) >> 5;
  int warps = static_cast<int>(blockDim.x) >> 5;
  int per = ((n + warps - 1) / warps + 31) & ~31;
  begin = min(n, warp * per);
  end = min(n, begin + per);
}

namespace {
/// kge_key_scan_tiles' cutting: key g's run starts at starts[g] and holds
/// lengths[g] items.
__device__ void cutRuns(const int *starts, const int *lengths,
                        long long numKeys, int tileRows, int *tiles,
                        int longRows, int *longTiles) {
  __shared__ int partials[32];
  // Each warp takes a contiguous segment of the keys: its tiles are counted,
  // a block-wide scan of the warps' counts places them, and a warp scan of
  // each run of 32 keys places every key's tiles. With longRows, a run's
  // first whole multiple of longRows rows is cut into tiles of longRows
  // (into longTiles), the rest into tiles of tileRows.
  int lane = static_cast<int>(threadIdx.x) & 31;
  int begin, end;
  warpKeySegment(numKeys, begin, end);
  auto longOf = [&](int length) { return longRows > 0 ? length / longRows : 0; };
  auto piecesOf = [&](int length) {
    return (length - longOf(length) * longRows + tileRows - 1) / tileRows;
  };
  int pieces = 0, longPieces = 0;
  for (int i = begin + lane; i < end; i += 32) {
    pieces += piecesOf(lengths[i]);
    longPieces += longOf(lengths[i]);
  }
  for (int d = 16; d > 0; d >>= 1) {
    pieces += __shfl_xor_sync(0xffffffffu, pieces, d);
    longPieces += __shfl_xor_sync(0xffffffffu, longPieces, d);
  }
  int total, longTotal;
  int run = blockExclusivePrefix(lane == 0 ? pieces : 0, partials, total);
  int longRun = blockExclusivePrefix(lane == 0 ? longPieces : 0, partials, longTotal);
  run = __shfl_sync(0xffffffffu, run, 0);
  longRun = __shfl_sync(0xffffffffu, longRun, 0);
  for (int base = begin; base < end; base += 32) {
    int i = base + lane;
    int length = i < end ? lengths[i] : 0;
    int start = i < end ? starts[i] : 0;
    int runEnd = start + length;
    int mineLong = longOf(length);
    int longInclusive = warpInclusivePrefix(mineLong);
    int firstLong = longRun + longInclusive - mineLong;
    for (int m = 0; m < mineLong; ++m) {
      int *tile = longTiles + 1 + 3 * (firstLong + m);
      tile[0] = i;
      tile[1] = start + m * longRows;
      tile[2] = start + (m + 1) * longRows;
    }
    longRun += __shfl_sync(0xffffffffu, longInclusive, 31);
    start += mineLong * longRows;
    int mine = piecesOf(length);
    int inclusive = warpInclusivePrefix(mine);
    int first = run + inclusive - mine;
    for (int m = 0; m < mine; ++m) {
      int *tile = tiles + 1 + 3 * (first + m);
      tile[0] = i;
      tile[1] = start + m * tileRows;
      tile[2] = min(start + (m + 1) * tileRows, runEnd);
    }
    run += __shfl_sync(0xffffffffu, inclusive, 31);
  }
  if (threadIdx.x == 0) {
    tiles[0] = total;
    if (longRows > 0)
      longTiles[0] = longTotal;
  }
}
} // namespace

namespace {
/// kge_key_scan's body; with `lengths`, each key's count is also kept there.
__device__ void keyScan(int *counts, long long numKeys, int *lengths) {
  __shared__ int partials[32];
  // One block: each warp takes a contiguous segment of the keys and reads it
  // in coalesced runs of 32 consecutive counters (a thread per counter, so
  // the loads of a run are one transaction and the runs' loads overlap).
  // The first pass sums each warp's rare and frequent items; two block-wide
  // scans of those sums give where each warp's runs start (rare keys' runs
  // first, the frequent keys' after all rare items); the second pass scans
  // each run of 32 within the warp and writes the starts.
  int lane = static_cast<int>(threadIdx.x) & 31;
  int begin, end;
  warpKeySegment(numKeys, begin, end);
  int rare = 0, frequent = 0;
#pragma unroll 8
  for (int i = begin + lane; i < end; i += 32) {
    int count = counts[i];
    if (count < KGE_RARE_KEY_COUNT)
      rare += count;
    else
      frequent += count;
  }
  for (int d = 16; d > 0; d >>= 1) {
    rare += __shfl_xor_sync(0xffffffffu, rare, d);
    frequent += __shfl_xor_sync(0xffffffffu, frequent, d);
  }
  // Only lane 0 contributes its warp's sums: the exclusive prefix at lane 0
  // of warp w is the sum over the warps before it.
  int rareTotal, frequentTotal;
  int rareRun = blockExclusivePrefix(lane == 0 ? rare : 0, partials, rareTotal);
  int frequentRun = blockExclusivePrefix(lane == 0 ? frequent : 0, partials,
                                         frequentTotal);
  rareRun = __shfl_sync(0xffffffffu, rareRun, 0);
  frequentRun = rareTotal + __shfl_sync(0xffffffffu, frequentRun, 0);
  // Runs of kScanDepth x 32 counters: all loads of a run are issued before
  // its stores (which the compiler cannot move loads across), so that they
  // overlap instead of each waiting for the previous run's store.
  constexpr int kScanDepth = 8;
  for (int base = begin; base < end; base += 32 * kScanDepth) {
    int loaded[kScanDepth];
#pragma unroll
    for (int u = 0; u < kScanDepth; ++u) {
      int i = base + 32 * u + lane;
      loaded[u] = i < end ? counts[i] : 0;
    }
#pragma unroll
    for (int u = 0; u < kScanDepth; ++u) {
      int i = base + 32 * u + lane;
      int count = loaded[u];
      bool isRare = count < KGE_RARE_KEY_COUNT;
      int rareHere = warpInclusivePrefix(isRare ? count : 0);
      int frequentHere = warpInclusivePrefix(isRare ? 0 : count);
      if (i < end) {
        counts[i] = isRare ? rareRun + rareHere - count
                           : frequentRun + frequentHere - count;
        if (lengths)
          lengths[i] = count;
      }
      rareRun += __shfl_sync(0xffffffffu, rareHere, 31);
      frequentRun += __shfl_sync(0xffffffffu, frequentHere, 31);
    }
  }
}
} // namespace

extern "C" __global__ void kge_key_scan(int *counts, long long numKeys) {
  keyScan(counts, numKeys, nullptr);
}

extern "C" __global__ void kge_key_scan_tiles(int *counts, long long numKeys,
                                              int *lengths, int tileRows,
                                              int *tiles, int longRows,
                                              int *longTiles) {
  keyScan(counts, numKeys, lengths);
  // The block's writes of the starts and lengths are visible to all its
  // threads past the barrier.
  __syncthreads();
  cutRuns(counts, lengths, numKeys, tileRows, tiles, longRows, longTiles);
}

extern "C" __global__ void kge_key_scatter(const void *keys, int keyBits,
                                           long long n, long long numKeys,
                                           int *cursor, int *perm) {
  extern __shared__ unsigned packed[];
  long long words = (numKeys + 1) / 2;
  long long wordBytes = 4 * ((words + 3) & ~3ll);
  if (numKeys > 0 && wordBytes + 8 * KGE_SORT_CHUNK <= dynamicSharedBytes()) {
    // Privatized: the items of a chunk rank themselves among the chunk's
    // items of their key (shared-memory counters), one item per key (the
    // leader, rank 0) reserves the chunk's run of that key with one global
    // atomic and leaves its slot in the key's counter, and every item
    // writes itself at the run's start plus its rank.
    int *rank = reinterpret_cast<int *>(
        reinterpret_cast<char *>(packed) + wordBytes);
    int *start = rank + KGE_SORT_CHUNK;
    for (long long chunk = blockIdx.x * static_cast<long long>(KGE_SORT_CHUNK);
         chunk < n;
         chunk += static_cast<long long>(gridDim.x) * KGE_SORT_CHUNK) {
      for (long long w = threadIdx.x; w < words; w += blockDim.x)
        packed[w] = 0;
      __syncthreads();
      int size = static_cast<int>(min(n - chunk, static_cast<long long>(KGE_SORT_CHUNK)));
      for (int j = threadIdx.x; j < size; j += blockDim.x) {
        long long key = clampedKey(keys, keyBits, chunk + j, numKeys);
        rank[j] = static_cast<int>(packedHalf(
            atomicAdd(&packed[key >> 1], 1u << (16 * (key & 1))), key));
      }
      __syncthreads();
      for (int j = threadIdx.x; j < size; j += blockDim.x) {
        if (rank[j] != 0)
          continue;
        long long key = clampedKey(keys, keyBits, chunk + j, numKeys);
        // Only this leader touches its key's half now: replace the count
        // by the leader's slot (both below 2^16) with an exclusive-or.
        unsigned count = packedHalf(packed[key >> 1], key);
        start[j] = atomicAdd(&cursor[key], static_cast<int>(count));
        atomicXor(&packed[key >> 1], (count ^ static_cast<unsigned>(j))
                                         << (16 * (key & 1)));
      }
      __syncthreads();
      for (int j = threadIdx.x; j < size; j += blockDim.x) {
        long long key = clampedKey(keys, keyBits, chunk + j, numKeys);
        int at = start[packedHalf(packed[key >> 1], key)] + rank[j];
        // Only a table of no rows (every key out of range, its counters
        // never cleared) gives positions outside the permutation.
        if (at >= 0 && at < n)
          perm[at] = static_cast<int>(chunk + j);
      }
      __syncthreads();
    }
    return;
  }
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) +
                     threadIdx.x;
       i < n; i += static_cast<long long>(gridDim.x) * blockDim.x) {
    long long key = clampedKey(keys, keyBits, i, numKeys);
    int at = warpAggregatedIncrement(&cursor[key], key);
    // Only a table of no rows (every key out of range, its counters never
    // cleared) gives positions outside the permutation.
    if (at >= 0 && at < n)
      perm[at] = static_cast<int>(i);
  }
}

extern "C" __global__ void kge_check_indices(const void *keys, int keyBits,
                                             long long n, long long bound,
                                             long long *firstBad) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) +
                     threadIdx.x;
       i < n; i += static_cast<long long>(gridDim.x) * blockDim.x) {
    long long key = loadKey(keys, keyBits, i);
    if (key < 0 || key >= bound)
      atomicMin(reinterpret_cast<unsigned long long *>(firstBad),
                static_cast<unsigned long long>(i));
  }
}

// 64 x 64 tiles through shared memory; when both extents are multiples of
// 4 and both pointers 16-byte aligned, each thread moves 16-byte vectors:
// four of a source row in, four of a destination row (gathered down a
// column of the tile) out.
extern "C" __global__ void kge_transpose_32(const unsigned *src, unsigned *dst,
                                            long long rows, long long cols) {
  // One column of padding: a column's words fall in different banks.
  __shared__ unsigned tile[64][65];
  int t = static_cast<int>(threadIdx.x);
  bool vectors = ((rows | cols) & 3) == 0 &&
                 ((reinterpret_cast<unsigned long long>(src) |
                   reinterpret_cast<unsigned long long>(dst)) & 15) == 0;
  long long rowTiles = (rows + 63) / 64, colTiles = (cols + 63) / 64;
  for (long long ty = blockIdx.y; ty < rowTiles; ty += gridDim.y) {
    for (long long tx = blockIdx.x; tx < colTiles; tx += gridDim.x) {
      long long r0 = ty * 64, c0 = tx * 64;
      if (vectors) {
        // 64 rows of 16 vectors: thread t takes vector t % 16 of rows
        // t / 16, + 16, + 32, + 48.
        int v = t & 15;
        for (int i = t >> 4; i < 64; i += 16) {
          long long r = r0 + i, c = c0 + 4 * v;
          if (r < rows && c < cols) {
            uint4 x = *reinterpret_cast<const uint4 *>(src + r * cols + c);
            tile[i][4 * v] = x.x;
            tile[i][4 * v + 1] = x.y;
            tile[i][4 * v + 2] = x.z;
            tile[i][4 * v + 3] = x.w;
          }
        }
        __syncthreads();
        for (int i = t >> 4; i < 64; i += 16) {
          long long c = c0 + i, r = r0 + 4 * v;
          if (r < rows && c < cols) {
            uint4 x = make_uint4(tile[4 * v][i], tile[4 * v + 1][i],
                                 tile[4 * v + 2][i], tile[4 * v + 3][i]);
            *reinterpret_cast<uint4 *>(dst + c * rows + r) = x;
          }
        }
      } else {
        int lane = t & 63;
        for (int i = t >> 6; i < 64; i += 4) {
          long long r = r0 + i, c = c0 + lane;
          if (r < rows && c < cols)
            tile[i][lane] = src[r * cols + c];
        }
        __syncthreads();
        for (int i = t >> 6; i < 64; i += 4) {
          long long c = c0 + i, r = r0 + lane;
          if (r < rows && c < cols)
            dst[c * rows + r] = tile[lane][i];
        }
      }
      __syncthreads();
    }
  }
}

//===----------------------------------------------------------------------===//
// Row-sparse optimizer updates
//===----------------------------------------------------------------------===//

namespace {

/// grad[row] += x for four consecutive floats: one vector reduction on
/// sm_90 and newer, four scalar ones before.
__device__ __forceinline__ void addFloat4(float *grad, float4 x) {
#if __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float4 *>(grad), x);
#else
  atomicAdd(grad, x.x);
  atomicAdd(grad + 1, x.y);
  atomicAdd(grad + 2, x.z);
  atomicAdd(grad + 3, x.w);
#endif
}

/// The warp of this thread and the number of warps of the grid.
__device__ __forceinline__ long long globalWarp() {
  return (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) >> 5;
}
__device__ __forceinline__ long long warpCount() {
  return (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
}

} // namespace

extern "C" __global__ void kge_rows_add(const long long *index, long long n,
                                        const float *rows, int dim,
                                        int vectors, float *grad,
                                        long long numRows, int *touched,
                                        long long *firstBad) {
  const int lane = threadIdx.x & 31;
  for (long long k = globalWarp(); k < n; k += warpCount()) {
    long long row = index[k];
    if (row < 0 || row >= numRows) {
      if (lane == 0)
        atomicMin(reinterpret_cast<unsigned long long *>(firstBad),
                  static_cast<unsigned long long>(k));
      continue;
    }
    if (touched && lane == 0)
      touched[row] = 1;
    const float *from = rows + k * dim;
    float *to = grad + row * dim;
    if (vectors) {
      for (int c = 4 * lane; c < dim; c += 128)
        addFloat4(to + c, *reinterpret_cast<const float4 *>(from + c));
    } else {
      for (int c = lane; c < dim; c += 32)
        atomicAdd(to + c, from[c]);
    }
  }
}

namespace {

/// The table row of update row u: index[u], or u for the dense buffer. An
/// index beyond the table gives -1 and its position goes to *firstBad.
__device__ __forceinline__ long long updatedRow(const long long *index,
                                                long long u,
                                                long long tableRows,
                                                long long *firstBad) {
  if (!index)
    return u;
  long long row = index[u];
  if (row >= 0 && row < tableRows)
    return row;
  if ((threadIdx.x & 31) == 0)
    atomicMin(reinterpret_cast<unsigned long long *>(firstBad),
              static_cast<unsigned long long>(u));
  return -1;
}

} // namespace

extern "C" __global__ void kge_adagrad_rows(float *param, float *sumSquares,
                                            float *grad,
                                            const long long *index,
                                            long long numRows, int dim,
                                            long long tableRows,
                                            long long *firstBad, float lr,
                                            float eps) {
  const int lane = threadIdx.x & 31;
  for (long long u = globalWarp(); u < numRows; u += warpCount()) {
    long long row = updatedRow(index, u, tableRows, firstBad);
    if (row < 0)
      continue;
    float *g = grad + u * dim;
    float *p = param + row * dim, *s = sumSquares + row * dim;
    for (int c = lane; c < dim; c += 32) {
      float gc = g[c];
      // A zero gradient leaves both unchanged (as Adagrad's formula does):
      // untouched rows of the dense buffer cost one read.
      if (gc == 0.0f)
        continue;
      float sc = __fadd_rn(s[c], __fmul_rn(gc, gc));
      s[c] = sc;
      p[c] = __fadd_rn(p[c], __fmul_rn(-lr, gc / (sqrtf(sc) + eps)));
      if (!index)
        g[c] = 0.0f;
    }
  }
}

extern "C" __global__ void kge_adam_rows(float *param, float *m, float *v,
                                         float *grad, const long long *index,
                                         int *touched, long long numRows,
                                         int dim, long long tableRows,
                                         long long *firstBad, float rate1,
                                         float rate2, const float *stepSize,
                                         float eps) {
  const int lane = threadIdx.x & 31;
  const float size = *stepSize;
  for (long long u = globalWarp(); u < numRows; u += warpCount()) {
    long long row = updatedRow(index, u, tableRows, firstBad);
    if (row < 0 || (touched && !touched[row]))
      continue;
    float *g = grad + u * dim;
    float *p = param + row * dim, *mr = m + row * dim, *vr = v + row * dim;
    for (int c = lane; c < dim; c += 32) {
      float gc = g[c], mc = mr[c], vc = vr[c];
      // Separate roundings, as PyTorch's separate operations round.
      mc = __fadd_rn(mc, __fmul_rn(rate1, __fsub_rn(gc, mc)));
      vc = __fadd_rn(vc, __fmul_rn(rate2, __fsub_rn(__fmul_rn(gc, gc), vc)));
      mr[c] = mc;
      vr[c] = vc;
      p[c] = __fsub_rn(p[c], __fmul_rn(size, mc / (sqrtf(vc) + eps)));
      if (!index)
        g[c] = 0.0f;
    }
    if (touched) {
      __syncwarp();
      if (lane == 0)
        touched[row] = 0;
    }
  }
}
