//===- KernelEmitter.h - tile tasks to tiled GPU kernels --------*- C++ -*-===//
//
// The emitter of one tile.task's kernel, shared by the CUDA-core iterators
// (TileIteratorToGPU.cpp) and the tensor-core ones (TensorCoreIterators.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KGE_LIB_CONVERSION_TILEITERATORTOGPU_KERNELEMITTER_H
#define KGE_LIB_CONVERSION_TILEITERATORTOGPU_KERNELEMITTER_H

#include "Conversion/GPUCommon/TensorCores.h"
#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <array>
#include <memory>
#include <optional>

namespace mlir {
namespace kge {
namespace tilegpu {

using tile::Combiner;
using tile::TaskOp;
using tile::inlineTaskRegion;

/// Inline PTX `text` with `constraints` (AT&T dialect), of one `result`
/// (null: none).
Value inlinePTX(OpBuilder &b, Location loc, Type result, ValueRange operands,
                StringRef text, StringRef constraints, bool sideEffects);

/// The tiling of one kernel.
struct TileShape {
  int64_t bm, bn, bk, tm, tn;
  /// Tensor cores: the precision of the warp-level products (none: CUDA
  /// cores) and the depth of the asynchronous load pipeline.
  std::optional<MmaPrecision> mma = std::nullopt;
  int64_t stages = 0;
  /// Tensor cores through warpgroup MMA (wgmma, sm_90a): each warpgroup of
  /// the block computes 64 rows of the block tile, its operands read from
  /// shared memory by descriptors (128-byte swizzled tiles, block-k = 64).
  bool warpgroup = false;
  /// Warpgroup MMA: blocks of a cluster along M (1: no cluster); they share
  /// the B tile, each loading its part multicast to all (TMA).
  int64_t clusterM = 1;
  /// Warpgroup MMA: a producer warpgroup's threads write the stages instead
  /// of TMA: they read 16-byte chunks along k of rows gathered through
  /// index arrays, compute the product form's factors, and write each
  /// term's into a stage of its own (kThreadStageTerms at most).
  bool threadStages = false;
  static constexpr int64_t kThreadStageTerms = 3;
  /// Segment iterators (CUDA cores): the rows sorted by the key of the
  /// input that holds one matrix per key (`W[r[i], k, j]`), one block per
  /// key and column tile, walking its key's rows bm at a time; the key's
  /// matrix is that block's (k, j) operand.
  bool segments = false;
  /// Segments: the kernel takes the tiles of bm rows cut from long runs
  /// (a second tile table), beside the segment kernel of its kind.
  bool longRuns = false;
  /// Segments of the reduction (output per_key, CUDA cores): the steps of
  /// k sorted by their key and cut into tiles of at most kTileSteps steps
  /// of one key; a block takes one tile and one bm x bn tile of its key's
  /// matrix, and combines its partial results into that matrix by atomics.
  bool reductionSegments = false;
  static constexpr int64_t kTileSteps = 512;
  /// Split reduction (CUDA cores, dense update): block x takes steps
  /// [x kSplitSteps(), (x + 1) kSplitSteps()) of k and combines its
  /// partial results into the output by atomics.
  bool splitK = false;
  int64_t splitSteps() const { return 64 * bk; }
  /// Tensor cores: a warp computes (8 tm) x (4 tn) pairs as (tm / 2) x
  /// (tn / 2) products of 16 x 8; the warps of a block form warpsM() x
  /// warpsN().
  int64_t warpsM() const { return bm / (8 * tm); }
  int64_t warpsN() const { return bn / (4 * tn); }
  /// Threads of a block: threads() computing pairs, and for warpgroup MMA
  /// the producer: one more warp (TMA) or warpgroup (threadStages).
  int64_t producerThreads() const {
    return warpgroup ? (threadStages ? 128 : 32) : 0;
  }
  int64_t blockThreads() const { return threads() + producerThreads(); }
  /// Tensor cores: the operand tiles a stage holds along the rows (bm x bk
  /// each) and along the columns (bn x bk each); one each for a plain
  /// product, more for a product form of several operands.
  int64_t rowTiles = 1, colTiles = 1;
  /// Tensor cores: elements of one stage's operand tiles.
  int64_t stageElements() const { return (rowTiles * bm + colTiles * bn) * bk; }
  /// Tensor cores: dynamic shared memory of the operand stages (warpgroup
  /// tiles start on 1024 bytes: that much more).
  int64_t mmaSharedBytes() const {
    return stages * stageElements() * getMmaElementBits(*mma) / 8 +
           (warpgroup ? 1024 : 0);
  }
  /// Threads along the rows and the columns of a block tile.
  int64_t rowThreads() const { return bm / tm; }
  int64_t colThreads() const { return bn / tn; }
  int64_t threads() const { return rowThreads() * colThreads(); }
  /// Rows (columns) a thread owns side by side: 4 when its sub-tile allows
  /// (read from shared memory as one vector), else 1.
  int64_t width() const { return tm % 4 == 0 && tn % 4 == 0 ? 4 : 1; }
  /// Offset in the block tile of the thread's row `r` (column: with the
  /// column threads): runs of width() rows, one run per thread, then the
  /// next run of every thread.
  int64_t runStride(int64_t threadsAlong) const {
    return threadsAlong * width();
  }
};

/// How a task reads an input, by the axes its map selects (PairOnly: a
/// pair operand, indexed by i and j but not k).
enum class InputKind { RowK, ColK, KOnly, RowOnly, ColOnly, PairOnly };

/// An expression of one side's operands of a product form (a factor),
/// computed elementwise on their fragments: an operand, a constant, one of
/// the inner computation's operations applied to factors, or a sum,
/// difference, product, quotient or negation that factoring wrote.
struct FactorExpr;
using Factor = std::shared_ptr<const FactorExpr>;
struct FactorExpr {
  /// The task's input (a leaf), when `op`, `synthesized` and `constant`
  /// are unset.
  unsigned input = 0;
  /// An operation of the inner computation, cloned on its operands'
  /// factors.
  Operation *op = nullptr;
  /// Otherwise: the arith operation factoring wrote (arith.addf, mulf,
  /// divf, negf), or a constant it wrote.
  llvm::StringRef synthesized;
  std::optional<double> constant;
  SmallVector<Factor, 2> operands;
  bool isInput() const { return !op && synthesized.empty() && !constant; }
  bool isConstant() const { return constant.has_value(); }
};

/// One term of a product form: row factor x column factor, summed over k
/// (a null factor is 1: a term of one side's value alone).
struct ProductTerm {
  Factor row, col;
};

/// A task's inner computation as a sum of terms row(i, k) * col(j, k), each
/// factor an expression of one side's operands alone: the products the
/// tensor cores compute (one per term and step), their factors computed
/// from the fragments first. A plain product (GEMM) is one term of one
/// operand a side.
struct ProductForm {
  /// The operands (tile::getProductOperands).
  SmallVector<unsigned, 2> rows, cols;
  SmallVector<ProductTerm, 2> terms;
  /// One term multiplying the one operand of each side.
  bool isPlain() const {
    return rows.size() == 1 && cols.size() == 1 && terms.size() == 1 &&
           terms[0].row && terms[0].row->isInput() && terms[0].col &&
           terms[0].col->isInput();
  }
};

/// `task`'s inner computation as a product form, or none when it is not one.
/// Factoring treats the inner computation as a polynomial in the two
/// sides: products across the sides multiply out, sums and differences
/// concatenate terms, one side's values pass through any operation (exp,
/// tanh, ...) and a division by one side's value divides that side's
/// factors; a value of one side alone in a sum is a term whose other
/// factor is 1 (TransE's ||h + r - t||^2 = ||h + r||^2 - 2 (h + r) . t +
/// ||t||^2: three terms). Not a product form: an operation other than
/// those on values of both sides (max(u, w), (u * w)^1.5), an operand
/// indexed by k alone or by neither spatial axis, an operation with effects
/// or regions, a value of one side only.
std::optional<ProductForm> getProductForm(TaskOp task);

/// The precision at which the tensor cores can run `task`'s reduction, or
/// none: its inner computation must be a product form (getProductForm),
/// accumulated with add into f32 from zero, its operands all of one
/// element type; every other operand indexed by i or j alone. f16 and
/// bf16 operands take the tensor cores unless `matrixMath` is "fma"; f32
/// operands take them when it is "tf32" or "tf32x3".
std::optional<MmaPrecision> getTensorCorePrecision(TaskOp task,
                                                   llvm::StringRef matrixMath);

/// Threads of a block of a reduce output's finalize kernel.
constexpr int64_t kReduceFinalizeThreads = 256;

/// Shards of top-k's k best (merged by one block at the end: at most 4096
/// entries in all, at most 32 shards).
int64_t getTopKShards(int64_t k);

using tile::isKContiguous;

class KernelEmitter {
public:
  KernelEmitter(OpBuilder &b, TaskOp task, const TileShape &shape)
      : b(b), task(task), loc(task.getLoc()), shape(shape) {}

  /// Emits the body of `kernel`, whose arguments are the function's.
  LogicalResult emit(gpu::GPUFuncOp kernel, func::FuncOp func);
  /// Emits the body of a reduce output's finalize kernel (threads along
  /// the rows): arguments the partial values (one per column tile and
  /// row, column tile major), the output and the number of column tiles;
  /// a row's partial values combine in column-tile order from the
  /// combiner's identity (none when N = 0), then `finalize`.
  void emitReduceFinalize(gpu::GPUFuncOp kernel);
  /// Emits the body of top-k's merge kernel (one block of 1024 threads):
  /// arguments the shards' values, rows and columns, then the task's
  /// outputs, which receive the k best of all shards.
  void emitTopKMerge(gpu::GPUFuncOp kernel);

private:
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value arg(Value funcValue) { return args.lookup(funcValue); }
  Value minIndex(Value a, Value c) {
    return arith::MinSIOp::create(b, loc, a, c);
  }
  /// `v` (index or integer) as `type`.
  Value castIndex(Value v, Type type) {
    if (v.getType() == type)
      return v;
    return arith::IndexCastOp::create(b, loc, type, v);
  }
  Value less(Value a, Value c) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a, c);
  }
  /// Emits `body` under `condition` (an scf.if without else), or directly
  /// when `condition` is null.
  void inThen(Value condition, llvm::function_ref<void()> body) {
    if (!condition)
      return body();
    auto ifOp = scf::IfOp::create(b, loc, condition, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body();
  }
  /// Clones the region's block with `arguments`; float arithmetic may
  /// contract into fused multiply-adds (as nvcc's default -fmad=true).
  Value inlineRegion(Region &region, ValueRange arguments) {
    return inlineTaskRegion(b, region, arguments,
                            [](Operation *op) { allowContraction(op); });
  }
  static Operation *allowContraction(Operation *op) {
    auto fastMath = dyn_cast<arith::ArithFastMathInterface>(op);
    if (!fastMath)
      return op;
    // Operations built without flags have no attribute at all.
    arith::FastMathFlagsAttr flags = fastMath.getFastMathFlagsAttr();
    op->setAttr(fastMath.getFastMathAttrName(),
                arith::FastMathFlagsAttr::get(
                    op->getContext(),
                    (flags ? flags.getValue() : arith::FastMathFlags::none) |
                        arith::FastMathFlags::contract));
    return op;
  }
  Value combine(Combiner combiner, Value lhs, Value rhs);
  /// The task's accumulation (contracting), its combine region if custom.
  Value accumulate(Value lhs, Value rhs) {
    return buildAccumulation(b, loc, task, lhs, rhs,
                             arith::FastMathFlags::contract,
                             [](Operation *op) { allowContraction(op); });
  }
  /// The output value of the pair (r, c) of this thread's sub-tile.
  Value projected(Value acc, Value row, Value col, ValueRange spatial) {
    if (task.getProject().empty())
      return acc;
    SmallVector<Value> arguments = {acc, row, col};
    llvm::append_range(arguments, spatial);
    return inlineRegion(task.getProject(), arguments);
  }
  /// Element `at` of the 1-D global memref `array`, read whole by a relaxed
  /// atomic load (what other blocks write, past L1; never split).
  Value relaxedLoad(Value array, Value at);
  /// An LLVM pointer to element `at` (a linear index into the whole
  /// buffer, elements of type `element`) of `array`.
  Value elementAddress(Value array, Value at, Type element);
  /// The aggregate output's group row of task row `i` (its row key).
  Value groupRow(Value i);
  /// How many columns of the aggregate output's float sums one vector
  /// reduction stores (red.global.v<n>.f32.add; 0: none): groups by row
  /// keys alone into an f32 matrix; 4 for CUDA-core tiles of runs of four
  /// columns, 2 for tensor-core ones (each lane's pairs of columns).
  int64_t vectorAggregate();
  /// `array`[at] (an index array) as an index.
  Value loadIndex(Value array, Value at);
  /// The row at a position of the block's rows: through the sorted order
  /// for segment iterators, the position itself otherwise.
  Value rowAt(Value position) {
    return rowPerm ? loadIndex(rowPerm, position) : position;
  }
  /// The indices of input `n`'s element at spatial coordinate `spatial`
  /// (a row position or a column) and reduction step `k` (either may be
  /// null when the input lacks that axis): rows through the sorted order
  /// of segment iterators, gathered dimensions through their index arrays,
  /// the block's key for an input with a matrix per key.
  /// `resolved`: `spatial` is already the input's index along its spatial
  /// dimension (the sorted order and the gather applied).
  SmallVector<Value, 3> inputIndices(unsigned n, Value spatial, Value k,
                                     bool resolved = false);
  /// The index along its spatial dimension of input `n`'s element at
  /// spatial coordinate `spatial`: through the sorted order of segment
  /// iterators and its index array where gathered.
  Value resolveSpatial(unsigned n, Value spatial);
  /// Whether that index is other than the coordinate (a load).
  bool readsResolvedRows(unsigned n);
  /// Input `n`'s index along its (spatial) dimension `d` at `spatial`.
  Value resolveAt(unsigned n, unsigned d, Value spatial);
  /// Bitonic sort, ascending, of the first `length` (a power of two)
  /// entries of the shared arrays `keys` and `payloads` by `threads`
  /// threads (a barrier before each step, none after):
  /// `after(keyA, keyB, payloadA, payloadB)` says whether entry a ranks
  /// after entry b.
  void bitonicSort(Value keys, Value payloads, int64_t length, int64_t threads,
                   llvm::function_ref<Value(Value, Value, Value, Value)> after);
  /// Loads element (row, k) of input `n` (either coordinate may be null
  /// when the input lacks that axis) from global memory.
  Value loadGlobal(unsigned n, Value spatial, Value k);
  /// Calls `visit(input, inTile, spatial, k, kk, s)` for every element this
  /// thread stages at step `k0`: `inTile` null when always in the tile,
  /// `spatial`/`s` null for inputs indexed by k alone.
  void forEachStagedElement(
      Value k0, llvm::function_ref<void(unsigned, Value, Value, Value, Value,
                                        Value)>
                    visit);
  /// This thread's staged elements of step `k0`, read from global memory.
  SmallVector<Value> loadStage(Value k0);
  /// Stores `values` (loadStage's) into the shared tiles.
  void storeStage(Value k0, ValueRange values);
  void storeOutput(Value value, Value acc, Value i, Value j,
                   ValueRange spatial);
  /// groups[group] = combiner(groups[group], value), atomically (float max
  /// and min by a compare-and-swap loop).
  void combineAtomically(Combiner combiner, Value groups, ValueRange group,
                         Value value);
  /// Select's store iterator: the block counts its pairs, reserves their
  /// slots with one global atomic and writes them (GAMUT's linear mapping).
  void storeSelected(gpu::GPUFuncOp kernel, ArrayRef<Value> values,
                     ArrayRef<Value> holds, ArrayRef<Value> rows,
                     ArrayRef<Value> cols);
  /// Top-k's store iterator: the block sorts its candidates in shared
  /// memory (bitonic), and when its best beats the current k-th of its
  /// shard, merges its k best into the shard's k best under the shard's
  /// lock (GAMUT's nonlinear mapping: a local structure, then the global
  /// one; blocks take getTopKShards() shards in turn, so that merges into
  /// different shards run at once). `shardArrays`: the shards' values,
  /// rows and columns, k entries a shard.
  void storeTopK(gpu::GPUFuncOp kernel, Value locks,
                 ArrayRef<Value> shardArrays, ArrayRef<Value> values,
                 ArrayRef<Value> holds, ArrayRef<Value> localRows,
                 ArrayRef<Value> localCols);
  /// Reduce's store iterator: each thread combines its pairs' values per
  /// row (in a fixed order; pairs not stored count as the identity),
  /// writes them to `slots` x bm shared partial values (its slot: its
  /// place along the block's columns), and after a barrier one thread per
  /// row combines the slots in order and writes the block's partial value
  /// of the row to `partials` at (column tile, row).
  void storeReduced(gpu::GPUFuncOp kernel, Value partials,
                    ArrayRef<Value> accs, ArrayRef<Value> stored,
                    ArrayRef<Value> rows, ArrayRef<Value> cols,
                    ArrayRef<Value> localRows,
                    llvm::function_ref<SmallVector<Value>(int64_t, int64_t)>
                        spatialOf);
  /// Distinct's store iterator: every kept value is inserted into `set`, a
  /// hash set in global memory (open addressing, linear probing; its last
  /// word flags the one 64-bit integer value that encodes as an empty
  /// slot); the thread whose insertion claims the value's slot reserves an
  /// output slot with one atomic on the count and writes the value there.
  void storeDistinct(Value set, ArrayRef<Value> values, ArrayRef<Value> holds);
  /// The tensor-core kernels' dense store iterator for f32 outputs written
  /// at every pair: the block's values staged in the freed operand stages
  /// (whole, or in rounds of rows where they hold less), then rows stored
  /// in 16-byte vectors (scalar stores at the edges and for rows that are
  /// not multiples of 16 bytes). `consumer`: the threads holding pairs
  /// (null: all).
  void emitStagedDenseStore(
      ArrayRef<Value> accs, ArrayRef<Value> rows, ArrayRef<Value> cols,
      ArrayRef<Value> localRows, ArrayRef<Value> localCols, Value consumer,
      llvm::function_ref<SmallVector<Value>(int64_t, int64_t)> spatialOf);
  /// The order-preserving 32-bit key of a top-k value: smaller is better.
  Value topKKey(Value value);
  /// The value of a key.
  Value topKValue(Value key, Type type);
  /// (keyA, rowA, colA) ranks strictly before (keyB, rowB, colB).
  Value ranksBefore(Value keyA, Value rowA, Value colA, Value keyB,
                    Value rowB, Value colB);

  OpBuilder &b;
  TaskOp task;
  Location loc;
  TileShape shape;
  IRMapping args;
  SmallVector<InputKind> kinds;
  /// Shared-memory tiles of the inputs indexed by k (null for the others).
  SmallVector<Value> tiles;
  Value extents[3];
  Value tid, ty, tx, rowBase, colBase;
  /// Segment iterators: the sorted row order (positions to rows) and the
  /// block's key (null otherwise).
  Value rowPerm, segmentKey;
  /// Segments of the reduction: the sorted order of the steps of k
  /// (positions to steps), the block's first position (null otherwise;
  /// extents[K] is then the block's end) and whether the block has a tile.
  Value kPerm, kBegin, hasKTile;

  // Tensor cores (TensorCoreIterators.cpp).
  /// This thread's pairs: the rows and the columns of its accumulator
  /// fragments in the block tile.
  void tensorCorePairs(SmallVector<Value> &localRows,
                       SmallVector<Value> &localCols);
  /// The reduction on tensor cores; the accumulators in the order of
  /// emitReduction's (row-major over the thread's pairs).
  SmallVector<Value> emitTensorCoreReduction();
  /// Issues the asynchronous copies of reduction tile `kTile` into stage
  /// `stage` of the shared tiles (zero-filled past the extents), as one
  /// group; its token.
  Value issueTensorCoreStage(Value kTile, Value stage);
  /// The rows a thread copies are the same at every step: for operands read
  /// through an index array (or the sorted order), their indices read once
  /// before the pipeline, by (stage tile, first chunk of the round).
  void resolveTensorCoreRows();
  llvm::DenseMap<std::pair<unsigned, int64_t>, Value> resolvedRows;
  /// The flat shared-memory index of (row, col) of a tile whose rows hold
  /// `rowLength` elements: 16-byte chunks XOR-swizzled so that eight rows'
  /// chunks at one column fall in distinct banks.
  Value swizzle(int64_t rowLength, Value row, Value col);
  /// The index in its stage's tile of element (row, col) of operand tile
  /// `p` as stored (rows of k when `kContiguous`, else rows of k-steps).
  Value storageIndex(int p, bool kContiguous, Value row, Value col);
  /// The reduction on warpgroup MMA, its operands loaded by TMA through
  /// `tensorMaps` (a thread issues them) or written by the producer
  /// warpgroup's threads (threadStages), mbarriers ordering the stages;
  /// accumulators as emitTensorCoreReduction's.
  SmallVector<Value> emitWarpgroupReduction();
  /// The producer warpgroup of threadStages: for each step of k, each
  /// term's factors into a stage of their own, waiting for the stages'
  /// `barriers` (full s, then empty s, of `stages`) as the consumers
  /// release them.
  void emitThreadStageProducer(Value barriers, Value kTiles);
  /// The parity (i1) of an mbarrier's phase `count`.
  Value phaseParity(Value count);
  /// The stage of pipeline step `step` (of `stages`), once its consumers
  /// have released it past the first round: a wait on its empty barrier
  /// (`stages` + stage of `barriers`).
  Value awaitFreeStage(Value barriers, Value step, int64_t stages);
  /// `value` (a vector of f32) rounded to TF32, to nearest (ties away from
  /// zero), NaNs kept: cvt.rna.tf32.f32 element by element.
  Value roundToTF32(Value value);
  /// The operands on the tensor cores: the (i, k) inputs, then the (j, k)
  /// ones, in the order of their tiles in a stage; the product form they
  /// compute.
  SmallVector<unsigned, 4> mmaInputs;
  ProductForm product;
  /// The side of stage tile `slot` (0: rows, 1: columns) and its first
  /// element in the stage.
  int side(unsigned slot) const {
    return slot < product.rows.size() ? 0 : 1;
  }
  int64_t slotOffset(unsigned slot) const {
    int64_t rows = product.rows.size();
    return slot < rows ? slot * shape.bm * shape.bk
                       : rows * shape.bm * shape.bk +
                             (slot - rows) * shape.bn * shape.bk;
  }
  /// The value of `factor` on fragments of `type` (the tensor cores'
  /// element type): `leaf(input)` gives an operand's fragment; null is 1.
  /// With `masked`, a computed factor's element (r, e) is zero where
  /// `inK(r, e)` is false (past K, where the operands' stages are
  /// zero-filled but a factor of zeros need not be zero), checked only when
  /// `pastK` (the step reaches past K) holds.
  Value evaluateFactor(const Factor &factor, VectorType type,
                       llvm::function_ref<Value(unsigned)> leaf,
                       llvm::function_ref<Value(int64_t, int64_t)> inK,
                       Value pastK, bool masked);
  /// The shared tiles of all stages, the warp's first row and column in the
  /// block tile, the lane.
  Value mmaTiles, warpRow, warpCol, lane;
  /// Elements before the first stage in mmaTiles (warpgroup tiles start on
  /// 1024 bytes), and the shared address of mmaTiles' first element.
  Value mmaBase, mmaAddress;
  /// The dynamic shared memory (bytes), and the tensor maps of the
  /// warpgroup kernel's operands (kernel arguments, grid constants).
  Value mmaBytes;
  Value tensorMaps[2];
};

} // namespace tilegpu
} // namespace kge
} // namespace mlir

#endif // KGE_LIB_CONVERSION_TILEITERATORTOGPU_KERNELEMITTER_H
