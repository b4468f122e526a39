//===- OctileTiling.cpp - datasets of graphs as compact octiles -----------===//
//
// The solver's two-level sparsity (Tang et al., Section IV): a graph's
// adjacency is stored as its non-empty 8 x 8 tiles, each compact (a 64-bit
// bitmap and the non-zeros in bit order), in a node order that packs the
// non-zeros into few tiles. The arrays are graph data: parameters that the
// caller derives from the edge lists once per dataset.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Kron/Transforms/Passes.h"

#include "Dialect/Common/DerivedParameters.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace kron {
#define GEN_PASS_DEF_KRONOCTILETILING
#include "Dialect/Kron/Transforms/Passes.h.inc"
} // namespace kron
} // namespace mlir

using namespace mlir;
using namespace mlir::kron;

namespace {

struct KronOctileTilingPass
    : public kron::impl::KronOctileTilingBase<KronOctileTilingPass> {
  using KronOctileTilingBase::KronOctileTilingBase;

  LogicalResult tile(func::FuncOp func, GraphsOp graphs) {
    kge::DerivedParameters params(func);
    // The edge lists' parameter names: the fields of kge.derived.
    SmallVector<std::pair<StringRef, Value>> sources = {
        {"nodes", graphs.getNodes()},   {"node_labels", graphs.getNodeLabels()},
        {"edges", graphs.getEdges()},   {"ends", graphs.getEnds()},
        {"weights", graphs.getWeights()}, {"edge_labels", graphs.getEdgeLabels()}};
    Builder b(func.getContext());
    SmallVector<NamedAttribute> fields;
    fields.push_back(b.getNamedAttr("function", b.getStringAttr("octiles")));
    fields.push_back(b.getNamedAttr("order", b.getStringAttr(order)));
    for (auto [field, value] : sources) {
      StringAttr name = params.nameOf(value);
      if (!name)
        return graphs.emitOpError()
               << "takes '" << field
               << "' from a value that is not a named parameter (kge.param) of "
                  "its function; "
                  "kron-octile-tiling derives the octiles from the "
                  "function's parameters";
      fields.push_back(b.getNamedAttr(field, name));
    }
    GraphsType type = graphs.getGraphs().getType();
    auto vector = [&](Type element) {
      return RankedTensorType::get({ShapedType::kDynamic}, element);
    };
    auto matrix = [&](int64_t columns, Type element) {
      return RankedTensorType::get({ShapedType::kDynamic, columns}, element);
    };
    Type f32 = b.getF32Type(), i32 = b.getI32Type(), i64 = b.getI64Type();
    Location loc = graphs.getLoc();
    auto derive = [&](StringRef part, Type t) -> Value {
      SmallVector<NamedAttribute> derived(fields);
      derived.push_back(b.getNamedAttr("part", b.getStringAttr(part)));
      return params.add(t, part, "octile", derived, loc);
    };
    Value nodeLabels = derive("node_labels", matrix(type.getNodeLabels(), f32));
    Value degrees = derive("degrees", vector(f32));
    Value rows = derive("rows", vector(i32));
    Value tiles = derive("tiles", matrix(2, i32));
    Value coords = derive("coords", vector(i32));
    Value bitmaps = derive("bitmaps", vector(i64));
    Value offsets = derive("offsets", vector(i32));
    Value weights = derive("weights", vector(f32));
    Value edgeLabels = derive("edge_labels", matrix(type.getEdgeLabels(), f32));
    for (Value v : {nodeLabels, degrees, rows, tiles, coords, bitmaps,
                    offsets, weights, edgeLabels})
      if (!v)
        return graphs.emitOpError() << "could not add the octiles' parameters "
                                       "to its function";
    OpBuilder builder(graphs);
    auto octiles = OctilesOp::create(
        builder, loc, type, graphs.getNodes(), nodeLabels, degrees, rows, tiles,
        coords, bitmaps, offsets, weights, edgeLabels,
        builder.getStringAttr(order));
    graphs.getGraphs().replaceAllUsesWith(octiles.getGraphs());
    graphs.erase();
    return success();
  }

  void runOnOperation() override {
    if (!isNodeOrder(order)) {
      getOperation().emitError() << "kron-octile-tiling orders the nodes "
                                 << kNodeOrders << ", not '" << order << "'";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      SmallVector<GraphsOp> datasets(func.getBody().getOps<GraphsOp>());
      for (GraphsOp graphs : datasets)
        if (failed(tile(func, graphs)))
          return signalPassFailure();
      // The edge lists' parameters stay: the caller passes them and derives
      // the octiles from them (the runtime ignores the unread ones).
    }
  }
};

} // namespace
