//===- RaiseLinalg.cpp - score functions in linalg/tensor to bvec ---------===//
//
// bvec-raise-linalg: a func.func whose body is a score function on tensors
// (gathers as linalg.generic + tensor.extract, elementwise linalg and
// arith/math, reductions along the vectors' axis) becomes a bvec.func. The
// raising is all or nothing per function: a remark names the operation
// that stopped it, and the function stays as it was.
//
//===----------------------------------------------------------------------===//

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "Dialect/BatchedVector/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>
#include <optional>

namespace mlir {
namespace bvec {
#define GEN_PASS_DEF_BATCHEDVECTORRAISELINALG
#include "Dialect/BatchedVector/Transforms/Passes.h.inc"
} // namespace bvec
} // namespace mlir

using namespace mlir;
using namespace mlir::bvec;

namespace {

/// Named elementwise linalg operations and their scalar twins, whose bvec
/// operation they take.
const llvm::StringMap<StringRef> &namedTwins() {
  static const llvm::StringMap<StringRef> twins = {
      {"linalg.add", "arith.addf"}, {"linalg.sub", "arith.subf"},
      {"linalg.mul", "arith.mulf"}, {"linalg.div", "arith.divf"},
      {"linalg.max", "arith.maximumf"}, {"linalg.min", "arith.minimumf"},
      {"linalg.exp", "math.exp"},   {"linalg.log", "math.log"},
      {"linalg.sqrt", "math.sqrt"}, {"linalg.abs", "math.absf"},
      {"linalg.negf", "arith.negf"}, {"linalg.tanh", "math.tanh"}};
  return twins;
}

/// Why a function is not raised, at the operation that stopped it.
struct NotRaised {
  Operation *op;
  std::string reason;
};

class Raiser {
public:
  Raiser(func::FuncOp func) : func(func), builder(func.getContext()) {}

  /// The bvec function, or the reason there is none.
  FailureOr<FuncOp> raise(NotRaised &why);

private:
  func::FuncOp func;
  OpBuilder builder;
  FuncOp raised;
  /// Tensor values of the function -> their bvec values.
  DenseMap<Value, Value> values;
  /// linalg.fill results -> the filled float.
  DenseMap<Value, double> fills;
  std::optional<NotRaised> failure;

  LogicalResult fail(Operation *op, const Twine &reason) {
    failure = NotRaised{op, reason.str()};
    return ::mlir::failure();
  }

  LogicalResult signature(SmallVectorImpl<Type> &types,
                          SmallVectorImpl<std::string> &names);
  LogicalResult operation(Operation *op);
  LogicalResult gather(linalg::GenericOp op);
  LogicalResult elementwise(Operation *op, ValueRange inputs, Value result,
                            Block *body, ArrayRef<AffineMap> inputMaps);
  LogicalResult reduction(linalg::GenericOp op);
  LogicalResult namedReduction(linalg::ReduceOp op);
  /// The reduction `combine` performs, checked against the fill of the
  /// output `init` (its identity).
  FailureOr<ReductionKind> combination(Operation *op, Operation *combine,
                                       Value init);
  /// Emits the bvec operations of the scalar body `block` (every operation
  /// but `skip` and the terminator) over `arguments` (bvec values of its
  /// block arguments; null for arguments that must not be read); float
  /// constants take the type of `like`. Returns the bvec value of `value`.
  FailureOr<Value> body(Block *block, ArrayRef<Value> arguments, Value value,
                        Value like, Operation *skip = nullptr);
  FailureOr<Value> scalarOp(Operation *op, ArrayRef<Value> operands);
  /// The bvec values of `operands`, or a failure naming `op`.
  LogicalResult mapped(Operation *op, ValueRange operands,
                       SmallVectorImpl<Value> &out);
  Value constant(Type like, double value);
};

} // namespace

LogicalResult Raiser::signature(SmallVectorImpl<Type> &types,
                                SmallVectorImpl<std::string> &names) {
  MLIRContext *ctx = func.getContext();
  FunctionType type = func.getFunctionType();
  for (auto [i, input] : llvm::enumerate(type.getInputs())) {
    auto tensor = dyn_cast<RankedTensorType>(input);
    Type element = tensor ? tensor.getElementType() : Type();
    if (tensor && tensor.getRank() == 2 && isa<FloatType>(element))
      types.push_back(TableType::get(ctx, tensor.getShape(), element));
    else if (tensor && tensor.getRank() == 1 &&
             (element.isInteger(32) || element.isInteger(64)))
      types.push_back(IndicesType::get(ctx, tensor.getDimSize(0), element));
    else
      return fail(func, "argument " + Twine(i) +
                            " is neither a table (a rank-2 floating-point "
                            "tensor) nor an index array (a rank-1 i32/i64 "
                            "tensor)");
    auto name = func.getArgAttrOfType<StringAttr>(i, "kge.name");
    names.push_back(name ? name.str() : "arg" + std::to_string(i));
  }
  if (type.getNumResults() != 1)
    return fail(func, "a score function has one result, this has " +
                          Twine(type.getNumResults()));
  auto result = dyn_cast<RankedTensorType>(type.getResult(0));
  if (!result || result.getRank() != 1 ||
      !isa<FloatType>(result.getElementType()))
    return fail(func, "the result is not a rank-1 floating-point tensor (one "
                      "score per edge)");
  return success();
}

FailureOr<FuncOp> Raiser::raise(NotRaised &why) {
  SmallVector<Type> types;
  SmallVector<std::string> names;
  auto done = [&](LogicalResult result) -> FailureOr<FuncOp> {
    if (succeeded(result))
      return raised;
    if (raised)
      raised->erase();
    why = *failure;
    return ::mlir::failure();
  };
  if (!func.getBody().hasOneBlock())
    return done(fail(func, "its body has several blocks"));
  if (failed(signature(types, names)))
    return done(::mlir::failure());
  SmallVector<StringRef> nameRefs(names.begin(), names.end());
  builder.setInsertionPoint(func);
  raised = FuncOp::create(builder, func.getLoc(), func.getSymName(),
                          builder.getFunctionType(types, {}), nameRefs,
                          ArrayRef<StringRef>{"score"});
  Block &entry = raised.getBody().front();
  for (auto [arg, bvecArg] :
       llvm::zip(func.getArguments(), entry.getArguments()))
    values[arg] = bvecArg;
  builder.setInsertionPointToEnd(&entry);
  for (Operation &op : func.getBody().front())
    if (failed(operation(&op)))
      return done(::mlir::failure());
  // A function that does not verify is not raised: its messages become the
  // remark's reason instead of errors.
  std::string messages;
  {
    ScopedDiagnosticHandler capture(func.getContext(), [&](Diagnostic &d) {
      messages += (messages.empty() ? "" : "; ") + d.str();
      return success();
    });
    if (failed(verify(raised)))
      return done(fail(func, "the raised function does not verify: " + messages));
  }
  return done(success());
}

LogicalResult Raiser::operation(Operation *op) {
  if (isa<tensor::EmptyOp>(op))
    return success();
  // Sizes and constants (tensor.dim, arith on indices, float constants that
  // bodies and fills read): nothing of their own in bvec.
  if (op->getNumResults() > 0 && isPure(op) &&
      llvm::none_of(op->getResultTypes(),
                    [](Type t) { return isa<TensorType>(t); }))
    return success();
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    auto value = fill.getInputs()[0].getDefiningOp<arith::ConstantFloatOp>();
    if (!value)
      return fail(op, "linalg.fill with a value that is not a float constant");
    fills[fill.getResult(0)] = value.value().convertToDouble();
    return success();
  }
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    Value result = values.lookup(ret.getOperand(0));
    if (!result || !isa<ScalarType>(result.getType()))
      return fail(op, "the returned tensor is not one score per edge");
    ReturnOp::create(builder, op->getLoc(), ValueRange{result});
    raised.setFunctionType(builder.getFunctionType(
        raised.getFunctionType().getInputs(), {result.getType()}));
    return success();
  }
  if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
    if (generic.getNumDpsInits() != 1 || generic.getNumResults() != 1)
      return fail(op, "a linalg.generic with several outputs");
    SmallVector<utils::IteratorType> iterators =
        generic.getIteratorTypesArray();
    bool parallel = llvm::all_of(iterators, [](utils::IteratorType t) {
      return t == utils::IteratorType::parallel;
    });
    Value first = generic.getNumDpsInputs() == 1
                      ? values.lookup(generic.getDpsInputs()[0])
                      : Value();
    if (parallel && first && isa<IndicesType>(first.getType()))
      return gather(generic);
    if (parallel) {
      SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
      if (!maps.back().isIdentity())
        return fail(op, "an elementwise linalg.generic whose output map is "
                        "not the identity");
      return elementwise(op, generic.getDpsInputs(), generic.getResult(0),
                         generic.getBody(),
                         ArrayRef<AffineMap>(maps).drop_back());
    }
    return reduction(generic);
  }
  if (auto reduce = dyn_cast<linalg::ReduceOp>(op))
    return namedReduction(reduce);
  StringRef name = op->getName().getStringRef();
  // Named elementwise linalg operations, and arith/math on whole tensors.
  SmallVector<Value> operands;
  bool tensorOp = op->getNumResults() == 1 &&
                  isa<RankedTensorType>(op->getResult(0).getType()) &&
                  op->getDialect() &&
                  (isa<arith::ArithDialect>(op->getDialect()) ||
                   isa<math::MathDialect>(op->getDialect()));
  if (namedTwins().contains(name) || tensorOp) {
    SmallVector<Value> inputs =
        tensorOp ? SmallVector<Value>(op->getOperands())
                 : SmallVector<Value>(
                       cast<DestinationStyleOpInterface>(op).getDpsInputs());
    if (failed(mapped(op, inputs, operands)))
      return ::mlir::failure();
    FailureOr<Value> result = scalarOp(op, operands);
    if (failed(result))
      return ::mlir::failure();
    values[op->getResult(0)] = *result;
    return success();
  }
  return fail(op, "'" + name + "' is not an operation of a score function");
}

LogicalResult Raiser::mapped(Operation *op, ValueRange operands,
                             SmallVectorImpl<Value> &out) {
  for (Value operand : operands) {
    Value value = values.lookup(operand);
    if (!value)
      return fail(op, "an operand that is not computed from the tables");
    out.push_back(value);
  }
  return success();
}

LogicalResult Raiser::gather(linalg::GenericOp op) {
  MLIRContext *ctx = op.getContext();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap rowOfEdge = AffineMap::get(
      2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  if (op.getNumLoops() != 2 || maps[0] != rowOfEdge || !maps[1].isIdentity())
    return fail(op, "a gather must loop over (edge, element) with the index "
                    "array read at (edge)");
  Block *body = op.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto extract = yield.getOperand(0).getDefiningOp<tensor::ExtractOp>();
  if (!extract || extract.getIndices().size() != 2)
    return fail(op, "a gather's body must yield tensor.extract %table[%row, "
                    "%element]");
  Value table = values.lookup(extract.getTensor());
  if (!table || !isa<TableType>(table.getType()) ||
      !cast<TableType>(table.getType()).holdsVectors())
    return fail(op, "a gather must read a table argument of the function");
  Value row = extract.getIndices()[0], element = extract.getIndices()[1];
  Operation *rowCast = row.getDefiningOp();
  if (!isa_and_nonnull<arith::IndexCastOp, arith::IndexCastUIOp>(rowCast) ||
      rowCast->getOperand(0) != body->getArgument(0))
    return fail(op, "a gather's row must be the index array's element cast "
                    "to index");
  auto index = element.getDefiningOp<linalg::IndexOp>();
  if (!index || index.getDim() != 1)
    return fail(op, "a gather's column must be linalg.index 1");
  Value indices = values.lookup(op.getDpsInputs()[0]);
  auto tableType = cast<TableType>(table.getType());
  Type result =
      batchedType(indices.getType(), tableType.getShape().drop_front(),
              tableType.getElementType());
  values[op.getResult(0)] =
      GatherVecOp::create(builder, op.getLoc(), result, table, indices);
  return success();
}

Value Raiser::constant(Type like, double value) {
  Type element = cast<BatchedType>(like).getElementType();
  return ConstantOp::create(builder, func.getLoc(), like,
                            builder.getFloatAttr(element, value));
}

FailureOr<Value> Raiser::scalarOp(Operation *op, ArrayRef<Value> operands) {
  Location loc = op->getLoc();
  auto sameTypes = [&]() -> LogicalResult {
    for (Value v : operands)
      if (v.getType() != operands[0].getType())
        return fail(op, "operands of different shapes");
    return success();
  };
  StringRef name = op->getName().getStringRef();
  if (auto it = namedTwins().find(name); it != namedTwins().end())
    name = it->second;
  if (operands.size() == 2) {
    Value lhs = operands[0], rhs = operands[1];
    // A scalar per edge times a vector per edge scales it.
    if (name == "arith.mulf" && isa<ScalarType>(lhs.getType()) !=
                                    isa<ScalarType>(rhs.getType())) {
      if (isa<ScalarType>(rhs.getType()))
        std::swap(lhs, rhs);
      if (!isa<VecType>(rhs.getType()))
        return fail(op, "a scalar times something that is not a vector");
      return Value(ScalMulVecOp::create(builder, loc, rhs.getType(), lhs, rhs));
    }
    if (failed(sameTypes()))
      return ::mlir::failure();
    Type type = lhs.getType();
    if (name == "arith.addf")
      return Value(AddOp::create(builder, loc, type, lhs, rhs));
    if (name == "arith.subf")
      return Value(SubOp::create(builder, loc, type, lhs, rhs));
    if (name == "arith.mulf")
      return Value(MulOp::create(builder, loc, type, lhs, rhs));
    if (name == "arith.divf")
      return Value(DivOp::create(builder, loc, type, lhs, rhs));
    if (name == "arith.maximumf")
      return Value(MaxOp::create(builder, loc, type, lhs, rhs));
    if (name == "arith.minimumf")
      return Value(MinOp::create(builder, loc, type, lhs, rhs));
  }
  if (operands.size() == 1) {
    Value x = operands[0];
    Type type = x.getType();
    if (name == "arith.negf")
      return Value(NegOp::create(builder, loc, type, x));
    if (name == "math.absf")
      return Value(AbsOp::create(builder, loc, type, x));
    if (name == "math.exp")
      return Value(ExpOp::create(builder, loc, type, x));
    if (name == "math.log")
      return Value(LogOp::create(builder, loc, type, x));
    if (name == "math.sqrt")
      return Value(SqrtOp::create(builder, loc, type, x));
    if (name == "math.tanh")
      return Value(TanhOp::create(builder, loc, type, x));
    if (name == "math.sin")
      return Value(SinOp::create(builder, loc, type, x));
    if (name == "math.cos")
      return Value(CosOp::create(builder, loc, type, x));
  }
  return fail(op, "'" + op->getName().getStringRef() +
                      "' is not an operation of a score function");
}

FailureOr<Value> Raiser::body(Block *block, ArrayRef<Value> arguments,
                              Value value, Value like, Operation *skip) {
  DenseMap<Value, Value> scalars;
  for (auto [arg, mappedArg] : llvm::zip(block->getArguments(), arguments))
    if (mappedArg)
      scalars[arg] = mappedArg;
  auto constantOf = [&](Value v) -> std::optional<double> {
    if (auto c = v.getDefiningOp<arith::ConstantFloatOp>())
      return c.value().convertToDouble();
    return std::nullopt;
  };
  for (Operation &op : block->without_terminator()) {
    if (&op == skip || isa<arith::ConstantFloatOp>(op))
      continue;
    // Constants take the type of the operation's computed operand.
    Value typed = like;
    for (Value operand : op.getOperands())
      if (Value m = scalars.lookup(operand))
        typed = m;
    SmallVector<Value> operands;
    for (Value operand : op.getOperands()) {
      if (Value m = scalars.lookup(operand))
        operands.push_back(m);
      else if (std::optional<double> c = constantOf(operand))
        operands.push_back(constant(typed.getType(), *c));
      else
        return fail(&op, "a body operand that is neither an input element "
                         "nor a float constant (the output's element is read "
                         "only by a reduction's combination)");
    }
    FailureOr<Value> result = scalarOp(&op, operands);
    if (failed(result))
      return ::mlir::failure();
    scalars[op.getResult(0)] = *result;
  }
  if (Value result = scalars.lookup(value))
    return result;
  if (std::optional<double> c = constantOf(value))
    return constant(like.getType(), *c);
  return fail(block->getParentOp(),
              "the value is not computed from the inputs");
}

LogicalResult Raiser::elementwise(Operation *op, ValueRange inputs,
                                  Value result, Block *block,
                                  ArrayRef<AffineMap> inputMaps) {
  auto resultType = cast<RankedTensorType>(result.getType());
  SmallVector<Value> arguments;
  Value like;
  for (auto [input, map] : llvm::zip(inputs, inputMaps)) {
    Value mapped = values.lookup(input);
    if (!mapped)
      return fail(op, "an input that is not computed from the tables");
    bool broadcastRow = resultType.getRank() == 2 && map.getNumResults() == 1 &&
                        map.getResult(0) == getAffineDimExpr(0, op->getContext());
    if (!map.isIdentity() && !broadcastRow)
      return fail(op, "an input map that is neither the identity nor a "
                      "per-edge scalar broadcast along the vectors");
    arguments.push_back(mapped);
    if (!like || (isa<VecType>(mapped.getType()) && !isa<VecType>(like.getType())))
      like = mapped;
  }
  if (!like)
    return fail(op, "an elementwise operation without inputs");
  auto yield = block->getTerminator();
  FailureOr<Value> value = body(block, arguments, yield->getOperand(0), like);
  if (failed(value))
    return ::mlir::failure();
  values[result] = *value;
  return success();
}

LogicalResult Raiser::reduction(linalg::GenericOp op) {
  MLIRContext *ctx = op.getContext();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap perEdge = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  if (iterators.size() != 2 || iterators[0] != utils::IteratorType::parallel ||
      iterators[1] != utils::IteratorType::reduction || maps.back() != perEdge)
    return fail(op, "a reduction must run along the vectors' axis: loops "
                    "(parallel, reduction), output (b, d) -> (b)");
  for (AffineMap map : ArrayRef<AffineMap>(maps).drop_back())
    if (!map.isIdentity())
      return fail(op, "a reduction's inputs must be read at (b, d)");
  Block *block = op.getBody();
  Value acc = block->getArguments().back();
  Value yielded = block->getTerminator()->getOperand(0);
  Operation *combine = yielded.getDefiningOp();
  if (!combine || combine->getBlock() != block || combine->getNumOperands() != 2 ||
      (combine->getOperand(0) != acc && combine->getOperand(1) != acc))
    return fail(op, "a reduction's body must yield combine(value, output)");
  Value element = combine->getOperand(0) == acc ? combine->getOperand(1)
                                                : combine->getOperand(0);
  FailureOr<ReductionKind> kind =
      combination(op, combine, op.getDpsInits()[0]);
  if (failed(kind))
    return ::mlir::failure();
  SmallVector<Value> arguments;
  for (Value input : op.getDpsInputs()) {
    Value mapped = values.lookup(input);
    if (!mapped || !isa<VecType>(mapped.getType()))
      return fail(op, "a reduction's input is not a vector per edge computed "
                      "from the tables");
    arguments.push_back(mapped);
  }
  if (arguments.empty())
    return fail(op, "a reduction without inputs");
  // (a * b) summed: an inner product.
  Operation *product = element.getDefiningOp();
  if (*kind == ReductionKind::sum && isa_and_nonnull<arith::MulFOp>(product) &&
      product->getBlock() == block) {
    auto a = dyn_cast<BlockArgument>(product->getOperand(0));
    auto b = dyn_cast<BlockArgument>(product->getOperand(1));
    if (a && b && a.getOwner() == block && b.getOwner() == block &&
        a != acc && b != acc && product->hasOneUse()) {
      Value lhs = arguments[a.getArgNumber()], rhs = arguments[b.getArgNumber()];
      if (lhs.getType() == rhs.getType()) {
        auto type = cast<VecType>(lhs.getType());
        values[op.getResult(0)] = VecMulVecOp::create(
            builder, op.getLoc(), batchedType(type, {}, type.getElementType()),
            lhs, rhs);
        return success();
      }
    }
  }
  // The elementwise value the body combines, then reduced.
  SmallVector<Value> withoutOutput(arguments.begin(), arguments.end());
  withoutOutput.push_back(Value());
  FailureOr<Value> value =
      body(block, withoutOutput, element, arguments.front(), combine);
  if (failed(value))
    return ::mlir::failure();
  if (!isa<VecType>(value->getType()))
    return fail(op, "a reduction's value is not a vector per edge");
  auto type = cast<VecType>(value->getType());
  values[op.getResult(0)] =
      ReduceOp::create(builder, op.getLoc(),
                       batchedType(type, {}, type.getElementType()), *kind, *value);
  return success();
}

FailureOr<ReductionKind> Raiser::combination(Operation *op, Operation *combine,
                                             Value init) {
  ReductionKind kind;
  double identity = 0;
  if (isa_and_nonnull<arith::AddFOp>(combine)) {
    kind = ReductionKind::sum;
  } else if (isa_and_nonnull<arith::MaximumFOp, arith::MaxNumFOp>(combine)) {
    kind = ReductionKind::max;
    identity = -INFINITY;
  } else if (isa_and_nonnull<arith::MinimumFOp, arith::MinNumFOp>(combine)) {
    kind = ReductionKind::min;
    identity = INFINITY;
  } else {
    return fail(combine ? combine : op,
                "a reduction combines with addf, maximumf or minimumf");
  }
  auto filled = fills.find(init);
  if (filled == fills.end() || filled->second != identity)
    return fail(op, "a reduction's output must start at its combination's "
                    "identity (linalg.fill with 0, -inf or +inf)");
  return kind;
}

LogicalResult Raiser::namedReduction(linalg::ReduceOp op) {
  if (op.getInputs().size() != 1 || op.getDimensions().size() != 1 ||
      op.getDimensions()[0] != 1)
    return fail(op, "linalg.reduce of one input along dimension 1 only");
  Value input = values.lookup(op.getInputs()[0]);
  if (!input || !isa<VecType>(input.getType()))
    return fail(op, "linalg.reduce of something that is not a vector per "
                    "edge computed from the tables");
  Block *block = &op.getCombiner().front();
  Operation *combine = block->getTerminator()->getOperand(0).getDefiningOp();
  FailureOr<ReductionKind> kind = combination(op, combine, op.getInits()[0]);
  if (failed(kind))
    return ::mlir::failure();
  auto type = cast<VecType>(input.getType());
  values[op.getResult(0)] =
      ReduceOp::create(builder, op.getLoc(),
                       batchedType(type, {}, type.getElementType()), *kind, input);
  return success();
}

namespace {
struct RaiseLinalgPass
    : public bvec::impl::BatchedVectorRaiseLinalgBase<RaiseLinalgPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> functions(
        getOperation().getOps<func::FuncOp>());
    for (func::FuncOp func : functions) {
      if (func.isExternal())
        continue;
      Raiser raiser(func);
      NotRaised why{nullptr, ""};
      if (failed(raiser.raise(why))) {
        why.op->emitRemark() << "not raised to bvec: " << why.reason;
        continue;
      }
      func->erase();
    }
  }
};
} // namespace
