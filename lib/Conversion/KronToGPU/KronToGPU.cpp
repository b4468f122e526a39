//===- KronToGPU.cpp - the marginalized graph kernel solver on the GPU ----===//
//
// Lowers `kron.gram` over octile datasets to the solver of Tang et al.: each
// thread block solves one pair's product system at a time by preconditioned
// conjugate gradient, the product's matrix-vector product (XMV) formed on
// the fly from the two graphs' compact octiles, the base kernels evaluated
// inline (generated from their attributes); pairs are taken from a schedule
// in decreasing order of cost through a counter (dynamic load balancing).
//
//===----------------------------------------------------------------------===//

#include "Conversion/KronToGPU/KronToGPU.h"

#include "Conversion/GPUCommon/BundleAttributes.h"
#include "Conversion/GPUCommon/ElementaryFunctions.h"
#include "Dialect/Common/DerivedParameters.h"
#include "Dialect/Common/RuntimeTypes.h"
#include "Dialect/Kron/IR/KronDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <map>

namespace mlir {
namespace kge {
#define GEN_PASS_DEF_CONVERTKRONTOGPU
#include "Conversion/Passes.h.inc"
} // namespace kge
} // namespace mlir

using namespace mlir;
using namespace mlir::kron;

namespace {

/// Threads of a solver block (four warps) and of the normalization.
constexpr int64_t kWarps = 4;
constexpr int64_t kThreads = 32 * kWarps;
constexpr int64_t kNormalizeThreads = 256;
/// The solver's vectors per pair: r, p, A p and the diagonal D V^-1 (x
/// is not stored for a Gram matrix: K needs only its sum), T where XMV is
/// factored (and x last where the solve is nodal, see solverVectors).
constexpr int64_t kVectors = 4;
constexpr int64_t kFactoredVectors = 5;
/// The side of an octile.
constexpr int64_t kOctile = 8;
/// Tile rows per graph (8 nodes each) the product-row primitive indexes in
/// shared memory: graphs of up to 1,024 nodes.
constexpr int64_t kMaxTileRows = 128;
/// Elements of a vector pass each thread handles at once.
constexpr int64_t kUnroll = 4;

/// The arrays of one dataset in the kernel's argument order.
enum DatasetArray : unsigned {
  kNodes,
  kNodeLabels,
  kDegrees,
  kRows,
  kTiles,
  kCoords,
  kBitmaps,
  kOffsets,
  kWeights,
  kEdgeLabels,
  kNumDatasetArrays
};

/// The operands of `octiles` in DatasetArray order.
SmallVector<Value> datasetArrays(OctilesOp octiles) {
  return {octiles.getNodes(),   octiles.getNodeLabels(), octiles.getDegrees(),
          octiles.getRows(),    octiles.getTiles(),      octiles.getCoords(),
          octiles.getBitmaps(), octiles.getOffsets(),    octiles.getWeights(),
          octiles.getEdgeLabels()};
}

/// The shape of each dataset array as symbols (suffix `s`: "" for X, "_y"
/// for Y) and static sizes.
SmallVector<std::string> datasetShape(unsigned array, StringRef s,
                                      int64_t nodeLabels, int64_t edgeLabels) {
  std::string G = ("G" + s).str(), V = ("V" + s).str(), T = ("T" + s).str(),
              Z = ("Z" + s).str();
  switch (array) {
  case kNodes:
  case kTiles:
    return {G, "2"};
  case kNodeLabels:
    return {V, std::to_string(nodeLabels)};
  case kDegrees:
  case kRows:
    return {V};
  case kCoords:
  case kBitmaps:
  case kOffsets:
    return {T};
  case kWeights:
    return {Z};
  default:
    return {Z, std::to_string(edgeLabels)};
  }
}

/// What the lowering reads of a kron.gram or a kron.nodewise (`nodal`:
/// the solutions themselves rather than their means).
struct Solve {
  Operation *op;
  Value x, y, result, iterations;
  Attribute nodeKernel, edgeKernel;
  double stop, tol;
  StringRef degrees;
  int64_t maxIter;
  bool normalize, nodal;

  template <typename SolveOp>
  static Solve of(SolveOp op, bool normalize, bool nodal) {
    return Solve{op,
                 op.getX(),
                 op.getY(),
                 op->getResult(0),
                 op.getIterations(),
                 op.getNodeKernel(),
                 op.getEdgeKernel(),
                 op.getStop().convertToDouble(),
                 op.getTol().convertToDouble(),
                 op.getDegrees(),
                 static_cast<int64_t>(op.getMaxIter()),
                 normalize,
                 nodal};
  }
  static Solve of(GramOp op) { return of(op, op.getNormalize(), false); }
  static Solve of(NodewiseOp op) { return of(op, false, true); }
  /// The op's name, for messages.
  StringRef name() const { return nodal ? "kron.nodewise" : "kron.gram"; }
};

/// Whether the solver factors XMV's off-diagonal part into two sparse
/// products: by product rows, for a constant edge kernel.
bool factorsXMV(const Solve &gram, bool productRows) {
  return productRows && getFeatureKernels(gram.edgeKernel).perFeature.empty();
}

/// The vectors per pair the workspace holds (and the solution where the
/// solve is nodal).
int64_t solverVectors(const Solve &gram, bool productRows) {
  return (factorsXMV(gram, productRows) ? kFactoredVectors : kVectors) +
         (gram.nodal ? 1 : 0);
}

/// The solver's shared memory: the reductions' slots, the pair, and two
/// tile caches of `cachedTiles` octiles with `edgeLabels` label features.
int64_t getSharedBytes(int64_t cachedTiles, int64_t edgeLabels) {
  return 48 +
         2 * cachedTiles *
             (8 + 4 + 4 * 64 + 4 * 64 * std::max<int64_t>(1, edgeLabels)) +
         2 * 4 * (kMaxTileRows + 1);
}

/// Builds the solver kernel's body.
class SolverEmitter {
public:
  SolverEmitter(OpBuilder &b, Location loc, const Solve &gram, gpu::GPUFuncOp kernel,
                bool symmetric, int64_t cachedTiles, int64_t denseThreshold,
                bool productRows, int64_t rowsDensity)
      : b(b), loc(loc), gram(gram), kernel(kernel), symmetric(symmetric),
        cachedTiles(cachedTiles), denseThreshold(denseThreshold),
        productRows(productRows), rowsDensity(rowsDensity) {
    f32 = b.getF32Type();
    i32 = b.getI32Type();
    i64 = b.getI64Type();
    auto type = cast<GraphsType>(gram.x.getType());
    edgeFeatures = type.getEdgeLabels();
    nodeFeatures = type.getNodeLabels();
    factored = factorsXMV(gram, productRows);
    vectors = solverVectors(gram, productRows);
  }

  void emit();

private:
  // Constants and arithmetic.
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value cf(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value ci64(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i64, v);
  }
  Value add(Value x, Value y) {
    return isa<FloatType>(x.getType())
               ? (Value)arith::AddFOp::create(b, loc, x, y)
               : (Value)arith::AddIOp::create(b, loc, x, y);
  }
  Value sub(Value x, Value y) {
    return isa<FloatType>(x.getType())
               ? (Value)arith::SubFOp::create(b, loc, x, y)
               : (Value)arith::SubIOp::create(b, loc, x, y);
  }
  Value mul(Value x, Value y) {
    return isa<FloatType>(x.getType())
               ? (Value)arith::MulFOp::create(b, loc, x, y)
               : (Value)arith::MulIOp::create(b, loc, x, y);
  }
  Value div(Value x, Value y) {
    return isa<FloatType>(x.getType())
               ? (Value)arith::DivFOp::create(b, loc, x, y)
               : (Value)arith::DivUIOp::create(b, loc, x, y);
  }
  Value rem(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value toIndex(Value v) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }
  Value load(Value memref, ValueRange indices) {
    return memref::LoadOp::create(b, loc, memref, indices);
  }
  void store(Value value, Value memref, ValueRange indices) {
    memref::StoreOp::create(b, loc, value, memref, indices);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  /// The negation of an i1 flag.
  Value negate(Value flag) {
    return arith::XOrIOp::create(
        b, loc, flag, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  }
  /// Element `t` of the workspace vector that starts at `base`.
  Value vload(Value base, Value t) { return load(workspace, {add(base, t)}); }
  void vstore(Value value, Value base, Value t) {
    store(value, workspace, {add(base, t)});
  }
  void barrier() { gpu::BarrierOp::create(b, loc); }
  void syncWarp() {
    NVVM::SyncWarpOp::create(
        b, loc, arith::ConstantIntOp::create(b, loc, i32, -1));
  }

  /// A view of `count` elements of `type` at byte `offset` of the dynamic
  /// shared memory.
  Value sharedView(Type type, int64_t offset, int64_t count) {
    auto viewType = MemRefType::get(
        {count}, type, MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(b.getContext(),
                                   gpu::AddressSpace::Workgroup));
    return memref::ViewOp::create(b, loc, viewType, smem, idx(offset),
                                  ValueRange{});
  }

  /// Runs `body` over the elements of [0, size) this thread owns (tid,
  /// tid + 128, ...), kUnroll at a time so that their loads overlap:
  /// `body` gets the kUnroll element indices (clamped into range) and
  /// whether each is in range, and returns the values to add to each of
  /// `sums` partial sums (masked: valid() below). Returns the thread's
  /// partial sums.
  SmallVector<Value> vectorPass(
      Value size, unsigned sums,
      function_ref<SmallVector<Value>(ArrayRef<Value>, ArrayRef<Value>)> body);
  /// Elements `ts` of the workspace vector at `base`.
  SmallVector<Value> vloads(Value base, ArrayRef<Value> ts) {
    SmallVector<Value> out;
    for (Value t : ts)
      out.push_back(vload(base, t));
    return out;
  }
  /// Stores `values` at `ts` of the vector at `base` where `valid`.
  void vstores(ArrayRef<Value> values, Value base, ArrayRef<Value> ts,
               ArrayRef<Value> valid) {
    for (auto [value, t, ok] : llvm::zip(values, ts, valid)) {
      auto guarded = scf::IfOp::create(b, loc, ok, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(guarded.thenBlock());
      vstore(value, base, t);
    }
  }
  /// The sum of `values` where `valid`.
  Value maskedSum(ArrayRef<Value> values, ArrayRef<Value> valid) {
    Value sum = cf(0.0);
    for (auto [value, ok] : llvm::zip(values, valid))
      sum = add(sum, select(ok, value, cf(0.0)));
    return sum;
  }

  /// Runs `body(bit, k, acc)` for each set bit of the i64 `bits`, lowest
  /// first, `k` counting the bits visited from `first` (index), threading
  /// the f32 `acc`; returns the final `acc`.
  Value forEachSetBit(Value bits, Value first, Value acc,
                      function_ref<Value(Value, Value, Value)> body);

  /// The sums over the block of `values` (at most two), the same in every
  /// thread.
  SmallVector<Value> blockSum(ArrayRef<Value> values);

  /// The base kernel `kernel` of labels `x` and `y` (one per feature).
  /// `exact`: exp through libdevice (subnormal values kept), for the node
  /// kernel, which the diagonal divides by; otherwise one ex2.approx.ftz.
  Value baseKernel(Attribute kernel, ArrayRef<Value> x, ArrayRef<Value> y,
                   bool prescaled = false, bool exact = false);
  /// Labels `x` with each square-exponential feature's multiplied by
  /// sqrt(log2(e) / 2) / l, for baseKernel's `prescaled` form: its
  /// exponential is then ex2(-(x - y)^2), two operations fewer per pair.
  SmallVector<Value> prescale(Attribute kernel, ArrayRef<Value> x);

  /// The kernel argument of dataset array `array` of the left (`right`
  /// false) or right graph of a pair: X's or Y's by `fromY`.
  Value array(unsigned arrayIndex, Value fromY) {
    Value x = kernel.getArgument(arrayIndex);
    Value y = kernel.getArgument(kNumDatasetArrays + arrayIndex);
    if (symmetric)
      return x;
    auto pick = scf::IfOp::create(b, loc, TypeRange{x.getType()}, fromY,
                                  /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(pick.thenBlock());
    scf::YieldOp::create(b, loc, y);
    b.setInsertionPointToStart(pick.elseBlock());
    scf::YieldOp::create(b, loc, x);
    return pick.getResult(0);
  }

  /// Solves pair `p` of the schedule and writes its results.
  void solvePair(Value p);

  /// The shared-memory cache of up to `cachedTiles` octiles of one graph,
  /// expanded: their bitmaps, coordinates, weights [tile][64] and labels
  /// [tile][64][F] (zeros where the bitmap is clear).
  struct TileCache {
    Value bitmaps, coords, weights, labels;
  };

  /// Expands tiles [first, first + count) of the graph whose arrays are
  /// `g` into `cache`, with the whole block.
  void stageTiles(ArrayRef<Value> g, Value first, Value count,
                  const TileCache &cache);

  /// The weight and labels of bit `bit` of tile `tile` (bitmap `bitmap`,
  /// first non-zero `offset`) of the graph whose arrays are `g`; zeros
  /// where the bit is clear.
  SmallVector<Value> expandBit(ArrayRef<Value> g, Value bitmap, Value offset,
                               Value bit);

  /// A graph's compact octiles staged in shared memory for the product-row
  /// primitive: bitmaps, coordinates and first non-zeros (counted from the
  /// graph's first) of up to stagedTiles tiles, weights and labels of up
  /// to stagedNonzeros non-zeros.
  struct CompactTiles {
    Value bitmaps, coords, offsets, weights, labels;
  };
  /// Copies tiles [first, first + count) of the graph whose arrays are
  /// `g` and their `nonzeros` non-zeros into `staged`, with the whole block.
  void stageCompact(ArrayRef<Value> g, Value first, Value count, Value nonzeros,
                    const CompactTiles &staged);
  /// `g` with its octile arrays replaced by the staged ones.
  SmallVector<Value> compactArrays(ArrayRef<Value> g, const CompactTiles &staged) {
    SmallVector<Value> arrays(g);
    arrays[kBitmaps] = staged.bitmaps;
    arrays[kCoords] = staged.coords;
    arrays[kOffsets] = staged.offsets;
    arrays[kWeights] = staged.weights;
    arrays[kEdgeLabels] = staged.labels;
    return arrays;
  }

  /// Writes to `out` [0, rows] the first of the `count` tiles (from
  /// `first`) of the graph whose arrays are `g` in each tile row (tiles
  /// are sorted by row), with the whole block.
  void indexTileRows(ArrayRef<Value> g, Value first, Value count, Value rows,
                     Value out);

  /// One XMV by product rows: each thread computes its rows (i, i') of AP
  /// = D V^-1 P - (A_x o E_x) P whole, over the non-zeros of row i of
  /// graph 1's tiles in tile row i / 8 and of row i' of graph 2's (no
  /// atomics; the octiles read from global memory, tile rows from
  /// `tileRows1/2`). Returns the thread's shares of P . AP and of the sum
  /// of P (its rows are whole: CG's first reduction needs no pass of its
  /// own).
  std::pair<Value, Value> productRowsXMV(ArrayRef<Value> g1,
                                         ArrayRef<Value> g2, Value t1,
                                         Value t2, Value n2, Value size,
                                         Value vecP, Value vecAP, Value vecDV);

  /// One XMV by product rows where the edge kernel is a constant c: then
  /// (A_x o E_x) P = c A P A'^T, two sparse products (over the graphs'
  /// non-zeros once each, not over their pairs), T = P A'^T into `vecT`
  /// first. Returns the shares as productRowsXMV does.
  std::pair<Value, Value> factoredXMV(ArrayRef<Value> g1, ArrayRef<Value> g2,
                                      Value t1, Value t2, Value n2, Value size,
                                      Value vecP, Value vecAP, Value vecDV,
                                      Value vecT);

  /// Folds body(column node, weight, labels, acc) over the non-zeros of
  /// row `node` of graph `g` (its tiles from `t0`, tile rows indexed by
  /// `rowsIndex`), from `acc`.
  Value rowNonzeros(ArrayRef<Value> g, Value t0, Value rowsIndex, Value node,
                    Value acc,
                    function_ref<Value(Value, Value, ArrayRef<Value>, Value)> body);

  /// AP = D V^-1 P - offDiagonalRow(t) for this thread's rows t, with its
  /// shares of P . AP and of the sum of P.
  std::pair<Value, Value> finishRows(Value size, Value vecP, Value vecAP,
                                     Value vecDV,
                                     function_ref<Value(Value)> offDiagonalRow);

  /// One XMV's off-diagonal part: AP -= (A_x o E_x) P, over the octile
  /// pairs of the two graphs (vectors by their workspace offsets), chunk
  /// of cached tiles by chunk unless `resident` (both graphs' tiles stay
  /// in the caches for the whole solve).
  void offDiagonal(ArrayRef<Value> g1, ArrayRef<Value> g2, Value t1, Value nt1,
                   Value t2, Value nt2, Value n1, Value n2, Value vecP,
                   Value vecAP, Value resident);

  /// The product of cached tiles u (of graph 1) and v (of graph 2) into
  /// AP, lanes taking the 64 product rows two by two: over the rows'
  /// non-zeros (sparse) or over all 64 entries (dense, where the tiles'
  /// non-zero counts multiply to `denseThreshold` or more).
  void tilePair(Value u, Value v, Value n1, Value n2, Value vecP, Value vecAP);

  OpBuilder &b;
  Location loc;
  Solve gram;
  gpu::GPUFuncOp kernel;
  bool symmetric;
  Type f32, i32, i64;
  unsigned edgeFeatures, nodeFeatures;
  int64_t cachedTiles, denseThreshold;
  bool productRows, factored;
  int64_t rowsDensity, vectors;
  Value smem, tid, lane, warp, reduceSlots, pairSlot, workspace, tileRows1,
      tileRows2;
  /// Whether the pair's share of the workspace holds the 7 zeros after p
  /// that the dense octile product reads (kge.kron.workspace_size pads
  /// every vector by 8; a caller's tighter workspace takes sparse octile
  /// pairs only).
  Value roomAfterP;
  TileCache cache1, cache2;
  CompactTiles compact1, compact2;
  int64_t stagedTiles = 0, stagedNonzeros = 0;
};

SmallVector<Value> SolverEmitter::vectorPass(
    Value size, unsigned sums,
    function_ref<SmallVector<Value>(ArrayRef<Value>, ArrayRef<Value>)> body) {
  auto loop = scf::ForOp::create(b, loc, tid, size, idx(kThreads * kUnroll),
                                 SmallVector<Value>(sums, cf(0.0)));
  OpBuilder::InsertionGuard guard(b);
  // (Without sums the loop has its terminator already.)
  if (sums == 0)
    b.setInsertionPoint(loop.getBody()->getTerminator());
  else
    b.setInsertionPointToStart(loop.getBody());
  Value last = sub(size, idx(1));
  SmallVector<Value> ts, valid;
  for (int64_t u = 0; u < kUnroll; ++u) {
    Value t = add(loop.getInductionVar(), idx(kThreads * u));
    Value ok = cmpi(arith::CmpIPredicate::ult, t, size);
    ts.push_back(select(ok, t, last));
    valid.push_back(ok);
  }
  SmallVector<Value> adds = body(ts, valid);
  if (sums == 0)
    return {};
  SmallVector<Value> next;
  for (unsigned k = 0; k < sums; ++k)
    next.push_back(add(loop.getRegionIterArg(k), adds[k]));
  scf::YieldOp::create(b, loc, next);
  return SmallVector<Value>(loop.getResults());
}

Value SolverEmitter::forEachSetBit(
    Value bits, Value first, Value acc,
    function_ref<Value(Value, Value, Value)> body) {
  Type index = b.getIndexType();
  auto walk = scf::WhileOp::create(b, loc, TypeRange{i64, index, f32},
                                   ValueRange{bits, first, acc});
  OpBuilder::InsertionGuard guard(b);
  Block *cond = b.createBlock(&walk.getBefore(), {}, {i64, index, f32},
                              {loc, loc, loc});
  scf::ConditionOp::create(
      b, loc, cmpi(arith::CmpIPredicate::ne, cond->getArgument(0), ci64(0)),
      cond->getArguments());
  Block *step = b.createBlock(&walk.getAfter(), {}, {i64, index, f32},
                              {loc, loc, loc});
  Value m = step->getArgument(0), k = step->getArgument(1);
  Value bit = toIndex(LLVM::CountTrailingZerosOp::create(
      b, loc, i64, m, b.getBoolAttr(true)));
  Value next = body(bit, k, step->getArgument(2));
  scf::YieldOp::create(
      b, loc,
      ValueRange{arith::AndIOp::create(b, loc, m, sub(m, ci64(1))),
                 add(k, idx(1)), next});
  b.setInsertionPointAfter(walk);
  return walk.getResult(2);
}

SmallVector<Value> SolverEmitter::blockSum(ArrayRef<Value> values) {
  SmallVector<Value> partial(values);
  Value width = arith::ConstantIntOp::create(b, loc, i32, 32);
  for (Value &v : partial)
    for (int offset = 16; offset > 0; offset /= 2)
      v = add(v, gpu::ShuffleOp::create(
                     b, loc, v, arith::ConstantIntOp::create(b, loc, i32, offset),
                     width, gpu::ShuffleMode::XOR)
                     .getShuffleResult());
  auto first = scf::IfOp::create(
      b, loc, cmpi(arith::CmpIPredicate::eq, lane, idx(0)), false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(first.thenBlock());
    for (auto [k, v] : llvm::enumerate(partial))
      store(v, reduceSlots, {add(mul(warp, idx(2)), idx(k))});
  }
  barrier();
  SmallVector<Value> sums;
  for (size_t k = 0; k < partial.size(); ++k) {
    Value sum = load(reduceSlots, {idx(k)});
    for (int64_t w = 1; w < kWarps; ++w)
      sum = add(sum, load(reduceSlots, {idx(2 * w + k)}));
    sums.push_back(sum);
  }
  barrier();
  return sums;
}

SmallVector<Value> SolverEmitter::prescale(Attribute kernelAttr,
                                          ArrayRef<Value> x) {
  SmallVector<Value> out(x);
  FeatureKernels features = getFeatureKernels(kernelAttr);
  for (auto [f, attr] : llvm::enumerate(features.perFeature))
    if (auto sqexp = dyn_cast<SquareExponentialAttr>(attr))
      out[f] = mul(x[f], cf(std::sqrt(0.5 * M_LOG2E) /
                            sqexp.getLengthScale().convertToDouble()));
  return out;
}

Value SolverEmitter::baseKernel(Attribute kernelAttr, ArrayRef<Value> x,
                                ArrayRef<Value> y, bool prescaled, bool exact) {
  FeatureKernels features = getFeatureKernels(kernelAttr);
  if (features.perFeature.empty())
    return cf(features.constant);
  Value result;
  for (auto [f, attr] : llvm::enumerate(features.perFeature)) {
    Value value;
    if (auto delta = dyn_cast<DeltaAttr>(attr)) {
      Value equal =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x[f], y[f]);
      value = select(equal, cf(1.0), cf(delta.getH().convertToDouble()));
    } else if (auto sqexp = dyn_cast<SquareExponentialAttr>(attr)) {
      Value d = sub(x[f], y[f]);
      double l = sqexp.getLengthScale().convertToDouble();
      // exp(-d^2 / (2 l^2)), as one ex2.approx.ftz unless `exact`.
      if (exact) {
        value = math::ExpOp::create(b, loc, mul(mul(d, d), cf(-0.5 / (l * l))));
      } else {
        Value exponent = prescaled
                             ? mul(arith::NegFOp::create(b, loc, d), d)
                             : mul(mul(d, d), cf(-0.5 * M_LOG2E / (l * l)));
        value = kge::emitExp2Approx(b, loc, exponent);
      }
    } else {
      value = cf(cast<ConstantAttr>(attr).getValue().convertToDouble());
    }
    result = !result ? value : features.sum ? add(result, value)
                                             : mul(result, value);
  }
  if (features.sum)
    result = mul(result, cf(1.0 / features.perFeature.size()));
  return result;
}

SmallVector<Value> SolverEmitter::expandBit(ArrayRef<Value> g, Value bitmap,
                                             Value offset, Value bit) {
  Value bit64 = arith::IndexCastOp::create(b, loc, i64, bit);
  Value set = cmpi(arith::CmpIPredicate::ne,
                   arith::AndIOp::create(
                       b, loc, arith::ShRUIOp::create(b, loc, bitmap, bit64),
                       ci64(1)),
                   ci64(0));
  // The non-zero's place among the tile's: the set bits below it.
  Value below = arith::AndIOp::create(
      b, loc, bitmap,
      sub(arith::ShLIOp::create(b, loc, ci64(1), bit64), ci64(1)));
  Value rank = toIndex(LLVM::CtPopOp::create(b, loc, i64, below));
  SmallVector<Type> types(1 + edgeFeatures, f32);
  auto read = scf::IfOp::create(b, loc, types, set, true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(read.thenBlock());
  Value nz = add(offset, rank);
  SmallVector<Value> values = {load(g[kWeights], {nz})};
  for (unsigned f = 0; f < edgeFeatures; ++f)
    values.push_back(load(g[kEdgeLabels], {nz, idx(f)}));
  scf::YieldOp::create(b, loc, values);
  b.setInsertionPointToStart(read.elseBlock());
  scf::YieldOp::create(b, loc, SmallVector<Value>(1 + edgeFeatures, cf(0.0)));
  return SmallVector<Value>(read.getResults());
}

void SolverEmitter::stageTiles(ArrayRef<Value> g, Value first, Value count,
                               const TileCache &cache) {
  {
    auto meta = scf::ForOp::create(b, loc, tid, count, idx(kThreads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(meta.getBody());
    Value u = meta.getInductionVar();
    Value tile = add(first, u);
    store(load(g[kBitmaps], {tile}), cache.bitmaps, {u});
    store(load(g[kCoords], {tile}), cache.coords, {u});
  }
  auto entries = scf::ForOp::create(b, loc, tid, mul(count, idx(64)),
                                    idx(kThreads));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entries.getBody());
  Value e = entries.getInductionVar();
  Value tile = add(first, div(e, idx(64)));
  SmallVector<Value> values =
      expandBit(g, load(g[kBitmaps], {tile}), toIndex(load(g[kOffsets], {tile})),
                rem(e, idx(64)));
  store(values[0], cache.weights, {e});
  for (unsigned f = 0; f < edgeFeatures; ++f)
    store(values[1 + f], cache.labels, {add(mul(e, idx(edgeFeatures)), idx(f))});
}

void SolverEmitter::tilePair(Value u, Value v, Value n1, Value n2,
                             Value vecP, Value vecAP) {
  auto coordinates = [&](const TileCache &cache, Value t) {
    Value c = load(cache.coords, {t});
    Value row = toIndex(arith::ShRUIOp::create(
        b, loc, c, arith::ConstantIntOp::create(b, loc, i32, 16)));
    Value col = toIndex(arith::AndIOp::create(
        b, loc, c, arith::ConstantIntOp::create(b, loc, i32, 0xffff)));
    return std::make_pair(row, col);
  };
  auto [row1, col1] = coordinates(cache1, u);
  auto [row2, col2] = coordinates(cache2, v);
  Value bitmap1 = load(cache1.bitmaps, {u});
  Value bitmap2 = load(cache2.bitmaps, {v});
  Value base1 = mul(u, idx(64)), base2 = mul(v, idx(64));
  auto labelsAt = [&](const TileCache &cache, Value slot) {
    SmallVector<Value> labels;
    for (unsigned f = 0; f < edgeFeatures; ++f)
      labels.push_back(
          load(cache.labels, {add(mul(slot, idx(edgeFeatures)), idx(f))}));
    return labels;
  };
  // The element of P at product column (c1 8 + j, c2 8 + j2) of two
  // nodes (set bits: inside the pair's vector).
  auto direction = [&](Value j, Value j2) {
    Value column = add(mul(add(mul(col1, idx(kOctile)), j), n2),
                       add(mul(col2, idx(kOctile)), j2));
    return vload(vecP, column);
  };
  Value nonzeros = arith::MulIOp::create(
      b, loc, LLVM::CtPopOp::create(b, loc, i64, bitmap1),
      LLVM::CtPopOp::create(b, loc, i64, bitmap2));
  // (A threshold above 64 x 64 emits no dense path.)
  bool withDense = denseThreshold <= kOctile * kOctile * kOctile * kOctile;
  Value dense = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  if (withDense)
    dense = arith::AndIOp::create(
        b, loc,
        cmpi(arith::CmpIPredicate::sge, nonzeros, ci64(denseThreshold)),
        roomAfterP);
  // Lane l takes product rows (i, i2) = (l / 8, l % 8) and (l / 8 + 4,
  // l % 8): both halves share tile 2's row i2 and the elements of P.
  Value i2 = rem(lane, idx(kOctile));
  SmallVector<Value, 2> rowsOf1, bits1, active;
  Value row2Base = add(base2, mul(i2, idx(kOctile)));
  auto rowBits = [&](Value bitmap, Value r) {
    Value shift =
        arith::IndexCastOp::create(b, loc, i64, mul(r, idx(kOctile)));
    return arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, bitmap, shift), ci64(0xff));
  };
  Value bits2 = rowBits(bitmap2, i2);
  Value any2 = cmpi(arith::CmpIPredicate::ne, bits2, ci64(0));
  for (int64_t half = 0; half < 2; ++half) {
    Value i = add(div(lane, idx(kOctile)), idx(4 * half));
    rowsOf1.push_back(i);
    bits1.push_back(rowBits(bitmap1, i));
    active.push_back(arith::AndIOp::create(
        b, loc, cmpi(arith::CmpIPredicate::ne, bits1.back(), ci64(0)), any2));
  }
  auto term = [&](Value slot1, Value slot2, Value j, Value j2, Value acc) {
    Value w = mul(load(cache1.weights, {slot1}), load(cache2.weights, {slot2}));
    Value ke = baseKernel(gram.edgeKernel, labelsAt(cache1, slot1),
                          labelsAt(cache2, slot2));
    return add(acc, mul(mul(w, ke), direction(j, j2)));
  };
  auto pick = scf::IfOp::create(b, loc, TypeRange{f32, f32}, dense, true);
  {
    // Dense (register blocked): for each column j of tile 1, the eight
    // elements of P's row j times tile 2's row weights (shared by the two
    // product rows), each row's sum over j2 of ke * w2 P, then times w1.
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(pick.thenBlock());
    SmallVector<Value, 2> acc(2, cf(0.0));
    if (withDense) {
      // Tile 2's row i2, read once; tile 1's rows column by column (fewer
      // live registers: the solver runs at 8 blocks of 128 threads per
      // multiprocessor, 64 registers each).
      SmallVector<Value, kOctile> w2;
      SmallVector<SmallVector<Value>, kOctile> l2;
      for (int64_t j2 = 0; j2 < kOctile; ++j2) {
        Value slot2 = add(row2Base, idx(j2));
        w2.push_back(load(cache2.weights, {slot2}));
        l2.push_back(labelsAt(cache2, slot2));
      }
      for (SmallVector<Value> &labels : l2)
        labels = prescale(gram.edgeKernel, labels);
      Value columns2 = add(vecP, mul(col2, idx(kOctile)));
      Value lastRow = sub(n1, idx(1));
      for (int64_t j = 0; j < kOctile; ++j) {
        // P's row c1 8 + j (the last node's past graph 1's: zero weights
        // there) at columns c2 8 + j2: past graph 2's last node the next
        // row's elements or, past the vector's end, the zeros the solve
        // keeps after P (at most 7 elements: see solvePair). Immediate
        // offsets from one address per row, no clamp per element.
        Value row = arith::MinUIOp::create(
            b, loc, add(mul(col1, idx(kOctile)), idx(j)), lastRow);
        Value rowP = add(mul(row, n2), columns2);
        SmallVector<Value, kOctile> w2p;
        for (int64_t j2 = 0; j2 < kOctile; ++j2)
          w2p.push_back(mul(
              w2[j2],
              load(workspace, {arith::AddIOp::create(
                                  b, loc, rowP, idx(j2),
                                  arith::IntegerOverflowFlags::nsw |
                                      arith::IntegerOverflowFlags::nuw)})));
        for (int64_t half = 0; half < 2; ++half) {
          Value slot1 = add(add(base1, mul(rowsOf1[half], idx(kOctile))), idx(j));
          SmallVector<Value> l1 = prescale(gram.edgeKernel, labelsAt(cache1, slot1));
          Value sum = cf(0.0);
          for (int64_t j2 = 0; j2 < kOctile; ++j2) {
            Value ke = baseKernel(gram.edgeKernel, l1, l2[j2], /*prescaled=*/true);
            sum = math::FmaOp::create(b, loc, ke, w2p[j2], sum);
          }
          acc[half] = math::FmaOp::create(b, loc, load(cache1.weights, {slot1}),
                                          sum, acc[half]);
        }
      }
    }
    scf::YieldOp::create(b, loc, acc);
  }
  {
    // Sparse: the set bits j of row i (tile 1) and j2 of row i2 (tile 2),
    // where both rows have any.
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(pick.elseBlock());
    SmallVector<Value, 2> sums;
    for (int64_t half = 0; half < 2; ++half) {
      auto rows = scf::IfOp::create(b, loc, TypeRange{f32}, active[half], true);
      OpBuilder::InsertionGuard rowsGuard(b);
      b.setInsertionPointToStart(rows.thenBlock());
      Value row1Base = add(base1, mul(rowsOf1[half], idx(kOctile)));
      Value sum = forEachSetBit(
          bits1[half], idx(0), cf(0.0), [&](Value j, Value, Value acc) {
            return forEachSetBit(bits2, idx(0), acc, [&](Value j2, Value,
                                                         Value inner) {
              return term(add(row1Base, j), add(row2Base, j2), j, j2, inner);
            });
          });
      scf::YieldOp::create(b, loc, sum);
      b.setInsertionPointToStart(rows.elseBlock());
      scf::YieldOp::create(b, loc, cf(0.0));
      sums.push_back(rows.getResult(0));
    }
    scf::YieldOp::create(b, loc, sums);
  }
  for (int64_t half = 0; half < 2; ++half) {
    auto add_ = scf::IfOp::create(b, loc, active[half], false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(add_.thenBlock());
    Value row = add(mul(add(mul(row1, idx(kOctile)), rowsOf1[half]), n2),
                    add(mul(row2, idx(kOctile)), i2));
    memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf,
                                arith::NegFOp::create(b, loc, pick.getResult(half)),
                                workspace, ValueRange{add(vecAP, row)});
  }
}

void SolverEmitter::indexTileRows(ArrayRef<Value> g, Value first,
                                  Value count, Value rows, Value out) {
  auto loop = scf::ForOp::create(b, loc, tid, add(rows, idx(1)), idx(kThreads));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value r = loop.getInductionVar();
  Type index = b.getIndexType();
  // The first tile whose row is r or more (binary search).
  auto search = scf::WhileOp::create(b, loc, TypeRange{index, index},
                                     ValueRange{idx(0), count});
  Block *before = b.createBlock(&search.getBefore(), {}, {index, index},
                                {loc, loc});
  scf::ConditionOp::create(b, loc,
                           cmpi(arith::CmpIPredicate::ult,
                                before->getArgument(0), before->getArgument(1)),
                           before->getArguments());
  Block *after = b.createBlock(&search.getAfter(), {}, {index, index},
                               {loc, loc});
  Value lo = after->getArgument(0), hi = after->getArgument(1);
  Value mid = div(add(lo, hi), idx(2));
  Value row = toIndex(arith::ShRUIOp::create(
      b, loc, load(g[kCoords], {add(first, mid)}),
      arith::ConstantIntOp::create(b, loc, i32, 16)));
  Value below = cmpi(arith::CmpIPredicate::ult, row, r);
  scf::YieldOp::create(b, loc,
                       ValueRange{select(below, add(mid, idx(1)), lo),
                                  select(below, hi, mid)});
  b.setInsertionPointAfter(search);
  store(arith::IndexCastOp::create(b, loc, i32, search.getResult(0)), out, {r});
}

void SolverEmitter::stageCompact(ArrayRef<Value> g, Value first, Value count,
                                 Value nonzeros, const CompactTiles &staged) {
  Value base = load(g[kOffsets], {first});
  {
    auto tiles = scf::ForOp::create(b, loc, tid, count, idx(kThreads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tiles.getBody());
    Value u = tiles.getInductionVar();
    Value tile = add(first, u);
    store(load(g[kBitmaps], {tile}), staged.bitmaps, {u});
    store(load(g[kCoords], {tile}), staged.coords, {u});
    store(sub(load(g[kOffsets], {tile}), base), staged.offsets, {u});
  }
  auto entries = scf::ForOp::create(b, loc, tid, nonzeros, idx(kThreads));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entries.getBody());
  Value z = entries.getInductionVar();
  Value from = add(toIndex(base), z);
  store(load(g[kWeights], {from}), staged.weights, {z});
  for (unsigned f = 0; f < edgeFeatures; ++f)
    store(load(g[kEdgeLabels], {from, idx(f)}), staged.labels, {z, idx(f)});
}

Value SolverEmitter::rowNonzeros(
    ArrayRef<Value> g, Value t0, Value rowsIndex, Value node, Value acc,
    function_ref<Value(Value, Value, ArrayRef<Value>, Value)> body) {
  // The octiles of the tile row of `node`: its bits in each, the tile's
  // column and its non-zeros from the row's first.
  Value r = div(node, idx(kOctile));
  Value shift = arith::IndexCastOp::create(
      b, loc, i64, mul(rem(node, idx(kOctile)), idx(kOctile)));
  auto tiles = scf::ForOp::create(b, loc, toIndex(load(rowsIndex, {r})),
                                  toIndex(load(rowsIndex, {add(r, idx(1))})),
                                  idx(1), ValueRange{acc});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(tiles.getBody());
  Value tile = add(t0, tiles.getInductionVar());
  Value bitmap = load(g[kBitmaps], {tile});
  Value column = toIndex(arith::AndIOp::create(
      b, loc, load(g[kCoords], {tile}),
      arith::ConstantIntOp::create(b, loc, i32, 0xffff)));
  Value bits = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bitmap, shift), ci64(0xff));
  Value before = arith::AndIOp::create(
      b, loc, bitmap, sub(arith::ShLIOp::create(b, loc, ci64(1), shift), ci64(1)));
  Value firstNonzero =
      add(toIndex(load(g[kOffsets], {tile})),
          toIndex(LLVM::CtPopOp::create(b, loc, i64, before)));
  Value total = forEachSetBit(
      bits, firstNonzero, tiles.getRegionIterArg(0),
      [&](Value j, Value nz, Value sum) {
        SmallVector<Value> labels;
        for (unsigned f = 0; f < edgeFeatures; ++f)
          labels.push_back(load(g[kEdgeLabels], {nz, idx(f)}));
        return body(add(mul(column, idx(kOctile)), j), load(g[kWeights], {nz}),
                    labels, sum);
      });
  scf::YieldOp::create(b, loc, total);
  b.setInsertionPointAfter(tiles);
  return tiles.getResult(0);
}

std::pair<Value, Value>
SolverEmitter::finishRows(Value size, Value vecP, Value vecAP, Value vecDV,
                          function_ref<Value(Value)> offDiagonalRow) {
  auto loop = scf::ForOp::create(b, loc, tid, size, idx(kThreads),
                                 ValueRange{cf(0.0), cf(0.0)});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value t = loop.getInductionVar();
  Value pt = vload(vecP, t);
  Value apt = sub(mul(vload(vecDV, t), pt), offDiagonalRow(t));
  vstore(apt, vecAP, t);
  scf::YieldOp::create(b, loc,
                       ValueRange{add(loop.getRegionIterArg(0), mul(pt, apt)),
                                  add(loop.getRegionIterArg(1), pt)});
  b.setInsertionPointAfter(loop);
  return {loop.getResult(0), loop.getResult(1)};
}

std::pair<Value, Value>
SolverEmitter::productRowsXMV(ArrayRef<Value> g1, ArrayRef<Value> g2,
                              Value t1, Value t2, Value n2, Value size,
                              Value vecP, Value vecAP, Value vecDV) {
  return finishRows(size, vecP, vecAP, vecDV, [&](Value t) {
    Value i = div(t, n2), i2 = rem(t, n2);
    return rowNonzeros(
        g1, t1, tileRows1, i, cf(0.0),
        [&](Value j, Value w1, ArrayRef<Value> labels1, Value acc) {
          Value rowBase = mul(j, n2);
          SmallVector<Value> l1(labels1);
          return rowNonzeros(
              g2, t2, tileRows2, i2, acc,
              [&](Value j2, Value w2, ArrayRef<Value> labels2, Value acc2) {
                Value ke = baseKernel(gram.edgeKernel, l1, labels2);
                return add(acc2, mul(mul(mul(w1, w2), ke),
                                     vload(vecP, add(rowBase, j2))));
              });
        });
  });
}

std::pair<Value, Value>
SolverEmitter::factoredXMV(ArrayRef<Value> g1, ArrayRef<Value> g2, Value t1,
                           Value t2, Value n2, Value size, Value vecP,
                           Value vecAP, Value vecDV, Value vecT) {
  // T = P A'^T: T[j, i'] = sum over the non-zeros (i', j') of A' of
  // A'[i', j'] P[j, j'].
  {
    auto loop = scf::ForOp::create(b, loc, tid, size, idx(kThreads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value t = loop.getInductionVar();
    Value rowBase = sub(t, rem(t, n2));
    vstore(rowNonzeros(g2, t2, tileRows2, rem(t, n2), cf(0.0),
                       [&](Value j2, Value w2, ArrayRef<Value>, Value acc) {
                         return add(acc, mul(w2, vload(vecP, add(rowBase, j2))));
                       }),
           vecT, t);
  }
  barrier();
  // (A o E) P = c A T: row (i, i') sums A[i, j] T[j, i'].
  double c = getFeatureKernels(gram.edgeKernel).constant;
  return finishRows(size, vecP, vecAP, vecDV, [&](Value t) {
    Value i2 = rem(t, n2);
    Value sum = rowNonzeros(g1, t1, tileRows1, div(t, n2), cf(0.0),
                            [&](Value j, Value w1, ArrayRef<Value>, Value acc) {
                              return add(acc, mul(w1, vload(vecT, add(mul(j, n2), i2))));
                            });
    return mul(sum, cf(c));
  });
}

void SolverEmitter::offDiagonal(ArrayRef<Value> g1, ArrayRef<Value> g2,
                                Value t1, Value nt1, Value t2, Value nt2,
                                Value n1, Value n2, Value vecP, Value vecAP,
                                Value resident) {
  Value chunk = idx(cachedTiles);
  auto chunks = [&](Value n) { return div(add(n, sub(chunk, idx(1))), chunk); };
  auto outer = scf::ForOp::create(b, loc, idx(0), chunks(nt1), idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(outer.getBody());
  Value first1 = mul(outer.getInductionVar(), chunk);
  Value count1 = arith::MinUIOp::create(b, loc, chunk, sub(nt1, first1));
  auto innerChunks = scf::ForOp::create(b, loc, idx(0), chunks(nt2), idx(1));
  b.setInsertionPointToStart(innerChunks.getBody());
  Value first2 = mul(innerChunks.getInductionVar(), chunk);
  Value count2 = arith::MinUIOp::create(b, loc, chunk, sub(nt2, first2));
  {
    auto stage = scf::IfOp::create(b, loc, negate(resident), false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(stage.thenBlock());
    barrier();
    stageTiles(g1, add(t1, first1), count1, cache1);
    stageTiles(g2, add(t2, first2), count2, cache2);
    barrier();
  }
  auto pairs = scf::ForOp::create(b, loc, warp, mul(count1, count2),
                                  idx(kWarps));
  b.setInsertionPointToStart(pairs.getBody());
  Value k = pairs.getInductionVar();
  tilePair(div(k, count2), rem(k, count2), n1, n2, vecP, vecAP);
}

void SolverEmitter::solvePair(Value p) {
  Value pairs = kernel.getArgument(2 * kNumDatasetArrays);
  Value gramOut = kernel.getArgument(2 * kNumDatasetArrays + 2);
  Value iterationsOut = kernel.getArgument(2 * kNumDatasetArrays + 3);
  Value diagX = kernel.getArgument(2 * kNumDatasetArrays + 5);
  Value diagY = kernel.getArgument(2 * kNumDatasetArrays + 6);

  Value kind = load(pairs, {p, idx(0)});
  Value a = toIndex(load(pairs, {p, idx(1)}));
  Value bIndex = toIndex(load(pairs, {p, idx(2)}));
  Value zero32 = arith::ConstantIntOp::create(b, loc, i32, 0);
  Value one32 = arith::ConstantIntOp::create(b, loc, i32, 1);
  Value two32 = arith::ConstantIntOp::create(b, loc, i32, 2);
  // Kind 0: X[a] and Y[b]; 1: X[a] twice; 2: Y[b] twice.
  Value leftFromY = cmpi(arith::CmpIPredicate::eq, kind, two32);
  Value rightFromY = cmpi(arith::CmpIPredicate::ne, kind, one32);
  Value left = select(leftFromY, bIndex, a);
  Value right = select(cmpi(arith::CmpIPredicate::eq, kind, one32), a, bIndex);
  SmallVector<Value> g1, g2;
  for (unsigned n = 0; n < kNumDatasetArrays; ++n) {
    g1.push_back(array(n, leftFromY));
    g2.push_back(array(n, rightFromY));
  }
  Value node1 = toIndex(load(g1[kNodes], {left, idx(0)}));
  Value n1 = toIndex(load(g1[kNodes], {left, idx(1)}));
  Value node2 = toIndex(load(g2[kNodes], {right, idx(0)}));
  Value n2 = toIndex(load(g2[kNodes], {right, idx(1)}));
  Value t1 = toIndex(load(g1[kTiles], {left, idx(0)}));
  Value nt1 = toIndex(load(g1[kTiles], {left, idx(1)}));
  Value t2 = toIndex(load(g2[kTiles], {right, idx(0)}));
  Value nt2 = toIndex(load(g2[kTiles], {right, idx(1)}));
  Value size = mul(n1, n2);

  // This block's vectors: its share of the workspace.
  Value blocks = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value share = div(div(memref::DimOp::create(b, loc, workspace, 0), blocks),
                    idx(vectors));
  Value start = mul(mul(block, share), idx(vectors));
  // Vector n of the block's workspace starts at start + n * share.
  auto vector = [&](int64_t n) { return add(start, mul(share, idx(n))); };
  Value fits = cmpi(arith::CmpIPredicate::ule, size, share);
  auto solvable = scf::IfOp::create(b, loc, TypeRange{f32, i32}, fits, true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(solvable.elseBlock());
    // The workspace is smaller than the caller was told to make it: no
    // value (NaN) and no iteration (0), which the caller reports.
    scf::YieldOp::create(b, loc, ValueRange{cf(std::nan("")), zero32});
    b.setInsertionPointToStart(solvable.thenBlock());
    // r, p, A p and the diagonal D_x V_x^-1 (the solution is stored only
    // where the solve is nodal).
    Value vr = vector(0), vp = vector(1), vap = vector(2), vdv = vector(3);
    // P A'^T where XMV is factored; the solution where the solve is nodal
    // (the last vector).
    Value vt = factored ? vector(4) : Value();
    Value vx = gram.nodal ? vector(vectors - 1) : Value();
    double q = gram.stop;
    // A node's degree in D_x from its sum of edge weights (the op's
    // `degrees`): sum + q, or sum / (1 - q) with an edgeless node's sum 1.
    auto degree = [&](Value sum) {
      if (gram.degrees == "additive")
        return add(sum, cf(q));
      Value edgeless = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                             sum, cf(0.0));
      return mul(select(edgeless, cf(1.0), sum), cf(1.0 / (1.0 - q)));
    };
    // Initialization: x = 0 (implicit), r = b = D_x q_x, p = r / (D_x V_x^-1).
    auto init = scf::ForOp::create(b, loc, tid, size, idx(kThreads),
                                   ValueRange{cf(0.0), cf(0.0)});
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(init.getBody());
      Value t = init.getInductionVar();
      Value i = div(t, n2), i2 = rem(t, n2);
      Value v1 = add(node1, i), v2 = add(node2, i2);
      Value d = mul(degree(load(g1[kDegrees], {v1})),
                    degree(load(g2[kDegrees], {v2})));
      SmallVector<Value> x, y;
      for (unsigned f = 0; f < nodeFeatures; ++f) {
        x.push_back(load(g1[kNodeLabels], {v1, idx(f)}));
        y.push_back(load(g2[kNodeLabels], {v2, idx(f)}));
      }
      Value dv = div(d, baseKernel(gram.nodeKernel, x, y, /*prescaled=*/false,
                                   /*exact=*/true));
      Value rhs = mul(d, cf(q * q));
      Value z = div(rhs, dv);
      vstore(dv, vdv, t);
      if (vx)
        vstore(cf(0.0), vx, t);
      vstore(rhs, vr, t);
      vstore(z, vp, t);
      // A p's diagonal part for the first iteration.
      vstore(rhs, vap, t);
      scf::YieldOp::create(
          b, loc,
          ValueRange{add(init.getRegionIterArg(0), mul(rhs, z)),
                     add(init.getRegionIterArg(1), mul(rhs, rhs))});
    }
    // Zeros after P, as far as this pair's share of the workspace goes (the
    // dense octile product reads up to 7 elements past P's end, and runs
    // only where the share holds them: roomAfterP).
    Value pastP = add(size, idx(kOctile - 1));
    roomAfterP = cmpi(arith::CmpIPredicate::ule, pastP, share);
    {
      Value tail = arith::MinUIOp::create(b, loc, pastP, share);
      auto zeros = scf::ForOp::create(b, loc, add(size, tid), tail, idx(kThreads));
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(zeros.getBody());
      vstore(cf(0.0), vp, zeros.getInductionVar());
    }
    // The product-row primitive where both graphs' tile rows fit the
    // shared index.
    Value rows1 = div(add(n1, idx(kOctile - 1)), idx(kOctile));
    Value rows2 = div(add(n2, idx(kOctile - 1)), idx(kOctile));
    Value byRows = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
    Value staged = byRows;
    if (productRows) {
      // ... and whose octiles are sparse: the product of their mean
      // non-zero counts below rows-density (dense octiles share better by
      // octile pairs).
      // (A graph without tiles reads nothing: it may be the last.)
      auto nonzeros = [&](ArrayRef<Value> g, Value first, Value count) {
        auto counted = scf::IfOp::create(
            b, loc, TypeRange{b.getIndexType()},
            cmpi(arith::CmpIPredicate::ne, count, idx(0)), true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(counted.thenBlock());
        Value last = add(first, sub(count, idx(1)));
        Value end = add(toIndex(load(g[kOffsets], {last})),
                        toIndex(LLVM::CtPopOp::create(
                            b, loc, i64, load(g[kBitmaps], {last}))));
        scf::YieldOp::create(b, loc,
                             sub(end, toIndex(load(g[kOffsets], {first}))));
        b.setInsertionPointToStart(counted.elseBlock());
        scf::YieldOp::create(b, loc, idx(0));
        return counted.getResult(0);
      };
      Value z1 = nonzeros(g1, t1, nt1), z2 = nonzeros(g2, t2, nt2);
      // (Factored, XMV costs the graphs' non-zeros once each: rows always
      // win.)
      Value sparse =
          factored ? arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)
                   : cmpi(arith::CmpIPredicate::ult, mul(z1, z2),
                          mul(idx(rowsDensity), mul(nt1, nt2)));
      byRows = arith::AndIOp::create(
          b, loc,
          arith::AndIOp::create(
              b, loc, cmpi(arith::CmpIPredicate::ule, rows1, idx(kMaxTileRows)),
              cmpi(arith::CmpIPredicate::ule, rows2, idx(kMaxTileRows))),
          sparse);
      // Both graphs' compact octiles in shared memory (the octile caches'
      // space) where they fit: the rows' loads then stay on chip.
      staged = arith::AndIOp::create(
          b, loc, byRows,
          arith::AndIOp::create(
          b, loc,
          arith::AndIOp::create(
              b, loc, cmpi(arith::CmpIPredicate::ule, nt1, idx(stagedTiles)),
              cmpi(arith::CmpIPredicate::ule, nt2, idx(stagedTiles))),
          arith::AndIOp::create(
              b, loc, cmpi(arith::CmpIPredicate::ule, z1, idx(stagedNonzeros)),
              cmpi(arith::CmpIPredicate::ule, z2, idx(stagedNonzeros)))));
      auto index = scf::IfOp::create(b, loc, byRows, false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(index.thenBlock());
      indexTileRows(g1, t1, nt1, rows1, tileRows1);
      indexTileRows(g2, t2, nt2, rows2, tileRows2);
      auto stage = scf::IfOp::create(b, loc, staged, false);
      b.setInsertionPointToStart(stage.thenBlock());
      stageCompact(g1, t1, nt1, z1, compact1);
      stageCompact(g2, t2, nt2, z2, compact2);
    }
    // Otherwise both graphs' octiles stay in the caches for the whole
    // solve where they fit.
    Value resident = arith::AndIOp::create(
        b, loc,
        arith::AndIOp::create(
            b, loc, cmpi(arith::CmpIPredicate::ule, nt1, idx(cachedTiles)),
            cmpi(arith::CmpIPredicate::ule, nt2, idx(cachedTiles))),
        negate(byRows));
    {
      auto stage = scf::IfOp::create(b, loc, resident, false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(stage.thenBlock());
      stageTiles(g1, t1, nt1, cache1);
      stageTiles(g2, t2, nt2, cache2);
    }
    SmallVector<Value> sums = blockSum({init.getResult(0), init.getResult(1)});
    double tol = gram.tol;
    Value bound = mul(sums[1], cf(tol * tol));
    Value maxIter = idx(gram.maxIter);
    Type i1 = b.getI1Type();
    // K needs only the sum of x = sum_k alpha_k p_k: each thread carries
    // its share, sum_k alpha_k (the sum of its elements of p_k), and x is
    // never stored.
    auto cg = scf::WhileOp::create(
        b, loc, TypeRange{b.getIndexType(), f32, i1, f32},
        ValueRange{idx(0), sums[0], arith::ConstantIntOp::create(b, loc, i1, 0),
                   cf(0.0)});
    {
      OpBuilder::InsertionGuard g(b);
      Block *before = b.createBlock(&cg.getBefore(), {},
                                    {b.getIndexType(), f32, i1, f32},
                                    {loc, loc, loc, loc});
      Value more = arith::AndIOp::create(
          b, loc,
          cmpi(arith::CmpIPredicate::ult, before->getArgument(0), maxIter),
          negate(before->getArgument(2)));
      scf::ConditionOp::create(b, loc, more, before->getArguments());
      Block *after = b.createBlock(&cg.getAfter(), {},
                                   {b.getIndexType(), f32, i1, f32},
                                   {loc, loc, loc, loc});
      Value iteration = after->getArgument(0), rz = after->getArgument(1);
      Value xShare = after->getArgument(3);
      // A p and this thread's shares of p . A p and of the sum of p. By
      // product rows, each thread's rows of A p are whole (and the shares
      // come with them); by octile pairs, A p's diagonal part is there
      // (written with p), the off-diagonal part is added by all warps, then
      // the shares are a pass.
      Value pAp, pSum;
      {
        auto primitive =
            scf::IfOp::create(b, loc, TypeRange{f32, f32}, byRows, true);
        pAp = primitive.getResult(0);
        pSum = primitive.getResult(1);
        OpBuilder::InsertionGuard choice(b);
        b.setInsertionPointToStart(primitive.thenBlock());
        if (productRows) {
          auto where =
              scf::IfOp::create(b, loc, TypeRange{f32, f32}, staged, true);
          scf::YieldOp::create(b, loc, where.getResults());
          auto yieldPair = [&](std::pair<Value, Value> shares) {
            scf::YieldOp::create(b, loc, ValueRange{shares.first, shares.second});
          };
          auto rows = [&](ArrayRef<Value> h1, ArrayRef<Value> h2, Value first1,
                          Value first2) {
            if (factored)
              return factoredXMV(h1, h2, first1, first2, n2, size, vp, vap,
                                 vdv, vt);
            return productRowsXMV(h1, h2, first1, first2, n2, size, vp, vap,
                                  vdv);
          };
          b.setInsertionPointToStart(where.thenBlock());
          yieldPair(rows(compactArrays(g1, compact1),
                         compactArrays(g2, compact2), idx(0), idx(0)));
          b.setInsertionPointToStart(where.elseBlock());
          yieldPair(rows(g1, g2, t1, t2));
        } else {
          scf::YieldOp::create(b, loc, ValueRange{cf(0.0), cf(0.0)});
        }
        b.setInsertionPointToStart(primitive.elseBlock());
        offDiagonal(g1, g2, t1, nt1, t2, nt2, n1, n2, vp, vap, resident);
        barrier();
        scf::YieldOp::create(
            b, loc,
            vectorPass(size, 2, [&](ArrayRef<Value> ts, ArrayRef<Value> valid) {
              SmallVector<Value> p = vloads(vp, ts), ap = vloads(vap, ts),
                                 terms;
              for (int64_t u = 0; u < kUnroll; ++u)
                terms.push_back(mul(p[u], ap[u]));
              return SmallVector<Value>{maskedSum(terms, valid),
                                        maskedSum(p, valid)};
            }));
      }
      Value alpha = div(rz, blockSum({pAp})[0]);
      Value nextShare = add(xShare, mul(alpha, pSum));
      SmallVector<Value> partial = vectorPass(
          size, 2, [&](ArrayRef<Value> ts, ArrayRef<Value> valid) {
            SmallVector<Value> r = vloads(vr, ts), ap = vloads(vap, ts),
                               dv = vloads(vdv, ts);
            SmallVector<Value> rs, rr, rz;
            for (int64_t u = 0; u < kUnroll; ++u) {
              rs.push_back(sub(r[u], mul(alpha, ap[u])));
              rr.push_back(mul(rs[u], rs[u]));
              rz.push_back(mul(rs[u], div(rs[u], dv[u])));
            }
            vstores(rs, vr, ts, valid);
            if (vx) {
              SmallVector<Value> p = vloads(vp, ts), x = vloads(vx, ts), xs;
              for (int64_t u = 0; u < kUnroll; ++u)
                xs.push_back(add(x[u], mul(alpha, p[u])));
              vstores(xs, vx, ts, valid);
            }
            return SmallVector<Value>{maskedSum(rr, valid),
                                      maskedSum(rz, valid)};
          });
      SmallVector<Value> norms = blockSum(partial);
      Value converged = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE,
                                              norms[0], bound);
      Value beta = div(norms[1], rz);
      // p = z + beta p, and (octile pairs) A p's diagonal part for the
      // next iteration.
      vectorPass(size, 0, [&](ArrayRef<Value> ts, ArrayRef<Value> valid) {
        SmallVector<Value> r = vloads(vr, ts), dv = vloads(vdv, ts),
                           p = vloads(vp, ts), ps, diagonal;
        for (int64_t u = 0; u < kUnroll; ++u) {
          ps.push_back(add(div(r[u], dv[u]), mul(beta, p[u])));
          diagonal.push_back(mul(dv[u], ps[u]));
        }
        vstores(ps, vp, ts, valid);
        // (Product rows compute A p whole.)
        auto octilePairs = scf::IfOp::create(b, loc, negate(byRows), false);
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(octilePairs.thenBlock());
        vstores(diagonal, vap, ts, valid);
        return SmallVector<Value>{};
      });
      barrier();
      scf::YieldOp::create(b, loc,
                           ValueRange{add(iteration, idx(1)), norms[1],
                                      converged, nextShare});
    }
    // K = p_x . x with p = 1/n on each graph.
    Value value = div(blockSum({cg.getResult(3)})[0],
                      arith::UIToFPOp::create(
                          b, loc, f32,
                          arith::IndexCastOp::create(b, loc, i64, size)));
    Value iterations =
        arith::IndexCastOp::create(b, loc, i32, cg.getResult(0));
    iterations = select(cg.getResult(2), iterations,
                        arith::SubIOp::create(b, loc, zero32, iterations));
    if (vx) {
      // The pair's block of S, in the datasets' node order (and, X against
      // itself, its transpose). Only entries of S (kind 0) have one: a
      // nodal schedule holds no self-kernel pairs, but a schedule made for
      // another function must not write past S.
      Value out = kernel.getArgument(2 * kNumDatasetArrays + 2);
      OpBuilder::InsertionGuard g(b);
      auto entryPair = scf::IfOp::create(
          b, loc, cmpi(arith::CmpIPredicate::eq, kind, zero32), false);
      b.setInsertionPointToStart(entryPair.thenBlock());
      auto scatter = scf::ForOp::create(b, loc, tid, size, idx(kThreads));
      b.setInsertionPointToStart(scatter.getBody());
      Value t = scatter.getInductionVar();
      Value row = toIndex(load(g1[kRows], {add(node1, div(t, n2))}));
      Value column = toIndex(load(g2[kRows], {add(node2, rem(t, n2))}));
      Value x = vload(vx, t);
      store(x, out, {row, column});
      if (symmetric) {
        auto mirror = scf::IfOp::create(
            b, loc, cmpi(arith::CmpIPredicate::ne, a, bIndex), false);
        b.setInsertionPointToStart(mirror.thenBlock());
        store(x, out, {column, row});
      }
    }
    scf::YieldOp::create(b, loc, ValueRange{value, iterations});
  }
  Value value = solvable.getResult(0), iterations = solvable.getResult(1);
  // Thread 0 writes the pair's results.
  auto first = scf::IfOp::create(
      b, loc, cmpi(arith::CmpIPredicate::eq, tid, idx(0)), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(first.thenBlock());
  Value isEntry = cmpi(arith::CmpIPredicate::eq, kind, zero32);
  auto entry = scf::IfOp::create(b, loc, isEntry, true);
  b.setInsertionPointToStart(entry.thenBlock());
  // (Nodal, the similarities are written: only the iterations here.)
  if (!gram.nodal)
    store(value, gramOut, {a, bIndex});
  store(iterations, iterationsOut, {a, bIndex});
  if (symmetric) {
    if (!gram.nodal)
      store(value, gramOut, {bIndex, a});
    store(iterations, iterationsOut, {bIndex, a});
    auto diagonal = scf::IfOp::create(
        b, loc, cmpi(arith::CmpIPredicate::eq, a, bIndex), false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(diagonal.thenBlock());
    store(value, diagX, {a});
  }
  b.setInsertionPointToStart(entry.elseBlock());
  auto self = scf::IfOp::create(
      b, loc, cmpi(arith::CmpIPredicate::eq, kind, one32), true);
  b.setInsertionPointToStart(self.thenBlock());
  store(value, diagX, {a});
  b.setInsertionPointToStart(self.elseBlock());
  store(value, diagY, {bIndex});
}

void SolverEmitter::emit() {
  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  workspace = kernel.getArgument(2 * kNumDatasetArrays + 1);
  lane = rem(tid, idx(32));
  warp = div(tid, idx(32));
  auto smemType = MemRefType::get(
      {ShapedType::kDynamic}, b.getI8Type(), MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
  smem = gpu::DynamicSharedMemoryOp::create(b, loc, smemType);
  // [0, 32): the warps' partial sums; [32, 48): the pair; then the two
  // graphs' tile caches (bitmaps, coordinates, weights, labels).
  reduceSlots = sharedView(f32, 0, 2 * kWarps);
  pairSlot = sharedView(i32, 32, 1);
  int64_t offset = 48;
  int64_t labelColumns = std::max<int64_t>(1, edgeFeatures);
  int64_t region = cachedTiles * (8 + 4 + 4 * 64 + 4 * 64 * labelColumns);
  // The product-row primitive's staged octiles take the caches' space.
  stagedTiles = std::min<int64_t>(64, region / 64);
  stagedNonzeros = (region - 16 * stagedTiles) / (4 * (1 + labelColumns));
  for (auto [cache, compact] :
       {std::make_pair(&cache1, &compact1), std::make_pair(&cache2, &compact2)}) {
    int64_t at = offset;
    compact->bitmaps = sharedView(i64, at, stagedTiles);
    at += 8 * stagedTiles;
    compact->coords = sharedView(i32, at, stagedTiles);
    at += 4 * stagedTiles;
    compact->offsets = sharedView(i32, at, stagedTiles);
    at += 4 * stagedTiles;
    compact->weights = sharedView(f32, at, stagedNonzeros);
    at += 4 * stagedNonzeros;
    auto labelsType = MemRefType::get(
        {stagedNonzeros, labelColumns}, f32, MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
    compact->labels = memref::ViewOp::create(b, loc, labelsType, smem, idx(at),
                                             ValueRange{});
    cache->bitmaps = sharedView(i64, offset, cachedTiles);
    offset += 8 * cachedTiles;
    cache->coords = sharedView(i32, offset, cachedTiles);
    offset += 4 * cachedTiles;
    cache->weights = sharedView(f32, offset, 64 * cachedTiles);
    offset += 4 * 64 * cachedTiles;
    int64_t labels = 64 * cachedTiles * labelColumns;
    cache->labels = sharedView(f32, offset, labels);
    offset += 4 * labels;
  }
  assert(offset - 48 == 2 * region && "the staged octiles share the caches");
  tileRows1 = sharedView(i32, offset, kMaxTileRows + 1);
  offset += 4 * (kMaxTileRows + 1);
  tileRows2 = sharedView(i32, offset, kMaxTileRows + 1);

  Value pairs = kernel.getArgument(2 * kNumDatasetArrays);
  Value counter = kernel.getArgument(2 * kNumDatasetArrays + 4);
  Value numPairs = memref::DimOp::create(b, loc, pairs, 0);
  auto loop = scf::WhileOp::create(b, loc, TypeRange{b.getIndexType()},
                                   ValueRange{});
  b.createBlock(&loop.getBefore());
  {
    auto first = scf::IfOp::create(
        b, loc, cmpi(arith::CmpIPredicate::eq, tid, idx(0)), false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(first.thenBlock());
    Value taken = memref::AtomicRMWOp::create(
        b, loc, arith::AtomicRMWKind::addi,
        arith::ConstantIntOp::create(b, loc, i32, 1), counter,
        ValueRange{idx(0)});
    store(taken, pairSlot, {idx(0)});
  }
  barrier();
  Value p = toIndex(load(pairSlot, {idx(0)}));
  barrier();
  scf::ConditionOp::create(b, loc,
                           cmpi(arith::CmpIPredicate::ult, p, numPairs),
                           ValueRange{p});
  Block *after = b.createBlock(&loop.getAfter(), {}, {b.getIndexType()},
                               {loc});
  solvePair(after->getArgument(0));
  b.setInsertionPointToEnd(after);
  scf::YieldOp::create(b, loc, ValueRange{});
  b.setInsertionPointToEnd(&body);
  gpu::ReturnOp::create(b, loc);
}

/// The normalization kernel: gram[a, b] /= sqrt(dx[a] dy[b]).
void emitNormalize(OpBuilder &b, Location loc, gpu::GPUFuncOp kernel) {
  b.setInsertionPointToStart(&kernel.getBody().front());
  Value gramArg = kernel.getArgument(0), dx = kernel.getArgument(1),
        dy = kernel.getArgument(2);
  Value rows = memref::DimOp::create(b, loc, gramArg, 0);
  Value cols = memref::DimOp::create(b, loc, gramArg, 1);
  Value id = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(
          b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
          arith::ConstantIndexOp::create(b, loc, kNormalizeThreads)),
      gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  auto inside = scf::IfOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id,
                            arith::MulIOp::create(b, loc, rows, cols)),
      false);
  b.setInsertionPointToStart(inside.thenBlock());
  Value a = arith::DivUIOp::create(b, loc, id, cols);
  Value c = arith::RemUIOp::create(b, loc, id, cols);
  Value scale = math::SqrtOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, memref::LoadOp::create(b, loc, dx, a),
                            memref::LoadOp::create(b, loc, dy, c)));
  Value value = memref::LoadOp::create(b, loc, gramArg, ValueRange{a, c});
  memref::StoreOp::create(b, loc, arith::DivFOp::create(b, loc, value, scale),
                          gramArg, ValueRange{a, c});
  b.setInsertionPointToEnd(&kernel.getBody().front());
  gpu::ReturnOp::create(b, loc);
}

struct ConvertKronToGPUPass
    : public kge::impl::ConvertKronToGPUBase<ConvertKronToGPUPass> {
  using ConvertKronToGPUBase::ConvertKronToGPUBase;

  LogicalResult lower(func::FuncOp func, Solve gram);

  void runOnOperation() override {
    if (cachedTiles < 1 || getSharedBytes(cachedTiles, 8) > 160 * 1024) {
      getOperation().emitError()
          << "convert-kron-to-gpu caches between 1 and "
          << "a shared-memory budget's worth of octiles per graph, got "
          << cachedTiles;
      return signalPassFailure();
    }
    if (residentBlocks < 1) {
      getOperation().emitError()
          << "convert-kron-to-gpu needs at least one resident block, got "
          << residentBlocks;
      return signalPassFailure();
    }
    SmallVector<std::pair<func::FuncOp, Solve>> work;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      SmallVector<Solve> solves;
      for (Operation &op : func.getBody().getOps()) {
        if (auto gram = dyn_cast<GramOp>(op))
          solves.push_back(Solve::of(gram));
        else if (auto nodewise = dyn_cast<NodewiseOp>(op))
          solves.push_back(Solve::of(nodewise));
      }
      if (solves.empty()) {
        if (!func.getBody().getOps<OctilesOp>().empty() ||
            !func.getBody().getOps<GraphsOp>().empty()) {
          func.emitOpError()
              << "holds a kron dataset but no kron.gram or kron.nodewise";
          return signalPassFailure();
        }
        continue;
      }
      if (solves.size() != 1) {
        func.emitOpError() << "holds " << solves.size()
                           << " kron.gram / kron.nodewise operations; a kron "
                              "function computes one matrix";
        return signalPassFailure();
      }
      work.push_back({func, solves.front()});
    }
    for (auto [func, gram] : work)
      if (failed(lower(func, gram)))
        return signalPassFailure();
  }
};

LogicalResult ConvertKronToGPUPass::lower(func::FuncOp func, Solve gram) {
  // The function returns the Gram matrix and the iteration counts.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (ret.getNumOperands() != 2 || ret.getOperand(0) != gram.result ||
      ret.getOperand(1) != gram.iterations)
    return func.emitOpError()
           << "must return its " << gram.name()
           << "'s two results (the "
           << (gram.nodal ? "similarities" : "Gram matrix")
           << " and the iteration counts) and nothing else";
  auto octilesX = gram.x.getDefiningOp<OctilesOp>();
  auto octilesY = gram.y ? gram.y.getDefiningOp<OctilesOp>() : OctilesOp();
  if (!octilesX || (gram.y && !octilesY))
    return gram.op->emitOpError()
           << "reads a dataset that is not stored as octiles; run "
              "kron-octile-tiling before convert-kron-to-gpu";
  bool symmetric = !octilesY;
  for (Operation &op : func.getBody().front())
    if (!isa<OctilesOp, GramOp, NodewiseOp, func::ReturnOp>(op))
      return op.emitOpError()
             << "cannot be lowered with " << gram.name()
             << ": a kron function holds its datasets, one kron.gram or "
                "kron.nodewise and the return";
  SmallVector<Value> arraysX = datasetArrays(octilesX);
  SmallVector<Value> arraysY =
      symmetric ? arraysX : datasetArrays(octilesY);
  for (Value v : llvm::concat<Value>(arraysX, arraysY))
    if (!isa<BlockArgument>(v) ||
        cast<BlockArgument>(v).getOwner() != &func.getBody().front())
      return gram.op->emitOpError()
             << "reads a dataset array that is not a parameter of its "
                "function";

  // The caller's derived parameters: the pair schedule and the workspace.
  kge::DerivedParameters params(func);
  Builder b(func.getContext());
  auto nameOf = [&](Value v) { return params.nameOf(v); };
  SmallVector<NamedAttribute> schedule = {
      b.getNamedAttr("function", b.getStringAttr("pair_schedule")),
      b.getNamedAttr("x_nodes", nameOf(octilesX.getNodes())),
      b.getNamedAttr("x_tiles", nameOf(octilesX.getTiles())),
      b.getNamedAttr("y_nodes", nameOf(symmetric ? octilesX.getNodes()
                                                 : octilesY.getNodes())),
      b.getNamedAttr("y_tiles", nameOf(symmetric ? octilesX.getTiles()
                                                 : octilesY.getTiles())),
      b.getNamedAttr("symmetric", b.getStringAttr(symmetric ? "true" : "false")),
      b.getNamedAttr("normalize",
                     b.getStringAttr(gram.normalize ? "true" : "false"))};
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  Value pairs = params.add(
      RankedTensorType::get({ShapedType::kDynamic, 3}, i32), "pairs", "kron",
      schedule, func.getLoc());
  SmallVector<NamedAttribute> workspaceFields = {
      b.getNamedAttr("function", b.getStringAttr("solver_workspace")),
      b.getNamedAttr("pairs", b.getStringAttr("pairs")),
      b.getNamedAttr("blocks", b.getStringAttr(std::to_string(residentBlocks))),
      b.getNamedAttr("vectors", b.getStringAttr(std::to_string(
                                    solverVectors(gram, productRows)))),
      b.getNamedAttr("x_nodes", nameOf(octilesX.getNodes())),
      b.getNamedAttr("y_nodes", nameOf(symmetric ? octilesX.getNodes()
                                                 : octilesY.getNodes()))};
  Value workspace = params.add(
      RankedTensorType::get({ShapedType::kDynamic}, f32), "workspace", "kron",
      workspaceFields, func.getLoc());
  if (!pairs || !workspace)
    return func.emitOpError() << "could not take the solver's parameters";
  if (params.nameOf(pairs).getValue() != "pairs")
    return func.emitOpError() << "has a parameter named 'pairs'; the solver's "
                                 "pair schedule takes that name";

  // The signature: the parameters, then the two results.
  auto type = cast<GraphsType>(gram.x.getType());
  std::map<unsigned, SmallVector<std::string>> shapes;
  auto assign = [&](ArrayRef<Value> arrays, StringRef suffix) {
    for (auto [n, v] : llvm::enumerate(arrays))
      shapes.try_emplace(cast<BlockArgument>(v).getArgNumber(),
                         datasetShape(n, suffix, type.getNodeLabels(),
                                      type.getEdgeLabels()));
  };
  assign(arraysX, "");
  if (!symmetric)
    assign(arraysY, "_y");
  shapes[cast<BlockArgument>(pairs).getArgNumber()] = {"P", "3"};
  shapes[cast<BlockArgument>(workspace).getArgNumber()] = {"W"};
  kge_runtime::Signature signature;
  signature.name = func.getSymName().str();
  auto toDims = [](ArrayRef<std::string> shape) {
    std::vector<kge_runtime::Dim> dims;
    for (const std::string &d : shape)
      dims.push_back(std::isdigit(d[0])
                         ? kge_runtime::Dim::fixed(std::stoll(d))
                         : kge_runtime::Dim::named(d));
    return dims;
  };
  for (unsigned a = 0; a < func.getNumArguments(); ++a) {
    auto tensor = dyn_cast<RankedTensorType>(func.getArgument(a).getType());
    std::optional<kge_runtime::DType> dtype =
        tensor ? kge::getDType(tensor.getElementType()) : std::nullopt;
    if (!dtype)
      return func.emitOpError() << "argument #" << a << " has type "
                                << func.getArgument(a).getType()
                                << "; kron functions take ranked tensors of "
                                   "f32, i32 or i64";
    kge_runtime::Parameter param;
    param.name = params.nameOf(func.getArgument(a))
                     ? params.nameOf(func.getArgument(a)).str()
                     : "arg" + std::to_string(a);
    param.dtype = *dtype;
    auto it = shapes.find(a);
    if (it != shapes.end()) {
      param.shape = toDims(it->second);
    } else {
      // A parameter the kernel does not read (the edge lists the octiles
      // derive from): its own sizes.
      for (int64_t d = 0; d < tensor.getRank(); ++d)
        param.shape.push_back(
            tensor.isDynamicDim(d)
                ? kge_runtime::Dim::named(param.name + "_" + std::to_string(d))
                : kge_runtime::Dim::fixed(tensor.getDimSize(d)));
    }
    if (func.getArgument(a) == workspace)
      param.role = kge_runtime::ParamRole::Output;
    signature.params.push_back(std::move(param));
  }
  // The results: the Gram matrix [G, G_y] (nodal: the similarities [V,
  // V_y]) and the iteration counts [G, G_y].
  std::string rowsSym = "G", colsSym = symmetric ? "G" : "G_y";
  std::string resultRows = gram.nodal ? "V" : rowsSym;
  std::string resultCols = gram.nodal ? (symmetric ? "V" : "V_y") : colsSym;
  for (unsigned r = 0; r < 2; ++r) {
    kge_runtime::Parameter param;
    auto named = func.getResultAttrOfType<StringAttr>(r, "kge.param");
    param.name = named ? named.str()
                       : (r == 1 ? "iterations"
                                 : (gram.nodal ? "similarity" : "gram"));
    param.role = kge_runtime::ParamRole::Result;
    param.dtype = r == 0 ? kge_runtime::DType::F32 : kge_runtime::DType::I32;
    param.shape = r == 0 ? toDims({resultRows, resultCols})
                         : toDims({rowsSym, colsSym});
    if (signature.find(param.name) >= 0)
      return func.emitOpError() << "has a parameter and a result named '"
                                << param.name << "'";
    signature.params.push_back(std::move(param));
  }

  // The kernels.
  OpBuilder builder(func);
  Location loc = func.getLoc();
  std::string name = func.getSymName().str();
  auto module = gpu::GPUModuleOp::create(builder, loc, name + "_kernels");
  builder.setInsertionPointToEnd(module.getBody());
  auto memrefOf = [&](Value v) {
    auto tensor = cast<RankedTensorType>(v.getType());
    return MemRefType::get(tensor.getShape(), tensor.getElementType());
  };
  SmallVector<Type> kernelTypes;
  for (Value v : llvm::concat<Value>(arraysX, arraysY))
    kernelTypes.push_back(memrefOf(v));
  auto dynamic2D = [&](Type element) {
    return MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                           element);
  };
  auto dynamic1D = [&](Type element) {
    return MemRefType::get({ShapedType::kDynamic}, element);
  };
  kernelTypes.push_back(memrefOf(pairs));
  kernelTypes.push_back(memrefOf(workspace));
  kernelTypes.push_back(dynamic2D(f32));
  kernelTypes.push_back(dynamic2D(i32));
  kernelTypes.push_back(dynamic1D(i32)); // the pair counter
  kernelTypes.push_back(dynamic1D(f32)); // X's self-kernels
  kernelTypes.push_back(dynamic1D(f32)); // Y's self-kernels
  auto solve = gpu::GPUFuncOp::create(builder, loc, name + "_solve",
                                      builder.getFunctionType(kernelTypes, {}));
  solve->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), builder.getUnitAttr());
  solve.setKnownBlockSizeAttr(
      builder.getDenseI32ArrayAttr({static_cast<int32_t>(kThreads), 1, 1}));
  if (minBlocksPerSM > 0)
    solve->setAttr("nvvm.minctasm", builder.getI32IntegerAttr(minBlocksPerSM));
  SolverEmitter(builder, loc, gram, solve, symmetric, cachedTiles,
                denseThreshold, productRows, rowsDensity)
      .emit();
  int64_t sharedBytes = getSharedBytes(cachedTiles, type.getEdgeLabels());

  // The bundle description.
  kge::BundleBuilder bb(builder);
  auto paramRef = [&](Value v) -> Attribute {
    unsigned a = cast<BlockArgument>(v).getArgNumber();
    SmallVector<std::string> dims;
    for (const kge_runtime::Dim &d : signature.params[a].shape)
      dims.push_back(d.str());
    return bb.memref("param:" + signature.params[a].name, dims);
  };
  SmallVector<Attribute> args;
  for (Value v : llvm::concat<Value>(arraysX, arraysY))
    args.push_back(paramRef(v));
  args.push_back(paramRef(pairs));
  args.push_back(paramRef(workspace));
  std::string gramName = signature.params[signature.params.size() - 2].name;
  std::string iterationsName = signature.params.back().name;
  args.push_back(bb.memref("param:" + gramName, {resultRows, resultCols}));
  args.push_back(bb.memref("param:" + iterationsName, {rowsSym, colsSym}));
  SmallVector<Attribute> scratch, steps;
  auto scratchArray = [&](StringRef scratchName, StringRef dtype,
                          const std::string &count) {
    scratch.push_back(bb.dict({{"name", bb.str(scratchName)},
                               {"dtype", bb.str(dtype)},
                               {"count", bb.str(count)}}));
    return bb.memref(("scratch:" + scratchName).str(), {count});
  };
  args.push_back(scratchArray("counter", "i32", "1"));
  Attribute diagX = scratchArray("self_x", "f32", rowsSym);
  Attribute diagY = symmetric ? diagX : scratchArray("self_y", "f32", colsSym);
  args.push_back(diagX);
  args.push_back(diagY);
  auto memset = [&](StringRef buffer, int64_t value) {
    NamedAttrList fields;
    fields.append("kind", bb.str("memset"));
    fields.append("buffer", bb.str(buffer));
    if (value)
      fields.append("value", builder.getI64IntegerAttr(value));
    steps.push_back(fields.getDictionary(func.getContext()));
  };
  memset("scratch:counter", 0);
  // Entries no pair writes stay NaN with 0 iterations: reported, not zero.
  memset("param:" + gramName, 0x7fc00000);
  memset("param:" + iterationsName, 0);
  steps.push_back(bb.launch(
      name + "_solve", module.getName(),
      {"min(P, " + std::to_string(residentBlocks) + ")", "1", "1"}, kThreads,
      std::to_string(sharedBytes), args));
  if (gram.normalize) {
    builder.setInsertionPointToEnd(module.getBody());
    auto normalize = gpu::GPUFuncOp::create(
        builder, loc, name + "_normalize",
        builder.getFunctionType({dynamic2D(f32), dynamic1D(f32), dynamic1D(f32)},
                                {}));
    normalize->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                       builder.getUnitAttr());
    normalize.setKnownBlockSizeAttr(builder.getDenseI32ArrayAttr(
        {static_cast<int32_t>(kNormalizeThreads), 1, 1}));
    emitNormalize(builder, loc, normalize);
    steps.push_back(bb.launch(
        name + "_normalize", module.getName(),
        {"ceildiv(" + rowsSym + " * " + colsSym + ", " +
             std::to_string(kNormalizeThreads) + ")",
         "1", "1"},
        kNormalizeThreads, "0",
        {bb.memref("param:" + gramName, {rowsSym, colsSym}), diagX, diagY}));
  }
  module->setAttr(kge::kSignatureAttrName, bb.signature(signature));
  module->setAttr(kge::kModeAttrName, bb.dict({{"kind", bb.str("positive")}}));
  module->setAttr(kge::kScratchAttrName, bb.arr(scratch));
  module->setAttr(kge::kLaunchPlanAttrName, bb.arr(steps));
  module->setAttr(kge::kChecksAttrName, bb.arr({}));
  // The derived parameters (octiles, pair schedule, workspace), for the
  // manifest.
  NamedAttrList derived;
  for (unsigned a = 0; a < func.getNumArguments(); ++a)
    if (auto fields = func.getArgAttrOfType<DictionaryAttr>(a, "kge.derived"))
      derived.append(signature.params[a].name, fields);
  module->setAttr(kge::kDerivedAttrName,
                  derived.getDictionary(func.getContext()));
  func.erase();
  return success();
}

} // namespace
