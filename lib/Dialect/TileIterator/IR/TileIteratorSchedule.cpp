//===- TileIteratorSchedule.cpp - a task's kernels as tile iterators ------===//
//
// The schedule of a tile.task: `!tile.tile`, `tile.kernel` and its iterators
// (`tile.load`, `tile.mma`, `tile.compute`, `tile.store`). One set of rules
// (getLoadKind, getLoadPath, getLoadTileType, getStoreKind) says what each
// iterator of a kernel must be for its task; buildKernel writes kernels by
// them and the task's region verifier checks hand-written ones against
// them.
//
//===----------------------------------------------------------------------===//

#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include <set>

using namespace mlir;
using namespace mlir::tile;

//===----------------------------------------------------------------------===//
// !tile.tile
//===----------------------------------------------------------------------===//

Type TileType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType) || parser.parseGreater())
    return {};
  return parser.getChecked<TileType>(parser.getContext(),
                                    ArrayRef<int64_t>(shape), elementType);
}

void TileType::print(AsmPrinter &printer) const {
  printer << '<';
  for (int64_t dim : getShape())
    printer << dim << 'x';
  printer << getElementType() << '>';
}

LogicalResult TileType::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> shape, Type elementType) {
  if (shape.size() != 1 && shape.size() != 2)
    return emitError() << "!tile.tile must have rank 1 or 2, got rank "
                       << shape.size();
  for (int64_t dim : shape)
    if (dim <= 0)
      return emitError() << "!tile.tile extents must be positive, got "
                         << dim;
  if (!elementType.isIntOrFloat())
    return emitError() << "!tile.tile elements must be integers or floats, "
                          "got "
                       << elementType;
  return success();
}

//===----------------------------------------------------------------------===//
// The rules
//===----------------------------------------------------------------------===//

static AffineMap mapOf(TaskOp task, unsigned n) {
  return cast<AffineMapAttr>(task.getIndexingMaps()[n]).getValue();
}

std::optional<unsigned> TaskOp::getPerKeyInput() {
  for (unsigned n = 0, e = getInputs().size(); n < e; ++n)
    if (inputUses(n, I) && inputUses(n, J) && inputUses(n, K))
      return n;
  return std::nullopt;
}

SmallVector<KernelOp> TaskOp::getKernels() {
  SmallVector<KernelOp> kernels;
  if (!getSchedule().empty())
    llvm::append_range(kernels, getSchedule().front().getOps<KernelOp>());
  return kernels;
}

ProductOperands mlir::tile::getProductOperands(TaskOp task) {
  ProductOperands operands;
  for (unsigned n = 0; n < task.getInputs().size(); ++n) {
    if (!task.inputUses(n, TaskOp::K))
      continue;
    // A matrix per row's key (indexed by i and j) is a (k, j) operand.
    if (task.inputUses(n, TaskOp::J))
      operands.cols.push_back(n);
    else if (task.inputUses(n, TaskOp::I))
      operands.rows.push_back(n);
    else
      operands.kOnly.push_back(n);
  }
  return operands;
}

LoadKind mlir::tile::getLoadKind(TaskOp task, unsigned n) {
  if (task.getPerKeyInput() == n)
    return LoadKind::per_key;
  for (unsigned d = 0; d < mapOf(task, n).getNumResults(); ++d)
    if (task.isGathered(n, d))
      return LoadKind::gathered;
  return LoadKind::dense;
}

bool mlir::tile::isLoadSorted(TaskOp task, unsigned n) {
  // Segments of the reduction: the steps of k in the key order.
  if (task.getOutput() == OutputKind::per_key)
    return task.inputUses(n, TaskOp::K);
  return task.getPerKeyInput().has_value() &&
         getLoadKind(task, n) != LoadKind::per_key &&
         task.inputUses(n, TaskOp::I);
}

LoadPath mlir::tile::getLoadPath(TaskOp task, unsigned n, bool tensorCores,
                                 bool warpgroup, bool threadStages) {
  if (!task.inputUses(n, TaskOp::K))
    return LoadPath::registers;
  if (!tensorCores)
    return LoadPath::shared;
  if (!warpgroup)
    return LoadPath::async;
  return threadStages ? LoadPath::threads : LoadPath::tma;
}

bool mlir::tile::isKContiguous(TaskOp task, unsigned n) {
  AffineMap map = mapOf(task, n);
  return map.getDimPosition(map.getNumResults() - 1) == TaskOp::K;
}

bool mlir::tile::isLoadTransposed(TaskOp task, unsigned n,
                                  std::optional<Precision> precision,
                                  bool warpgroup) {
  if (!warpgroup || precision != Precision::tf32)
    return false;
  ProductOperands operands = getProductOperands(task);
  if (!llvm::is_contained(operands.rows, n) &&
      !llvm::is_contained(operands.cols, n))
    return false;
  return !isKContiguous(task, n);
}

TileType mlir::tile::getLoadTileType(TaskOp task, unsigned n,
                                     ArrayRef<int64_t> block) {
  AffineMap map = mapOf(task, n);
  bool perKey = getLoadKind(task, n) == LoadKind::per_key;
  SmallVector<int64_t> shape;
  for (unsigned d = 0; d < map.getNumResults(); ++d) {
    // A matrix per key: the block holds its key's matrix.
    if (perKey && task.isGathered(n, d))
      continue;
    shape.push_back(block[map.getDimPosition(d)]);
  }
  return TileType::get(task.getContext(), ArrayRef<int64_t>(shape),
                       cast<MemRefType>(task.getInputs()[n].getType())
                           .getElementType());
}

StoreKind mlir::tile::getStoreKind(TaskOp task, bool tensorCores) {
  switch (task.getOutput()) {
  case OutputKind::dense:
    if (task.getUpdate())
      return StoreKind::update;
    // Tensor cores' f32 values at every pair of an (i, j) output pass
    // through shared memory to leave as row vectors.
    if (tensorCores && !task.getPerKeyInput() && task.getWhen().empty() &&
        task.getDenseOutputMap().getDimPosition(0) == TaskOp::I &&
        task.getValueType().isF32())
      return StoreKind::staged;
    return StoreKind::dense;
  case OutputKind::aggregate:
    return StoreKind::scatter;
  case OutputKind::select:
    return StoreKind::compact;
  case OutputKind::top_k:
    return StoreKind::top_k;
  case OutputKind::distinct:
    return StoreKind::distinct;
  case OutputKind::reduce:
    return StoreKind::reduce;
  case OutputKind::per_key:
    return StoreKind::per_key;
  }
  llvm_unreachable("unknown output kind");
}

KernelOp mlir::tile::buildKernel(OpBuilder &b, TaskOp task, StringRef suffix,
                                 const KernelTiling &tiling) {
  OpBuilder::InsertionGuard guard(b);
  Location loc = task.getLoc();
  Region &schedule = task.getSchedule();
  if (schedule.empty()) {
    b.createBlock(&schedule);
    YieldOp::create(b, loc, Value());
  }
  b.setInsertionPoint(schedule.front().getTerminator());
  auto optional = [&](int64_t value, int64_t absent) {
    return value == absent ? IntegerAttr() : b.getI64IntegerAttr(value);
  };
  bool tensorCores = tiling.precision.has_value();
  auto kernel = KernelOp::create(
      b, loc, suffix,
      b.getDenseI64ArrayAttr({tiling.bm, tiling.bn, tiling.bk}),
      b.getDenseI64ArrayAttr({tiling.tm, tiling.tn}),
      tensorCores ? b.getI64IntegerAttr(tiling.stages) : IntegerAttr(),
      optional(tiling.clusterM, 1), optional(tiling.minK, 0),
      tiling.longRuns, tiling.splitK);
  b.createBlock(&kernel.getBody());
  int64_t block[3] = {tiling.bm, tiling.bn, tiling.bk};
  SmallVector<Value> loads;
  for (unsigned n = 0, e = task.getInputs().size(); n < e; ++n)
    loads.push_back(LoadOp::create(
        b, loc, getLoadTileType(task, n, block), n, getLoadKind(task, n),
        isLoadSorted(task, n),
        isLoadTransposed(task, n, tiling.precision, tiling.warpgroup),
        getLoadPath(task, n, tensorCores, tiling.warpgroup,
                    tiling.threadStages)));
  Type accType = TileType::get(
      b.getContext(), {tiling.bm, tiling.bn},
      tensorCores ? b.getF32Type() : task.getAccumulatorType());
  Value acc;
  if (tensorCores) {
    ProductOperands operands = getProductOperands(task);
    auto loadsOf = [&](ArrayRef<unsigned> inputs) {
      SmallVector<Value> values;
      for (unsigned n : inputs)
        values.push_back(loads[n]);
      return values;
    };
    acc = MmaOp::create(b, loc, accType, loadsOf(operands.rows),
                        loadsOf(operands.cols), *tiling.precision,
                        tiling.warpgroup);
  } else {
    acc = ComputeOp::create(b, loc, accType, loads);
  }
  SmallVector<Value> spatial;
  for (unsigned n : task.spatialOnlyInputs())
    spatial.push_back(loads[n]);
  StoreOp::create(b, loc, acc, spatial, getStoreKind(task, tensorCores));
  return kernel;
}

KernelTiling mlir::tile::getKernelTiling(KernelOp kernel) {
  KernelTiling tiling{kernel.getBlockM(), kernel.getBlockN(),
                      kernel.getBlockK(), kernel.getThreadM(),
                      kernel.getThreadN()};
  if (auto mma = dyn_cast_or_null<MmaOp>(kernel.getComputeStep())) {
    tiling.precision = mma.getPrecision();
    tiling.warpgroup = mma.getWarpgroup();
  }
  for (LoadOp load : kernel.getBody().front().getOps<LoadOp>())
    if (load.getVia() == LoadPath::threads)
      tiling.threadStages = true;
  auto valueOr = [](IntegerAttr attr, int64_t absent) {
    return attr ? attr.getInt() : absent;
  };
  tiling.stages = valueOr(kernel.getStagesAttr(), 0);
  tiling.clusterM = valueOr(kernel.getClusterMAttr(), 1);
  tiling.minK = valueOr(kernel.getMinKAttr(), 0);
  tiling.longRuns = kernel.getLongRuns();
  tiling.splitK = kernel.getSplitK();
  return tiling;
}

//===----------------------------------------------------------------------===//
// tile.kernel
//===----------------------------------------------------------------------===//

Operation *KernelOp::getComputeStep() {
  for (Operation &op : getBody().front())
    if (isa<MmaOp, ComputeOp>(op))
      return &op;
  return nullptr;
}

LoadOp KernelOp::getLoadOf(unsigned n) {
  for (LoadOp load : getBody().front().getOps<LoadOp>())
    if (load.getInputAttr().getInt() == static_cast<int64_t>(n))
      return load;
  return nullptr;
}

bool KernelOp::runsReductionSegments() {
  for (StoreOp store : getBody().front().getOps<StoreOp>())
    if (store.getKind() == StoreKind::per_key)
      return true;
  return false;
}

bool KernelOp::runsSegments() {
  for (LoadOp load : getBody().front().getOps<LoadOp>())
    if (load.getKind() == LoadKind::per_key)
      return true;
  return false;
}

/// The kernel's tiling on its own: extents, thread tiles, warps, stages and
/// clusters, and the order of its body (loads, one compute step, one store).
LogicalResult KernelOp::verify() {
  if (getBlockShape().size() != 3 || getThreadShape().size() != 2)
    return emitOpError() << "takes block [m, n, k] and thread [m, n], got "
                         << getBlockShape().size() << " and "
                         << getThreadShape().size() << " extents";
  for (int64_t v : llvm::concat<const int64_t>(getBlockShape(),
                                               getThreadShape()))
    if (v <= 0)
      return emitOpError() << "tile extents must be positive, got " << v;
  int64_t bm = getBlockM(), bn = getBlockN(), bk = getBlockK();
  int64_t tm = getThreadM(), tn = getThreadN();
  Block &body = getBody().front();
  Operation *step = getComputeStep();
  auto mma = dyn_cast_or_null<MmaOp>(step);
  if (mma) {
    // Warps of (8 tm) x (4 tn) pairs in 16 x 8 products.
    if (tm % 2 || tn % 2 || bm % (8 * tm) || bn % (4 * tn))
      return emitOpError()
             << "on tensor cores a warp computes (8 thread-m) x (4 thread-n) "
                "pairs as 16 x 8 products: thread-m and thread-n must be "
                "even and divide block-m / 8 and block-n / 4, got block "
             << bm << "x" << bn << ", thread " << tm << "x" << tn;
    int64_t threads = 32 * (bm / (8 * tm)) * (bn / (4 * tn));
    if (threads > 1024)
      return emitOpError() << "has " << threads
                           << " threads per block (at most 1024)";
    if (!getStagesAttr() || getStagesAttr().getInt() < 2)
      return emitOpError() << "on tensor cores needs 'stages' of at least 2 "
                              "(the asynchronous loads' pipeline)";
  } else {
    if (bm % tm || bn % tn)
      return emitOpError() << "thread tile " << tm << "x" << tn
                           << " must divide the block tile " << bm << "x"
                           << bn;
    int64_t threads = (bm / tm) * (bn / tn);
    if (threads > 1024)
      return emitOpError() << "has " << threads
                           << " threads per block (at most 1024)";
    if (bk > threads)
      return emitOpError() << "block-k " << bk
                           << " exceeds the block's " << threads
                           << " threads (each stages one step of k)";
    if (getStages())
      return emitOpError() << "'stages' are the tensor cores' pipeline; a "
                              "kernel on CUDA cores has none";
  }
  if (IntegerAttr clusterAttr = getClusterMAttr()) {
    int64_t cluster = clusterAttr.getInt();
    if (!llvm::is_contained({1, 2, 4}, cluster))
      return emitOpError() << "cluster_m must be 1, 2 or 4, got " << cluster;
    if (cluster > 1 && !(mma && mma.getWarpgroup()))
      return emitOpError() << "clusters (cluster_m " << cluster
                           << ") share TMA loads: only warpgroup MMA "
                              "kernels have them";
  }
  if (getMinKAttr() && getMinKAttr().getInt() < 0)
    return emitOpError() << "min_k must not be negative, got "
                         << getMinKAttr().getInt();

  // Loads, then the compute step, then the store.
  enum { Loads, Compute, Store, Done } phase = Loads;
  for (Operation &op : body) {
    if (isa<LoadOp>(op) && phase == Loads)
      continue;
    if (isa<MmaOp, ComputeOp>(op) && phase == Loads) {
      phase = Compute;
      continue;
    }
    if (isa<StoreOp>(op) && phase == Compute) {
      phase = Store;
      continue;
    }
    return op.emitOpError()
           << "is out of place: a kernel holds its loads, then one "
              "tile.mma or tile.compute, then one tile.store";
  }
  if (phase != Store)
    return emitOpError() << "must end with a compute step (tile.mma or "
                            "tile.compute) and a tile.store";
  if (getLongRuns() && !runsSegments())
    return emitOpError() << "takes long runs, but it runs no segments (no "
                            "load of kind per_key)";
  return success();
}

//===----------------------------------------------------------------------===//
// The schedule against its task
//===----------------------------------------------------------------------===//

static std::string str(TileType type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

/// Checks one kernel's iterators against `task` (whose own regions are
/// verified).
static LogicalResult verifyKernel(TaskOp task, KernelOp kernel) {
  unsigned numInputs = task.getInputs().size();
  Operation *step = kernel.getComputeStep();
  auto mma = dyn_cast<MmaOp>(step);
  bool tensorCores = static_cast<bool>(mma);
  bool warpgroup = mma && mma.getWarpgroup();
  // Warpgroup MMA's stages written by the producer threads (any load via
  // threads says so; then every load of an operand must).
  bool threadStages = warpgroup && getKernelTiling(kernel).threadStages;
  std::optional<Precision> precision;
  if (mma)
    precision = mma.getPrecision();
  ArrayRef<int64_t> block = kernel.getBlockShape();

  SmallVector<Value> loads(numInputs);
  for (LoadOp load : kernel.getBody().front().getOps<LoadOp>()) {
    int64_t n = load.getInputAttr().getInt();
    if (n < 0 || n >= numInputs)
      return load.emitOpError() << "loads input " << n << " but the task has "
                                << numInputs << " inputs";
    if (loads[n])
      return load.emitOpError() << "loads input " << n
                                << " again: a kernel loads each input once";
    loads[n] = load.getResult();
    LoadKind kind = getLoadKind(task, n);
    if (load.getKind() != kind)
      return load.emitOpError()
             << "of input " << n << " must be of kind "
             << stringifyLoadKind(kind) << " ("
             << (kind == LoadKind::per_key
                     ? "it is indexed by i, j and k: a matrix per key"
                 : kind == LoadKind::gathered
                     ? "a dimension of it is read through an index array"
                     : "it is read at the block's coordinates")
             << "), got " << stringifyLoadKind(load.getKind());
    if (load.getSorted() != isLoadSorted(task, n))
      return load.emitOpError()
             << "of input " << n
             << (isLoadSorted(task, n)
                     ? " must be 'sorted': the task has a matrix per row's "
                       "key, so its rows are read in segments sorted by the "
                       "key"
                     : " must not be 'sorted': only the rows of a task with "
                       "a matrix per row's key are read in sorted segments");
    bool transposed = isLoadTransposed(task, n, precision, warpgroup);
    if (load.getTransposed() != transposed)
      return load.emitOpError()
             << "of input " << n
             << (transposed
                     ? " must be 'transposed': warpgroup MMA reads tf32 "
                       "operands k-major, and this input's innermost "
                       "dimension is not k"
                     : " must not be 'transposed': only operands of "
                       "warpgroup MMA at tf32 whose innermost dimension is "
                       "not k are read from a transposed copy");
    LoadPath path = getLoadPath(task, n, tensorCores, warpgroup, threadStages);
    if (load.getVia() != path)
      return load.emitOpError()
             << "of input " << n << " must go via " << stringifyLoadPath(path)
             << " in a kernel "
             << (threadStages  ? "on warpgroup MMA whose stages threads write"
                 : warpgroup   ? "on warpgroup MMA"
                 : tensorCores ? "on mma.sync"
                               : "on CUDA cores")
             << ", got " << stringifyLoadPath(load.getVia());
    TileType type = getLoadTileType(task, n, block);
    if (load.getType() != type)
      return load.emitOpError()
             << "of input " << n << " must give " << str(type)
             << " (its map's axes at the block's extents), got "
             << str(cast<TileType>(load.getType()));
  }
  for (unsigned n = 0; n < numInputs; ++n)
    if (!loads[n])
      return kernel.emitOpError() << "has no tile.load of input " << n;

  Type accElement = tensorCores ? Type(Float32Type::get(task.getContext()))
                                : task.getAccumulatorType();
  auto accType = TileType::get(task.getContext(), {block[0], block[1]},
                               accElement);
  if (step->getResult(0).getType() != accType)
    return step->emitOpError() << "must give the block's accumulators "
                               << str(accType) << ", got "
                               << str(cast<TileType>(
                                      step->getResult(0).getType()));
  if (mma) {
    ProductOperands operands = getProductOperands(task);
    if (operands.rows.empty() || operands.cols.empty())
      return mma.emitOpError()
             << "needs (i, k) and (k, j) operands; the task has "
             << operands.rows.size() << " and " << operands.cols.size();
    if (!operands.kOnly.empty())
      return mma.emitOpError()
             << "multiplies row and column operands, but input "
             << operands.kOnly.front()
             << " is indexed by k alone (it belongs to neither side)";
    if (task.getAccumulate() != Combiner::add ||
        !task.getAccumulatorType().isF32())
      return mma.emitOpError() << "accumulates products by add in f32; the "
                                  "task accumulates "
                               << task.getAccumulatorType() << " by "
                               << stringifyCombiner(task.getAccumulate());
    auto sameLoads = [&](ValueRange given, ArrayRef<unsigned> inputs) {
      if (given.size() != inputs.size())
        return false;
      for (auto [value, n] : llvm::zip(given, inputs))
        if (value != loads[n])
          return false;
      return true;
    };
    auto list = [](ArrayRef<unsigned> inputs) {
      std::string s;
      llvm::raw_string_ostream os(s);
      llvm::interleaveComma(inputs, os);
      return s;
    };
    if (!sameLoads(mma.getLhs(), operands.rows) ||
        !sameLoads(mma.getRhs(), operands.cols))
      return mma.emitOpError()
             << "must multiply the loads of input(s) " << list(operands.rows)
             << " (i, k) by those of input(s) " << list(operands.cols)
             << " (k, j), in order";
    if (warpgroup && !threadStages &&
        (operands.rows.size() > 1 || operands.cols.size() > 1))
      return mma.emitOpError()
             << "warpgroup MMA on loads via tma multiplies one operand a "
                "side (the product form of several loads via threads, or "
                "runs on mma.sync)";
    if (threadStages)
      for (unsigned n :
           llvm::concat<const unsigned>(operands.rows, operands.cols))
        if (!isKContiguous(task, n))
          return mma.emitOpError()
                 << "on warpgroup MMA loads via threads, which read 16-byte "
                    "chunks along k, but input "
                 << n << " is not stored k-contiguous";
    for (unsigned n : llvm::concat<const unsigned>(operands.rows,
                                                   operands.cols)) {
      Type element =
          cast<MemRefType>(task.getInputs()[n].getType()).getElementType();
      bool matches =
          element.isF16()    ? precision == Precision::f16
          : element.isBF16() ? precision == Precision::bf16
          : element.isF32()  ? (precision == Precision::tf32 ||
                               precision == Precision::tf32x3)
                             : false;
      if (!matches)
        return mma.emitOpError()
               << "precision " << stringifyPrecision(*precision)
               << " does not take " << element << " operands (input " << n
               << "; f16: f16, bf16: bf16, f32: tf32 or tf32x3)";
    }
    if (kernel.getClusterM().value_or(1) > 1 && !task.getWhen().empty())
      return kernel.emitOpError()
             << "runs clusters of " << *kernel.getClusterM()
             << " blocks, but the task's join may let a block skip its "
                "reduction while its partners wait for its multicasts: a "
                "joined task takes cluster_m 1";
    if (warpgroup && task.getOutput() == OutputKind::reduce)
      return mma.emitOpError()
             << "on warpgroup MMA cannot feed output reduce: its store "
                "iterator combines the rows of mma.sync fragments or of "
                "CUDA-core threads";
    if (warpgroup && task.getPerKeyInput())
      return mma.emitOpError()
             << "on warpgroup MMA takes no segments (a matrix per key: "
                "mma.sync does)";
    if (warpgroup && !threadStages && !task.getGathers().empty())
      return mma.emitOpError()
             << "warpgroup MMA loads whole tiles by TMA, which gathers no "
                "rows: gathered operands load via threads";
    if (threadStages && kernel.getClusterM().value_or(1) > 1)
      return kernel.emitOpError()
             << "runs clusters of " << *kernel.getClusterM()
             << " blocks, which share the B tile by TMA multicast; its "
                "stages are written by threads: cluster_m 1";
    if (kernel.getSplitK())
      return kernel.emitOpError() << "splits the reduction on CUDA cores "
                                     "only (tile.compute)";
    if (warpgroup && task.getOutput() == OutputKind::per_key)
      return mma.emitOpError()
             << "on warpgroup MMA cannot feed output per_key: the segments "
                "of the reduction read each step's row through the sorted "
                "order (mma.sync does)";
    if (task.getOutput() == OutputKind::per_key &&
        precision != Precision::tf32 && precision != Precision::tf32x3)
      return mma.emitOpError()
             << "feeds output per_key on tensor cores at "
             << stringifyPrecision(*precision)
             << ": the segments of the reduction take tf32 or tf32x3 (16-bit "
                "operands run on CUDA cores)";
    if (task.getOutput() == OutputKind::per_key)
      for (unsigned n : llvm::concat<const unsigned>(operands.rows,
                                                     operands.cols)) {
        if (isKContiguous(task, n))
          return mma.emitOpError()
                 << "feeds output per_key, whose steps are read through the "
                    "sorted order, but input "
                 << n
                 << " is stored k-contiguous (the tensor cores' 16-byte "
                    "copies would mix steps): on tensor cores its operands "
                    "are stored along i or j";
      }
  } else {
    auto compute = cast<ComputeOp>(step);
    if (compute.getOperands() != ValueRange(loads))
      return compute.emitOpError()
             << "takes the loads of all " << numInputs
             << " inputs in the order of the task's inputs";
  }

  if (kernel.getSplitK() && (kernel.runsSegments() || task.getPerKeyInput()))
    return kernel.emitOpError()
           << "splits the reduction, but its task has a matrix per row's key "
              "(segment iterators take whole reductions)";
  if (kernel.getSplitK() &&
      (task.getOutput() != OutputKind::dense || !task.getUpdate() ||
       !task.getProject().empty() || !task.getWhen().empty() ||
       (task.getAccumulate() != Combiner::add &&
        task.getAccumulate() != Combiner::max &&
        task.getAccumulate() != Combiner::min)))
    return kernel.emitOpError()
           << "splits the reduction, which takes a dense output with "
              "'update', accumulate add, max or min and no project or when "
              "region (blocks combine partial results into the output)";
  auto store = *kernel.getBody().front().getOps<StoreOp>().begin();
  if (store.getAcc() != step->getResult(0))
    return store.emitOpError() << "must store the compute step's accumulators";
  SmallVector<Value> spatial;
  for (unsigned n : task.spatialOnlyInputs())
    spatial.push_back(loads[n]);
  if (store.getSpatial() != ValueRange(spatial))
    return store.emitOpError()
           << "takes the loads of the task's " << spatial.size()
           << " spatial-only inputs (with), in order";
  StoreKind kind = getStoreKind(task, tensorCores);
  if (store.getKind() != kind)
    return store.emitOpError()
           << "of output " << stringifyOutputKind(task.getOutput())
           << " must be " << stringifyStoreKind(kind) << " in a kernel on "
           << (tensorCores ? "tensor cores" : "CUDA cores") << ", got "
           << stringifyStoreKind(store.getKind());
  return success();
}

LogicalResult TaskOp::verifySchedule() {
  Region &schedule = getSchedule();
  if (schedule.empty())
    return success();
  if (!schedule.hasOneBlock() || schedule.front().getNumArguments())
    return emitOpError() << "region 'schedule' must have one block without "
                            "arguments";
  if (auto yield = dyn_cast<YieldOp>(schedule.front().back()))
    if (yield.getValue())
      return yield.emitOpError() << "ends the schedule: it yields no value";
  std::set<std::string> suffixes;
  unsigned kernels = 0, tensorCoreKernels = 0;
  for (Operation &op : schedule.front()) {
    if (isa<YieldOp>(op) && &op == &schedule.front().back())
      continue;
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel)
      return op.emitOpError() << "is not a tile.kernel; a schedule holds "
                                 "only kernels";
    ++kernels;
    if (!suffixes.insert(kernel.getSuffix().str()).second)
      return kernel.emitOpError() << "repeats the suffix \""
                                  << kernel.getSuffix()
                                  << "\": kernels of a schedule are named "
                                     "apart";
    if (failed(verifyKernel(*this, kernel)))
      return failure();
    if (isa<MmaOp>(kernel.getComputeStep()))
      ++tensorCoreKernels;
  }
  if (!kernels)
    return emitOpError() << "has an empty schedule (no tile.kernel)";
  if (tensorCoreKernels == kernels)
    return emitOpError()
           << "has only tensor-core kernels: a schedule also needs a kernel "
              "on CUDA cores (tile.compute), which runs when an operand's "
              "rows are not whole 16-byte chunks";
  return success();
}
