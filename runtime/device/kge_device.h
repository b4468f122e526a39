//===- kge_device.h - the KGE device library interface ---------*- CUDA -*-===//
//
// Functions and kernels that KGE's generated kernels call (the runtime
// inspector of cuKE, Section VI) and that launch plans launch (edge
// reordering, index checks). The runtime links this library into every
// bundle's module with the CUDA JIT linker; generated PTX declares the
// functions `.extern .func`.
//
// Shared-memory arguments are passed as shared-window addresses (the value
// of a `ptrtoint` of an address-space-3 pointer), global ones as generic
// addresses. Keys are non-negative int32 (row indices, already checked or
// trusted to be within their tables).
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DEVICE_H
#define KGE_DEVICE_H

#ifdef __cplusplus
extern "C" {
#endif

/// The largest tile a single inspector call handles.
#define KGE_MAX_TILE 1024

/// Block-cooperative: every thread of the block calls it with the same
/// arguments; it synchronizes the block before returning. For the `count`
/// keys of a tile (shared `int keys[count]`), computes
///   uniq[u]     the u-th distinct key, ascending, for u < result
///   slot[e]     u with uniq[u] == keys[e]   (cuKE's buf_idx)
///   order[i]    tile positions sorted by (key, position)
///   offsets[u]  first position in `order` of key u; offsets[result] = count
/// `scratch` holds 2 * next_pow2(count) ints. Returns the number of
/// distinct keys (0 when count is 0).
__device__ int kge_inspect_unique(unsigned long long keys, int count,
                                  unsigned long long uniq,
                                  unsigned long long slot,
                                  unsigned long long order,
                                  unsigned long long offsets,
                                  unsigned long long scratch);

/// Block-cooperative. Ranks the `nuniq` distinct keys found by
/// kge_inspect_unique by decreasing frequency (ties by key): ranked[i] is
/// the unique index u of rank i. `scratch` holds 2 * next_pow2(nuniq) ints.
/// Returns how many keys occur more than once (the ones worth caching).
__device__ int kge_inspect_frequent(unsigned long long offsets, int nuniq,
                                    unsigned long long ranked,
                                    unsigned long long scratch);

/// Sorts the items of each group of `group` (<= 4096) consecutive items by
/// key; perm[i] = item at sorted position i. One block of up to 1024
/// threads per group; dynamic shared memory: 8 * next_pow2(group) bytes.
/// `keys` holds int32 (key_bits 32) or int64 (key_bits 64) keys.
__global__ void kge_sort_groups(const void *keys, int key_bits, long long n,
                                int group, int *perm);

/// Keys used by fewer items are "rare" for the counting sort below.
#define KGE_RARE_KEY_COUNT 16

/// Items per block-chunk of the privatized histogram and scatter, and the
/// most keys the launch plans privatize: with more keys, per-block counters
/// cost more to clear and flush than global atomics save (bench/NOTES.md).
#define KGE_SORT_CHUNK 2048
#define KGE_SORT_PRIVATE_KEYS 8192

/// Global counting sort by key, three launches:
///   kge_key_histogram  counts[key] += 1 (counts zeroed by the launch plan)
///   kge_key_scan       counts -> start of each key's run, in place (one block)
///   kge_key_scatter    perm[counts[key]++] = item
/// Items of one key end up consecutive. The runs of rare keys (fewer than
/// KGE_RARE_KEY_COUNT items) come first, in key order, then those of the
/// frequent keys: the tiles that hold many distinct rare keys (the most
/// memory traffic per tile in matrix stages) get the lowest tile indices.
/// The fused kernels' blocks take tiles from the two halves of the sorted
/// batch in turn, so that these run beside tiles of frequent keys instead
/// of all at the start of the grid. The histogram and the scatter
/// make one atomic per distinct key of a warp.
/// Keys outside [0, num_keys) (bad indices of an unchecked call) count as
/// the nearest key in range: the sort never writes outside its buffers.
/// kge_key_scan runs as one block of a multiple of 32 threads (the launch
/// plans use 1024).
///
/// The histogram and the scatter privatize their counters when the launch
/// gives them the dynamic shared memory for it: 4 * ceil(num_keys / 2)
/// bytes (two 16-bit counters per word) for the histogram, that rounded up
/// to 16 bytes plus 8 * KGE_SORT_CHUNK for the scatter. Each block then
/// takes chunks of KGE_SORT_CHUNK consecutive items (grid-stride), counts
/// or ranks them in shared memory and makes one global atomic per distinct
/// key of the chunk (a frequent key no longer serializes one global
/// atomic per warp that meets it). With less shared memory (0: the launch
/// plans do so for more than KGE_SORT_PRIVATE_KEYS keys) every item makes
/// a warp-aggregated global atomic. Both give items of one key consecutive
/// positions in an order that may differ between calls.
__global__ void kge_key_histogram(const void *keys, int key_bits, long long n,
                                  long long num_keys, int *counts);
__global__ void kge_key_scan(int *counts, long long num_keys);
/// Segment tiles (the tile dialect's segment iterators): kge_key_scan that
/// also keeps each key's count (its run's length) in lengths, then cuts
/// every run, starting where the scan placed it, into tiles of at most
/// tile_rows items: their number in tiles[0] and tile t as (key, first
/// position, end position) at tiles[1 + 3 t ...], keys in order, a run's
/// tiles in order; tiles holds 1 + 3 * (ceil(n / tile_rows) + num_keys)
/// words. With long_rows > 0, the first floor(length / long_rows) *
/// long_rows items of a run are cut into tiles of long_rows items written
/// to long_tiles the same way (it holds 1 + 3 * floor(n / long_rows) words;
/// the kernels of long runs read each key's matrix once per long tile), the
/// rest into tiles of tile_rows; with 0, long_tiles is not read or written.
/// One block of a multiple of 32 threads (the launch plans use 1024).
__global__ void kge_key_scan_tiles(int *counts, long long num_keys, int *lengths,
                                   int tile_rows, int *tiles, int long_rows,
                                   int *long_tiles);
__global__ void kge_key_scatter(const void *keys, int key_bits, long long n,
                                long long num_keys, int *cursor, int *perm);


/// Transposing copy of a rows x cols matrix of 32-bit elements (row-major,
/// rows and cols each below 2^31): dst[c][r] = src[r][c], dst cols x rows.
/// The tile dialect's transposed loads (warpgroup MMA reads tf32 operands
/// k-major only). Blocks of 256 threads, each moving 64 x 64 tiles through
/// shared memory (16-byte vectors when both extents are multiples of 4 and
/// both pointers 16-byte aligned); any grid (the launch plans use
/// ceil(cols / 64) x min(ceil(rows / 64), 65535) blocks; blocks stride over
/// the tiles).
__global__ void kge_transpose_32(const unsigned *src, unsigned *dst,
                                 long long rows, long long cols);

/// Checked mode: records in *first_bad the smallest position whose index is
/// outside [0, bound); *first_bad must start at a value >= n (the runtime
/// fills it with 0x7f bytes).
__global__ void kge_check_indices(const void *keys, int key_bits,
                                  long long n, long long bound,
                                  long long *first_bad);

/// Row-sparse optimizer updates of float32 tables (kge.training's
/// RowSparseOptimizer through kge_runtime.rows_add / adagrad_rows /
/// adam_rows). One warp per row; any grid (the runtime launches blocks of
/// 256 threads); no synchronization, so a CUDA graph may capture them.
///
/// grad[index[k]] += rows[k] for k < n (rows n x dim, grad num_rows x dim):
/// atomically, four floats at a time when `vectors` (dim a multiple of 4,
/// both pointers 16-byte aligned); touched[index[k]] = 1 where `touched`
/// is not null. An index outside [0, num_rows) is skipped and its position
/// recorded in *first_bad (the smallest; *first_bad must start >= n).
__global__ void kge_rows_add(const long long *index, long long n,
                             const float *rows, int dim, int vectors,
                             float *grad, long long num_rows, int *touched,
                             long long *first_bad);

/// Adagrad on rows: for u < num_rows, the table row index[u] (u when index
/// is null: the dense buffer, grad num_rows x dim like the table) takes
/// sum += g * g; param += -lr * (g / (sqrt(sum) + eps)) for each element
/// whose gradient g = grad[u] is not zero (a zero leaves both unchanged, as
/// the formula does), each operation rounded on its own as PyTorch's are.
/// Without an index the buffer's elements are zeroed after use, ready for
/// the next step. With one, an index outside [0, table_rows) is skipped
/// and its position u recorded in *first_bad (the smallest).
__global__ void kge_adagrad_rows(float *param, float *sum_squares,
                                 float *grad, const long long *index,
                                 long long num_rows, int dim,
                                 long long table_rows, long long *first_bad,
                                 float lr, float eps);

/// Lazy Adam on rows (torch.optim.SparseAdam's update): m += rate1 (g - m);
/// v += rate2 (g * g - v); param -= step_size * m / (sqrt(v) + eps), with
/// rate1 = 1 - beta1, rate2 = 1 - beta2 (computed by the caller in double
/// precision, as PyTorch does) and *step_size = lr sqrt(1 - beta2^t) /
/// (1 - beta1^t) read on the device. Rows and indices as for
/// kge_adagrad_rows; with `touched` (dense buffer only) rows whose flag is
/// 0 are skipped, and flags and gradient rows are cleared after use.
__global__ void kge_adam_rows(float *param, float *m, float *v, float *grad,
                              const long long *index, int *touched,
                              long long num_rows, int dim,
                              long long table_rows, long long *first_bad,
                              float rate1, float rate2,
                              const float *step_size, float eps);

#ifdef __cplusplus
}
#endif

#endif // KGE_DEVICE_H
