//===- TileIteratorDialect.h - tile dialect ---------------------*- C++ -*-===//
//
// The `tile` dialect: matrix-multiplication-like tasks (GAMUT) and their tile
// iterators. Include this header to use the dialect and its operations.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_TILEITERATOR_IR_TILEITERATORDIALECT_H
#define KGE_DIALECT_TILEITERATOR_IR_TILEITERATORDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <array>
#include <optional>

#include "Dialect/TileIterator/IR/TileIteratorOpsDialect.h.inc"
#include "Dialect/TileIterator/IR/TileIteratorEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "Dialect/TileIterator/IR/TileIteratorOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "Dialect/TileIterator/IR/TileIteratorOps.h.inc"

namespace mlir {
namespace tile {

/// The neutral element of `combiner` for values of `type` (an integer or
/// float type); null for `custom`.
TypedAttr getCombinerIdentity(Combiner combiner, Type type);

/// Builds `combiner` (not `custom`) of `lhs` and `rhs`: addition,
/// multiplication, maximum or minimum; float additions and multiplications
/// carry `fastMath`.
Value buildCombination(OpBuilder &b, Location loc, Combiner combiner,
                       Value lhs, Value rhs,
                       arith::FastMathFlags fastMath = arith::FastMathFlags::none);

/// Clones the single block of a region of a task at `b`'s insertion point
/// with its arguments replaced by `arguments`; returns the value it
/// yields. `onClone` sees every cloned operation.
Value inlineTaskRegion(OpBuilder &b, Region &region, ValueRange arguments,
                       llvm::function_ref<void(Operation *)> onClone = nullptr);

/// `task`'s accumulation of `rhs` into `lhs`: its combine region when
/// custom, else buildCombination (with `fastMath`).
Value buildAccumulation(OpBuilder &b, Location loc, TaskOp task, Value lhs,
                        Value rhs,
                        arith::FastMathFlags fastMath = arith::FastMathFlags::none,
                        llvm::function_ref<void(Operation *)> onClone = nullptr);

/// The indices of pair (i, j) in `task`'s dense output (its output map).
SmallVector<Value, 2> getDenseOutputIndices(TaskOp task, Value i, Value j);

//===----------------------------------------------------------------------===//
// Schedules: the rules that tie a kernel's iterators to its task, shared by
// the verifier and the builder of kernels.
//===----------------------------------------------------------------------===//

/// The operands a product on tensor cores multiplies, in the order of the
/// task's inputs: its rows (inputs indexed by (i, k)) and its columns
/// (indexed by (j, k), or by (i, k, j): a matrix per row's key).
struct ProductOperands {
  SmallVector<unsigned, 2> rows, cols;
  /// Inputs indexed by k alone: no side of a product holds them.
  SmallVector<unsigned, 1> kOnly;
};
ProductOperands getProductOperands(TaskOp task);

/// The tiling of one kernel of a schedule.
struct KernelTiling {
  /// Block tile (m, n, k) and thread tile (m, n).
  int64_t bm, bn, bk, tm, tn;
  /// Tensor cores: the products' precision and pipeline depth (none: CUDA
  /// cores), warpgroup MMA, and blocks per cluster along M.
  std::optional<Precision> precision;
  int64_t stages = 0;
  bool warpgroup = false;
  int64_t clusterM = 1;
  /// Warpgroup MMA: a producer warpgroup's threads write the stages
  /// (gathered rows, computed factors) instead of TMA.
  bool threadStages = false;
  /// The reduction length from which the kernel runs (0: any).
  int64_t minK = 0;
  /// Segments: the kernel takes the tiles of block-m rows cut from long
  /// runs, beside the segment kernel of its kind that takes the rest.
  bool longRuns = false;
  /// CUDA cores, dense update: blocks split the reduction (atomics).
  bool splitK = false;
};

/// Whether input `n` is stored with the reduction axis contiguous (its
/// map's last result is k).
bool isKContiguous(TaskOp task, unsigned n);
/// Which elements the load of input `n` reads.
LoadKind getLoadKind(TaskOp task, unsigned n);
/// Whether the load of input `n` reads rows through the sorted order of
/// segments (tasks with a matrix per row's key; inputs indexed by i).
bool isLoadSorted(TaskOp task, unsigned n);
/// The path of the load of input `n` in a kernel on CUDA cores (no
/// precision), mma.sync or warpgroup MMA (by TMA, or by the producer
/// threads with `threadStages`).
LoadPath getLoadPath(TaskOp task, unsigned n, bool tensorCores, bool warpgroup,
                     bool threadStages = false);
/// Whether the load of input `n` reads a transposed (k-major) copy: the
/// operands of warpgroup MMA at tf32 whose innermost dimension is not k.
bool isLoadTransposed(TaskOp task, unsigned n,
                      std::optional<Precision> precision, bool warpgroup);
/// The tile of input `n` that a block of `block` (m, n, k) holds.
TileType getLoadTileType(TaskOp task, unsigned n, ArrayRef<int64_t> block);
/// The store iterator of `task`'s output in a kernel on tensor cores or not.
StoreKind getStoreKind(TaskOp task, bool tensorCores);

/// Appends to `task`'s schedule (created if missing) a kernel of `tiling`
/// with `suffix` and its iterators.
KernelOp buildKernel(OpBuilder &b, TaskOp task, llvm::StringRef suffix,
                     const KernelTiling &tiling);
/// The tiling of a scheduled kernel.
KernelTiling getKernelTiling(KernelOp kernel);

} // namespace tile
} // namespace mlir

#endif // KGE_DIALECT_TILEITERATOR_IR_TILEITERATORDIALECT_H
