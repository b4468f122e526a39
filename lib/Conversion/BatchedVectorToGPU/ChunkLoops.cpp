//===- ChunkLoops.cpp - edge-major loops over the embedding length --------===//
//
// The code of cuKE's fused operators (Section V): per chunk of the length,
// the unique rows of repeated gathers are staged in shared memory, then
// every warp evaluates the operators of its edges on 32 * V elements per
// chunk, elementwise operations in registers, reductions accumulated across
// chunks and finished with warp shuffles.
//
//===----------------------------------------------------------------------===//

#include "StageEmitters.h"

#include "Conversion/GPUCommon/ElementaryFunctions.h"
#include "Conversion/ReductionKinds.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::kge;

Value mlir::kge::alignedLoad(OpBuilder &b, Location loc, VectorType type,
                            Value memref, ValueRange indices,
                            int64_t alignment) {
  auto load = vector::LoadOp::create(b, loc, type, memref, indices);
  load.setAlignmentAttr(b.getI64IntegerAttr(alignment));
  return load;
}

/// A vector of `type` loaded element by element from `memref` at `indices`
/// + [0, n) in the last dimension (an offset that is not a multiple of the
/// vector width: a slice at an odd position).
static Value loadElements(OpBuilder &b, Location loc, VectorType type,
                          Value memref, ValueRange indices) {
  SmallVector<Value> at(indices);
  Value loaded = arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    at.back() = arith::AddIOp::create(
        b, loc, indices.back(), arith::ConstantIndexOp::create(b, loc, i));
    Value element = memref::LoadOp::create(b, loc, memref, at);
    loaded = vector::InsertOp::create(b, loc, element, loaded, i);
  }
  return loaded;
}

void mlir::kge::alignedStore(OpBuilder &b, Location loc, Value value,
                             Value memref, ValueRange indices,
                             int64_t alignment) {
  auto store = vector::StoreOp::create(b, loc, value, memref, indices);
  store.setAlignmentAttr(b.getI64IntegerAttr(alignment));
}

//===----------------------------------------------------------------------===//
// Elementwise semantics
//===----------------------------------------------------------------------===//

/// Applies `fn` to every element of a chunk vector (or to a scalar).
static Value mapElements(OpBuilder &b, Location loc, Value value,
                         function_ref<Value(Value)> fn) {
  auto vectorType = dyn_cast<VectorType>(value.getType());
  if (!vectorType)
    return fn(value);
  Value result = value;
  for (int64_t i = 0, e = vectorType.getNumElements(); i < e; ++i) {
    Value element = vector::ExtractOp::create(b, loc, value, i);
    result = vector::InsertOp::create(b, loc, fn(element), result, i);
  }
  return result;
}

Value ChunkLoopEmitter::applyElementwise(Operation *op, ValueRange operands,
                                         bool scalarMode) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  auto one = [&](Value like) -> Value {
    Value c = k.constF32(1.0f);
    return isa<VectorType>(like.getType())
               ? vector::BroadcastOp::create(b, loc, like.getType(), c)
                     .getResult()
               : c;
  };
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](bvec::AddOp) {
        return arith::AddFOp::create(b, loc, operands[0], operands[1]);
      })
      .Case([&](bvec::SubOp) {
        return arith::SubFOp::create(b, loc, operands[0], operands[1]);
      })
      .Case([&](bvec::MulOp) {
        return arith::MulFOp::create(b, loc, operands[0], operands[1]);
      })
      .Case([&](bvec::DivOp) {
        return arith::DivFOp::create(b, loc, operands[0], operands[1]);
      })
      .Case([&](bvec::MaxOp) {
        return arith::MaximumFOp::create(b, loc, operands[0], operands[1]);
      })
      .Case([&](bvec::MinOp) {
        return arith::MinimumFOp::create(b, loc, operands[0], operands[1]);
      })
      .Case([&](bvec::NegOp) {
        return arith::NegFOp::create(b, loc, operands[0]);
      })
      .Case([&](bvec::AbsOp) {
        return math::AbsFOp::create(b, loc, operands[0]);
      })
      .Case([&](bvec::SqrtOp) {
        // llvm.sqrt is sqrt.rn: correctly rounded, like PyTorch's.
        return mapElements(b, loc, operands[0],
                           [&](Value x) -> Value { return emitSqrtRN(b, loc, x); });
      })
      .Case([&](bvec::ExpOp) {
        return mapElements(b, loc, operands[0], [&](Value x) -> Value {
          return math::ExpOp::create(b, loc, x);
        });
      })
      .Case([&](bvec::LogOp) {
        return mapElements(b, loc, operands[0], [&](Value x) -> Value {
          return math::LogOp::create(b, loc, x);
        });
      })
      .Case([&](bvec::TanhOp) {
        return mapElements(b, loc, operands[0], [&](Value x) -> Value {
          return math::TanhOp::create(b, loc, x);
        });
      })
      .Case([&](bvec::SinOp) { return sinCos(operands[0]).sin; })
      .Case([&](bvec::CosOp) { return sinCos(operands[0]).cos; })
      .Case([&](bvec::SigmoidOp) {
        Value x = operands[0];
        Value e = mapElements(b, loc, arith::NegFOp::create(b, loc, x),
                              [&](Value v) -> Value {
                                return math::ExpOp::create(b, loc, v);
                              });
        return arith::DivFOp::create(
            b, loc, one(x), arith::AddFOp::create(b, loc, one(x), e));
      })
      .Case([&](bvec::SignOp) -> Value {
        // -1, 0 or 1 (0 at zero and for NaN).
        Value x = operands[0];
        auto splatOf = [&](float v) -> Value {
          Value c = k.constF32(v);
          return isa<VectorType>(x.getType())
                     ? vector::BroadcastOp::create(b, loc, x.getType(), c)
                           .getResult()
                     : c;
        };
        Value zero = splatOf(0.0f);
        Value positive = arith::CmpFOp::create(
            b, loc, arith::CmpFPredicate::OGT, x, zero);
        Value negative = arith::CmpFOp::create(
            b, loc, arith::CmpFPredicate::OLT, x, zero);
        return arith::SelectOp::create(
            b, loc, positive, one(x),
            arith::SelectOp::create(b, loc, negative, splatOf(-1.0f), zero));
      })
      .Default([&](Operation *other) -> Value {
        llvm_unreachable("not an elementwise bvec operation");
      });
}

SinCos ChunkLoopEmitter::sinCos(Value x) {
  // The sine and the cosine of one value (RotatE's rotation) share their
  // argument reduction when both are emitted in the same block.
  auto it = sinCosOf.find(x);
  if (it != sinCosOf.end() &&
      it->second.sin.getParentBlock() == k.b.getInsertionBlock())
    return it->second;
  SinCos result;
  if (trigInRange) {
    Value outOfRange;
    result = emitSinCosInRange(k.b, k.loc, x, outOfRange);
    trigOutOfRange =
        arith::OrIOp::create(k.b, k.loc, trigOutOfRange, outOfRange);
  } else {
    result = emitSinCos(k.b, k.loc, x);
  }
  sinCosOf[x] = result;
  return result;
}

Value ChunkLoopEmitter::scalar(Value value, int64_t i) {
  if (auto constant = value.getDefiningOp<bvec::ConstantOp>())
    return k.constF32(constant.getValue().convertToFloat());
  auto it = k.scalars.find({value, i});
  assert(it != k.scalars.end() && "scalar used before its stage finished");
  return it->second;
}

//===----------------------------------------------------------------------===//
// Loads
//===----------------------------------------------------------------------===//

Value ChunkLoopEmitter::loadGlobalChunk(Value memref, ValueRange prefix,
                                        Value d0, Value valid, bool widen,
                                        int64_t offset) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Value safe = arith::SelectOp::create(b, loc, valid, d0, k.constIndex(0));
  if (offset)
    safe = arith::AddIOp::create(b, loc, safe, k.constIndex(offset));
  SmallVector<Value> indices(prefix);
  indices.push_back(safe);
  int64_t width = k.layout.vectorWidth;
  // Half-precision rows: half the bytes per load, widened in registers.
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  auto type = VectorType::get({width}, element);
  Value loaded =
      offset % width == 0
          ? alignedLoad(b, loc, type, memref, indices,
                        element.getIntOrFloatBitWidth() / 8 * width)
          : loadElements(b, loc, type, memref, indices);
  if (!widen)
    return loaded;
  if (element != b.getF32Type())
    loaded = arith::ExtFOp::create(b, loc, k.chunkType(), loaded);
  Value zero = k.splat(k.constF32(0.0f));
  return arith::SelectOp::create(b, loc, valid, loaded, zero);
}

Value ChunkLoopEmitter::loadSharedChunk(Value buffer, Value offset,
                                        Value valid, bool aligned) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Value safe = arith::SelectOp::create(b, loc, valid, offset, k.constIndex(0));
  int64_t width = k.layout.vectorWidth;
  Value loaded =
      aligned || width == 1
          ? alignedLoad(b, loc, k.chunkType(), buffer, ValueRange{safe},
                        4 * width)
          : loadElements(b, loc, k.chunkType(), buffer, ValueRange{safe});
  return arith::SelectOp::create(b, loc, valid, loaded,
                                 k.splat(k.constF32(0.0f)));
}

//===----------------------------------------------------------------------===//
// Loops
//===----------------------------------------------------------------------===//

namespace {
/// What a reduction accumulates per element and how.
struct ReductionKindInfo {
  bvec::ReductionKind combine = bvec::ReductionKind::sum;
  double identity = 0.0;
};

/// `vec_mul_vec` and `norm` accumulate sums; `reduce` its kind.
ReductionKindInfo reductionInfo(Operation *op) {
  ReductionKindInfo info;
  if (auto reduce = dyn_cast<bvec::ReduceOp>(op))
    info.combine = reduce.getKind();
  info.identity = reductionIdentity(info.combine);
  return info;
}
} // namespace

/// The generic address of a memref's data (global memory).
static Value genericBase(OpBuilder &b, Location loc, Value memref) {
  Value index = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
}

/// The generic address of a shared-memory (workgroup) memref's data.
static Value genericSharedBase(OpBuilder &b, Location loc, Value memref) {
  Value window = genericBase(b, loc, memref);
  auto shared = LLVM::LLVMPointerType::get(b.getContext(), 3);
  Value pointer = LLVM::IntToPtrOp::create(b, loc, shared, window);
  Value generic = LLVM::AddrSpaceCastOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), pointer);
  return LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), generic);
}

Value ChunkLoopEmitter::loadGatheredChunk(bvec::GatherVecOp gather, Value edge,
                                          Value d0, Value valid) {
  // Staged rows come from the shared buffer, the others straight from the
  // table: one generic load from either address, no branch, so that the
  // loads of all gathers and edges of a chunk are in flight together.
  OpBuilder &b = k.b;
  Location loc = k.loc;
  int64_t width = k.layout.vectorWidth;
  int64_t chunk = 32 * width;
  InspectorSlot &slot = k.slotFor(gather.getIndices());
  auto toI64 = [&](Value v) -> Value {
    if (v.getType().isInteger(64))
      return v;
    if (v.getType().isIndex())
      return arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
    return arith::ExtSIOp::create(b, loc, b.getI64Type(), v);
  };
  // Staged rows keep the table's element type: one load, from either
  // memory, then the widening.
  Type element = gather.getTable().getType().getElementType();
  int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
  auto bytes = [&](Value elements) {
    return arith::MulIOp::create(
        b, loc, elements,
        arith::ConstantIntOp::create(b, loc, elementBytes, 64));
  };
  Value buffer = k.view(k.stagingBuffers.lookup(gather), element,
                        k.layout.tile * chunk);
  Value laneOffset = arith::MulIOp::create(b, loc, k.lane, k.constIndex(width));
  Value u = toI64(k.loadI32(slot.slotOf, edge));
  Value inStage = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, u,
                            arith::ConstantIntOp::create(b, loc, chunk, 64)),
      toI64(laneOffset));
  Value sharedAddress = arith::AddIOp::create(
      b, loc, genericSharedBase(b, loc, buffer), bytes(inStage));
  Value table = k.memrefOf(gather.getTable());
  Value row = toI64(k.keyOf(slot, edge));
  Value safe = arith::SelectOp::create(b, loc, valid, d0, k.constIndex(0));
  Value rowLength = toI64(k.argDim(gather.getTable(), 1));
  Value inTable = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, row, rowLength), toI64(safe));
  Value globalAddress = arith::AddIOp::create(
      b, loc, genericBase(b, loc, table), bytes(inTable));
  Value address = arith::SelectOp::create(b, loc, slot.staged, sharedAddress,
                                          globalAddress);
  Value pointer = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), address);
  Value loaded = LLVM::LoadOp::create(b, loc, VectorType::get({width}, element),
                                      pointer,
                                      /*alignment=*/elementBytes * width);
  if (element != b.getF32Type())
    loaded = arith::ExtFOp::create(b, loc, k.chunkType(), loaded);
  return arith::SelectOp::create(b, loc, valid, loaded,
                                 k.splat(k.constF32(0.0f)));
}

/// The direct path unrolls at most kMaxUnrolledChunks chunks: all of them
/// over a static length (the assembler keeps as many of their loads in
/// flight as the registers allow), otherwise until about
/// bvec::kRowLoadsInFlight row loads per lane are in flight.
static constexpr int64_t kMaxUnrolledChunks = 4;

struct ChunkLoopEmitter::Loop {
  std::string lengthKey;
  Value lengthOf; ///< A vector of the loop's length.
  SmallVector<Operation *> reductions;
  SmallVector<Value> materialize;
  SmallVector<std::pair<unsigned, Value>> results; ///< (result index, value)
  SmallVector<Value> carry; ///< Kept in registers for later stages.
};

/// Whether `vector` is read from shared memory in `stage` rather than
/// computed: materialized in an earlier stage, written by a matrix product,
/// or a slice (or pad) of a materialized vector. A slice of a gathered row
/// is computed, from the table.
static bool isSharedLeaf(const bvec::FusionStages &stages, Value vector,
                         int64_t stage) {
  Operation *def = vector.getDefiningOp();
  if ((isa<bvec::SliceOp, bvec::PadOp>(def) && !bvec::isGatherSlice(def)) ||
      bvec::isMatrixProduct(def))
    return true;
  return stages.materialized.contains(vector) && stages.of(vector) < stage;
}

std::vector<ChunkLoopEmitter::Loop> ChunkLoopEmitter::loopsOf(int64_t stage) {
  // Roots of the stage, grouped by length (in first-use order).
  std::vector<Loop> loops;
  auto loopFor = [&](Value vector) -> Loop & {
    std::string key = k.lengthOf(vector).str();
    for (Loop &loop : loops)
      if (loop.lengthKey == key)
        return loop;
    loops.emplace_back();
    loops.back().lengthKey = key;
    loops.back().lengthOf = vector;
    return loops.back();
  };
  for (Operation &op : k.func.getBody().front().without_terminator()) {
    Value result = op.getResult(0);
    if (isa<bvec::VecMulVecOp, bvec::NormOp, bvec::ReduceOp>(op)) {
      if (k.stages.of(result) == stage)
        loopFor(op.getOperand(0)).reductions.push_back(&op);
      continue;
    }
    if (isa<bvec::VecType>(result.getType()) &&
        k.stages.materialized.contains(result) &&
        k.stages.of(result) == stage && !bvec::isMatrixProduct(&op))
      loopFor(result).materialize.push_back(result);
  }
  Operation *ret = k.func.getReturn();
  for (auto [r, value] : llvm::enumerate(ret->getOperands()))
    if (isa<bvec::VecType>(value.getType()) &&
        std::max<int64_t>(k.stages.of(value), 0) == stage)
      loopFor(value).results.push_back({static_cast<unsigned>(r), value});
  for (Value v : k.carriedFrom.lookup(stage))
    loopFor(v).carry.push_back(v);
  return loops;
}

LogicalResult ChunkLoopEmitter::emitStage(int64_t stage) {
  std::vector<Loop> loops = loopsOf(stage);
  for (Loop &loop : loops)
    if (failed(emitLoop(stage, loop)))
      return failure();
  return success();
}

SetVector<Value>
ChunkLoopEmitter::neededBy(int64_t stage, const Loop &loop,
                           const DenseMap<Value, CarriedRange> &carried,
                           bool *readsCarried) {
  SetVector<Value> needed;
  std::function<void(Value)> visit = [&](Value v) {
    if (!isa<bvec::VecType>(v.getType()) || needed.contains(v) ||
        isSharedLeaf(k.stages, v, stage))
      return;
    if (carried.lookup(v).readIn(stage)) {
      if (readsCarried)
        *readsCarried = true;
      return;
    }
    // A slice of a gathered row is loaded like a gather: its row is not
    // needed whole.
    if (!bvec::isGatherSlice(v.getDefiningOp()))
      for (Value operand : v.getDefiningOp()->getOperands())
        visit(operand);
    needed.insert(v);
  };
  for (Operation *r : loop.reductions)
    for (Value operand : r->getOperands())
      visit(operand);
  for (Value v : loop.materialize)
    visit(v);
  for (auto &[index, v] : loop.results)
    visit(v);
  for (Value v : loop.carry)
    visit(v);
  return needed;
}

void ChunkLoopEmitter::planCarried() {
  const bvec::FusionStages &stages = k.stages;
  if (k.layout.carryFloats == 0 || k.layout.stagesRows() ||
      stages.numStages < 2)
    return;
  int64_t edgesPerWarp = k.layout.tile / k.layout.warps;
  int64_t chunk = 32 * k.layout.vectorWidth;
  // Matrix products need every register they can get: nothing is carried
  // into or across a stage with one.
  DenseSet<int64_t> matrixStages;
  k.func.getBody().walk([&](Operation *op) {
    if (bvec::isMatrixProduct(op))
      matrixStages.insert(stages.of(op->getResult(0)));
  });
  DenseMap<Value, CarriedRange> carried;
  DenseMap<int64_t, SmallVector<Value>> plan;
  int64_t floats = 0;
  for (int64_t s = 0; s + 1 < stages.numStages; ++s) {
    // The later stages that may read registers of stage s.
    int64_t last = s;
    while (last + 1 < stages.numStages && !matrixStages.contains(last + 1))
      ++last;
    // The vectors computable in stage s (stage <= s) that an operation of a
    // later stage reads in its chunk loop.
    SetVector<Value> frontier;
    auto consider = [&](Value v, int64_t later) {
      if (!isa<bvec::VecType>(v.getType()) || stages.of(v) > s ||
          carried.contains(v) || isSharedLeaf(stages, v, later) ||
          v.getDefiningOp<bvec::ConstantOp>())
        return;
      frontier.insert(v);
    };
    for (int64_t later = s + 1; later <= last; ++later)
      for (const Loop &loop : loopsOf(later)) {
        for (Value v : neededBy(later, loop, carried))
          if (stages.of(v) > s)
            for (Value operand : v.getDefiningOp()->getOperands())
              consider(operand, later);
        for (Operation *r : loop.reductions)
          for (Value operand : r->getOperands())
            consider(operand, later);
      }
    for (Value v : frontier) {
      kge_runtime::Dim length = k.lengthOf(v);
      if (!length.isStatic())
        return;
      floats += edgesPerWarp * llvm::divideCeil(length.size, chunk) * chunk /
                32;
      carried[v] = {s, last};
      plan[s].push_back(v);
    }
  }
  if (floats > k.layout.carryFloats)
    return;
  k.carriedFrom = std::move(plan);
  k.carriedRanges = std::move(carried);
}

Value ChunkLoopEmitter::readLeaf(Value vector, Value edge, Value d0,
                                 Value valid) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Value source = vector;
  int64_t offset = 0;
  auto slice = vector.getDefiningOp<bvec::SliceOp>();
  if (slice && !bvec::isGatherSlice(slice)) {
    // (A slice of a gathered row that is materialized has its own copy.)
    source = slice.getInput();
    offset = slice.getOffset();
  } else if (auto pad = vector.getDefiningOp<bvec::PadOp>()) {
    // Elements [offset, offset + L) come from the input, the rest are 0;
    // a chunk lies wholly inside or outside (the layout's vector width
    // divides the offset and the length).
    source = pad.getInput();
    Value first = k.constIndex(pad.getOffset());
    Value end = k.constIndex(pad.getOffset() +
                             pad.getInput().getType().getLength());
    Value inside = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, d0, first),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, d0, end));
    valid = arith::AndIOp::create(b, loc, valid, inside);
    Value local = arith::SelectOp::create(
        b, loc, inside, arith::SubIOp::create(b, loc, d0, first),
        k.constIndex(0));
    Value at = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, edge, k.rowStrideValue(source)), local);
    return loadSharedChunk(k.materializedView(source), at, valid);
  }
  Value buffer = k.materializedView(source);
  Value rowStart = arith::MulIOp::create(b, loc, edge, k.rowStrideValue(source));
  Value at = arith::AddIOp::create(
      b, loc, rowStart,
      arith::AddIOp::create(b, loc, d0, k.constIndex(offset)));
  bool aligned = offset % k.layout.vectorWidth == 0;
  return loadSharedChunk(buffer, at, valid, aligned);
}

/// Emits the computation of one chunk (starting at `jj`) for every edge of
/// the warp: gathers (staged or direct), the loop's vectors, reductions
/// accumulated into `accumulators`, materialized and result stores.
SmallVector<Value> ChunkLoopEmitter::emitChunk(ChunkBody &body, Value jj,
                                               ValueRange accumulators,
                                               bool staged,
                                               std::optional<int64_t> chunk) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  int64_t edgesPerWarp = k.layout.tile / k.layout.warps;
  int64_t width = k.layout.vectorWidth;
  Loop &loop = body.loop;
  Value laneOffset = arith::MulIOp::create(b, loc, k.lane, k.constIndex(width));
  Value d0 = arith::AddIOp::create(b, loc, jj, laneOffset);
  Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, d0,
                                      body.length);
  SmallVector<Value> next(accumulators.size());
  // In-range sines and cosines: the last accumulator records whether some
  // argument was out of range.
  if (trigInRange)
    trigOutOfRange = accumulators.back();
  for (int64_t i = 0; i < edgesPerWarp; ++i) {
    Value edge = k.localEdge(i);
    DenseMap<Value, Value> values;
    // The chunk of the edge's row of a gather's table, from column
    // `offset` on.
    auto fromTable = [&](bvec::GatherVecOp gather, int64_t offset) {
      InspectorSlot &slot = k.slotFor(gather.getIndices());
      Value row = k.toIndex(k.keyOf(slot, edge));
      return loadGlobalChunk(k.memrefOf(gather.getTable()), ValueRange{row},
                             d0, valid, /*widen=*/true, offset);
    };
    auto get = [&](Value v) -> Value {
      if (Value found = values.lookup(v))
        return found;
      if (k.carriedRanges.contains(v))
        return k.carriedChunks.lookup({v, i, *chunk});
      return readLeaf(v, edge, d0, valid);
    };
    for (Value v : body.needed) {
      Operation *def = v.getDefiningOp();
      values[v] =
          TypeSwitch<Operation *, Value>(def)
              .Case([&](bvec::GatherVecOp gather) -> Value {
                if (staged)
                  return loadGatheredChunk(gather, edge, d0, valid);
                return fromTable(gather, 0);
              })
              .Case([&](bvec::SliceOp slice) -> Value {
                // A slice of a gathered row (the others are shared
                // leaves): its columns straight from the table, never
                // staged.
                return fromTable(
                    slice.getInput().getDefiningOp<bvec::GatherVecOp>(),
                    slice.getOffset());
              })
              .Case([&](bvec::ConstantOp constant) -> Value {
                return k.splat(k.constF32(constant.getValue().convertToFloat()));
              })
              .Case([&](bvec::ScalMulVecOp mul) -> Value {
                return arith::MulFOp::create(
                    b, loc, k.splat(scalar(mul.getScalar(), i)),
                    get(mul.getVec()));
              })
              .Default([&](Operation *op) -> Value {
                SmallVector<Value> operands;
                for (Value operand : op->getOperands())
                  operands.push_back(get(operand));
                return applyElementwise(op, operands, false);
              });
    }

    // Reductions: accumulate this chunk's elements.
    for (auto [r, op] : llvm::enumerate(loop.reductions)) {
      Value x = get(op->getOperand(0));
      Value partial = TypeSwitch<Operation *, Value>(op)
                          .Case([&](bvec::VecMulVecOp) -> Value {
                            return arith::MulFOp::create(
                                b, loc, x, get(op->getOperand(1)));
                          })
                          .Case([&](bvec::NormOp norm) -> Value {
                            if (norm.getP() == 1)
                              return math::AbsFOp::create(b, loc, x);
                            return arith::MulFOp::create(b, loc, x, x);
                          })
                          .Default([&](Operation *) { return x; });
      ReductionKindInfo info = reductionInfo(op);
      Value identity = k.splat(k.constF32(static_cast<float>(info.identity)));
      partial = arith::SelectOp::create(b, loc, valid, partial, identity);
      size_t at = r * edgesPerWarp + i;
      next[at] = combineReduction(b, loc, info.combine, accumulators[at], partial);
    }

    // Carried vectors: kept for the later stages that read them.
    for (Value v : loop.carry)
      k.carriedChunks[{v, i, *chunk}] = get(v);

    // Materialized vectors: the whole vector of every local edge.
    for (Value m : loop.materialize) {
      // Slices of computed vectors are read from their (earlier)
      // materialized input; slices of gathered rows from the table.
      Value value = get(m);
      Value buffer = k.materializedView(m);
      Value at = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, edge, k.rowStrideValue(m)),
          d0);
      scf::IfOp::create(b, loc, valid, [&](OpBuilder &, Location) {
        alignedStore(b, loc, value, buffer, ValueRange{at}, 4 * width);
        scf::YieldOp::create(b, loc);
      });
    }

    // Vector results of the function.
    for (auto &[index, v] : loop.results) {
      Value inTile = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           edge, k.count);
      Value store = arith::AndIOp::create(b, loc, inTile, valid);
      Value value = get(v);
      scf::IfOp::create(b, loc, store, [&](OpBuilder &, Location) {
        alignedStore(b, loc, value, k.resultMemrefs[index],
                     ValueRange{k.resultRow(edge), d0}, 4 * width);
        scf::YieldOp::create(b, loc);
      });
    }
  }
  if (trigInRange)
    next.back() = trigOutOfRange;
  return next;
}

/// A loop over chunks that stages the unique rows of every gather of the
/// loop in shared memory first.
SmallVector<Value> ChunkLoopEmitter::emitStaged(ChunkBody &body,
                                                ValueRange init) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  int64_t width = k.layout.vectorWidth;
  int64_t chunk = 32 * width;
  auto forOp = scf::ForOp::create(b, loc, k.constIndex(0), body.length,
                                  k.constIndex(chunk), init);
  // Without iteration arguments the builder adds a terminator; the body
  // below yields explicitly.
  if (init.empty())
    forOp.getBody()->getTerminator()->erase();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forOp.getBody());
  Value jj = forOp.getInductionVar();
  Value laneOffset = arith::MulIOp::create(b, loc, k.lane, k.constIndex(width));
  Value d0 = arith::AddIOp::create(b, loc, jj, laneOffset);
  Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, d0,
                                      body.length);

  // Each warp loads its share of the unique rows (tile / warps at most)
  // before storing any, so that the loads overlap.
  int64_t rowsPerWarp = k.layout.tile / k.layout.warps;
  for (bvec::GatherVecOp gather : body.gathers) {
    InspectorSlot &slot = k.slotFor(gather.getIndices());
    Type element = gather.getTable().getType().getElementType();
    Value buffer = k.view(k.stagingBuffers.lookup(gather), element,
                          k.layout.tile * chunk);
    Value table = k.memrefOf(gather.getTable());
    scf::IfOp::create(b, loc, slot.staged, [&](OpBuilder &, Location) {
      Value nuniq = k.toIndex(slot.nuniq);
      SmallVector<Value> rows, present, loaded;
      for (int64_t i = 0; i < rowsPerWarp; ++i) {
        Value u = arith::AddIOp::create(b, loc, k.warp,
                                        k.constIndex(i * k.layout.warps));
        Value ok =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, u, nuniq);
        Value safe = arith::SelectOp::create(b, loc, ok, u, k.constIndex(0));
        Value row = k.toIndex(k.loadI32(slot.uniq, safe));
        rows.push_back(safe);
        present.push_back(ok);
        loaded.push_back(loadGlobalChunk(table, ValueRange{row}, d0, valid,
                                         /*widen=*/false));
      }
      for (int64_t i = 0; i < rowsPerWarp; ++i) {
        Value at = arith::AddIOp::create(
            b, loc, arith::MulIOp::create(b, loc, rows[i], k.constIndex(chunk)),
            laneOffset);
        scf::IfOp::create(b, loc, present[i], [&](OpBuilder &, Location) {
          alignedStore(b, loc, loaded[i], buffer, ValueRange{at},
                       element.getIntOrFloatBitWidth() / 8 * width);
          scf::YieldOp::create(b, loc);
        });
      }
      scf::YieldOp::create(b, loc);
    });
  }
  gpu::BarrierOp::create(b, loc);
  SmallVector<Value> next =
      emitChunk(body, jj, forOp.getRegionIterArgs(), /*staged=*/true);
  // The next chunk overwrites the buffers.
  gpu::BarrierOp::create(b, loc);
  scf::YieldOp::create(b, loc, next);
  return SmallVector<Value>(forOp.getResults());
}

/// Reads every row directly, several chunks per iteration so that their
/// loads are in flight together (masks cover a partial last group).
SmallVector<Value> ChunkLoopEmitter::emitDirect(ChunkBody &body,
                                                ValueRange init) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  int64_t chunk = 32 * k.layout.vectorWidth;
  // Over a static length every chunk (up to kMaxUnrolledChunks): a loop
  // the assembler cannot see through waits for each group of loads, and
  // with the registers of 4 blocks per SM it spilled (TransF, ComplEx).
  // Over a dynamic length, about kRowLoadsInFlight row loads per lane:
  // edges x gathers x chunks.
  int64_t unroll = kMaxUnrolledChunks;
  if (std::optional<int64_t> length = getConstantIntValue(body.length)) {
    unroll = std::min<int64_t>(unroll, llvm::divideCeil(*length, chunk));
  } else {
    int64_t edgesPerWarp = k.layout.tile / k.layout.warps;
    int64_t perChunk = std::max<int64_t>(
        1, edgesPerWarp * static_cast<int64_t>(body.gathers.size()));
    unroll = std::clamp<int64_t>(bvec::kRowLoadsInFlight / perChunk, 1,
                                 kMaxUnrolledChunks);
  }
  auto forOp = scf::ForOp::create(b, loc, k.constIndex(0), body.length,
                                  k.constIndex(chunk * unroll), init);
  if (init.empty())
    forOp.getBody()->getTerminator()->erase();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forOp.getBody());
  SmallVector<Value> accumulators(forOp.getRegionIterArgs());
  for (int64_t u = 0; u < unroll; ++u) {
    Value jj = arith::AddIOp::create(b, loc, forOp.getInductionVar(),
                                     k.constIndex(u * chunk));
    accumulators = emitChunk(body, jj, accumulators, /*staged=*/false);
  }
  scf::YieldOp::create(b, loc, accumulators);
  return SmallVector<Value>(forOp.getResults());
}

SmallVector<Value> ChunkLoopEmitter::emitUnrolled(ChunkBody &body,
                                                  ValueRange init) {
  int64_t chunk = 32 * k.layout.vectorWidth;
  std::optional<int64_t> length = getConstantIntValue(body.length);
  assert(length && "carried vectors have static lengths");
  SmallVector<Value> accumulators(init);
  for (int64_t c = 0; c * chunk < *length; ++c)
    accumulators = emitChunk(body, k.constIndex(c * chunk), accumulators,
                             /*staged=*/false, c);
  return accumulators;
}

LogicalResult ChunkLoopEmitter::emitLoop(int64_t stage, Loop &loop) {
  OpBuilder &b = k.b;
  Location loc = k.loc;

  // The vectors computed in this loop: everything the roots need that is
  // neither read from shared memory nor carried from an earlier stage.
  bool readsCarried = false;
  SetVector<Value> needed = neededBy(stage, loop, k.carriedRanges, &readsCarried);
  ChunkBody body{loop, needed, {}, k.lengthValue(loop.lengthOf)};
  for (Value v : needed)
    if (auto gather = v.getDefiningOp<bvec::GatherVecOp>())
      body.gathers.push_back(gather);

  int64_t edgesPerWarp = k.layout.tile / k.layout.warps;
  SmallVector<Value> init;
  for (Operation *r : loop.reductions)
    for (int64_t i = 0; i < edgesPerWarp; ++i)
      init.push_back(
          k.splat(k.constF32(static_cast<float>(reductionInfo(r).identity))));

  // The inspector decides per tile: when rows repeat a lot, stage each
  // chunk of the unique rows in shared memory; otherwise read every row
  // directly, all chunks' loads in flight together.
  auto emitPasses = [&](ValueRange start) -> SmallVector<Value> {
    if (readsCarried || !loop.carry.empty()) {
      // Carried vectors are kept chunk by chunk: one chunk after the other
      // over the whole (static) length, no loop.
      return emitUnrolled(body, start);
    }
    if (body.gathers.empty() || !k.layout.stagesRows())
      return emitDirect(body, start);
    Value anyStaged = arith::ConstantIntOp::create(b, loc, 0, 1);
    for (bvec::GatherVecOp gather : body.gathers)
      anyStaged = arith::OrIOp::create(
          b, loc, anyStaged, k.slotFor(gather.getIndices()).staged);
    SmallVector<Type> types(start.getTypes());
    auto choice = scf::IfOp::create(b, loc, types, anyStaged,
                                    /*withElseRegion=*/true);
    {
      // Without results the builder already terminated both blocks.
      OpBuilder::InsertionGuard guard(b);
      for (auto [block, staged] : {std::pair(choice.thenBlock(), true),
                                   std::pair(choice.elseBlock(), false)}) {
        if (!block->empty())
          block->getTerminator()->erase();
        b.setInsertionPointToEnd(block);
        SmallVector<Value> results =
            staged ? emitStaged(body, start) : emitDirect(body, start);
        scf::YieldOp::create(b, loc, results);
      }
    }
    return SmallVector<Value>(choice.getResults());
  };

  // Sines and cosines of vectors: the loop runs with the Cody-Waite
  // reduction alone and records whether some argument was out of its range
  // (|x| > 105615, NaN, inf); only then does the warp run it again with
  // the slow path. A slow path inside the loop, even on a branch never
  // taken, takes registers from every chunk (RotatE, D = 512, B = 16384 on
  // the H100: 41.4 us against 29.2 us without it). Loops that stage rows
  // synchronize the block per chunk, which a warp's rerun cannot: they keep
  // the slow path inline.
  bool trigRerun = !k.layout.stagesRows() &&
                   llvm::any_of(needed, [](Value v) {
                     return isa<bvec::SinOp, bvec::CosOp>(v.getDefiningOp());
                   });
  SmallVector<Value> accumulators;
  if (!trigRerun) {
    accumulators = emitPasses(init);
  } else {
    // Carried chunks, in a fixed order, are results of the rerun too.
    SmallVector<std::tuple<Value, int64_t, int64_t>> carriedKeys;
    int64_t chunks = 0;
    if (!loop.carry.empty())
      chunks = llvm::divideCeil(*getConstantIntValue(body.length),
                                32 * k.layout.vectorWidth);
    for (Value v : loop.carry)
      for (int64_t i = 0; i < edgesPerWarp; ++i)
        for (int64_t c = 0; c < chunks; ++c)
          carriedKeys.push_back({v, i, c});
    auto withCarried = [&](SmallVector<Value> values) {
      for (auto &key : carriedKeys)
        values.push_back(k.carriedChunks.lookup(key));
      return values;
    };

    SmallVector<Value> start(init);
    start.push_back(arith::ConstantIntOp::create(b, loc, 0, 1));
    trigInRange = true;
    SmallVector<Value> fast = emitPasses(start);
    trigInRange = false;
    Value outOfRange = fast.pop_back_val();
    SmallVector<Value> fastResults = withCarried(fast);
    Value rerun = NVVM::VoteSyncOp::create(
        b, loc, b.getI1Type(), k.constI32(-1), outOfRange,
        NVVM::VoteSyncKind::any);
    rerun = LLVM::ExpectOp::create(b, loc, rerun,
                                   arith::ConstantIntOp::create(b, loc, 0, 1));
    auto choice = scf::IfOp::create(b, loc, ValueRange(fastResults).getTypes(),
                                    rerun, /*withElseRegion=*/true);
    {
      // Without results the builder already terminated both blocks.
      OpBuilder::InsertionGuard guard(b);
      for (Block *block : {choice.thenBlock(), choice.elseBlock()})
        if (!block->empty())
          block->getTerminator()->erase();
      b.setInsertionPointToStart(choice.thenBlock());
      scf::YieldOp::create(b, loc, withCarried(emitPasses(init)));
      b.setInsertionPointToStart(choice.elseBlock());
      scf::YieldOp::create(b, loc, fastResults);
    }
    accumulators.assign(choice.getResults().begin(),
                        choice.getResults().begin() + fast.size());
    for (auto [key, value] : llvm::zip(
             carriedKeys, choice.getResults().drop_front(fast.size())))
      k.carriedChunks[key] = value;
  }

  // Finish every reduction: across the vector, then across the warp.
  for (auto [r, op] : llvm::enumerate(loop.reductions)) {
    ReductionKindInfo info = reductionInfo(op);
    for (int64_t i = 0; i < edgesPerWarp; ++i) {
      Value acc = accumulators[r * edgesPerWarp + i];
      Value total = vector::ExtractOp::create(b, loc, acc, 0);
      for (int64_t e = 1; e < k.layout.vectorWidth; ++e)
        total = combineReduction(b, loc, info.combine, total,
                        vector::ExtractOp::create(b, loc, acc, e));
      total = k.warpAllReduce(total, info.combine);
      if (auto norm = dyn_cast<bvec::NormOp>(op); norm && norm.getP() == 2)
        total = emitSqrtRN(b, loc, total);
      if (auto reduce = dyn_cast<bvec::ReduceOp>(op);
          reduce && reduce.getKind() == bvec::ReductionKind::mean) {
        Value asInt =
            arith::IndexCastOp::create(b, loc, b.getI64Type(), body.length);
        Value asFloat =
            arith::SIToFPOp::create(b, loc, b.getF32Type(), asInt);
        total = arith::DivFOp::create(b, loc, total, asFloat);
      }
      k.scalars[{op->getResult(0), i}] = total;
    }
  }
  // Materialized vectors are read by later stages and matrix products.
  if (!loop.materialize.empty())
    gpu::BarrierOp::create(b, loc);
  return success();
}
