//===- KernelEmitter.cpp - prologue, shared memory and stage driver -------===//

#include "KernelEmitter.h"
#include "StageEmitters.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::kge;

int64_t SharedLayout::allocate(StringRef name, int64_t bytes) {
  int64_t offset = llvm::alignTo(staticBytes, 16);
  offsets[name] = offset;
  staticBytes = offset + bytes;
  return offset;
}

KernelEmitter::KernelEmitter(OpBuilder &builder, bvec::FuncOp func,
                             const bvec::KernelLayout &layout,
                             const bvec::FusionStages &stages,
                             const GPUKernelOptions &options)
    : b(builder), loc(func.getLoc()), func(func), layout(layout),
      stages(stages), options(options), ctx(func.getContext()) {}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

LogicalResult KernelEmitter::plan() {
  FailureOr<bvec::DimensionSymbols> symbols =
      bvec::DimensionSymbols::compute(func);
  if (failed(symbols))
    return failure();
  dims = std::move(*symbols);

  // Element types: kernels compute in f32. Tables hold f32, or f16/bf16
  // rows that their gathers widen to f32; results are f32.
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto table = dyn_cast<bvec::TableType>(type);
    if (!table)
      continue;
    Type element = table.getElementType();
    if (!isa<Float32Type, Float16Type, BFloat16Type>(element))
      return func.emitOpError()
             << "GPU lowering supports f32, f16 and bf16 tables; table '"
             << func.getArgName(i) << "' has " << element;
  }
  WalkResult computesInF32 = func.getBody().walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (auto batched = dyn_cast<bvec::BatchedType>(v.getType());
          batched && isa<FloatType>(batched.getElementType()) &&
          !batched.getElementType().isF32()) {
        op->emitOpError() << "GPU lowering computes in f32, got "
                          << v.getType()
                          << " (gathers widen half-precision tables to f32)";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  if (computesInF32.wasInterrupted())
    return failure();

  // Static item sizes become byte counts of shared memory and offsets in
  // 32-bit index arithmetic; larger ones could not run anyway.
  constexpr int64_t kMaxStaticSize = int64_t(1) << 24;
  WalkResult sizes = func.getBody().walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (auto batched = dyn_cast<bvec::BatchedType>(v.getType()))
        for (int64_t d : batched.getItemShape())
          if (!ShapedType::isDynamic(d) && d > kMaxStaticSize) {
            op->emitOpError() << "GPU lowering supports item sizes up to "
                              << kMaxStaticSize << ", got " << v.getType();
            return WalkResult::interrupt();
          }
    return WalkResult::advance();
  });
  if (sizes.wasInterrupted())
    return failure();

  if (isNegative()) {
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
      if (isa<bvec::ScalarType>(type))
        return func.emitOpError()
               << "negative mode: per-edge input '" << func.getArgName(i)
               << "' has one value per positive edge, not per scored edge; "
                  "score the corrupted edges as a batch of their own";
    negativeArray = func.getArgumentByName(options.negative);
    if (!negativeArray || !isa<bvec::IndicesType>(negativeArray.getType()))
      return func.emitOpError()
             << "negative mode: '" << options.negative
             << "' is not an index array of the function";
    if (layout.reorderKey == options.negative)
      return func.emitOpError()
             << "negative mode: cannot reorder edges by the corrupted index "
                "array '"
             << options.negative << "'; choose another reorder key";
  }

  int64_t tile = layout.tile;
  shared.allocate("item", tile * 4);
  shared.allocate("row", tile * 4);

  // One inspector slot per index array used by a gather.
  func.getBody().walk([&](Operation *op) {
    Value indices;
    if (auto g = dyn_cast<bvec::GatherVecOp>(op))
      indices = g.getIndices();
    else if (auto g = dyn_cast<bvec::GatherMatOp>(op))
      indices = g.getIndices();
    if (indices && !slots.count(indices))
      slots[indices].indexArray = indices;
  });
  // Products by shared matrices rank the runs of their key by frequency.
  bool anyMatrixProduct = bvec::hasMatrixProducts(func);
  func.getBody().walk([&](bvec::VecMulMatOp mm) {
    if (Value key = sharedMatrixKey(mm.getMat()))
      slots[key].needsRanking = true;
  });
  // The inspector runs on the index arrays whose results are used: those
  // that group edges for matrix products, and every array when rows may be
  // staged. The others only record each edge's key.
  bool anyInspected = false;
  for (auto &[value, slot] : slots) {
    slot.inspected = layout.stagesRows() || slot.needsRanking;
    anyInspected |= slot.inspected;
    std::string name =
        func.getArgName(cast<BlockArgument>(value).getArgNumber()).str();
    shared.allocate("keys." + name, tile * 4);
    if (!slot.inspected)
      continue;
    shared.allocate("uniq." + name, tile * 4);
    shared.allocate("slot." + name, tile * 4);
    shared.allocate("order." + name, tile * 4);
    shared.allocate("offsets." + name, (tile + 1) * 4);
    if (slot.needsRanking)
      shared.allocate("ranked." + name, tile * 4);
  }
  if (anyInspected)
    shared.allocate("scratch", 2 * llvm::PowerOf2Ceil(tile) * 4);
  if (anyMatrixProduct)
    shared.allocate("items", (tile + 1) * 4);

  // Staging buffers: one chunk of every unique row of each vector gather
  // whose whole rows are read (none when the layout never stages; slices
  // of rows are read from the table).
  int64_t chunk = 32 * layout.vectorWidth;
  if (layout.stagesRows())
    func.getBody().walk([&](bvec::GatherVecOp gather) {
      if (!bvec::readsWholeRows(gather))
        return;
      std::string name = "stage." + std::to_string(stagingBuffers.size());
      stagingBuffers[gather] = name;
      // Rows are staged as the table holds them.
      shared.allocate(name, tile * chunk *
                                gather.getTable()
                                    .getType()
                                    .getElementType()
                                    .getIntOrFloatBitWidth() /
                                8);
    });
  shared.staticBytes = llvm::alignTo(shared.staticBytes, 16);

  // Materialized vectors and matrix-product outputs, after the static part.
  for (Value v : stages.materialized)
    shared.materialized.push_back(v);
  func.getBody().walk([&](Operation *op) {
    if (bvec::isMatrixProduct(op) &&
        !llvm::is_contained(shared.materialized, op->getResult(0)))
      shared.materialized.push_back(op->getResult(0));
  });
  return success();
}

kge_runtime::Dim KernelEmitter::lengthOf(Value vector) const {
  return dims->dimOf(vector, bvec::getFullShape(vector.getType()).size() - 1);
}

kge_runtime::Dim KernelEmitter::rowStrideOf(Value vector) const {
  kge_runtime::Dim length = lengthOf(vector);
  // 16-byte layouts have static lengths (multiples of 4).
  if (layout.vectorWidth != 4 || !length.isStatic())
    return length;
  return kge_runtime::Dim::fixed(length.size + (36 - length.size % 32) % 32);
}

SmallVector<Type> KernelEmitter::kernelArgumentTypes() {
  SmallVector<Type> types;
  auto memrefOfType = [&](Type type, bool flatten) -> Type {
    SmallVector<int64_t> shape = bvec::getFullShape(type);
    Type element = isa<bvec::TableType>(type)
                       ? cast<bvec::TableType>(type).getElementType()
                       : cast<bvec::BatchedType>(type).getElementType();
    if (flatten)
      shape[0] = ShapedType::kDynamic; // B * K rows in negative mode
    return MemRefType::get(shape, element);
  };
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    if (arg != negativeArray) {
      types.push_back(memrefOfType(arg.getType(), false));
      continue;
    }
    // The corrupted array: [B, K].
    auto indices = cast<bvec::IndicesType>(arg.getType());
    types.push_back(
        MemRefType::get({indices.getBatchSize(), ShapedType::kDynamic},
                        indices.getElementType()));
  }
  for (Type result : func.getResultTypes())
    types.push_back(memrefOfType(result, isNegative()));
  if (!layout.reorderKey.empty() && layout.reorderGroup != 1)
    types.push_back(MemRefType::get({ShapedType::kDynamic}, b.getI32Type()));
  if (layout.sortsSomeBatches())
    types.push_back(b.getI32Type()); // whether the batch was sorted
  return types;
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Value KernelEmitter::constIndex(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value KernelEmitter::constI32(int32_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}
Value KernelEmitter::constF32(float v) {
  return arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                        APFloat(v));
}
Value KernelEmitter::toIndex(Value v) {
  if (v.getType().isIndex())
    return v;
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}
Value KernelEmitter::toI32(Value v) {
  if (v.getType().isInteger(32))
    return v;
  if (v.getType().isIndex())
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
  return arith::TruncIOp::create(b, loc, b.getI32Type(), v);
}
Value KernelEmitter::loadI32(Value memref, Value index) {
  return memref::LoadOp::create(b, loc, memref, toIndex(index));
}

VectorType KernelEmitter::chunkType() const {
  return VectorType::get({layout.vectorWidth}, b.getF32Type());
}

Value KernelEmitter::splat(Value scalar) {
  return vector::BroadcastOp::create(b, loc, chunkType(), scalar);
}

Value KernelEmitter::argDim(Value arg, unsigned dim) {
  Value memref = memrefOf(arg);
  auto type = cast<MemRefType>(memref.getType());
  if (!type.isDynamicDim(dim))
    return constIndex(type.getDimSize(dim));
  return memref::DimOp::create(b, loc, memref, dim);
}

Value KernelEmitter::dimValue(Value value, unsigned pos) {
  SmallVector<int64_t> shape = bvec::getFullShape(value.getType());
  if (!ShapedType::isDynamic(shape[pos]))
    return constIndex(shape[pos]);
  // A dynamic item size equals a dimension of some table argument.
  kge_runtime::Dim dim = dims->dimOf(value, pos);
  for (BlockArgument arg : func.getArguments()) {
    if (!isa<bvec::TableType>(arg.getType()))
      continue;
    for (unsigned d = 1, e = bvec::getFullShape(arg.getType()).size(); d < e;
         ++d)
      if (dims->dimOf(arg, d).symbol == dim.symbol)
        return argDim(arg, d);
  }
  llvm_unreachable("every dynamic item size is a table dimension");
}

Value KernelEmitter::lengthValue(Value value) {
  return dimValue(value, bvec::getFullShape(value.getType()).size() - 1);
}

Value KernelEmitter::rowStrideValue(Value vector) {
  kge_runtime::Dim stride = rowStrideOf(vector);
  return stride.isStatic() ? constIndex(stride.size) : lengthValue(vector);
}

Value KernelEmitter::warpAllReduce(Value value, bvec::ReductionKind kind) {
  Value width = constI32(32);
  for (int offset = 16; offset > 0; offset /= 2) {
    auto shuffle = gpu::ShuffleOp::create(b, loc, value, constI32(offset),
                                          width, gpu::ShuffleMode::XOR);
    Value other = shuffle.getShuffleResult();
    switch (kind) {
    case bvec::ReductionKind::max:
      value = arith::MaximumFOp::create(b, loc, value, other);
      break;
    case bvec::ReductionKind::min:
      value = arith::MinimumFOp::create(b, loc, value, other);
      break;
    case bvec::ReductionKind::sum:
    case bvec::ReductionKind::mean:
      value = arith::AddFOp::create(b, loc, value, other);
      break;
    }
  }
  return value;
}

Value KernelEmitter::localEdge(int64_t i) {
  return arith::AddIOp::create(b, loc, warp, constIndex(i * layout.warps));
}

InspectorSlot &KernelEmitter::slotFor(Value indices) {
  auto it = slots.find(indices);
  assert(it != slots.end() && "index array without inspector slot");
  return it->second;
}

Value KernelEmitter::keyOf(InspectorSlot &slot, Value edge) {
  return loadI32(slot.keys, edge);
}

Value KernelEmitter::resultRow(Value edge) {
  return toIndex(loadI32(rowOf, edge));
}

Value KernelEmitter::view(StringRef region, Type elementType, int64_t count) {
  auto type = MemRefType::get({count}, elementType, MemRefLayoutAttrInterface(),
                              gpu::AddressSpaceAttr::get(
                                  ctx, gpu::AddressSpace::Workgroup));
  return memref::ViewOp::create(b, loc, type, smem,
                                constIndex(shared.offsets.lookup(region)),
                                ValueRange{});
}

Value KernelEmitter::materializedView(Value vector) {
  auto it = materializedViews.find(vector);
  if (it != materializedViews.end())
    return it->second;
  // Offsets of materialized buffers depend on the (dynamic) lengths of the
  // buffers before them.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(smem.getDefiningOp());
  Value offset = constIndex(shared.staticBytes);
  Value tileEdges = constIndex(layout.tile);
  Value result;
  for (Value m : shared.materialized) {
    Value floats = arith::MulIOp::create(b, loc, tileEdges, rowStrideValue(m));
    if (m == vector) {
      auto type = MemRefType::get(
          {ShapedType::kDynamic}, b.getF32Type(), MemRefLayoutAttrInterface(),
          gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
      result = memref::ViewOp::create(b, loc, type, smem, offset,
                                      ValueRange{floats});
      break;
    }
    Value bytes = arith::MulIOp::create(b, loc, floats, constIndex(4));
    offset = arith::AddIOp::create(b, loc, offset, bytes);
  }
  assert(result && "vector is not materialized");
  materializedViews[vector] = result;
  return result;
}

//===----------------------------------------------------------------------===//
// Prologue
//===----------------------------------------------------------------------===//

/// Shared-window address of a workgroup memref, as the device library takes
/// it.
static Value sharedAddress(OpBuilder &b, Location loc, Value memref) {
  Value index =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
}

void KernelEmitter::emitPrologue(gpu::GPUFuncOp kernel) {
  unsigned numArgs = func.getNumArguments();
  for (auto [i, arg] : llvm::enumerate(func.getArguments()))
    argMemrefs[arg] = kernel.getArgument(i);
  for (unsigned r = 0, e = func.getNumResults(); r < e; ++r)
    resultMemrefs.push_back(kernel.getArgument(numArgs + r));
  if (!layout.reorderKey.empty() && layout.reorderGroup != 1)
    permMemref = kernel.getArgument(numArgs + func.getNumResults());
  if (layout.sortsSomeBatches())
    sortedFlag = kernel.getArgument(numArgs + func.getNumResults() + 1);

  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value c32 = constIndex(32);
  lane = arith::RemUIOp::create(b, loc, tid, c32);
  warp = arith::DivUIOp::create(b, loc, tid, c32);
  Value tileIndex = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  if (layout.reorderGroup == 0 && !layout.reorderKey.empty()) {
    // The whole batch is sorted, rare keys first: the first tiles hold many
    // distinct matrices each (read from memory once), the last ones long
    // runs of a few (compute on cached rows). Blocks take tiles from the
    // two halves of the batch in turn (0, H, 1, H + 1, ... with
    // H = ceil(T / 2)) so that the two kinds run side by side instead of
    // one after the other.
    Value tiles = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    Value half = arith::DivUIOp::create(b, loc, tileIndex, constIndex(2));
    Value odd = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::RemUIOp::create(b, loc, tileIndex, constIndex(2)),
        constIndex(0));
    Value secondHalf = arith::AddIOp::create(
        b, loc, arith::CeilDivUIOp::create(b, loc, tiles, constIndex(2)), half);
    Value interleaved = arith::SelectOp::create(b, loc, odd, secondHalf, half);
    // A batch left in its own order keeps its tiles in order.
    tileIndex = sortedFlag ? arith::SelectOp::create(
                                 b, loc,
                                 arith::CmpIOp::create(
                                     b, loc, arith::CmpIPredicate::ne,
                                     sortedFlag, constI32(0)),
                                 interleaved, tileIndex)
                           : interleaved;
  }

  // The results hold one row per scored edge: B rows, or B * K in negative
  // mode, where the corrupted array is [B, K].
  Value rows = memref::DimOp::create(b, loc, resultMemrefs.front(), 0);
  if (isNegative()) {
    batch = memref::DimOp::create(b, loc, memrefOf(negativeArray), 0);
    negatives = memref::DimOp::create(b, loc, memrefOf(negativeArray), 1);
  } else {
    batch = rows;
    negatives = constIndex(1);
  }
  Value total = rows; // B (or B * K) edges to score.
  first = arith::MulIOp::create(b, loc, tileIndex, constIndex(layout.tile));
  Value remaining = arith::SubIOp::create(b, loc, total, first);
  count = arith::MinUIOp::create(b, loc, remaining, constIndex(layout.tile));

  auto smemType = MemRefType::get(
      {ShapedType::kDynamic}, b.getI8Type(), MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  smem = gpu::DynamicSharedMemoryOp::create(b, loc, smemType);
  itemOf = view("item", b.getI32Type(), layout.tile);
  rowOf = view("row", b.getI32Type(), layout.tile);
  for (auto &[value, slot] : slots) {
    std::string name =
        func.getArgName(cast<BlockArgument>(value).getArgNumber()).str();
    slot.keys = view("keys." + name, b.getI32Type(), layout.tile);
    if (!slot.inspected)
      continue;
    slot.uniq = view("uniq." + name, b.getI32Type(), layout.tile);
    slot.slotOf = view("slot." + name, b.getI32Type(), layout.tile);
    slot.order = view("order." + name, b.getI32Type(), layout.tile);
    slot.offsets = view("offsets." + name, b.getI32Type(), layout.tile + 1);
    if (slot.needsRanking)
      slot.ranked = view("ranked." + name, b.getI32Type(), layout.tile);
  }

  // Thread e < tile describes local edge e: its positive edge (through the
  // reorder permutation), its result row and its key in every index array.
  // Edges past the batch describe edge 0 of the tile, so that every read
  // stays in bounds; their results are never stored.
  Value isDescriber =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid,
                            constIndex(layout.tile));
  scf::IfOp::create(b, loc, isDescriber, [&](OpBuilder &, Location) {
    Value inTile =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid, count);
    Value e = arith::SelectOp::create(b, loc, inTile, tid, constIndex(0));
    Value position = arith::AddIOp::create(b, loc, first, e);
    Value positive = arith::DivUIOp::create(b, loc, position, negatives);
    Value negative = arith::RemUIOp::create(b, loc, position, negatives);
    if (permMemref) {
      Value unsorted = positive;
      auto permuted = [&] { return toIndex(loadI32(permMemref, unsorted)); };
      if (!sortedFlag) {
        positive = permuted();
      } else {
        // Batches below the layout's reorder_min_batch are not sorted:
        // their permutation was not computed.
        Value sorted = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ne, sortedFlag, constI32(0));
        positive = scf::IfOp::create(
                       b, loc, sorted,
                       [&](OpBuilder &, Location) {
                         scf::YieldOp::create(b, loc, ValueRange{permuted()});
                       },
                       [&](OpBuilder &, Location) {
                         scf::YieldOp::create(b, loc, ValueRange{unsorted});
                       })
                       .getResult(0);
      }
    }
    Value row = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, positive, negatives), negative);
    memref::StoreOp::create(b, loc, toI32(positive), itemOf, tid);
    memref::StoreOp::create(b, loc, toI32(row), rowOf, tid);
    for (auto &[value, slot] : slots) {
      SmallVector<Value> at{positive};
      if (value == negativeArray)
        at.push_back(negative);
      Value key = memref::LoadOp::create(b, loc, memrefOf(value), at);
      memref::StoreOp::create(b, loc, toI32(key), slot.keys, tid);
      // The inspector assigns slots to the edges inside the tile only; the
      // others read the first unique row.
      if (slot.inspected)
        memref::StoreOp::create(b, loc, constI32(0), slot.slotOf, tid);
    }
    scf::YieldOp::create(b, loc);
  });
  gpu::BarrierOp::create(b, loc);
  emitInspectors();
}

void KernelEmitter::emitInspectors() {
  Value count32 = toI32(count);
  auto i32 = b.getI32Type();
  Value scratch;
  for (auto &[value, slot] : slots) {
    if (!slot.inspected)
      continue;
    if (!scratch)
      scratch = view("scratch", i32, 2 * llvm::PowerOf2Ceil(layout.tile));
    auto call = LLVM::CallOp::create(
        b, loc, TypeRange{i32}, kInspectUnique,
        ValueRange{sharedAddress(b, loc, slot.keys), count32,
                   sharedAddress(b, loc, slot.uniq),
                   sharedAddress(b, loc, slot.slotOf),
                   sharedAddress(b, loc, slot.order),
                   sharedAddress(b, loc, slot.offsets),
                   sharedAddress(b, loc, scratch)});
    slot.nuniq = call.getResult();
    if (slot.needsRanking)
      LLVM::CallOp::create(b, loc, TypeRange{i32}, kInspectFrequent,
                           ValueRange{sharedAddress(b, loc, slot.offsets),
                                      slot.nuniq,
                                      sharedAddress(b, loc, slot.ranked),
                                      sharedAddress(b, loc, scratch)});
    // Stage rows through shared memory when at least stage_repeats percent
    // of the tile's edges repeat a row: (count - nuniq) * 100 >= p * count.
    if (!layout.stagesRows())
      continue;
    Value repeats = arith::SubIOp::create(b, loc, count32, slot.nuniq);
    Value lhs = arith::MulIOp::create(b, loc, repeats, constI32(100));
    Value rhs =
        arith::MulIOp::create(b, loc, count32, constI32(layout.stageRepeats));
    slot.staged =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, lhs, rhs);
  }
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

LogicalResult KernelEmitter::emit(gpu::GPUFuncOp kernel) {
  b.setInsertionPointToStart(&kernel.getBody().front());
  emitPrologue(kernel);
  ChunkLoopEmitter(*this).planCarried();
  emitScalarPreBlock();
  for (int64_t s = 0; s < stages.numStages; ++s)
    if (failed(emitStage(s)))
      return failure();
  if (failed(emitMatrixResults()))
    return failure();
  gpu::ReturnOp::create(b, loc);
  return success();
}

void KernelEmitter::emitScalarPreBlock() {
  // Per-edge inputs, read at the edge's row, and the scalars computed from
  // them and constants alone.
  int64_t edgesPerWarp = layout.tile / layout.warps;
  for (BlockArgument arg : func.getArguments())
    if (isa<bvec::ScalarType>(arg.getType()))
      for (int64_t i = 0; i < edgesPerWarp; ++i)
        scalars[{arg, i}] = memref::LoadOp::create(
            b, loc, memrefOf(arg), ValueRange{resultRow(localEdge(i))});
  emitElementwiseScalars(-1);
}

void KernelEmitter::emitElementwiseScalars(int64_t stage) {
  int64_t edgesPerWarp = layout.tile / layout.warps;
  for (Operation &op : func.getBody().front().without_terminator()) {
    Value result = op.getResult(0);
    if (!isa<bvec::ScalarType>(result.getType()) ||
        isa<bvec::VecMulVecOp, bvec::NormOp, bvec::ReduceOp, bvec::ConstantOp>(
            op) ||
        stages.of(result) != stage)
      continue;
    for (int64_t i = 0; i < edgesPerWarp; ++i) {
      SmallVector<Value> operands;
      for (Value operand : op.getOperands())
        operands.push_back(ChunkLoopEmitter(*this).scalar(operand, i));
      scalars[{result, i}] = ChunkLoopEmitter(*this).applyElementwise(
          &op, operands, /*scalarMode=*/true);
    }
  }
}

LogicalResult KernelEmitter::emitStage(int64_t stage) {
  // Matrix products of the stage read their materialized inputs and write
  // their outputs to shared memory before the chunk loops run.
  // The products share the block's work-item table: each one after the
  // first waits until every warp has finished the previous one's items.
  bool anyMatrix = false;
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (!bvec::isMatrixProduct(&op) || stages.of(op.getResult(0)) != stage)
      continue;
    if (anyMatrix)
      gpu::BarrierOp::create(b, loc);
    if (auto mm = dyn_cast<bvec::VecMulMatOp>(op))
      MatrixStageEmitter(*this).emitProduct(mm);
    else
      MatrixStageEmitter(*this).emitTransposedProduct(
          cast<bvec::MatMulVecOp>(op));
    anyMatrix = true;
  }
  if (anyMatrix)
    gpu::BarrierOp::create(b, loc);

  if (failed(ChunkLoopEmitter(*this).emitStage(stage)))
    return failure();
  emitScalarPostBlock(stage);
  return success();
}

void KernelEmitter::storeScalarResult(unsigned result, Value edge,
                                      Value value) {
  Value isLane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                        constIndex(0));
  Value inTile =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, edge, count);
  Value store = arith::AndIOp::create(b, loc, isLane0, inTile);
  scf::IfOp::create(b, loc, store, [&](OpBuilder &, Location) {
    memref::StoreOp::create(b, loc, value, resultMemrefs[result],
                            resultRow(edge));
    scf::YieldOp::create(b, loc);
  });
}

void KernelEmitter::emitScalarPostBlock(int64_t stage) {
  int64_t edgesPerWarp = layout.tile / layout.warps;
  // (Scalars of stage -1 were computed before the first stage.)
  emitElementwiseScalars(stage);
  // Scalar results complete in this stage.
  Operation *ret = func.getReturn();
  for (auto [r, value] : llvm::enumerate(ret->getOperands())) {
    if (!isa<bvec::ScalarType>(value.getType()) ||
        std::max<int64_t>(stages.of(value), 0) != stage)
      continue;
    for (int64_t i = 0; i < edgesPerWarp; ++i)
      storeScalarResult(r, localEdge(i),
                        ChunkLoopEmitter(*this).scalar(value, i));
  }
}

LogicalResult KernelEmitter::emitMatrixResults() {
  Operation *ret = func.getReturn();
  for (auto [r, value] : llvm::enumerate(ret->getOperands()))
    if (isa<bvec::MatType>(value.getType()))
      MatrixStageEmitter(*this).emitMatrixResult(r, value);
  return success();
}
