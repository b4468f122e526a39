//===- TileIteratorOps.cpp - tile operations ------------------------------===//
//
// Verification of `tile.task`: the three axes and GAMUT's operand kinds,
// the accumulator, the regions' signatures and the operands of each output
// operator.
//
//===----------------------------------------------------------------------===//

#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"

#include <limits>
#include <set>

using namespace mlir;
using namespace mlir::tile;

#define GET_OP_CLASSES
#include "Dialect/TileIterator/IR/TileIteratorOps.cpp.inc"

static constexpr const char *kAxisNames[] = {"i", "j", "k"};

/// Largest extent tile arithmetic handles (32-bit signed indices).
static constexpr int64_t kMaxExtent = std::numeric_limits<int32_t>::max();

TypedAttr mlir::tile::getCombinerIdentity(Combiner combiner, Type type) {
  if (auto floatType = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
    switch (combiner) {
    case Combiner::add:
      return FloatAttr::get(type, 0.0);
    case Combiner::mul:
      return FloatAttr::get(type, 1.0);
    case Combiner::max:
      return FloatAttr::get(type, APFloat::getInf(semantics, /*Negative=*/true));
    case Combiner::min:
      return FloatAttr::get(type, APFloat::getInf(semantics, false));
    case Combiner::custom:
      return nullptr;
    }
  }
  if (auto intType = dyn_cast<IntegerType>(type)) {
    unsigned width = intType.getWidth();
    switch (combiner) {
    case Combiner::add:
      return IntegerAttr::get(type, APInt(width, 0));
    case Combiner::mul:
      return IntegerAttr::get(type, APInt(width, 1));
    case Combiner::max:
      return IntegerAttr::get(type, APInt::getSignedMinValue(width));
    case Combiner::min:
      return IntegerAttr::get(type, APInt::getSignedMaxValue(width));
    case Combiner::custom:
      return nullptr;
    }
  }
  return nullptr;
}

Value mlir::tile::buildCombination(OpBuilder &b, Location loc,
                                   Combiner combiner, Value lhs, Value rhs,
                                   arith::FastMathFlags fastMath) {
  bool isFloat = isa<FloatType>(lhs.getType());
  switch (combiner) {
  case Combiner::add:
    return isFloat
               ? arith::AddFOp::create(b, loc, lhs, rhs, fastMath).getResult()
               : arith::AddIOp::create(b, loc, lhs, rhs).getResult();
  case Combiner::mul:
    return isFloat
               ? arith::MulFOp::create(b, loc, lhs, rhs, fastMath).getResult()
               : arith::MulIOp::create(b, loc, lhs, rhs).getResult();
  case Combiner::max:
    return isFloat ? arith::MaximumFOp::create(b, loc, lhs, rhs).getResult()
                   : arith::MaxSIOp::create(b, loc, lhs, rhs).getResult();
  case Combiner::min:
    return isFloat ? arith::MinimumFOp::create(b, loc, lhs, rhs).getResult()
                   : arith::MinSIOp::create(b, loc, lhs, rhs).getResult();
  case Combiner::custom:
    break;
  }
  llvm_unreachable("custom combinations are inlined from their region");
}

Value mlir::tile::inlineTaskRegion(OpBuilder &b, Region &region,
                                   ValueRange arguments,
                                   llvm::function_ref<void(Operation *)> onClone) {
  IRMapping mapping;
  Block &block = region.front();
  mapping.map(block.getArguments(), arguments);
  for (Operation &op : block.without_terminator()) {
    Operation *clone = b.clone(op, mapping);
    if (onClone)
      onClone(clone);
  }
  return mapping.lookupOrDefault(
      cast<YieldOp>(block.getTerminator()).getValue());
}

Value mlir::tile::buildAccumulation(OpBuilder &b, Location loc, TaskOp task,
                                    Value lhs, Value rhs,
                                    arith::FastMathFlags fastMath,
                                    llvm::function_ref<void(Operation *)> onClone) {
  if (task.getAccumulate() == Combiner::custom)
    return inlineTaskRegion(b, task.getCombine(), {lhs, rhs}, onClone);
  return buildCombination(b, loc, task.getAccumulate(), lhs, rhs, fastMath);
}

SmallVector<Value, 2> mlir::tile::getDenseOutputIndices(TaskOp task, Value i,
                                                        Value j) {
  AffineMap map = task.getDenseOutputMap();
  Value axes[2] = {i, j};
  return {axes[map.getDimPosition(0)], axes[map.getDimPosition(1)]};
}

//===----------------------------------------------------------------------===//
// TaskOp queries
//===----------------------------------------------------------------------===//

static AffineMap mapOf(TaskOp op, unsigned index) {
  return cast<AffineMapAttr>(op.getIndexingMaps()[index]).getValue();
}

bool TaskOp::inputUses(unsigned index, Axis axis) {
  return mapOf(*this, index).isFunctionOfDim(axis);
}

SmallVector<unsigned> TaskOp::spatialOnlyInputs() {
  SmallVector<unsigned> result;
  for (unsigned i = 0, e = getInputs().size(); i < e; ++i)
    if (!inputUses(i, K))
      result.push_back(i);
  return result;
}

Type TaskOp::getAccumulatorType() {
  return getInner().front().getTerminator()->getOperand(0).getType();
}

Type TaskOp::getValueType() {
  if (getProject().empty())
    return getAccumulatorType();
  return getProject().front().getTerminator()->getOperand(0).getType();
}

AffineMap TaskOp::getDenseOutputMap() {
  if (auto map = getOutputMapAttr())
    return map.getValue();
  MLIRContext *context = getContext();
  return AffineMap::get(3, 0,
                        {getAffineDimExpr(I, context),
                         getAffineDimExpr(J, context)},
                        context);
}

Combiner TaskOp::getAggregateCombiner() {
  return getAggregate().value_or(Combiner::add);
}

Value TaskOp::getGather(unsigned input, unsigned dim) {
  ArrayAttr gathered = getGatheredAttr();
  if (!gathered)
    return Value();
  for (auto [n, attr] : llvm::enumerate(gathered)) {
    auto pair = dyn_cast<ArrayAttr>(attr);
    if (!pair || pair.size() != 2 || n >= getGathers().size())
      continue;
    auto in = dyn_cast<IntegerAttr>(pair[0]), d = dyn_cast<IntegerAttr>(pair[1]);
    if (in && d && in.getInt() == input && d.getInt() == dim)
      return getGathers()[n];
  }
  return Value();
}

std::pair<Value, unsigned> TaskOp::getExtentSource(Axis axis) {
  for (unsigned i = 0, e = getInputs().size(); i < e; ++i) {
    AffineMap map = mapOf(*this, i);
    for (unsigned d = 0; d < map.getNumResults(); ++d)
      if (map.getDimPosition(d) == axis) {
        if (Value gather = getGather(i, d))
          return {gather, 0};
        return {getInputs()[i], d};
      }
  }
  if (getOutput() == OutputKind::aggregate && axis != K &&
      getKeys().size() == 2)
    return {getKeys()[axis], 0};
  // Row keys alone: the groups' columns are j.
  if (getOutput() == OutputKind::aggregate && getKeys().size() == 1 &&
      getOutputs().size() == 1)
    return axis == I ? std::pair<Value, unsigned>{getKeys()[0], 0}
                     : std::pair<Value, unsigned>{getOutputs()[0], 1};
  if (getOutput() == OutputKind::per_key && getOutputs().size() == 1) {
    if (axis == K && getKeys().size() == 1)
      return {getKeys()[0], 0};
    if (axis != K)
      return {getOutputs()[0], axis + 1};
  }
  if (getOutput() == OutputKind::reduce && axis == I &&
      getOutputs().size() == 1)
    return {getOutputs()[0], 0};
  if (getOutput() == OutputKind::dense && axis != K &&
      getOutputs().size() == 1) {
    AffineMap map = getDenseOutputMap();
    for (unsigned d = 0; d < map.getNumResults(); ++d)
      if (map.getDimPosition(d) == axis)
        return {getOutputs()[0], d};
  }
  return {Value(), 0};
}

void TaskOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &operand : getInputsMutable())
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
  for (OpOperand &operand : getKeysMutable())
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
  for (OpOperand &operand : getGathersMutable())
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
  for (OpOperand &operand : getOutputsMutable()) {
    // An aggregate combines into its output, and join leaves rejected
    // pairs of a dense output as they were.
    if (getOutput() == OutputKind::aggregate ||
        getOutput() == OutputKind::per_key || getUpdate())
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
    effects.emplace_back(MemoryEffects::Write::get(), &operand,
                         SideEffects::DefaultResource::get());
  }
}

//===----------------------------------------------------------------------===//
// TaskOp verification
//===----------------------------------------------------------------------===//

/// f16, bf16, f32, f64 and signless integers of 8 to 64 bits: the element
/// types every lowering handles (no formats without infinities).
static bool isScalarElement(Type type) {
  if (type.isF16() || type.isBF16() || type.isF32() || type.isF64())
    return true;
  auto intType = dyn_cast<IntegerType>(type);
  return intType && intType.isSignless() &&
         llvm::is_contained({8u, 16u, 32u, 64u}, intType.getWidth());
}

static bool isIndexElement(Type type) {
  auto intType = dyn_cast<IntegerType>(type);
  return intType && (intType.getWidth() == 32 || intType.getWidth() == 64);
}

namespace {
/// Static extents of the three axes, as found so far, and where each came
/// from (for diagnostics).
struct Extents {
  int64_t size[3] = {ShapedType::kDynamic, ShapedType::kDynamic,
                     ShapedType::kDynamic};
  std::string origin[3];

  LogicalResult record(Operation *op, unsigned axis, int64_t dim,
                       const std::string &what) {
    if (ShapedType::isDynamic(dim))
      return success();
    if (dim > kMaxExtent)
      return op->emitOpError()
             << "axis " << kAxisNames[axis] << " has extent " << dim << " ("
             << what << "), which overflows 32-bit tile arithmetic (at most "
             << kMaxExtent << ")";
    if (ShapedType::isDynamic(size[axis])) {
      size[axis] = dim;
      origin[axis] = what;
      return success();
    }
    if (size[axis] != dim)
      return op->emitOpError()
             << "axis " << kAxisNames[axis] << " has extent " << dim << " in "
             << what << " but " << size[axis] << " in " << origin[axis];
    return success();
  }
};
} // namespace

LogicalResult TaskOp::verify() {
  Operation *op = getOperation();
  ArrayAttr maps = getIndexingMaps();
  if (maps.size() != getInputs().size())
    return emitOpError() << "has " << getInputs().size() << " inputs but "
                         << maps.size() << " indexing maps";
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";

  // Gathered dimensions: one [input, dimension] pair per gather, a spatial
  // axis read through an index array of that axis's extent.
  ArrayAttr gathered = getGatheredAttr();
  size_t numGathered = gathered ? gathered.size() : 0;
  if (numGathered != getGathers().size())
    return emitOpError() << "has " << getGathers().size()
                         << " gathers but 'gathered' names " << numGathered
                         << " [input, dimension] pairs";
  std::set<std::pair<int64_t, int64_t>> gatheredSlots;
  for (auto [n, attr] : llvm::enumerate(gathered ? gathered.getValue()
                                                 : ArrayRef<Attribute>())) {
    auto pair = dyn_cast<ArrayAttr>(attr);
    IntegerAttr in, dim;
    if (pair && pair.size() == 2) {
      in = dyn_cast<IntegerAttr>(pair[0]);
      dim = dyn_cast<IntegerAttr>(pair[1]);
    }
    if (!in || !dim)
      return emitOpError() << "'gathered' entry #" << n
                           << " must be an [input, dimension] pair of integers";
    if (in.getInt() < 0 || in.getInt() >= static_cast<int64_t>(maps.size()))
      return emitOpError() << "gather #" << n << " names input #"
                           << in.getInt() << " but the task has "
                           << maps.size() << " inputs";
    AffineMap map = mapOf(*this, in.getInt());
    if (dim.getInt() < 0 ||
        dim.getInt() >= static_cast<int64_t>(map.getNumResults()))
      return emitOpError() << "gather #" << n << " names dimension "
                           << dim.getInt() << " of input #" << in.getInt()
                           << ", which has " << map.getNumResults();
    if (map.getNumDims() == 3 && map.isProjectedPermutation() &&
        map.getDimPosition(dim.getInt()) == K &&
        getOutput() != OutputKind::per_key)
      return emitOpError() << "gather #" << n << " indexes the reduction axis k "
                              "(dimension "
                           << dim.getInt() << " of input #" << in.getInt()
                           << "); only tasks with output per_key gather k, "
                              "others the spatial axes i and j";
    if (!gatheredSlots.insert({in.getInt(), dim.getInt()}).second)
      return emitOpError() << "dimension " << dim.getInt() << " of input #"
                           << in.getInt() << " is gathered twice";
    auto type = cast<MemRefType>(getGathers()[n].getType());
    if (type.getRank() != 1 || !isIndexElement(type.getElementType()))
      return emitOpError() << "gather #" << n
                           << " must be a rank-1 array of i32 or i64 indices, "
                              "got "
                           << type;
  }

  // Axes and operand kinds.
  Extents extents;
  bool axisSeen[3] = {false, false, false};
  for (unsigned index = 0; index < maps.size(); ++index) {
    AffineMap map = mapOf(*this, index);
    auto type = cast<MemRefType>(getInputs()[index].getType());
    std::string what = "input #" + std::to_string(index);
    if (map.getNumDims() != 3 || map.getNumSymbols() != 0)
      return emitOpError()
             << "indexing map of " << what << " has " << map.getNumDims()
             << " dimensions and " << map.getNumSymbols()
             << " symbols; a matmul-like task has exactly three axes (i, j, "
                "k) and no symbols";
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false) ||
        map.getNumResults() == 0)
      return emitOpError() << "indexing map of " << what << " (" << AffineMapAttr::get(map)
                           << ") must select distinct axes";
    // An input may carry trailing unit dimensions past its axes, read at
    // 0 (an edge's score as [E, 1], a matrix per type of one column as
    // [T, K, 1]; such a task runs on CUDA cores).
    bool unitTail = type.getRank() > map.getNumResults() &&
                    llvm::all_of(
                        type.getShape().drop_front(map.getNumResults()),
                        [](int64_t size) { return size == 1; });
    if (type.getRank() != map.getNumResults() && !unitTail)
      return emitOpError() << what << " has rank " << type.getRank()
                           << " but its indexing map selects "
                           << map.getNumResults()
                           << " axes (dimensions past them must have size 1)";
    bool anyGathered = false;
    for (unsigned d = 0; d < map.getNumResults(); ++d)
      anyGathered |= isGathered(index, d);
    if (map.isFunctionOfDim(I) && map.isFunctionOfDim(J) && !anyGathered)
      return emitOpError()
             << what
             << " is indexed by both spatial axes; an input of a matmul-like "
                "task has at most one spatial axis (only outputs are indexed "
                "by (i, j)) unless one of them is gathered";
    if (!isScalarElement(type.getElementType()))
      return emitOpError() << what << " has element type "
                           << type.getElementType()
                           << "; inputs hold f16, bf16, f32, f64 or i8 to "
                              "i64";
    for (unsigned d = 0; d < map.getNumResults(); ++d) {
      unsigned axis = map.getDimPosition(d);
      axisSeen[axis] = true;
      // A gathered dimension is a table; the axis runs over the gather.
      if (Value gather = getGather(index, d)) {
        if (failed(extents.record(
                op, axis, cast<MemRefType>(gather.getType()).getDimSize(0),
                "the gather of " + what + " dimension " + std::to_string(d))))
          return failure();
        continue;
      }
      if (failed(extents.record(op, axis, type.getDimSize(d),
                                what + " dimension " + std::to_string(d))))
        return failure();
    }
  }
  unsigned perKey = 0;
  for (unsigned index = 0; index < maps.size(); ++index)
    if (inputUses(index, I) && inputUses(index, J) && inputUses(index, K))
      ++perKey;
  if (perKey > 1)
    return emitOpError() << "has " << perKey
                         << " inputs indexed by i, j and k (matrices per "
                            "key); a task multiplies by at most one";
  if (!axisSeen[K])
    return emitOpError()
           << "no input is indexed by the reduction axis k, so its extent is "
              "unknown";

  // Accumulator.
  bool custom = getAccumulate() == Combiner::custom;
  if (custom) {
    if (getCombine().empty())
      return emitOpError() << "accumulate custom needs a combine region";
    if (!getIdentityAttr())
      return emitOpError()
             << "accumulate custom needs an identity: the accumulator's "
                "neutral element";
    if (!getAssociative())
      return emitOpError()
             << "accumulate custom needs the 'associative' declaration: tiling "
                "the reduction reorders the combinations";
  } else {
    if (!getCombine().empty())
      return emitOpError() << "a combine region needs accumulate custom, not "
                           << stringifyCombiner(getAccumulate());
    if (getIdentityAttr())
      return emitOpError() << "accumulate "
                           << stringifyCombiner(getAccumulate())
                           << " has its own identity; 'identity' is for "
                              "accumulate custom";
    if (getAssociative())
      return emitOpError() << "'associative' is for accumulate custom";
  }

  // Output operator attributes.
  OutputKind kind = getOutput();
  if (getAggregate() && kind != OutputKind::aggregate &&
      kind != OutputKind::reduce)
    return emitOpError() << "'aggregate' is for outputs aggregate and reduce";
  if (!getFinalize().empty() && kind != OutputKind::reduce)
    return emitOpError() << "a finalize region is for output reduce";
  if ((getK() || getSmallest()) && kind != OutputKind::top_k)
    return emitOpError() << "'k' and 'smallest' are for output top_k";
  if (getOutputMapAttr() && kind != OutputKind::dense)
    return emitOpError() << "'output_map' is for output dense";
  if (getUpdate() && kind != OutputKind::dense)
    return emitOpError() << "'update' is for output dense";
  if (!getKeys().empty() && kind != OutputKind::aggregate &&
      kind != OutputKind::per_key)
    return emitOpError() << "keys are for outputs aggregate and per_key";
  if (!getPredicate().empty() && kind != OutputKind::select &&
      kind != OutputKind::distinct && kind != OutputKind::top_k)
    return emitOpError() << "a predicate region is for outputs select, "
                            "distinct and top_k";
  if (kind == OutputKind::select && getPredicate().empty())
    return emitOpError() << "output select needs a predicate region";

  auto outputType = [&](unsigned n) {
    return cast<MemRefType>(getOutputs()[n].getType());
  };
  auto expectOutputs = [&](unsigned count, StringRef names) -> LogicalResult {
    if (getOutputs().size() != count)
      return emitOpError() << "output " << stringifyOutputKind(kind)
                           << " takes " << count << " outputs (" << names
                           << "), got " << getOutputs().size();
    return success();
  };
  auto expectRank1 = [&](unsigned n, StringRef name) -> LogicalResult {
    if (outputType(n).getRank() != 1)
      return emitOpError() << "output '" << name << "' must have rank 1, got "
                           << outputType(n);
    return success();
  };
  auto expectIndexOutput = [&](unsigned n, StringRef name) -> LogicalResult {
    if (failed(expectRank1(n, name)))
      return failure();
    if (!isIndexElement(outputType(n).getElementType()))
      return emitOpError() << "output '" << name
                           << "' must hold i32 or i64 coordinates, got "
                           << outputType(n);
    return success();
  };
  auto expectCount = [&](unsigned n) -> LogicalResult {
    MemRefType type = outputType(n);
    if (type.getRank() != 1 || type.getDimSize(0) != 1 ||
        !type.getElementType().isInteger(64))
      return emitOpError() << "output 'count' must be memref<1xi64>, got "
                           << type;
    return success();
  };

  switch (kind) {
  case OutputKind::dense: {
    if (failed(expectOutputs(1, "C")))
      return failure();
    AffineMap map = getDenseOutputMap();
    if (map.getNumDims() != 3 || map.getNumSymbols() != 0 ||
        map.getNumResults() != 2 || !map.isProjectedPermutation() ||
        map.isFunctionOfDim(K))
      return emitOpError() << "the dense output must be indexed by the two "
                              "spatial axes, (i, j) or (j, i); got "
                           << AffineMapAttr::get(map);
    MemRefType type = outputType(0);
    if (type.getRank() != 2)
      return emitOpError() << "the dense output must have rank 2, got "
                           << type;
    for (unsigned d = 0; d < 2; ++d) {
      unsigned axis = map.getDimPosition(d);
      axisSeen[axis] = true;
      if (failed(extents.record(op, axis, type.getDimSize(d),
                                "output dimension " + std::to_string(d))))
        return failure();
    }
    break;
  }
  case OutputKind::aggregate: {
    if (getKeys().size() != 1 && getKeys().size() != 2)
      return emitOpError() << "output aggregate takes row keys indexed by i "
                              "and optionally column keys indexed by j, got "
                           << getKeys().size() << " key arrays";
    if (failed(expectOutputs(1, "C")))
      return failure();
    if (outputType(0).getRank() != 2)
      return emitOpError() << "the aggregate output must have rank 2, got "
                           << outputType(0);
    // Row keys alone: column j of the groups is j.
    if (getKeys().size() == 1) {
      axisSeen[J] = true;
      if (failed(extents.record(op, J, outputType(0).getDimSize(1),
                                "the aggregate output's columns")))
        return failure();
    }
    for (unsigned axis = 0; axis < getKeys().size(); ++axis) {
      auto type = cast<MemRefType>(getKeys()[axis].getType());
      StringRef name = axis == I ? "row keys" : "column keys";
      if (type.getRank() != 1 || !isIndexElement(type.getElementType()))
        return emitOpError() << "the " << name
                             << " must be a rank-1 memref of i32 or i64, got "
                             << type;
      axisSeen[axis] = true;
      if (failed(extents.record(op, axis, type.getDimSize(0),
                                std::string("the ") + name.str())))
        return failure();
    }
    Combiner combiner = getAggregateCombiner();
    if (combiner != Combiner::add && combiner != Combiner::max &&
        combiner != Combiner::min)
      return emitOpError() << "aggregate " << stringifyCombiner(combiner)
                           << " is not supported: groups combine with add, "
                              "max or min";
    break;
  }
  case OutputKind::reduce: {
    // S is [M] or [M, 1] (a per-row scalar as a column).
    if (failed(expectOutputs(1, "S")))
      return failure();
    if (MemRefType type = outputType(0);
        type.getRank() == 2 ? type.getDimSize(1) != 1
                            : failed(expectRank1(0, "S")))
      return type.getRank() == 2
                 ? emitOpError() << "output 'S' must be [M] or [M, 1], got "
                                 << type
                 : failure();
    axisSeen[I] = true;
    if (failed(extents.record(op, I, outputType(0).getDimSize(0),
                              "the reduce output")))
      return failure();
    Combiner combiner = getAggregateCombiner();
    if (combiner != Combiner::add && combiner != Combiner::max &&
        combiner != Combiner::min)
      return emitOpError() << "reduce " << stringifyCombiner(combiner)
                           << " is not supported: a row's values combine "
                              "with add, max or min";
    break;
  }
  case OutputKind::per_key: {
    if (getKeys().size() != 1)
      return emitOpError() << "output per_key takes one key array indexed by "
                              "k, got "
                           << getKeys().size() << " key arrays";
    if (failed(expectOutputs(1, "C")))
      return failure();
    MemRefType type = outputType(0);
    if (type.getRank() != 3)
      return emitOpError() << "the per_key output must have rank 3 (a matrix "
                              "per key), got "
                           << type;
    auto keys = cast<MemRefType>(getKeys()[0].getType());
    if (keys.getRank() != 1 || !isIndexElement(keys.getElementType()))
      return emitOpError() << "the keys must be a rank-1 memref of i32 or "
                              "i64, got "
                           << keys;
    if (failed(extents.record(op, K, keys.getDimSize(0), "the keys")))
      return failure();
    for (unsigned axis : {I, J}) {
      axisSeen[axis] = true;
      if (failed(extents.record(op, axis, type.getDimSize(axis + 1),
                                "output dimension " +
                                    std::to_string(axis + 1))))
        return failure();
    }
    if (getAccumulate() != Combiner::add && getAccumulate() != Combiner::max &&
        getAccumulate() != Combiner::min)
      return emitOpError() << "output per_key combines into its matrices with "
                              "the accumulator: accumulate add, max or min, "
                              "got "
                           << stringifyCombiner(getAccumulate());
    if (!getProject().empty() || !getWhen().empty())
      return emitOpError() << "output per_key takes no project or when "
                              "region: a key's matrix combines partial "
                              "reductions";
    if (getPerKeyInput())
      return emitOpError() << "output per_key does not take an input with a "
                              "matrix per row's key";
    break;
  }
  case OutputKind::select:
    if (failed(expectOutputs(4, "rows, cols, values, count")) ||
        failed(expectIndexOutput(0, "rows")) ||
        failed(expectIndexOutput(1, "cols")) ||
        failed(expectRank1(2, "values")) || failed(expectCount(3)))
      return failure();
    if (outputType(0).getElementType() != outputType(1).getElementType())
      return emitOpError() << "outputs 'rows' and 'cols' must share one "
                              "element type";
    for (unsigned n : {1u, 2u})
      if (outputType(n).getDimSize(0) != outputType(0).getDimSize(0))
        return emitOpError()
               << "outputs 'rows', 'cols' and 'values' must share one "
                  "capacity";
    break;
  case OutputKind::top_k: {
    if (failed(expectOutputs(3, "values, rows, cols")) ||
        failed(expectRank1(0, "values")) ||
        failed(expectIndexOutput(1, "rows")) ||
        failed(expectIndexOutput(2, "cols")))
      return failure();
    if (!getK())
      return emitOpError() << "output top_k needs 'k'";
    int64_t k = *getK();
    if (k < 1 || k > kMaxExtent)
      return emitOpError() << "'k' must be in [1, " << kMaxExtent << "], got "
                           << k;
    for (unsigned n = 0; n < 3; ++n)
      if (outputType(n).getDimSize(0) != k)
        return emitOpError() << "the top_k outputs must have static length "
                             << k << ", got " << outputType(n);
    if (outputType(1).getElementType() != outputType(2).getElementType())
      return emitOpError() << "outputs 'rows' and 'cols' must share one "
                              "element type";
    break;
  }
  case OutputKind::distinct:
    if (failed(expectOutputs(2, "values, count")) ||
        failed(expectRank1(0, "values")) || failed(expectCount(1)))
      return failure();
    break;
  }
  for (unsigned axis : {I, J})
    if (!axisSeen[axis])
      return emitOpError() << "no operand is indexed by the spatial axis "
                           << kAxisNames[axis] << ", so its extent is unknown";
  return success();
}

/// Checks that `region` has arguments of `types` and yields one value; on
/// success sets `yielded` to its type.
static LogicalResult verifyRegion(TaskOp op, Region &region, StringRef name,
                                  ArrayRef<Type> types, Type &yielded) {
  if (!region.hasOneBlock())
    return op.emitOpError() << "region '" << name << "' must have one block";
  Block &block = region.front();
  if (block.getNumArguments() != types.size())
    return op.emitOpError()
           << "region '" << name << "' takes " << types.size()
           << " arguments, got " << block.getNumArguments();
  for (auto [n, pair] : llvm::enumerate(llvm::zip(block.getArguments(), types)))
    if (std::get<0>(pair).getType() != std::get<1>(pair))
      return op.emitOpError()
             << "argument #" << n << " of region '" << name << "' must be "
             << std::get<1>(pair) << ", got " << std::get<0>(pair).getType();
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return op.emitOpError() << "region '" << name
                            << "' must end with tile.yield";
  if (!yield.getValue())
    return op.emitOpError() << "region '" << name
                            << "' must yield a value";
  yielded = yield.getValue().getType();
  return success();
}

LogicalResult TaskOp::verifyRegions() {
  MLIRContext *context = getContext();
  Type indexType = IndexType::get(context);
  Type i1 = IntegerType::get(context, 1);

  SmallVector<Type> elementTypes;
  for (Value input : getInputs())
    elementTypes.push_back(cast<MemRefType>(input.getType()).getElementType());
  SmallVector<Type> spatialTypes;
  for (unsigned index : spatialOnlyInputs())
    spatialTypes.push_back(elementTypes[index]);

  Type acc;
  if (failed(verifyRegion(*this, getInner(), "inner", elementTypes, acc)))
    return failure();
  if (!isScalarElement(acc))
    return emitOpError() << "the accumulator type " << acc
                         << " must be f16, bf16, f32, f64 or i8 to i64";
  if (TypedAttr identity = getIdentityAttr())
    if (identity.getType() != acc)
      return emitOpError() << "identity " << identity
                           << " does not have the accumulator type " << acc;
  if (!getCombine().empty()) {
    Type combined;
    if (failed(verifyRegion(*this, getCombine(), "combine", {acc, acc},
                            combined)))
      return failure();
    if (combined != acc)
      return emitOpError() << "region 'combine' must yield the accumulator "
                              "type "
                           << acc << ", got " << combined;
  }

  SmallVector<Type> pairTypes = {indexType, indexType};
  llvm::append_range(pairTypes, spatialTypes);
  if (!getWhen().empty()) {
    Type yielded;
    if (failed(verifyRegion(*this, getWhen(), "when", pairTypes, yielded)))
      return failure();
    if (yielded != i1)
      return emitOpError() << "region 'when' must yield i1, got " << yielded;
  }

  Type value = acc;
  if (!getProject().empty()) {
    SmallVector<Type> types = {acc};
    llvm::append_range(types, pairTypes);
    if (failed(verifyRegion(*this, getProject(), "project", types, value)))
      return failure();
  }
  if (!getPredicate().empty()) {
    SmallVector<Type> types = {value, acc};
    llvm::append_range(types, pairTypes);
    Type yielded;
    if (failed(verifyRegion(*this, getPredicate(), "predicate", types,
                            yielded)))
      return failure();
    if (yielded != i1)
      return emitOpError() << "region 'predicate' must yield i1, got "
                           << yielded;
  }

  // A reduce output's finalization of a row.
  Type reduced = value;
  if (!getFinalize().empty() &&
      failed(verifyRegion(*this, getFinalize(), "finalize",
                          {value, indexType}, reduced)))
    return failure();

  // The output value's type against the outputs.
  OutputKind kind = getOutput();
  unsigned valuesOperand = 0;
  switch (kind) {
  case OutputKind::dense:
  case OutputKind::aggregate:
  case OutputKind::top_k:
  case OutputKind::distinct:
  case OutputKind::reduce:
  case OutputKind::per_key:
    valuesOperand = 0;
    break;
  case OutputKind::select:
    valuesOperand = 2;
    break;
  }
  if (!isScalarElement(value))
    return emitOpError() << "the output value type " << value
                         << " must be f16, bf16, f32, f64 or i8 to i64";
  Type stored =
      cast<MemRefType>(getOutputs()[valuesOperand].getType()).getElementType();
  if (stored != reduced)
    return emitOpError() << (kind == OutputKind::reduce && !getFinalize().empty()
                                 ? "the finalized value has type "
                                 : "the output value has type ")
                         << reduced << " but output #" << valuesOperand
                         << " holds " << stored;
  if (!isScalarElement(reduced))
    return emitOpError() << "the finalized value type " << reduced
                         << " must be f16, bf16, f32, f64 or i8 to i64";
  if (getUpdate() && value != acc)
    return emitOpError() << "'update' combines the output with the value by "
                            "the accumulator, so the value must have the "
                            "accumulator type "
                         << acc << ", got " << value;
  return verifySchedule();
}
