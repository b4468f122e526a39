//===- TensorCoreIterators.cpp - tile tasks on tensor cores ---------------===//
//
// The tensor-core reduction of a tile.task whose inner computation is a
// product: the load iterators copy each operand's block tile from global
// to shared memory asynchronously (cp.async, 16-byte chunks, a pipeline of
// `stages` tiles in flight, zero-filled past the extents), the warps read
// their fragments with ldmatrix (transposing operands stored
// spatial-contiguous) and accumulate with mma.sync through the shared
// tensor-core emitter (GPUCommon/TensorCores). The accumulators end in
// registers with their pairs' coordinates, where the store iterators of
// every output operator take them as they take the CUDA-core ones.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::kge;
using namespace mlir::kge::tilegpu;

//===----------------------------------------------------------------------===//
// Product forms
//===----------------------------------------------------------------------===//

static Factor leafFactor(unsigned input) {
  auto e = std::make_shared<FactorExpr>();
  e->input = input;
  return e;
}

static Factor constantFactor(double value) {
  auto e = std::make_shared<FactorExpr>();
  e->constant = value;
  return e;
}

static Factor synthesize(StringRef name, ArrayRef<Factor> operands) {
  auto e = std::make_shared<FactorExpr>();
  e->synthesized = name;
  e->operands.assign(operands.begin(), operands.end());
  return e;
}

static Factor applied(Operation *op, ArrayRef<Factor> operands) {
  auto e = std::make_shared<FactorExpr>();
  e->op = op;
  e->operands.assign(operands.begin(), operands.end());
  return e;
}

/// Whether `f` reads no operand (a constant expression).
static bool isConstantFactor(const Factor &f) {
  if (!f)
    return true;
  if (f->isInput())
    return false;
  return llvm::all_of(f->operands, isConstantFactor);
}

/// Whether two factors compute the same value (an operation of the inner
/// computation is one value whatever reaches it; null is 1).
static bool sameFactor(const Factor &a, const Factor &b) {
  if (a == b)
    return true;
  if (!a || !b)
    return false;
  if (a->isInput() || b->isInput())
    return a->isInput() && b->isInput() && a->input == b->input;
  if (a->isConstant() || b->isConstant())
    return a->isConstant() && b->isConstant() && *a->constant == *b->constant;
  if (a->op || b->op)
    return a->op == b->op;
  if (a->synthesized != b->synthesized ||
      a->operands.size() != b->operands.size())
    return false;
  for (auto [x, y] : llvm::zip(a->operands, b->operands))
    if (!sameFactor(x, y))
      return false;
  return true;
}

/// x * y with null as 1.
static Factor times(const Factor &x, const Factor &y) {
  if (!x)
    return y;
  if (!y)
    return x;
  return synthesize("arith.mulf", {x, y});
}

/// x + y with null as 1.
static Factor plus(const Factor &x, const Factor &y) {
  return synthesize("arith.addf", {x ? x : constantFactor(1.0),
                                   y ? y : constantFactor(1.0)});
}

/// Merges terms that share a factor (their other factors summed): ComplEx's
/// four products become one term per part of the tail.
static SmallVector<ProductTerm, 2> mergeTerms(ArrayRef<ProductTerm> terms,
                                              bool byColumn) {
  SmallVector<ProductTerm, 2> merged;
  for (const ProductTerm &term : terms) {
    auto same = llvm::find_if(merged, [&](const ProductTerm &m) {
      return byColumn ? sameFactor(m.col, term.col)
                      : sameFactor(m.row, term.row);
    });
    if (same == merged.end()) {
      merged.push_back(term);
      continue;
    }
    if (byColumn)
      same->row = plus(same->row, term.row);
    else
      same->col = plus(same->col, term.col);
  }
  return merged;
}

namespace {
/// A value of the inner computation as factoring sees it: a polynomial in
/// the two sides, sum over its terms of row * col (a null factor is 1).
/// One side's value x is the term (x, 1) or (1, x); a constant c is (c, 1).
struct Polynomial {
  SmallVector<ProductTerm, 2> terms;
  /// The side all its factors read (0: rows, 1: columns), none when both
  /// do, -1 when it reads no operand.
  std::optional<int> side() const {
    bool rows = false, cols = false;
    for (const ProductTerm &t : terms) {
      rows |= !isConstantFactor(t.row);
      cols |= !isConstantFactor(t.col);
    }
    if (rows && cols)
      return std::nullopt;
    return rows ? 0 : cols ? 1 : -1;
  }
  /// A polynomial of one side (or none) as one factor of that side: the
  /// sum of its terms' products.
  Factor collapsed() const {
    Factor sum;
    for (const ProductTerm &t : terms) {
      Factor product = t.row && t.col ? times(t.row, t.col)
                       : t.row       ? t.row
                       : t.col       ? t.col
                                     : constantFactor(1.0);
      sum = sum ? synthesize("arith.addf", {sum, product}) : product;
    }
    return sum;
  }
  static Polynomial of(int side, Factor f) {
    Polynomial p;
    p.terms.push_back(side == 1 ? ProductTerm{nullptr, f}
                                : ProductTerm{f, nullptr});
    return p;
  }
};
} // namespace

std::optional<ProductForm> tilegpu::getProductForm(TaskOp task) {
  tile::ProductOperands operands = tile::getProductOperands(task);
  if (operands.rows.empty() || operands.cols.empty() ||
      !operands.kOnly.empty())
    return std::nullopt;
  Block &inner = task.getInner().front();
  DenseMap<Value, Polynomial> values;
  for (BlockArgument arg : inner.getArguments()) {
    unsigned n = arg.getArgNumber();
    if (llvm::is_contained(operands.rows, n))
      values[arg] = Polynomial::of(0, leafFactor(n));
    else if (llvm::is_contained(operands.cols, n))
      values[arg] = Polynomial::of(1, leafFactor(n));
    // Inputs without k are no factor: using one fails below.
  }
  auto negated = [](SmallVector<ProductTerm, 2> terms) {
    for (ProductTerm &t : terms) {
      if (t.row)
        t.row = synthesize("arith.negf", {t.row});
      else
        t.col = synthesize("arith.negf", {t.col ? t.col : constantFactor(1.0)});
    }
    return terms;
  };
  // Factors are computed in the operands' types and f32: values of other
  // types (f64, f8) leave the form to the CUDA cores.
  auto factorType = [](Type type) {
    return type.isF16() || type.isBF16() || type.isF32();
  };
  for (Operation &op : inner.without_terminator()) {
    if (op.getNumResults() != 1 || op.getNumRegions() ||
        !isMemoryEffectFree(&op) || !factorType(op.getResult(0).getType()) ||
        !llvm::all_of(op.getOperandTypes(), factorType))
      return std::nullopt;
    SmallVector<const Polynomial *, 2> args;
    for (Value operand : op.getOperands()) {
      auto it = values.find(operand);
      if (it == values.end())
        return std::nullopt;
      args.push_back(&it->second);
    }
    // An operation of one side's values (constants go with either): that
    // side's value, the operation itself.
    std::optional<int> side = -1;
    for (const Polynomial *arg : args) {
      std::optional<int> s = arg->side();
      if (!s || (*s >= 0 && *side >= 0 && *s != *side)) {
        side = std::nullopt;
        break;
      }
      if (*s >= 0)
        side = s;
    }
    Polynomial result;
    if (side && !isa<arith::ExtFOp>(op)) {
      SmallVector<Factor, 2> factors;
      for (const Polynomial *arg : args)
        factors.push_back(arg->collapsed());
      result = Polynomial::of(*side, applied(&op, factors));
    } else if (isa<arith::ExtFOp>(op)) {
      // Widenings are exact: the tensor cores take an operand as stored (a
      // factor computed from it widens it again where it is used), and
      // their products and sums are f32 ones.
      result = *args[0];
    } else if (isa<arith::MulFOp>(op)) {
      // Products across the sides multiply out.
      for (const ProductTerm &x : args[0]->terms)
        for (const ProductTerm &y : args[1]->terms)
          result.terms.push_back({times(x.row, y.row), times(x.col, y.col)});
    } else if (isa<arith::AddFOp, arith::SubFOp>(op)) {
      result.terms = args[0]->terms;
      llvm::append_range(result.terms, isa<arith::SubFOp>(op)
                                           ? negated(args[1]->terms)
                                           : args[1]->terms);
    } else if (isa<arith::NegFOp>(op)) {
      result.terms = negated(args[0]->terms);
    } else if (isa<arith::DivFOp>(op) && args[1]->side()) {
      // Division by one side's value divides that side's factors.
      int by = std::max(0, *args[1]->side());
      Factor divisor = args[1]->collapsed();
      result.terms = args[0]->terms;
      for (ProductTerm &t : result.terms) {
        Factor &f = by == 1 ? t.col : t.row;
        f = synthesize("arith.divf", {f ? f : constantFactor(1.0), divisor});
      }
    } else {
      // Any other operation of values of both sides.
      return std::nullopt;
    }
    // Products of many sums could grow without bound: a form of more
    // terms than this is no use to the tensor cores.
    if (result.terms.size() > 64)
      return std::nullopt;
    values[op.getResult(0)] = std::move(result);
  }
  auto yield = cast<tile::YieldOp>(inner.getTerminator());
  auto it = values.find(yield.getValue());
  if (it == values.end())
    return std::nullopt;
  ProductForm form;
  form.rows = operands.rows;
  form.cols = operands.cols;
  form.terms = mergeTerms(mergeTerms(it->second.terms, /*byColumn=*/true),
                          /*byColumn=*/false);
  // A form that reads only one side is a sum of that side alone: no
  // product to compute.
  if (!it->second.side() && !form.terms.empty())
    return form;
  return std::nullopt;
}

/// Whether `f` is zero wherever its operands are (then the stages' zero
/// fill past K makes it zero there without a mask). Conservative: false
/// for operations not known to keep zero.
static bool vanishesAtZero(const Factor &f) {
  if (!f)
    return false; // 1
  if (f->isInput())
    return true;
  if (f->isConstant())
    return *f->constant == 0.0;
  StringRef name = f->op ? f->op->getName().getStringRef() : f->synthesized;
  auto operand = [&](unsigned n) { return vanishesAtZero(f->operands[n]); };
  if (name == "arith.mulf")
    return operand(0) || operand(1);
  if (name == "arith.addf" || name == "arith.subf" ||
      name == "arith.maximumf" || name == "arith.minimumf")
    return operand(0) && operand(1);
  if (name == "arith.negf" || name == "arith.extf" || name == "arith.truncf" ||
      name == "math.absf" || name == "math.tanh" || name == "math.sin" ||
      name == "math.sqrt")
    return operand(0);
  return false;
}

Value KernelEmitter::evaluateFactor(
    const Factor &factor, VectorType type,
    llvm::function_ref<Value(unsigned)> leaf,
    llvm::function_ref<Value(int64_t, int64_t)> inK, Value pastK,
    bool masked) {
  Type element = type.getElementType();
  Type f32 = b.getF32Type();
  // An operand as loaded: zero past K already (the stages are zero-filled).
  if (factor && factor->isInput())
    return leaf(factor->input);
  // Element by element: the inner computation's scalar operations, as the
  // CUDA-core iterators run them (the widenings factoring looked through
  // are made where an operation takes f32).
  DenseMap<unsigned, Value> fragments;
  std::function<void(const Factor &)> collect = [&](const Factor &f) {
    if (f->isInput()) {
      if (!fragments.count(f->input))
        fragments[f->input] = leaf(f->input);
      return;
    }
    for (const Factor &operand : f->operands)
      collect(operand);
  };
  if (factor)
    collect(factor);
  // `v` as `to` (f16 <-> bf16 through f32).
  std::function<Value(Value, Type)> convert = [&](Value v, Type to) -> Value {
    unsigned from = v.getType().getIntOrFloatBitWidth();
    unsigned bits = to.getIntOrFloatBitWidth();
    if (v.getType() == to)
      return v;
    if (bits > from)
      return arith::ExtFOp::create(b, loc, to, v);
    if (bits < from)
      return arith::TruncFOp::create(b, loc, to, v);
    return arith::TruncFOp::create(b, loc, to, convert(v, f32));
  };
  std::function<Value(const Factor &, ArrayRef<int64_t>)> eval =
      [&](const Factor &f, ArrayRef<int64_t> at) -> Value {
    if (f->isInput())
      return vector::ExtractOp::create(b, loc, fragments[f->input], at);
    if (f->isConstant())
      return arith::ConstantOp::create(
          b, loc, b.getF32FloatAttr(static_cast<float>(*f->constant)));
    SmallVector<Value, 2> args;
    for (const Factor &operand : f->operands)
      args.push_back(eval(operand, at));
    if (f->op) {
      // Operands at the types the operation takes.
      IRMapping mapping;
      for (auto [from, to] : llvm::zip(f->op->getOperands(), args))
        mapping.map(from, convert(to, from.getType()));
      return allowContraction(b.clone(*f->op, mapping))->getResult(0);
    }
    // Factoring's own operations run in their operands' type when they
    // share one (a product of two bf16 rows, rounded once, is the bf16 the
    // tensor cores take), in f32 where the types differ.
    if (llvm::any_of(args,
                     [&](Value v) { return v.getType() != args[0].getType(); }))
      for (Value &arg : args)
        arg = convert(arg, f32);
    OperationState state(loc, f->synthesized, args,
                         TypeRange{args[0].getType()}, {});
    return allowContraction(b.create(state))->getResult(0);
  };
  // A factor that reads no operand: computed once, the same everywhere.
  bool constant = fragments.empty();
  auto build = [&](bool withMask) -> Value {
    Value zero =
        arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
    Value result = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
    Value scalar;
    // Fragments (r, e), or the elements e of a 1-D vector (r = 0).
    bool flat = type.getRank() == 1;
    int64_t rows = flat ? 1 : type.getDimSize(0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t e = 0; e < type.getDimSize(flat ? 0 : 1); ++e) {
        SmallVector<int64_t, 2> at = {r, e};
        if (flat)
          at = {e};
        Value value;
        if (!factor)
          value =
              arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 1.0));
        else if (constant && scalar)
          value = scalar;
        else
          value = convert(eval(factor, at), element);
        scalar = value;
        // A factor that is not zero where its operands are zero-filled is
        // made zero past K.
        if (withMask)
          value = arith::SelectOp::create(b, loc, inK(r, e), value, zero);
        result = vector::InsertOp::create(b, loc, value, result, at);
      }
    }
    return result;
  };
  if (!masked)
    return build(false);
  // Only a step that reaches past K (the last, when K is no multiple of the
  // step) takes the masks; the condition is the same in every thread.
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{type}, pastK,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(b, loc, build(true));
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, build(false));
  return ifOp.getResult(0);
}

std::optional<MmaPrecision>
tilegpu::getTensorCorePrecision(TaskOp task, StringRef matrixMath) {
  if (matrixMath == "fma")
    return std::nullopt;
  // The tensor-core load iterators copy 16-byte chunks along an operand's
  // contiguous dimension: a gathered dimension must be another one.
  // (So must an operand's last axis be its memory's: no trailing unit
  // dimensions.)
  for (unsigned n = 0; n < task.getInputs().size(); ++n) {
    AffineMap map = cast<AffineMapAttr>(task.getIndexingMaps()[n]).getValue();
    if (task.isGathered(n, map.getNumResults() - 1) ||
        cast<MemRefType>(task.getInputs()[n].getType()).getRank() !=
            static_cast<int64_t>(map.getNumResults()))
      return std::nullopt;
  }
  if (task.getAccumulate() != Combiner::add || !task.getCombine().empty() ||
      !task.getAccumulatorType().isF32())
    return std::nullopt;
  std::optional<ProductForm> form = getProductForm(task);
  if (!form)
    return std::nullopt;
  // The operands: of one element type.
  Block &inner = task.getInner().front();
  Type element = inner.getArgument(form->rows.front()).getType();
  for (unsigned n : llvm::concat<const unsigned>(form->rows, form->cols))
    if (inner.getArgument(n).getType() != element)
      return std::nullopt;
  if (element.isF16())
    return MmaPrecision::f16;
  if (element.isBF16())
    return MmaPrecision::bf16;
  std::optional<MmaPrecision> requested = parseMmaPrecision(matrixMath);
  if (element.isF32() && (requested == MmaPrecision::tf32 ||
                          requested == MmaPrecision::tf32x3))
    return requested;
  return std::nullopt;
}

void KernelEmitter::tensorCorePairs(SmallVector<Value> &localRows,
                                    SmallVector<Value> &localCols) {
  Value warp = arith::DivUIOp::create(b, loc, tid, idx(32));
  lane = arith::RemUIOp::create(b, loc, tid, idx(32));
  warpRow = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, warp, idx(shape.warpsN())),
      idx(8 * shape.tm));
  warpCol = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, warp, idx(shape.warpsN())),
      idx(4 * shape.tn));
  // Lane (g, t) holds C[g][2t], C[g][2t + 1], C[g + 8][2t], C[g + 8][2t + 1]
  // of every 16 x 8 product.
  Value g = arith::DivUIOp::create(b, loc, lane, idx(4));
  Value twoT = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, lane, idx(4)), idx(2));
  Value rowOfLane = arith::AddIOp::create(b, loc, warpRow, g);
  Value colOfLane = arith::AddIOp::create(b, loc, warpCol, twoT);
  for (int64_t r = 0; r < shape.tm; ++r)
    localRows.push_back(
        arith::AddIOp::create(b, loc, rowOfLane, idx((r / 2) * 16 + (r % 2) * 8)));
  for (int64_t c = 0; c < shape.tn; ++c)
    localCols.push_back(
        arith::AddIOp::create(b, loc, colOfLane, idx((c / 2) * 8 + c % 2)));
}

Value KernelEmitter::swizzle(int64_t rowLength, Value row, Value col) {
  int64_t chunk = 16 * 8 / getMmaElementType(b.getContext(), *shape.mma)
                               .getIntOrFloatBitWidth();
  int64_t chunksPerRow = rowLength / chunk;
  // Rows of at least 128 bytes: the chunk's low three bits XOR the row's;
  // shorter rows: XOR the 128-byte line's index.
  Value pattern =
      chunksPerRow >= 8
          ? arith::RemUIOp::create(b, loc, row, idx(8)).getResult()
          : arith::RemUIOp::create(
                b, loc, arith::DivUIOp::create(b, loc, row, idx(8 / chunksPerRow)),
                idx(8))
                .getResult();
  Value flatChunk = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, row, idx(chunksPerRow)),
      arith::DivUIOp::create(b, loc, col, idx(chunk)));
  Value physical = arith::XOrIOp::create(b, loc, flatChunk, pattern);
  return arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, physical, idx(chunk)),
      arith::RemUIOp::create(b, loc, col, idx(chunk)));
}

Value KernelEmitter::storageIndex(int p, bool kContiguous, Value row,
                                  Value col) {
  int64_t span = p == 0 ? shape.bm : shape.bn;
  return kContiguous ? swizzle(shape.bk, row, col) : swizzle(span, row, col);
}

void KernelEmitter::resolveTensorCoreRows() {
  int64_t chunk =
      128 / getMmaElementType(b.getContext(), *shape.mma).getIntOrFloatBitWidth();
  for (unsigned slot = 0; slot < mmaInputs.size(); ++slot) {
    unsigned n = mmaInputs[slot];
    // Spatial-contiguous operands read consecutive coordinates: none is
    // gathered (getTensorCorePrecision) or sorted.
    if (!isKContiguous(task, n) || !readsResolvedRows(n))
      continue;
    int p = side(slot);
    int64_t span = p == 0 ? shape.bm : shape.bn;
    Value base = p == 0 ? rowBase : colBase;
    Value extent = extents[p == 0 ? TaskOp::I : TaskOp::J];
    int64_t chunksPerRow = shape.bk / chunk;
    int64_t chunks = span * chunksPerRow;
    for (int64_t first = 0; first < chunks; first += shape.threads()) {
      Value id = arith::AddIOp::create(b, loc, tid, idx(first));
      Value s = arith::AddIOp::create(
          b, loc, base, arith::DivUIOp::create(b, loc, id, idx(chunksPerRow)));
      Value safeS = arith::SelectOp::create(b, loc, less(s, extent), s, idx(0));
      resolvedRows[{slot, first}] = resolveSpatial(n, safeS);
    }
  }
}

Value KernelEmitter::issueTensorCoreStage(Value kTile, Value stage) {
  MLIRContext *ctx = b.getContext();
  Type element = getMmaElementType(ctx, *shape.mma);
  int64_t chunk = 128 / element.getIntOrFloatBitWidth();
  Value k0 = arith::MulIOp::create(b, loc, kTile, idx(shape.bk));
  // Segments of the reduction: the block's steps start at its tile's first
  // position in the key order.
  if (kBegin)
    k0 = arith::AddIOp::create(b, loc, kBegin, k0);
  Value stageBase =
      arith::MulIOp::create(b, loc, stage, idx(shape.stageElements()));
  Value extentK = extents[TaskOp::K];
  SmallVector<Value> tokens;
  for (unsigned slot = 0; slot < mmaInputs.size(); ++slot) {
    unsigned n = mmaInputs[slot];
    int p = side(slot);
    int64_t span = p == 0 ? shape.bm : shape.bn;
    Value base = p == 0 ? rowBase : colBase;
    Value extent = extents[p == 0 ? TaskOp::I : TaskOp::J];
    bool kContiguous = isKContiguous(task, n);
    int64_t rowLength = kContiguous ? shape.bk : span;
    int64_t rows = kContiguous ? span : shape.bk;
    int64_t chunksPerRow = rowLength / chunk;
    int64_t chunks = rows * chunksPerRow;
    Value offset = arith::AddIOp::create(
        b, loc, arith::AddIOp::create(b, loc, mmaBase, stageBase),
        idx(slotOffset(slot)));
    for (int64_t first = 0; first < chunks; first += shape.threads()) {
      Value id = arith::AddIOp::create(b, loc, tid, idx(first));
      Value row = arith::DivUIOp::create(b, loc, id, idx(chunksPerRow));
      Value col = arith::MulIOp::create(
          b, loc, arith::RemUIOp::create(b, loc, id, idx(chunksPerRow)),
          idx(chunk));
      // Spatial coordinate and k of the chunk's first element; elements
      // read (the rest of the 16 bytes is zero-filled).
      Value s = arith::AddIOp::create(b, loc, base, kContiguous ? row : col);
      Value k = arith::AddIOp::create(b, loc, k0, kContiguous ? col : row);
      Value inRange = arith::AndIOp::create(b, loc, less(s, extent),
                                            less(k, extentK));
      Value left = kContiguous ? arith::SubIOp::create(b, loc, extentK, k)
                               : arith::SubIOp::create(b, loc, extent, s);
      Value count = arith::SelectOp::create(b, loc, inRange,
                                            minIndex(left, idx(chunk)), idx(0));
      // A chunk that reads nothing still names an aligned address in the
      // array: its first element.
      // A row read through an index array: its index, read before the
      // pipeline (the row is in range whenever the chunk reads).
      auto resolved = resolvedRows.find({slot, first});
      Value safeS =
          resolved != resolvedRows.end()
              ? resolved->second
              : arith::SelectOp::create(b, loc, inRange, s, idx(0)).getResult();
      Value safeK = arith::SelectOp::create(b, loc, inRange, k, idx(0));
      SmallVector<Value, 3> at = inputIndices(
          n, safeS, safeK, /*resolved=*/resolved != resolvedRows.end());
      Value dst = arith::AddIOp::create(b, loc, offset,
                                        storageIndex(p, kContiguous, row, col));
      auto copy = [&] {
        return nvgpu::DeviceAsyncCopyOp::create(
            b, loc, nvgpu::DeviceAsyncTokenType::get(ctx), mmaTiles,
            ValueRange{dst}, arg(task.getInputs()[n]), at,
            b.getIndexAttr(chunk), count, b.getUnitAttr());
      };
      if (first + shape.threads() <= chunks) {
        tokens.push_back(copy());
        continue;
      }
      // The last round of a tile that does not divide evenly: the threads
      // past it copy nothing.
      auto guardOp = scf::IfOp::create(b, loc, less(id, idx(chunks)),
                                        /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(guardOp.thenBlock());
      copy();
    }
  }
  return nvgpu::DeviceAsyncCreateGroupOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(ctx), tokens);
}

SmallVector<Value> KernelEmitter::emitTensorCoreReduction() {
  MLIRContext *ctx = b.getContext();
  MmaPrecision precision = *shape.mma;
  Type element = getMmaElementType(ctx, precision);
  int64_t chunk = 128 / element.getIntOrFloatBitWidth();
  int64_t mmaK = getMmaK(precision);
  int64_t stages = shape.stages;
  int64_t stageElements = shape.stageElements();
  int64_t mi = shape.tm / 2, ni = shape.tn / 2;
  bool wide = element.getIntOrFloatBitWidth() == 32;
  VectorType accType = VectorType::get({2, 2}, b.getF32Type());
  Value zeroAcc = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.0f)));

  // (Segments of the reduction: the steps of the block's tile, from
  // kBegin; none for a block past the tiles, whose range is empty.)
  Value kExtent = kBegin ? arith::SubIOp::create(b, loc, extents[TaskOp::K],
                                                 kBegin)
                               .getResult()
                         : extents[TaskOp::K];
  Value kTiles = arith::CeilDivUIOp::create(b, loc, kExtent, idx(shape.bk));
  resolveTensorCoreRows();
  // The prologue: the first stages - 1 tiles in flight. Every tile is one
  // group of copies, zero-filled past K, so that counting groups is exact:
  // at step kt, the groups younger than tile kt's are always stages - 2.
  Value anyToken;
  for (int64_t s = 0; s + 1 < stages; ++s)
    anyToken = issueTensorCoreStage(idx(s), idx(s));

  SmallVector<Value> inits(mi * ni, zeroAcc);
  auto loop = scf::ForOp::create(b, loc, idx(0), kTiles, idx(1), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    // Tile kt has landed (its copies and, through the barrier, every
    // thread's), and every warp is done with the stage the next copies
    // overwrite (read at step kt - 1).
    nvgpu::DeviceAsyncWaitOp::create(b, loc, anyToken,
                                     b.getI32IntegerAttr(stages - 2));
    gpu::BarrierOp::create(b, loc);
    Value ahead = arith::AddIOp::create(b, loc, kt, idx(stages - 1));
    issueTensorCoreStage(ahead, arith::RemUIOp::create(b, loc, ahead, idx(stages)));
    Value stageBase = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, kt, idx(stages)),
        idx(stageElements));

    // The fragment reads of the operand in stage tile `slot`.
    auto tileIndex = [&](unsigned slot, Value spatial, Value k) {
      bool kContiguous = isKContiguous(task, mmaInputs[slot]);
      int p = side(slot);
      Value offset = arith::AddIOp::create(
          b, loc, arith::AddIOp::create(b, loc, mmaBase, stageBase),
          idx(slotOffset(slot)));
      return arith::AddIOp::create(
          b, loc, offset,
          kContiguous ? storageIndex(p, true, spatial, k)
                      : storageIndex(p, false, k, spatial));
    };
    Value q = arith::DivUIOp::create(b, loc, lane, idx(8));
    Value r8 = arith::RemUIOp::create(b, loc, lane, idx(8));
    Value g = arith::DivUIOp::create(b, loc, lane, idx(4));
    Value t = arith::RemUIOp::create(b, loc, lane, idx(4));
    auto bit = [&](Value v, int64_t mask) {
      return arith::AndIOp::create(b, loc, v, idx(mask)).getResult();
    };
    auto add = [&](Value x, Value y) {
      return arith::AddIOp::create(b, loc, x, y).getResult();
    };
    auto mulc = [&](Value x, int64_t c) {
      return arith::MulIOp::create(b, loc, x, idx(c)).getResult();
    };
    // 32-bit operands stored spatial-contiguous: no ldmatrix transposes
    // them; lanes read their elements one by one.
    auto scalarFragment = [&](unsigned slot,
                              ArrayRef<std::pair<Value, Value>> at) {
      SmallVector<Value> values;
      for (auto [spatial, k] : at)
        values.push_back(
            memref::LoadOp::create(b, loc, mmaTiles,
                                   ValueRange{tileIndex(slot, spatial, k)}));
      return vector::FromElementsOp::create(
          b, loc, VectorType::get({int64_t(at.size()), 1}, element), values);
    };

    SmallVector<Value> accs(loop.getRegionIterArgs());
    unsigned rowSlots = product.rows.size();
    for (int64_t kk = 0; kk < shape.bk; kk += mmaK) {
      Value kBase = idx(kk);
      // The first k of this step, and whether the step reaches past K
      // (computed factors are masked there).
      Value kStep, stepPastK;
      if (!product.isPlain()) {
        kStep = add(mulc(kt, shape.bk), kBase);
        if (kBegin)
          kStep = add(kBegin, kStep);
        stepPastK = less(extents[TaskOp::K], add(kStep, idx(mmaK)));
      }
      // A: one 16 x mmaK fragment per 16 rows (four 8 x 8 matrices of
      // 16-bit elements: rows +0/+8 by lane bit 3, k +0/+chunk by bit 4).
      auto rowFragments = [&](unsigned slot) {
        SmallVector<Value> fragments;
        bool aKContiguous = isKContiguous(task, mmaInputs[slot]);
        for (int64_t m = 0; m < mi; ++m) {
          Value rowBase16 = add(warpRow, idx(16 * m));
          VectorType type = getMmaFragmentType(ctx, precision, 4);
          if (aKContiguous) {
            Value row = add(rowBase16, add(r8, mulc(bit(q, 1), 8)));
            Value k = add(kBase, mulc(arith::DivUIOp::create(b, loc, q, idx(2)),
                                      chunk));
            fragments.push_back(nvgpu::LdMatrixOp::create(
                b, loc, type, mmaTiles, ValueRange{tileIndex(slot, row, k)},
                /*transpose=*/false, /*numTiles=*/4));
          } else if (!wide) {
            // Stored [k][row]: matrix q is rows +8 (q & 1), k +8 (q >> 1).
            Value row = add(rowBase16, mulc(bit(q, 1), 8));
            Value k = add(kBase, add(r8, mulc(arith::DivUIOp::create(
                                                  b, loc, q, idx(2)),
                                              8)));
            fragments.push_back(nvgpu::LdMatrixOp::create(
                b, loc, type, mmaTiles, ValueRange{tileIndex(slot, row, k)},
                /*transpose=*/true, /*numTiles=*/4));
          } else {
            Value row = add(rowBase16, g), row8 = add(row, idx(8));
            Value k = add(kBase, t), k4 = add(k, idx(4));
            fragments.push_back(scalarFragment(
                slot, {{row, k}, {row8, k}, {row, k4}, {row8, k4}}));
          }
        }
        return fragments;
      };
      // B: one mmaK x 8 fragment per 8 columns, two per ldmatrix x4
      // (columns +0/+8 by lane bit 4, k +0/+chunk by bit 3).
      auto colFragments = [&](unsigned slot) {
        SmallVector<Value> fragments;
        bool bKContiguous = isKContiguous(task, mmaInputs[slot]);
        VectorType pairType = getMmaFragmentType(ctx, precision, 2);
        for (int64_t n = 0; n < ni; n += 2) {
          Value colBase8 = add(warpCol, idx(8 * n));
          VectorType type = getMmaFragmentType(ctx, precision, 4);
          Value four;
          if (bKContiguous) {
            Value col = add(colBase8, add(r8, mulc(arith::DivUIOp::create(
                                                       b, loc, q, idx(2)),
                                                   8)));
            Value k = add(kBase, mulc(bit(q, 1), chunk));
            four = nvgpu::LdMatrixOp::create(b, loc, type, mmaTiles,
                                             ValueRange{tileIndex(slot, col, k)},
                                             /*transpose=*/false, 4);
          } else if (!wide) {
            // Stored [k][col]: matrix q is k +8 (q & 1), columns +8 (q >> 1).
            Value col = add(colBase8, mulc(arith::DivUIOp::create(
                                               b, loc, q, idx(2)),
                                           8));
            Value k = add(kBase, add(r8, mulc(bit(q, 1), 8)));
            four = nvgpu::LdMatrixOp::create(b, loc, type, mmaTiles,
                                             ValueRange{tileIndex(slot, col, k)},
                                             /*transpose=*/true, 4);
          }
          for (int64_t h = 0; h < 2; ++h) {
            if (four) {
              // Registers 2h and 2h + 1 of the four.
              Value pair =
                  arith::ConstantOp::create(b, loc, b.getZeroAttr(pairType));
              for (int64_t r = 0; r < 2; ++r)
                pair = vector::InsertOp::create(
                    b, loc,
                    vector::ExtractOp::create(b, loc, four,
                                              ArrayRef<int64_t>{2 * h + r}),
                    pair, ArrayRef<int64_t>{r});
              fragments.push_back(pair);
              continue;
            }
            Value col = add(add(colBase8, idx(8 * h)), g);
            Value k = add(kBase, t);
            fragments.push_back(
                scalarFragment(slot, {{col, k}, {col, add(k, idx(4))}}));
          }
        }
        return fragments;
      };
      // Every operand's fragments, read once; each term's factors computed
      // from them (an operand itself for a plain product).
      SmallVector<SmallVector<Value>> fragments;
      for (unsigned slot = 0; slot < mmaInputs.size(); ++slot)
        fragments.push_back(slot < rowSlots ? rowFragments(slot)
                                            : colFragments(slot));
      auto slotOf = [&](unsigned input) {
        return static_cast<unsigned>(llvm::find(mmaInputs, input) -
                                     mmaInputs.begin());
      };
      for (const ProductTerm &term : product.terms) {
        SmallVector<Value> aFragments, bFragments;
        VectorType aType = getMmaFragmentType(ctx, precision, 4);
        VectorType bType = getMmaFragmentType(ctx, precision, 2);
        // Element (r, e) of a lane's fragment lies at k = kStep + 2t + e +
        // 8 (r / 2) in A and kStep + 2t + e + 8 r in B (16-bit operands),
        // kStep + t + 4 (r / 2) and kStep + t + 4 r (tf32).
        auto inK = [&](bool isA, int64_t r, int64_t e) -> Value {
          int64_t half = isA ? r / 2 : r;
          Value k = wide ? add(t, idx(4 * half))
                         : add(mulc(t, 2), idx(e + 8 * half));
          return less(add(kStep, k), extents[TaskOp::K]);
        };
        // A factor of no operand (a term of one side's value alone: the
        // other side's ones) is the same fragment for every row or
        // column: computed once a step.
        // A term is zero past K when either factor is zero where its
        // operands are (the stages' zero fill); otherwise its column
        // factor is masked there.
        bool maskColumn =
            !vanishesAtZero(term.row) && !vanishesAtZero(term.col);
        auto fragmentsOf = [&](const Factor &factor, VectorType type,
                               int64_t count, bool isA) {
          SmallVector<Value> values;
          for (int64_t x = 0; x < count; ++x) {
            if (x > 0 && isConstantFactor(factor)) {
              values.push_back(values.front());
              continue;
            }
            values.push_back(evaluateFactor(
                factor, type,
                [&](unsigned n) { return fragments[slotOf(n)][x]; },
                [&](int64_t r, int64_t e) { return inK(isA, r, e); },
                stepPastK, /*masked=*/!isA && maskColumn));
          }
          return values;
        };
        aFragments = fragmentsOf(term.row, aType, mi, /*isA=*/true);
        bFragments = fragmentsOf(term.col, bType, ni, /*isA=*/false);
        for (int64_t m = 0; m < mi; ++m)
          for (int64_t n = 0; n < ni; ++n)
            accs[m * ni + n] = buildMmaSync(b, loc, precision, aFragments[m],
                                            bFragments[n], accs[m * ni + n]);
      }
    }
    scf::YieldOp::create(b, loc, accs);
  }
  // No copy outlives the kernel's use of shared memory.
  nvgpu::DeviceAsyncWaitOp::create(b, loc, anyToken, b.getI32IntegerAttr(0));

  // Accumulator (m, n)[h][c] is pair (2m + h, 2n + c) of the thread.
  SmallVector<Value> result(shape.tm * shape.tn);
  for (int64_t m = 0; m < mi; ++m)
    for (int64_t n = 0; n < ni; ++n)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t c = 0; c < 2; ++c)
          result[(2 * m + h) * shape.tn + 2 * n + c] = vector::ExtractOp::create(
              b, loc, loop.getResult(m * ni + n), ArrayRef<int64_t>{h, c});
  return result;
}

Value mlir::kge::tilegpu::inlinePTX(OpBuilder &b, Location loc, Type result,
                                    ValueRange operands, StringRef text,
                                    StringRef constraints, bool sideEffects) {
  auto op = LLVM::InlineAsmOp::create(
      b, loc, result ? TypeRange{result} : TypeRange{}, operands, text,
      constraints, sideEffects, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  return result ? op.getResult(0) : Value();
}

SmallVector<Value> KernelEmitter::emitWarpgroupReduction() {
  MLIRContext *ctx = b.getContext();
  MmaPrecision precision = *shape.mma;
  assert((shape.threadStages || (product.isPlain() && mmaInputs.size() == 2)) &&
         "warpgroup MMA on TMA loads multiplies one operand a side");
  int64_t stages = shape.stages;
  int64_t stageElements = shape.stageElements();
  int64_t n = shape.bn;
  int64_t elementBytes = getMmaElementBits(precision) / 8;
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  Type element = getMmaElementType(ctx, precision);
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto accType = LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(n / 2, f32));
  Value zero = LLVM::ZeroOp::create(b, loc, accType);
  Value kTiles = arith::CeilDivUIOp::create(b, loc, extents[TaskOp::K],
                                            idx(shape.bk));
  // Stages the threads write hold one term's factors each: a step of k is
  // as many stages as the product form has terms.
  int64_t terms = shape.threadStages ? product.terms.size() : 1;
  Value steps = arith::MulIOp::create(b, loc, kTiles, idx(terms));
  Value warpgroup = arith::DivUIOp::create(b, loc, tid, idx(128));
  auto eq = [&](Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y)
        .getResult();
  };

  // (The producer threads write every stage k-major.)
  bool kContiguous[2] = {
      shape.threadStages || isKContiguous(task, mmaInputs[0]),
      shape.threadStages || isKContiguous(task, mmaInputs[1])};
  // 128-byte rows of the swizzled tiles, and the k of one product (32
  // bytes: 16 of 16-bit operands, 8 of tf32 ones).
  int64_t boxColumns = 128 / elementBytes;
  int64_t kStep = 32 / elementBytes;
  assert((precision != MmaPrecision::tf32 || (kContiguous[0] && kContiguous[1])) &&
         "warpgroup MMA takes tf32 operands k-major only");

  // A cluster of `clusterM` blocks along M shares the B tile: each block
  // loads its part of it, multicast to every block of the cluster.
  int64_t cluster = shape.clusterM;
  Value rank;
  if (cluster > 1)
    rank = gpu::ClusterBlockIdOp::create(b, loc, gpu::Dimension::y);

  // Barriers: full[s] (the stage's tile has landed: the leader's arrival
  // and the copies' bytes, the cluster's multicasts included; or every
  // producer thread's arrival after its writes) and empty[s]
  // (both warpgroups' products of the stage are done, in every block of
  // the cluster: a block's multicast writes into all of them).
  auto barriersType = nvgpu::MBarrierGroupType::get(ctx, workgroup, 2 * stages);
  Value barriers = nvgpu::MBarrierCreateOp::create(b, loc, barriersType);
  Value leader = eq(tid, idx(0));
  inThen(leader, [&] {
    for (int64_t s = 0; s < stages; ++s) {
      nvgpu::MBarrierInitOp::create(
          b, loc, barriers,
          idx(shape.threadStages ? shape.producerThreads() : 1), idx(s),
          Value());
      nvgpu::MBarrierInitOp::create(b, loc, barriers, idx(2 * cluster),
                                    idx(stages + s), Value());
    }
    NVVM::FenceMbarrierInitOp::create(b, loc);
  });
  // The cluster's barriers are initialized before any block multicasts.
  auto clusterSync = [&] {
    NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
  };
  if (cluster > 1)
    clusterSync();
  else
    gpu::BarrierOp::create(b, loc);

  // The load iterator: one thread moves tile t into stage `stage` with TMA
  // boxes of 128-byte rows: a k-contiguous operand in one box of
  // span x block-k, a spatial-contiguous one in blocks of 128 bytes.
  auto issue = [&](Value t, Value stage) {
    nvgpu::MBarrierArriveExpectTxOp::create(
        b, loc, barriers, idx(stageElements * elementBytes), stage, Value());
    Value k0 = arith::MulIOp::create(b, loc, t, idx(shape.bk));
    Value stageStart = arith::AddIOp::create(
        b, loc, mmaBase, arith::MulIOp::create(b, loc, stage, idx(stageElements)));
    for (int p = 0; p < 2; ++p) {
      int64_t span = p == 0 ? shape.bm : shape.bn;
      Value base = p == 0 ? rowBase : colBase;
      int64_t rows = kContiguous[p] ? span : shape.bk;
      int64_t boxes = kContiguous[p] ? 1 : span / boxColumns;
      // B in a cluster: k-contiguous, one box per block of span / cluster
      // rows; spatial-contiguous, the blocks share its boxes out. Each
      // block loads its boxes multicast.
      if (p == 1 && cluster > 1 && kContiguous[p]) {
        rows = span / cluster;
        boxes = cluster;
      }
      auto boxType = MemRefType::get({rows, boxColumns}, element,
                                     MemRefLayoutAttrInterface(), workgroup);
      auto mapType = nvgpu::TensorMapDescriptorType::get(
          ctx, boxType, nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
          nvgpu::TensorMapL2PromoKind::L2PROMO_128B,
          nvgpu::TensorMapOOBKind::OOB_ZERO,
          nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
      Value map = UnrealizedConversionCastOp::create(b, loc, mapType,
                                                     tensorMaps[p])
                      .getResult(0);
      for (int64_t box = 0; box < boxes; ++box) {
        int64_t offset =
            (p == 0 ? 0 : shape.bm * shape.bk) + box * rows * boxColumns;
        Value byteOffset = arith::MulIOp::create(
            b, loc, arith::AddIOp::create(b, loc, stageStart, idx(offset)),
            idx(elementBytes));
        Value dst = memref::ViewOp::create(b, loc, boxType, mmaBytes,
                                           byteOffset, ValueRange{});
        // Coordinates: the contiguous dimension first.
        SmallVector<Value> at =
            kContiguous[p]
                ? SmallVector<Value>{k0, arith::AddIOp::create(
                                             b, loc, base, idx(box * rows))}
                : SmallVector<Value>{
                      arith::AddIOp::create(b, loc, base,
                                            idx(boxColumns * box)),
                      k0};
        if (p == 0 || cluster == 1) {
          nvgpu::TmaAsyncLoadOp::create(b, loc, dst, barriers, map, at, stage,
                                        Value(), Value());
          continue;
        }
        // Box `box` of B is block box * cluster / boxes's to load.
        inThen(eq(rank, idx(box * cluster / boxes)), [&] {
          nvgpu::TmaAsyncLoadOp::create(
              b, loc, dst, barriers, map, at, stage,
              arith::ConstantIntOp::create(b, loc, b.getI16Type(),
                                           (1 << cluster) - 1),
              Value());
        });
      }
    }
  };
  // A warpgroup's 64 rows of A: 64 rows of 128 bytes (k-contiguous), or
  // the 64-column block of the MN-major tile.
  auto i64c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i64, v).getResult();
  };
  // wgmma's shared-memory matrix descriptor: start address, leading and
  // stride byte offsets (in 16-byte units), 128-byte swizzle.
  auto descriptor = [&](Value address, int64_t leading, int64_t stride) {
    Value start = arith::ShRUIOp::create(
        b, loc, arith::AndIOp::create(b, loc, address, i64c(0x3FFFF)),
        i64c(4));
    int64_t fields = ((leading >> 4) << 16) | ((stride >> 4) << 32) |
                     (int64_t(1) << 62);
    return arith::OrIOp::create(b, loc, start, i64c(fields)).getResult();
  };

  // The consumers (two warpgroups) compute; the producer warp's first lane
  // loads, up to `stages` tiles ahead of them.
  // The role is the warp's, read from lane 0 by a shuffle that ptxas sees
  // (LLVM folds gpu.shuffle's of a warp-uniform value away), so that it
  // knows the branch uniform: wgmma under a branch it must assume
  // divergent is serialized (ptxas's C7520).
  Type i32 = b.getI32Type();
  Value warp = arith::IndexCastOp::create(
      b, loc, i32, arith::DivUIOp::create(b, loc, tid, idx(32)));
  Value uniformWarp =
      inlinePTX(b, loc, i32, warp, "shfl.sync.idx.b32 $0, $1, 0, 31, -1;",
                "=r,r", /*sideEffects=*/false);
  auto split = scf::IfOp::create(
      b, loc, TypeRange{accType},
      arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ult, uniformWarp,
          arith::ConstantIntOp::create(b, loc, i32, shape.threads() / 32)),
      /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(split.elseBlock());
    if (shape.threadStages)
      emitThreadStageProducer(barriers, kTiles);
    else
      inThen(eq(tid, idx(shape.threads())), [&] {
        auto produce = scf::ForOp::create(b, loc, idx(0), kTiles, idx(1));
        OpBuilder::InsertionGuard loopGuard(b);
        b.setInsertionPointToStart(produce.getBody());
        Value t = produce.getInductionVar();
        issue(t, awaitFreeStage(barriers, t, stages));
      });
    scf::YieldOp::create(b, loc, zero);
  }
  b.setInsertionPointToStart(split.thenBlock());
  Value aRows = arith::IndexCastOp::create(
      b, loc, i64,
      arith::MulIOp::create(b, loc, warpgroup,
                            idx(kContiguous[0] ? 64 * 128 : shape.bk * 128)));

  auto loop =
      scf::ForOp::create(b, loc, idx(0), steps, idx(1), ValueRange{zero});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value stage = arith::RemUIOp::create(b, loc, kt, idx(stages));
    nvgpu::MBarrierTryWaitParityOp::create(
        b, loc, barriers,
        phaseParity(arith::DivUIOp::create(b, loc, kt, idx(stages))),
        idx(10000000), stage);
    Value stageStart = arith::MulIOp::create(
        b, loc,
        arith::AddIOp::create(
            b, loc, mmaBase,
            arith::MulIOp::create(b, loc, stage, idx(stageElements))),
        idx(elementBytes));
    Value stageAddress = arith::AddIOp::create(
        b, loc, mmaAddress,
        arith::IndexCastOp::create(b, loc, i64, stageStart));
    Value aAddress = arith::AddIOp::create(b, loc, stageAddress, aRows);
    Value bAddress = arith::AddIOp::create(
        b, loc, stageAddress, i64c(shape.bm * shape.bk * elementBytes));
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    Value acc = loop.getRegionIterArgs().front();
    auto type = precision == MmaPrecision::bf16   ? NVVM::WGMMATypes::bf16
                : precision == MmaPrecision::tf32 ? NVVM::WGMMATypes::tf32
                                                  : NVVM::WGMMATypes::f16;
    for (int64_t kk = 0; kk < shape.bk / kStep; ++kk) {
      // K-major: kStep more elements of k are 32 bytes along the swizzled
      // rows; MN-major: kStep more rows of 128 bytes.
      auto operand = [&](int p, Value address) {
        if (kContiguous[p])
          return descriptor(
              arith::AddIOp::create(b, loc, address,
                                    i64c(kk * kStep * elementBytes)),
              16, 1024);
        return descriptor(
            arith::AddIOp::create(b, loc, address, i64c(kk * kStep * 128)),
            shape.bk * 128, 1024);
      };
      acc = NVVM::WgmmaMmaAsyncOp::create(
          b, loc, accType, acc, operand(0, aAddress), operand(1, bAddress),
          NVVM::MMAShapeAttr::get(ctx, 64, n, kStep), type, type,
          NVVM::WGMMATypes::f32, NVVM::WGMMAScaleOut::one,
          NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
          kContiguous[0] ? NVVM::MMALayout::row : NVVM::MMALayout::col,
          kContiguous[1] ? NVVM::MMALayout::col : NVVM::MMALayout::row,
          /*satfinite=*/nullptr);
    }
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    // The products of step kt - 1 are done: its stage is free.
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
    Value previous = arith::RemUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, kt, idx(stages - 1)),
        idx(stages));
    inThen(arith::AndIOp::create(
               b, loc,
               arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, kt,
                                     idx(0)),
               eq(arith::RemUIOp::create(b, loc, tid, idx(128)), idx(0))),
           [&] {
             Value empty = arith::AddIOp::create(b, loc, previous, idx(stages));
             if (cluster == 1) {
               nvgpu::MBarrierArriveOp::create(
                   b, loc, nvgpu::MBarrierTokenType::get(ctx), barriers,
                   empty);
               return;
             }
             // Released in every block of the cluster (mapa: the barrier
             // at the same offset in block r's shared memory).
             Value address = nvgpu::MBarrierGetOp::create(
                 b, loc, b.getI32Type(), barriers, empty);
             for (int64_t r = 0; r < cluster; ++r)
               inlinePTX(b, loc, Type(),
                         ValueRange{address, arith::ConstantIntOp::create(
                                                 b, loc, b.getI32Type(), r)},
                         "{\n.reg .b32 remote;\n"
                         "mapa.shared::cluster.u32 remote, $0, $1;\n"
                         "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}",
                         "r,r", /*sideEffects=*/true);
           });
    scf::YieldOp::create(b, loc, acc);
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  scf::YieldOp::create(b, loc, loop.getResult(0));
  b.setInsertionPointAfter(split);
  // No block leaves while another of its cluster may still release a stage
  // in its shared memory.
  if (cluster > 1)
    clusterSync();

  // Register 4j + 2h + c holds pair (h, 2j + c) of the thread: rows g and
  // g + 8 of its warp's 16, columns 8j + 2t + c.
  SmallVector<Value> result(shape.tm * shape.tn);
  for (int64_t j = 0; j < n / 8; ++j)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t c = 0; c < 2; ++c)
        result[h * shape.tn + 2 * j + c] = LLVM::ExtractValueOp::create(
            b, loc, split.getResult(0), 4 * j + 2 * h + c);
  return result;
}

Value KernelEmitter::phaseParity(Value count) {
  return arith::IndexCastOp::create(
      b, loc, b.getI1Type(), arith::RemUIOp::create(b, loc, count, idx(2)));
}

Value KernelEmitter::awaitFreeStage(Value barriers, Value step,
                                    int64_t stages) {
  Value stage = arith::RemUIOp::create(b, loc, step, idx(stages));
  // Past the first round, the stage's previous tile must be released.
  inThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, step,
                               idx(stages)),
         [&] {
           nvgpu::MBarrierTryWaitParityOp::create(
               b, loc, barriers,
               phaseParity(arith::SubIOp::create(
                   b, loc, arith::DivUIOp::create(b, loc, step, idx(stages)),
                   idx(1))),
               idx(10000000), arith::AddIOp::create(b, loc, stage, idx(stages)));
         });
  return stage;
}

Value KernelEmitter::roundToTF32(Value value) {
  auto type = cast<VectorType>(value.getType());
  Type f32 = b.getF32Type();
  Value result = value;
  for (int64_t e = 0; e < type.getNumElements(); ++e) {
    SmallVector<int64_t, 1> at = {e};
    Value x = vector::ExtractOp::create(b, loc, value, at);
    Value bits = NVVM::ConvertFloatToTF32Op::create(
        b, loc, b.getI32Type(), x, NVVM::FPRoundingMode::RNA,
        NVVM::SaturationMode::NONE, /*relu=*/false);
    result = vector::InsertOp::create(
        b, loc, arith::BitcastOp::create(b, loc, f32, bits), result, at);
  }
  return result;
}

void KernelEmitter::emitThreadStageProducer(Value barriers, Value kTiles) {
  MLIRContext *ctx = b.getContext();
  MmaPrecision precision = *shape.mma;
  Type element = getMmaElementType(ctx, precision);
  int64_t elementBytes = getMmaElementBits(precision) / 8;
  int64_t stages = shape.stages;
  int64_t terms = product.terms.size();
  // A thread writes 16-byte chunks of 128-byte rows (block-k elements): a
  // pass of the warpgroup covers rowsPerPass rows of a tile.
  int64_t chunk = 16 / elementBytes;
  int64_t chunksPerRow = shape.bk / chunk;
  int64_t rowsPerPass = shape.producerThreads() / chunksPerRow;
  Value producer = arith::SubIOp::create(b, loc, tid, idx(shape.threads()));
  Value col = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, producer, idx(chunksPerRow)),
      idx(chunk));
  Value firstRow = arith::DivUIOp::create(b, loc, producer, idx(chunksPerRow));
  Value extentK = extents[TaskOp::K];

  // Each side's operands (the leaves of its factors), its first row and
  // extent: rows are read through index arrays where gathered; a row past
  // the extent reads row 0 (its products are never stored).
  struct Side {
    int64_t span, passes;
    SmallVector<unsigned, 4> leaves;
    Value base, extent;
  };
  Side sides[2];
  for (int p = 0; p < 2; ++p) {
    Side &side = sides[p];
    side.span = p == 0 ? shape.bm : shape.bn;
    side.passes = side.span / rowsPerPass;
    // (The operands its factors read: a row operand the inner computation
    // ignores is not read.)
    std::function<void(const Factor &)> collect = [&](const Factor &f) {
      if (!f)
        return;
      if (f->isInput()) {
        if (!llvm::is_contained(side.leaves, f->input))
          side.leaves.push_back(f->input);
        return;
      }
      for (const Factor &operand : f->operands)
        collect(operand);
    };
    for (const ProductTerm &term : product.terms)
      collect(p == 0 ? term.row : term.col);
    side.base = p == 0 ? rowBase : colBase;
    side.extent = extents[p == 0 ? TaskOp::I : TaskOp::J];
  }
  // A leaf's row at a pass: resolved at every step (an index read that
  // hits L1), not once before them: rows held across the steps, with their
  // addresses, take the producer past its registers.
  auto rowOf = [&](Side &side, size_t leaf, int64_t pass) -> Value {
    unsigned n = side.leaves[leaf];
    Value s = arith::AddIOp::create(
        b, loc, side.base,
        arith::AddIOp::create(b, loc, firstRow, idx(pass * rowsPerPass)));
    Value safe =
        arith::SelectOp::create(b, loc, less(s, side.extent), s, idx(0));
    return readsResolvedRows(n) ? resolveSpatial(n, safe) : safe;
  };

  auto loop = scf::ForOp::create(b, loc, idx(0), kTiles, idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value kt = loop.getInductionVar();
  // The step's stages (one per term), once the consumers have released
  // them (past the first round).
  SmallVector<Value> stageOf;
  for (int64_t t = 0; t < terms; ++t) {
    Value step = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, kt, idx(terms)), idx(t));
    stageOf.push_back(awaitFreeStage(barriers, step, stages));
  }
  Value k = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, kt, idx(shape.bk)), col);
  // Whether the step lies within K (every step but a last partial one; the
  // same in every thread): its chunks are read whole.
  Value whole = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ule,
      arith::MulIOp::create(b, loc, arith::AddIOp::create(b, loc, kt, idx(1)),
                            idx(shape.bk)),
      extentK);
  // A side whose factors are its operands as stored (DistMult's and
  // ComplEx's tails; a plain product's rows) is copied by cp.async: no
  // registers, so its copies are in flight while the other side's loads
  // and factors take theirs. Computed factors go through registers.
  auto copied = [&](int p) {
    for (const ProductTerm &term : product.terms) {
      const Factor &factor = p == 0 ? term.row : term.col;
      if (!factor || !factor->isInput() ||
          cast<MemRefType>(task.getInputs()[factor->input].getType())
                  .getElementType() != element)
        return false;
    }
    return true;
  };
  auto stageIndex = [&](int p, int64_t t, Value row) {
    return arith::AddIOp::create(
        b, loc,
        arith::AddIOp::create(
            b, loc, mmaBase,
            arith::MulIOp::create(b, loc, stageOf[t],
                                  idx(shape.stageElements()))),
        arith::AddIOp::create(b, loc, idx(p == 0 ? 0 : shape.bm * shape.bk),
                              swizzle(shape.bk, row, col)));
  };
  SmallVector<Value> copies;
  auto copyStages = [&](int p) {
    Side &side = sides[p];
    // Elements of the chunk within K (zero-filled past it).
    Value count =
        minIndex(arith::SubIOp::create(
                     b, loc, arith::MaxSIOp::create(b, loc, extentK, k), k),
                 idx(chunk));
    for (int64_t pass = 0; pass < side.passes; ++pass) {
      Value row =
          arith::AddIOp::create(b, loc, firstRow, idx(pass * rowsPerPass));
      for (int64_t t = 0; t < terms; ++t) {
        const Factor &factor =
            p == 0 ? product.terms[t].row : product.terms[t].col;
        size_t leaf =
            llvm::find(side.leaves, factor->input) - side.leaves.begin();
        // A chunk that reads nothing names the row's first element.
        Value safeK =
            arith::SelectOp::create(b, loc, less(k, extentK), k, idx(0));
        copies.push_back(nvgpu::DeviceAsyncCopyOp::create(
            b, loc, nvgpu::DeviceAsyncTokenType::get(ctx), mmaTiles,
            ValueRange{stageIndex(p, t, row)},
            arg(task.getInputs()[factor->input]),
            inputIndices(factor->input, rowOf(side, leaf, pass), safeK,
                         /*resolved=*/true),
            b.getIndexAttr(chunk), count, b.getUnitAttr()));
      }
    }
  };
  auto writeStages = [&](bool partial) {
    for (int p = 0; p < 2; ++p) {
      if (copied(p))
        continue;
      Side &side = sides[p];
      // Loads of several passes in flight before their factors are
      // written (at most 16 chunks of operands a thread).
      int64_t group =
          std::max<int64_t>(1, 16 / static_cast<int64_t>(side.leaves.size()));
      for (int64_t first = 0; first < side.passes; first += group) {
        int64_t last = std::min(side.passes, first + group);
        // chunks[pass - first][leaf]
        SmallVector<SmallVector<Value>> chunks;
        for (int64_t pass = first; pass < last; ++pass) {
          SmallVector<Value> loaded;
          for (auto [l, n] : llvm::enumerate(side.leaves)) {
            Value input = arg(task.getInputs()[n]);
            Type type = cast<MemRefType>(input.getType()).getElementType();
            auto vectorType = VectorType::get({chunk}, type);
            Value value;
            if (!partial) {
              value = vector::LoadOp::create(
                  b, loc, vectorType, input,
                  inputIndices(n, rowOf(side, l, pass), k, /*resolved=*/true),
                  /*nontemporal=*/false, llvm::MaybeAlign(16));
            } else {
              // The last step: elements past K read as zero.
              value =
                  arith::ConstantOp::create(b, loc, b.getZeroAttr(vectorType));
              Value zero =
                  arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
              for (int64_t e = 0; e < chunk; ++e) {
                Value ke = arith::AddIOp::create(b, loc, k, idx(e));
                Value inK = less(ke, extentK);
                Value safeK = arith::SelectOp::create(b, loc, inK, ke, idx(0));
                Value x = memref::LoadOp::create(
                    b, loc, input,
                    inputIndices(n, rowOf(side, l, pass), safeK,
                                 /*resolved=*/true));
                value = vector::InsertOp::create(
                    b, loc, arith::SelectOp::create(b, loc, inK, x, zero),
                    value, e);
              }
            }
            loaded.push_back(value);
          }
          chunks.push_back(loaded);
        }
        for (int64_t pass = first; pass < last; ++pass) {
          Value row =
              arith::AddIOp::create(b, loc, firstRow, idx(pass * rowsPerPass));
          for (int64_t t = 0; t < terms; ++t) {
            const Factor &factor =
                p == 0 ? product.terms[t].row : product.terms[t].col;
            auto leaf = [&](unsigned n) {
              return chunks[pass - first]
                           [llvm::find(side.leaves, n) - side.leaves.begin()];
            };
            // Past K, a factor that is not zero where its operands are
            // (1, or 1 + x) is made zero.
            auto inK = [&](int64_t, int64_t e) -> Value {
              return less(arith::AddIOp::create(b, loc, k, idx(e)), extentK);
            };
            Value value = evaluateFactor(
                factor, VectorType::get({chunk}, element), leaf, inK,
                arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1),
                /*masked=*/partial && !vanishesAtZero(factor));
            // TF32 rounded to nearest here (cvt.rna: NaNs stay NaN), where
            // the other tensor-core paths' operands reach the tensor cores
            // as stored and lose their low bits.
            if (precision == MmaPrecision::tf32)
              value = roundToTF32(value);
            vector::StoreOp::create(
                b, loc, value, mmaTiles, ValueRange{stageIndex(p, t, row)},
                /*nontemporal=*/false, llvm::MaybeAlign(16));
          }
        }
      }
    }
  };
  for (int p = 0; p < 2; ++p)
    if (copied(p))
      copyStages(p);
  auto ifWhole = scf::IfOp::create(b, loc, whole, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard branch(b);
    b.setInsertionPointToStart(ifWhole.thenBlock());
    writeStages(/*partial=*/false);
    b.setInsertionPointToStart(ifWhole.elseBlock());
    writeStages(/*partial=*/true);
  }
  // The copies landed (while the registers' side was read and written),
  // every write made visible to wgmma's (asynchronous-proxy) reads, then
  // the stages marked full.
  if (!copies.empty()) {
    Value token = nvgpu::DeviceAsyncCreateGroupOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(ctx), copies);
    nvgpu::DeviceAsyncWaitOp::create(b, loc, token, b.getI32IntegerAttr(0));
  }
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  for (Value stage : stageOf)
    nvgpu::MBarrierArriveOp::create(b, loc, nvgpu::MBarrierTokenType::get(ctx),
                                    barriers, stage);
}
