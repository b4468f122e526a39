//===- Fusion.h - fusing a bvec function into one kernel --------*- C++ -*-===//
//
// The analysis behind `bvec-fuse` and `convert-bvec-to-gpu`: which pass over
// the embedding length (stage) computes each value, which vectors are kept
// whole in shared memory, and the kernel layout.
//
// Every bvec operator consumes and produces whole batches edge by edge, so a
// function is evaluated for a tile of edges by one thread block, the
// embedding length processed chunk by chunk (cuKE, Section V-B). Only two
// things break a single pass over the length:
//   - a reduction (`vec_mul_vec`, `norm`, `reduce`) is complete only after
//     the last chunk, so a vector operator that uses its scalar starts the
//     next stage;
//   - `vec_mul_mat`, `vec_outer_vec` and `slice` read their vector input at
//     arbitrary positions, so that input is materialized (kept whole in
//     shared memory) in its stage and read from the next — except a slice
//     of a gathered row, read from the table like a gather (isGatherSlice).
// Matrices are never stored: a matrix value is an expression (gathered
// matrices, outer products, elementwise operations) evaluated where a
// `vec_mul_mat` or a function result consumes it.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_BATCHEDVECTOR_TRANSFORMS_FUSION_H
#define KGE_DIALECT_BATCHEDVECTOR_TRANSFORMS_FUSION_H

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <string>

namespace mlir {
namespace bvec {

/// Stage assignment of a function's values.
struct FusionStages {
  /// For vector values: the first stage in which the value can be computed
  /// in the chunk loop. For scalar values: the stage at whose end the value
  /// is complete (-1 for constants). For matrix values: the first stage in
  /// which the matrix expression can be evaluated.
  DenseMap<Value, int64_t> stage;
  /// Vectors kept whole in shared memory (written in their stage).
  SetVector<Value> materialized;
  /// Number of stages (at least 1).
  int64_t numStages = 1;

  int64_t of(Value value) const { return stage.lookup(value); }
};

/// Computes the stages of `func`.
FusionStages computeFusionStages(FuncOp func);

/// True when `func` multiplies vectors by matrices: its kernels stream
/// matrices and get matrix layouts (see chooseKernelLayout).
bool hasMatrixProducts(FuncOp func);

/// True for the operations that multiply a vector by a matrix
/// (`vec_mul_mat`, `mat_mul_vec`): their inputs are materialized, their
/// outputs written to shared memory by a matrix stage.
bool isMatrixProduct(Operation *op);

/// True for a slice of a gathered row (`bvec.slice` of a `bvec.gather_vec`):
/// a gather of a column range. The chunk loop reads it from the table at
/// the row's address plus the slice's offset, in the gather's stage, like a
/// gather; the row itself is not materialized for it.
bool isGatherSlice(Operation *op);

/// Whether something reads `gather`'s rows whole (not only slices of them).
bool readsWholeRows(GatherVecOp gather);

/// Row loads per element of a chunk that `gather` costs: one per slice of
/// it (isGatherSlice) and one if something reads the whole row.
int64_t rowReadsOf(GatherVecOp gather);

/// Whether the rows `gather` reads may be sorted by entity under a
/// `reorder_min_row` of `minRow`: static rows of at least that many
/// elements, or rows of dynamic length (the launch plan checks those).
bool rowsMaySort(GatherVecOp gather, int64_t minRow);

/// Row loads per lane that chunk loops aim to keep in flight (edges per warp
/// x gathers x chunks): the default layout gives each warp as many edges as
/// reach it with one chunk (at most 4; elementwise functions of vectors
/// count like loads, they hold registers too), and the loops unroll chunks
/// up to it.
inline constexpr int64_t kRowLoadsInFlight = 16;

/// 32-bit registers of one multiprocessor (sm_80 and sm_90).
inline constexpr int64_t kRegistersPerSM = 65536;
/// Registers per thread that every kernel keeps at least: the device
/// library's inspector needs about 64, and the link fails with fewer.
inline constexpr int64_t kMinRegistersPerThread = 64;

/// The kernel layout of a fused function, stored as the `bvec.kernel`
/// dictionary attribute.
struct KernelLayout {
  int64_t tile = 32;        ///< Edges per thread block.
  int64_t warps = 8;        ///< Warps per thread block.
  int64_t vectorWidth = 1;  ///< Elements per lane per load (1 or 4).
  std::string reorderKey;   ///< Index array that sorts edges ("" if none).
  int64_t reorderGroup = 1; ///< Sort groups of this many tiles (0: all).
  /// With a whole-batch sort: sort only batches of at least this many edges
  /// (the launch plan's sort runs when B reaches it; smaller batches are
  /// scored in their own order). 0: always sort.
  int64_t reorderMinBatch = 0;
  /// With a whole-batch sort: sort only batches with at least this many
  /// edges per row of the table the key indexes (B >= reorderMinReuse x
  /// rows: on average a key's row repeats that often, enough for the sort's
  /// reuse of rows to pay for the sort). 0: no such condition.
  int64_t reorderMinReuse = 0;
  /// With a whole-batch sort: sort only when the rows of the table the key
  /// indexes have at least this many elements (wide rows are what a block
  /// reuses from L1 after the sort). 0: no such condition.
  int64_t reorderMinRow = 0;
  /// 1 when the pass chose the sort by entity itself (no reorder option
  /// given): the GPU lowering may key it on another index array of the
  /// same table when negative mode corrupts this one.
  int64_t reorderAuto = 0;

  /// Whether the launch plan decides per batch whether to sort it.
  bool sortsSomeBatches() const {
    return reorderMinBatch > 0 || reorderMinReuse > 0 || reorderMinRow > 0;
  }
  /// A tile stages a gather's unique rows in shared memory when at least
  /// this percentage of its edges repeat a row (0: always, 101: never);
  /// otherwise every edge loads its row directly.
  int64_t stageRepeats = 101;
  /// How matrix products over runs of a shared matrix multiply: "tf32x3"
  /// (tensor cores, each operand split into two TF32 parts, three products:
  /// FP32 accuracy) or "fma" (FP32 FMAs). Per-edge matrices and 4-byte
  /// layouts always use FMAs.
  std::string matrixMath = "tf32x3";
  /// Vectors that a later stage reads again (TransH's `d + r` after
  /// `w . (h - t)`) stay in registers from the stage that computes them
  /// when, all together, they need at most this many floats per lane
  /// (0: every stage reads its rows again).
  int64_t carryFloats = 128;
  /// Thread blocks per multiprocessor the kernel is compiled for
  /// (`nvvm.minctasm`): registers are capped at 64K / (blocks x threads) per
  /// thread, at least 64 (the device library's inspector needs them).
  /// 0: no request, registers left to the assembler.
  int64_t blocksPerSM = 0;
  /// Bitwise-identical results for identical inputs (1) or not guaranteed
  /// (0). A batch sorted by matrix has its edges of one matrix in an order
  /// that the sort's atomics choose; with 1, whether an edge's product runs
  /// on tensor cores depends only on the sorted keys (runs that continue
  /// into a neighbouring tile take tensor cores), never on that order.
  int64_t deterministic = 1;
  int64_t stages = 1;

  /// Whether some tile may stage rows in shared memory.
  bool stagesRows() const { return stageRepeats <= 100; }

  static constexpr llvm::StringLiteral kAttrName = "bvec.kernel";

  DictionaryAttr toAttr(MLIRContext *context) const;
  /// Reads and checks the `bvec.kernel` attribute of `func`; emits a
  /// diagnostic naming the bad entry on failure.
  static FailureOr<KernelLayout> fromFunc(FuncOp func);
};

/// Chooses the layout of `func` for the given requests (0 / empty / -1:
/// choose), checking them against the function.
FailureOr<KernelLayout> chooseKernelLayout(FuncOp func, int64_t tile,
                                           int64_t warps, int64_t vectorWidth,
                                           StringRef reorderKey,
                                           int64_t reorderGroup,
                                           int64_t stageRepeats = -1,
                                           StringRef matrixMath = "",
                                           int64_t carryFloats = -1,
                                           int64_t blocksPerSM = -1,
                                           int64_t deterministic = -1,
                                           int64_t reorderMinBatch = -1,
                                           int64_t reorderMinReuse = -1,
                                           int64_t reorderMinRow = -1);

} // namespace bvec
} // namespace mlir

#endif // KGE_DIALECT_BATCHEDVECTOR_TRANSFORMS_FUSION_H
