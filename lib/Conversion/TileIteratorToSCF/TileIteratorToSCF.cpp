//===- TileIteratorToSCF.cpp - tile to loops ------------------------------===//
//
// The reference lowering of `tile.task`: one loop nest over (i, j, k) per
// task, computing each pair on its own. The CPU runner executes it and the
// GPU lowering is tested against it.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileIteratorToSCF/TileIteratorToSCF.h"
#include "Dialect/TileIterator/Analysis/SignatureAnalysis.h"

#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace kge {
#define GEN_PASS_DEF_CONVERTTILEITERATORTOSCF
#include "Conversion/Passes.h.inc"
} // namespace kge
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

namespace {

/// Emits the loops of one task.
class TaskLowering {
public:
  TaskLowering(OpBuilder &builder, TaskOp task)
      : b(builder), task(task), loc(task.getLoc()) {}

  void lower();

private:
  Value constantIndex(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value readExtent(TaskOp::Axis axis) {
    auto [source, dim] = task.getExtentSource(axis);
    return memref::DimOp::create(b, loc, source, dim);
  }
  /// The element of input `index` at (i, j, k) (`k` may be null for
  /// spatial-only inputs).
  Value loadInput(unsigned index, Value i, Value j, Value k) {
    AffineMap map =
        cast<AffineMapAttr>(task.getIndexingMaps()[index]).getValue();
    Value axes[3] = {i, j, k};
    SmallVector<Value> indices;
    for (unsigned d = 0; d < map.getNumResults(); ++d) {
      Value at = axes[map.getDimPosition(d)];
      // A gathered dimension is read at gather[axis].
      if (Value gather = task.getGather(index, d))
        at = arith::IndexCastOp::create(
            b, loc, b.getIndexType(),
            memref::LoadOp::create(b, loc, gather, ValueRange{at}));
      indices.push_back(at);
    }
    // (Trailing unit dimensions: read at 0.)
    indices.resize(
        cast<MemRefType>(task.getInputs()[index].getType()).getRank(),
        constantIndex(0));
    return memref::LoadOp::create(b, loc, task.getInputs()[index], indices);
  }
  Value inlineRegion(Region &region, ValueRange arguments) {
    return inlineTaskRegion(b, region, arguments);
  }
  /// `combiner` applied to `lhs` and `rhs` (not `custom`).
  Value combine(Combiner combiner, Value lhs, Value rhs) {
    return buildCombination(b, loc, combiner, lhs, rhs);
  }
  /// Whether `lhs` ranks strictly before `rhs` in a top-k output.
  Value better(Value lhs, Value rhs) {
    bool smallest = task.getSmallest();
    if (isa<FloatType>(lhs.getType()))
      return arith::CmpFOp::create(b, loc,
                                   smallest ? arith::CmpFPredicate::OLT
                                            : arith::CmpFPredicate::OGT,
                                   lhs, rhs);
    return arith::CmpIOp::create(b, loc,
                                 smallest ? arith::CmpIPredicate::slt
                                          : arith::CmpIPredicate::sgt,
                                 lhs, rhs);
  }
  Value castIndex(Value value, Type type) {
    if (value.getType() == type)
      return value;
    return arith::IndexCastOp::create(b, loc, type, value);
  }

  void initializeOutputs();
  /// The inner computation at (i, j, k): inputs indexed by k loaded
  /// there, the pair's spatial-only elements `spatial` given.
  Value innerValue(Value i, Value j, Value k, ValueRange spatial);
  Value reduce(Value i, Value j, ValueRange spatial);
  /// Output per_key: the reduction of pair (i, j) combined step by step
  /// into the matrix of each step's key.
  void reducePerKey(Value i, Value j, ValueRange spatial);
  void store(Value value, Value acc, Value i, Value j, ValueRange spatial);
  void storeSelect(Value value, Value i, Value j);
  void storeDistinct(Value value);
  void storeTopK(Value value, Value i, Value j);

  OpBuilder &b;
  TaskOp task;
  Location loc;
  /// The extents of i, j and k, read once before the loops.
  Value extents[3];
};

} // namespace

void TaskLowering::initializeOutputs() {
  ValueRange outputs = task.getOutputs();
  Value zero = constantIndex(0);
  switch (task.getOutput()) {
  case OutputKind::dense:
  case OutputKind::aggregate:
  case OutputKind::reduce:
  case OutputKind::per_key:
    return;
  case OutputKind::select:
  case OutputKind::distinct: {
    Value count = outputs.back();
    memref::StoreOp::create(
        b, loc, arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0),
        count, zero);
    return;
  }
  case OutputKind::top_k: {
    Type valueType = task.getValueType();
    Type coordType = cast<MemRefType>(outputs[1].getType()).getElementType();
    Combiner worst = task.getSmallest() ? Combiner::min : Combiner::max;
    Value initial = arith::ConstantOp::create(
        b, loc, getCombinerIdentity(worst, valueType));
    Value none = arith::ConstantIntOp::create(b, loc, coordType, -1);
    auto loop = scf::ForOp::create(b, loc, zero, constantIndex(*task.getK()),
                                   constantIndex(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value slot = loop.getInductionVar();
    memref::StoreOp::create(b, loc, initial, outputs[0], slot);
    memref::StoreOp::create(b, loc, none, outputs[1], slot);
    memref::StoreOp::create(b, loc, none, outputs[2], slot);
    return;
  }
  }
}

Value TaskLowering::innerValue(Value i, Value j, Value k, ValueRange spatial) {
  // Spatial-only elements were loaded once per pair.
  SmallVector<Value> scalars;
  unsigned nextSpatial = 0;
  for (unsigned index = 0, e = task.getInputs().size(); index < e; ++index)
    scalars.push_back(task.inputUses(index, TaskOp::K)
                          ? loadInput(index, i, j, k)
                          : spatial[nextSpatial++]);
  return inlineRegion(task.getInner(), scalars);
}

Value TaskLowering::reduce(Value i, Value j, ValueRange spatial) {
  Type accType = task.getAccumulatorType();
  TypedAttr identity = task.getIdentityAttr();
  if (!identity)
    identity = getCombinerIdentity(task.getAccumulate(), accType);
  Value init = arith::ConstantOp::create(b, loc, identity);
  auto loop = scf::ForOp::create(b, loc, constantIndex(0),
                                 extents[TaskOp::K], constantIndex(1),
                                 ValueRange{init});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value inner = innerValue(i, j, loop.getInductionVar(), spatial);
  Value acc = loop.getRegionIterArg(0);
  Value next = buildAccumulation(b, loc, task, acc, inner);
  scf::YieldOp::create(b, loc, next);
  return loop.getResult(0);
}

void TaskLowering::reducePerKey(Value i, Value j, ValueRange spatial) {
  Value C = task.getOutputs()[0], keys = task.getKeys()[0];
  auto loop = scf::ForOp::create(b, loc, constantIndex(0), extents[TaskOp::K],
                                 constantIndex(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value k = loop.getInductionVar();
  Value inner = innerValue(i, j, k, spatial);
  Value key = castIndex(memref::LoadOp::create(b, loc, keys, ValueRange{k}),
                        b.getIndexType());
  SmallVector<Value> at = {key, i, j};
  Value old = memref::LoadOp::create(b, loc, C, at);
  memref::StoreOp::create(b, loc, buildAccumulation(b, loc, task, old, inner),
                          C, at);
}

void TaskLowering::storeSelect(Value value, Value i, Value j) {
  ValueRange outputs = task.getOutputs();
  Value zero = constantIndex(0);
  Value count = memref::LoadOp::create(b, loc, outputs[3], zero);
  Value n = arith::IndexCastOp::create(b, loc, b.getIndexType(), count);
  Value capacity = memref::DimOp::create(b, loc, outputs[0], 0);
  Value fits =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, n, capacity);
  auto ifFits = scf::IfOp::create(b, loc, fits, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifFits.thenBlock());
    Type coordType = cast<MemRefType>(outputs[0].getType()).getElementType();
    memref::StoreOp::create(b, loc, castIndex(i, coordType), outputs[0], n);
    memref::StoreOp::create(b, loc, castIndex(j, coordType), outputs[1], n);
    memref::StoreOp::create(b, loc, value, outputs[2], n);
  }
  Value one = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 1);
  memref::StoreOp::create(b, loc, arith::AddIOp::create(b, loc, count, one),
                          outputs[3], zero);
}

void TaskLowering::storeDistinct(Value value) {
  ValueRange outputs = task.getOutputs();
  Value zero = constantIndex(0);
  Value count = memref::LoadOp::create(b, loc, outputs[1], zero);
  Value n = arith::IndexCastOp::create(b, loc, b.getIndexType(), count);
  Value capacity = memref::DimOp::create(b, loc, outputs[0], 0);
  Value stored = arith::MinSIOp::create(b, loc, n, capacity);
  Value no = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  auto search = scf::ForOp::create(b, loc, zero, stored, constantIndex(1),
                                   ValueRange{no});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(search.getBody());
    Value seen = memref::LoadOp::create(b, loc, outputs[0],
                                        search.getInductionVar());
    Value equal;
    if (isa<FloatType>(value.getType())) {
      // Values compare with ==, and all NaNs are one value.
      Value eq = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       seen, value);
      Value seenNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO,
                                            seen, seen);
      Value valueNaN = arith::CmpFOp::create(
          b, loc, arith::CmpFPredicate::UNO, value, value);
      equal = arith::OrIOp::create(
          b, loc, eq, arith::AndIOp::create(b, loc, seenNaN, valueNaN));
    } else {
      equal = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, seen,
                                    value);
    }
    scf::YieldOp::create(
        b, loc,
        arith::OrIOp::create(b, loc, search.getRegionIterArg(0), equal)
            .getResult());
  }
  Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  Value isNew = arith::XOrIOp::create(b, loc, search.getResult(0), yes);
  auto ifNew = scf::IfOp::create(b, loc, isNew, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifNew.thenBlock());
  Value fits =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, n, capacity);
  auto ifFits = scf::IfOp::create(b, loc, fits, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(ifFits.thenBlock());
    memref::StoreOp::create(b, loc, value, outputs[0], n);
  }
  Value one = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 1);
  memref::StoreOp::create(b, loc, arith::AddIOp::create(b, loc, count, one),
                          outputs[1], zero);
}

void TaskLowering::storeTopK(Value value, Value i, Value j) {
  ValueRange outputs = task.getOutputs();
  Value values = outputs[0], rows = outputs[1], cols = outputs[2];
  Type coordType = cast<MemRefType>(rows.getType()).getElementType();
  Value none = arith::ConstantIntOp::create(b, loc, coordType, -1);
  int64_t k = *task.getK();
  Value last = constantIndex(k - 1);
  auto isFree = [&](Value slot) {
    Value row = memref::LoadOp::create(b, loc, rows, slot);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, row, none);
  };
  // Enter at the last slot when it is free or worse, then move up past
  // every free or worse slot. Ties never move: the earlier pair stays first.
  // NaN values are not candidates.
  Value enters = arith::OrIOp::create(
      b, loc, isFree(last),
      better(value, memref::LoadOp::create(b, loc, values, last)));
  if (isa<FloatType>(value.getType()))
    enters = arith::AndIOp::create(
        b, loc, enters,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ORD, value,
                              value));
  auto ifEnters = scf::IfOp::create(b, loc, enters, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifEnters.thenBlock());
  memref::StoreOp::create(b, loc, value, values, last);
  memref::StoreOp::create(b, loc, castIndex(i, coordType), rows, last);
  memref::StoreOp::create(b, loc, castIndex(j, coordType), cols, last);
  auto bubble = scf::ForOp::create(b, loc, constantIndex(0), last,
                                   constantIndex(1));
  b.setInsertionPointToStart(bubble.getBody());
  Value slot =
      arith::SubIOp::create(b, loc, last, bubble.getInductionVar());
  Value above = arith::SubIOp::create(b, loc, slot, constantIndex(1));
  Value current = memref::LoadOp::create(b, loc, values, slot);
  Value previous = memref::LoadOp::create(b, loc, values, above);
  Value moves = arith::OrIOp::create(b, loc, isFree(above),
                                     better(current, previous));
  auto ifMoves = scf::IfOp::create(b, loc, moves, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifMoves.thenBlock());
  for (Value array : {values, rows, cols}) {
    Value x = memref::LoadOp::create(b, loc, array, slot);
    Value y = memref::LoadOp::create(b, loc, array, above);
    memref::StoreOp::create(b, loc, y, array, slot);
    memref::StoreOp::create(b, loc, x, array, above);
  }
}

void TaskLowering::store(Value value, Value acc, Value i, Value j,
                         ValueRange spatial) {
  auto guarded = [&](llvm::function_ref<void()> emit) {
    if (task.getPredicate().empty())
      return emit();
    SmallVector<Value> arguments = {value, acc, i, j};
    llvm::append_range(arguments, spatial);
    Value holds = inlineRegion(task.getPredicate(), arguments);
    auto ifHolds = scf::IfOp::create(b, loc, holds, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifHolds.thenBlock());
    emit();
  };
  ValueRange outputs = task.getOutputs();
  switch (task.getOutput()) {
  case OutputKind::dense: {
    SmallVector<Value, 2> at = getDenseOutputIndices(task, i, j);
    if (task.getUpdate())
      value = buildAccumulation(
          b, loc, task, memref::LoadOp::create(b, loc, outputs[0], at), value);
    memref::StoreOp::create(b, loc, value, outputs[0], at);
    return;
  }
  case OutputKind::aggregate: {
    // Without column keys, the group's column is j.
    Value row = memref::LoadOp::create(b, loc, task.getKeys()[0], i);
    Value col = task.getKeys().size() == 2
                    ? memref::LoadOp::create(b, loc, task.getKeys()[1], j)
                    : j;
    SmallVector<Value> group = {castIndex(row, b.getIndexType()),
                                castIndex(col, b.getIndexType())};
    Value old = memref::LoadOp::create(b, loc, outputs[0], group);
    memref::StoreOp::create(
        b, loc, combine(task.getAggregateCombiner(), old, value), outputs[0],
        group);
    return;
  }
  case OutputKind::select:
    return guarded([&] { storeSelect(value, i, j); });
  case OutputKind::distinct:
    return guarded([&] { storeDistinct(value); });
  case OutputKind::top_k:
    return guarded([&] { storeTopK(value, i, j); });
  case OutputKind::reduce:
    llvm_unreachable("a reduce output combines along the column loop");
  case OutputKind::per_key:
    llvm_unreachable("a per_key output combines along the reduction loop");
  }
}

void TaskLowering::lower() {
  b.setInsertionPoint(task);
  for (TaskOp::Axis axis : {TaskOp::I, TaskOp::J, TaskOp::K})
    extents[axis] = readExtent(axis);
  initializeOutputs();
  Value zero = constantIndex(0), one = constantIndex(1);
  auto rows = scf::ForOp::create(b, loc, zero, extents[TaskOp::I], one);
  b.setInsertionPointToStart(rows.getBody());
  // A reduce output combines the row's values along the column loop, in
  // column order, from the combiner's identity.
  bool reduceRows = task.getOutput() == OutputKind::reduce;
  Type valueType = task.getValueType();
  SmallVector<Value> rowInit;
  if (reduceRows)
    rowInit.push_back(arith::ConstantOp::create(
        b, loc,
        getCombinerIdentity(task.getAggregateCombiner(), valueType)));
  auto cols = scf::ForOp::create(b, loc, zero, extents[TaskOp::J], one,
                                 rowInit);
  b.setInsertionPointToStart(cols.getBody());
  Value i = rows.getInductionVar(), j = cols.getInductionVar();

  SmallVector<Value> spatial;
  for (unsigned index : task.spatialOnlyInputs())
    spatial.push_back(loadInput(index, i, j, Value()));
  SmallVector<Value> pair = {i, j};
  llvm::append_range(pair, spatial);

  scf::IfOp ifJoined;
  if (!task.getWhen().empty()) {
    Value joined = inlineRegion(task.getWhen(), pair);
    ifJoined = scf::IfOp::create(b, loc, reduceRows ? TypeRange(valueType)
                                                    : TypeRange(),
                                 joined, /*withElseRegion=*/reduceRows);
    b.setInsertionPointToStart(ifJoined.thenBlock());
  }
  if (task.getOutput() == OutputKind::per_key) {
    reducePerKey(i, j, spatial);
    task.erase();
    return;
  }
  Value acc = reduce(i, j, spatial);
  Value value = acc;
  if (!task.getProject().empty()) {
    SmallVector<Value> arguments = {acc};
    llvm::append_range(arguments, pair);
    value = inlineRegion(task.getProject(), arguments);
  }
  if (!reduceRows) {
    store(value, acc, i, j, spatial);
    task.erase();
    return;
  }
  Value row = cols.getRegionIterArg(0);
  Value combined = combine(task.getAggregateCombiner(), row, value);
  if (ifJoined) {
    // A pair that `when` rejects leaves the row's value as it is.
    scf::YieldOp::create(b, loc, combined);
    b.setInsertionPointToStart(ifJoined.elseBlock());
    scf::YieldOp::create(b, loc, row);
    b.setInsertionPointAfter(ifJoined);
    combined = ifJoined.getResult(0);
  }
  scf::YieldOp::create(b, loc, combined);
  b.setInsertionPointAfter(cols);
  Value reduced = cols.getResult(0);
  if (!task.getFinalize().empty())
    reduced = inlineRegion(task.getFinalize(), {reduced, i});
  // (S as [M, 1]: column 0.)
  SmallVector<Value, 2> at = {i};
  if (cast<MemRefType>(task.getOutputs()[0].getType()).getRank() == 2)
    at.push_back(constantIndex(0));
  memref::StoreOp::create(b, loc, reduced, task.getOutputs()[0], at);
  task.erase();
}

void mlir::kge::lowerTaskToLoops(OpBuilder &builder, TaskOp task) {
  OpBuilder::InsertionGuard guard(builder);
  TaskLowering(builder, task).lower();
}

/// Stores `value` into every element of `memref` (loops over its
/// dimensions).
static void fillMemref(OpBuilder &b, Location loc, Value memref,
                       TypedAttr value) {
  Value element = arith::ConstantOp::create(b, loc, value);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  int64_t rank = cast<MemRefType>(memref.getType()).getRank();
  SmallVector<Value> at;
  OpBuilder::InsertionGuard guard(b);
  for (int64_t d = 0; d < rank; ++d) {
    Value extent = memref::DimOp::create(b, loc, memref, d);
    auto loop = scf::ForOp::create(b, loc, zero, extent, one);
    at.push_back(loop.getInductionVar());
    b.setInsertionPointToStart(loop.getBody());
  }
  memref::StoreOp::create(b, loc, element, memref, at);
}

namespace {
struct ConvertTileIteratorToSCFPass
    : kge::impl::ConvertTileIteratorToSCFBase<ConvertTileIteratorToSCFPass> {
  void runOnOperation() override {
    OpBuilder builder(&getContext());
    // Results start at their first combination's identity (the GPU's
    // launch plan clears them the same way).
    getOperation()->walk([&](func::FuncOp func) {
      if (!isTileFunction(func))
        return;
      builder.setInsertionPointToStart(&func.getBody().front());
      for (const ResultStart &start : getResultStarts(func))
        fillMemref(builder, func.getLoc(), func.getArgument(start.arg),
                   start.value);
    });
    SmallVector<TaskOp> tasks;
    getOperation()->walk([&](TaskOp task) { tasks.push_back(task); });
    for (TaskOp task : tasks)
      kge::lowerTaskToLoops(builder, task);
  }
};
} // namespace
