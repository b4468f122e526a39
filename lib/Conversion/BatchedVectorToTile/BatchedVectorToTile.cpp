//===- BatchedVectorToTile.cpp - bvec score functions as tile tasks -------===//
//
// Two kinds of bvec score functions are matmul-like tasks (GAMUT), and
// become tile tasks so that they take tile's lowerings (iterators, tensor
// cores, schedules): bvec keeps no GEMM of its own for them.
//
// - Scoring a batch of edges against negatives shared by the whole batch
//   (Legend's and PyTorch-BigGraph's chunked negatives): i over the edges,
//   j over the negatives, k over the embedding. The score function's
//   elementwise vector expression becomes the task's inner computation
//   (rows read through their index arrays, the corrupted side's through
//   the negatives), its reduction over the embedding the accumulator, and
//   the scalar operations after it the projection.
// - A matrix product per edge (TransR, RESCAL: a vector times the matrix
//   its relation chooses, then a reduction of the projected vector): i
//   over the edges, j over the projected vector, k over the vector
//   multiplied. The vector's elementwise expression times the matrix is
//   the inner computation (the matrix a matrix per row's key: the segment
//   iterators read each relation's matrix once per tile of its edges), the
//   projected vector's expression (with rows read along j: pair operands)
//   the projection, the reduction over the projected vector the reduce
//   output, and the scalar operations after it the finalization.
//
//===----------------------------------------------------------------------===//

#include "Conversion/BatchedVectorToTile/BatchedVectorToTile.h"

#include "Conversion/BatchedVectorToSCF/BatchedVectorToSCF.h"

#include "Dialect/BatchedVector/Analysis/SignatureAnalysis.h"
#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace kge {
#define GEN_PASS_DEF_CONVERTBATCHEDVECTORTOTILE
#include "Conversion/Passes.h.inc"
} // namespace kge
} // namespace mlir

using namespace mlir;
using namespace mlir::kge;

static Value f32Constant(OpBuilder &b, Location loc, double value) {
  return arith::ConstantOp::create(b, loc,
                                   b.getF32FloatAttr(static_cast<float>(value)));
}

/// The constant scalar `v` (a bvec.constant), if it is one.
static std::optional<double> constantOf(Value v) {
  if (auto constant = v.getDefiningOp<bvec::ConstantOp>())
    return constant.getValue().convertToDouble();
  return std::nullopt;
}

/// The scalar `v` computed from `reduced`, the value of the scalar
/// `reduction` it depends on: the scalar operations after a reduction, in
/// `b` (a projection or a finalization).
static FailureOr<Value> scalarAfter(Value v, Operation *reduction,
                                    Value reduced, OpBuilder &b,
                                    StringRef context) {
  Location loc = v.getLoc();
  Operation *op = v.getDefiningOp();
  if (op == reduction)
    return reduced;
  if (auto constant = dyn_cast<bvec::ConstantOp>(op))
    return f32Constant(b, loc, constant.getValue().convertToDouble());
  SmallVector<Value> operands;
  for (Value operand : op->getOperands()) {
    FailureOr<Value> x = scalarAfter(operand, reduction, reduced, b, context);
    if (failed(x))
      return failure();
    operands.push_back(*x);
  }
  Value result = emitElementwise(b, loc, op, operands);
  if (!result)
    return op->emitOpError() << "is not a scalar operation " << context
                             << " takes";
  return result;
}

/// The element of the vector that `op` computes — a constant, a vector
/// scaled by a constant, or an elementwise operation whose scalar operands
/// are constants — from its vector operands' elements (`element`), built
/// at `loc` at the end of `b`'s block; both translations below share it.
/// What it does not take is diagnosed as "... <scope> takes ...".
static FailureOr<Value>
elementwiseElement(Operation *op, OpBuilder &b, Location loc,
                   llvm::function_ref<FailureOr<Value>(Value)> element,
                   StringRef scope) {
  if (auto constant = dyn_cast<bvec::ConstantOp>(op))
    return f32Constant(b, loc, constant.getValue().convertToDouble());
  if (auto scale = dyn_cast<bvec::ScalMulVecOp>(op)) {
    std::optional<double> c = constantOf(scale.getScalar());
    if (!c)
      return op->emitOpError() << "scales by a per-edge scalar: " << scope
                               << " takes one reduction over the embedding";
    FailureOr<Value> x = element(scale.getVec());
    if (failed(x))
      return failure();
    b.setInsertionPointToEnd(b.getInsertionBlock());
    return Value(arith::MulFOp::create(b, loc, f32Constant(b, loc, *c), *x));
  }
  SmallVector<Value> operands;
  for (Value operand : op->getOperands()) {
    if (isa<bvec::ScalarType>(operand.getType())) {
      std::optional<double> c = constantOf(operand);
      if (!c)
        return op->emitOpError()
               << "combines a vector with a per-edge scalar (a reduction "
                  "feeding a vector): "
               << scope << " takes one reduction over the embedding";
      operands.push_back(f32Constant(b, loc, *c));
      continue;
    }
    FailureOr<Value> x = element(operand);
    if (failed(x))
      return failure();
    operands.push_back(*x);
  }
  // (The operands' elements may have been built by other builders at the
  // block's end.)
  b.setInsertionPointToEnd(b.getInsertionBlock());
  Value result = emitElementwise(b, loc, op, operands);
  if (!result)
    return op->emitOpError() << "is not an elementwise operation " << scope
                             << " takes";
  return result;
}

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

  bvec::FuncOp func;
  BlockArgument negatives;
  /// Task inputs: (table, index array) of each gathered row, in order.
  SmallVector<std::pair<BlockArgument, BlockArgument>> inputs;
  Block *innerBlock = nullptr;
  DenseMap<Value, Value> elements;
};

} // namespace

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
    FailureOr<Value> x = elementwiseElement(
        op, b, loc, [&](Value operand) { return element(operand, b); },
        "scoring against shared negatives");
    if (failed(x))
      return failure();
    result = *x;
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
        scalarAfter(ret->getOperand(0), single->op, reducedValue, p,
                    "scoring against shared negatives");
    if (failed(projected))
      return tileFunc.erase(), failure();
    tile::YieldOp::create(p, loc, *projected);
  }
  func.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// Matrix products per edge
//===----------------------------------------------------------------------===//

namespace {

/// The translation of a bvec.func whose score is a reduction of a vector
/// computed from one matrix product per edge (`vec_mul_mat` by a matrix
/// gathered per edge).
class MatrixTranslator {
public:
  explicit MatrixTranslator(bvec::FuncOp func) : func(func) {}

  /// Replaces `func` with its tile function when its score has that form
  /// (returns true); leaves it unchanged otherwise (false).
  bool run();

private:
  /// The axes an input of the task is read along.
  enum class Kind { Rows, Matrix, Pair };
  struct Input {
    BlockArgument table, indices;
    Kind kind;
  };
  /// The block argument (of the inner or project block) of the input
  /// (`table`, `indices`, `kind`), registered on first use.
  Value argumentOf(BlockArgument table, BlockArgument indices, Kind kind,
                   Block *block);
  /// The element of vector `v` in `block` (the inner block: along k, the
  /// projected vector's operand; the project block: along j, where the
  /// matrix product is `projected`), widened to f32; failure when `v` is
  /// not an elementwise expression of gathered rows.
  FailureOr<Value> element(Value v, Block *block, Value projected);

  bvec::FuncOp func;
  bvec::VecMulMatOp product;
  Block *innerBlock = nullptr, *projectBlock = nullptr;
  SmallVector<Input> inputs;
  DenseMap<std::pair<Value, Block *>, Value> elements;
};

} // namespace

Value MatrixTranslator::argumentOf(BlockArgument table, BlockArgument indices,
                                   Kind kind, Block *block) {
  Location loc = func.getLoc();
  auto found = llvm::find_if(inputs, [&](const Input &input) {
    return input.table == table && input.indices == indices &&
           input.kind == kind;
  });
  unsigned n = found - inputs.begin();
  Type element = cast<bvec::TableType>(table.getType()).getElementType();
  if (found == inputs.end()) {
    inputs.push_back({table, indices, kind});
    innerBlock->addArgument(element, loc);
    // The project block's arguments: the accumulator, i, j, then the
    // pair operands in order.
    if (kind == Kind::Pair)
      projectBlock->addArgument(element, loc);
  }
  if (block == innerBlock)
    return innerBlock->getArgument(n);
  unsigned pairs = llvm::count_if(
      ArrayRef<Input>(inputs).take_front(n),
      [](const Input &input) { return input.kind == Kind::Pair; });
  return projectBlock->getArgument(3 + pairs);
}

FailureOr<Value> MatrixTranslator::element(Value v, Block *block,
                                           Value projected) {
  auto key = std::make_pair(v, block);
  auto it = elements.find(key);
  if (it != elements.end())
    return it->second;
  Location loc = func.getLoc();
  MLIRContext *context = func.getContext();
  // (A builder of the context: the blocks have no parent operation yet.)
  OpBuilder b(context);
  b.setInsertionPointToEnd(block);
  Operation *op = v.getDefiningOp();
  if (!op)
    return failure();
  Value result;
  if (op == product.getOperation() && block == projectBlock) {
    result = projected;
  } else if (auto gather = dyn_cast<bvec::GatherVecOp>(op)) {
    result = argumentOf(cast<BlockArgument>(gather.getTable()),
                        cast<BlockArgument>(gather.getIndices()),
                        block == innerBlock ? Kind::Rows : Kind::Pair, block);
    // Rows in half precision are widened, as the score function reads them.
    if (!result.getType().isF32())
      result = arith::ExtFOp::create(b, loc, b.getF32Type(), result);
  } else if (isa<bvec::ConstantOp, bvec::ScalMulVecOp>(op) ||
             isElementwiseOp(op)) {
    FailureOr<Value> x = elementwiseElement(
        op, b, loc,
        [&](Value operand) { return element(operand, block, projected); },
        "a matrix product's score");
    if (failed(x))
      return failure();
    result = *x;
  } else {
    // Slices, other products, reductions feeding vectors: not this form.
    return failure();
  }
  elements[key] = result;
  return result;
}

bool MatrixTranslator::run() {
  MLIRContext *context = func.getContext();
  // A function this form does not take stays for the fused kernel: what
  // the attempt diagnoses on the way is not an error.
  ScopedDiagnosticHandler silence(context, [](Diagnostic &) { return success(); });
  Location loc = func.getLoc();
  Operation *ret = func.getReturn();
  if (ret->getNumOperands() != 1)
    return false;
  // One reduction of a vector computed from one matrix product.
  SmallVector<bvec::VecMulMatOp> products;
  func.walk([&](bvec::VecMulMatOp op) { products.push_back(op); });
  if (products.size() != 1)
    return false;
  product = products.front();
  auto matrix = product.getMat().getDefiningOp<bvec::GatherMatOp>();
  if (!matrix)
    return false;
  Operation *reduction = nullptr;
  for (Operation &op : func.getBody().front())
    if (isa<bvec::VecMulVecOp, bvec::NormOp, bvec::ReduceOp>(op)) {
      if (reduction)
        return false;
      reduction = &op;
    }
  if (!reduction)
    return false;
  tile::Combiner combiner = tile::Combiner::add;
  bool squareRoot = false;
  if (auto norm = dyn_cast<bvec::NormOp>(reduction)) {
    squareRoot = norm.getP() == 2;
  } else if (auto reduce = dyn_cast<bvec::ReduceOp>(reduction)) {
    switch (reduce.getKind()) {
    case bvec::ReductionKind::sum:
      break;
    case bvec::ReductionKind::max:
      combiner = tile::Combiner::max;
      break;
    case bvec::ReductionKind::min:
      combiner = tile::Combiner::min;
      break;
    case bvec::ReductionKind::mean:
      return false;
    }
  }

  OpBuilder b(func);
  SmallVector<Type> argTypes;
  for (Type type : func.getArgumentTypes()) {
    if (auto table = dyn_cast<bvec::TableType>(type))
      argTypes.push_back(
          MemRefType::get(table.getShape(), table.getElementType()));
    else if (auto indices = dyn_cast<bvec::IndicesType>(type))
      argTypes.push_back(
          MemRefType::get({indices.getBatchSize()}, indices.getElementType()));
    else
      return false;
  }
  argTypes.push_back(MemRefType::get({func.getBatchSize()}, b.getF32Type()));

  // The regions, built before the task (their inputs are the rows they
  // read), moved into it afterwards.
  Region innerRegion, projectRegion, finalizeRegion;
  innerBlock = new Block();
  innerRegion.push_back(innerBlock);
  projectBlock = new Block();
  projectRegion.push_back(projectBlock);
  Value acc = projectBlock->addArgument(b.getF32Type(), loc);
  projectBlock->addArgument(b.getIndexType(), loc);
  projectBlock->addArgument(b.getIndexType(), loc);

  // Half-precision operands take the tensor cores as loaded: a factor
  // computed from several of them (TransR's h - t) would be rounded to
  // half precision there, where the score function computes in f32, and
  // operands of two precisions take no tensor cores. Such functions keep
  // the fused kernel (it widens the rows and multiplies at 3xTF32).
  SmallVector<Type> elementTypes;
  for (Type type : func.getArgumentTypes())
    if (auto table = dyn_cast<bvec::TableType>(type))
      elementTypes.push_back(table.getElementType());
  bool halfPrecision = llvm::any_of(elementTypes, [](Type t) { return !t.isF32(); });
  if (halfPrecision && (!llvm::all_equal(elementTypes) ||
                        !product.getVec().getDefiningOp<bvec::GatherVecOp>()))
    return false;

  // inner: the multiplied vector's element times the matrix's.
  FailureOr<Value> x = element(product.getVec(), innerBlock, Value());
  if (failed(x))
    return false;
  Value w = argumentOf(cast<BlockArgument>(matrix.getTable()),
                       cast<BlockArgument>(matrix.getIndices()), Kind::Matrix,
                       innerBlock);
  OpBuilder inner(context);
  inner.setInsertionPointToEnd(innerBlock);
  if (!w.getType().isF32())
    w = arith::ExtFOp::create(inner, loc, inner.getF32Type(), w);
  tile::YieldOp::create(
      inner, loc, arith::MulFOp::create(inner, loc, *x, w).getResult());

  // project: what the reduction folds at element j of the projected
  // vector.
  Value folded;
  if (auto dot = dyn_cast<bvec::VecMulVecOp>(reduction)) {
    FailureOr<Value> u = element(dot.getLhs(), projectBlock, acc);
    FailureOr<Value> v = failed(u) ? u : element(dot.getRhs(), projectBlock, acc);
    if (failed(v))
      return false;
    OpBuilder p(context);
  p.setInsertionPointToEnd(projectBlock);
    folded = arith::MulFOp::create(p, loc, *u, *v);
  } else {
    Value input = isa<bvec::NormOp>(reduction)
                      ? cast<bvec::NormOp>(reduction).getInput()
                      : cast<bvec::ReduceOp>(reduction).getInput();
    FailureOr<Value> u = element(input, projectBlock, acc);
    if (failed(u))
      return false;
    OpBuilder p(context);
  p.setInsertionPointToEnd(projectBlock);
    folded = !isa<bvec::NormOp>(reduction) ? *u
             : squareRoot ? arith::MulFOp::create(p, loc, *u, *u).getResult()
                          : math::AbsFOp::create(p, loc, *u).getResult();
  }
  // The reduction must read the matrix product.
  if (acc.use_empty())
    return false;
  OpBuilder p(context);
  p.setInsertionPointToEnd(projectBlock);
  tile::YieldOp::create(p, loc, folded);

  // finalize: the norm's root and the scalar operations after the
  // reduction.
  Block *finalizeBlock = new Block();
  finalizeRegion.push_back(finalizeBlock);
  Value reduced = finalizeBlock->addArgument(b.getF32Type(), loc);
  finalizeBlock->addArgument(b.getIndexType(), loc);
  OpBuilder f(context);
  f.setInsertionPointToEnd(finalizeBlock);
  Value root = squareRoot ? math::SqrtOp::create(f, loc, reduced).getResult()
                          : reduced;
  FailureOr<Value> score = scalarAfter(ret->getOperand(0), reduction, root, f,
                                       "a matrix product's score");
  if (failed(score))
    return false;
  tile::YieldOp::create(f, loc, *score);
  bool needsFinalize = squareRoot || ret->getOperand(0).getDefiningOp() != reduction;

  // The tile function: the bvec function's arguments as memrefs, then the
  // scores.
  auto tileFunc = func::FuncOp::create(b, loc, func.getSymName(),
                                       b.getFunctionType(argTypes, {}));
  for (unsigned n = 0, e = func.getArgumentTypes().size(); n < e; ++n)
    tileFunc.setArgAttr(n, "kge.param", b.getStringAttr(func.getArgName(n)));
  tileFunc.setArgAttr(argTypes.size() - 1, "kge.param",
                      b.getStringAttr(func.getResultName(0)));
  // The score stays the function's result (allocated by the runtime), and
  // every parameter keeps the bvec function's names of its dimensions
  // (kge.dims: N_Eemb, D_Eemb, B, ...), so that the bundle's signature is
  // the fused kernel's.
  tileFunc.setArgAttr(argTypes.size() - 1, "kge.result", b.getUnitAttr());
  FailureOr<kge_runtime::Signature> signature = bvec::computeSignature(func);
  if (failed(signature)) {
    tileFunc.erase();
    return false;
  }
  for (auto [n, param] : llvm::enumerate(signature->params)) {
    SmallVector<Attribute> dims;
    for (const kge_runtime::Dim &d : param.shape)
      dims.push_back(b.getStringAttr(d.str()));
    tileFunc.setArgAttr(n, "kge.dims", b.getArrayAttr(dims));
  }
  Block *body = tileFunc.addEntryBlock();
  SmallVector<Value> taskInputs, gathers;
  SmallVector<Attribute> maps, gathered;
  auto dim = [&](unsigned axis) { return b.getAffineDimExpr(axis); };
  for (auto [n, input] : llvm::enumerate(inputs)) {
    taskInputs.push_back(body->getArgument(input.table.getArgNumber()));
    gathers.push_back(body->getArgument(input.indices.getArgNumber()));
    gathered.push_back(b.getI64ArrayAttr({static_cast<int64_t>(n), 0}));
    SmallVector<AffineExpr> results = {dim(tile::TaskOp::I)};
    if (input.kind != Kind::Pair)
      results.push_back(dim(tile::TaskOp::K));
    if (input.kind != Kind::Rows)
      results.push_back(dim(tile::TaskOp::J));
    maps.push_back(AffineMapAttr::get(AffineMap::get(3, 0, results, context)));
  }
  b.setInsertionPointToStart(body);
  auto task = tile::TaskOp::create(
      b, loc, taskInputs, ValueRange(), ValueRange{body->getArguments().back()},
      gathers, b.getArrayAttr(maps), tile::CombinerAttr::get(context, tile::Combiner::add),
      tile::OutputKindAttr::get(context, tile::OutputKind::reduce), TypedAttr(),
      UnitAttr(),
      combiner == tile::Combiner::add ? tile::CombinerAttr()
                                      : tile::CombinerAttr::get(context, combiner),
      IntegerAttr(), UnitAttr(), AffineMapAttr(), UnitAttr(),
      b.getArrayAttr(gathered));
  func::ReturnOp::create(b, loc);
  task.getInner().takeBody(innerRegion);
  task.getProject().takeBody(projectRegion);
  if (needsFinalize)
    task.getFinalize().takeBody(finalizeRegion);
  if (failed(mlir::verify(task))) {
    tileFunc.erase();
    return false;
  }
  func.erase();
  return true;
}

namespace {
struct ConvertBatchedVectorToTilePass
    : kge::impl::ConvertBatchedVectorToTileBase<
          ConvertBatchedVectorToTilePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<bvec::FuncOp> funcs(module.getOps<bvec::FuncOp>());
    if (matrices) {
      if (!sharedNegatives.empty()) {
        module.emitError() << "convert-bvec-to-tile takes either "
                              "shared-negatives or matrices";
        return signalPassFailure();
      }
      for (bvec::FuncOp func : funcs)
        MatrixTranslator(func).run();
      return;
    }
    if (sharedNegatives.empty()) {
      module.emitError() << "convert-bvec-to-tile needs shared-negatives="
                            "<index array> (the negatives every edge is "
                            "scored against) or matrices";
      return signalPassFailure();
    }
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
