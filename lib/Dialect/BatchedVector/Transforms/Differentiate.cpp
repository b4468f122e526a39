//===- Differentiate.cpp - gradient functions of bvec functions -----------===//
//
// Reverse-mode automatic differentiation of score functions: `@f_grad`
// recomputes what it needs of `@f` and propagates per-edge seeds back to
// the gathered rows, written in bvec operations so that it fuses into one
// kernel like `@f`. The gradient of each (table, index array) pair is a
// batch of rows (row-sparse), scattered by the caller; with
// `factor-matrices`, a matrix's is the factors of its outer products, which
// the caller sums per row of the table (a segment matrix product).
//
//===----------------------------------------------------------------------===//

#include "Dialect/BatchedVector/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace bvec {
#define GEN_PASS_DEF_BATCHEDVECTORDIFFERENTIATE
#include "Dialect/BatchedVector/Transforms/Passes.h.inc"
} // namespace bvec
} // namespace mlir

using namespace mlir;
using namespace mlir::bvec;

namespace {

/// The smallest 2-norm divided by in the 2-norm's gradient `x / |x|`: at
/// `x = 0` the gradient is 0 (every element of `x` is), and no finite seed
/// overflows.
constexpr double kNormFloor = 1e-20;

/// Builds `@<f>_grad` for the bvec function `f`.
class Differentiation {
public:
  Differentiation(FuncOp f, const llvm::StringSet<> &wrt, bool factorMatrices)
      : f(f), wrt(wrt), factorMatrices(factorMatrices), b(f.getContext()),
        loc(f.getLoc()) {}

  /// Creates the gradient function after `f`; fails with a diagnostic on
  /// `f`.
  LogicalResult run();

private:
  /// Whether rows gathered from `table` are differentiated.
  bool differentiates(Value table);
  /// Adds `delta` to the gradient of the forward value `value` (of `f`).
  void accumulate(Value value, Value delta);
  /// Propagates `dy`, the gradient of `op`'s result, to its operands.
  LogicalResult backward(Operation *op, Value dy);
  /// Appends the (lhs, rhs) factors of the outer products whose sum is the
  /// matrix gradient `dy` (negated with `negate`) to `terms`; fails where
  /// `dy` is not such a sum.
  LogicalResult outerTerms(Value dy, bool negate,
                           SmallVectorImpl<std::pair<Value, Value>> &terms);

  /// The value in the gradient function of `f`'s `value`.
  Value fwd(Value value) const { return mapping.lookup(value); }

  // Builders of the gradient's operations, all at the end of the body.
  Value constant(Type type, double value) {
    return ConstantOp::create(b, loc, type, value);
  }
  template <typename Op> Value binary(Value x, Value y) {
    return Op::create(b, loc, x.getType(), x, y);
  }
  template <typename Op> Value unary(Value x) {
    return Op::create(b, loc, x.getType(), x);
  }
  Value add(Value x, Value y) { return binary<AddOp>(x, y); }
  Value sub(Value x, Value y) { return binary<SubOp>(x, y); }
  Value mul(Value x, Value y) { return binary<MulOp>(x, y); }
  Value div(Value x, Value y) { return binary<DivOp>(x, y); }
  Value neg(Value x) { return unary<NegOp>(x); }
  Value sign(Value x) { return unary<SignOp>(x); }
  /// `s[b] * v[b]`.
  Value scale(Value s, Value v) {
    return ScalMulVecOp::create(b, loc, v.getType(), s, v);
  }
  /// The per-edge sum of `v`'s elements.
  Value sum(Value v) {
    auto type = cast<VecType>(v.getType());
    return ReduceOp::create(b, loc, scalarOf(type), ReductionKind::sum, v);
  }
  ScalarType scalarOf(BatchedType type) {
    return cast<ScalarType>(batchedType(type, {}, type.getElementType()));
  }

  FuncOp f;
  const llvm::StringSet<> &wrt;
  bool factorMatrices;
  OpBuilder b;
  Location loc;
  FuncOp grad;
  IRMapping mapping;
  /// Values of `f` that depend on a differentiated gather.
  DenseSet<Value> active;
  /// Gradients of values of `f`, as values of the gradient function.
  DenseMap<Value, Value> gradients;
  /// The rows gathered through a (table, index array) pair of `f`: their
  /// type and their gradient so far (null until one reaches them).
  struct Rows {
    Type type;
    Value gradient;
  };
  /// Every pair of a differentiated table, in the order of the first gather
  /// through it.
  llvm::MapVector<std::pair<Value, Value>, Rows> rows;
};

bool Differentiation::differentiates(Value table) {
  auto type = cast<TableType>(table.getType());
  if (!isa<FloatType>(type.getElementType()))
    return false;
  auto arg = cast<BlockArgument>(table);
  return wrt.empty() || wrt.contains(f.getArgName(arg.getArgNumber()));
}

void Differentiation::accumulate(Value value, Value delta) {
  if (!active.contains(value))
    return;
  auto [it, inserted] = gradients.try_emplace(value, delta);
  if (!inserted)
    it->second = add(it->second, delta);
}

LogicalResult Differentiation::backward(Operation *op, Value dy) {
  Value y = fwd(op->getResult(0));
  auto operand = [&](unsigned i) { return fwd(op->getOperand(i)); };
  auto one = [&](Type type) { return constant(type, 1.0); };
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<GatherVecOp, GatherMatOp>([&](auto gather) {
        Value &gradient =
            rows[{gather.getTable(), gather.getIndices()}].gradient;
        gradient = gradient ? add(gradient, dy) : dy;
        return success();
      })
      .Case([&](ConstantOp) { return success(); })
      .Case([&](SignOp) { return success(); }) // 0 almost everywhere
      .Case([&](AddOp add) {
        accumulate(add.getLhs(), dy);
        accumulate(add.getRhs(), dy);
        return success();
      })
      .Case([&](SubOp s) {
        accumulate(s.getLhs(), dy);
        if (active.contains(s.getRhs()))
          accumulate(s.getRhs(), neg(dy));
        return success();
      })
      .Case([&](MulOp m) {
        if (active.contains(m.getLhs()))
          accumulate(m.getLhs(), mul(dy, operand(1)));
        if (active.contains(m.getRhs()))
          accumulate(m.getRhs(), mul(dy, operand(0)));
        return success();
      })
      .Case([&](DivOp d) {
        // d(a / b) = da / b - (a / b) db / b.
        Value scaled = div(dy, operand(1));
        accumulate(d.getLhs(), scaled);
        if (active.contains(d.getRhs()))
          accumulate(d.getRhs(), neg(mul(scaled, y)));
        return success();
      })
      .Case<MaxOp, MinOp>([&](auto m) {
        // The larger (smaller) operand takes the gradient; equal operands
        // share it: weight (1 +- sign(a - b)) / 2 for the left one.
        Type type = y.getType();
        Value s = sign(sub(operand(0), operand(1)));
        if (isa<MinOp>(m.getOperation()))
          s = neg(s);
        Value left = mul(dy, mul(add(one(type), s), constant(type, 0.5)));
        if (active.contains(m.getLhs()))
          accumulate(m.getLhs(), left);
        if (active.contains(m.getRhs()))
          accumulate(m.getRhs(), sub(dy, left));
        return success();
      })
      .Case([&](NegOp n) {
        accumulate(n.getInput(), neg(dy));
        return success();
      })
      .Case([&](AbsOp a) {
        accumulate(a.getInput(), mul(dy, sign(operand(0))));
        return success();
      })
      .Case([&](ExpOp e) {
        accumulate(e.getInput(), mul(dy, y));
        return success();
      })
      .Case([&](LogOp l) {
        accumulate(l.getInput(), div(dy, operand(0)));
        return success();
      })
      .Case([&](SqrtOp s) {
        accumulate(s.getInput(), div(dy, add(y, y)));
        return success();
      })
      .Case([&](TanhOp t) {
        accumulate(t.getInput(), sub(dy, mul(dy, mul(y, y))));
        return success();
      })
      .Case([&](SigmoidOp s) {
        accumulate(s.getInput(),
                   mul(dy, mul(y, sub(one(y.getType()), y))));
        return success();
      })
      .Case([&](SinOp s) {
        accumulate(s.getInput(), mul(dy, unary<CosOp>(operand(0))));
        return success();
      })
      .Case([&](CosOp c) {
        accumulate(c.getInput(), neg(mul(dy, unary<SinOp>(operand(0)))));
        return success();
      })
      .Case([&](ScalMulVecOp m) {
        if (active.contains(m.getVec()))
          accumulate(m.getVec(), scale(operand(0), dy));
        if (active.contains(m.getScalar()))
          accumulate(m.getScalar(),
                     VecMulVecOp::create(b, loc,
                                         scalarOf(cast<VecType>(dy.getType())),
                                         dy, operand(1)));
        return success();
      })
      .Case([&](VecMulVecOp m) {
        if (active.contains(m.getLhs()))
          accumulate(m.getLhs(), scale(dy, operand(1)));
        if (active.contains(m.getRhs()))
          accumulate(m.getRhs(), scale(dy, operand(0)));
        return success();
      })
      .Case([&](NormOp n) {
        Value x = operand(0);
        if (n.getP() == 1) {
          accumulate(n.getInput(), scale(dy, sign(x)));
          return success();
        }
        Value floor = constant(y.getType(), kNormFloor);
        Value w = div(dy, binary<MaxOp>(y, floor));
        accumulate(n.getInput(), scale(w, x));
        return success();
      })
      .Case([&](ReduceOp r) {
        Value x = operand(0);
        auto type = cast<VecType>(x.getType());
        Value ones = one(type);
        switch (r.getKind()) {
        case ReductionKind::sum:
          accumulate(r.getInput(), scale(dy, ones));
          break;
        case ReductionKind::mean: {
          Value count = ShapedType::isDynamic(type.getLength())
                            ? sum(ones)
                            : constant(y.getType(), type.getLength());
          accumulate(r.getInput(), scale(div(dy, count), ones));
          break;
        }
        case ReductionKind::max:
        case ReductionKind::min: {
          // 1 where an element equals the extreme, shared among them.
          Value at = sub(ones, unary<AbsOp>(sign(sub(x, scale(y, ones)))));
          accumulate(r.getInput(), scale(div(dy, sum(at)), at));
          break;
        }
        }
        return success();
      })
      .Case([&](VecMulMatOp m) {
        if (active.contains(m.getVec()))
          accumulate(m.getVec(),
                     MatMulVecOp::create(b, loc, operand(0).getType(),
                                         operand(1), dy));
        if (active.contains(m.getMat()))
          accumulate(m.getMat(),
                     VecOuterVecOp::create(b, loc, operand(1).getType(),
                                           operand(0), dy));
        return success();
      })
      .Case([&](MatMulVecOp m) {
        if (active.contains(m.getVec()))
          accumulate(m.getVec(),
                     VecMulMatOp::create(b, loc, operand(1).getType(), dy,
                                         operand(0)));
        if (active.contains(m.getMat()))
          accumulate(m.getMat(),
                     VecOuterVecOp::create(b, loc, operand(0).getType(), dy,
                                           operand(1)));
        return success();
      })
      .Case([&](VecOuterVecOp m) {
        if (active.contains(m.getLhs()))
          accumulate(m.getLhs(),
                     MatMulVecOp::create(b, loc, operand(0).getType(), dy,
                                         operand(1)));
        if (active.contains(m.getRhs()))
          accumulate(m.getRhs(),
                     VecMulMatOp::create(b, loc, operand(1).getType(),
                                         operand(0), dy));
        return success();
      })
      .Case([&](SliceOp s) {
        accumulate(s.getInput(), PadOp::create(b, loc, operand(0).getType(),
                                               dy, s.getOffsetAttr()));
        return success();
      })
      .Case([&](PadOp p) {
        accumulate(p.getInput(), SliceOp::create(b, loc, operand(0).getType(),
                                                 dy, p.getOffsetAttr()));
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError()
               << "cannot be differentiated by bvec-differentiate";
      });
}

LogicalResult Differentiation::outerTerms(
    Value dy, bool negate, SmallVectorImpl<std::pair<Value, Value>> &terms) {
  Operation *def = dy.getDefiningOp();
  if (auto outer = dyn_cast_or_null<VecOuterVecOp>(def)) {
    Value lhs = outer.getLhs();
    terms.push_back({negate ? neg(lhs) : lhs, outer.getRhs()});
    return success();
  }
  if (auto sum = dyn_cast_or_null<AddOp>(def))
    return success(succeeded(outerTerms(sum.getLhs(), negate, terms)) &&
                   succeeded(outerTerms(sum.getRhs(), negate, terms)));
  if (auto difference = dyn_cast_or_null<SubOp>(def))
    return success(succeeded(outerTerms(difference.getLhs(), negate, terms)) &&
                   succeeded(outerTerms(difference.getRhs(), !negate, terms)));
  if (auto negation = dyn_cast_or_null<NegOp>(def))
    return outerTerms(negation.getInput(), !negate, terms);
  return failure();
}

LogicalResult Differentiation::run() {
  std::string name = (f.getSymName() + "_grad").str();
  if (SymbolTable::lookupNearestSymbolFrom(f, b.getStringAttr(name)))
    return f.emitOpError() << "cannot be differentiated: its gradient "
                              "function name '"
                           << name << "' is taken";
  for (unsigned i = 0, e = f.getNumResults(); i < e; ++i)
    if (!isa<ScalarType>(f.getResultTypes()[i]))
      return f.emitOpError()
             << "cannot be differentiated: result '" << f.getResultName(i)
             << "' is " << f.getResultTypes()[i]
             << ", not a batch of scalars (a gradient needs one seed per edge)";

  // The values that depend on a differentiated gather, and the (table,
  // index array) pairs those gathers read through: each gets a result,
  // even when its rows reach no result of f (zero).
  Block &body = f.getBody().front();
  for (Operation &op : body.without_terminator()) {
    bool isActive = false;
    if (isa<GatherVecOp, GatherMatOp>(op) && differentiates(op.getOperand(0))) {
      rows.try_emplace({op.getOperand(0), op.getOperand(1)},
                       Rows{op.getResult(0).getType(), Value()});
      isActive = true;
    }
    for (Value v : op.getOperands())
      isActive |= active.contains(v);
    if (isActive)
      active.insert(op.getResult(0));
  }
  if (rows.empty())
    return f.emitOpError() << "cannot be differentiated: it gathers from no "
                              "table that bvec-differentiate differentiates";

  // The signature: f's arguments, then one seed per result.
  llvm::StringSet<> names;
  SmallVector<StringRef> argNames;
  SmallVector<Type> argTypes(f.getArgumentTypes());
  SmallVector<std::string> seedNames;
  for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i) {
    argNames.push_back(f.getArgName(i));
    names.insert(f.getArgName(i));
  }
  for (unsigned i = 0, e = f.getNumResults(); i < e; ++i) {
    seedNames.push_back(("d_" + f.getResultName(i)).str());
    argTypes.push_back(f.getResultTypes()[i]);
  }
  for (const std::string &seed : seedNames) {
    if (!names.insert(seed).second)
      return f.emitOpError() << "cannot be differentiated: the seed name '"
                             << seed << "' is taken by an argument";
    argNames.push_back(seed);
  }

  b.setInsertionPointAfter(f);
  grad = FuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}),
                        argNames, {});
  Block &entry = grad.getBody().front();
  for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i)
    mapping.map(f.getArgument(i), entry.getArgument(i));

  // The forward computation, then the backward one.
  b.setInsertionPointToEnd(&entry);
  for (Operation &op : body.without_terminator()) {
    Operation *copy = b.clone(op, mapping);
    for (NamedAttribute attr : llvm::to_vector(copy->getDiscardableAttrs()))
      if (attr.getName().getValue().starts_with("bvec."))
        copy->removeDiscardableAttr(attr.getName());
  }
  Operation *ret = f.getReturn();
  for (auto [i, value] : llvm::enumerate(ret->getOperands()))
    accumulate(value, entry.getArgument(f.getNumArguments() + i));
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    Value result = op.getResult(0);
    Value dy = gradients.lookup(result);
    if (!dy)
      continue;
    if (failed(backward(&op, dy)))
      return failure();
  }

  // The results: one batch of rows per (table, index array).
  SmallVector<Value> results;
  SmallVector<StringRef> resultNames;
  SmallVector<std::string> storage;
  for (auto &[key, pair] : rows) {
    auto table = cast<BlockArgument>(key.first);
    auto indices = cast<BlockArgument>(key.second);
    std::string resultName = ("d_" + f.getArgName(table.getArgNumber()) + "_" +
                              f.getArgName(indices.getArgNumber()))
                                 .str();
    if (!names.insert(resultName).second)
      return f.emitOpError()
             << "cannot be differentiated: the gradient name '" << resultName
             << "' is taken by another parameter";
    auto matrix = dyn_cast<MatType>(pair.type);
    if (!factorMatrices || !matrix) {
      storage.push_back(resultName);
      // Rows that reach no result have a zero gradient.
      results.push_back(pair.gradient ? pair.gradient
                                      : constant(pair.type, 0.0));
      continue;
    }
    // A matrix's gradient as the factors of its outer products: results
    // `<name>_u<n>` and `<name>_v<n>`, row b's gradient the sum over n of
    // u<n>[b] (x) v<n>[b]. Rows that reach no result: one term of zeros.
    SmallVector<std::pair<Value, Value>> terms;
    if (!pair.gradient) {
      Type element = matrix.getElementType();
      terms.push_back(
          {constant(batchedType(matrix, {matrix.getRows()}, element), 0.0),
           constant(batchedType(matrix, {matrix.getCols()}, element), 0.0)});
    } else if (failed(outerTerms(pair.gradient, /*negate=*/false, terms))) {
      return f.emitOpError()
             << "cannot be differentiated with factor-matrices: the gradient "
                "of the rows of '"
             << f.getArgName(table.getArgNumber()) << "' gathered through '"
             << f.getArgName(indices.getArgNumber())
             << "' is not a sum of outer products of vectors";
    }
    for (auto [n, term] : llvm::enumerate(terms)) {
      for (auto [side, factor] : {std::pair{"_u", term.first},
                                  std::pair{"_v", term.second}}) {
        std::string factorName = resultName + side + std::to_string(n);
        if (!names.insert(factorName).second)
          return f.emitOpError()
                 << "cannot be differentiated: the gradient name '"
                 << factorName << "' is taken by another parameter";
        storage.push_back(factorName);
        results.push_back(factor);
      }
    }
  }
  for (const std::string &s : storage)
    resultNames.push_back(s);
  ReturnOp::create(b, loc, results);
  grad.setFunctionTypeAttr(TypeAttr::get(b.getFunctionType(
      argTypes, llvm::to_vector(ValueRange(results).getTypes()))));
  grad.setResultNamesAttr(b.getStrArrayAttr(resultNames));

  // The forward operations the gradient does not read.
  SmallVector<Operation *> ops;
  for (Operation &op : entry.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty())
      op->erase();
  return success();
}

struct BatchedVectorDifferentiatePass
    : bvec::impl::BatchedVectorDifferentiateBase<
          BatchedVectorDifferentiatePass> {
  using BatchedVectorDifferentiateBase::BatchedVectorDifferentiateBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringSet<> wanted, tables;
    for (const std::string &name : functions)
      wanted.insert(name);
    for (const std::string &name : wrt)
      tables.insert(name);
    SmallVector<FuncOp> targets;
    for (FuncOp f : module.getOps<FuncOp>())
      if (wanted.empty() || wanted.contains(f.getSymName()))
        targets.push_back(f);
    for (const auto &name : wanted)
      if (!module.lookupSymbol<FuncOp>(name.getKey())) {
        module.emitError() << "bvec-differentiate: no bvec.func named '"
                           << name.getKey() << "'";
        return signalPassFailure();
      }
    // With `wrt`, functions that gather from none of its tables have no
    // gradient and are left alone; every table of `wrt` must be in one.
    llvm::StringSet<> found;
    for (FuncOp f : targets) {
      bool relevant = tables.empty();
      for (const auto &table : tables) {
        BlockArgument arg = f.getArgumentByName(table.getKey());
        if (arg && isa<TableType>(arg.getType())) {
          found.insert(table.getKey());
          relevant = true;
        }
      }
      if (relevant &&
          failed(Differentiation(f, tables, factorMatrices).run()))
        return signalPassFailure();
    }
    for (const auto &table : tables)
      if (!found.contains(table.getKey())) {
        module.emitError() << "bvec-differentiate: no differentiated function "
                              "has a table named '"
                           << table.getKey() << "'";
        return signalPassFailure();
      }
  }
};

} // namespace
