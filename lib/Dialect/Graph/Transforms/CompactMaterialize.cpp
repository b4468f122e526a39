//===- CompactMaterialize.cpp - typed linear layers once per source -------===//
//
// Pigeon's compact materialization: a typed linear layer of an edge's
// source row depends on the edge only through its (source node, edge type)
// pair, or, typed by the source's node type, through the source alone. The
// layer is computed once per pair (per node) and each edge reads its
// pair's (node's) row, instead of one product per edge.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Graph/Transforms/Passes.h"

#include "Dialect/Common/DerivedParameters.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace graph {
#define GEN_PASS_DEF_GRAPHCOMPACTMATERIALIZE
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace graph
} // namespace mlir

using namespace mlir;
using namespace mlir::graph;

namespace {

/// How a layer's rows are computed compactly and read back per edge.
enum class Compaction {
  /// Once per (source node, edge type) pair; read through the bipartite
  /// graph from the pairs to the destinations, at its sources.
  pairs,
  /// Once per node, by the node's type; read at the edge's end (`end`) on
  /// the layer's own graph.
  nodes,
};

struct Candidate {
  TypedLinearOp layer;
  Compaction kind;
  /// The end the compact rows are read at.
  End end;
};

/// The end an edge's rows are read at.
std::optional<End> rowsEnd(Rows rows) {
  if (rows == Rows::src)
    return End::src;
  if (rows == Rows::dst)
    return End::dst;
  return std::nullopt;
}

Rows endRows(End end) { return end == End::src ? Rows::src : Rows::dst; }

/// Whether `use` can read a layer's compact rows (of `kind`) instead of its
/// per-edge rows.
bool readsCompact(OpOperand &use, Compaction kind) {
  Operation *user = use.getOwner();
  if (auto product = dyn_cast<InnerProductOp>(user)) {
    bool lhs = use.getOperandNumber() == 1;
    Rows mine = lhs ? product.getLhsRows() : product.getRhsRows();
    Rows other = lhs ? product.getRhsRows() : product.getLhsRows();
    if (product.getLhs() == product.getRhs() || mine != Rows::edges)
      return false;
    // Through the pairs' graph, the source end names the pair: the other
    // side cannot be read there.
    return kind == Compaction::nodes || other != Rows::src;
  }
  if (auto aggregate = dyn_cast<AggregateOp>(user)) {
    // Node rows read at an end are always scaled by weights of [E, 1]
    // (the scatter task's reduction axis); the pairs' graph has one source
    // per pair, so nothing is summed into sources.
    Value weight = aggregate.getWeight();
    return use.getOperandNumber() == 1 && !aggregate.getRows() && weight &&
           cast<ShapedType>(weight.getType()).getRank() == 2 &&
           (kind == Compaction::nodes || aggregate.getTo() == End::dst);
  }
  return false;
}

/// The compaction of `layer`, if it has one and every use reads it.
std::optional<Candidate> candidate(TypedLinearOp layer, bool markedOnly) {
  auto mark = layer->getAttrOfType<StringAttr>("kge.materialize");
  if (mark && mark.getValue() == "vanilla")
    return std::nullopt;
  if (markedOnly && (!mark || mark.getValue() != "compact"))
    return std::nullopt;
  if (layer.getTransposed())
    return std::nullopt;
  auto coo = layer.getGraph().getDefiningOp<CooOp>();
  std::optional<End> end = rowsEnd(layer.getRows());
  if (!coo || coo.getNumSources() || !end)
    return std::nullopt;
  Candidate result{layer, Compaction::pairs, *end};
  TypeOf by = layer.getBy();
  if ((by == TypeOf::src_ntype && *end == End::src) ||
      (by == TypeOf::dst_ntype && *end == End::dst))
    result.kind = Compaction::nodes;
  else if (by != TypeOf::etype || *end != End::src)
    return std::nullopt;
  if (layer->use_empty())
    return std::nullopt;
  for (OpOperand &use : layer->getUses())
    if (!readsCompact(use, result.kind))
      return std::nullopt;
  return result;
}

/// The graph data of a graph's pairs and the graphs that read them.
struct PairGraphs {
  Value pairs; // the graph of the pairs (pair_src, pair_src, pair_type)
  Value edges; // the bipartite graph from the pairs (edge_pair, dst, etype)
};

class Compactor {
public:
  Compactor(func::FuncOp f, bool markedOnly)
      : f(f), markedOnly(markedOnly), b(f.getContext()), params(f) {}
  LogicalResult run();

private:
  /// The pairs' graphs of `coo`, built (with their parameters) on first use.
  FailureOr<PairGraphs> pairGraphs(CooOp coo, TypedLinearOp user);
  func::FuncOp f;
  bool markedOnly;
  OpBuilder b;
  kge::DerivedParameters params;
  llvm::DenseMap<Operation *, PairGraphs> built;
};

FailureOr<PairGraphs> Compactor::pairGraphs(CooOp coo, TypedLinearOp user) {
  auto it = built.find(coo);
  if (it != built.end())
    return it->second;
  // The pairs are derived from the graph's parameters by the caller.
  StringAttr srcName = params.nameOf(coo.getSrc()),
             typeName = params.nameOf(coo.getEtype());
  if (!srcName || !typeName)
    return user.emitOpError()
           << "is compacted per (source, edge type) pair, whose graph data is "
              "derived from the graph's parameters: its graph's src and etype "
              "must be parameters of the function named by kge.param (mark "
              "the layer kge.materialize = \"vanilla\" to keep it per edge)";

  Location loc = coo.getLoc();
  Type srcType = coo.getSrc().getType(), typeType = coo.getEtype().getType();
  struct Part {
    StringRef name;
    Type type;
  } parts[] = {{"pair_src", srcType}, {"pair_type", typeType},
               {"edge_pair", srcType}};
  SmallVector<Value, 3> args;
  for (const Part &part : parts) {
    NamedAttribute derived[] = {
        b.getNamedAttr("etype", typeName),
        b.getNamedAttr("function", b.getStringAttr("source_type_pairs")),
        b.getNamedAttr("part", b.getStringAttr(part.name)),
        b.getNamedAttr("src", srcName)};
    Value arg = params.add(part.type, part.name, srcName.getValue(), derived, loc);
    if (!arg)
      return f.emitOpError() << "could not take the parameter '" << part.name
                             << "' of compact materialization";
    args.push_back(arg);
  }
  b.setInsertionPointAfter(coo);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value count = tensor::DimOp::create(b, loc, args[0], zero);
  PairGraphs graphs;
  graphs.pairs = CooOp::create(b, loc, coo.getType(), args[0], args[0], args[1],
                               coo.getNumNodes(), Value(), Value());
  graphs.edges = CooOp::create(b, loc, coo.getType(), args[2], coo.getDst(),
                               coo.getEtype(), coo.getNumNodes(), Value(),
                               count);
  built[coo] = graphs;
  return graphs;
}

LogicalResult Compactor::run() {
  llvm::MapVector<Operation *, Candidate> found;
  f.walk([&](TypedLinearOp layer) {
    if (std::optional<Candidate> c = candidate(layer, markedOnly))
      found.insert({layer, *c});
  });
  // An inner product of a pair-compacted side and a node-compacted one
  // would read node rows at the pairs' sources: both stay per edge.
  f.walk([&](InnerProductOp product) {
    auto *lhs = found.find(product.getLhs().getDefiningOp());
    auto *rhs = found.find(product.getRhs().getDefiningOp());
    if (lhs != found.end() && rhs != found.end() &&
        lhs->second.kind != rhs->second.kind) {
      Operation *ops[] = {lhs->first, rhs->first};
      for (Operation *op : ops)
        found.erase(op);
    }
  });
  for (const auto &[op, c] : found) {
    TypedLinearOp layer = c.layer;
    auto coo = layer.getGraph().getDefiningOp<CooOp>();
    Value reader = layer.getGraph(); // the graph the uses read through
    Value compact;
    Location loc = layer.getLoc();
    if (c.kind == Compaction::pairs) {
      FailureOr<PairGraphs> graphs = pairGraphs(coo, layer);
      if (failed(graphs))
        return failure();
      reader = graphs->edges;
      b.setInsertionPoint(layer);
      compact = TypedLinearOp::create(b, loc, layer.getType(), graphs->pairs,
                                      layer.getInput(), layer.getWeights(),
                                      Rows::src, TypeOf::etype,
                                      /*transposed=*/false);
    } else {
      b.setInsertionPoint(layer);
      compact = TypedLinearOp::create(b, loc, layer.getType(),
                                      layer.getGraph(), layer.getInput(),
                                      layer.getWeights(), Rows::nodes,
                                      TypeOf::ntype, /*transposed=*/false);
    }
    // The layer's own attributes (its name) stay with its rows.
    for (NamedAttribute attr : layer->getDiscardableAttrs())
      if (attr.getName() != "kge.materialize")
        compact.getDefiningOp()->setAttr(attr.getName(), attr.getValue());
    Rows at = c.kind == Compaction::pairs ? Rows::src : endRows(c.end);

    for (OpOperand &use : llvm::make_early_inc_range(layer->getUses())) {
      Operation *user = use.getOwner();
      b.setInsertionPoint(user);
      Operation *replacement;
      if (auto product = dyn_cast<InnerProductOp>(user)) {
        bool lhs = use.getOperandNumber() == 1;
        replacement = InnerProductOp::create(
            b, product.getLoc(), product.getType(), reader,
            lhs ? compact : product.getLhs(), lhs ? product.getRhs() : compact,
            lhs ? at : product.getLhsRows(), lhs ? product.getRhsRows() : at);
      } else {
        auto aggregate = cast<AggregateOp>(user);
        replacement = AggregateOp::create(
            b, aggregate.getLoc(), aggregate.getType(), reader, compact,
            EndAttr::get(b.getContext(),
                         c.kind == Compaction::pairs ? End::src : c.end),
            aggregate.getWeight(), aggregate.getTo(), aggregate.getReduce());
      }
      replacement->setDiscardableAttrs(user->getDiscardableAttrDictionary());
      user->replaceAllUsesWith(replacement);
      user->erase();
    }
    layer->erase();
  }
  return success();
}

struct GraphCompactMaterializePass
    : graph::impl::GraphCompactMaterializeBase<GraphCompactMaterializePass> {
  using GraphCompactMaterializeBase::GraphCompactMaterializeBase;
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() &&
          failed(Compactor(func, markedOnly).run()))
        return signalPassFailure();
  }
};
} // namespace
