//===- KernelEmitter.h - emits the fused kernel of a bvec function -*- C++ -*-//
//
// Private to convert-bvec-to-gpu. A KernelEmitter writes the body of the
// one `gpu.func` that computes a whole bvec function for a tile of edges:
//
//   prologue     thread/warp/lane ids, the tile's edges (through the
//                reorder permutation), shared-memory views, the keys of
//                every index array, one inspector call per index array
//   stage s      the matrix products of the stage (MatrixStages.cpp), then
//                one loop over the embedding length per length class, chunk
//                by chunk (ChunkLoops.cpp), then the scalar operations whose
//                reductions finished; vectors that later stages read again
//                may stay in registers (the loops that keep or read them are
//                unrolled over the whole length)
//   epilogue     matrix results
//
// Threads are laid out "edge-major" in chunk loops: warp w handles the local
// edges w, w + W, w + 2W, ... (E = tile / W of them) and its lanes a chunk of
// 32 * V consecutive elements (V = vector width). Per-edge scalars live in
// registers, uniform across the lanes of the warp.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_LIB_CONVERSION_BATCHEDVECTORTOGPU_KERNELEMITTER_H
#define KGE_LIB_CONVERSION_BATCHEDVECTORTOGPU_KERNELEMITTER_H

#include "Conversion/BatchedVectorToGPU/BatchedVectorToGPU.h"
#include "Dialect/BatchedVector/Analysis/SignatureAnalysis.h"
#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "Dialect/BatchedVector/Transforms/Fusion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace kge {

/// Names of the device-library functions generated kernels call.
inline constexpr llvm::StringLiteral kInspectUnique = "kge_inspect_unique";
inline constexpr llvm::StringLiteral kInspectFrequent = "kge_inspect_frequent";

/// Byte layout of the dynamic shared memory of a kernel: a static part
/// (inspector arrays, staging buffers) then one [tile x length] float buffer
/// per materialized vector, whose lengths may be dynamic.
struct SharedLayout {
  int64_t staticBytes = 0;
  /// Offset of every named static region.
  llvm::StringMap<int64_t> offsets;
  /// Materialized vectors in allocation order.
  SmallVector<Value> materialized;

  int64_t allocate(StringRef name, int64_t bytes);
};

/// The inspector results for one index array.
struct InspectorSlot {
  Value indexArray;   ///< The bvec block argument.
  Value keys;         ///< memref<tile x i32, 3>: the key of each local edge.
  Value uniq, slotOf, order, offsets, ranked; ///< memref<... x i32, 3>
  Value nuniq;        ///< i32: number of distinct keys in the tile.
  Value staged;       ///< i1: rows repeat enough to stage them (set only
                      ///< when the layout stages rows).
  bool needsRanking = false;
  /// Whether the inspector runs on this array (otherwise only `keys` is
  /// set: its results would be unused).
  bool inspected = false;
};

/// The stages that read a carried vector from registers: after the stage
/// that computes it (`from`) through the stage before the next one with
/// matrix products, or the last (`through`).
struct CarriedRange {
  int64_t from = 0, through = -1;
  bool readIn(int64_t stage) const { return from < stage && stage <= through; }
};

class KernelEmitter {
public:
  KernelEmitter(OpBuilder &builder, bvec::FuncOp func,
                const bvec::KernelLayout &layout,
                const bvec::FusionStages &stages,
                const GPUKernelOptions &options);

  /// Plans shared memory and inspector slots; fails with a diagnostic on
  /// what the GPU lowering does not support.
  LogicalResult plan();

  /// The kernel's parameter types: every function parameter as a memref
  /// (in negative mode the corrupted array is [B, K] and the results have
  /// B * K rows), then the reorder permutation when the layout reorders.
  SmallVector<Type> kernelArgumentTypes();

  /// Writes the body into `kernel` (whose arguments follow
  /// kernelArgumentTypes()).
  LogicalResult emit(gpu::GPUFuncOp kernel);

  /// Shared memory: the static bytes, and the per-edge float count of each
  /// materialized vector (as a signature dimension).
  const SharedLayout &sharedLayout() const { return shared; }
  /// The length dimension of a materialized vector.
  kge_runtime::Dim lengthOf(Value vector) const;
  /// Floats between the rows of two edges in the shared buffer of a
  /// materialized vector: its length, skewed with 16-byte layouts to be 4
  /// (mod 32) so that the same element of 8 edges lies in 8 different
  /// banks (tensor-core operands read it so).
  kge_runtime::Dim rowStrideOf(Value vector) const;

  int64_t blockSize() const { return layout.warps * 32; }
  bool isNegative() const { return !options.negative.empty(); }

private:
  friend class ChunkLoopEmitter;
  friend class MatrixStageEmitter;

  //===--- Prologue ---------------------------------------------------===//
  void emitPrologue(gpu::GPUFuncOp kernel);
  void emitInspectors();
  Value view(StringRef region, Type elementType, int64_t count);
  Value materializedView(Value vector);

  //===--- Stages -----------------------------------------------------===//
  LogicalResult emitStage(int64_t stage);
  /// Before the first stage: per-edge inputs and the scalars of stage -1.
  void emitScalarPreBlock();
  void emitScalarPostBlock(int64_t stage);
  /// The elementwise operations on scalars whose stage is `stage`, for
  /// every edge of the warp.
  void emitElementwiseScalars(int64_t stage);
  LogicalResult emitMatrixResults();

  //===--- Helpers ----------------------------------------------------===//
  Value constIndex(int64_t v);
  Value constI32(int32_t v);
  Value constF32(float v);
  Value toIndex(Value v);
  Value toI32(Value v);
  Value loadI32(Value memref, Value index);
  /// Dimension `pos` of the full shape of `value` (batch first) as an index
  /// value: a constant, or the matching dimension of a table argument.
  Value dimValue(Value value, unsigned pos);
  /// The length of the items of `value` (their last dimension).
  Value lengthValue(Value value);
  /// rowStrideOf(vector) as an index value.
  Value rowStrideValue(Value vector);
  /// `dim` of the kernel argument of block argument `arg`.
  Value argDim(Value arg, unsigned dim);
  /// The kernel memref of a bvec block argument.
  Value memrefOf(Value arg) const { return argMemrefs.lookup(arg); }
  /// Splat of a float `v` to the chunk vector type.
  Value splat(Value scalar);
  VectorType chunkType() const;
  /// Sum across the 32 lanes of a warp (result in every lane).
  Value warpAllReduce(Value value, bvec::ReductionKind kind);
  /// The local edge handled as the i-th edge of this warp.
  Value localEdge(int64_t i);
  /// Slot of the inspector for index array `indices`.
  InspectorSlot &slotFor(Value indices);
  /// The key of local edge `edge` in `slot` (i32).
  Value keyOf(InspectorSlot &slot, Value edge);
  /// The global row of result arrays for local edge `edge` (index).
  Value resultRow(Value edge);
  /// Stores `value` (scalar f32) of local edge `edge` into result `result`.
  void storeScalarResult(unsigned result, Value edge, Value value);

  OpBuilder &b;
  Location loc;
  bvec::FuncOp func;
  bvec::KernelLayout layout;
  const bvec::FusionStages &stages;
  GPUKernelOptions options;
  MLIRContext *ctx;

  std::optional<bvec::DimensionSymbols> dims;
  SharedLayout shared;
  llvm::MapVector<Value, InspectorSlot> slots;
  /// Gathers whose rows may be staged in shared memory, with their buffer.
  llvm::MapVector<Operation *, std::string> stagingBuffers;
  Value negativeArray; ///< The corrupted index array, if any.

  // Set by the prologue.
  DenseMap<Value, Value> argMemrefs;
  SmallVector<Value> resultMemrefs;
  Value permMemref;
  Value sortedFlag; ///< i32: the batch was sorted (layouts that sort only
                    ///< large batches), or null.
  Value smem;
  Value tid, lane, warp, first, count, batch, negatives;
  Value itemOf, rowOf; ///< memref<tile x i32, 3>: positive / result row.
  DenseMap<Value, Value> materializedViews;

  // Per-edge scalars (value, i-th edge of the warp) computed so far.
  DenseMap<std::pair<Value, int64_t>, Value> scalars;

  // Vectors carried in registers from the stage that computes them to the
  // later stages that read them (ChunkLoopEmitter::planCarried): the
  // vectors each stage keeps, the stages that read each from registers,
  // and their chunk values by (vector, i-th edge of the warp, chunk).
  DenseMap<int64_t, SmallVector<Value>> carriedFrom;
  DenseMap<Value, CarriedRange> carriedRanges;
  DenseMap<std::tuple<Value, int64_t, int64_t>, Value> carriedChunks;
};

} // namespace kge
} // namespace mlir

#endif // KGE_LIB_CONVERSION_BATCHEDVECTORTOGPU_KERNELEMITTER_H
