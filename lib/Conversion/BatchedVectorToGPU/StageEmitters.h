//===- StageEmitters.h - chunk loops and matrix stages ----------*- C++ -*-===//
//
// Private to convert-bvec-to-gpu: the two kinds of code a stage of a fused
// kernel consists of.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_LIB_CONVERSION_BATCHEDVECTORTOGPU_STAGEEMITTERS_H
#define KGE_LIB_CONVERSION_BATCHEDVECTORTOGPU_STAGEEMITTERS_H

#include "KernelEmitter.h"

#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace kge {

/// A vector load/store with an explicit byte alignment (16 for 4 x f32).
Value alignedLoad(OpBuilder &b, Location loc, VectorType type, Value memref,
                  ValueRange indices, int64_t alignment);
void alignedStore(OpBuilder &b, Location loc, Value value, Value memref,
                  ValueRange indices, int64_t alignment);

/// Correctly rounded f32 square root (sqrt.rn, like PyTorch's).
Value sqrtRN(OpBuilder &b, Location loc, Value x);

/// The index array shared by every gathered matrix of `matrix`, or null
/// when the matrix of each edge is its own (outer products, gathers through
/// different index arrays, constants only).
Value sharedMatrixKey(Value matrix);

/// Edge-major loops over the embedding length (ChunkLoops.cpp): each warp
/// computes the vectors of its edges chunk by chunk, accumulates reductions
/// in registers and finishes them with warp shuffles.
class ChunkLoopEmitter {
public:
  explicit ChunkLoopEmitter(KernelEmitter &kernel) : k(kernel) {}

  /// Emits every chunk loop of `stage`: one per length class of the
  /// reductions, materialized vectors and vector results of the stage.
  LogicalResult emitStage(int64_t stage);

  /// The value of scalar `value` for the i-th edge of the warp.
  Value scalar(Value value, int64_t i);

  /// Applies the elementwise bvec operation `op` to `operands`: chunk
  /// vectors, or f32 scalars when `scalarMode`.
  Value applyElementwise(Operation *op, ValueRange operands, bool scalarMode);

  /// Loads a chunk of a row of global `memref` at `prefix` + [d0, d0 + V),
  /// zero where `valid` is false (the address is clamped to stay inside).
  Value loadGlobalChunk(Value memref, ValueRange prefix, Value d0,
                        Value valid);

  /// Loads a chunk of a shared float buffer at `offset`, zero where `valid`
  /// is false; `aligned` says whether offset is a multiple of V.
  Value loadSharedChunk(Value buffer, Value offset, Value valid,
                        bool aligned = true);

private:
  struct Loop;
  /// What one chunk loop computes.
  struct ChunkBody {
    Loop &loop;
    SetVector<Value> &needed;
    SmallVector<bvec::GatherVecOp> gathers;
    Value length;
  };
  LogicalResult emitLoop(int64_t stage, Loop &loop);
  SmallVector<Value> emitChunk(ChunkBody &body, Value jj,
                               ValueRange accumulators, bool staged);
  SmallVector<Value> emitStaged(ChunkBody &body, ValueRange init);
  SmallVector<Value> emitDirect(ChunkBody &body, ValueRange init);
  /// A chunk of the row `gather` reads for local edge `edge`.
  Value loadGatheredChunk(bvec::GatherVecOp gather, Value edge, Value d0,
                          Value valid);
  Value readLeaf(Value vector, Value edge, Value d0, Value valid);

  KernelEmitter &k;
};

/// Matrix products and matrix results (MatrixStages.cpp).
class MatrixStageEmitter {
public:
  explicit MatrixStageEmitter(KernelEmitter &kernel) : k(kernel) {}

  /// `vec_mul_mat`: for every run of edges sharing a matrix (the tile's
  /// distinct keys, most frequent first), each warp takes work items of 8
  /// edges x one chunk of columns and streams the matrix rows once,
  /// accumulating all 8 edges in registers. Reads the materialized input
  /// vector, writes the output vector to shared memory.
  void emitProduct(bvec::VecMulMatOp op);

  /// Writes matrix result `result` (an expression of gathered matrices,
  /// outer products and elementwise operations) edge by edge.
  void emitMatrixResult(unsigned result, Value matrix);

private:
  struct Context {
    Value edge;      ///< Local edge whose per-edge values are used.
    Value sharedRow; ///< Matrix row of a shared key (i32), or null.
    Value k;         ///< Matrix row (index).
    Value cols;      ///< First column of the lane (index, clamped).
    Value colValid;  ///< Whether the lane's columns exist.
  };
  Value evaluate(Value matrix, const Context &context);

  KernelEmitter &k;
};

} // namespace kge
} // namespace mlir

#endif // KGE_LIB_CONVERSION_BATCHEDVECTORTOGPU_STAGEEMITTERS_H
