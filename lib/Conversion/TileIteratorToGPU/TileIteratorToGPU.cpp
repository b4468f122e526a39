//===- TileIteratorToGPU.cpp - tile tasks to tiled GPU kernels ------------===//
//
// GAMUT's kernel skeleton for one tile.task on CUDA cores: block tiles of
// pairs, thread sub-tiles in registers, operands indexed by k staged in
// shared memory per k-step (load iterators), the inner computation and the
// accumulator inlined per pair, the output operator fused into the stores
// (store iterators).
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileIteratorToGPU/TileIteratorToGPU.h"
#include "KernelEmitter.h"

#include "Conversion/GPUCommon/BundleAttributes.h"
#include "Dialect/Common/RuntimeTypes.h"
#include "Dialect/TileIterator/Analysis/SignatureAnalysis.h"
#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace kge {
#define GEN_PASS_DEF_CONVERTTILEITERATORTOGPU
#define GEN_PASS_DEF_TILESCHEDULE
#include "Conversion/Passes.h.inc"
} // namespace kge
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::kge;

using namespace mlir::kge::tilegpu;


Value KernelEmitter::combine(Combiner combiner, Value lhs, Value rhs) {
  return buildCombination(b, loc, combiner, lhs, rhs,
                          arith::FastMathFlags::contract);
}

Value KernelEmitter::loadIndex(Value array, Value at) {
  return arith::IndexCastOp::create(
      b, loc, b.getIndexType(),
      memref::LoadOp::create(b, loc, array, ValueRange{at}));
}

/// The gather of the row's key of the task's matrix per key (null without
/// one).
/// Whether the kernel of `shape` for `task` takes its row tiles along the
/// grid's x (up to 2^31 - 1 of them) instead of y (65,535): a plain
/// CUDA-core kernel whose output is one column tile wide (per-edge scalars
/// of millions of edges).
static bool rowsAlongX(TaskOp task, const TileShape &shape) {
  if (shape.mma || shape.warpgroup || shape.segments || shape.splitK ||
      shape.reductionSegments)
    return false;
  auto [source, dim] = task.getExtentSource(TaskOp::J);
  if (!source)
    return false;
  int64_t extent = cast<MemRefType>(source.getType()).getDimSize(dim);
  return !ShapedType::isDynamic(extent) && extent <= shape.bn;
}

/// The most blocks a grid has along y or z.
static constexpr int64_t kMaxGridYZ = 65535;

/// Whether the kernel of `shape` takes its row tiles along y and z (y +
/// 65535 z): the CUDA-core kernels of two-dimensional tiles (tensor-core
/// kernels keep y: their clusters and tile orders are along it).
static bool foldsRowTiles(const TileShape &shape) {
  return !shape.mma && !shape.warpgroup && !shape.segments && !shape.splitK &&
         !shape.reductionSegments;
}

static Value getKeyGather(TaskOp task) {
  std::optional<unsigned> perKey = task.getPerKeyInput();
  if (!perKey)
    return Value();
  AffineMap map =
      cast<AffineMapAttr>(task.getIndexingMaps()[*perKey]).getValue();
  for (unsigned d = 0; d < map.getNumResults(); ++d)
    if (map.getDimPosition(d) == TaskOp::I)
      return task.getGather(*perKey, d);
  return Value();
}

/// Whether input `n` is read at the block's key along i: the matrix per
/// key, or a pair operand whose row is chosen by the same key (TransR's
/// relation row R[r[i], j]: within a segment's block, a column-only
/// operand).
static bool isReadPerKey(TaskOp task, unsigned n) {
  if (task.getPerKeyInput() == n)
    return true;
  if (task.inputUses(n, TaskOp::K) || !task.inputUses(n, TaskOp::I) ||
      !task.inputUses(n, TaskOp::J))
    return false;
  Value key = getKeyGather(task);
  AffineMap map = cast<AffineMapAttr>(task.getIndexingMaps()[n]).getValue();
  for (unsigned d = 0; d < map.getNumResults(); ++d)
    if (map.getDimPosition(d) == TaskOp::I)
      return key && task.getGather(n, d) == key;
  return false;
}

/// The spatial dimension of input `n` (the one indexed by i or by j; none
/// for an input of k alone).
static std::optional<unsigned> spatialDim(TaskOp task, unsigned n) {
  AffineMap map = cast<AffineMapAttr>(task.getIndexingMaps()[n]).getValue();
  bool perKey = isReadPerKey(task, n);
  for (unsigned d = 0; d < map.getNumResults(); ++d) {
    unsigned axis = map.getDimPosition(d);
    if (axis != TaskOp::K && !(perKey && axis == TaskOp::I))
      return d;
  }
  return std::nullopt;
}

bool KernelEmitter::readsResolvedRows(unsigned n) {
  std::optional<unsigned> d = spatialDim(task, n);
  if (!d)
    return false;
  AffineMap map = cast<AffineMapAttr>(task.getIndexingMaps()[n]).getValue();
  return task.getGather(n, *d) ||
         (rowPerm && map.getDimPosition(*d) == TaskOp::I);
}

/// Input `n`'s index along its dimension `d` (spatial) at coordinate
/// `spatial`: through the sorted order of segment iterators for rows, then
/// through its index array where gathered.
Value KernelEmitter::resolveAt(unsigned n, unsigned d, Value spatial) {
  AffineMap map = cast<AffineMapAttr>(task.getIndexingMaps()[n]).getValue();
  Value at = map.getDimPosition(d) == TaskOp::I ? rowAt(spatial) : spatial;
  if (Value gather = task.getGather(n, d))
    at = loadIndex(arg(gather), at);
  return at;
}

Value KernelEmitter::resolveSpatial(unsigned n, Value spatial) {
  return resolveAt(n, *spatialDim(task, n), spatial);
}

SmallVector<Value, 3> KernelEmitter::inputIndices(unsigned n, Value spatial,
                                                  Value k, bool resolved) {
  AffineMap map = cast<AffineMapAttr>(task.getIndexingMaps()[n]).getValue();
  bool perKey = isReadPerKey(task, n);
  SmallVector<Value, 3> indices;
  for (unsigned d = 0; d < map.getNumResults(); ++d) {
    unsigned axis = map.getDimPosition(d);
    if (axis == TaskOp::K) {
      // Segments of the reduction: positions in the key order, then the
      // step's row of a table gathered along k.
      Value at = kPerm ? loadIndex(kPerm, k) : k;
      if (Value gather = task.getGather(n, d))
        at = loadIndex(arg(gather), at);
      indices.push_back(at);
      continue;
    }
    // The block's matrix of an input with one per key.
    if (perKey && axis == TaskOp::I) {
      indices.push_back(segmentKey);
      continue;
    }
    indices.push_back(resolved ? spatial : resolveAt(n, d, spatial));
  }
  // (Trailing unit dimensions: read at 0.)
  int64_t rank = cast<MemRefType>(task.getInputs()[n].getType()).getRank();
  if (static_cast<int64_t>(indices.size()) < rank)
    indices.resize(rank, arith::ConstantIndexOp::create(b, loc, 0));
  return indices;
}

Value KernelEmitter::loadGlobal(unsigned n, Value spatial, Value k) {
  return memref::LoadOp::create(b, loc, arg(task.getInputs()[n]),
                                inputIndices(n, spatial, k));
}

/// The load iterators of one k-step: every input indexed by k, from global
/// memory to shared memory, in two halves so that the next step's global
/// loads are issued before this step's arithmetic (register double
/// buffering). Threads read along the input's contiguous dimension;
/// coordinates past the extents are clamped (their values are never used:
/// the k loop stops at K and pairs past M or N are not stored).
void KernelEmitter::forEachStagedElement(
    Value k0, llvm::function_ref<void(unsigned, Value, Value, Value, Value,
                                      Value)>
                  visit) {
  Value lastK = arith::SubIOp::create(b, loc, extents[TaskOp::K], idx(1));
  for (auto [n, kind] : llvm::enumerate(kinds)) {
    if (kind == InputKind::RowOnly || kind == InputKind::ColOnly ||
        kind == InputKind::PairOnly)
      continue;
    if (kind == InputKind::KOnly) {
      Value k = minIndex(arith::AddIOp::create(b, loc, k0, tid), lastK);
      visit(n, less(tid, idx(shape.bk)), Value(), k, tid, Value());
      continue;
    }
    bool rows = kind == InputKind::RowK;
    int64_t span = rows ? shape.bm : shape.bn;
    Value base = rows ? rowBase : colBase;
    Value lastSpatial = arith::SubIOp::create(
        b, loc, extents[rows ? TaskOp::I : TaskOp::J], idx(1));
    bool kContiguous = isKContiguous(task, n);
    int64_t elements = shape.bk * span;
    for (int64_t first = 0; first < elements; first += shape.threads()) {
      Value e = arith::AddIOp::create(b, loc, tid, idx(first));
      Value kk, s;
      if (kContiguous) {
        kk = arith::RemUIOp::create(b, loc, e, idx(shape.bk));
        s = arith::DivUIOp::create(b, loc, e, idx(shape.bk));
      } else {
        s = arith::RemUIOp::create(b, loc, e, idx(span));
        kk = arith::DivUIOp::create(b, loc, e, idx(span));
      }
      Value k = minIndex(arith::AddIOp::create(b, loc, k0, kk), lastK);
      Value sp = minIndex(arith::AddIOp::create(b, loc, base, s), lastSpatial);
      Value inTile = first + shape.threads() <= elements
                         ? Value()
                         : less(e, idx(elements));
      visit(n, inTile, sp, k, kk, s);
    }
  }
}

SmallVector<Value> KernelEmitter::loadStage(Value k0) {
  SmallVector<Value> values;
  forEachStagedElement(k0, [&](unsigned n, Value, Value spatial, Value k,
                               Value, Value) {
    values.push_back(loadGlobal(n, spatial, k));
  });
  return values;
}

void KernelEmitter::storeStage(Value k0, ValueRange values) {
  unsigned next = 0;
  forEachStagedElement(k0, [&](unsigned n, Value inTile, Value, Value,
                               Value kk, Value s) {
    Value value = values[next++];
    SmallVector<Value> at = {kk};
    if (s)
      at.push_back(s);
    if (!inTile) {
      memref::StoreOp::create(b, loc, value, tiles[n], at);
      return;
    }
    auto guardOp = scf::IfOp::create(b, loc, inTile, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(guardOp.thenBlock());
    memref::StoreOp::create(b, loc, value, tiles[n], at);
  });
}

void KernelEmitter::storeOutput(Value value, Value acc, Value i, Value j,
                                ValueRange spatial) {
  ValueRange outputs = task.getOutputs();
  switch (task.getOutput()) {
  case OutputKind::dense: {
    SmallVector<Value, 2> at = getDenseOutputIndices(task, i, j);
    // A split reduction's blocks combine their partial results.
    if (shape.splitK) {
      combineAtomically(task.getAccumulate(), arg(outputs[0]), at, value);
      return;
    }
    if (task.getUpdate())
      value = accumulate(memref::LoadOp::create(b, loc, arg(outputs[0]), at),
                         value);
    memref::StoreOp::create(b, loc, value, arg(outputs[0]), at);
    return;
  }
  case OutputKind::aggregate: {
    // Without column keys, the group's column is j.
    Value col = task.getKeys().size() == 2
                    ? castIndex(memref::LoadOp::create(
                                    b, loc, arg(task.getKeys()[1]), j),
                                b.getIndexType())
                    : j;
    SmallVector<Value> group = {groupRow(i), col};
    combineAtomically(task.getAggregateCombiner(), arg(outputs[0]), group,
                      value);
    return;
  }
  case OutputKind::per_key:
    // The block's partial reduction into its key's matrix.
    combineAtomically(task.getAccumulate(), arg(outputs[0]),
                      {segmentKey, i, j}, value);
    return;
  case OutputKind::select:
  case OutputKind::top_k:
  case OutputKind::distinct:
  case OutputKind::reduce:
    break;
  }
  llvm_unreachable("stored by their own iterators");
}

void KernelEmitter::combineAtomically(Combiner combiner, Value groups,
                                      ValueRange group, Value value) {
  bool isFloat = isa<FloatType>(value.getType());
  unsigned width = value.getType().getIntOrFloatBitWidth();
  if (isFloat && combiner != Combiner::add && (width == 32 || width == 64)) {
    // Float max/min as one integer atomic on the bits, not LLVM's atomicrmw
    // fmax/fmin (a compare-and-swap loop: under contention, as on a hub
    // node's softmax maximum, each retry re-reads the address). Ordered as
    // signed integers, non-negative floats keep their order; negative ones
    // order reversed as unsigned integers, and every negative one is above
    // every non-negative one as unsigned. So max: signed max for a
    // non-negative value, unsigned min for a negative one; min: signed min,
    // unsigned max.
    Type bitsType = b.getIntegerType(width);
    Value bits = arith::BitcastOp::create(b, loc, bitsType, value);
    Value negative = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::slt, bits,
        arith::ConstantOp::create(b, loc, b.getIntegerAttr(bitsType, 0)));
    // The element's address (the whole buffer, row-major).
    Value linear = idx(0);
    for (auto [d, at] : llvm::enumerate(group))
      linear = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, linear,
                                memref::DimOp::create(b, loc, groups, d)),
          at);
    Value address = elementAddress(groups, linear, bitsType);
    bool max = combiner == Combiner::max;
    scf::IfOp::create(
        b, loc, negative,
        [&](OpBuilder &nested, Location l) {
          LLVM::AtomicRMWOp::create(
              nested, l, max ? LLVM::AtomicBinOp::umin : LLVM::AtomicBinOp::umax,
              address, bits, LLVM::AtomicOrdering::monotonic);
          scf::YieldOp::create(nested, l);
        },
        [&](OpBuilder &nested, Location l) {
          LLVM::AtomicRMWOp::create(
              nested, l, max ? LLVM::AtomicBinOp::max : LLVM::AtomicBinOp::min,
              address, bits, LLVM::AtomicOrdering::monotonic);
          scf::YieldOp::create(nested, l);
        });
    return;
  }
  arith::AtomicRMWKind kind =
      combiner == Combiner::add
          ? (isFloat ? arith::AtomicRMWKind::addf : arith::AtomicRMWKind::addi)
      : combiner == Combiner::max
          ? (isFloat ? arith::AtomicRMWKind::maxnumf
                     : arith::AtomicRMWKind::maxs)
          : (isFloat ? arith::AtomicRMWKind::minnumf
                     : arith::AtomicRMWKind::mins);
  memref::AtomicRMWOp::create(b, loc, kind, value, groups, group);
}

void KernelEmitter::storeSelected(gpu::GPUFuncOp kernel,
                                  ArrayRef<Value> values,
                                  ArrayRef<Value> holds, ArrayRef<Value> rows,
                                  ArrayRef<Value> cols) {
  MLIRContext *ctx = b.getContext();
  auto shared = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  ValueRange outputs = task.getOutputs();
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value blockCount = kernel.addWorkgroupAttribution(
      MemRefType::get({1}, i32, MemRefLayoutAttrInterface(), shared), loc);
  Value blockBase = kernel.addWorkgroupAttribution(
      MemRefType::get({1}, i64, MemRefLayoutAttrInterface(), shared), loc);
  Value zero = idx(0);
  Value isFirst =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, zero);
  auto onFirst = [&](llvm::function_ref<void()> body) {
    inThen(isFirst, body);
  };
  onFirst([&] {
    memref::StoreOp::create(b, loc, arith::ConstantIntOp::create(b, loc, i32, 0),
                            blockCount, ValueRange{zero});
  });
  Value mine = arith::ConstantIntOp::create(b, loc, i32, 0);
  for (Value h : holds)
    mine = arith::AddIOp::create(b, loc, mine,
                                 arith::ExtUIOp::create(b, loc, i32, h));
  gpu::BarrierOp::create(b, loc);
  Value offset = memref::AtomicRMWOp::create(
      b, loc, arith::AtomicRMWKind::addi, mine, blockCount, ValueRange{zero});
  gpu::BarrierOp::create(b, loc);
  onFirst([&] {
    Value total = arith::ExtUIOp::create(
        b, loc, i64, memref::LoadOp::create(b, loc, blockCount, zero));
    Value base = memref::AtomicRMWOp::create(
        b, loc, arith::AtomicRMWKind::addi, total, arg(outputs[3]),
        ValueRange{zero});
    memref::StoreOp::create(b, loc, base, blockBase, ValueRange{zero});
  });
  gpu::BarrierOp::create(b, loc);
  Value slot = arith::AddIOp::create(
      b, loc, memref::LoadOp::create(b, loc, blockBase, zero),
      arith::ExtUIOp::create(b, loc, i64, offset));
  Value capacity = arith::IndexCastOp::create(
      b, loc, i64, memref::DimOp::create(b, loc, arg(outputs[0]), 0));
  Type coord = cast<MemRefType>(outputs[0].getType()).getElementType();
  Value one = arith::ConstantIntOp::create(b, loc, i64, 1);
  for (auto [n, h] : llvm::enumerate(holds)) {
    Value fits = arith::AndIOp::create(
        b, loc, h,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, slot,
                              capacity));
    auto ifStore = scf::IfOp::create(b, loc, fits, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifStore.thenBlock());
      Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), slot);
      int64_t r = n / shape.tn, c = n % shape.tn;
      memref::StoreOp::create(b, loc, castIndex(rows[r], coord), arg(outputs[0]),
                              at);
      memref::StoreOp::create(b, loc, castIndex(cols[c], coord), arg(outputs[1]),
                              at);
      memref::StoreOp::create(b, loc, values[n], arg(outputs[2]), at);
    }
    slot = arith::AddIOp::create(
        b, loc, slot,
        arith::SelectOp::create(b, loc, h, one,
                                arith::ConstantIntOp::create(b, loc, i64, 0)));
  }
}

void KernelEmitter::storeReduced(
    gpu::GPUFuncOp kernel, Value partials, ArrayRef<Value> accs,
    ArrayRef<Value> stored, ArrayRef<Value> rows, ArrayRef<Value> cols,
    ArrayRef<Value> localRows,
    llvm::function_ref<SmallVector<Value>(int64_t, int64_t)> spatialOf) {
  MLIRContext *ctx = b.getContext();
  auto shared = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Combiner combiner = task.getAggregateCombiner();
  Type valueType = task.getValueType();
  Value identity = arith::ConstantOp::create(
      b, loc, getCombinerIdentity(combiner, valueType));
  // The threads that share a row of the block, one slot each: along the
  // columns (CUDA cores), or the warps along the columns times the four
  // lanes of a fragment's row (tensor cores).
  int64_t slots;
  Value slot;
  if (shape.mma) {
    slots = shape.warpsN() * 4;
    slot = arith::AddIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, warpCol, idx(shape.tn)),
        arith::RemUIOp::create(b, loc, lane, idx(4)));
  } else {
    slots = shape.colThreads();
    slot = tx;
  }
  Value rowValues = kernel.addWorkgroupAttribution(
      MemRefType::get({slots, shape.bm}, valueType,
                      MemRefLayoutAttrInterface(), shared),
      loc);
  // A thread's rows are runs of four: their stores may merge into 16-byte
  // vectors, so the slots start on 16 bytes (after a join's 4-byte flag).
  kernel.setWorkgroupAttributionAttr(kernel.getNumWorkgroupAttributions() - 1,
                                     LLVM::LLVMDialect::getAlignAttrName(),
                                     b.getI64IntegerAttr(16));
  for (int64_t r = 0; r < shape.tm; ++r) {
    Value partial = identity;
    for (int64_t c = 0; c < shape.tn; ++c) {
      Value value = projected(accs[r * shape.tn + c], rows[r], cols[c],
                              spatialOf(r, c));
      partial = combine(combiner, partial,
                        arith::SelectOp::create(b, loc, stored[r * shape.tn + c],
                                                value, identity));
    }
    memref::StoreOp::create(b, loc, partial, rowValues,
                            ValueRange{slot, localRows[r]});
  }
  gpu::BarrierOp::create(b, loc);
  // One thread a row: the slots in order, then the block's partial value
  // at (column tile, row).
  Value columnTile = arith::DivUIOp::create(b, loc, colBase, idx(shape.bn));
  Value numRows =
      memref::DimOp::create(b, loc, arg(task.getOutputs()[0]), 0);
  auto perRow = scf::ForOp::create(b, loc, tid, idx(shape.bm),
                                   idx(shape.blockThreads()));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(perRow.getBody());
    Value row = perRow.getInductionVar();
    Value total =
        memref::LoadOp::create(b, loc, rowValues, ValueRange{idx(0), row});
    for (int64_t other = 1; other < slots; ++other)
      total = combine(
          combiner, total,
          memref::LoadOp::create(b, loc, rowValues, ValueRange{idx(other), row}));
    Value position = arith::AddIOp::create(b, loc, rowBase, row);
    inThen(less(position, extents[TaskOp::I]), [&] {
      Value at = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, columnTile, numRows),
          rowAt(position));
      memref::StoreOp::create(b, loc, total, partials, ValueRange{at});
    });
  }
  // The shared partial values are written again by the next rows of a
  // segment.
  gpu::BarrierOp::create(b, loc);
}

void KernelEmitter::emitReduceFinalize(gpu::GPUFuncOp kernel) {
  b.setInsertionPointToStart(&kernel.getBody().front());
  Value partials = kernel.getArgument(0), output = kernel.getArgument(1);
  Value tiles = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                           kernel.getArgument(2));
  Value numRows = memref::DimOp::create(b, loc, output, 0);
  Value row = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc,
                            gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                            idx(kReduceFinalizeThreads)),
      gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  inThen(less(row, numRows), [&] {
    // From the identity: no column tiles (N = 0) leave it.
    Combiner combiner = task.getAggregateCombiner();
    Value identity = arith::ConstantOp::create(
        b, loc, getCombinerIdentity(combiner, task.getValueType()));
    auto loop = scf::ForOp::create(b, loc, idx(0), tiles, idx(1),
                                   ValueRange{identity});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value at = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, loop.getInductionVar(), numRows),
          row);
      scf::YieldOp::create(
          b, loc,
          combine(combiner, loop.getRegionIterArg(0),
                  memref::LoadOp::create(b, loc, partials, ValueRange{at})));
    }
    Value reduced = loop.getResult(0);
    if (!task.getFinalize().empty())
      reduced = inlineRegion(task.getFinalize(), {reduced, row});
    // (S as [M, 1]: column 0.)
    SmallVector<Value, 2> at = {row};
    if (cast<MemRefType>(output.getType()).getRank() == 2)
      at.push_back(idx(0));
    memref::StoreOp::create(b, loc, reduced, output, at);
  });
  gpu::ReturnOp::create(b, loc);
}

Value KernelEmitter::groupRow(Value i) {
  return castIndex(memref::LoadOp::create(b, loc, arg(task.getKeys()[0]), i),
                   b.getIndexType());
}

int64_t KernelEmitter::vectorAggregate() {
  if (task.getOutput() != OutputKind::aggregate || task.getKeys().size() != 1 ||
      task.getAggregateCombiner() != Combiner::add)
    return 0;
  auto type = cast<MemRefType>(task.getOutputs()[0].getType());
  if (type.getRank() != 2 || !type.getElementType().isF32())
    return 0;
  if (shape.mma)
    return shape.tn % 2 == 0 ? 2 : 0;
  return shape.width() == 4 ? 4 : 0;
}

Value KernelEmitter::elementAddress(Value array, Value at, Type element) {
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  Value base = LLVM::IntToPtrOp::create(
      b, loc, ptrType,
      ValueRange{arith::IndexCastOp::create(
          b, loc, b.getI64Type(),
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, array))});
  return LLVM::GEPOp::create(
      b, loc, ptrType, element, base,
      ValueRange{arith::IndexCastOp::create(b, loc, b.getI64Type(), at)});
}

Value KernelEmitter::relaxedLoad(Value array, Value at) {
  Type element = cast<MemRefType>(array.getType()).getElementType();
  Value address = elementAddress(array, at, element);
  return LLVM::LoadOp::create(
      b, loc, element, address,
      /*alignment=*/element.getIntOrFloatBitWidth() / 8,
      /*isVolatile=*/false, /*isNonTemporal=*/false, /*isInvariant=*/false,
      /*isInvariantGroup=*/false, LLVM::AtomicOrdering::monotonic);
}

void KernelEmitter::storeDistinct(Value set, ArrayRef<Value> values,
                                  ArrayRef<Value> holds) {
  ValueRange outputs = task.getOutputs();
  Type i1 = b.getI1Type(), i32 = b.getI32Type(), i64 = b.getI64Type();
  Type valueType = task.getValueType();
  unsigned width = valueType.getIntOrFloatBitWidth();
  auto c64 = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i64, v).getResult();
  };
  auto c32 = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
  };
  auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y).getResult();
  };
  // The table's slots precede the flag; a table of no slot (capacity 0)
  // finds no value's slot, so every kept value counts as new.
  Value flagAt = arith::SubIOp::create(
      b, loc, memref::DimOp::create(b, loc, set, 0), idx(1));
  Value slots = arith::IndexCastOp::create(b, loc, i64, flagAt);
  Value modulus = arith::MaxUIOp::create(b, loc, slots, c64(1));
  Value capacity = arith::IndexCastOp::create(
      b, loc, i64, memref::DimOp::create(b, loc, arg(outputs[0]), 0));
  Value count = arg(outputs[1]);
  // Slots are read whole by relaxedLoad (a plain load of unknown alignment
  // is split into halves, and a half-written slot would read as another
  // value's).

  for (auto [value, hold] : llvm::zip(values, holds)) {
    auto ifHeld = scf::IfOp::create(b, loc, hold, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifHeld.thenBlock());
    // One representative per value: every NaN is one value, and -0 is +0
    // (values compare with ==, as on the CPU path).
    Value v = value;
    if (auto floatType = dyn_cast<FloatType>(valueType)) {
      Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO,
                                          v, v);
      Value isZero = arith::CmpFOp::create(
          b, loc, arith::CmpFPredicate::OEQ, v,
          arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, 0.0)));
      v = arith::SelectOp::create(
          b, loc, isZero,
          arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, 0.0)),
          v);
      v = arith::SelectOp::create(
          b, loc, isNaN,
          arith::ConstantOp::create(
              b, loc,
              b.getFloatAttr(floatType, APFloat::getQNaN(
                                            floatType.getFloatSemantics()))),
          v);
    }
    // The slot's key, never 0 (an empty slot): values of at most 32 bits
    // with bit 32 set; f64 complemented (all ones is a NaN, represented
    // otherwise); an i64 of 0 is flagged apart.
    Value bits = v;
    if (isa<FloatType>(valueType))
      bits = arith::BitcastOp::create(b, loc, b.getIntegerType(width), v);
    Value key;
    Value special;
    if (width < 64) {
      key = arith::OrIOp::create(
          b, loc, arith::ExtUIOp::create(b, loc, i64, bits),
          c64(int64_t(1) << 32));
    } else if (isa<FloatType>(valueType)) {
      key = arith::XOrIOp::create(b, loc, bits, c64(-1));
    } else {
      key = bits;
      special = cmp(arith::CmpIPredicate::eq, key, c64(0));
    }

    // Probes from the key's hash (MurmurHash3's finalizer); a slot read
    // empty is claimed by compare-and-swap. State 0: probing, 1: found,
    // 2: inserted (the first of the value).
    auto probe = [&]() -> Value {
      Value h = arith::XOrIOp::create(
          b, loc, key, arith::ShRUIOp::create(b, loc, key, c64(33)));
      h = arith::MulIOp::create(b, loc, h,
                                c64(static_cast<int64_t>(0xff51afd7ed558ccdULL)));
      h = arith::XOrIOp::create(b, loc, h,
                                arith::ShRUIOp::create(b, loc, h, c64(33)));
      Value start = arith::RemUIOp::create(b, loc, h, modulus);
      auto loop = scf::WhileOp::create(b, loc, TypeRange{i64, i32},
                                       ValueRange{c64(0), c32(0)});
      {
        OpBuilder::InsertionGuard loopGuard(b);
        Block *before = b.createBlock(&loop.getBefore(), {}, {i64, i32},
                                      {loc, loc});
        Value go = arith::AndIOp::create(
            b, loc,
            cmp(arith::CmpIPredicate::eq, before->getArgument(1), c32(0)),
            cmp(arith::CmpIPredicate::ult, before->getArgument(0), slots));
        scf::ConditionOp::create(b, loc, go, before->getArguments());
        Block *after = b.createBlock(&loop.getAfter(), {}, {i64, i32},
                                     {loc, loc});
        Value probeIndex = after->getArgument(0);
        Value at = arith::IndexCastOp::create(
            b, loc, b.getIndexType(),
            arith::RemUIOp::create(
                b, loc, arith::AddIOp::create(b, loc, start, probeIndex),
                modulus));
        Value seen = relaxedLoad(set, at);
        auto ifEmpty = scf::IfOp::create(
            b, loc, TypeRange{i32}, cmp(arith::CmpIPredicate::eq, seen, c64(0)),
            /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard ifGuard(b);
          b.setInsertionPointToStart(ifEmpty.thenBlock());
          auto rmw = memref::GenericAtomicRMWOp::create(b, loc, set, at);
          {
            OpBuilder::InsertionGuard rmwGuard(b);
            b.setInsertionPointToStart(rmw.getBody());
            Value current = rmw.getCurrentValue();
            memref::AtomicYieldOp::create(
                b, loc,
                arith::SelectOp::create(
                    b, loc, cmp(arith::CmpIPredicate::eq, current, c64(0)),
                    key, current));
          }
          Value old = rmw.getResult();
          scf::YieldOp::create(
              b, loc,
              ValueRange{arith::SelectOp::create(
                  b, loc, cmp(arith::CmpIPredicate::eq, old, c64(0)), c32(2),
                  arith::SelectOp::create(
                      b, loc, cmp(arith::CmpIPredicate::eq, old, key), c32(1),
                      c32(0)))});
          b.setInsertionPointToStart(ifEmpty.elseBlock());
          scf::YieldOp::create(
              b, loc,
              ValueRange{arith::SelectOp::create(
                  b, loc, cmp(arith::CmpIPredicate::eq, seen, key), c32(1),
                  c32(0))});
        }
        scf::YieldOp::create(
            b, loc,
            ValueRange{arith::AddIOp::create(b, loc, probeIndex, c64(1)),
                       ifEmpty.getResult(0)});
      }
      // Found: not new. Inserted, or no slot left (the table is full: more
      // values than twice the capacity, so the count exceeds it): counted.
      return cmp(arith::CmpIPredicate::ne, loop.getResult(1), c32(1));
    };
    Value isNew;
    if (special) {
      auto ifSpecial = scf::IfOp::create(b, loc, TypeRange{i1}, special,
                                         /*withElseRegion=*/true);
      OpBuilder::InsertionGuard specialGuard(b);
      b.setInsertionPointToStart(ifSpecial.thenBlock());
      // The flag: read, and exchanged only while it reads clear.
      Value flag = relaxedLoad(set, flagAt);
      auto ifClear = scf::IfOp::create(
          b, loc, TypeRange{i1}, cmp(arith::CmpIPredicate::eq, flag, c64(0)),
          /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard clearGuard(b);
        b.setInsertionPointToStart(ifClear.thenBlock());
        Value old = memref::AtomicRMWOp::create(
            b, loc, arith::AtomicRMWKind::assign, c64(1), set, flagAt);
        scf::YieldOp::create(
            b, loc, ValueRange{cmp(arith::CmpIPredicate::eq, old, c64(0))});
        b.setInsertionPointToStart(ifClear.elseBlock());
        scf::YieldOp::create(
            b, loc,
            ValueRange{arith::ConstantIntOp::create(b, loc, i1, 0).getResult()});
      }
      scf::YieldOp::create(b, loc, ifClear.getResults());
      b.setInsertionPointToStart(ifSpecial.elseBlock());
      scf::YieldOp::create(b, loc, ValueRange{probe()});
      isNew = ifSpecial.getResult(0);
    } else {
      isNew = probe();
    }
    inThen(isNew, [&] {
      Value slot = memref::AtomicRMWOp::create(
          b, loc, arith::AtomicRMWKind::addi, c64(1), count, ValueRange{idx(0)});
      inThen(cmp(arith::CmpIPredicate::slt, slot, capacity), [&] {
        memref::StoreOp::create(
            b, loc, v, arg(outputs[0]),
            ValueRange{
                arith::IndexCastOp::create(b, loc, b.getIndexType(), slot)});
      });
    });
  }
}

Value KernelEmitter::topKKey(Value value) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
  };
  Value u;
  if (isa<FloatType>(value.getType())) {
    // Negative floats: all bits flipped; others: the sign bit set.
    Value bits = arith::BitcastOp::create(b, loc, i32, value);
    Value sign = arith::ShRSIOp::create(b, loc, bits, c(31));
    u = arith::XOrIOp::create(
        b, loc, bits,
        arith::OrIOp::create(b, loc, sign, c(int32_t(0x80000000u))));
  } else {
    u = arith::XOrIOp::create(b, loc, value, c(int32_t(0x80000000u)));
  }
  // Ascending u is ascending value; the largest first needs ~u.
  return task.getSmallest() ? u : arith::XOrIOp::create(b, loc, u, c(-1));
}

Value KernelEmitter::topKValue(Value key, Type type) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
  };
  Value u = task.getSmallest() ? key : arith::XOrIOp::create(b, loc, key, c(-1));
  Value high = c(int32_t(0x80000000u));
  if (!isa<FloatType>(type))
    return arith::XOrIOp::create(b, loc, u, high);
  Value wasPositive = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, arith::AndIOp::create(b, loc, u, high),
      c(0));
  Value bits = arith::SelectOp::create(
      b, loc, wasPositive, arith::XOrIOp::create(b, loc, u, high),
      arith::XOrIOp::create(b, loc, u, c(-1)));
  return arith::BitcastOp::create(b, loc, type, bits);
}

Value KernelEmitter::ranksBefore(Value keyA, Value rowA, Value colA,
                                 Value keyB, Value rowB, Value colB) {
  auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y).getResult();
  };
  Value keyLess = cmp(arith::CmpIPredicate::ult, keyA, keyB);
  Value keyEqual = cmp(arith::CmpIPredicate::eq, keyA, keyB);
  Value pairLess = arith::OrIOp::create(
      b, loc, cmp(arith::CmpIPredicate::slt, rowA, rowB),
      arith::AndIOp::create(b, loc, cmp(arith::CmpIPredicate::eq, rowA, rowB),
                            cmp(arith::CmpIPredicate::slt, colA, colB)));
  return arith::OrIOp::create(b, loc, keyLess,
                              arith::AndIOp::create(b, loc, keyEqual, pairLess));
}

void KernelEmitter::bitonicSort(
    Value keys, Value payloads, int64_t length, int64_t threads,
    llvm::function_ref<Value(Value, Value, Value, Value)> after) {
  int64_t levels = llvm::Log2_64(length);
  int64_t rounds = llvm::divideCeil(length, threads);
  for (int64_t s = 1; s <= levels; ++s)
    for (int64_t t = s - 1; t >= 0; --t) {
      int64_t size = int64_t(1) << s, stride = int64_t(1) << t;
      gpu::BarrierOp::create(b, loc);
      for (int64_t m = 0; m < rounds; ++m) {
        Value e = arith::AddIOp::create(b, loc, tid, idx(m * threads));
        Value partner = arith::XOrIOp::create(b, loc, e, idx(stride));
        Value active = length % threads == 0
                           ? less(e, partner)
                           : arith::AndIOp::create(b, loc, less(e, partner),
                                                   less(e, idx(length)))
                                 .getResult();
        inThen(active, [&] {
          Value ascending = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::eq,
              arith::AndIOp::create(b, loc, e, idx(size)), idx(0));
          Value ka = memref::LoadOp::create(b, loc, keys, ValueRange{e});
          Value kb = memref::LoadOp::create(b, loc, keys, ValueRange{partner});
          Value pa = memref::LoadOp::create(b, loc, payloads, ValueRange{e});
          Value pb =
              memref::LoadOp::create(b, loc, payloads, ValueRange{partner});
          // Swap when the pair is out of this subsequence's order.
          Value swap = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             after(ka, kb, pa, pb), ascending);
          inThen(swap, [&] {
            memref::StoreOp::create(b, loc, kb, keys, ValueRange{e});
            memref::StoreOp::create(b, loc, ka, keys, ValueRange{partner});
            memref::StoreOp::create(b, loc, pb, payloads, ValueRange{e});
            memref::StoreOp::create(b, loc, pa, payloads, ValueRange{partner});
          });
        });
      }
    }
}

int64_t tilegpu::getTopKShards(int64_t k) {
  return std::min<int64_t>(
      32, std::max<int64_t>(1, 4096 / int64_t(llvm::PowerOf2Ceil(k))));
}

void KernelEmitter::storeTopK(gpu::GPUFuncOp kernel, Value locks,
                              ArrayRef<Value> shardArrays,
                              ArrayRef<Value> values, ArrayRef<Value> holds,
                              ArrayRef<Value> localRows,
                              ArrayRef<Value> localCols) {
  MLIRContext *ctx = b.getContext();
  auto shared = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Type i32 = b.getI32Type();
  Type valueType = task.getValueType();
  int64_t count = shape.bm * shape.bn, k = *task.getK();
  auto ci = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
  };
  auto sharedArray = [&](int64_t n) {
    Value array = kernel.addWorkgroupAttribution(
        MemRefType::get({n}, i32, MemRefLayoutAttrInterface(), shared), loc);
    // LLVM merges the stores of neighbouring pairs into vectors.
    kernel.setWorkgroupAttributionAttr(kernel.getNumWorkgroupAttributions() - 1,
                                       LLVM::LLVMDialect::getAlignAttrName(),
                                       b.getI64IntegerAttr(16));
    return array;
  };
  Value keys = sharedArray(count), slots = sharedArray(count);
  Value globalKeys = sharedArray(k), globalRows = sharedArray(k),
        globalCols = sharedArray(k), flag = sharedArray(1);
  Value worst = ci(-1), none = ci(std::numeric_limits<int32_t>::max());
  Value zero = idx(0);
  // The block's shard of the k best: blocks take the shards in turn, each
  // shard a k best of its own under its own lock (the merge kernel takes
  // the k best of all shards); "global" below is the shard's.
  Value linearBlock = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::y),
                            gpu::GridDimOp::create(b, loc, gpu::Dimension::x)),
      gpu::BlockIdOp::create(b, loc, gpu::Dimension::x));
  Value shard = arith::RemUIOp::create(b, loc, linearBlock,
                                       idx(getTopKShards(k)));
  Value shardBase = arith::MulIOp::create(b, loc, shard, idx(k));
  auto inShard = [&](Value e) {
    return arith::AddIOp::create(b, loc, shardBase, e).getResult();
  };
  Value shardValues = shardArrays[0], shardRows = shardArrays[1],
        shardCols = shardArrays[2];
  auto loadShared = [&](Value array, Value at) {
    return memref::LoadOp::create(b, loc, array, ValueRange{at}).getResult();
  };
  auto storeShared = [&](Value v, Value array, Value at) {
    memref::StoreOp::create(b, loc, v, array, ValueRange{at});
  };
  auto toI32 = [&](Value v) {
    return arith::IndexCastOp::create(b, loc, i32, v).getResult();
  };

  // A block entry's (key, row, col): its slot in the block tile, or the
  // worst entry.
  auto blockEntry = [&](Value e) {
    Value key = loadShared(keys, e);
    Value slot = loadShared(slots, e);
    Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                        slot, ci(count));
    Value s = arith::IndexCastOp::create(b, loc, b.getIndexType(), slot);
    Value row = toI32(arith::AddIOp::create(
        b, loc, rowBase, arith::DivUIOp::create(b, loc, s, idx(shape.bn))));
    Value col = toI32(arith::AddIOp::create(
        b, loc, colBase, arith::RemUIOp::create(b, loc, s, idx(shape.bn))));
    return std::make_tuple(
        key, arith::SelectOp::create(b, loc, valid, row, none).getResult(),
        arith::SelectOp::create(b, loc, valid, col, none).getResult(), valid);
  };
  // Shard entries are read with relaxed atomic loads: other blocks wrote
  // them, and L1 is not coherent.
  auto globalEntry = [&](Value e) {
    Value at = inShard(e);
    Value row = relaxedLoad(shardRows, at);
    Value col = relaxedLoad(shardCols, at);
    Value value = relaxedLoad(shardValues, at);
    Value filled =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, row, ci(-1));
    return std::make_tuple(
        arith::SelectOp::create(b, loc, filled, topKKey(value), worst)
            .getResult(),
        arith::SelectOp::create(b, loc, filled, row, none).getResult(),
        arith::SelectOp::create(b, loc, filled, col, none).getResult());
  };
  Value lock = locks;
  Value lockAt = shard;

  // The global k-th now: the candidates that do not rank before it never
  // enter (it only improves), and a block without any skips the rest.
  Value threshold = sharedArray(4);
  inThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, zero),
         [&] {
           auto [gk, gr, gc] = globalEntry(idx(k - 1));
           storeShared(gk, threshold, idx(0));
           storeShared(gr, threshold, idx(1));
           storeShared(gc, threshold, idx(2));
           storeShared(ci(0), threshold, idx(3));
         });
  gpu::BarrierOp::create(b, loc);
  Value thresholdKey = loadShared(threshold, idx(0));
  Value thresholdRow = loadShared(threshold, idx(1));
  Value thresholdCol = loadShared(threshold, idx(2));
  // Every entry starts as the worst key with an out-of-tile slot; the
  // block's candidates are then packed at the front (a shared counter), so
  // that a block with few of them sorts only a short prefix.
  int64_t perThread = count / shape.threads();
  for (int64_t m = 0; m < perThread; ++m) {
    Value e = arith::AddIOp::create(b, loc, tid, idx(m * shape.threads()));
    storeShared(worst, keys, e);
    storeShared(ci(count), slots, e);
  }
  gpu::BarrierOp::create(b, loc);
  for (auto [n, h] : llvm::enumerate(holds)) {
    int64_t r = n / shape.tn, c = n % shape.tn;
    Value slot = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, localRows[r], idx(shape.bn)),
        localCols[c]);
    // NaN values are not candidates.
    Value candidate = h;
    if (isa<FloatType>(valueType))
      candidate = arith::AndIOp::create(
          b, loc, candidate,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ORD, values[n],
                                values[n]));
    candidate = arith::AndIOp::create(
        b, loc, candidate,
        ranksBefore(topKKey(values[n]),
                    toI32(arith::AddIOp::create(b, loc, rowBase, localRows[r])),
                    toI32(arith::AddIOp::create(b, loc, colBase, localCols[c])),
                    thresholdKey, thresholdRow, thresholdCol));
    inThen(candidate, [&] {
      Value at = memref::AtomicRMWOp::create(b, loc,
                                             arith::AtomicRMWKind::addi, ci(1),
                                             threshold, ValueRange{idx(3)});
      Value e = arith::IndexCastOp::create(b, loc, b.getIndexType(), at);
      storeShared(topKKey(values[n]), keys, e);
      storeShared(toI32(slot), slots, e);
    });
  }

  gpu::BarrierOp::create(b, loc);
  Value candidates = loadShared(threshold, idx(3));
  Value anyCandidate = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                             candidates, ci(0));
  auto ifAny = scf::IfOp::create(b, loc, anyCandidate, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard anyGuard(b);
  b.setInsertionPointToStart(ifAny.thenBlock());
  // Bitonic sort of the first `length` entries (key, slot), ascending;
  // equal keys by slot (the pair's place in the tile: (i, j) order).
  auto sortPrefix = [&](int64_t length) {
    bitonicSort(keys, slots, length, shape.threads(),
                [&](Value ka, Value kb, Value sa, Value sb) -> Value {
                  return arith::OrIOp::create(
                      b, loc,
                      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                            ka, kb),
                      arith::AndIOp::create(
                          b, loc,
                          arith::CmpIOp::create(b, loc,
                                                arith::CmpIPredicate::eq, ka,
                                                kb),
                          arith::CmpIOp::create(b, loc,
                                                arith::CmpIPredicate::sgt, sa,
                                                sb)));
                });
  };
  // Few candidates (the usual case once the global k-th is good): only the
  // prefix that holds them; past it every entry is the worst.
  int64_t prefix =
      std::min<int64_t>(count, llvm::PowerOf2Ceil(std::max<int64_t>(k, 64)));
  if (prefix < count) {
    auto ifFew = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, candidates,
                              ci(prefix)),
        /*withElseRegion=*/true);
    OpBuilder::InsertionGuard fewGuard(b);
    b.setInsertionPointToStart(ifFew.thenBlock());
    sortPrefix(prefix);
    b.setInsertionPointToStart(ifFew.elseBlock());
    sortPrefix(count);
  } else {
    sortPrefix(count);
  }
  gpu::BarrierOp::create(b, loc);

  // Merge only when the block's best beats the global k-th (which only
  // improves, so reading it without the lock is safe).
  inThen(
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, zero), [&] {
        auto [bk, br, bc, valid] = blockEntry(zero);
        auto [gk, gr, gc] = globalEntry(idx(k - 1));
        Value merge = arith::AndIOp::create(
            b, loc, valid, ranksBefore(bk, br, bc, gk, gr, gc));
        storeShared(arith::ExtUIOp::create(b, loc, i32, merge), flag, zero);
        // (Structured bindings are not captured by lambdas in C++17.)
        Value bestKey = bk, bestRow = br, bestCol = bc;
        inThen(merge, [&] {
          // Acquire the lock; a block that finds it taken sleeps before
          // trying again (the spinning blocks' atomics would slow the
          // holder's).
          auto spin = scf::WhileOp::create(b, loc, TypeRange{}, ValueRange{});
          {
            OpBuilder::InsertionGuard guard(b);
            Block *before = b.createBlock(&spin.getBefore());
            b.setInsertionPointToStart(before);
            Value old = memref::AtomicRMWOp::create(
                b, loc, arith::AtomicRMWKind::assign, ci(1), lock,
                ValueRange{lockAt});
            scf::ConditionOp::create(
                b, loc,
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, old,
                                      ci(0)),
                ValueRange{});
            Block *after = b.createBlock(&spin.getAfter());
            b.setInsertionPointToStart(after);
            NVVM::NanosleepOp::create(b, loc, ci(256));
            scf::YieldOp::create(b, loc);
          }
          NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
          // The k-th may have improved while the block waited: merge only
          // if the block's best still beats it, else release at once.
          auto [gk2, gr2, gc2] = globalEntry(idx(k - 1));
          Value still = ranksBefore(bestKey, bestRow, bestCol, gk2, gr2, gc2);
          storeShared(arith::ExtUIOp::create(b, loc, i32, still), flag, zero);
          inThen(arith::XOrIOp::create(
                     b, loc, still,
                     arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)),
                 [&] {
                   memref::AtomicRMWOp::create(b, loc,
                                               arith::AtomicRMWKind::assign,
                                               ci(0), lock, ValueRange{lockAt});
                 });
        });
      });
  gpu::BarrierOp::create(b, loc);
  Value merging = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                        loadShared(flag, zero), ci(0));
  inThen(merging, [&] {
    // The global k best, into shared memory.
    for (int64_t first = 0; first < k; first += shape.threads()) {
      Value e = arith::AddIOp::create(b, loc, tid, idx(first));
      inThen(less(e, idx(k)), [&] {
        auto [gk, gr, gc] = globalEntry(e);
        storeShared(gk, globalKeys, e);
        storeShared(gr, globalRows, e);
        storeShared(gc, globalCols, e);
      });
    }
    gpu::BarrierOp::create(b, loc);
    // Each entry's place in the merged order: its index plus the entries of
    // the other list that rank before it (binary search).
    int64_t steps = llvm::Log2_64_Ceil(k + 1) + 1;
    auto rankIn = [&](bool inGlobal, Value key, Value row, Value col) {
      Value lo = zero, hi = idx(k);
      for (int64_t step = 0; step < steps; ++step) {
        Value mid = arith::DivUIOp::create(
            b, loc, arith::AddIOp::create(b, loc, lo, hi), idx(2));
        Value open = less(lo, hi);
        Value at = minIndex(mid, idx(k - 1));
        Value before;
        if (inGlobal) {
          before = ranksBefore(loadShared(globalKeys, at),
                               loadShared(globalRows, at),
                               loadShared(globalCols, at), key, row, col);
        } else {
          auto [bk, br, bc, valid] = blockEntry(at);
          (void)valid;
          before = ranksBefore(bk, br, bc, key, row, col);
        }
        // Open range: right of mid when the entry there ranks before, else
        // left of it.
        Value right = arith::AddIOp::create(b, loc, mid, idx(1));
        lo = arith::SelectOp::create(
            b, loc, open, arith::SelectOp::create(b, loc, before, right, lo),
            lo);
        hi = arith::SelectOp::create(
            b, loc, open, arith::SelectOp::create(b, loc, before, hi, mid),
            hi);
      }
      return lo;
    };
    auto place = [&](Value e, Value key, Value row, Value col,
                     bool fromGlobal) {
      Value position = arith::AddIOp::create(
          b, loc, e, rankIn(/*inGlobal=*/!fromGlobal, key, row, col));
      inThen(less(position, idx(k)), [&] {
        Value filled = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                             row, none);
        Value at = inShard(position);
        memref::StoreOp::create(b, loc, topKValue(key, valueType), shardValues,
                                ValueRange{at});
        memref::StoreOp::create(
            b, loc, arith::SelectOp::create(b, loc, filled, row, ci(-1)),
            shardRows, ValueRange{at});
        memref::StoreOp::create(
            b, loc, arith::SelectOp::create(b, loc, filled, col, ci(-1)),
            shardCols, ValueRange{at});
      });
    };
    for (int64_t first = 0; first < k; first += shape.threads()) {
      Value e = arith::AddIOp::create(b, loc, tid, idx(first));
      inThen(less(e, idx(k)), [&] {
        auto [bk, br, bc, valid] = blockEntry(e);
        (void)valid;
        place(e, bk, br, bc, /*fromGlobal=*/false);
        place(e, loadShared(globalKeys, e), loadShared(globalRows, e),
              loadShared(globalCols, e), /*fromGlobal=*/true);
      });
    }
    // Publish, then release the lock.
    NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
    gpu::BarrierOp::create(b, loc);
    inThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, zero),
           [&] {
             memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::assign,
                                         ci(0), lock, ValueRange{lockAt});
           });
  });
}

void KernelEmitter::emitTopKMerge(gpu::GPUFuncOp kernel) {
  MLIRContext *ctx = b.getContext();
  auto shared = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Type i32 = b.getI32Type();
  Type valueType = task.getValueType();
  int64_t k = *task.getK();
  int64_t entries = getTopKShards(k) * k;
  int64_t length = llvm::PowerOf2Ceil(entries);
  int64_t threads = 1024;
  auto ci = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
  };
  b.setInsertionPointToStart(&kernel.getBody().front());
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value shardValues = kernel.getArgument(0), shardRows = kernel.getArgument(1),
        shardCols = kernel.getArgument(2);
  auto array = [&]() {
    return kernel.addWorkgroupAttribution(
        MemRefType::get({length}, i32, MemRefLayoutAttrInterface(), shared),
        loc);
  };
  // Every shard's entries: their keys and their places in the shards
  // (empty ones and the padding to a power of two rank last).
  Value keys = array(), places = array();
  for (int64_t first = 0; first < length; first += threads) {
    Value e = arith::AddIOp::create(b, loc, tid, idx(first));
    // (Fewer entries than threads: the threads past them have none.)
    auto inLength = scf::IfOp::create(b, loc, less(e, idx(length)),
                                      /*withElseRegion=*/false);
    OpBuilder::InsertionGuard lengthGuard(b);
    b.setInsertionPointToStart(inLength.thenBlock());
    Value inEntries = less(e, idx(entries));
    Value safe = arith::SelectOp::create(b, loc, inEntries, e, idx(0));
    Value row = memref::LoadOp::create(b, loc, shardRows, ValueRange{safe});
    Value filled = arith::AndIOp::create(
        b, loc, inEntries,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, row, ci(-1)));
    Value value = memref::LoadOp::create(b, loc, shardValues, ValueRange{safe});
    memref::StoreOp::create(
        b, loc, arith::SelectOp::create(b, loc, filled, topKKey(value), ci(-1)),
        keys, ValueRange{e});
    memref::StoreOp::create(
        b, loc,
        arith::SelectOp::create(b, loc, filled,
                                arith::IndexCastOp::create(b, loc, i32, e),
                                ci(-1)),
        places, ValueRange{e});
  }
  // The order of two entries: key, then (row, col) (an empty entry's pair
  // ranks last).
  auto pairOf = [&](Value place) {
    Value filled = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                         place, ci(-1));
    Value at = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        arith::SelectOp::create(b, loc, filled, place, ci(0)));
    Value none = ci(std::numeric_limits<int32_t>::max());
    Value row = memref::LoadOp::create(b, loc, shardRows, ValueRange{at});
    Value col = memref::LoadOp::create(b, loc, shardCols, ValueRange{at});
    return std::make_pair(
        arith::SelectOp::create(b, loc, filled, row, none).getResult(),
        arith::SelectOp::create(b, loc, filled, col, none).getResult());
  };
  // Bitonic sort, ascending (best first); the pairs of entries are read
  // only for equal keys (ties, empty entries).
  bitonicSort(keys, places, length, threads,
              [&](Value ka, Value kb, Value pa, Value pb) -> Value {
                Value equal = arith::CmpIOp::create(
                    b, loc, arith::CmpIPredicate::eq, ka, kb);
                auto tie = scf::IfOp::create(b, loc, TypeRange{b.getI1Type()},
                                             equal, /*withElseRegion=*/true);
                OpBuilder::InsertionGuard guard(b);
                b.setInsertionPointToStart(tie.thenBlock());
                auto [ra, ca] = pairOf(pa);
                auto [rb, cb] = pairOf(pb);
                scf::YieldOp::create(b, loc, ranksBefore(kb, rb, cb, ka, ra, ca));
                b.setInsertionPointToStart(tie.elseBlock());
                scf::YieldOp::create(
                    b, loc,
                    arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                          ka, kb)
                        .getResult());
                return tie.getResult(0);
              });
  gpu::BarrierOp::create(b, loc);
  // The k best, best first; slots past the pairs keep the worst value and
  // no pair.
  ValueRange outputs = task.getOutputs();
  Value outValues = kernel.getArgument(3), outRows = kernel.getArgument(4),
        outCols = kernel.getArgument(5);
  Type coord = cast<MemRefType>(outputs[1].getType()).getElementType();
  for (int64_t first = 0; first < k; first += threads) {
    Value e = arith::AddIOp::create(b, loc, tid, idx(first));
    inThen(less(e, idx(k)), [&] {
      Value place = memref::LoadOp::create(b, loc, places, ValueRange{e});
      Value filled = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                           place, ci(-1));
      Value at = arith::IndexCastOp::create(
          b, loc, b.getIndexType(),
          arith::SelectOp::create(b, loc, filled, place, ci(0)));
      Value value = memref::LoadOp::create(b, loc, shardValues, ValueRange{at});
      Value row = memref::LoadOp::create(b, loc, shardRows, ValueRange{at});
      Value col = memref::LoadOp::create(b, loc, shardCols, ValueRange{at});
      Combiner worst = task.getSmallest() ? Combiner::min : Combiner::max;
      Value worstValue = arith::ConstantOp::create(
          b, loc, getCombinerIdentity(worst, valueType));
      auto widen = [&](Value v) -> Value {
        return coord == i32 ? v : arith::ExtSIOp::create(b, loc, coord, v);
      };
      Value empty = arith::ConstantIntOp::create(b, loc, coord, -1);
      memref::StoreOp::create(
          b, loc, arith::SelectOp::create(b, loc, filled, value, worstValue),
          outValues, ValueRange{e});
      memref::StoreOp::create(
          b, loc, arith::SelectOp::create(b, loc, filled, widen(row), empty),
          outRows, ValueRange{e});
      memref::StoreOp::create(
          b, loc, arith::SelectOp::create(b, loc, filled, widen(col), empty),
          outCols, ValueRange{e});
    });
  }
  gpu::ReturnOp::create(b, loc);
}

void KernelEmitter::emitStagedDenseStore(
    ArrayRef<Value> accs, ArrayRef<Value> rows, ArrayRef<Value> cols,
    ArrayRef<Value> localRows, ArrayRef<Value> localCols, Value consumer,
    llvm::function_ref<SmallVector<Value>(int64_t, int64_t)> spatialOf) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  auto shared = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  // Rows of bn + 8 floats: a warp's pairs (8 rows x 4 column pairs of a
  // fragment) fall in distinct banks. The stages hold the block tile whole
  // (warpgroup MMA) or in rounds of rows (mma.sync: a power of two of them).
  int64_t stride = shape.bn + 8;
  int64_t available = shape.mmaSharedBytes() - (shape.warpgroup ? 1024 : 0);
  int64_t roundRows = shape.bm;
  while (roundRows * stride * 4 > available)
    roundRows /= 2;
  assert(roundRows >= 16 && "a round holds whole fragments");
  auto tileType = MemRefType::get({roundRows, stride}, f32,
                                  MemRefLayoutAttrInterface(), shared);
  Value staged = memref::ViewOp::create(
      b, loc, tileType, mmaBytes,
      arith::MulIOp::create(b, loc, mmaBase,
                            idx(getMmaElementBits(*shape.mma) / 8)),
      ValueRange{});
  // The pairs' values (pure: computed once for every round).
  SmallVector<Value> values;
  for (int64_t r = 0; r < shape.tm; ++r)
    for (int64_t c = 0; c < shape.tn; ++c)
      values.push_back(
          projected(accs[r * shape.tn + c], rows[r], cols[c], spatialOf(r, c)));
  Value out = arg(task.getOutputs()[0]);
  Value extentI = extents[TaskOp::I], extentJ = extents[TaskOp::J];
  // 16-byte stores need rows of multiples of 4 floats and an aligned base.
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, out);
  Value vectors = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                            arith::RemUIOp::create(b, loc, extentJ, idx(4)),
                            idx(0)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                            arith::RemUIOp::create(b, loc, base, idx(16)),
                            idx(0)));
  auto pairType = VectorType::get({2}, f32);
  auto quadType = VectorType::get({4}, f32);
  int64_t quadsPerRow = shape.bn / 4;
  for (int64_t first = 0; first < shape.bm; first += roundRows) {
    // Every stage has been consumed (the cluster's multicasts included),
    // or the previous round has left.
    gpu::BarrierOp::create(b, loc);
    inThen(consumer, [&] {
      // Columns c and c + 1 (c even) of a thread are adjacent.
      for (int64_t r = 0; r < shape.tm; ++r) {
        Value local = arith::SubIOp::create(b, loc, localRows[r], idx(first));
        Value inRound =
            roundRows == shape.bm
                ? Value()
                : arith::AndIOp::create(
                      b, loc,
                      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                            localRows[r], idx(first)),
                      less(local, idx(roundRows)))
                      .getResult();
        inThen(inRound, [&] {
          for (int64_t c = 0; c < shape.tn; c += 2)
            vector::StoreOp::create(
                b, loc,
                vector::FromElementsOp::create(
                    b, loc, pairType,
                    ValueRange{values[r * shape.tn + c],
                               values[r * shape.tn + c + 1]}),
                staged, ValueRange{local, localCols[c]},
                /*nontemporal=*/false, llvm::MaybeAlign(8));
        });
      }
    });
    gpu::BarrierOp::create(b, loc);
    inThen(consumer, [&] {
      auto loop = scf::ForOp::create(
          b, loc, idx(0), idx(roundRows * quadsPerRow), idx(shape.threads()));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value q = arith::AddIOp::create(b, loc, loop.getInductionVar(), tid);
      Value row = arith::DivUIOp::create(b, loc, q, idx(quadsPerRow));
      Value col = arith::MulIOp::create(
          b, loc, arith::RemUIOp::create(b, loc, q, idx(quadsPerRow)), idx(4));
      Value i = arith::AddIOp::create(
          b, loc, arith::AddIOp::create(b, loc, rowBase, idx(first)), row);
      Value j = arith::AddIOp::create(b, loc, colBase, col);
      inThen(less(i, extentI), [&] {
        Value quad = vector::LoadOp::create(
            b, loc, quadType, staged, ValueRange{row, col},
            /*nontemporal=*/false, llvm::MaybeAlign(16));
        Value whole = arith::AndIOp::create(
            b, loc, vectors,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                  arith::AddIOp::create(b, loc, j, idx(4)),
                                  extentJ));
        auto ifWhole =
            scf::IfOp::create(b, loc, whole, /*withElseRegion=*/true);
        OpBuilder::InsertionGuard ifGuard(b);
        b.setInsertionPointToStart(ifWhole.thenBlock());
        vector::StoreOp::create(b, loc, quad, out, ValueRange{i, j},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
        b.setInsertionPointToStart(ifWhole.elseBlock());
        for (int64_t e = 0; e < 4; ++e) {
          Value je = arith::AddIOp::create(b, loc, j, idx(e));
          inThen(less(je, extentJ), [&] {
            memref::StoreOp::create(b, loc,
                                    vector::ExtractOp::create(b, loc, quad, e),
                                    out, ValueRange{i, je});
          });
        }
      });
    });
  }
}

LogicalResult KernelEmitter::emit(gpu::GPUFuncOp kernel, func::FuncOp func) {
  MLIRContext *ctx = b.getContext();
  for (auto [funcArg, kernelArg] :
       llvm::zip(func.getArguments(), kernel.getArguments()))
    args.map(funcArg, kernelArg);
  auto shared = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);

  // Input kinds and their shared-memory tiles.
  for (auto [n, input] : llvm::enumerate(task.getInputs())) {
    bool usesI = task.inputUses(n, TaskOp::I);
    bool usesJ = task.inputUses(n, TaskOp::J);
    bool usesK = task.inputUses(n, TaskOp::K);
    // A matrix per key is, within a segment's block, a (k, j) operand; a
    // pair operand chosen by the same key a column-only one.
    if (usesI && usesJ && isReadPerKey(task, n))
      usesI = false;
    InputKind kind = usesK ? (usesI   ? InputKind::RowK
                              : usesJ ? InputKind::ColK
                                      : InputKind::KOnly)
                     : usesI && usesJ ? InputKind::PairOnly
                     : usesI          ? InputKind::RowOnly
                                      : InputKind::ColOnly;
    kinds.push_back(kind);
    Type element = cast<MemRefType>(input.getType()).getElementType();
    Value tile;
    if (shape.mma && (kind == InputKind::RowK || kind == InputKind::ColK))
      ; // Staged by the tensor-core load iterators.
    else if (kind == InputKind::RowK || kind == InputKind::ColK)
      tile = kernel.addWorkgroupAttribution(
          MemRefType::get({shape.bk, kind == InputKind::RowK ? shape.bm
                                                             : shape.bn},
                          element, MemRefLayoutAttrInterface(), shared),
          loc);
    else if (kind == InputKind::KOnly)
      tile = kernel.addWorkgroupAttribution(
          MemRefType::get({shape.bk}, element, MemRefLayoutAttrInterface(),
                          shared),
          loc);
    if (tile) {
      // Threads read runs of the tile as 16-byte vectors.
      unsigned index = kernel.getNumWorkgroupAttributions() - 1;
      kernel.setWorkgroupAttributionAttr(index,
                                         LLVM::LLVMDialect::getAlignAttrName(),
                                         b.getI64IntegerAttr(16));
    }
    tiles.push_back(tile);
  }
  Value joinFlag;
  if (!task.getWhen().empty())
    joinFlag = kernel.addWorkgroupAttribution(
        MemRefType::get({1}, b.getI32Type(), MemRefLayoutAttrInterface(),
                        shared),
        loc);

  b.setInsertionPointToStart(&kernel.getBody().front());
  if (shape.mma) {
    // The tensor cores' operand tiles, every stage, in dynamic shared
    // memory (the launch plan gives its size).
    Type element = getMmaElementType(ctx, *shape.mma);
    Value bytes = gpu::DynamicSharedMemoryOp::create(
        b, loc,
        MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                        MemRefLayoutAttrInterface(), shared));
    // Warpgroup tiles start on 1024 bytes (wgmma's swizzle is one of
    // shared addresses): mmaSharedBytes() has 1024 more, the first stage
    // starts where the address is a multiple.
    int64_t elementBytes = getMmaElementBits(*shape.mma) / 8;
    product = *getProductForm(task);
    mmaInputs.assign(product.rows.begin(), product.rows.end());
    mmaInputs.append(product.cols.begin(), product.cols.end());
    mmaTiles = memref::ViewOp::create(
        b, loc,
        MemRefType::get({shape.mmaSharedBytes() / elementBytes}, element,
                        MemRefLayoutAttrInterface(), shared),
        bytes, idx(0), ValueRange{});
    mmaBase = idx(0);
    mmaBytes = bytes;
    if (shape.warpgroup) {
      // The tensor maps follow every other argument.
      unsigned count = kernel.getNumArguments();
      if (!shape.threadStages) {
        tensorMaps[0] = kernel.getArgument(count - 2);
        tensorMaps[1] = kernel.getArgument(count - 1);
      }
      mmaAddress = arith::IndexCastOp::create(
          b, loc, b.getI64Type(),
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, mmaTiles));
      Value misaligned = arith::RemUIOp::create(
          b, loc,
          arith::IndexCastOp::create(b, loc, b.getIndexType(), mmaAddress),
          idx(1024));
      mmaBase = arith::DivUIOp::create(
          b, loc,
          arith::RemUIOp::create(
              b, loc, arith::SubIOp::create(b, loc, idx(1024), misaligned),
              idx(1024)),
          idx(elementBytes));
    }
  }
  for (TaskOp::Axis axis : {TaskOp::I, TaskOp::J, TaskOp::K}) {
    auto [source, dim] = task.getExtentSource(axis);
    extents[axis] = memref::DimOp::create(b, loc, arg(source), dim);
  }
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  tx = arith::RemUIOp::create(b, loc, tid, idx(shape.colThreads()));
  ty = arith::DivUIOp::create(b, loc, tid, idx(shape.colThreads()));
  scf::ForOp segmentLoop;
  // The block's tile along dimension `d` of the grid: its first index.
  auto blockBase = [&](gpu::Dimension d, int64_t extent) -> Value {
    return arith::MulIOp::create(b, loc, gpu::BlockIdOp::create(b, loc, d),
                                 idx(extent));
  };
  // The segment tile of block x (kge_key_scan_tiles' table: its count,
  // then (key, first, end) per tile): whether the block has one, and its
  // key, first and end position (a block past the count reads tile 0's
  // words and gets an empty range).
  struct SegmentTile {
    Value hasTile, key, first, end;
  };
  auto segmentTile = [&](Value table) {
    Value t = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    auto word = [&](Value at) { return loadIndex(table, at); };
    SegmentTile tile;
    tile.hasTile = less(t, word(idx(0)));
    Value at = arith::AddIOp::create(
        b, loc, idx(1),
        arith::MulIOp::create(
            b, loc, arith::SelectOp::create(b, loc, tile.hasTile, t, idx(0)),
            idx(3)));
    tile.key = word(at);
    tile.first = word(arith::AddIOp::create(b, loc, at, idx(1)));
    tile.end = arith::SelectOp::create(
        b, loc, tile.hasTile, word(arith::AddIOp::create(b, loc, at, idx(2))),
        tile.first);
    return tile;
  };
  if (shape.segments) {
    // Segment iterators: block (x, y) takes segment tile x (its rows) and
    // column tile y; a block past the count takes no rows.
    unsigned first = func.getNumArguments();
    rowPerm = kernel.getArgument(first);
    SegmentTile tile = segmentTile(kernel.getArgument(first + 1));
    segmentKey = tile.key;
    extents[TaskOp::I] = tile.end;
    colBase = blockBase(gpu::Dimension::y, shape.bn);
    segmentLoop = scf::ForOp::create(b, loc, tile.first, extents[TaskOp::I],
                                     idx(shape.bm));
    b.setInsertionPoint(segmentLoop.getBody()->getTerminator());
    rowBase = segmentLoop.getInductionVar();
  } else if (shape.splitK) {
    // Split reduction: block (x, y, z) takes x's steps of k, column tile y
    // and row tile z.
    kBegin = blockBase(gpu::Dimension::x, shape.splitSteps());
    extents[TaskOp::K] = minIndex(
        arith::AddIOp::create(b, loc, kBegin, idx(shape.splitSteps())),
        extents[TaskOp::K]);
    colBase = blockBase(gpu::Dimension::y, shape.bn);
    rowBase = blockBase(gpu::Dimension::z, shape.bm);
  } else if (shape.reductionSegments) {
    // Segments of the reduction: block (x, y, z) takes segment tile x (its
    // steps of k), column tile y and row tile z of its key's matrix; a
    // block past the count runs no steps and stores nothing.
    unsigned first = func.getNumArguments();
    kPerm = kernel.getArgument(first);
    SegmentTile tile = segmentTile(kernel.getArgument(first + 1));
    hasKTile = tile.hasTile;
    segmentKey = tile.key;
    kBegin = tile.first;
    extents[TaskOp::K] = tile.end;
    colBase = blockBase(gpu::Dimension::y, shape.bn);
    rowBase = blockBase(gpu::Dimension::z, shape.bm);
  } else if (rowsAlongX(task, shape)) {
    // One column tile: the row tiles along x (millions of edges' scalars).
    rowBase = blockBase(gpu::Dimension::x, shape.bm);
    colBase = idx(0);
  } else if (foldsRowTiles(shape)) {
    // Row tile y + 65535 z (more than 65,535 row tiles: the launch plan
    // folds them into z); a tile past the rows loads clamped rows and
    // stores nothing, like the rows past M of the last tile.
    Value tile = arith::AddIOp::create(
        b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::y),
        arith::MulIOp::create(
            b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::z),
            idx(kMaxGridYZ)));
    rowBase = arith::MulIOp::create(b, loc, tile, idx(shape.bm));
    colBase = blockBase(gpu::Dimension::x, shape.bn);
  } else {
    rowBase = blockBase(gpu::Dimension::y, shape.bm);
    colBase = blockBase(gpu::Dimension::x, shape.bn);
  }

  // The pairs of this thread: rows (r / w) * rowThreads * w + ty * w +
  // r % w of the block tile, columns alike (w = shape.width()).
  int64_t w = shape.width();
  Value rowRun = arith::MulIOp::create(b, loc, ty, idx(w));
  Value colRun = arith::MulIOp::create(b, loc, tx, idx(w));
  SmallVector<Value> localRows, localCols, rows, cols;
  if (shape.mma) {
    tensorCorePairs(localRows, localCols);
  } else {
    for (int64_t r = 0; r < shape.tm; ++r)
      localRows.push_back(arith::AddIOp::create(
          b, loc, rowRun,
          idx((r / w) * shape.runStride(shape.rowThreads()) + r % w)));
    for (int64_t c = 0; c < shape.tn; ++c)
      localCols.push_back(arith::AddIOp::create(
          b, loc, colRun,
          idx((c / w) * shape.runStride(shape.colThreads()) + c % w)));
  }
  // Rows by position (segment iterators: in the key order, mapped to rows
  // through the permutation).
  SmallVector<Value> positions;
  for (Value r : localRows)
    positions.push_back(arith::AddIOp::create(b, loc, rowBase, r));
  for (Value c : localCols)
    cols.push_back(arith::AddIOp::create(b, loc, colBase, c));

  // Spatial-only elements, read once (clamped: rows past M are not stored).
  Value lastRow = arith::SubIOp::create(b, loc, extents[TaskOp::I], idx(1));
  Value lastCol = arith::SubIOp::create(b, loc, extents[TaskOp::J], idx(1));
  for (Value p : positions)
    rows.push_back(rowPerm ? rowAt(minIndex(p, lastRow)) : p);
  SmallVector<SmallVector<Value>> spatialValues(kinds.size());
  for (auto [n, kind] : llvm::enumerate(kinds)) {
    if (kind == InputKind::RowOnly)
      for (Value r : positions)
        spatialValues[n].push_back(loadGlobal(n, minIndex(r, lastRow), {}));
    if (kind == InputKind::ColOnly)
      for (Value c : cols)
        spatialValues[n].push_back(loadGlobal(n, minIndex(c, lastCol), {}));
    if (kind == InputKind::PairOnly) {
      // A pair operand: its element at every pair of the thread, the row
      // resolved once per row and the column once per column.
      AffineMap map =
          cast<AffineMapAttr>(task.getIndexingMaps()[n]).getValue();
      SmallVector<Value> rowAt, colAt;
      unsigned rowDim = 0, colDim = 0;
      for (unsigned d = 0; d < 2; ++d)
        (map.getDimPosition(d) == TaskOp::I ? rowDim : colDim) = d;
      for (Value r : positions)
        rowAt.push_back(resolveAt(n, rowDim, minIndex(r, lastRow)));
      for (Value c : cols)
        colAt.push_back(resolveAt(n, colDim, minIndex(c, lastCol)));
      for (Value row : rowAt)
        for (Value col : colAt) {
          // (Trailing unit dimensions: read at 0.)
          SmallVector<Value, 3> at(
              cast<MemRefType>(task.getInputs()[n].getType()).getRank(),
              idx(0));
          at[rowDim] = row;
          at[colDim] = col;
          spatialValues[n].push_back(
              memref::LoadOp::create(b, loc, arg(task.getInputs()[n]), at));
        }
    }
  }
  SmallVector<unsigned> spatialInputs = task.spatialOnlyInputs();
  auto spatialOf = [&](int64_t r, int64_t c) {
    SmallVector<Value> values;
    for (unsigned n : spatialInputs)
      values.push_back(
          spatialValues[n][kinds[n] == InputKind::RowOnly   ? r
                           : kinds[n] == InputKind::ColOnly ? c
                                                            : r * shape.tn + c]);
    return values;
  };

  // Join: which pairs take part; a block whose pairs all fail skips the
  // reduction.
  SmallVector<Value> stored(shape.tm * shape.tn);
  Value anyJoined;
  // The producer (warp or warpgroup) of the warpgroup kernel holds no pair.
  Value consumer;
  if (shape.warpgroup)
    consumer = less(tid, idx(shape.threads()));
  for (int64_t r = 0; r < shape.tm; ++r)
    for (int64_t c = 0; c < shape.tn; ++c) {
      Value inRange = arith::AndIOp::create(
          b, loc, less(positions[r], extents[TaskOp::I]),
          less(cols[c], extents[TaskOp::J]));
      Value pair = inRange;
      if (consumer)
        pair = arith::AndIOp::create(b, loc, pair, consumer);
      if (hasKTile)
        pair = arith::AndIOp::create(b, loc, pair, hasKTile);
      if (!task.getWhen().empty()) {
        SmallVector<Value> arguments = {rows[r], cols[c]};
        llvm::append_range(arguments, spatialOf(r, c));
        pair = arith::AndIOp::create(
            b, loc, pair, inlineRegion(task.getWhen(), arguments));
        anyJoined = anyJoined ? arith::OrIOp::create(b, loc, anyJoined, pair)
                                    .getResult()
                              : pair;
      }
      stored[r * shape.tn + c] = pair;
    }

  Type accType = task.getAccumulatorType();
  TypedAttr identityAttr = task.getIdentityAttr();
  if (!identityAttr)
    identityAttr = getCombinerIdentity(task.getAccumulate(), accType);
  Value identity = arith::ConstantOp::create(b, loc, identityAttr);
  SmallVector<Value> inits(shape.tm * shape.tn, identity);

  // The accumulators of `reduce` where the block's `condition` holds (it is
  // the same for all the block's threads: barriers inside stay uniform),
  // their identities elsewhere.
  auto reduceWhere = [&](Value condition,
                         llvm::function_ref<SmallVector<Value>()> reduce) {
    SmallVector<Type> types(inits.size(), accType);
    auto ifOp = scf::IfOp::create(b, loc, types, condition,
                                  /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b, loc, reduce());
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, inits);
    return SmallVector<Value>(ifOp.getResults());
  };

  auto emitReduction = [&]() -> SmallVector<Value> {
    if (shape.warpgroup)
      return emitWarpgroupReduction();
    // Segments of the reduction: a block without a tile (K = 0, or past
    // the count) copies nothing. (Its copies would name rows through the
    // sorted order, which holds no position when K = 0.)
    if (shape.mma && hasKTile)
      return reduceWhere(hasKTile,
                         [&] { return emitTensorCoreReduction(); });
    if (shape.mma)
      return emitTensorCoreReduction();
    // The first step's elements, loaded before the loop (when K > 0).
    Value firstK = kBegin ? kBegin : idx(0);
    SmallVector<Value> first;
    {
      // The types of loadStage's values: per staged input, its element
      // type once per element this thread stages.
      SmallVector<Type> types;
      for (auto [n, kind] : llvm::enumerate(kinds)) {
        Type element =
            cast<MemRefType>(task.getInputs()[n].getType()).getElementType();
        int64_t count = 0;
        if (kind == InputKind::KOnly)
          count = 1;
        else if (kind == InputKind::RowK || kind == InputKind::ColK)
          count = llvm::divideCeil(
              shape.bk * (kind == InputKind::RowK ? shape.bm : shape.bn),
              shape.threads());
        types.append(count, element);
      }
      OpBuilder::InsertionGuard guard(b);
      auto ifAny = scf::IfOp::create(b, loc, types,
                                     less(firstK, extents[TaskOp::K]),
                                     /*withElseRegion=*/true);
      b.setInsertionPointToStart(ifAny.thenBlock());
      scf::YieldOp::create(b, loc, loadStage(firstK));
      b.setInsertionPointToStart(ifAny.elseBlock());
      SmallVector<Value> zeros;
      for (Type type : types)
        zeros.push_back(arith::ConstantOp::create(b, loc, b.getZeroAttr(type)));
      scf::YieldOp::create(b, loc, zeros);
      first = SmallVector<Value>(ifAny.getResults());
    }
    SmallVector<Value> carried(inits);
    llvm::append_range(carried, first);
    auto kLoop = scf::ForOp::create(b, loc, firstK, extents[TaskOp::K],
                                    idx(shape.bk), carried);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value k0 = kLoop.getInductionVar();
    size_t numAccs = inits.size();
    gpu::BarrierOp::create(b, loc);
    storeStage(k0, kLoop.getRegionIterArgs().drop_front(numAccs));
    gpu::BarrierOp::create(b, loc);
    // The next step's elements are loaded while this one computes.
    SmallVector<Value> next =
        loadStage(arith::AddIOp::create(b, loc, k0, idx(shape.bk)));
    Value steps = minIndex(
        idx(shape.bk), arith::SubIOp::create(b, loc, extents[TaskOp::K], k0));
    auto inner = scf::ForOp::create(b, loc, idx(0), steps, idx(1),
                                    kLoop.getRegionIterArgs().take_front(numAccs));
    {
      OpBuilder::InsertionGuard innerGuard(b);
      b.setInsertionPointToStart(inner.getBody());
      Value kk = inner.getInductionVar();
      // Registers of this step: the thread's rows and columns of every
      // staged input.
      SmallVector<SmallVector<Value>> staged(kinds.size());
      // A thread's rows (columns) of a staged tile: one vector load per run
      // of w.
      auto readRuns = [&](Value tile, ArrayRef<Value> local,
                          SmallVector<Value> &out) {
        Type element = cast<MemRefType>(tile.getType()).getElementType();
        // Vectors of at most 16 bytes (the tiles' alignment).
        int64_t bytes = element.getIntOrFloatBitWidth() / 8;
        int64_t width = std::min<int64_t>(w, std::max<int64_t>(1, 16 / bytes));
        for (size_t first = 0; first < local.size(); first += width) {
          if (width == 1) {
            out.push_back(memref::LoadOp::create(
                b, loc, tile, ValueRange{kk, local[first]}));
            continue;
          }
          Value run = vector::LoadOp::create(
              b, loc, VectorType::get({width}, element), tile,
              ValueRange{kk, local[first]}, /*nontemporal=*/false,
              llvm::MaybeAlign(width * bytes));
          for (int64_t q = 0; q < width; ++q)
            out.push_back(vector::ExtractOp::create(b, loc, run, q));
        }
      };
      for (auto [n, kind] : llvm::enumerate(kinds)) {
        if (kind == InputKind::RowK)
          readRuns(tiles[n], localRows, staged[n]);
        if (kind == InputKind::ColK)
          readRuns(tiles[n], localCols, staged[n]);
        if (kind == InputKind::KOnly)
          staged[n].push_back(
              memref::LoadOp::create(b, loc, tiles[n], ValueRange{kk}));
      }
      SmallVector<Value> next;
      for (int64_t r = 0; r < shape.tm; ++r)
        for (int64_t c = 0; c < shape.tn; ++c) {
          SmallVector<Value> scalars;
          for (auto [n, kind] : llvm::enumerate(kinds)) {
            switch (kind) {
            case InputKind::RowK:
              scalars.push_back(staged[n][r]);
              break;
            case InputKind::ColK:
              scalars.push_back(staged[n][c]);
              break;
            case InputKind::KOnly:
              scalars.push_back(staged[n][0]);
              break;
            case InputKind::RowOnly:
              scalars.push_back(spatialValues[n][r]);
              break;
            case InputKind::ColOnly:
              scalars.push_back(spatialValues[n][c]);
              break;
            case InputKind::PairOnly:
              scalars.push_back(spatialValues[n][r * shape.tn + c]);
              break;
            }
          }
          Value v = inlineRegion(task.getInner(), scalars);
          Value acc = inner.getRegionIterArgs()[r * shape.tn + c];
          next.push_back(accumulate(acc, v));
        }
      scf::YieldOp::create(b, loc, next);
    }
    SmallVector<Value> yielded(inner.getResults());
    llvm::append_range(yielded, next);
    scf::YieldOp::create(b, loc, yielded);
    return SmallVector<Value>(kLoop.getResults().take_front(numAccs));
  };

  SmallVector<Value> accs;
  if (anyJoined) {
    // Block-wide "any pair joins" through a shared flag.
    Value zero = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
    Value one = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1);
    auto ifFirst = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, idx(0)),
        /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifFirst.thenBlock());
      memref::StoreOp::create(b, loc, zero, joinFlag, ValueRange{idx(0)});
    }
    gpu::BarrierOp::create(b, loc);
    auto ifAny = scf::IfOp::create(b, loc, anyJoined, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifAny.thenBlock());
      memref::StoreOp::create(b, loc, one, joinFlag, ValueRange{idx(0)});
    }
    gpu::BarrierOp::create(b, loc);
    Value flag = memref::LoadOp::create(b, loc, joinFlag, ValueRange{idx(0)});
    Value blockJoins =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, flag, zero);
    accs = reduceWhere(blockJoins, emitReduction);
  } else {
    accs = emitReduction();
  }

  // The tensor-core kernels' dense store iterator (f32, every pair
  // written): the block's values go through the freed operand stages in
  // shared memory, and rows leave in 16-byte vectors, a warp writing whole
  // 128-byte lines (scalar stores of the accumulator fragments, 128 per
  // thread in the warpgroup kernel, keep the LG queue full and the tensor
  // cores idle).
  if (shape.mma && !shape.segments &&
      task.getOutput() == OutputKind::dense &&
      !task.getUpdate() && task.getWhen().empty() &&
      task.getDenseOutputMap().getDimPosition(0) == TaskOp::I &&
      task.getValueType().isF32()) {
    emitStagedDenseStore(accs, rows, cols, localRows, localCols, consumer,
                         spatialOf);
    gpu::ReturnOp::create(b, loc);
    return success();
  }

  // Store iterators. Select and top-k first take every pair's value and
  // predicate (pure: computed for all, kept for the stored ones).
  SmallVector<Value> values, holds;
  if (task.getOutput() == OutputKind::select ||
      task.getOutput() == OutputKind::top_k ||
      task.getOutput() == OutputKind::distinct)
    for (int64_t r = 0; r < shape.tm; ++r)
      for (int64_t c = 0; c < shape.tn; ++c) {
        Value acc = accs[r * shape.tn + c];
        SmallVector<Value> spatial = spatialOf(r, c);
        Value value = projected(acc, rows[r], cols[c], spatial);
        Value keep = stored[r * shape.tn + c];
        if (!task.getPredicate().empty()) {
          SmallVector<Value> arguments = {value, acc, rows[r], cols[c]};
          llvm::append_range(arguments, spatial);
          keep = arith::AndIOp::create(
              b, loc, keep, inlineRegion(task.getPredicate(), arguments));
        }
        values.push_back(value);
        holds.push_back(keep);
      }
  if (task.getOutput() == OutputKind::select) {
    storeSelected(kernel, values, holds, rows, cols);
    gpu::ReturnOp::create(b, loc);
    return success();
  }
  if (task.getOutput() == OutputKind::top_k) {
    // The shards' locks and entries follow the function's arguments
    // (attributions come after).
    unsigned first = func.getNumArguments();
    storeTopK(kernel, kernel.getArgument(first),
              {kernel.getArgument(first + 1), kernel.getArgument(first + 2),
               kernel.getArgument(first + 3)},
              values, holds, localRows, localCols);
    gpu::ReturnOp::create(b, loc);
    return success();
  }
  if (task.getOutput() == OutputKind::distinct) {
    // The hash set follows the function's arguments.
    storeDistinct(kernel.getArgument(func.getNumArguments()), values, holds);
    gpu::ReturnOp::create(b, loc);
    return success();
  }
  if (task.getOutput() == OutputKind::reduce) {
    // The partial values follow the function's arguments (and the
    // segment iterators' order and tiles).
    storeReduced(kernel,
                 kernel.getArgument(func.getNumArguments() +
                                    (shape.segments ? 2 : 0)),
                 accs, stored, rows, cols, localRows, spatialOf);
    if (segmentLoop)
      b.setInsertionPointAfter(segmentLoop);
    gpu::ReturnOp::create(b, loc);
    return success();
  }
  auto storeOne = [&](int64_t r, int64_t c) {
    auto ifStored = scf::IfOp::create(b, loc, stored[r * shape.tn + c],
                                      /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifStored.thenBlock());
    Value acc = accs[r * shape.tn + c];
    SmallVector<Value> spatial = spatialOf(r, c);
    storeOutput(projected(acc, rows[r], cols[c], spatial), acc, rows[r],
                cols[c], spatial);
  };
  if (int64_t v = vectorAggregate()) {
    // Float sums into row groups, v columns at a time: each thread's run of
    // v consecutive columns of a row (CUDA cores: four; tensor cores: a
    // lane's pair) goes to one group row as one vector reduction
    // (red.global.v<v>.f32.add, sm_90: 1 / v of the atomics) where all v
    // are stored and the row is aligned to them.
    Value out = arg(task.getOutputs()[0]);
    Value width = memref::DimOp::create(b, loc, out, 1);
    Value aligned = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, loc, width, idx(v)), idx(0));
    std::string text = "red.global.v" + std::to_string(v) + ".f32.add [$0], {";
    std::string constraints = "l";
    for (int64_t n = 0; n < v; ++n) {
      text += (n ? ", $" : "$") + std::to_string(n + 1);
      constraints += ",f";
    }
    text += "};";
    constraints += ",~{memory}";
    for (int64_t r = 0; r < shape.tm; ++r)
      for (int64_t c0 = 0; c0 < shape.tn; c0 += v) {
        Value all = aligned;
        for (int64_t c = c0; c < c0 + v; ++c)
          all = arith::AndIOp::create(b, loc, all, stored[r * shape.tn + c]);
        auto ifAll = scf::IfOp::create(b, loc, all, /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(ifAll.thenBlock());
          Value element = arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, groupRow(rows[r]), width),
              cols[c0]);
          SmallVector<Value> operands = {
              elementAddress(out, element, b.getF32Type())};
          for (int64_t c = c0; c < c0 + v; ++c) {
            Value acc = accs[r * shape.tn + c];
            operands.push_back(
                projected(acc, rows[r], cols[c], spatialOf(r, c)));
          }
          inlinePTX(b, loc, Type(), operands, text, constraints,
                    /*sideEffects=*/true);
          b.setInsertionPointToStart(ifAll.elseBlock());
          for (int64_t c = c0; c < c0 + v; ++c)
            storeOne(r, c);
        }
      }
  } else {
    for (int64_t r = 0; r < shape.tm; ++r)
      for (int64_t c = 0; c < shape.tn; ++c)
        storeOne(r, c);
  }
  if (segmentLoop)
    b.setInsertionPointAfter(segmentLoop);
  gpu::ReturnOp::create(b, loc);
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {

/// GAMUT's heuristic, scale up before scale out: the large tile shape when
/// its grid gives every multiprocessor a block, else the small one.
static const TileShape kLargeShape{128, 128, 8, 8, 8};
static const TileShape kSmallShape{64, 64, 16, 4, 4};
/// Segment iterators on CUDA cores: 16 rows of a run by 128 columns.
static const TileShape kSegmentShape{16, 128, 8, 2, 4};
/// Multiprocessors the heuristic fills (an H100 or H200 has 132).
static constexpr int64_t kMultiprocessors = 132;
/// Tensor cores: 64-byte rows of k per stage, four stages in flight; 8
/// warps of 64 x 32 pairs, or 4 of 32 x 32. A product form of more operand
/// tiles than one a side keeps as many stages as fit kMmaStageBytes (two
/// at least).
static constexpr int64_t kMmaStageBytesOfK = 64;
static constexpr int64_t kMmaStages = 4;
static constexpr int64_t kMmaStageBytes = 200 * 1024;
/// Shared memory of a multiprocessor that its blocks may take (sm_90).
static constexpr int64_t kMaxSharedBytes = 227 * 1024;

/// The operands' stages of a tensor-core kernel: how many tiles of each
/// side a stage holds (one a side on warpgroup MMA, the product form's
/// operands on mma.sync) and the bytes the stages may take.
struct StageBudget {
  int64_t rowTiles = 1, colTiles = 1;
  int64_t bytes = kMmaStageBytes;
};

/// The stages' budget for `task`: kMmaStageBytes, less what the kernel's
/// static shared memory takes beside them where that leaves less than a
/// multiprocessor has (top-k's arrays of the block's candidates and k
/// best).
static StageBudget getStageBudget(TaskOp task) {
  tile::ProductOperands operands = tile::getProductOperands(task);
  StageBudget budget{std::max<int64_t>(1, operands.rows.size()),
                     std::max<int64_t>(1, operands.cols.size())};
  int64_t staticBytes = 1024;
  if (task.getOutput() == OutputKind::top_k)
    staticBytes += 8 * 4096 + 12 * static_cast<int64_t>(*task.getK());
  budget.bytes = std::min(kMmaStageBytes, kMaxSharedBytes - staticBytes);
  return budget;
}

/// Gives `shape` its stages' operand tiles and the pipeline's depth as its
/// budget allows (stages 0: not even two fit).
static void setStages(TileShape &shape, const StageBudget &budget) {
  shape.rowTiles = shape.warpgroup ? 1 : budget.rowTiles;
  shape.colTiles = shape.warpgroup ? 1 : budget.colTiles;
  int64_t stageBytes =
      shape.stageElements() * getMmaElementBits(*shape.mma) / 8;
  shape.stages = std::min(kMmaStages, budget.bytes / stageBytes);
  if (shape.stages < 2)
    shape.stages = 0;
}

static TileShape mmaShape(MmaPrecision precision, bool large,
                          const StageBudget &budget = {}) {
  int64_t bk = kMmaStageBytesOfK * 8 /
               getMmaElementBits(precision);
  TileShape shape = large ? TileShape{128, 128, bk, 8, 8}
                          : TileShape{64, 64, bk, 4, 8};
  shape.mma = precision;
  setStages(shape, budget);
  static_assert(kMmaStages >= 2, "the pipeline waits for stages - 2 groups");
  return shape;
}

/// Warpgroup MMA (16-bit operands, or tf32 ones stored k-contiguous;
/// sm_90a): 128 x 256 pairs per block, two warpgroups of 64 rows, block-k
/// of 128-byte rows, four stages; blocks
/// in clusters of `clusterM` along M sharing the B tile (TMA multicast)
/// unless a join may let one block of a cluster skip its reduction. With
/// `threadStages`, a producer warpgroup's threads write the stages (no
/// clusters: multicast is TMA's).
static TileShape warpgroupShape(MmaPrecision precision, bool joined,
                                int64_t clusterM, bool threadStages = false) {
  TileShape shape{128, 256, 1024 / getMmaElementBits(precision), 2, 64};
  shape.mma = precision;
  shape.stages = 4;
  shape.warpgroup = true;
  shape.threadStages = threadStages;
  shape.clusterM = joined || threadStages ? 1 : clusterM;
  return shape;
}

/// One kernel of a tile function's module.
struct KernelVariant {
  TileShape shape;
  /// Appended to the function's name.
  std::string suffix;
  /// The reduction length from which the kernel runs (0: any): a kernel of
  /// one block per multiprocessor hides its pipeline's start on long ones.
  int64_t minK = 0;
};

/// Warpgroup MMA runs reductions of at least this length (shorter ones take
/// mma.sync, whose blocks share a multiprocessor).
static constexpr int64_t kWarpgroupMinK = 1024;
/// On stages the threads write, from this length: the gathered scoring of
/// a batch against negatives reduces over an embedding (a few hundred).
static constexpr int64_t kThreadStagesMinK = 128;

/// Whether warpgroup MMA on stages the producer threads write takes `task`:
/// its operands stored k-contiguous (the threads read 16-byte chunks along
/// k; rows may be gathered), a product form of at most kThreadStageTerms
/// terms, no matrix per key.
static bool threadStagesFit(TaskOp task) {
  std::optional<ProductForm> form = getProductForm(task);
  if (!form || task.getPerKeyInput() ||
      task.getOutput() == OutputKind::per_key ||
      static_cast<int64_t>(form->terms.size()) > TileShape::kThreadStageTerms)
    return false;
  for (unsigned n : llvm::concat<const unsigned>(form->rows, form->cols))
    if (!isKContiguous(task, n))
      return false;
  return true;
}

/// Tensor cores on segments: runs are short (a relation's edges in a batch:
/// ~12), so 16 rows of a segment by 128 columns, four warps of 16 x 32.
/// With `longRuns`, the tiles cut from long runs (a frequent relation's
/// edges): 64 rows by 128 columns, eight warps of 32 x 32, so that each
/// key's matrix is read once per 64 rows of its run instead of once per 16.
static TileShape segmentMmaShape(MmaPrecision precision,
                                 const StageBudget &budget = {},
                                 bool longRuns = false) {
  TileShape shape = mmaShape(precision, /*large=*/false, budget);
  shape.bm = longRuns ? 64 : 16;
  shape.bn = 128;
  shape.tm = longRuns ? 4 : 2;
  shape.tn = 8;
  shape.segments = true;
  shape.longRuns = longRuns;
  setStages(shape, budget);
  return shape;
}

/// The tensor-core tilings the iterators are built for (and tested with):
/// mma.sync in 128 x 128, 64 x 64 or (segments) 16 x 128 tiles, as deep as
/// their stages of `rowTiles` + `colTiles` operand tiles fit; warpgroup MMA
/// in 128 x 256 ones.
static SmallVector<TileShape> getBuiltTensorCoreTilings(
    MmaPrecision precision, bool warpgroup, const StageBudget &budget = {}) {
  if (warpgroup)
    return {warpgroupShape(precision, /*joined=*/true, 1)};
  SmallVector<TileShape> shapes;
  for (TileShape shape : {mmaShape(precision, true, budget),
                          mmaShape(precision, false, budget),
                          segmentMmaShape(precision, budget),
                          segmentMmaShape(precision, budget, /*longRuns=*/true)})
    if (shape.stages)
      shapes.push_back(shape);
  return shapes;
}

static bool isBuiltTensorCoreShape(const TileShape &shape,
                                   const StageBudget &budget) {
  for (const TileShape &built :
       getBuiltTensorCoreTilings(*shape.mma, shape.warpgroup, budget))
    if (built.bm == shape.bm && built.bn == shape.bn && built.bk == shape.bk &&
        built.tm == shape.tm && built.tn == shape.tn &&
        built.stages == shape.stages &&
        (shape.warpgroup || (built.segments == shape.segments &&
                             built.longRuns == shape.longRuns)))
      return true;
  return false;
}

static std::string getBuiltTensorCoreShapes(MmaPrecision precision,
                                            bool warpgroup,
                                            const StageBudget &budget) {
  SmallVector<std::string> shapes;
  for (const TileShape &s :
       getBuiltTensorCoreTilings(precision, warpgroup, budget))
    shapes.push_back("block " + std::to_string(s.bm) + "x" +
                     std::to_string(s.bn) + "x" + std::to_string(s.bk) +
                     " thread " + std::to_string(s.tm) + "x" +
                     std::to_string(s.tn) + " stages " +
                     std::to_string(s.stages) +
                     (s.segments ? " (segments)" : ""));
  return llvm::join(shapes, ", ");
}

/// The tensor-core emitter's precision of a tile.mma's and back: the two
/// enums share their names.
static MmaPrecision toMmaPrecision(tile::Precision precision) {
  return *parseMmaPrecision(tile::stringifyPrecision(precision));
}

static tile::Precision toTilePrecision(MmaPrecision precision) {
  return *tile::symbolizePrecision(getMmaPrecisionName(precision));
}

/// The inputs a kernel of `shape` reads from transposed (k-innermost)
/// copies that its launch plan writes first (warpgroup MMA at tf32).
static SmallVector<unsigned> getTransposedInputs(TaskOp task,
                                                 const TileShape &shape) {
  SmallVector<unsigned> inputs;
  if (!shape.mma)
    return inputs;
  for (unsigned n = 0, e = task.getInputs().size(); n < e; ++n)
    if (tile::isLoadTransposed(task, n, toTilePrecision(*shape.mma),
                               shape.warpgroup))
      inputs.push_back(n);
  return inputs;
}

/// A copy of `task`, before it, reading `inputs` as their transposed
/// copies: their (2-D) maps' results swapped, so the kernel emitted for it
/// reads them k-innermost from the buffers the launch plan passes in their
/// place.
static TaskOp cloneWithTransposedInputs(TaskOp task,
                                        ArrayRef<unsigned> inputs) {
  OpBuilder b(task);
  auto clone = cast<TaskOp>(b.clone(*task));
  SmallVector<Attribute> maps(task.getIndexingMaps().getValue());
  for (unsigned n : inputs) {
    AffineMap map = cast<AffineMapAttr>(maps[n]).getValue();
    assert(map.getNumResults() == 2 && "a product operand is 2-D");
    maps[n] = AffineMapAttr::get(AffineMap::get(
        map.getNumDims(), 0, {map.getResult(1), map.getResult(0)},
        task.getContext()));
  }
  clone.setIndexingMapsAttr(b.getArrayAttr(maps));
  return clone;
}

/// The key by which the segment iterators sort `task`'s rows (the gather
/// of its matrix per row's key; null without one), or failure when the
/// GPU lowering does not take the task's matrix per key.
static FailureOr<Value> getSegmentKey(TaskOp task) {
  // Segments of the reduction: the steps of k sorted by their key.
  if (task.getOutput() == OutputKind::per_key)
    return task.getKeys()[0];
  std::optional<unsigned> perKey = task.getPerKeyInput();
  if (!perKey)
    return Value();
  Value segmentKey = getKeyGather(task);
  if (!segmentKey)
    return task.emitOpError()
           << "input #" << *perKey
           << " holds a matrix per column key; the GPU lowering takes "
              "matrices per row key (W[r[i], k, j]): swap the spatial axes";
  if (task.getOutput() != OutputKind::dense &&
      task.getOutput() != OutputKind::aggregate &&
      task.getOutput() != OutputKind::reduce)
    return task.emitOpError()
           << "output " << stringifyOutputKind(task.getOutput())
           << " of a task with a matrix per row's key is not lowered to "
              "the GPU (dense, aggregate and reduce outputs are)";
  return segmentKey;
}

/// The kernels of `task`'s schedule, checked against what the emitter
/// builds: tensor-core products of the task's operands at a precision it
/// takes, in the tile shapes and pipelines of the tensor-core iterators.
static FailureOr<SmallVector<KernelVariant>> getScheduledVariants(TaskOp task) {
  SmallVector<KernelVariant> variants;
  for (tile::KernelOp kernel : task.getKernels()) {
    tile::KernelTiling tiling = tile::getKernelTiling(kernel);
    TileShape shape{tiling.bm, tiling.bn, tiling.bk, tiling.tm, tiling.tn};
    shape.segments = kernel.runsSegments();
    shape.reductionSegments = kernel.runsReductionSegments();
    shape.splitK = tiling.splitK;
    shape.longRuns = tiling.longRuns;
    if (tiling.precision) {
      MmaPrecision precision = toMmaPrecision(*tiling.precision);
      if (getTensorCorePrecision(task, getMmaPrecisionName(precision)) !=
          precision)
        return kernel.getComputeStep()->emitOpError()
               << "at " << getMmaPrecisionName(precision)
               << ": the task is not a product the tensor cores compute (its "
                  "inner computation must be a sum of terms row(i, k) * "
                  "col(j, k), each factor computed from one side's operands "
                  "alone, all operands of one element type, accumulated by "
                  "add in f32 from zero; a gathered dimension must not be an "
                  "operand's contiguous one)";
      shape.mma = precision;
      shape.stages = tiling.stages;
      shape.warpgroup = tiling.warpgroup;
      shape.clusterM = tiling.clusterM;
      shape.threadStages = tiling.threadStages;
      StageBudget budget = getStageBudget(task);
      shape.rowTiles = shape.warpgroup ? 1 : budget.rowTiles;
      shape.colTiles = shape.warpgroup ? 1 : budget.colTiles;
      if (shape.warpgroup && precision == MmaPrecision::tf32x3)
        return kernel.getComputeStep()->emitOpError()
               << "at tf32x3 on warpgroup MMA is not built: tf32x3 runs on "
                  "mma.sync";
      int64_t terms = getProductForm(task)->terms.size();
      if (shape.warpgroup && !shape.threadStages &&
          !getProductForm(task)->isPlain())
        return kernel.getComputeStep()->emitOpError()
               << "on warpgroup MMA: the task's product form has " << terms
               << " term(s) of computed factors; warpgroup MMA multiplies "
                  "its operands as loaded by TMA (load them via threads, "
                  "which compute factors, or run on mma.sync)";
      if (shape.threadStages &&
          (terms > TileShape::kThreadStageTerms || terms >= shape.stages))
        return kernel.getComputeStep()->emitOpError()
               << "on warpgroup MMA loads via threads a product form of "
               << terms << " terms: its producer writes a stage per term, "
               << "at most " << TileShape::kThreadStageTerms
               << " (and fewer than the pipeline's stages)";
      if (!isBuiltTensorCoreShape(shape, budget))
        return kernel.emitOpError()
               << "has a tensor-core tiling the emitter does not build "
                  "(block "
               << shape.bm << "x" << shape.bn << "x" << shape.bk
               << ", thread " << shape.tm << "x" << shape.tn << ", stages "
               << shape.stages << "); it builds "
               << getBuiltTensorCoreShapes(precision, shape.warpgroup, budget);
    }
    variants.push_back({shape, kernel.getSuffix().str(), tiling.minK});
  }
  if (variants.empty())
    return task.emitOpError() << "has no schedule: run tile-schedule first "
                                 "(convert-tile-to-gpu schedules the tasks "
                                 "it is given without one)";
  // A kernel of long runs takes them beside its partner, the kernel right
  // after it: the only other one of its kind (tensor cores or not), with
  // fewer rows per tile and the same columns. They run together, where
  // that kind runs; one kernel of long runs a schedule.
  for (auto [n, variant] : llvm::enumerate(variants)) {
    if (!variant.shape.longRuns)
      continue;
    auto ofKind = [&](const KernelVariant &v) {
      return v.shape.mma.has_value() == variant.shape.mma.has_value();
    };
    bool partnered =
        n + 1 < variants.size() && !variants[n + 1].shape.longRuns &&
        ofKind(variants[n + 1]) &&
        variants[n + 1].shape.bm < variant.shape.bm &&
        variants[n + 1].shape.bn == variant.shape.bn &&
        llvm::count_if(variants, ofKind) == 2 &&
        llvm::count_if(variants, [](const KernelVariant &v) {
          return v.shape.longRuns;
        }) == 1;
    if (!partnered)
      return task.getKernels()[n].emitOpError()
             << "takes long runs, so the next kernel must be the only other "
                "segment kernel of its kind, with fewer rows per tile and the "
                "same columns (it takes the rest of every run), and no other "
                "kernel may take long runs";
  }
  return variants;
}

/// Lowers `task` of the tile function `func` (whose signature is
/// `signature`): one kernel per kernel of its schedule, named from `prefix`,
/// into `module`; its launch steps and scratch buffers appended to `steps`
/// and `scratch`. With several kernels, the launch plan chooses: tensor-core
/// kernels when the operands' contiguous extents are multiples of 16 bytes
/// (cp.async's chunks), the CUDA-core kernel otherwise; among the kernels of
/// one kind (largest first), the first whose grid fills the GPU (and whose
/// minimum K the reduction reaches).
static LogicalResult lowerTask(func::FuncOp func, TaskOp task,
                               const kge_runtime::Signature &signature,
                               gpu::GPUModuleOp module, StringRef prefix,
                               SmallVectorImpl<Attribute> &steps,
                               SmallVectorImpl<Attribute> &scratch) {
  // An input with one matrix per row's key (W[r[i], k, j]) takes the
  // segment iterators: rows sorted by that key.
  FailureOr<Value> key = getSegmentKey(task);
  if (failed(key))
    return failure();
  Value segmentKey = *key;
  FailureOr<SmallVector<KernelVariant>> scheduled = getScheduledVariants(task);
  if (failed(scheduled))
    return failure();
  ArrayRef<KernelVariant> variants = *scheduled;
  bool topK = task.getOutput() == OutputKind::top_k;
  if (topK) {
    Type value = task.getValueType();
    if (!value.isF32() && !value.isInteger(32))
      return task.emitOpError()
             << "output top_k on the GPU takes f32 or i32 values, got "
             << value;
    for (const KernelVariant &variant : variants) {
      const TileShape &shape = variant.shape;
      int64_t candidates = shape.bm * shape.bn;
      if (!llvm::isPowerOf2_64(candidates) || candidates > 4096 ||
          candidates % shape.threads())
        return task.emitOpError()
               << "output top_k on the GPU sorts a block's " << candidates
               << " pairs in shared memory: the block tile must hold a power "
                  "of two of at most 4096 pairs (block-m x block-n)";
      if (static_cast<int64_t>(*task.getK()) > std::min<int64_t>(512, candidates))
        return task.emitOpError()
               << "output top_k on the GPU keeps at most "
               << std::min<int64_t>(512, candidates) << " values (k = "
               << *task.getK() << ")";
    }
  }
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = func.getLoc();
  std::string name = prefix.str();
  // Top-k takes a lock (a scratch word) besides the function's arguments,
  // distinct its hash set.
  bool distinct = task.getOutput() == OutputKind::distinct;
  SmallVector<Type> kernelTypes(func.getArgumentTypes());
  // Segment iterators: the sorted row order and each key's end.
  if (segmentKey)
    kernelTypes.append(
        2, MemRefType::get({ShapedType::kDynamic}, b.getI32Type()));
  // Top-k: the shards' locks, then their values, rows and columns.
  Type i32Array = MemRefType::get({ShapedType::kDynamic}, b.getI32Type());
  if (topK) {
    kernelTypes.push_back(i32Array);
    kernelTypes.push_back(
        MemRefType::get({ShapedType::kDynamic}, task.getValueType()));
    kernelTypes.append(2, i32Array);
  }
  if (distinct)
    kernelTypes.push_back(
        MemRefType::get({ShapedType::kDynamic}, b.getI64Type()));
  // Reduce: the blocks' partial values of their rows.
  bool reduceRows = task.getOutput() == OutputKind::reduce;
  Type partialsType =
      MemRefType::get({ShapedType::kDynamic}, task.getValueType());
  if (reduceRows)
    kernelTypes.push_back(partialsType);
  SmallVector<std::string> kernelNames;
  for (const KernelVariant &variant : variants) {
    const TileShape &kernelShape = variant.shape;
    std::string kernelName = name + variant.suffix;
    b.setInsertionPointToEnd(module.getBody());
    // The warpgroup kernel also takes its operands' tensor maps (128-byte
    // grid constants: kge-lower-to-gpu marks them after conversion).
    SmallVector<Type> types(kernelTypes);
    bool tma = kernelShape.warpgroup && !kernelShape.threadStages;
    if (tma)
      types.append(2, LLVM::LLVMPointerType::get(b.getContext()));
    auto kernel = gpu::GPUFuncOp::create(b, loc, kernelName,
                                         b.getFunctionType(types, {}));
    if (tma)
      kernel->setAttr(kGridConstantsAttrName, b.getI32IntegerAttr(2));
    // mma.sync kernels: two blocks per multiprocessor, one's loads hiding
    // under the other's products (their registers capped to fit), where
    // two blocks' stages fit in its shared memory.
    // Segment kernels of 16 rows (4 warps): three blocks, whose registers
    // still hold the pipeline without spills (TransR's 3xTF32 kernel at
    // 2: 605 µs, 3: 582, 4: 612, spilling; H100, FB15k-like, D = 512).
    int64_t blocksPerSM =
        kernelShape.segments && kernelShape.blockThreads() <= 128 ? 3 : 2;
    if (kernelShape.mma && !kernelShape.warpgroup &&
        blocksPerSM * kernelShape.mmaSharedBytes() <= kMaxSharedBytes)
      kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                      b.getI32IntegerAttr(blocksPerSM));
    // Clusters of blocks along M (y).
    if (kernelShape.clusterM > 1)
      kernel->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                      b.getDenseI32ArrayAttr(
                          {1, static_cast<int32_t>(kernelShape.clusterM), 1}));
    kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    kernel.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
        {static_cast<int32_t>(kernelShape.blockThreads()), 1, 1}));
    // The kernel of long runs and the segment kernel after it (its
    // partner) take disjoint rows: they run side by side (a fork and a
    // join of the launch plan's stream, sm_90).
    if (kernelShape.longRuns)
      kernel->setAttr(kLaunchDependentsAttrName, b.getUnitAttr());
    if (&variant != variants.begin() && (&variant - 1)->shape.longRuns)
      kernel->setAttr(kWaitAtExitAttrName, b.getUnitAttr());
    // Operands read from transposed copies: the kernel of a task whose
    // maps say so.
    SmallVector<unsigned> transposed = getTransposedInputs(task, kernelShape);
    TaskOp emitted = transposed.empty()
                         ? task
                         : cloneWithTransposedInputs(task, transposed);
    KernelEmitter emitter(b, emitted, kernelShape);
    LogicalResult built = emitter.emit(kernel, func);
    if (emitted != task)
      emitted.erase();
    if (failed(built))
      return failure();
    kernelNames.push_back(kernelName);
  }

  // The launch plan: clear a select's or distinct's counter (and distinct's
  // hash set), then the tiled kernel.
  Builder builder(func.getContext());
  BundleBuilder bb(builder);
  SmallVector<Attribute> kernelArgs;
  for (const kge_runtime::Parameter &p : signature.params) {
    SmallVector<std::string> dims;
    for (const kge_runtime::Dim &d : p.shape)
      dims.push_back(d.str());
    kernelArgs.push_back(bb.memref("param:" + p.name, dims));
  }
  if (task.getOutput() == OutputKind::select || distinct) {
    Value count = task.getOutputs()[distinct ? 1 : 3];
    unsigned countArg = cast<BlockArgument>(count).getArgNumber();
    b.setInsertionPointToEnd(module.getBody());
    auto clear = gpu::GPUFuncOp::create(
        b, loc, name + "_clear", b.getFunctionType({count.getType()}, {}));
    clear->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    b.setInsertionPointToStart(&clear.getBody().front());
    memref::StoreOp::create(
        b, loc, arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0),
        clear.getArgument(0),
        ValueRange{arith::ConstantIndexOp::create(b, loc, 0)});
    gpu::ReturnOp::create(b, loc);
    steps.push_back(bb.launch(name + "_clear", module.getName(),
                              {"1", "1", "1"}, 1, "0",
                              {kernelArgs[countArg]}));
  }
  // Top-k: blocks merge their candidates into shards of k best (a lock
  // each, cleared; the entries filled with the worst value and no pair),
  // and a merge kernel after the products takes the k best of all shards.
  std::string shardEntries;
  if (topK) {
    int64_t k = *task.getK();
    int64_t shards = getTopKShards(k);
    shardEntries = std::to_string(shards * k);
    Type valueType = task.getValueType();
    auto scratchArray = [&](StringRef name, Type element,
                            const std::string &count) -> Attribute {
      std::string dtype = kge_runtime::dtypeName(*getDType(element));
      scratch.push_back(bb.dict({{"name", bb.str(name.str())},
                                 {"dtype", bb.str(dtype)},
                                 {"count", bb.str(count)}}));
      return bb.memref(("scratch:" + name).str(), {count});
    };
    Attribute locks = scratchArray("locks", b.getI32Type(),
                                   std::to_string(shards));
    steps.push_back(bb.dict(
        {{"kind", bb.str("memset")}, {"buffer", bb.str("scratch:locks")}}));
    SmallVector<Attribute> shardArrays = {
        scratchArray("shard_values", valueType, shardEntries),
        scratchArray("shard_rows", b.getI32Type(), shardEntries),
        scratchArray("shard_cols", b.getI32Type(), shardEntries)};
    b.setInsertionPointToEnd(module.getBody());
    SmallVector<Type> types = {
        MemRefType::get({ShapedType::kDynamic}, valueType), i32Array, i32Array};
    auto clear = gpu::GPUFuncOp::create(b, loc, name + "_clear",
                                        b.getFunctionType(types, {}));
    clear->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    b.setInsertionPointToStart(&clear.getBody().front());
    Value slot = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
            arith::ConstantIndexOp::create(b, loc, 256)),
        gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
    auto inRange = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::slt, slot,
            arith::ConstantIndexOp::create(b, loc, shards * k)),
        /*withElseRegion=*/false);
    b.setInsertionPointToStart(inRange.thenBlock());
    Combiner worst = task.getSmallest() ? Combiner::min : Combiner::max;
    memref::StoreOp::create(
        b, loc,
        arith::ConstantOp::create(b, loc,
                                  getCombinerIdentity(worst, valueType)),
        clear.getArgument(0), ValueRange{slot});
    Value none = arith::ConstantIntOp::create(b, loc, b.getI32Type(), -1);
    memref::StoreOp::create(b, loc, none, clear.getArgument(1),
                            ValueRange{slot});
    memref::StoreOp::create(b, loc, none, clear.getArgument(2),
                            ValueRange{slot});
    b.setInsertionPointAfter(inRange);
    gpu::ReturnOp::create(b, loc);
    steps.push_back(bb.launch(name + "_clear", module.getName(),
                              {"ceildiv(" + shardEntries + ", 256)", "1", "1"},
                              256, "0", shardArrays));
    kernelArgs.push_back(locks);
    llvm::append_range(kernelArgs, shardArrays);
  }
  if (distinct) {
    // The hash set: twice the capacity's slots (at most half full while the
    // values fit) and the flag word, cleared.
    std::string capacity =
        signature.params[cast<BlockArgument>(task.getOutputs()[0])
                              .getArgNumber()]
            .shape[0]
            .str();
    std::string words = "2 * " + capacity + " + 1";
    scratch.push_back(bb.dict({{"name", bb.str("set")},
                               {"dtype", bb.str("i64")},
                               {"count", bb.str(words)}}));
    steps.push_back(
        bb.dict({{"kind", bb.str("memset")}, {"buffer", bb.str("scratch:set")}}));
    kernelArgs.push_back(bb.memref("scratch:set", {words}));
  }
  auto extentOf = [&](TaskOp::Axis axis) {
    auto [source, dim] = task.getExtentSource(axis);
    return signature.params[cast<BlockArgument>(source).getArgNumber()]
        .shape[dim]
        .str();
  };
  std::string keys, segmentTiles;
  int64_t segmentRows = 0;
  const kge_runtime::Parameter *sortKey = nullptr;
  // Segments: a kernel of long runs (at most one) takes their tiles of its
  // rows from a second table.
  const KernelVariant *longVariant = llvm::find_if(
      variants, [](const KernelVariant &v) { return v.shape.longRuns; });
  if (longVariant == variants.end())
    longVariant = nullptr;
  std::string longTiles, longGrid;
  // The axis the segments sort: k for segments of the reduction, i for
  // the rows of a task with a matrix per row's key.
  bool reductionSegments = task.getOutput() == OutputKind::per_key;
  TaskOp::Axis sorted = reductionSegments ? TaskOp::K : TaskOp::I;
  if (segmentKey) {
    const KernelVariant &shortVariant = *llvm::find_if(
        variants, [](const KernelVariant &v) { return !v.shape.longRuns; });
    for (const KernelVariant &variant : variants)
      if (!variant.shape.longRuns && variant.shape.bm != shortVariant.shape.bm)
        return task.emitOpError() << "segment variants must share their rows "
                                     "per tile";
    // Sort the rows by the key (each key's run of rows, in the order the
    // sort's atomics give), then one block per key and column tile.
    const kge_runtime::Parameter &key =
        signature.params[cast<BlockArgument>(segmentKey).getArgNumber()];
    keys = indexRange(signature, key);
    scratch.push_back(bb.dict({{"name", bb.str("perm")},
                               {"dtype", bb.str("i32")},
                               {"count", bb.str(extentOf(sorted))}}));
    // (The counting sort's steps follow below, once it is known where the
    // kernel of long runs runs: its scan also cuts the runs into tiles.)
    sortKey = &key;
    // Every key's run cut into tiles of the variants' rows (one block
    // each: a frequent key's rows spread over many blocks).
    segmentRows = reductionSegments ? TileShape::kTileSteps
                                    : shortVariant.shape.bm;
    segmentTiles = "ceildiv(" + extentOf(sorted) + ", " +
                   std::to_string(segmentRows) + ") + " + keys;
    std::string words = "1 + 3 * (" + segmentTiles + ")";
    scratch.push_back(bb.dict({{"name", bb.str("tiles")},
                               {"dtype", bb.str("i32")},
                               {"count", bb.str(words)}}));
    if (longVariant) {
      longTiles = "ceildiv(" + extentOf(sorted) + ", " +
                  std::to_string(longVariant->shape.bm) + ")";
      // Never empty where its partner's grid is not (even at M = 0): the
      // partner, which does not wait at its entry, must follow it.
      longGrid = "1 + " + extentOf(sorted) + " / " +
                 std::to_string(longVariant->shape.bm);
      scratch.push_back(bb.dict({{"name", bb.str("long_tiles")},
                                 {"dtype", bb.str("i32")},
                                 {"count", bb.str("1 + 3 * " + longTiles)}}));
    }
    // (The step cutting the runs into tiles follows below, once it is known
    // when the kernel of long runs runs.)
    // The kernel's extra arguments follow the function's.
    kernelArgs.push_back(bb.memref("scratch:perm", {extentOf(sorted)}));
    kernelArgs.push_back(bb.memref("scratch:tiles", {words}));
  }
  // Reduce: a partial value per row and column tile of the narrowest
  // kernel, written by the tiled kernel, combined by the finalize kernel.
  if (reduceRows) {
    int64_t narrowest = variants.front().shape.bn;
    for (const KernelVariant &variant : variants)
      narrowest = std::min(narrowest, variant.shape.bn);
    std::string count = extentOf(TaskOp::I) + " * ceildiv(" +
                        extentOf(TaskOp::J) + ", " +
                        std::to_string(narrowest) + ")";
    scratch.push_back(bb.dict(
        {{"name", bb.str("partials")},
         {"dtype", bb.str(kge_runtime::dtypeName(
                       *getDType(task.getValueType())))},
         {"count", bb.str(count)}}));
    kernelArgs.push_back(bb.memref("scratch:partials", {count}));
    b.setInsertionPointToEnd(module.getBody());
    Value output = task.getOutputs()[0];
    auto finalize = gpu::GPUFuncOp::create(
        b, loc, name + "_finalize",
        b.getFunctionType({partialsType, output.getType(), b.getI64Type()},
                          {}));
    finalize->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                      b.getUnitAttr());
    finalize.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
        {static_cast<int32_t>(kReduceFinalizeThreads), 1, 1}));
    KernelEmitter(b, task, variants.front().shape).emitReduceFinalize(finalize);
  }
  auto blocksOf = [&](const TileShape &s) {
    return "ceildiv(" + extentOf(TaskOp::J) + ", " + std::to_string(s.bn) +
           ") * ceildiv(" + extentOf(TaskOp::I) + ", " + std::to_string(s.bm) +
           ")";
  };
  // Tensor cores copy 16-byte chunks: every operand row must start on one
  // (a product of 0/1 terms, one per operand).
  SmallVector<std::string> alignedTerms;
  const KernelVariant *tensorCoreVariant = llvm::find_if(
      variants, [](const KernelVariant &v) { return v.shape.mma.has_value(); });
  if (tensorCoreVariant != variants.end()) {
    int64_t chunk = 128 / getMmaElementBits(*tensorCoreVariant->shape.mma);
    // 1 where rows of `extent` elements are whole chunks, else 0.
    auto wholeChunks = [&](const std::string &extent) {
      return "(1 - min(1, " + extent + " - " + extent + " / " +
             std::to_string(chunk) + " * " + std::to_string(chunk) + "))";
    };
    auto addTerm = [&](std::string term) {
      if (!llvm::is_contained(alignedTerms, term))
        alignedTerms.push_back(std::move(term));
    };
    // (Operands read at every pair, not staged, take any alignment.)
    for (auto [n, input] : llvm::enumerate(task.getInputs())) {
      int64_t rank = cast<MemRefType>(input.getType()).getRank();
      if (rank >= 2 && task.inputUses(n, TaskOp::K))
        addTerm(wholeChunks(
            signature.params[cast<BlockArgument>(input).getArgNumber()]
                .shape[rank - 1]
                .str()));
    }
    // A transposed copy's rows run along K (a term of its own unless an
    // operand's rows already are K long).
    std::string kTerm = wholeChunks(extentOf(TaskOp::K));
    if (!llvm::is_contained(alignedTerms, kTerm) &&
        llvm::any_of(variants, [&](const KernelVariant &v) {
          return !getTransposedInputs(task, v.shape).empty();
        }))
      alignedTerms.push_back(kTerm);
  }
  std::string aligned = llvm::join(alignedTerms, " * ");
  // The runs cut into tiles: with long runs where their kernel's kind runs
  // (tensor cores when the rows are whole chunks), all into tiles of the
  // other kernels' rows otherwise.
  if (segmentKey) {
    // The counting sort's scan places every key's run and cuts it into
    // tiles (kge_key_scan_tiles), before the scatter fills the runs.
    auto cutRuns = [&](int64_t longRows) {
      return bb.launch(
          "kge_key_scan_tiles", "library", {"1", "1", "1"}, 1024, "0",
          {bb.pointer("scratch:counts"), bb.scalar("i64", bb.str(keys)),
           bb.pointer("scratch:lengths"),
           bb.scalar("i32", bb.str(std::to_string(segmentRows))),
           bb.pointer("scratch:tiles"),
           bb.scalar("i32", bb.str(std::to_string(longRows))),
           bb.pointer(longRows ? "scratch:long_tiles" : "scratch:tiles")});
    };
    bool anyCudaCores = llvm::any_of(
        variants, [](const KernelVariant &v) { return !v.shape.mma; });
    bool anyTensorCores = llvm::any_of(
        variants, [](const KernelVariant &v) { return v.shape.mma.has_value(); });
    std::string longRuns = "1";
    if (longVariant && longVariant->shape.mma && anyCudaCores)
      longRuns = aligned.empty() ? "1" : aligned;
    if (longVariant && !longVariant->shape.mma && anyTensorCores)
      longRuns = aligned.empty() ? "0" : "1 - " + aligned;
    auto when = [&](Attribute step, const std::string &condition) {
      if (condition == "1")
        return step;
      NamedAttrList fields(cast<DictionaryAttr>(step));
      fields.set("when", bb.str(condition));
      return Attribute(fields.getDictionary(func.getContext()));
    };
    SmallVector<Attribute> scans;
    if (!longVariant) {
      scans.push_back(cutRuns(0));
    } else {
      scans.push_back(when(cutRuns(longVariant->shape.bm), longRuns));
      if (longRuns != "1")
        scans.push_back(when(cutRuns(0), "1 - (" + longRuns + ")"));
    }
    bb.appendCountingSort(scratch, steps, "param:" + sortKey->name,
                          sortKey->dtype == kge_runtime::DType::I32 ? 32 : 64,
                          extentOf(sorted), keys, "scratch:perm",
                          [](Attribute step) { return step; }, "lengths",
                          scans);
  }
  // Products and quotients evaluate left to right: A * blocks / 132 is
  // A * (blocks / 132) for A in {0, 1}.
  // The warpgroup kernel on thread stages (one block a multiprocessor, 128
  // x 256 pairs) counts as filling from 15/16 of them: a batch of 16,384
  // edges against 256 negatives is 128 blocks on 132.
  auto fills = [&](const TileShape &s) {
    if (s.threadStages)
      return blocksOf(s) + " * 16 / " + std::to_string(kMultiprocessors * 15);
    return blocksOf(s) + " / " + std::to_string(kMultiprocessors);
  };
  for (auto [n, variant] : llvm::enumerate(variants)) {
    const TileShape &kernelShape = variant.shape;
    int64_t sharedBytes = kernelShape.mma ? kernelShape.mmaSharedBytes() : 0;
    SmallVector<Attribute> args(kernelArgs);
    if (kernelShape.longRuns)
      args[func.getNumArguments() + 1] =
          bb.memref("scratch:long_tiles", {"1 + 3 * " + longTiles});
    // Transposed copies: written to scratch by the device library first,
    // passed in place of their inputs (rows x cols becomes cols x rows).
    SmallVector<unsigned> transposed = getTransposedInputs(task, kernelShape);
    SmallVector<Attribute> transposeSteps;
    // Input -> its copy's buffer and (rows, columns).
    struct Copy {
      std::string buffer, rows, cols;
    };
    llvm::SmallDenseMap<unsigned, Copy> copies;
    for (unsigned n : transposed) {
      unsigned arg = cast<BlockArgument>(task.getInputs()[n]).getArgNumber();
      const kge_runtime::Parameter &p = signature.params[arg];
      std::string rows = p.shape[0].str(), cols = p.shape[1].str();
      std::string copy = "transposed_" + p.name;
      if (!llvm::any_of(scratch, [&](Attribute a) {
            return cast<DictionaryAttr>(a).getAs<StringAttr>("name") ==
                   copy;
          }))
        scratch.push_back(bb.dict({{"name", bb.str(copy)},
                                   {"dtype", bb.str("f32")},
                                   {"count", bb.str(rows + " * " + cols)}}));
      copies[n] = {"scratch:" + copy, cols, rows};
      args[arg] = bb.memref("scratch:" + copy, {cols, rows});
      transposeSteps.push_back(bb.launch(
          "kge_transpose_32", "library",
          {"ceildiv(" + cols + ", 64)",
           "min(ceildiv(" + rows + ", 64), 65535)", "1"},
          256, "0",
          {bb.pointer("param:" + p.name), bb.pointer("scratch:" + copy),
           bb.scalar("i64", bb.str(rows)), bb.scalar("i64", bb.str(cols))}));
    }
    if (kernelShape.warpgroup && !kernelShape.threadStages) {
      // Boxes of 128-byte rows: span x block-k of a k-contiguous operand,
      // block-k x 64 of a spatial-contiguous one.
      tile::ProductOperands product = tile::getProductOperands(task);
      std::array<unsigned, 2> operands = {product.rows.front(),
                                          product.cols.front()};
      for (int p = 0; p < 2; ++p) {
        Value input = task.getInputs()[operands[p]];
        auto copy = copies.find(operands[p]);
        bool kContiguous =
            copy != copies.end() || isKContiguous(task, operands[p]);
        // B in a cluster: a block loads span / cluster rows of it.
        int64_t span = p == 0 ? kernelShape.bm
                              : kernelShape.bn / kernelShape.clusterM;
        SmallVector<NamedAttribute> fields = {
            {b.getStringAttr("kind"), bb.str("tensormap")},
            {b.getStringAttr("buffer"),
             bb.str(copy != copies.end()
                        ? copy->second.buffer
                        : "param:" + signature
                                         .params[cast<BlockArgument>(input)
                                                     .getArgNumber()]
                                         .name)},
            {b.getStringAttr("box"),
             bb.arr({bb.num(kContiguous ? span : kernelShape.bk),
                     bb.num(1024 / getMmaElementBits(*kernelShape.mma))})}};
        if (copy != copies.end())
          fields.push_back({b.getStringAttr("shape"),
                            bb.arr({bb.str(copy->second.rows),
                                    bb.str(copy->second.cols)})});
        args.push_back(b.getDictionaryAttr(fields));
      }
    }
    // Grids of whole clusters: a block past M loads zeros (TMA fills past
    // the extents) for its cluster and stores nothing.
    std::string rowBlocks = "ceildiv(" + extentOf(TaskOp::I) + ", " +
                            std::to_string(kernelShape.bm) + ")";
    if (kernelShape.clusterM > 1)
      rowBlocks = std::to_string(kernelShape.clusterM) + " * ceildiv(" +
                  extentOf(TaskOp::I) + ", " +
                  std::to_string(kernelShape.bm * kernelShape.clusterM) + ")";
    std::string columnBlocks = "ceildiv(" + extentOf(TaskOp::J) + ", " +
                               std::to_string(kernelShape.bn) + ")";
    // Segment iterators: keys along x (more than 65,535 of them fit).
    std::string rowTiles = "ceildiv(" + extentOf(TaskOp::I) + ", " +
                           std::to_string(kernelShape.bm) + ")";
    Attribute step =
        kernelShape.splitK
            ? bb.launch(kernelNames[n], module.getName(),
                        {"ceildiv(" + extentOf(TaskOp::K) + ", " +
                             std::to_string(kernelShape.splitSteps()) + ")",
                         columnBlocks, rowTiles},
                        kernelShape.blockThreads(), "0", args)
        : kernelShape.reductionSegments
            ? bb.launch(kernelNames[n], module.getName(),
                        {segmentTiles, columnBlocks, rowTiles},
                        kernelShape.blockThreads(),
                        std::to_string(sharedBytes), args)
        : kernelShape.segments
            ? bb.launch(kernelNames[n], module.getName(),
                        {kernelShape.longRuns ? longGrid : segmentTiles,
                         columnBlocks, "1"},
                        kernelShape.blockThreads(),
                        std::to_string(sharedBytes), args)
        : rowsAlongX(task, kernelShape)
            ? bb.launch(kernelNames[n], module.getName(), {rowBlocks, "1", "1"},
                        kernelShape.blockThreads(),
                        std::to_string(sharedBytes), args)
        : foldsRowTiles(kernelShape)
            ? bb.launch(kernelNames[n], module.getName(),
                        {columnBlocks,
                         "min(" + rowBlocks + ", " +
                             std::to_string(kMaxGridYZ) + ")",
                         "ceildiv(" + rowBlocks + ", " +
                             std::to_string(kMaxGridYZ) + ")"},
                        kernelShape.blockThreads(),
                        std::to_string(sharedBytes), args)
            : bb.launch(kernelNames[n], module.getName(),
                        {columnBlocks, rowBlocks, "1"},
                        kernelShape.blockThreads(),
                        std::to_string(sharedBytes), args);
    if (variants.size() > 1) {
      // Kernels of this kind (tensor cores or not), largest first: one runs
      // when its grid fills the GPU (and K reaches its minimum) and no
      // larger one runs; the last of its kind otherwise.
      // (A kernel of long runs runs where the next segment kernel of its
      // kind does: it stands for that one here.)
      SmallVector<size_t> kind;
      for (auto [m, other] : llvm::enumerate(variants))
        if (other.shape.mma.has_value() == kernelShape.mma.has_value() &&
            !other.shape.longRuns)
          kind.push_back(m);
      size_t self = n;
      if (kernelShape.longRuns)
        self = *llvm::find_if(kind, [&](size_t m) { return m > n; });
      auto runs = [&](size_t m) {
        std::string condition = fills(variants[m].shape);
        if (variants[m].minK)
          condition = "min(1, " + condition + ") * min(1, " +
                      extentOf(TaskOp::K) + " / " +
                      std::to_string(variants[m].minK) + ")";
        return condition;
      };
      SmallVector<std::string> terms;
      if (kernelShape.mma && !aligned.empty())
        terms.push_back(aligned);
      for (size_t m : kind) {
        if (m == self && m != kind.back())
          terms.push_back(runs(m));
        if (m == self)
          break;
        // Alone, "1 - min(1, x)"; in a product, parenthesized.
        terms.push_back("1 - min(1, " + runs(m) + ")");
      }
      for (std::string &term : terms)
        if (terms.size() > 1 && StringRef(term).starts_with("1 - min(1, "))
          term = "(" + term + ")";
      std::string when = terms.empty() ? "1" : llvm::join(terms, " * ");
      if (!kernelShape.mma && kind.size() < variants.size()) {
        std::string fallback = aligned.empty() ? "0" : "1 - " + aligned;
        when = terms.empty() ? fallback : "(" + fallback + ") * " + when;
      }
      NamedAttrList fields(cast<DictionaryAttr>(step));
      fields.set("when", bb.str(when));
      step = fields.getDictionary(func.getContext());
      // The copies are made where the kernel runs.
      for (Attribute &copy : transposeSteps) {
        NamedAttrList copyFields(cast<DictionaryAttr>(copy));
        copyFields.set("when", bb.str(when));
        copy = copyFields.getDictionary(func.getContext());
      }
    }
    llvm::append_range(steps, transposeSteps);
    steps.push_back(step);
    // (The kernel of long runs is followed by its partner, and that by the
    // finalize kernel.)
    if (reduceRows && !kernelShape.longRuns) {
      // The rows' partial values of this kernel's column tiles, combined
      // where it ran.
      Value output = task.getOutputs()[0];
      Attribute finalize = bb.launch(
          name + "_finalize", module.getName(),
          {"ceildiv(" + extentOf(TaskOp::I) + ", " +
               std::to_string(kReduceFinalizeThreads) + ")",
           "1", "1"},
          kReduceFinalizeThreads, "0",
          {kernelArgs[func.getNumArguments() + (segmentKey ? 2 : 0)],
           kernelArgs[cast<BlockArgument>(output).getArgNumber()],
           bb.scalar("i64", bb.str(columnBlocks))});
      if (auto when = cast<DictionaryAttr>(step).get("when")) {
        NamedAttrList fields(cast<DictionaryAttr>(finalize));
        fields.set("when", when);
        finalize = fields.getDictionary(func.getContext());
      }
      steps.push_back(finalize);
    }
  }
  if (topK) {
    // The k best of all shards, into the outputs: one block.
    b.setInsertionPointToEnd(module.getBody());
    ValueRange outs = task.getOutputs();
    SmallVector<Type> types = {
        MemRefType::get({ShapedType::kDynamic}, task.getValueType()), i32Array,
        i32Array};
    for (Value v : outs)
      types.push_back(v.getType());
    auto merge = gpu::GPUFuncOp::create(b, loc, name + "_merge",
                                        b.getFunctionType(types, {}));
    merge->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    merge.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({1024, 1, 1}));
    KernelEmitter emitter(b, task, variants.front().shape);
    emitter.emitTopKMerge(merge);
    SmallVector<Attribute> mergeArgs;
    for (unsigned n = 0; n < 3; ++n)
      mergeArgs.push_back(kernelArgs[kernelArgs.size() - 3 + n]);
    for (Value v : outs)
      mergeArgs.push_back(kernelArgs[cast<BlockArgument>(v).getArgNumber()]);
    steps.push_back(bb.launch(name + "_merge", module.getName(),
                              {"1", "1", "1"}, 1024, "0", mergeArgs));
  }
  return success();
}

/// `step` (a launch-plan step or argument) with every reference to a
/// scratch buffer named in `names` renamed by `rename`.
static Attribute renameScratch(Attribute attr, const llvm::StringSet<> &names,
                               llvm::function_ref<std::string(StringRef)> rename) {
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    SmallVector<Attribute> elements;
    for (Attribute element : array)
      elements.push_back(renameScratch(element, names, rename));
    return ArrayAttr::get(attr.getContext(), elements);
  }
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict)
    return attr;
  NamedAttrList fields;
  for (NamedAttribute field : dict) {
    Attribute value = renameScratch(field.getValue(), names, rename);
    if (auto text = dyn_cast<StringAttr>(value);
        text && field.getName() == "buffer" &&
        text.getValue().starts_with("scratch:") &&
        names.contains(text.getValue().drop_front(8)))
      value = StringAttr::get(
          attr.getContext(),
          "scratch:" + rename(text.getValue().drop_front(8)));
    fields.append(field.getName(), value);
  }
  return fields.getDictionary(attr.getContext());
}

/// The names of the scratch buffers that `steps` refer to.
static void collectScratch(ArrayRef<Attribute> steps, llvm::StringSet<> &names) {
  for (Attribute attr : steps) {
    if (auto array = dyn_cast<ArrayAttr>(attr)) {
      collectScratch(array.getValue(), names);
      continue;
    }
    auto dict = dyn_cast<DictionaryAttr>(attr);
    if (!dict)
      continue;
    for (NamedAttribute field : dict) {
      auto text = dyn_cast<StringAttr>(field.getValue());
      if (text && field.getName() == "buffer" &&
          text.getValue().starts_with("scratch:"))
        names.insert(text.getValue().drop_front(8));
      else
        collectScratch(field.getValue(), names);
    }
  }
}

/// Lowers the tile function `func`: one gpu.module of all its tasks''
/// kernels and a launch plan that runs the tasks in order (each task's
/// steps after the previous task's; later tasks' kernels and scratch
/// buffers named `<function>_t<n>...` and `t<n>_...`).
LogicalResult lowerFunction(func::FuncOp func) {
  SmallVector<TaskOp> tasks(func.getBody().getOps<TaskOp>());
  if (tasks.empty())
    return func.emitOpError() << "holds no tile.task";
  FailureOr<kge_runtime::Signature> signature = tile::computeSignature(func);
  if (failed(signature))
    return failure();
  OpBuilder b(func);
  std::string name = func.getSymName().str();
  auto module = gpu::GPUModuleOp::create(b, func.getLoc(), name + "_kernels");
  Builder builder(func.getContext());
  BundleBuilder bb(builder);
  SmallVector<Attribute> steps, scratch, checks;
  // Results start at their first combination's identity: one that a task
  // combines into (aggregate, per_key, update) or leaves partly unwritten
  // (a dense output's join) before any task stores it whole is cleared
  // first (to a 32-bit word other than zero: -inf for max, +inf for min).
  for (const tile::ResultStart &start : tile::getResultStarts(func)) {
    const kge_runtime::Parameter &param = signature->params[start.arg];
    NamedAttrList fields;
    fields.append("kind", bb.str("memset"));
    fields.append("buffer", bb.str("param:" + param.name));
    APInt bits = isa<FloatAttr>(start.value)
                     ? cast<FloatAttr>(start.value).getValue().bitcastToAPInt()
                     : cast<IntegerAttr>(start.value).getValue();
    if (!bits.isZero()) {
      if (bits.getBitWidth() != 32) {
        module.erase();
        return func.emitOpError()
               << "result '" << param.name << "' starts at "
               << start.value
               << ": the GPU clears results to a value other than zero "
                  "only for 32-bit elements";
      }
      fields.append("value", builder.getI64IntegerAttr(bits.getZExtValue()));
    }
    steps.push_back(fields.getDictionary(func.getContext()));
  }
  // The sorts run so far (their steps and buffers as lowerTask names them)
  // and the tag of the task whose scratch holds each.
  struct SortSteps {
    std::string tag;
    SmallVector<Attribute> steps, buffers;
  };
  SmallVector<SortSteps> sorts;
  for (auto [n, task] : llvm::enumerate(tasks)) {
    size_t firstStep = steps.size(), firstScratch = scratch.size();
    std::string prefix = n == 0 ? name : name + "_t" + std::to_string(n);
    if (failed(lowerTask(func, task, *signature, module, prefix, steps,
                         scratch))) {
      module.erase();
      return failure();
    }
    std::string tag = n == 0 ? "" : "t" + std::to_string(n) + "_";
    // The task's sort (its leading steps: memsets of its scratch and
    // device-library kernels): one identical to an earlier task's (the
    // same keys, tiles and sizes) is not run again; the task reads that
    // task's sorted order instead.
    size_t sortEnd = firstStep;
    while (sortEnd < steps.size()) {
      auto step = cast<DictionaryAttr>(steps[sortEnd]);
      auto module = step.getAs<StringAttr>("module");
      bool isMemset = step.getAs<StringAttr>("kind").getValue() == "memset";
      if (!isMemset && !(module && module.getValue() == "library"))
        break;
      ++sortEnd;
    }
    SortSteps sort{tag, {steps.begin() + firstStep, steps.begin() + sortEnd}, {}};
    llvm::StringSet<> sortBuffers;
    collectScratch(sort.steps, sortBuffers);
    for (Attribute entry : llvm::drop_begin(scratch, firstScratch))
      if (sortBuffers.contains(
              cast<DictionaryAttr>(entry).getAs<StringAttr>("name").getValue()))
        sort.buffers.push_back(entry);
    const SortSteps *shared = nullptr;
    if (!sort.steps.empty())
      for (const SortSteps &earlier : sorts)
        if (earlier.steps == sort.steps && earlier.buffers == sort.buffers)
          shared = &earlier;
    if (shared) {
      steps.erase(steps.begin() + firstStep, steps.begin() + sortEnd);
      scratch.erase(std::remove_if(scratch.begin() + firstScratch, scratch.end(),
                                   [&](Attribute entry) {
                                     return sortBuffers.contains(
                                         cast<DictionaryAttr>(entry)
                                             .getAs<StringAttr>("name")
                                             .getValue());
                                   }),
                    scratch.end());
    } else if (!sort.steps.empty()) {
      sorts.push_back(std::move(sort));
    }
    if (n == 0)
      continue;
    // The task's own scratch buffers, apart from the other tasks' (those
    // of a shared sort: the earlier task's).
    llvm::StringSet<> names;
    auto rename = [&](StringRef buffer) {
      return (shared && sortBuffers.contains(buffer) ? shared->tag : tag) +
             buffer.str();
    };
    for (Attribute &entry : llvm::drop_begin(scratch, firstScratch)) {
      names.insert(cast<DictionaryAttr>(entry).getAs<StringAttr>("name"));
      NamedAttrList fields(cast<DictionaryAttr>(entry));
      fields.set("name", bb.str(rename(
                             cast<DictionaryAttr>(entry).getAs<StringAttr>("name"))));
      entry = fields.getDictionary(func.getContext());
    }
    if (shared)
      for (const auto &buffer : sortBuffers)
        names.insert(buffer.getKey());
    for (Attribute &step : llvm::drop_begin(steps, firstStep))
      step = renameScratch(step, names, rename);
  }
  for (const kge_runtime::Parameter &p : signature->params)
    if (p.role == kge_runtime::ParamRole::Indices && !p.indexedTables.empty())
      checks.push_back(bb.dict({{"param", bb.str(p.name)},
                                {"bound", bb.str(indexRange(*signature, p))},
                                {"count", bb.str(p.shape[0].str())}}));
  module->setAttr(kSignatureAttrName, bb.signature(*signature));
  module->setAttr(kModeAttrName, bb.dict({{"kind", bb.str("positive")}}));
  module->setAttr(kScratchAttrName, bb.arr(scratch));
  module->setAttr(kLaunchPlanAttrName, bb.arr(steps));
  module->setAttr(kChecksAttrName, bb.arr(checks));
  func.erase();
  return success();
}

/// The options of the schedule (tile-schedule's and convert-tile-to-gpu's).
struct ScheduleOptions {
  /// The given tile shape; `automatic` when none is (GAMUT's heuristic).
  TileShape shape;
  bool automatic;
  std::string matrixMath;
  bool warpgroup;
  int64_t clusterM;
};

/// Reads and checks the schedule options of `pass` (either pass).
template <typename PassT>
FailureOr<ScheduleOptions> readScheduleOptions(PassT &pass, ModuleOp module) {
  ScheduleOptions o;
  o.automatic = !pass.blockM && !pass.blockN && !pass.blockK &&
                !pass.threadM && !pass.threadN;
  o.shape = TileShape{pass.blockM ? pass.blockM : 64,
                      pass.blockN ? pass.blockN : 64,
                      pass.blockK ? pass.blockK : 16,
                      pass.threadM ? pass.threadM : 4,
                      pass.threadN ? pass.threadN : 4};
  const TileShape &shape = o.shape;
  if (shape.bm <= 0 || shape.bn <= 0 || shape.bk <= 0 || shape.tm <= 0 ||
      shape.tn <= 0 || shape.bm % shape.tm || shape.bn % shape.tn ||
      shape.threads() > 1024 || shape.bk > shape.threads())
    return module.emitError()
           << "invalid tile shape: block " << shape.bm << "x" << shape.bn
           << "x" << shape.bk << ", thread " << shape.tm << "x" << shape.tn
           << " (the thread tile must divide the block tile, at most 1024 "
              "threads, block-k at most the number of threads)";
  o.clusterM = pass.clusterM;
  if (!llvm::is_contained({1, 2, 4}, o.clusterM))
    return module.emitError() << "invalid cluster-m " << o.clusterM
                              << " (expected 1, 2 or 4)";
  o.matrixMath = pass.matrixMath;
  if (!o.matrixMath.empty() && o.matrixMath != "fma" &&
      !llvm::is_contained({"tf32", "tf32x3"}, o.matrixMath))
    return module.emitError() << "invalid matrix-math '" << o.matrixMath
                              << "' (expected fma, tf32 or tf32x3)";
  o.warpgroup = pass.warpgroup;
  return o;
}

/// GAMUT's choice of kernels for `task` under the options `o`, most
/// preferred first.
static SmallVector<KernelVariant> chooseVariants(TaskOp task,
                                                 const ScheduleOptions &o) {
  // A matrix per key of f32 takes 3xTF32 unless told otherwise: the
  // segments' products at FP32's accuracy, bound by reading the matrices
  // (the CUDA-core segments take twice as long).
  std::optional<MmaPrecision> precision =
      getTensorCorePrecision(task, o.matrixMath.empty() && task.getPerKeyInput()
                                       ? "tf32x3"
                                       : o.matrixMath);
  // A product form's stages hold all its operands' tiles.
  StageBudget budget = getStageBudget(task);
  auto mma = [&](bool large) { return mmaShape(*precision, large, budget); };
  // Kernels whose stages fit (a product form of many operands may not).
  auto fitting = [](std::initializer_list<KernelVariant> variants) {
    SmallVector<KernelVariant> kept;
    for (const KernelVariant &v : variants)
      if (!v.shape.mma || v.shape.stages)
        kept.push_back(v);
    return kept;
  };
  if (task.getOutput() == OutputKind::per_key) {
    // Segments of the reduction: a block's tile of its key's matrix (64 x
    // 64 pairs, or the given shape) over one tile of its key's steps — on
    // mma.sync for a plain product whose operands are stored
    // spatial-contiguous (each step's row is read through the sorted
    // order: 16-byte chunks along k would mix steps), where the rows are
    // whole chunks, and on CUDA cores otherwise.
    TileShape shape = o.automatic ? kSmallShape : o.shape;
    shape.reductionSegments = true;
    // (32-bit operands: the 16-bit fragments' transposing loads are not
    // built with the tile's step offset.)
    bool stepRows = precision && getMmaElementBits(*precision) == 32 &&
                    getProductForm(task)->isPlain();
    if (stepRows)
      for (unsigned n = 0; n < task.getInputs().size(); ++n)
        if (task.inputUses(n, TaskOp::K) && isKContiguous(task, n))
          stepRows = false;
    if (o.automatic && stepRows) {
      TileShape tensorCores = mma(false);
      tensorCores.reductionSegments = true;
      return fitting({{tensorCores, "_mma"}, {shape, "_small"}});
    }
    return {{shape, ""}};
  }
  if (task.getPerKeyInput()) {
    // Segment iterators: tiles of 16 rows (runs are short: a relation's
    // edges in a batch), on mma.sync for products that take tensor cores
    // (when the rows allow 16-byte copies), on CUDA cores otherwise; a
    // given shape is the segments'.
    TileShape segmentShape = o.automatic ? kSegmentShape : o.shape;
    segmentShape.segments = true;
    if (o.automatic && precision)
      return fitting({{segmentMmaShape(*precision, budget, /*longRuns=*/true),
                       "_mma_long"},
                      {segmentMmaShape(*precision, budget), "_mma"},
                      {segmentShape, "_small"}});
    return {{segmentShape, ""}};
  }
  if (!o.automatic)
    return {{o.shape, ""}};
  bool topK = task.getOutput() == OutputKind::top_k;
  bool joined = !task.getWhen().empty();
  // Top-k sorts a block's pairs: the large tiles have too many. The
  // tensor-core kernels need 16-byte rows: a CUDA-core one runs the others.
  bool sixteenBit = precision && getMmaElementBits(*precision) == 16;
  // Warpgroup MMA reads tf32 operands only k-major (and rounds by dropping
  // their low bits: they reach it from shared memory as stored); an operand
  // stored otherwise is read from a transposed copy the launch plan writes
  // first (a pass over it: small against the products from K = 1024 on).
  bool warpgroupTF32 = precision == MmaPrecision::tf32;
  // Gathered rows take mma.sync (warpgroup MMA loads tiles by TMA), and so
  // do product forms with computed factors (warpgroup MMA reads its
  // operands from shared memory as loaded).
  bool gathered = !task.getGathers().empty();
  bool plain = precision && getProductForm(task)->isPlain();
  // Reduce's store iterator combines rows of mma.sync fragments or of
  // CUDA-core threads.
  bool reduceRows = task.getOutput() == OutputKind::reduce;
  if ((sixteenBit || warpgroupTF32) && o.warpgroup && !topK && !gathered &&
      plain && !reduceRows)
    return fitting({{warpgroupShape(*precision, joined, o.clusterM), "_wgmma",
                     kWarpgroupMinK},
                    {mma(true), "_mma"},
                    {mma(false), "_mma_small"},
                    {kSmallShape, "_small"}});
  // Gathered rows and product forms of computed factors: warpgroup MMA on
  // stages the producer threads write, when every operand is stored
  // k-contiguous (they read 16-byte chunks along k) and the terms fit.
  if ((sixteenBit || warpgroupTF32) && o.warpgroup && !topK && !reduceRows &&
      threadStagesFit(task))
    return fitting({{warpgroupShape(*precision, joined, 1,
                                    /*threadStages=*/true),
                     "_wgmma", kThreadStagesMinK},
                    {mma(true), "_mma"},
                    {mma(false), "_mma_small"},
                    {kSmallShape, "_small"}});
  if (precision && !topK)
    return fitting({{mma(true), "_mma"},
                    {mma(false), "_mma_small"},
                    {kSmallShape, "_small"}});
  if (precision)
    return fitting({{mma(false), "_mma_small"}, {kSmallShape, "_small"}});
  // A dense update whose grid does not fill the GPU splits its reduction
  // (the last CUDA-core kernel: it runs where no other fills the GPU).
  if (task.getOutput() == OutputKind::dense && task.getUpdate() &&
      task.getProject().empty() && task.getWhen().empty() &&
      llvm::is_contained({Combiner::add, Combiner::max, Combiner::min},
                         task.getAccumulate())) {
    TileShape split = kSmallShape;
    split.splitK = true;
    return {{kLargeShape, ""}, {kSmallShape, "_small"}, {split, "_split_k"}};
  }
  if (!topK)
    return {{kLargeShape, ""}, {kSmallShape, "_small"}};
  return {{kSmallShape, ""}};
}

static LogicalResult scheduleTask(TaskOp task, const ScheduleOptions &o);

/// Gives every task of the tile function `func` its schedule (kept where
/// it has one): the kernels chooseVariants picks, as tile iterators.
static LogicalResult scheduleFunction(func::FuncOp func,
                                      const ScheduleOptions &o) {
  for (TaskOp task : func.getBody().getOps<TaskOp>())
    if (failed(scheduleTask(task, o)))
      return failure();
  return success();
}

/// Gives `task` its schedule (kept when it has one).
static LogicalResult scheduleTask(TaskOp task, const ScheduleOptions &o) {
  if (!task.getKernels().empty())
    return success();
  if (failed(getSegmentKey(task)))
    return failure();
  OpBuilder b(task);
  for (const KernelVariant &variant : chooseVariants(task, o)) {
    const TileShape &shape = variant.shape;
    tile::KernelTiling tiling{shape.bm, shape.bn, shape.bk, shape.tm,
                              shape.tn};
    if (shape.mma)
      tiling.precision = toTilePrecision(*shape.mma);
    tiling.stages = shape.stages;
    tiling.warpgroup = shape.warpgroup;
    tiling.clusterM = shape.clusterM;
    tiling.threadStages = shape.threadStages;
    tiling.minK = variant.minK;
    tiling.longRuns = shape.longRuns;
    tiling.splitK = shape.splitK;
    tile::buildKernel(b, task, variant.suffix, tiling);
  }
  // The schedule's rules are the verifier's: a kernel the heuristic
  // cannot express is an error here, not later.
  return mlir::verify(task);
}

/// Schedules every tile function of `module`.
template <typename PassT>
static LogicalResult scheduleModule(PassT &pass, ModuleOp module,
                                    SmallVectorImpl<func::FuncOp> &funcs) {
  FailureOr<ScheduleOptions> options = readScheduleOptions(pass, module);
  if (failed(options))
    return failure();
  for (auto func : module.getOps<func::FuncOp>())
    if (tile::isTileFunction(func))
      funcs.push_back(func);
  bool failedAny = false;
  for (func::FuncOp func : funcs)
    failedAny |= failed(scheduleFunction(func, *options));
  return failure(failedAny);
}

struct TileSchedulePass : kge::impl::TileScheduleBase<TileSchedulePass> {
  using TileScheduleBase::TileScheduleBase;
  template <typename PassT>
  friend FailureOr<ScheduleOptions> readScheduleOptions(PassT &, ModuleOp);

  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs;
    if (failed(scheduleModule(*this, getOperation(), funcs)))
      return signalPassFailure();
  }
};

struct ConvertTileIteratorToGPUPass
    : kge::impl::ConvertTileIteratorToGPUBase<ConvertTileIteratorToGPUPass> {
  using ConvertTileIteratorToGPUBase::ConvertTileIteratorToGPUBase;
  template <typename PassT>
  friend FailureOr<ScheduleOptions> readScheduleOptions(PassT &, ModuleOp);

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    if (failed(scheduleModule(*this, module, funcs)))
      return signalPassFailure();
    bool failedAny = false;
    for (func::FuncOp func : funcs)
      failedAny |= failed(lowerFunction(func));
    if (failedAny)
      return signalPassFailure();
    if (!funcs.empty())
      module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                      UnitAttr::get(&getContext()));
  }
};

} // namespace
