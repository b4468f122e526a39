//===- FuseLinear.cpp - chained linear layers by composed weights ---------===//
//
// Pigeon's linear-operator fusion: a typed linear layer whose rows are
// multiplied again by a matrix is one typed linear layer by the composed
// matrices. The composition (one small product per type) is left to the
// caller as a derived parameter, so that its gradient flows back through
// the caller's autograd.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Graph/Transforms/Passes.h"

#include "Dialect/Common/DerivedParameters.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir {
namespace graph {
#define GEN_PASS_DEF_GRAPHFUSELINEAR
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace graph
} // namespace mlir

using namespace mlir;
using namespace mlir::graph;

namespace {

/// A chain `second(first(x, W), Q)` to rewrite as one typed linear layer.
struct Chain {
  Operation *second; // graph.linear or graph.typed_linear
  TypedLinearOp first;
  Value rhs; // q (2-D, shared) or Q (3-D, per type)
};

/// Whether the second layer's product may be folded into `first`'s
/// matrices: the rows it multiplies are `first`'s, one per row, typed the
/// same way.
std::optional<Chain> chainOf(Operation *op) {
  if (auto fuse = op->getAttrOfType<BoolAttr>("kge.fuse"); fuse && !fuse.getValue())
    return std::nullopt;
  TypedLinearOp first;
  Value rhs;
  if (auto linear = dyn_cast<LinearOp>(op)) {
    if (linear.getBias() || linear.getTransposed())
      return std::nullopt;
    first = linear.getInput().getDefiningOp<TypedLinearOp>();
    rhs = linear.getWeights();
  } else if (auto typed = dyn_cast<TypedLinearOp>(op)) {
    first = typed.getInput().getDefiningOp<TypedLinearOp>();
    if (!first || typed.getTransposed() || typed.getGraph() != first.getGraph() ||
        typed.getBy() != first.getBy())
      return std::nullopt;
    bool nodes = first.getRows() == Rows::nodes;
    // The second layer reads the first's rows in order, by the same type.
    if (typed.getRows() != (nodes ? Rows::nodes : Rows::edges) ||
        typed.getBy() != (nodes ? TypeOf::ntype : TypeOf::etype))
      return std::nullopt;
    rhs = typed.getWeights();
  } else {
    return std::nullopt;
  }
  if (!first || first.getTransposed())
    return std::nullopt;
  return Chain{op, first, rhs};
}

class Fuser {
public:
  explicit Fuser(func::FuncOp f) : f(f), b(f.getContext()), params(f) {}
  void run();

private:
  /// The composed matrices of `chain` as a new derived parameter (one per
  /// pair of parameters).
  Value composed(Chain chain, StringAttr lhs, StringAttr rhs);

  func::FuncOp f;
  OpBuilder b;
  kge::DerivedParameters params;
  llvm::DenseMap<std::pair<Value, Value>, Value> built;
};

Value Fuser::composed(Chain chain, StringAttr lhs, StringAttr rhs) {
  Value w = chain.first.getWeights();
  auto key = std::make_pair(w, chain.rhs);
  if (Value known = built.lookup(key))
    return known;
  auto wType = cast<RankedTensorType>(w.getType());
  auto rhsType = cast<RankedTensorType>(chain.rhs.getType());
  // [T, K, D] x [D, N] or [T, D, N] -> [T, K, N], in f32.
  auto type = RankedTensorType::get(
      {wType.getDimSize(0), wType.getDimSize(1),
       rhsType.getDimSize(rhsType.getRank() - 1)},
      b.getF32Type());
  NamedAttribute derived[] = {
      b.getNamedAttr("function", b.getStringAttr("compose")),
      b.getNamedAttr("lhs", lhs), b.getNamedAttr("rhs", rhs)};
  std::string base = (lhs.getValue() + "_" + rhs.getValue()).str();
  Value arg = params.add(type, base, base, derived, chain.second->getLoc());
  if (!arg)
    return {};
  built[key] = arg;
  return arg;
}

void Fuser::run() {
  // One chain at a time, to a fixed point: a fused layer may head the
  // next chain (x W1 W2 W3: compose(compose(W1, W2), W3)).
  llvm::DenseSet<Operation *> skipped;
  while (true) {
    std::optional<Chain> next;
    f.walk([&](Operation *op) {
      if (skipped.contains(op))
        return WalkResult::advance();
      next = chainOf(op);
      return next ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (!next)
      return;
    Chain chain = *next;
    StringAttr lhs = params.nameOf(chain.first.getWeights());
    StringAttr rhs = params.nameOf(chain.rhs);
    Value c = lhs && rhs ? composed(chain, lhs, rhs) : Value();
    if (!c) {
      skipped.insert(chain.second);
      continue;
    }
    TypedLinearOp first = chain.first;
    b.setInsertionPoint(chain.second);
    auto fused = TypedLinearOp::create(
        b, chain.second->getLoc(), chain.second->getResult(0).getType(),
        first.getGraph(), first.getInput(), c, first.getRows(), first.getBy(),
        /*transposed=*/false);
    fused->setDiscardableAttrs(chain.second->getDiscardableAttrDictionary());
    chain.second->replaceAllUsesWith(fused);
    chain.second->erase();
    if (first->use_empty())
      first->erase();
  }
}

struct GraphFuseLinearPass
    : graph::impl::GraphFuseLinearBase<GraphFuseLinearPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        Fuser(func).run();
  }
};
} // namespace
