//===- StageEmitters.h - chunk loops and matrix stages ----------*- C++ -*-===//
//
// Private to convert-bvec-to-gpu: the two kinds of code a stage of a fused
// kernel consists of.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_LIB_CONVERSION_BATCHEDVECTORTOGPU_STAGEEMITTERS_H
#define KGE_LIB_CONVERSION_BATCHEDVECTORTOGPU_STAGEEMITTERS_H

#include "KernelEmitter.h"

#include "Conversion/GPUCommon/ElementaryFunctions.h"

#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace kge {

/// A vector load/store with an explicit byte alignment (16 for 4 x f32).
Value alignedLoad(OpBuilder &b, Location loc, VectorType type, Value memref,
                  ValueRange indices, int64_t alignment);
void alignedStore(OpBuilder &b, Location loc, Value value, Value memref,
                  ValueRange indices, int64_t alignment);

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

  /// Chooses the vectors carried in registers between stages (the kernel's
  /// carriedFrom): for each stage, the vectors it can compute that a later
  /// stage's loop reads, when all of them have static lengths and need at
  /// most the layout's carry_floats floats per lane together. Nothing is
  /// carried otherwise, nor when rows may be staged.
  void planCarried();

  /// The value of scalar `value` for the i-th edge of the warp.
  Value scalar(Value value, int64_t i);

  /// Applies the elementwise bvec operation `op` to `operands`: chunk
  /// vectors, or f32 scalars when `scalarMode`.
  Value applyElementwise(Operation *op, ValueRange operands, bool scalarMode);

  /// Loads a chunk of a row of global `memref` at `prefix` + [offset + d0,
  /// offset + d0 + V), zero where `valid` is false (the address is clamped
  /// to stay inside); rows of half precision are widened to f32 (with
  /// `widen`; otherwise the raw elements are returned, not masked). An
  /// offset that is not a multiple of V is loaded element by element.
  Value loadGlobalChunk(Value memref, ValueRange prefix, Value d0,
                        Value valid, bool widen = true, int64_t offset = 0);

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
  /// The chunk loops of `stage` with their roots, by length class.
  std::vector<Loop> loopsOf(int64_t stage);
  /// The vectors a loop of `stage` computes for its roots: everything they
  /// depend on that is neither read from shared memory nor carried into
  /// `stage` (by `carried`); `readsCarried` tells whether it reads one.
  SetVector<Value> neededBy(int64_t stage, const Loop &loop,
                            const DenseMap<Value, CarriedRange> &carried,
                            bool *readsCarried = nullptr);
  LogicalResult emitLoop(int64_t stage, Loop &loop);
  /// `chunk` is the chunk's number when the loop is unrolled over the whole
  /// length (carried vectors are kept and read by it), else none.
  SmallVector<Value> emitChunk(ChunkBody &body, Value jj,
                               ValueRange accumulators, bool staged,
                               std::optional<int64_t> chunk = std::nullopt);
  SmallVector<Value> emitStaged(ChunkBody &body, ValueRange init);
  SmallVector<Value> emitDirect(ChunkBody &body, ValueRange init);
  /// Every chunk of a static length one after the other, without a loop.
  SmallVector<Value> emitUnrolled(ChunkBody &body, ValueRange init);
  /// A chunk of the row `gather` reads for local edge `edge`.
  Value loadGatheredChunk(bvec::GatherVecOp gather, Value edge, Value d0,
                          Value valid);
  Value readLeaf(Value vector, Value edge, Value d0, Value valid);

  /// sin and cos of chunk vector or scalar `x`, one reduction for both.
  SinCos sinCos(Value x);

  KernelEmitter &k;
  DenseMap<Value, SinCos> sinCosOf;
  /// While set, sines and cosines take the in-range reduction and OR into
  /// trigOutOfRange whether some argument needed the slow path.
  bool trigInRange = false;
  Value trigOutOfRange;
};

/// Matrix products and matrix results (MatrixStages.cpp).
class MatrixStageEmitter {
public:
  explicit MatrixStageEmitter(KernelEmitter &kernel) : k(kernel) {}

  /// `vec_mul_mat`: for every run of edges sharing a matrix (the tile's
  /// distinct keys, most frequent first), each warp takes work items of a
  /// few edges x one chunk of columns and streams the matrix rows once,
  /// accumulating all the item's edges in registers: on tensor cores
  /// (8 edges x 32 columns, layout matrix_math = "tf32x3") or with FP32
  /// FMAs (4 edges x 32 * V columns). Reads the materialized input vector,
  /// writes the output vector to shared memory.
  void emitProduct(bvec::VecMulMatOp op);

  /// `mat_mul_vec`: each warp takes its edges one after the other; for
  /// every row of the edge's matrix, its lanes multiply a chunk of 32 * V
  /// columns with the materialized input vector and a warp reduction gives
  /// the output element, written to the output vector in shared memory.
  /// The gradient of a projection (TransR, RESCAL) runs it; its matrices
  /// are read per edge (no run sharing: a gradient step reads each once).
  void emitTransposedProduct(bvec::MatMulVecOp op);

  /// Writes matrix result `result` (an expression of gathered matrices,
  /// outer products and elementwise operations) edge by edge.
  void emitMatrixResult(unsigned result, Value matrix);

private:
  /// A work item of a matrix product: up to `itemEdges` edges of one run
  /// and one chunk of output columns.
  struct Item {
    InspectorSlot *slot = nullptr; ///< The run's key, or null (one edge).
    Value start, size;             ///< The run: order[start, start + size).
    Value base;                    ///< First position of the item in the run.
    Value firstColumn;             ///< First output column of the item.
    Value sharedRow;               ///< The run's matrix row (i32), or null.
  };
  /// The local edge at `position` of the item's run and whether it exists
  /// (missing edges repeat the item's first).
  std::pair<Value, Value> edgeAt(const Item &item, Value position);
  /// FP32 FMAs: 4 edges x 32 * V columns, the lane's columns of each
  /// matrix row multiplied with every edge's input element.
  void emitFmaItem(bvec::VecMulMatOp op, const Item &item);
  /// Tensor cores (3xTF32 mma.sync): `blocks` blocks of 8 edges x 32
  /// columns.
  void emitTensorCoreItem(bvec::VecMulMatOp op, const Item &item,
                          int64_t blocks);
  /// Splits FP32 `value` (scalar or vector) into TF32 parts big + small,
  /// both as i32 bit patterns.
  std::pair<Value, Value> splitTF32(Value value);
  /// The first output column of a lane (the item's first plus
  /// `laneOffset`): whether it exists, and it clamped to 0 when not.
  std::pair<Value, Value> columnsOf(bvec::VecMulMatOp op, const Item &item,
                                    Value laneOffset);
  /// Stores `value` at columns [cols, ...) of `edge`'s row of the product's
  /// output buffer when `store` holds.
  void storeOutputRow(bvec::VecMulMatOp op, Value output, Value edge,
                      Value store, Value cols, Value value);

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
