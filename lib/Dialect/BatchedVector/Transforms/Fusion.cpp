//===- Fusion.cpp - fusing a bvec function into one kernel ----------------===//

#include "Dialect/BatchedVector/Transforms/Fusion.h"
#include "Dialect/BatchedVector/Analysis/SignatureAnalysis.h"
#include "Dialect/BatchedVector/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/bit.h"

#include <algorithm>

namespace mlir {
namespace bvec {
#define GEN_PASS_DEF_BATCHEDVECTORFUSE
#include "Dialect/BatchedVector/Transforms/Passes.h.inc"
} // namespace bvec
} // namespace mlir

using namespace mlir;
using namespace mlir::bvec;

//===----------------------------------------------------------------------===//
// Stages
//===----------------------------------------------------------------------===//

FusionStages mlir::bvec::computeFusionStages(FuncOp func) {
  FusionStages result;
  auto stageOf = [&](Value v) { return result.stage.lookup(v); };
  auto maxOver = [&](ValueRange values) {
    int64_t s = -1;
    for (Value v : values)
      s = std::max(s, stageOf(v));
    return s;
  };
  // Per-edge inputs are known before the first stage, like constants.
  for (BlockArgument arg : func.getArguments())
    if (isa<ScalarType>(arg.getType()))
      result.stage[arg] = -1;
  int64_t last = 0;
  for (Operation &op : func.getBody().front().without_terminator()) {
    int64_t s = TypeSwitch<Operation *, int64_t>(&op)
                    .Case<GatherVecOp, GatherMatOp>([](auto) { return 0; })
                    .Case([](ConstantOp c) -> int64_t {
                      return isa<ScalarType>(c.getType()) ? -1 : 0;
                    })
                    .Case([&](ScalMulVecOp m) {
                      return std::max(stageOf(m.getVec()),
                                      stageOf(m.getScalar()) + 1);
                    })
                    .Case<VecMulVecOp, NormOp, ReduceOp>(
                        [&](Operation *r) { return maxOver(r->getOperands()); })
                    .Case([&](VecMulMatOp m) {
                      result.materialized.insert(m.getVec());
                      return std::max(stageOf(m.getVec()) + 1,
                                      stageOf(m.getMat()));
                    })
                    .Case([&](MatMulVecOp m) {
                      result.materialized.insert(m.getVec());
                      return std::max(stageOf(m.getVec()) + 1,
                                      stageOf(m.getMat()));
                    })
                    .Case([&](VecOuterVecOp m) {
                      result.materialized.insert(m.getLhs());
                      result.materialized.insert(m.getRhs());
                      return maxOver(m->getOperands()) + 1;
                    })
                    .Case([&](SliceOp m) -> int64_t {
                      // A slice of a gathered row is read from the table
                      // like a gather; other slices read their input's
                      // materialized copy in a later stage.
                      if (isGatherSlice(m))
                        return 0;
                      result.materialized.insert(m.getInput());
                      return stageOf(m.getInput()) + 1;
                    })
                    .Case([&](PadOp m) {
                      result.materialized.insert(m.getInput());
                      return stageOf(m.getInput()) + 1;
                    })
                    .Default([&](Operation *other) {
                      // Elementwise: computed once all operands are.
                      int64_t s = maxOver(other->getOperands());
                      return isa<ScalarType>(other->getResult(0).getType())
                                 ? s
                                 : std::max<int64_t>(s, 0);
                    });
    result.stage[op.getResult(0)] = s;
    last = std::max(last, s);
  }
  result.numStages = last + 1;
  return result;
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

DictionaryAttr KernelLayout::toAttr(MLIRContext *context) const {
  Builder b(context);
  return b.getDictionaryAttr({
      b.getNamedAttr("tile", b.getI64IntegerAttr(tile)),
      b.getNamedAttr("warps", b.getI64IntegerAttr(warps)),
      b.getNamedAttr("vector_width", b.getI64IntegerAttr(vectorWidth)),
      b.getNamedAttr("reorder_key", b.getStringAttr(reorderKey)),
      b.getNamedAttr("reorder_group", b.getI64IntegerAttr(reorderGroup)),
      b.getNamedAttr("reorder_min_batch", b.getI64IntegerAttr(reorderMinBatch)),
      b.getNamedAttr("reorder_min_reuse", b.getI64IntegerAttr(reorderMinReuse)),
      b.getNamedAttr("reorder_min_row", b.getI64IntegerAttr(reorderMinRow)),
      b.getNamedAttr("reorder_auto", b.getI64IntegerAttr(reorderAuto)),
      b.getNamedAttr("stage_repeats", b.getI64IntegerAttr(stageRepeats)),
      b.getNamedAttr("matrix_math", b.getStringAttr(matrixMath)),
      b.getNamedAttr("carry_floats", b.getI64IntegerAttr(carryFloats)),
      b.getNamedAttr("blocks_per_sm", b.getI64IntegerAttr(blocksPerSM)),
      b.getNamedAttr("deterministic", b.getI64IntegerAttr(deterministic)),
      b.getNamedAttr("stages", b.getI64IntegerAttr(stages)),
  });
}

/// A thread has at most 255 registers; carried vectors leave the rest at
/// least 63.
static constexpr int64_t kMaxCarryFloats = 192;

/// The most blocks of `warps` warps per multiprocessor that leave each
/// thread kMinRegistersPerThread registers.
static int64_t maxBlocksPerSM(int64_t warps) {
  return kRegistersPerSM / (32 * warps * kMinRegistersPerThread);
}

/// Checks a layout against `func`; emits the first problem.
static LogicalResult verifyLayout(FuncOp func, const KernelLayout &layout) {
  if (layout.warps < 1 || layout.warps > 32)
    return func.emitOpError() << "kernel layout: warps must be in [1, 32], got "
                              << layout.warps;
  if (layout.tile < 1 || layout.tile > 1024 || layout.tile % layout.warps)
    return func.emitOpError()
           << "kernel layout: the tile must be a multiple of the warp count ("
           << layout.warps << ") in [1, 1024], got " << layout.tile;
  if (layout.vectorWidth != 1 && layout.vectorWidth != 4)
    return func.emitOpError()
           << "kernel layout: vector width must be 1 or 4, got "
           << layout.vectorWidth;
  if (layout.vectorWidth == 4) {
    WalkResult walk = func.getBody().walk([&](Operation *op) {
      for (Value v : op->getResults()) {
        auto batched = dyn_cast<BatchedType>(v.getType());
        if (!batched || batched.getItemShape().empty())
          continue;
        int64_t length = batched.getItemShape().back();
        if (ShapedType::isDynamic(length) || length % 4) {
          op->emitOpError() << "kernel layout: vector width 4 needs every "
                               "length to be a static multiple of 4, got "
                            << v.getType();
          return WalkResult::interrupt();
        }
      }
      if (auto pad = dyn_cast<PadOp>(op); pad && pad.getOffset() % 4) {
        op->emitOpError() << "kernel layout: vector width 4 needs pad "
                             "offsets that are multiples of 4, got "
                          << pad.getOffset();
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  if (!layout.reorderKey.empty()) {
    BlockArgument key = func.getArgumentByName(layout.reorderKey);
    if (!key || !isa<IndicesType>(key.getType()))
      return func.emitOpError()
             << "kernel layout: reorder key '" << layout.reorderKey
             << "' is not an index array of the function";
  }
  if (layout.reorderGroup < 0)
    return func.emitOpError()
           << "kernel layout: reorder group must not be negative, got "
           << layout.reorderGroup;
  if (layout.reorderKey.empty() && layout.reorderGroup != 1)
    return func.emitOpError()
           << "kernel layout: reorder group " << layout.reorderGroup
           << " needs a reorder key";
  if (layout.reorderGroup > 1 && layout.reorderGroup * layout.tile > 4096)
    return func.emitOpError()
           << "kernel layout: groups of " << layout.reorderGroup << " tiles of "
           << layout.tile
           << " edges exceed 4096 edges; use 0 to sort the whole batch";
  if (layout.stageRepeats < 0 || layout.stageRepeats > 101)
    return func.emitOpError()
           << "kernel layout: stage_repeats is a percentage in [0, 101] "
              "(101: never stage), got "
           << layout.stageRepeats;
  if (layout.matrixMath != "tf32x3" && layout.matrixMath != "fma")
    return func.emitOpError()
           << "kernel layout: matrix_math must be \"tf32x3\" or \"fma\", got \""
           << layout.matrixMath << "\"";
  if (layout.carryFloats < 0 || layout.carryFloats > kMaxCarryFloats)
    return func.emitOpError()
           << "kernel layout: carry_floats must be in [0, " << kMaxCarryFloats
           << "] (floats per lane, 0: never carry), got " << layout.carryFloats;
  if (layout.blocksPerSM < 0 ||
      layout.blocksPerSM > maxBlocksPerSM(layout.warps))
    return func.emitOpError()
           << "kernel layout: blocks_per_sm must be in [0, "
           << maxBlocksPerSM(layout.warps) << "] for blocks of "
           << 32 * layout.warps << " threads (each thread keeps "
           << kMinRegistersPerThread << " of the " << kRegistersPerSM
           << " registers of a multiprocessor), got " << layout.blocksPerSM;
  for (auto [name, value] :
       {std::pair{"reorder_min_batch", layout.reorderMinBatch},
        std::pair{"reorder_min_reuse", layout.reorderMinReuse},
        std::pair{"reorder_min_row", layout.reorderMinRow}}) {
    if (value < 0)
      return func.emitOpError() << "kernel layout: " << name
                                << " must be non-negative, got " << value;
    if (value > 0 && (layout.reorderKey.empty() || layout.reorderGroup != 0))
      return func.emitOpError()
             << "kernel layout: " << name << " " << value
             << " needs a whole-batch sort (a reorder key, reorder_group 0)";
    if (value > 0 && hasMatrixProducts(func))
      return func.emitOpError()
             << "kernel layout: " << name
             << " applies to functions without matrix products (theirs "
                "always sort by matrix)";
  }
  if (layout.reorderAuto != 0 && layout.reorderAuto != 1)
    return func.emitOpError()
           << "kernel layout: reorder_auto must be 0 or 1, got "
           << layout.reorderAuto;
  if (layout.deterministic != 0 && layout.deterministic != 1)
    return func.emitOpError()
           << "kernel layout: deterministic must be 0 or 1, got "
           << layout.deterministic;
  if (layout.stages < 1)
    return func.emitOpError() << "kernel layout: stages must be positive";
  return success();
}

bool mlir::bvec::isMatrixProduct(Operation *op) {
  return isa<VecMulMatOp, MatMulVecOp>(op);
}

bool mlir::bvec::isGatherSlice(Operation *op) {
  auto slice = dyn_cast_or_null<SliceOp>(op);
  return slice && slice.getInput().getDefiningOp<GatherVecOp>();
}

bool mlir::bvec::readsWholeRows(GatherVecOp gather) {
  return !llvm::all_of(gather->getUsers(), isGatherSlice);
}

int64_t mlir::bvec::rowReadsOf(GatherVecOp gather) {
  return llvm::count_if(gather->getUsers(), isGatherSlice) +
         (readsWholeRows(gather) ? 1 : 0);
}

bool mlir::bvec::rowsMaySort(GatherVecOp gather, int64_t minRow) {
  int64_t row = gather.getTable().getType().getShape().back();
  return ShapedType::isDynamic(row) || row >= minRow;
}

bool mlir::bvec::hasMatrixProducts(FuncOp func) {
  return func.getBody()
      .walk([](Operation *op) {
        return isMatrixProduct(op) ? WalkResult::interrupt()
                                   : WalkResult::advance();
      })
      .wasInterrupted();
}

FailureOr<KernelLayout> KernelLayout::fromFunc(FuncOp func) {
  auto dict = func->getAttrOfType<DictionaryAttr>(kAttrName);
  if (!dict)
    return func.emitOpError()
           << "has no '" << kAttrName << "' layout; run bvec-fuse first";
  KernelLayout layout;
  auto readInt = [&](StringRef name, int64_t &out) -> LogicalResult {
    auto attr = dict.getAs<IntegerAttr>(name);
    if (!attr)
      return func.emitOpError() << "kernel layout: missing integer '" << name
                                << "' in " << dict;
    out = attr.getInt();
    return success();
  };
  auto key = dict.getAs<StringAttr>("reorder_key");
  if (!key)
    return func.emitOpError()
           << "kernel layout: missing string 'reorder_key' in " << dict;
  layout.reorderKey = key.getValue().str();
  auto math = dict.getAs<StringAttr>("matrix_math");
  if (!math)
    return func.emitOpError()
           << "kernel layout: missing string 'matrix_math' in " << dict;
  layout.matrixMath = math.getValue().str();
  if (failed(readInt("tile", layout.tile)) ||
      failed(readInt("warps", layout.warps)) ||
      failed(readInt("vector_width", layout.vectorWidth)) ||
      failed(readInt("reorder_group", layout.reorderGroup)) ||
      failed(readInt("reorder_min_batch", layout.reorderMinBatch)) ||
      failed(readInt("reorder_min_reuse", layout.reorderMinReuse)) ||
      failed(readInt("reorder_min_row", layout.reorderMinRow)) ||
      failed(readInt("reorder_auto", layout.reorderAuto)) ||
      failed(readInt("stage_repeats", layout.stageRepeats)) ||
      failed(readInt("stages", layout.stages)) ||
      failed(readInt("carry_floats", layout.carryFloats)) ||
      failed(readInt("blocks_per_sm", layout.blocksPerSM)) ||
      failed(readInt("deterministic", layout.deterministic)) ||
      failed(verifyLayout(func, layout)))
    return failure();
  return layout;
}

/// Rows are not staged by default: on Hopper, direct loads (L1 serves the
/// repeated rows of a tile) were faster than staging at every threshold
/// measured, positive and negative mode (bench/NOTES.md), and they need
/// neither the inspector nor a barrier per chunk.
static constexpr int64_t kDefaultStageRepeats = 101;

/// Batches of functions without matrix products are sorted by entity when
/// they have at least kDefaultSortMinBatch edges and kDefaultSortMinReuse
/// edges per entity. H100, D = 512, skewed FB15k-like batches (14,951
/// entities), the sort included: 8-23 % faster at B = 262,144 (17.5 edges
/// per entity), mixed at 131,072 (8.8: -11 % to +8 %), slower at 65,536
/// (4.4) and on BioKG-like batches (93,773 entities) up to 262,144 edges
/// (2.8) for the 3- and 4-gather models; bench/NOTES.md.
static constexpr int64_t kDefaultSortMinBatch = 65536;
static constexpr int64_t kDefaultSortMinReuse = 16;
/// ... and when the rows of the key's table have at least this many
/// elements. H200, FB15k-like, B = 262,144 and 524,288 (ncu, DistMult):
/// at D = 256 the sorted kernel is slower than the direct one (138 against
/// 133 us at 524,288) before the sort's own 46 us, so no sort pays there;
/// at D = 512 it is faster (256 against 270 us); the H100 gains above were
/// measured at D = 512. bench/NOTES.md.
static constexpr int64_t kDefaultSortMinRow = 512;


FailureOr<KernelLayout> mlir::bvec::chooseKernelLayout(
    FuncOp func, int64_t tile, int64_t warps, int64_t vectorWidth,
    StringRef reorderKey, int64_t reorderGroup, int64_t stageRepeats,
    StringRef matrixMath, int64_t carryFloats, int64_t blocksPerSM,
    int64_t deterministic, int64_t reorderMinBatch, int64_t reorderMinReuse,
    int64_t reorderMinRow) {
  KernelLayout layout;
  for (auto [name, value] : {std::pair{"reorder_min_batch", reorderMinBatch},
                             std::pair{"reorder_min_reuse", reorderMinReuse},
                             std::pair{"reorder_min_row", reorderMinRow}})
    if (value < -1)
      return func.emitOpError() << "kernel layout: " << name
                                << " must be non-negative (-1: choose), got "
                                << value;
  // Matrix products stream every distinct matrix of a tile once per group
  // of edges: small tiles of 16 edges spread the distinct matrices of a
  // batch over many blocks, and 16 warps keep enough of each in flight.
  // Otherwise 8 warps, each with as many edges (at most 4) as keep about
  // kRowLoadsInFlight row loads of a chunk in flight per lane: fewer edges
  // per warp when every edge gathers many rows (ComplEx's 6), whose loads
  // would otherwise take more registers than two blocks per SM leave.
  // Elementwise functions on vectors hold registers per element like row
  // loads do (their reductions and polynomials): with them, fewer edges per
  // warp. H100, D = 512, B = 16384: RotatE (5 gathers, sin and cos, sqrt)
  // 29.2 us with 1 edge per warp, 33.9 with 2; CrossE (5 gathers, tanh)
  // 21.8 us with 2, 32.5 with 4, which spilled.
  bool anyMatrixProduct = hasMatrixProducts(func);
  int64_t perElement = 0;
  bool elementwiseFunctions = false;
  func.getBody().walk([&](Operation *op) {
    if (auto gather = dyn_cast<GatherVecOp>(op))
      perElement += rowReadsOf(gather);
    else if (isa<SinOp, CosOp, ExpOp, LogOp, TanhOp, SigmoidOp>(op) &&
             isa<VecType>(op->getResult(0).getType())) {
      perElement += 2;
      elementwiseFunctions = true;
    }
    else if (isa<SqrtOp>(op) && isa<VecType>(op->getResult(0).getType()))
      perElement += 1;
  });
  int64_t edgesPerWarp = static_cast<int64_t>(llvm::bit_floor(
      static_cast<uint64_t>(std::clamp<int64_t>(
          kRowLoadsInFlight / std::max<int64_t>(perElement, 1), 1, 4))));
  layout.warps = warps > 0 ? warps : (anyMatrixProduct ? 16 : 8);
  layout.tile = tile > 0 ? tile
                         : (anyMatrixProduct ? 16 : layout.warps * edgesPerWarp);
  if (vectorWidth > 0) {
    layout.vectorWidth = vectorWidth;
  } else {
    // 16-byte loads when every length is a static multiple of 4.
    layout.vectorWidth = 4;
    func.getBody().walk([&](Operation *op) {
      for (Value v : op->getResults())
        if (auto batched = dyn_cast<BatchedType>(v.getType()))
          if (!batched.getItemShape().empty()) {
            int64_t length = batched.getItemShape().back();
            if (ShapedType::isDynamic(length) || length % 4)
              layout.vectorWidth = 1;
          }
      // A padded vector is read 4 elements at a time inside or outside
      // its input.
      if (auto pad = dyn_cast<PadOp>(op); pad && pad.getOffset() % 4)
        layout.vectorWidth = 1;
    });
  }
  if (!reorderKey.empty()) {
    layout.reorderKey = reorderKey.str();
  } else {
    // Sort by the index array of the projection matrices, so that each
    // matrix is read once per run of edges that use it.
    func.getBody().walk([&](GatherMatOp gather) {
      if (layout.reorderKey.empty())
        layout.reorderKey =
            func.getArgName(cast<BlockArgument>(gather.getIndices())
                                .getArgNumber())
                .str();
    });
  }
  // Without matrix products, large batches whose entities repeat are
  // sorted by the first index array of the table that the most index arrays
  // gather from (the entities: heads and tails), so that a block's edges
  // share head rows in L1; the launch plan sorts only batches where that
  // pays (reorder_min_batch, reorder_min_reuse). Not functions with
  // elementwise functions of vectors: their arithmetic bounds them, not
  // their rows (RotatE, FB15k-like B = 262,144: 6 % slower sorted).
  // Rows narrower than reorder_min_row never pay for the sort: a table of
  // static rows that narrow is not a candidate (rows of dynamic length are
  // checked by the launch plan).
  int64_t minRow = reorderMinRow >= 0 ? reorderMinRow : kDefaultSortMinRow;
  bool sortsByEntity = false;
  if (layout.reorderKey.empty() && !anyMatrixProduct && reorderGroup < 0 &&
      !elementwiseFunctions) {
    llvm::MapVector<Value, llvm::SetVector<Value>> indicesOf;
    func.getBody().walk([&](GatherVecOp gather) {
      if (isa<BlockArgument>(gather.getTable()) &&
          isa<BlockArgument>(gather.getIndices()) &&
          rowsMaySort(gather, minRow))
        indicesOf[gather.getTable()].insert(gather.getIndices());
    });
    size_t most = 1;
    for (auto &[table, indices] : indicesOf)
      if (indices.size() > most) {
        most = indices.size();
        layout.reorderKey =
            func.getArgName(cast<BlockArgument>(indices.front())
                                .getArgNumber())
                .str();
        sortsByEntity = true;
      }
  }
  layout.reorderGroup =
      reorderGroup >= 0 ? reorderGroup : (layout.reorderKey.empty() ? 1 : 0);
  // The thresholds restrict a whole-batch sort: given for a function that
  // the layout does not sort (and no sort asked for), they hold trivially.
  bool sortAsked = !reorderKey.empty() || reorderGroup >= 0;
  bool wholeBatch = !layout.reorderKey.empty() && layout.reorderGroup == 0;
  auto threshold = [&](int64_t given, int64_t byDefault) -> int64_t {
    if (given >= 0)
      return wholeBatch || sortAsked ? given : 0;
    return sortsByEntity ? byDefault : 0;
  };
  layout.reorderMinBatch = threshold(reorderMinBatch, kDefaultSortMinBatch);
  layout.reorderMinReuse = threshold(reorderMinReuse, kDefaultSortMinReuse);
  layout.reorderMinRow = threshold(reorderMinRow, kDefaultSortMinRow);
  layout.reorderAuto = sortsByEntity;
  layout.stageRepeats = stageRepeats >= 0 ? stageRepeats : kDefaultStageRepeats;
  if (!matrixMath.empty())
    layout.matrixMath = matrixMath.str();
  if (carryFloats >= 0)
    layout.carryFloats = carryFloats;
  if (deterministic >= 0)
    layout.deterministic = deterministic;
  // Vector kernels: as many blocks per multiprocessor as leave each thread
  // 64 registers (4 blocks of 8 warps), so that every block of a batch
  // of 16384 edges is resident at once; the assembler then schedules the
  // unrolled row loads within that budget. Matrix kernels are limited by
  // shared memory instead and keep their registers.
  if (blocksPerSM >= 0)
    layout.blocksPerSM = blocksPerSM;
  else if (!anyMatrixProduct)
    layout.blocksPerSM = maxBlocksPerSM(layout.warps);
  layout.stages = computeFusionStages(func).numStages;
  if (failed(verifyLayout(func, layout)))
    return failure();
  return layout;
}

//===----------------------------------------------------------------------===//
// bvec-fuse
//===----------------------------------------------------------------------===//

namespace {
struct BatchedVectorFusePass
    : bvec::impl::BatchedVectorFuseBase<BatchedVectorFusePass> {
  using BatchedVectorFuseBase::BatchedVectorFuseBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<FuncOp>()) {
      FailureOr<KernelLayout> layout = chooseKernelLayout(
          func, tile, warps, vectorWidth, reorderKey, reorderGroup,
          stageRepeats, matrixMath, carryFloats, blocksPerSM, deterministic,
          reorderMinBatch, reorderMinReuse, reorderMinRow);
      if (failed(layout))
        return signalPassFailure();
      FusionStages stages = computeFusionStages(func);
      Builder b(func.getContext());
      for (Operation &op : func.getBody().front().without_terminator()) {
        op.setAttr("bvec.stage",
                   b.getI64IntegerAttr(stages.of(op.getResult(0))));
        if (stages.materialized.contains(op.getResult(0)))
          op.setAttr("bvec.materialize", b.getUnitAttr());
      }
      func->setAttr(KernelLayout::kAttrName,
                    layout->toAttr(func.getContext()));
    }
  }
};
} // namespace
