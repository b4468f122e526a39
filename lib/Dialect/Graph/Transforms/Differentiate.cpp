//===- Differentiate.cpp - backward functions of graph functions ----------===//
//
// Reverse-mode automatic differentiation at the inter-operator level: the
// gradient of a graph function's result with respect to the inputs and
// weights of its layers, written in graph operations (transposed typed
// linear layers aggregated to the other end, outer sums per edge type),
// so that the backward function lowers through tile like the forward one.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Graph/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace graph {
#define GEN_PASS_DEF_GRAPHDIFFERENTIATE
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace graph
} // namespace mlir

using namespace mlir;
using namespace mlir::graph;

namespace {

/// The other end of an edge's rows: the end a message came from when its
/// gradient flows back.
Rows endRows(End end) { return end == End::dst ? Rows::dst : Rows::src; }

/// Builds `@<f>_grad` for the graph function `f`.
class Differentiation {
public:
  explicit Differentiation(func::FuncOp f) : f(f), b(f.getContext()) {}
  LogicalResult run();

private:
  /// Adds `delta` to the gradient of `value`.
  void accumulate(Value value, Value delta);
  /// The gradient flowing into each operand of `op`, given `dy`, the
  /// gradient of its result.
  LogicalResult backward(Operation *op, Value dy);
  LogicalResult backwardLinear(LinearOp op, Value dy);
  LogicalResult backwardAggregate(AggregateOp op, Value dy);
  LogicalResult backwardTypedLinear(TypedLinearOp op, Value dy);
  LogicalResult backwardInnerProduct(InnerProductOp op, Value dy);
  /// The gradients of `linear`'s input and weights given `dy`, the
  /// gradient of its rows as they reach `dyRows` (rows(nodes), rows(edges),
  /// or the end an aggregate sums them into, each scaled by `weight`): the
  /// rows of `dy` through the transposed matrices (summed back into the
  /// edge's end the input was read at) and an outer sum per type.
  LogicalResult backwardTyped(TypedLinearOp linear, Value dy, Rows dyRows,
                              Value weight);
  /// A graph of the function (for outer sums over its nodes).
  Value anyGraph();
  /// `%w`'s number of matrices (dimension 0).
  Value numTypes(Value weights, Location loc);
  /// Fails unless `value` is an f32 tensor (the gradients' type).
  LogicalResult expectF32(Operation *op, Value value, StringRef what);

  func::FuncOp f;
  func::FuncOp grad;
  OpBuilder b;
  llvm::DenseMap<Value, Value> gradients;
  /// Typed linear layers differentiated with their aggregate.
  llvm::SmallPtrSet<Operation *, 4> fused;
};

void Differentiation::accumulate(Value value, Value delta) {
  auto [it, inserted] = gradients.try_emplace(value, delta);
  if (!inserted)
    it->second = arith::AddFOp::create(b, delta.getLoc(), it->second, delta);
}

Value Differentiation::anyGraph() {
  for (auto coo : grad.getBody().getOps<CooOp>())
    return coo.getResult();
  return Value();
}

Value Differentiation::numTypes(Value weights, Location loc) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  return tensor::DimOp::create(b, loc, weights, zero);
}

LogicalResult Differentiation::expectF32(Operation *op, Value value,
                                         StringRef what) {
  if (cast<ShapedType>(value.getType()).getElementType().isF32())
    return success();
  return op->emitOpError() << "is differentiated with respect to its " << what
                           << " of type " << value.getType()
                           << "; gradients are computed in f32";
}

LogicalResult Differentiation::backwardLinear(LinearOp op, Value dy) {
  Location loc = op.getLoc();
  Value x = op.getInput(), w = op.getWeights();
  if (failed(expectF32(op, x, "input")) || failed(expectF32(op, w, "weights")))
    return failure();
  bool t = op.getTransposed();
  // y = x w (+ b): dx = dy w^T; y = x w^T: dx = dy w.
  Value dx = LinearOp::create(b, loc, x.getType(), dy, w, Value(),
                              /*transposed=*/!t);
  Value g = anyGraph();
  if (!g)
    return op.emitOpError() << "is differentiated with respect to its "
                               "weights, but the function builds no graph "
                               "(graph.outer_sum sums over a graph's nodes)";
  // dw = x^T dy (transposed weights: dy^T x).
  Value dw = OuterSumOp::create(b, loc, w.getType(), g, t ? dy : x, t ? x : dy,
                                Rows::nodes, Rows::nodes, TypeOfAttr(),
                                Value(), Value());
  accumulate(x, dx);
  accumulate(w, dw);
  return success();
}

LogicalResult Differentiation::backwardTyped(TypedLinearOp linear, Value dy,
                                             Rows dyRows, Value weight) {
  Location loc = linear.getLoc();
  Value g = linear.getGraph(), x = linear.getInput(), w = linear.getWeights();
  if (failed(expectF32(linear, x, "input")) ||
      failed(expectF32(linear, w, "weights")))
    return failure();
  Rows rows = linear.getRows();
  TypeOf by = linear.getBy();
  bool t = linear.getTransposed();
  bool atEnd = rows == Rows::src || rows == Rows::dst;
  auto edgeRows = RankedTensorType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type());
  // One row per row of dy (an edge's rows at an edge's end: per edge).
  Value back = TypedLinearOp::create(b, loc, atEnd ? Type(edgeRows) : x.getType(),
                                     g, dy, w, dyRows, by, /*transposed=*/!t);
  Value dx = back;
  if (atEnd)
    dx = AggregateOp::create(b, loc, x.getType(), g, back, EndAttr(), weight,
                             rows == Rows::src ? End::src : End::dst,
                             Reduce::sum);
  // dw = x^T dy per type (transposed matrices: dy^T x).
  Value dw = OuterSumOp::create(
      b, loc, w.getType(), g, t ? dy : x, t ? x : dy, t ? dyRows : rows,
      t ? rows : dyRows, TypeOfAttr::get(b.getContext(), by),
      numTypes(w, loc), weight);
  accumulate(x, dx);
  accumulate(w, dw);
  return success();
}

/// The end of an edge whose rows `rows` reads (src or dst rows only).
static std::optional<End> endOf(Rows rows) {
  if (rows == Rows::src)
    return End::src;
  if (rows == Rows::dst)
    return End::dst;
  return std::nullopt;
}

LogicalResult Differentiation::backwardAggregate(AggregateOp op, Value dy) {
  if (std::optional<End> from = op.getRows()) {
    // out[to(e)] += w_e x[from(e)]: x gets w_e dy[to(e)] summed into the
    // `from` ends; computed weights get <dy[to(e)], x[from(e)]>.
    Location loc = op.getLoc();
    Value x = op.getInput(), weight = op.getWeight();
    if (failed(expectF32(op, x, "input")))
      return failure();
    accumulate(x, AggregateOp::create(b, loc, x.getType(), op.getGraph(), dy,
                                      EndAttr::get(b.getContext(), op.getTo()),
                                      weight, *from, Reduce::sum));
    if (!isa<BlockArgument>(weight))
      accumulate(weight, InnerProductOp::create(b, loc, weight.getType(),
                                                op.getGraph(), dy, x,
                                                endRows(op.getTo()),
                                                endRows(*from)));
    return success();
  }
  auto linear = op.getInput().getDefiningOp<TypedLinearOp>();
  if (!linear || !linear->hasOneUse())
    return op.emitOpError() << "aggregates rows that are not a typed linear "
                               "layer's result used only here; its backward "
                               "is not derived (per-edge tensors)";
  Rows rows = linear.getRows();
  if ((rows != Rows::src && rows != Rows::dst) ||
      linear.getBy() != TypeOf::etype)
    return linear.emitOpError()
           << "rows(" << stringifyRows(rows) << ") by("
           << stringifyTypeOf(linear.getBy())
           << ") is not differentiated: the backward of an aggregated typed "
              "linear layer takes a node's rows at an edge's end by the edge "
              "type";
  if (linear.getGraph() != op.getGraph())
    return op.emitOpError() << "aggregates rows of another graph value";
  // Each edge's message went from rows(rows) to its `to` end: the gradient
  // is read at that end.
  fused.insert(linear);
  Value weight = op.getWeight();
  // Weights computed in the function (attention) are differentiated: each
  // edge's is the inner product of its message with the gradient at its
  // end. Parameters (normalizations of the graph) are constants.
  if (weight && !isa<BlockArgument>(weight)) {
    auto type = cast<ShapedType>(weight.getType());
    if (type.getRank() != 2)
      return op.emitOpError()
             << "takes computed weights of type " << type
             << "; their gradient is per-edge scalars [E, 1]";
    Value dweight = InnerProductOp::create(
        b, op.getLoc(), weight.getType(), op.getGraph(), dy, linear.getResult(),
        endRows(op.getTo()), Rows::edges);
    accumulate(weight, dweight);
  }
  return backwardTyped(linear, dy, endRows(op.getTo()), weight);
}

LogicalResult Differentiation::backwardTypedLinear(TypedLinearOp op, Value dy) {
  Rows rows = op.getRows();
  TypeOf by = op.getBy();
  bool nodes = rows == Rows::nodes;
  if ((nodes && by != TypeOf::ntype) || (!nodes && by != TypeOf::etype))
    return op.emitOpError()
           << "rows(" << stringifyRows(rows) << ") by(" << stringifyTypeOf(by)
           << ") is not differentiated: a typed linear layer's backward takes "
              "an edge's rows by the edge type or a node's by the node type";
  // dy's rows are the result's: one per node (rows(nodes)) or per edge.
  return backwardTyped(op, dy, nodes ? Rows::nodes : Rows::edges, Value());
}

LogicalResult Differentiation::backwardInnerProduct(InnerProductOp op,
                                                    Value dy) {
  // s_e = <m_e, y_end(e)> with m = a typed linear layer's edge rows (used
  // only here) and y a node's rows at an edge's end (HGT's attention): the
  // layer's input and weights get y's rows through its transposed matrices
  // scaled by ds_e (an aggregate and an outer sum weighted by ds); y gets
  // the layer's rows (recomputed) scaled by ds_e, summed into its end.
  for (bool lhsTyped : {true, false}) {
    Value typedSide = lhsTyped ? op.getLhs() : op.getRhs();
    Value other = lhsTyped ? op.getRhs() : op.getLhs();
    Rows typedRows = lhsTyped ? op.getLhsRows() : op.getRhsRows();
    Rows otherRows = lhsTyped ? op.getRhsRows() : op.getLhsRows();
    auto linear = typedSide.getDefiningOp<TypedLinearOp>();
    if (!linear || !linear->hasOneUse() || typedRows != Rows::edges ||
        (linear.getRows() != Rows::src && linear.getRows() != Rows::dst) ||
        linear.getBy() != TypeOf::etype || linear.getTransposed() ||
        (otherRows != Rows::src && otherRows != Rows::dst) ||
        linear.getGraph() != op.getGraph())
      continue;
    if (failed(expectF32(op, other, "rows")))
      return failure();
    fused.insert(linear);
    if (failed(backwardTyped(linear, other, otherRows, dy)))
      return failure();
    Value again = b.clone(*linear)->getResult(0);
    accumulate(other, AggregateOp::create(
                          b, op.getLoc(), other.getType(), op.getGraph(), again,
                          EndAttr(), dy,
                          otherRows == Rows::src ? End::src : End::dst,
                          Reduce::sum));
    return success();
  }
  // Two nodes' rows at the edges' ends: each side gets the other's rows
  // scaled by ds, summed into its end.
  std::optional<End> lhsEnd = endOf(op.getLhsRows()),
                     rhsEnd = endOf(op.getRhsRows());
  if (lhsEnd && rhsEnd) {
    Location loc = op.getLoc();
    MLIRContext *context = b.getContext();
    accumulate(op.getLhs(),
               AggregateOp::create(b, loc, op.getLhs().getType(), op.getGraph(),
                                   op.getRhs(), EndAttr::get(context, *rhsEnd),
                                   dy, *lhsEnd, Reduce::sum));
    accumulate(op.getRhs(),
               AggregateOp::create(b, loc, op.getRhs().getType(), op.getGraph(),
                                   op.getLhs(), EndAttr::get(context, *lhsEnd),
                                   dy, *rhsEnd, Reduce::sum));
    return success();
  }
  return op.emitOpError()
         << "is differentiated when one side is a typed linear layer's edge "
            "rows by edge type (rows(src) or rows(dst), used only here) and "
            "the other a node's rows at an edge's end, or both are nodes' "
            "rows at the edges' ends";
}

LogicalResult Differentiation::backward(Operation *op, Value dy) {
  if (auto add = dyn_cast<arith::AddFOp>(op)) {
    accumulate(add.getLhs(), dy);
    accumulate(add.getRhs(), dy);
    return success();
  }
  if (auto linear = dyn_cast<LinearOp>(op))
    return backwardLinear(linear, dy);
  if (auto aggregate = dyn_cast<AggregateOp>(op))
    return backwardAggregate(aggregate, dy);
  if (auto typed = dyn_cast<TypedLinearOp>(op))
    return backwardTypedLinear(typed, dy);
  if (auto leaky = dyn_cast<LeakyReluOp>(op)) {
    accumulate(leaky.getInput(),
               LeakyReluGradOp::create(b, leaky.getLoc(), leaky.getType(),
                                       leaky.getInput(), dy,
                                       leaky.getSlopeAttr()));
    return success();
  }
  if (auto inner = dyn_cast<InnerProductOp>(op))
    return backwardInnerProduct(inner, dy);
  if (auto softmax = dyn_cast<EdgeSoftmaxOp>(op)) {
    accumulate(softmax.getInput(),
               EdgeSoftmaxGradOp::create(b, softmax.getLoc(), softmax.getType(),
                                         softmax.getGraph(),
                                         softmax.getResult(), dy,
                                         softmax.getTo()));
    return success();
  }
  return op->emitOpError() << "has no backward rule (graph-differentiate "
                              "derives sums, linear and typed linear layers, "
                              "aggregates of typed linear layers, edge "
                              "softmaxes, leaky ReLUs and inner products)";
}

LogicalResult Differentiation::run() {
  MLIRContext *context = f.getContext();
  Location loc = f.getLoc();
  if (!f.getBody().hasOneBlock() || f.getNumResults() != 1)
    return f.emitOpError() << "is differentiated as one block returning one "
                              "result (the layer's output)";
  std::string name = (f.getSymName() + "_grad").str();
  auto module = f->getParentOfType<ModuleOp>();
  if (SymbolTable::lookupSymbolIn(module, name))
    return f.emitOpError() << "has a backward function '@" << name
                           << "' already";
  auto resultType = dyn_cast<RankedTensorType>(f.getResultTypes()[0]);
  if (!resultType || !resultType.getElementType().isF32())
    return f.emitOpError() << "returns " << f.getResultTypes()[0]
                           << "; graph-differentiate takes an f32 tensor";

  // The parameters' names (kge.param) and the result's.
  auto paramName = [&](unsigned n) -> std::string {
    if (auto named = f.getArgAttrOfType<StringAttr>(n, "kge.param"))
      return named.str();
    return "arg" + std::to_string(n);
  };
  std::string resultName = "out";
  if (auto named = f.getResultAttrOfType<StringAttr>(0, "kge.param"))
    resultName = named.str();

  // The gradients' names must not be taken by the parameters.
  llvm::StringSet<> taken;
  for (unsigned n = 0; n < f.getNumArguments(); ++n)
    taken.insert(paramName(n));
  auto clash = [&](const std::string &name) -> LogicalResult {
    if (!taken.contains(name))
      return success();
    return f.emitOpError() << "has a parameter named '" << name
                           << "', the name of a gradient of its backward "
                              "function; rename it";
  };
  if (failed(clash("grad_" + resultName)))
    return failure();
  SmallVector<Type> inputs(f.getArgumentTypes());
  inputs.push_back(resultType);
  b.setInsertionPointAfter(f);
  grad = func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, {}));
  Block *body = grad.addEntryBlock();
  for (unsigned n = 0; n < f.getNumArguments(); ++n)
    if (DictionaryAttr attrs = f.getArgAttrDict(n))
      grad.setArgAttrs(n, attrs);
  grad.setArgAttr(f.getNumArguments(), "kge.param",
                  b.getStringAttr("grad_" + resultName));

  // The forward computation, cloned (what the backward does not read is
  // erased below).
  IRMapping mapping;
  for (unsigned n = 0; n < f.getNumArguments(); ++n)
    mapping.map(f.getArgument(n), body->getArgument(n));
  b.setInsertionPointToStart(body);
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  for (Operation &op : f.getBody().front().without_terminator())
    b.clone(op, mapping);

  // Reverse mode, last operation first.
  Value dy = body->getArgument(f.getNumArguments());
  gradients[mapping.lookup(ret.getOperand(0))] = dy;
  SmallVector<Operation *> ops;
  for (Operation &op : *body)
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    if (op->getNumResults() != 1)
      continue;
    auto it = gradients.find(op->getResult(0));
    if (it == gradients.end() || fused.contains(op))
      continue;
    if (failed(backward(op, it->second))) {
      grad.erase();
      return failure();
    }
  }

  // The gradients of the parameters, in their order.
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  SmallVector<std::string> names;
  for (unsigned n = 0; n < f.getNumArguments(); ++n) {
    auto it = gradients.find(body->getArgument(n));
    if (it == gradients.end())
      continue;
    results.push_back(it->second);
    resultTypes.push_back(it->second.getType());
    names.push_back("grad_" + paramName(n));
    if (failed(clash(names.back()))) {
      grad.erase();
      return failure();
    }
  }
  if (results.empty()) {
    grad.erase();
    return f.emitOpError() << "has no parameter that its result depends on "
                              "through a differentiated layer";
  }
  func::ReturnOp::create(b, loc, results);
  grad.setType(b.getFunctionType(inputs, resultTypes));
  for (auto [n, resultName] : llvm::enumerate(names))
    grad.setResultAttr(n, "kge.param", b.getStringAttr(resultName));

  // Dead forward operations (all pure) go.
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
      if (!op.hasTrait<OpTrait::IsTerminator>() && op.use_empty() &&
          isPure(&op)) {
        op.erase();
        erased = true;
      }
  }
  (void)context;
  return mlir::verify(grad);
}

struct GraphDifferentiatePass
    : graph::impl::GraphDifferentiateBase<GraphDifferentiatePass> {
  using GraphDifferentiateBase::GraphDifferentiateBase;
  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      bool hasGraphOps = false;
      func.walk([&](Operation *op) {
        hasGraphOps |= isa<GraphDialect>(op->getDialect());
      });
      if (!func.isExternal() && hasGraphOps)
        funcs.push_back(func);
    }
    for (func::FuncOp func : funcs)
      if (failed(Differentiation(func).run()))
        return signalPassFailure();
    if (!keepForward)
      for (func::FuncOp func : funcs)
        func.erase();
  }
};
} // namespace
