//===- BatchedVectorToTile.cpp - bvec score functions as tile tasks -------===//
//
// Scoring a batch of edges against negatives shared by the whole batch is a
// matmul-like task (Legend's and PyTorch-BigGraph's chunked negatives, as
// GAMUT would write it): i over the edges, j over the negatives, k over the
// embedding. The score function's elementwise vector expression becomes the
// task's inner computation (rows read through their index arrays, the
// corrupted side's through the negatives), its reduction over the embedding
// the accumulator, and the scalar operations after it the projection. The
// task then takes tile's lowerings (iterators, tensor cores, schedules):
// bvec keeps no GEMM of its own for this.
//
//===----------------------------------------------------------------------===//

#include "Conversion/BatchedVectorToTile/BatchedVectorToTile.h"

#include "Conversion/BatchedVectorToSCF/BatchedVectorToSCF.h"

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace kge {
#define GEN_PASS_DEF_CONVERTBATCHEDVECTORTOTILE
#include "Conversion/Passes.h.inc"
} // namespace kge
} // namespace mlir

using namespace mlir;
using namespace mlir::kge;

namespace {

/// One reduction over the embedding: its accumulator and what it sums
/// (folds) per element.
struct Reduction {
  Operation *op;
  tile::Combiner combiner;
  /// norm p = 2: the projection takes the square root first.
  bool squareRoot = false;
};

/// The translation of one bvec.func.
class Translator {
public:
  Translator(bvec::FuncOp func, BlockArgument negatives)
      : func(func), negatives(negatives) {}

  /// Replaces `func` with its tile function, or reports why it cannot.
  LogicalResult run();

private:
  /// Whether `v` is a reduction over the embedding.
  FailureOr<Reduction> asReduction(Operation *op);
  /// Collects the reductions the scalar `v` is computed from.
  LogicalResult collect(Value v, llvm::SetVector<Operation *> &reductions);
  /// `v` as sum_r coefficient[r] * r (reductions of sums), if it is one.
  bool linear(Value v, llvm::MapVector<Operation *, double> &terms,
              double scale);
  /// The value of the vector `v` at one element of the embedding, in the
  /// inner region (`b` at its end).
  FailureOr<Value> element(Value v, OpBuilder &b);
  /// The element a reduction folds.
  FailureOr<Value> reduced(Operation *reduction, OpBuilder &b);
  /// The scalar `v` from the accumulated value `acc` (the projection).
  FailureOr<Value> project(Value v, Operation *reduction, Value acc,
                           OpBuilder &b);
  /// The constant scalar `v` (a bvec.constant), if it is one.
  std::optional<double> constantOf(Value v);

  bvec::FuncOp func;
  BlockArgument negatives;
  /// Task inputs: (table, index array) of each gathered row, in order.
  SmallVector<std::pair<BlockArgument, BlockArgument>> inputs;
  Block *innerBlock = nullptr;
  DenseMap<Value, Value> elements;
};

} // namespace

std::optional<double> Translator::constantOf(Value v) {
  if (auto constant = v.getDefiningOp<bvec::ConstantOp>())
    return constant.getValue().convertToDouble();
  return std::nullopt;
}

FailureOr<Reduction> Translator::asReduction(Operation *op) {
  if (isa<bvec::VecMulVecOp>(op))
    return Reduction{op, tile::Combiner::add};
  if (auto norm = dyn_cast<bvec::NormOp>(op))
    return Reduction{op, tile::Combiner::add, norm.getP() == 2};
  if (auto reduce = dyn_cast<bvec::ReduceOp>(op)) {
    switch (reduce.getKind()) {
    case bvec::ReductionKind::sum:
      return Reduction{op, tile::Combiner::add};
    case bvec::ReductionKind::max:
      return Reduction{op, tile::Combiner::max};
    case bvec::ReductionKind::min:
      return Reduction{op, tile::Combiner::min};
    case bvec::ReductionKind::mean:
      return op->emitOpError()
             << "is a mean: scoring against shared negatives takes sums, "
                "maxima, minima and norms over the embedding";
    }
  }
  return failure();
}

LogicalResult Translator::collect(Value v,
                                  llvm::SetVector<Operation *> &reductions) {
  Operation *op = v.getDefiningOp();
  if (!op)
    return func.emitOpError() << "returns an argument: scoring against "
                                 "shared negatives needs a score";
  if (isa<bvec::ConstantOp>(op))
    return success();
  if (isa<bvec::VecMulVecOp, bvec::NormOp, bvec::ReduceOp>(op)) {
    reductions.insert(op);
    return success();
  }
  if (isElementwiseOp(op)) {
    for (Value operand : op->getOperands())
      if (failed(collect(operand, reductions)))
        return failure();
    return success();
  }
  return op->emitOpError()
         << "computes the score in a way scoring against shared negatives "
            "does not take: it needs the score as scalar operations on "
            "reductions over the embedding";
}

bool Translator::linear(Value v, llvm::MapVector<Operation *, double> &terms,
                        double scale) {
  Operation *op = v.getDefiningOp();
  if (!op)
    return false;
  if (isa<bvec::VecMulVecOp, bvec::NormOp, bvec::ReduceOp>(op)) {
    FailureOr<Reduction> r = asReduction(op);
    if (failed(r) || r->combiner != tile::Combiner::add || r->squareRoot)
      return false;
    terms[op] += scale;
    return true;
  }
  if (auto add = dyn_cast<bvec::AddOp>(op))
    return linear(add.getLhs(), terms, scale) &&
           linear(add.getRhs(), terms, scale);
  if (auto sub = dyn_cast<bvec::SubOp>(op))
    return linear(sub.getLhs(), terms, scale) &&
           linear(sub.getRhs(), terms, -scale);
  if (auto neg = dyn_cast<bvec::NegOp>(op))
    return linear(neg.getInput(), terms, -scale);
  if (auto mul = dyn_cast<bvec::MulOp>(op)) {
    if (std::optional<double> c = constantOf(mul.getLhs()))
      return linear(mul.getRhs(), terms, scale * *c);
    if (std::optional<double> c = constantOf(mul.getRhs()))
      return linear(mul.getLhs(), terms, scale * *c);
  }
  return false;
}

static Value f32Constant(OpBuilder &b, Location loc, double value) {
  return arith::ConstantOp::create(b, loc,
                                   b.getF32FloatAttr(static_cast<float>(value)));
}

FailureOr<Value> Translator::element(Value v, OpBuilder &b) {
  auto it = elements.find(v);
  if (it != elements.end())
    return it->second;
  Location loc = func.getLoc();
  Operation *op = v.getDefiningOp();
  Value result;
  if (!op)
    return func.emitOpError() << "uses a vector argument";
  if (auto gather = dyn_cast<bvec::GatherVecOp>(op)) {
    auto table = cast<BlockArgument>(gather.getTable());
    auto indices = cast<BlockArgument>(gather.getIndices());
    auto key = std::make_pair(table, indices);
    auto found = llvm::find(inputs, key);
    unsigned n = found - inputs.begin();
    if (found == inputs.end()) {
      inputs.push_back(key);
      innerBlock->addArgument(
          cast<bvec::TableType>(table.getType()).getElementType(), loc);
    }
    result = innerBlock->getArgument(n);
    // Rows in half precision are widened, as the score function reads them.
    if (!result.getType().isF32())
      result = arith::ExtFOp::create(b, loc, b.getF32Type(), result);
  } else if (auto constant = dyn_cast<bvec::ConstantOp>(op)) {
    result = f32Constant(b, loc, constant.getValue().convertToDouble());
  } else if (auto scale = dyn_cast<bvec::ScalMulVecOp>(op)) {
    std::optional<double> c = constantOf(scale.getScalar());
    if (!c)
      return op->emitOpError()
             << "scales by a per-edge scalar: scoring against shared "
                "negatives takes one reduction over the embedding";
    FailureOr<Value> x = element(scale.getVec(), b);
    if (failed(x))
      return failure();
    result = arith::MulFOp::create(b, loc, f32Constant(b, loc, *c), *x);
  } else if (isa<bvec::SliceOp>(op)) {
    return op->emitOpError()
           << "slices vectors: scoring against shared negatives reads whole "
              "rows (store the parts in separate tables)";
  } else if (isa<bvec::VecMulMatOp, bvec::GatherMatOp, bvec::VecOuterVecOp>(
                 op)) {
    return op->emitOpError()
           << "is a matrix product: scoring against shared negatives takes "
              "elementwise vector expressions reduced once over the "
              "embedding";
  } else {
    SmallVector<Value> operands;
    for (Value operand : op->getOperands()) {
      if (isa<bvec::ScalarType>(operand.getType())) {
        std::optional<double> c = constantOf(operand);
        if (!c)
          return op->emitOpError()
                 << "combines a vector with a per-edge scalar (a reduction "
                    "feeding a vector): scoring against shared negatives "
                    "takes one reduction over the embedding";
        operands.push_back(f32Constant(b, loc, *c));
        continue;
      }
      FailureOr<Value> x = element(operand, b);
      if (failed(x))
        return failure();
      operands.push_back(*x);
    }
    result = emitElementwise(b, loc, op, operands);
    if (!result)
      return op->emitOpError()
             << "is not an elementwise operation scoring against shared "
                "negatives takes";
  }
  elements[v] = result;
  return result;
}

FailureOr<Value> Translator::reduced(Operation *reduction, OpBuilder &b) {
  Location loc = func.getLoc();
  if (auto dot = dyn_cast<bvec::VecMulVecOp>(reduction)) {
    FailureOr<Value> x = element(dot.getLhs(), b);
    FailureOr<Value> y = failed(x) ? x : element(dot.getRhs(), b);
    if (failed(y))
      return failure();
    return Value(arith::MulFOp::create(b, loc, *x, *y));
  }
  if (auto norm = dyn_cast<bvec::NormOp>(reduction)) {
    FailureOr<Value> x = element(norm.getInput(), b);
    if (failed(x))
      return failure();
    if (norm.getP() == 2)
      return Value(arith::MulFOp::create(b, loc, *x, *x));
    return Value(math::AbsFOp::create(b, loc, *x));
  }
  return element(cast<bvec::ReduceOp>(reduction).getInput(), b);
}

FailureOr<Value> Translator::project(Value v, Operation *reduction, Value acc,
                                     OpBuilder &b) {
  Location loc = func.getLoc();
  Operation *op = v.getDefiningOp();
  if (op == reduction)
    return acc;
  if (auto constant = dyn_cast<bvec::ConstantOp>(op))
    return f32Constant(b, loc, constant.getValue().convertToDouble());
  SmallVector<Value> operands;
  for (Value operand : op->getOperands()) {
    FailureOr<Value> x = project(operand, reduction, acc, b);
    if (failed(x))
      return failure();
    operands.push_back(*x);
  }
  Value result = emitElementwise(b, loc, op, operands);
  if (!result)
    return op->emitOpError() << "is not a scalar operation scoring against "
                                "shared negatives takes";
  return result;
}

LogicalResult Translator::run() {
  MLIRContext *context = func.getContext();
  Location loc = func.getLoc();
  Operation *ret = func.getReturn();
  if (ret->getNumOperands() != 1)
    return func.emitOpError()
           << "has " << ret->getNumOperands()
           << " results: scoring against shared negatives takes one score";

  llvm::SetVector<Operation *> reductions;
  if (failed(collect(ret->getOperand(0), reductions)))
    return failure();
  if (reductions.empty())
    return func.emitOpError()
           << "computes a score that reads no embedding: nothing to score "
              "against the negatives";
  // One reduction (and a projection after it), or a linear combination of
  // sums: one sum.
  llvm::MapVector<Operation *, double> terms;
  std::optional<Reduction> single;
  if (reductions.size() == 1) {
    FailureOr<Reduction> r = asReduction(reductions[0]);
    if (failed(r))
      return failure();
    single = *r;
  } else if (!linear(ret->getOperand(0), terms, 1.0)) {
    return func.emitOpError()
           << "combines " << reductions.size()
           << " reductions over the embedding other than as a sum of "
              "sums scaled by constants: scoring against shared negatives "
              "accumulates one value per pair";
  }

  // The tile function: the bvec function's arguments as memrefs, then the
  // [B, N] scores.
  OpBuilder b(func);
  SmallVector<Type> argTypes;
  for (Type type : func.getArgumentTypes()) {
    if (auto table = dyn_cast<bvec::TableType>(type))
      argTypes.push_back(
          MemRefType::get(table.getShape(), table.getElementType()));
    else if (auto indices = dyn_cast<bvec::IndicesType>(type))
      // The negatives are as many as the caller gives, whatever the batch.
      argTypes.push_back(MemRefType::get(
          {argTypes.size() == negatives.getArgNumber() ? ShapedType::kDynamic
                                                       : indices.getBatchSize()},
          indices.getElementType()));
    else
      return func.emitOpError() << "takes an argument of type " << type
                                << ": tables and index arrays only";
  }
  argTypes.push_back(MemRefType::get(
      {func.getBatchSize(), ShapedType::kDynamic}, b.getF32Type()));
  auto tileFunc = func::FuncOp::create(b, loc, func.getSymName(),
                                       b.getFunctionType(argTypes, {}));
  for (unsigned n = 0, e = func.getArgumentTypes().size(); n < e; ++n)
    tileFunc.setArgAttr(n, "kge.param", b.getStringAttr(func.getArgName(n)));
  tileFunc.setArgAttr(argTypes.size() - 1, "kge.param",
                      b.getStringAttr(func.getResultName(0)));
  Block *body = tileFunc.addEntryBlock();

  // The inner computation, built before the task (its inputs are the rows
  // it reads), moved into the task's region afterwards.
  Region scratch;
  innerBlock = new Block();
  scratch.push_back(innerBlock);
  // (A builder of the context: the block has no parent operation yet.)
  OpBuilder inner(context);
  inner.setInsertionPointToEnd(innerBlock);
  Value value;
  if (single) {
    FailureOr<Value> x = reduced(single->op, inner);
    if (failed(x))
      return tileFunc.erase(), failure();
    value = *x;
  } else {
    for (auto [reduction, coefficient] : terms) {
      FailureOr<Value> x = reduced(reduction, inner);
      if (failed(x))
        return tileFunc.erase(), failure();
      Value term = coefficient == 1.0
                       ? *x
                       : Value(arith::MulFOp::create(
                             inner, loc, f32Constant(inner, loc, coefficient),
                             *x));
      value = value ? Value(arith::AddFOp::create(inner, loc, value, term))
                    : term;
    }
  }
  tile::YieldOp::create(inner, loc, value);

  // Rows of the edges' side: (i, k) through their index array; of the
  // negatives': (j, k) through the negatives.
  SmallVector<Value> taskInputs, gathers;
  SmallVector<Attribute> maps, gathered;
  for (auto [n, input] : llvm::enumerate(inputs)) {
    auto [table, indices] = input;
    taskInputs.push_back(body->getArgument(table.getArgNumber()));
    gathers.push_back(body->getArgument(indices.getArgNumber()));
    gathered.push_back(b.getI64ArrayAttr({static_cast<int64_t>(n), 0}));
    unsigned axis = indices == negatives ? tile::TaskOp::J : tile::TaskOp::I;
    maps.push_back(AffineMapAttr::get(AffineMap::get(
        3, 0, {b.getAffineDimExpr(axis), b.getAffineDimExpr(tile::TaskOp::K)},
        context)));
  }
  if (llvm::none_of(inputs, [&](auto input) { return input.second == negatives; }))
    return tileFunc.erase(),
           func.emitOpError() << "does not read rows through '"
                              << func.getArgName(negatives.getArgNumber())
                              << "': its score does not depend on the "
                                 "negatives";
  if (llvm::all_of(inputs, [&](auto input) { return input.second == negatives; }))
    return tileFunc.erase(),
           func.emitOpError() << "reads rows only through the negatives: "
                                 "its score does not depend on the edges";

  b.setInsertionPointToStart(body);
  tile::Combiner combiner = single ? single->combiner : tile::Combiner::add;
  auto task = tile::TaskOp::create(
      b, loc, taskInputs, ValueRange(), ValueRange{body->getArguments().back()},
      gathers, b.getArrayAttr(maps), tile::CombinerAttr::get(context, combiner),
      tile::OutputKindAttr::get(context, tile::OutputKind::dense), TypedAttr(),
      UnitAttr(), tile::CombinerAttr(), IntegerAttr(), UnitAttr(),
      AffineMapAttr(), UnitAttr(), b.getArrayAttr(gathered));
  func::ReturnOp::create(b, loc);
  task.getInner().takeBody(scratch);

  // The projection: the scalar operations after the one reduction.
  if (single && (single->squareRoot ||
                 ret->getOperand(0).getDefiningOp() != single->op)) {
    Block *block = new Block();
    task.getProject().push_back(block);
    Value acc = block->addArgument(b.getF32Type(), loc);
    block->addArgument(b.getIndexType(), loc);
    block->addArgument(b.getIndexType(), loc);
    OpBuilder p = OpBuilder::atBlockEnd(block);
    Value reducedValue = acc;
    // The root of a sum of squares, clamped at zero: on tensor cores the
    // sum may come multiplied out (||x||^2 - 2 x.y + ||y||^2), whose
    // rounding can take it below zero where x = y.
    if (single->squareRoot)
      reducedValue = math::SqrtOp::create(
          p, loc,
          arith::MaximumFOp::create(p, loc, acc, f32Constant(p, loc, 0.0)));
    FailureOr<Value> projected =
        project(ret->getOperand(0), single->op, reducedValue, p);
    if (failed(projected))
      return tileFunc.erase(), failure();
    tile::YieldOp::create(p, loc, *projected);
  }
  func.erase();
  return success();
}

namespace {
struct ConvertBatchedVectorToTilePass
    : kge::impl::ConvertBatchedVectorToTileBase<
          ConvertBatchedVectorToTilePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (sharedNegatives.empty()) {
      module.emitError() << "convert-bvec-to-tile needs shared-negatives="
                            "<index array>: the negatives every edge is "
                            "scored against";
      return signalPassFailure();
    }
    SmallVector<bvec::FuncOp> funcs(module.getOps<bvec::FuncOp>());
    for (bvec::FuncOp func : funcs) {
      BlockArgument negatives = func.getArgumentByName(sharedNegatives);
      if (!negatives || !isa<bvec::IndicesType>(negatives.getType())) {
        func.emitOpError() << "has no index array '" << sharedNegatives
                           << "' to take the shared negatives from";
        return signalPassFailure();
      }
      if (failed(Translator(func, negatives).run()))
        return signalPassFailure();
    }
  }
};
} // namespace
