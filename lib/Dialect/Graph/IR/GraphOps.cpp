//===- GraphOps.cpp - graph operations ------------------------------------===//

#include "Dialect/Graph/IR/GraphDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::graph;

#define GET_OP_CLASSES
#include "Dialect/Graph/IR/GraphOps.cpp.inc"

namespace {
/// Fails with a diagnostic when two static extents differ: `what` names
/// the first, `other` the second.
LogicalResult sameExtent(Operation *op, int64_t extent, int64_t otherExtent,
                         const Twine &what, const Twine &other) {
  if (ShapedType::isDynamic(extent) || ShapedType::isDynamic(otherExtent) ||
      extent == otherExtent)
    return success();
  return op->emitOpError() << what << " has " << extent << " but " << other
                           << " has " << otherExtent;
}

/// Fails with a diagnostic when a layer's input and weights hold different
/// element types.
LogicalResult sameElements(Operation *op, ShapedType input,
                           ShapedType weights) {
  if (input.getElementType() == weights.getElementType())
    return success();
  return op->emitOpError() << "the input's elements (" << input.getElementType()
                           << ") and the weights' ("
                           << weights.getElementType() << ") differ";
}

int64_t dim(Value value, unsigned d) {
  return cast<ShapedType>(value.getType()).getDimSize(d);
}

/// The number of edges of `graph` when it is known statically (from the
/// tensors of its graph.coo), else dynamic.
int64_t staticEdges(Value graph) {
  if (auto coo = graph.getDefiningOp<CooOp>())
    return dim(coo.getSrc(), 0);
  return ShapedType::kDynamic;
}
/// Fails unless `value` holds one scalar per row ([R] or [R, 1]).
LogicalResult edgeScalars(Operation *op, Value value, StringRef what) {
  auto type = cast<ShapedType>(value.getType());
  if (type.getRank() == 1 || type.getDimSize(1) == 1)
    return success();
  return op->emitOpError() << what << " hold one scalar per edge ([E] or "
                              "[E, 1]), got "
                           << type;
}
} // namespace

LogicalResult CooOp::verify() {
  if (failed(sameExtent(*this, dim(getSrc(), 0), dim(getDst(), 0),
                        "the source indices' length", "the destinations'")) ||
      failed(sameExtent(*this, dim(getSrc(), 0), dim(getEtype(), 0),
                        "the source indices' length", "the edge types'")))
    return failure();
  return success();
}

LogicalResult TypedLinearOp::verify() {
  Rows rows = getRows();
  TypeOf by = getBy();
  if (rows == Rows::nodes && by != TypeOf::ntype)
    return emitOpError() << "rows(nodes) take the node's own type: by(ntype), "
                            "got by("
                         << stringifyTypeOf(by) << ")";
  if (rows != Rows::nodes && by == TypeOf::ntype)
    return emitOpError() << "by(ntype) is for rows(nodes); an edge's rows "
                            "take by(etype), by(src_ntype) or by(dst_ntype)";
  if (by != TypeOf::etype)
    if (auto coo = getGraph().getDefiningOp<CooOp>(); coo && !coo.getNtype())
      return emitOpError() << "by(" << stringifyTypeOf(by)
                           << ") needs node types: a graph built with "
                              "graph.coo ... ntypes(...)";
  auto input = cast<ShapedType>(getInput().getType());
  auto weights = cast<ShapedType>(getWeights().getType());
  if (failed(sameElements(*this, input, weights)))
    return failure();
  // (Transposed: [N, K] matrices.)
  unsigned inDim = getTransposed() ? 2 : 1, outDim = getTransposed() ? 1 : 2;
  if (failed(sameExtent(*this, input.getDimSize(1), weights.getDimSize(inDim),
                        "the input's row length",
                        getTransposed() ? "the weights' matrices' columns"
                                        : "the weights' matrices' rows")) ||
      failed(sameExtent(*this, dim(getResult(), 1), weights.getDimSize(outDim),
                        "the result's row length",
                        getTransposed() ? "the weights' matrices' rows"
                                        : "the weights' matrices' columns")))
    return failure();
  // One result row per input row (edges, nodes) or per edge (src, dst).
  if (rows == Rows::edges || rows == Rows::nodes)
    return sameExtent(*this, dim(getResult(), 0), input.getDimSize(0),
                      "the result's row count", "the input's");
  if (failed(sameExtent(*this, dim(getResult(), 0), staticEdges(getGraph()),
                        "the result's row count", "the graph's edge count")))
    return failure();
  return success();
}

LogicalResult LinearOp::verify() {
  auto input = cast<ShapedType>(getInput().getType());
  auto weights = cast<ShapedType>(getWeights().getType());
  if (failed(sameElements(*this, input, weights)))
    return failure();
  unsigned inDim = getTransposed() ? 1 : 0, outDim = getTransposed() ? 0 : 1;
  if (failed(sameExtent(*this, input.getDimSize(1), weights.getDimSize(inDim),
                        "the input's row length",
                        getTransposed() ? "the weights' columns"
                                        : "the weights' rows")) ||
      failed(sameExtent(*this, dim(getResult(), 1), weights.getDimSize(outDim),
                        "the result's row length",
                        getTransposed() ? "the weights' rows"
                                        : "the weights' columns")) ||
      failed(sameExtent(*this, dim(getResult(), 0), input.getDimSize(0),
                        "the result's row count", "the input's")))
    return failure();
  if (getBias() &&
      failed(sameExtent(*this, dim(getBias(), 0), weights.getDimSize(outDim),
                        "the bias' length", "the weights' columns")))
    return failure();
  return success();
}

LogicalResult AggregateOp::verify() {
  if (failed(sameExtent(*this, dim(getResult(), 1), dim(getInput(), 1),
                        "the result's row length", "the input's")))
    return failure();
  if (getRows() && !getWeight())
    return emitOpError() << "rows(" << stringifyEnd(*getRows())
                         << ") sums node rows read at an edge's end, each "
                            "scaled by its edge's weights: weights(...) "
                            "required";
  if (!getRows() &&
      failed(sameExtent(*this, dim(getInput(), 0), staticEdges(getGraph()),
                        "the input's row count (one per edge)",
                        "the graph's edge count")))
    return failure();
  if (getWeight() && failed(edgeScalars(*this, getWeight(), "the weights")))
    return failure();
  if (getWeight() &&
      ((!getRows() &&
        failed(sameExtent(*this, dim(getWeight(), 0), dim(getInput(), 0),
                          "the weights' length (one per edge)",
                          "the input's row count"))) ||
       failed(sameExtent(*this, dim(getWeight(), 0), staticEdges(getGraph()),
                         "the weights' length (one per edge)",
                         "the graph's edge count"))))
    return failure();
  return success();
}

LogicalResult OuterSumOp::verify() {
  Rows lhsRows = getLhsRows(), rhsRows = getRhsRows();
  bool nodes = lhsRows == Rows::nodes || rhsRows == Rows::nodes;
  if (nodes && (lhsRows != rhsRows))
    return emitOpError() << "rows(" << stringifyRows(lhsRows) << ", "
                         << stringifyRows(rhsRows)
                         << ") pair a node's row with an edge's; rows(nodes) "
                            "go with rows(nodes)";
  std::optional<TypeOf> by = getBy();
  if (by && *by != TypeOf::etype && *by != TypeOf::ntype)
    return emitOpError() << "by(" << stringifyTypeOf(*by)
                         << ") is not supported: the sum is split by the "
                            "edge's type (by(etype), edge rows) or the "
                            "node's (by(ntype), rows(nodes))";
  if (by && nodes != (*by == TypeOf::ntype))
    return emitOpError() << "by(" << stringifyTypeOf(*by) << ") takes "
                         << (nodes ? "edge rows, not rows(nodes)"
                                   : "rows(nodes), not edge rows");
  if (by == TypeOf::ntype)
    if (auto coo = getGraph().getDefiningOp<CooOp>(); coo && !coo.getNtype())
      return emitOpError() << "by(ntype) needs node types: a graph built "
                              "with graph.coo ... ntypes(...)";
  if (static_cast<bool>(by) != static_cast<bool>(getNumTypes()))
    return emitOpError() << (by ? "by(...) needs types(...): the number of "
                                  "matrices"
                                : "types(...) is for by(...)");
  auto result = cast<ShapedType>(getResult().getType());
  unsigned rank = by ? 3 : 2;
  if (result.getRank() != rank)
    return emitOpError() << "the result must have rank " << rank
                         << (by ? " (a matrix per type)" : " (one matrix)")
                         << ", got " << result;
  if (failed(sameExtent(*this, dim(getLhs(), 1), result.getDimSize(rank - 2),
                        "the lhs row length", "the result's rows")) ||
      failed(sameExtent(*this, dim(getRhs(), 1), result.getDimSize(rank - 1),
                        "the rhs row length", "the result's columns")))
    return failure();
  if (nodes && failed(sameExtent(*this, dim(getLhs(), 0), dim(getRhs(), 0),
                                 "the lhs row count", "the rhs'")))
    return failure();
  for (auto [value, rows, what] :
       {std::tuple<Value, Rows, StringRef>{getLhs(), lhsRows, "lhs"},
        std::tuple<Value, Rows, StringRef>{getRhs(), rhsRows, "rhs"}})
    if (rows == Rows::edges &&
        failed(sameExtent(*this, dim(value, 0), staticEdges(getGraph()),
                          Twine("the ") + what + " row count (one per edge)",
                          "the graph's edge count")))
      return failure();
  if (getWeight()) {
    if (nodes)
      return emitOpError() << "weights(...) are per edge: not with "
                              "rows(nodes)";
    if (failed(edgeScalars(*this, getWeight(), "the weights")))
      return failure();
    if (failed(sameExtent(*this, dim(getWeight(), 0), staticEdges(getGraph()),
                          "the weights' length (one per edge)",
                          "the graph's edge count")))
      return failure();
  }
  return success();
}

LogicalResult EdgeSoftmaxOp::verify() {
  return sameExtent(*this, dim(getInput(), 0), staticEdges(getGraph()),
                    "the input's row count (one per edge)",
                    "the graph's edge count");
}

LogicalResult EdgeSoftmaxGradOp::verify() {
  return sameExtent(*this, dim(getOutput(), 0), staticEdges(getGraph()),
                    "the output's row count (one per edge)",
                    "the graph's edge count");
}

LogicalResult InnerProductOp::verify() {
  for (auto [rows, value, what] :
       {std::tuple<Rows, Value, StringRef>{getLhsRows(), getLhs(), "lhs"},
        std::tuple<Rows, Value, StringRef>{getRhsRows(), getRhs(), "rhs"}}) {
    if (rows == Rows::nodes)
      return emitOpError() << "rows(nodes) is not an edge's row: the " << what
                           << " is read at src, dst or edges";
    if (rows == Rows::edges &&
        failed(sameExtent(*this, dim(value, 0), staticEdges(getGraph()),
                          Twine("the ") + what + " row count (one per edge)",
                          "the graph's edge count")))
      return failure();
  }
  if (failed(sameExtent(*this, dim(getLhs(), 1), dim(getRhs(), 1),
                        "the lhs row length", "the rhs'")))
    return failure();
  if (dim(getResult(), 1) != 1)
    return emitOpError() << "the result holds one scalar per edge: [E, 1], "
                            "got "
                         << getResult().getType();
  return sameExtent(*this, dim(getResult(), 0), staticEdges(getGraph()),
                    "the result's row count", "the graph's edge count");
}
