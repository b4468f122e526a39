//===- GraphToTile.cpp - graph functions as tile functions ----------------===//
//
// Lowers the GEMM-like layers of a graph function (typed linear layers
// aggregated into nodes, linear layers) to tile tasks over the function's
// parameters, in destination-passing style.
//
//===----------------------------------------------------------------------===//

#include "Conversion/GraphToTile/GraphToTile.h"

#include "Dialect/Graph/IR/GraphDialect.h"
#include "Dialect/TileIterator/IR/TileIteratorDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

namespace mlir {
namespace kge {
#define GEN_PASS_DEF_CONVERTGRAPHTOTILE
#include "Conversion/Passes.h.inc"
} // namespace kge
} // namespace mlir

using namespace mlir;

namespace {

/// The lowering of one graph function into a tile function beside it.
class FunctionLowering {
public:
  explicit FunctionLowering(func::FuncOp func)
      : func(func), b(func.getContext()) {}

  /// Builds the tile function and replaces `func` with it; on failure
  /// (diagnosed) `func` is left as it was.
  LogicalResult run();

private:
  /// The memref parameter standing for `value`, which must be a parameter
  /// of the graph function; `user` is diagnosed otherwise.
  FailureOr<Value> parameter(Value value, Operation *user);
  /// parameter() of each of `values`, appended to `out`.
  LogicalResult parameters(Operation *user, ArrayRef<Value> values,
                           SmallVectorImpl<Value> &out);
  /// Emits the tasks that write `value` into `dest`: the first writer
  /// stores, later ones (`accumulate`) add.
  LogicalResult emit(Value value, Value dest, bool accumulate);
  LogicalResult emitLinear(graph::LinearOp op, Value dest, bool accumulate);
  LogicalResult emitAggregate(graph::AggregateOp op, Value dest);
  /// A typed linear layer's result stored (or added) whole: one row per
  /// edge or node.
  LogicalResult emitTypedLinear(graph::TypedLinearOp op, Value dest,
                                bool accumulate);
  /// A typed linear layer's product as a task's operands: its input's rows
  /// (gathered through the edges' endpoints for rows(src|dst)) times the
  /// matrix of each row's type (gathered through the edge or node types).
  /// The parameters holding a graph's structure: its edges' sources,
  /// destinations and types, and (with `nodeTypes`) its nodes' types.
  struct Structure {
    Value src, dst, etype, ntype;
  };
  FailureOr<Structure> structure(Operation *user, Value graph,
                                 bool nodeTypes);
  struct TypedProduct {
    SmallVector<Value> inputs, gathers;
    SmallVector<Attribute> gathered, maps;
    Structure graph;
  };
  FailureOr<TypedProduct> typedProduct(graph::TypedLinearOp linear);
  LogicalResult emitOuterSum(graph::OuterSumOp op, Value dest);
  LogicalResult emitEdgeSoftmax(graph::EdgeSoftmaxOp op, Value dest);
  LogicalResult emitEdgeSoftmaxGrad(graph::EdgeSoftmaxGradOp op, Value dest);
  LogicalResult emitInnerProduct(graph::InnerProductOp op, Value dest);
  LogicalResult emitLeakyRelu(graph::LeakyReluOp op, Value dest);
  LogicalResult emitLeakyReluGrad(graph::LeakyReluGradOp op, Value dest);

  /// The memref holding `value`, computed inside the function: a result of
  /// the tile function added for it (named after its operation), written
  /// by the tasks emit() builds for it before the tasks that read it.
  FailureOr<Value> materialize(Value value);
  /// A result of the tile function added for an intermediate of `type`
  /// (named `name`, or `name_<n>` when taken).
  Value addResult(StringRef name, Type type);
  /// A per-row scalar (`[R, 1]`) read by a task: the memref holding it,
  /// the index array it is read through (rows of per-node data at an
  /// edge's end) and the leaky ReLU's slope when one applies on the fly.
  struct Scalar {
    Value memref, gather;
    std::optional<double> leakySlope;
  };
  /// `value` as a Scalar; a graph.leaky_relu is applied where read.
  FailureOr<Scalar> scalar(Operation *user, Value value,
                           Value gather = Value());
  /// A task over per-row scalars: each of `scalars` is read at (i, k) (k
  /// of extent 1), the inner computation is `body` over their elements
  /// (leaky ReLUs applied), the output is `output` into `dest` (keys for
  /// an aggregate combined by `aggregate`).
  using ScalarBody =
      llvm::function_ref<Value(OpBuilder &, Location, ArrayRef<Value>)>;
  void scalarTask(Location loc, ArrayRef<Scalar> scalars, Value keys,
                  Value dest, tile::OutputKind output,
                  tile::Combiner aggregate, ScalarBody body);
  /// A [V, 1] result for a per-node intermediate of `graph`'s nodes, named
  /// after the result `of` it serves (`<of>` + `suffix`).
  FailureOr<Value> nodeScalars(Operation *op, Value graph, Value of,
                               StringRef suffix);
  /// The parameter holding the `end` of `graph`'s edges (the keys of a
  /// reduction into that end's nodes).
  FailureOr<Value> endIndices(Operation *op, Value graph, graph::End end);
  /// Names dimension `destDim` of `dest` like the dimension of a parameter
  /// that `size` reads (`tensor.dim %p, d`), so that the signature sizes
  /// the result by that parameter (a matrix per type: the weights' count;
  /// a node's rows: the node count); `prefix` starts the symbol when the
  /// parameter's dimension has none. Fails (diagnosed on `op`) when `size`
  /// is not such a dimension.
  LogicalResult tieDim(Operation *op, Value size, Value dest, unsigned destDim,
                       StringRef prefix);
  /// A region of one block with `types` arguments at the end of
  /// `region`; returns its builder.
  OpBuilder block(Region &region, TypeRange types);
  /// `task`'s regions: the inner computation multiplies its first two
  /// inputs in f32; with `Scale`, the projection combines the accumulator
  /// with the last input (a spatial operand: a bias, an edge's weight).
  template <typename Scale = void>
  void buildProduct(tile::TaskOp task, Location loc);
  /// `value` widened to f32.
  Value widen(OpBuilder &builder, Value value);
  /// The indexing map (i, j, k) -> (axes...).
  Attribute axes(ArrayRef<tile::TaskOp::Axis> axes);
  /// Appends the optional operand `value` of `user` (a bias, per-edge
  /// weights: a parameter) to a task's `inputs`, indexed by `axis`.
  LogicalResult appendVector(Operation *user, Value value,
                             tile::TaskOp::Axis axis,
                             SmallVectorImpl<Value> &inputs,
                             SmallVectorImpl<Attribute> &maps);
  /// A task accumulating by add (its regions still empty): `keys` for an
  /// aggregate or per_key output, `gathered` the [input, dimension] pairs
  /// of `gathers`, `update` for a dense output added into.
  tile::TaskOp task(Location loc, ValueRange inputs, ValueRange keys,
                    Value dest, ValueRange gathers, ArrayRef<Attribute> maps,
                    tile::OutputKind output, bool update,
                    ArrayRef<Attribute> gathered);

  func::FuncOp func;
  func::FuncOp lowered;
  OpBuilder b;
  /// Intermediates materialized so far.
  llvm::DenseMap<Value, Value> materialized;
};

/// The terms of a sum of tensors (`arith.addf` trees), in order.
void collectTerms(Value value, SmallVectorImpl<Value> &terms) {
  if (auto add = value.getDefiningOp<arith::AddFOp>();
      add && isa<RankedTensorType>(add.getType())) {
    collectTerms(add.getLhs(), terms);
    collectTerms(add.getRhs(), terms);
    return;
  }
  terms.push_back(value);
}

bool holdsGraphOps(func::FuncOp func) {
  bool found = false;
  func.walk([&](Operation *op) {
    if (isa<graph::GraphDialect>(op->getDialect()))
      found = true;
  });
  return found;
}
} // namespace

FailureOr<Value> FunctionLowering::parameter(Value value, Operation *user) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg && isa<RankedTensorType>(value.getType()))
    return materialize(value);
  if (!arg || arg.getOwner() != &func.getBody().front())
    return user->emitOpError()
           << "reads a value that is neither a parameter of the function nor "
              "a tensor computed in it";
  return Value(lowered.getArgument(arg.getArgNumber()));
}

Value FunctionLowering::addResult(StringRef name, Type type) {
  auto taken = [&](StringRef candidate) {
    for (unsigned n = 0; n < lowered.getNumArguments(); ++n)
      if (auto named = lowered.getArgAttrOfType<StringAttr>(n, "kge.param");
          named && named.getValue() == candidate)
        return true;
    return false;
  };
  std::string unique = name.str();
  for (int suffix = 1; taken(unique); ++suffix)
    unique = name.str() + "_" + std::to_string(suffix);
  auto tensor = cast<ShapedType>(type);
  Type memref = MemRefType::get(tensor.getShape(), tensor.getElementType());
  NamedAttrList attrs;
  attrs.set("kge.param", b.getStringAttr(unique));
  attrs.set("kge.result", b.getUnitAttr());
  unsigned n = lowered.getNumArguments();
  (void)lowered.insertArgument(n, memref,
                               attrs.getDictionary(b.getContext()),
                               func.getLoc());
  return lowered.getArgument(n);
}

FailureOr<Value> FunctionLowering::materialize(Value value) {
  if (auto it = materialized.find(value); it != materialized.end())
    return it->second;
  auto type = cast<RankedTensorType>(value.getType());
  Operation *op = value.getDefiningOp();
  if (!type.getElementType().isF32())
    return op->emitOpError() << "computes " << type
                             << ", an intermediate the lowering to tile "
                                "materializes in f32 only";
  // Named after what computes it (kge.name names it explicitly).
  std::string name =
      isa<graph::EdgeSoftmaxOp>(op)       ? "attention"
      : isa<graph::EdgeSoftmaxGradOp>(op) ? "attention_grad"
      : isa<graph::InnerProductOp>(op)    ? "inner_product"
      : isa<graph::LeakyReluOp>(op)       ? "activation"
      : isa<graph::LeakyReluGradOp>(op)   ? "activation_grad"
      : isa<graph::AggregateOp>(op)       ? "node_data"
                                          : "scores";
  if (auto named = op->getAttrOfType<StringAttr>("kge.name"))
    name = named.str();
  Value dest = addResult(name, type);
  materialized[value] = dest;
  if (failed(emit(value, dest, /*accumulate=*/false)))
    return failure();
  return dest;
}

FailureOr<FunctionLowering::Scalar>
FunctionLowering::scalar(Operation *user, Value value, Value gather) {
  Scalar result;
  result.gather = gather;
  if (auto leaky = value.getDefiningOp<graph::LeakyReluOp>()) {
    result.leakySlope = leaky.getSlope().convertToDouble();
    value = leaky.getInput();
  }
  auto type = cast<ShapedType>(value.getType());
  if (type.getRank() != 2 || type.getDimSize(1) != 1)
    return user->emitOpError()
           << "reads " << type
           << " as per-row scalars: the lowering to tile takes [R, 1] here "
              "(one attention head)";
  FailureOr<Value> memref = parameter(value, user);
  if (failed(memref))
    return failure();
  result.memref = *memref;
  return result;
}

void FunctionLowering::scalarTask(Location loc, ArrayRef<Scalar> scalars,
                                  Value keys, Value dest,
                                  tile::OutputKind output,
                                  tile::Combiner aggregate, ScalarBody body) {
  using Axis = tile::TaskOp::Axis;
  SmallVector<Value> inputs, gathers;
  SmallVector<Attribute> maps, gathered;
  for (auto [n, scalar] : llvm::enumerate(scalars)) {
    inputs.push_back(scalar.memref);
    maps.push_back(axes({Axis::I, Axis::K}));
    if (scalar.gather) {
      gathers.push_back(scalar.gather);
      gathered.push_back(b.getI64ArrayAttr({static_cast<int64_t>(n), 0}));
    }
  }
  tile::TaskOp t = task(loc, inputs, keys ? ValueRange{keys} : ValueRange{},
                        dest, gathers, maps, output, false, gathered);
  if (output == tile::OutputKind::aggregate && aggregate != tile::Combiner::add)
    t.setAggregate(aggregate);
  SmallVector<Type> types(inputs.size(), b.getF32Type());
  OpBuilder inner = block(t.getInner(), types);
  Block *innerBlock = inner.getInsertionBlock();
  SmallVector<Value> elements;
  for (auto [n, scalar] : llvm::enumerate(scalars)) {
    Value x = innerBlock->getArgument(n);
    if (scalar.leakySlope) {
      Value zero = arith::ConstantOp::create(inner, loc,
                                             inner.getF32FloatAttr(0.0f));
      Value slope = arith::ConstantOp::create(
          inner, loc, inner.getF32FloatAttr(*scalar.leakySlope));
      Value positive = arith::CmpFOp::create(
          inner, loc, arith::CmpFPredicate::OGT, x, zero);
      x = arith::SelectOp::create(inner, loc, positive, x,
                                  arith::MulFOp::create(inner, loc, slope, x));
    }
    elements.push_back(x);
  }
  tile::YieldOp::create(inner, loc, body(inner, loc, elements));
}

FailureOr<Value> FunctionLowering::endIndices(Operation *op, Value graph,
                                              graph::End end) {
  FailureOr<Structure> g = structure(op, graph, /*nodeTypes=*/false);
  if (failed(g))
    return failure();
  return end == graph::End::dst ? g->dst : g->src;
}

FailureOr<Value> FunctionLowering::nodeScalars(Operation *op, Value graph,
                                               Value of, StringRef suffix) {
  auto coo = graph.getDefiningOp<graph::CooOp>();
  if (!coo)
    return op->emitOpError() << "takes a graph that is not a graph.coo";
  StringAttr name = lowered.getArgAttrOfType<StringAttr>(
      cast<BlockArgument>(of).getArgNumber(), "kge.param");
  Value dest = addResult((name.getValue() + suffix).str(),
                         RankedTensorType::get({ShapedType::kDynamic, 1},
                                               b.getF32Type()));
  if (failed(tieDim(op, coo.getNumNodes(), dest, 0, "V")))
    return failure();
  return dest;
}

LogicalResult FunctionLowering::emitEdgeSoftmax(graph::EdgeSoftmaxOp op,
                                                Value dest) {
  Location loc = op.getLoc();
  FailureOr<Value> keys = endIndices(op, op.getGraph(), op.getTo());
  FailureOr<Scalar> s = failed(keys) ? FailureOr<Scalar>(failure())
                                     : scalar(op, op.getInput());
  FailureOr<Value> max = failed(s) ? FailureOr<Value>(failure())
                                   : nodeScalars(op, op.getGraph(), dest, "_max");
  FailureOr<Value> sum = failed(max) ? FailureOr<Value>(failure())
                                     : nodeScalars(op, op.getGraph(), dest, "_sum");
  if (failed(sum))
    return failure();
  // Each node's largest score (from -inf: the result starts at max's
  // identity), the sum of its edges' exp(score - largest), each edge's
  // exp(score - largest) / sum.
  Scalar atMax{*max, *keys, std::nullopt}, atSum{*sum, *keys, std::nullopt};
  scalarTask(loc, {*s}, *keys, *max, tile::OutputKind::aggregate,
             tile::Combiner::max,
             [](OpBuilder &, Location, ArrayRef<Value> x) { return x[0]; });
  auto shifted = [](OpBuilder &inner, Location loc, ArrayRef<Value> x) {
    return math::ExpOp::create(inner, loc,
                               arith::SubFOp::create(inner, loc, x[0], x[1]))
        .getResult();
  };
  scalarTask(loc, {*s, atMax}, *keys, *sum, tile::OutputKind::aggregate,
             tile::Combiner::add, shifted);
  scalarTask(loc, {*s, atMax, atSum}, Value(), dest, tile::OutputKind::dense,
             tile::Combiner::add,
             [&](OpBuilder &inner, Location loc, ArrayRef<Value> x) {
               return arith::DivFOp::create(inner, loc,
                                            shifted(inner, loc, x), x[2])
                   .getResult();
             });
  return success();
}

LogicalResult
FunctionLowering::emitEdgeSoftmaxGrad(graph::EdgeSoftmaxGradOp op,
                                      Value dest) {
  Location loc = op.getLoc();
  FailureOr<Value> keys = endIndices(op, op.getGraph(), op.getTo());
  FailureOr<Scalar> y = failed(keys) ? FailureOr<Scalar>(failure())
                                     : scalar(op, op.getOutput());
  FailureOr<Scalar> dy = failed(y) ? FailureOr<Scalar>(failure())
                                   : scalar(op, op.getGrad());
  FailureOr<Value> dot = failed(dy) ? FailureOr<Value>(failure())
                                    : nodeScalars(op, op.getGraph(), dest, "_dot");
  if (failed(dot))
    return failure();
  // Each node's sum of y dy over its edges, then y (dy - that sum).
  scalarTask(loc, {*y, *dy}, *keys, *dot, tile::OutputKind::aggregate,
             tile::Combiner::add,
             [](OpBuilder &inner, Location loc, ArrayRef<Value> x) {
               return arith::MulFOp::create(inner, loc, x[0], x[1]).getResult();
             });
  scalarTask(loc, {*y, *dy, Scalar{*dot, *keys, std::nullopt}}, Value(), dest,
             tile::OutputKind::dense, tile::Combiner::add,
             [](OpBuilder &inner, Location loc, ArrayRef<Value> x) {
               return arith::MulFOp::create(
                          inner, loc, x[0],
                          arith::SubFOp::create(inner, loc, x[1], x[2]))
                   .getResult();
             });
  return success();
}

LogicalResult FunctionLowering::emitLeakyRelu(graph::LeakyReluOp op,
                                              Value dest) {
  FailureOr<Scalar> x = scalar(op, op.getResult());
  if (failed(x))
    return failure();
  scalarTask(op.getLoc(), {*x}, Value(), dest, tile::OutputKind::dense,
             tile::Combiner::add,
             [](OpBuilder &, Location, ArrayRef<Value> x) { return x[0]; });
  return success();
}

LogicalResult FunctionLowering::emitLeakyReluGrad(graph::LeakyReluGradOp op,
                                                  Value dest) {
  FailureOr<Scalar> x = scalar(op, op.getInput());
  FailureOr<Scalar> dy = failed(x) ? FailureOr<Scalar>(failure())
                                   : scalar(op, op.getGrad());
  if (failed(dy))
    return failure();
  double slopeValue = op.getSlope().convertToDouble();
  scalarTask(op.getLoc(), {*x, *dy}, Value(), dest, tile::OutputKind::dense,
             tile::Combiner::add,
             [&](OpBuilder &inner, Location loc, ArrayRef<Value> v) {
               Value zero = arith::ConstantOp::create(
                   inner, loc, inner.getF32FloatAttr(0.0f));
               Value slope = arith::ConstantOp::create(
                   inner, loc, inner.getF32FloatAttr(slopeValue));
               Value positive = arith::CmpFOp::create(
                   inner, loc, arith::CmpFPredicate::OGT, v[0], zero);
               return arith::SelectOp::create(
                          inner, loc, positive, v[1],
                          arith::MulFOp::create(inner, loc, slope, v[1]))
                   .getResult();
             });
  return success();
}

LogicalResult FunctionLowering::emitInnerProduct(graph::InnerProductOp op,
                                                 Value dest) {
  using Axis = tile::TaskOp::Axis;
  Location loc = op.getLoc();
  FailureOr<Structure> g = structure(op, op.getGraph(), false);
  if (failed(g))
    return failure();
  auto endOf = [&](graph::Rows rows) {
    return rows == graph::Rows::src   ? g->src
           : rows == graph::Rows::dst ? g->dst
                                      : Value();
  };
  // A typed linear layer's edge rows used only here: computed in the task
  // (its segments' products), each tile's inner products with the other
  // side's rows a reduce output.
  for (bool lhsTyped : {true, false}) {
    Value typedSide = lhsTyped ? op.getLhs() : op.getRhs();
    Value other = lhsTyped ? op.getRhs() : op.getLhs();
    graph::Rows typedRows = lhsTyped ? op.getLhsRows() : op.getRhsRows();
    graph::Rows otherRows = lhsTyped ? op.getRhsRows() : op.getLhsRows();
    auto linear = typedSide.getDefiningOp<graph::TypedLinearOp>();
    if (!linear || !linear->hasOneUse() || typedRows != graph::Rows::edges ||
        linear.getRows() == graph::Rows::nodes ||
        linear.getGraph() != op.getGraph())
      continue;
    FailureOr<TypedProduct> product = typedProduct(linear);
    FailureOr<Value> otherParam = failed(product)
                                      ? FailureOr<Value>(failure())
                                      : parameter(other, op);
    if (failed(otherParam))
      return failure();
    unsigned n = product->inputs.size();
    product->inputs.push_back(*otherParam);
    product->maps.push_back(axes({Axis::I, Axis::J}));
    if (Value end = endOf(otherRows)) {
      product->gathers.push_back(end);
      product->gathered.push_back(
          b.getI64ArrayAttr({static_cast<int64_t>(n), 0}));
    }
    auto reduce = task(loc, product->inputs, {}, dest, product->gathers,
                       product->maps, tile::OutputKind::reduce, false,
                       product->gathered);
    buildProduct<arith::MulFOp>(reduce, loc);
    return success();
  }
  // Two rows read as they are: one scalar per edge.
  SmallVector<Value> inputs, gathers;
  if (failed(parameters(op, {op.getLhs(), op.getRhs()}, inputs)))
    return failure();
  SmallVector<Attribute> gathered;
  graph::Rows sides[2] = {op.getLhsRows(), op.getRhsRows()};
  for (auto [n, rows] : llvm::enumerate(sides))
    if (Value end = endOf(rows)) {
      gathers.push_back(end);
      gathered.push_back(b.getI64ArrayAttr({static_cast<int64_t>(n), 0}));
    }
  buildProduct(task(loc, inputs, {}, dest, gathers,
                    {axes({Axis::I, Axis::K}), axes({Axis::I, Axis::K})},
                    tile::OutputKind::dense, false, gathered),
               loc);
  return success();
}

LogicalResult FunctionLowering::parameters(Operation *user,
                                           ArrayRef<Value> values,
                                           SmallVectorImpl<Value> &out) {
  for (Value value : values) {
    FailureOr<Value> param = parameter(value, user);
    if (failed(param))
      return failure();
    out.push_back(*param);
  }
  return success();
}

OpBuilder FunctionLowering::block(Region &region, TypeRange types) {
  Block *body = new Block();
  region.push_back(body);
  for (Type type : types)
    body->addArgument(type, func.getLoc());
  return OpBuilder::atBlockEnd(body);
}

Value FunctionLowering::widen(OpBuilder &builder, Value value) {
  if (value.getType().isF32())
    return value;
  return arith::ExtFOp::create(builder, func.getLoc(), builder.getF32Type(),
                               value);
}

Attribute FunctionLowering::axes(ArrayRef<tile::TaskOp::Axis> axes) {
  SmallVector<AffineExpr> results;
  for (tile::TaskOp::Axis axis : axes)
    results.push_back(b.getAffineDimExpr(axis));
  return AffineMapAttr::get(AffineMap::get(3, 0, results, b.getContext()));
}

LogicalResult FunctionLowering::appendVector(Operation *user, Value value,
                                            tile::TaskOp::Axis axis,
                                            SmallVectorImpl<Value> &inputs,
                                            SmallVectorImpl<Attribute> &maps) {
  if (!value)
    return success();
  FailureOr<Value> param = parameter(value, user);
  if (failed(param))
    return failure();
  inputs.push_back(*param);
  maps.push_back(axes({axis}));
  return success();
}

tile::TaskOp FunctionLowering::task(Location loc, ValueRange inputs,
                                    ValueRange keys, Value dest,
                                    ValueRange gathers,
                                    ArrayRef<Attribute> maps,
                                    tile::OutputKind output, bool update,
                                    ArrayRef<Attribute> gathered) {
  MLIRContext *context = b.getContext();
  return tile::TaskOp::create(
      b, loc, inputs, keys, ValueRange{dest}, gathers, b.getArrayAttr(maps),
      tile::CombinerAttr::get(context, tile::Combiner::add),
      tile::OutputKindAttr::get(context, output), TypedAttr(), UnitAttr(),
      tile::CombinerAttr(), IntegerAttr(), UnitAttr(), AffineMapAttr(),
      update ? b.getUnitAttr() : UnitAttr(),
      gathered.empty() ? ArrayAttr() : b.getArrayAttr(gathered));
}

template <typename Scale>
void FunctionLowering::buildProduct(tile::TaskOp task, Location loc) {
  SmallVector<Type> scalars;
  for (Value input : task.getInputs())
    scalars.push_back(cast<ShapedType>(input.getType()).getElementType());
  OpBuilder inner = block(task.getInner(), scalars);
  Block *innerBlock = inner.getInsertionBlock();
  tile::YieldOp::create(
      inner, loc,
      arith::MulFOp::create(inner, loc, widen(inner, innerBlock->getArgument(0)),
                            widen(inner, innerBlock->getArgument(1)))
          .getResult());
  if constexpr (!std::is_void_v<Scale>) {
    Type f32 = b.getF32Type(), index = b.getIndexType();
    OpBuilder project = block(task.getProject(), {f32, index, index, f32});
    Block *projectBlock = project.getInsertionBlock();
    tile::YieldOp::create(project, loc,
                          Scale::create(project, loc, projectBlock->getArgument(0),
                                        projectBlock->getArgument(3))
                              .getResult());
  }
}

LogicalResult FunctionLowering::emitLinear(graph::LinearOp op, Value dest,
                                           bool accumulate) {
  using Axis = tile::TaskOp::Axis;
  Location loc = op.getLoc();
  SmallVector<Value> inputs;
  if (failed(parameters(op, {op.getInput(), op.getWeights()}, inputs)))
    return failure();
  // (Transposed weights: [N, K], read at (j, k).)
  SmallVector<Attribute> maps = {
      axes({Axis::I, Axis::K}),
      op.getTransposed() ? axes({Axis::J, Axis::K}) : axes({Axis::K, Axis::J})};
  if (failed(appendVector(op, op.getBias(), Axis::J, inputs, maps)))
    return failure();
  auto dense = task(loc, inputs, {}, dest, {}, maps, tile::OutputKind::dense,
                    accumulate, {});
  if (op.getBias())
    buildProduct<arith::AddFOp>(dense, loc);
  else
    buildProduct(dense, loc);
  return success();
}

FailureOr<FunctionLowering::Structure>
FunctionLowering::structure(Operation *user, Value graph, bool nodeTypes) {
  auto coo = graph.getDefiningOp<graph::CooOp>();
  if (!coo)
    return user->emitOpError() << "takes a graph that is not a graph.coo";
  SmallVector<Value> params;
  if (failed(parameters(coo, {coo.getSrc(), coo.getDst(), coo.getEtype()},
                        params)))
    return failure();
  Structure result{params[0], params[1], params[2], Value()};
  if (nodeTypes) {
    FailureOr<Value> ntype = parameter(coo.getNtype(), coo);
    if (failed(ntype))
      return failure();
    result.ntype = *ntype;
  }
  return result;
}

FailureOr<FunctionLowering::TypedProduct>
FunctionLowering::typedProduct(graph::TypedLinearOp linear) {
  using Axis = tile::TaskOp::Axis;
  graph::Rows rows = linear.getRows();
  graph::TypeOf by = linear.getBy();
  bool edgeRows = rows != graph::Rows::nodes;
  if ((edgeRows && by != graph::TypeOf::etype) ||
      (!edgeRows && by != graph::TypeOf::ntype))
    return linear.emitOpError()
           << "rows(" << graph::stringifyRows(rows) << ") by("
           << graph::stringifyTypeOf(by)
           << ") is not lowered to tile yet: a typed linear layer takes an "
              "edge's rows by its edge type or a node's by its node type";
  FailureOr<Structure> g =
      structure(linear, linear.getGraph(), /*nodeTypes=*/!edgeRows);
  if (failed(g))
    return failure();
  TypedProduct product;
  product.graph = *g;
  if (failed(parameters(linear, {linear.getInput(), linear.getWeights()},
                        product.inputs)))
    return failure();
  // The input's rows: through the edges' endpoints for rows(src|dst).
  if (rows == graph::Rows::src || rows == graph::Rows::dst) {
    product.gathers.push_back(rows == graph::Rows::src ? g->src
                                                       : g->dst);
    product.gathered.push_back(b.getI64ArrayAttr({0, 0}));
  }
  // The matrix of each row's type.
  product.gathers.push_back(edgeRows ? g->etype : g->ntype);
  product.gathered.push_back(b.getI64ArrayAttr({1, 0}));
  // (Transposed matrices: [N, K], read at (t[i], j, k).) Matrices of one
  // column ([T, K, 1]: an attention's projection) are rows gathered by
  // type, read at (t[i], k) (transposed: (t[i], j), k of extent 1): no
  // segments to sort.
  bool oneColumn =
      cast<ShapedType>(linear.getWeights().getType()).getDimSize(2) == 1;
  bool t = linear.getTransposed();
  product.maps = {axes({Axis::I, Axis::K}),
                  oneColumn ? axes({Axis::I, t ? Axis::J : Axis::K})
                  : t       ? axes({Axis::I, Axis::J, Axis::K})
                            : axes({Axis::I, Axis::K, Axis::J})};
  return product;
}

LogicalResult FunctionLowering::emitTypedLinear(graph::TypedLinearOp op,
                                                Value dest, bool accumulate) {
  FailureOr<TypedProduct> product = typedProduct(op);
  if (failed(product))
    return failure();
  // One result row per task row: the edges (or nodes) in order.
  buildProduct(task(op.getLoc(), product->inputs, {}, dest, product->gathers,
                    product->maps, tile::OutputKind::dense, accumulate,
                    product->gathered),
               op.getLoc());
  return success();
}

LogicalResult FunctionLowering::emitAggregate(graph::AggregateOp op,
                                              Value dest) {
  using Axis = tile::TaskOp::Axis;
  Location loc = op.getLoc();
  if (std::optional<graph::End> rows = op.getRows()) {
    // Node rows read at an edge's end, scaled by its weight, into the other
    // end: each edge's row a pair operand gathered through that end, its
    // weight read at (i, k) (k of extent 1).
    FailureOr<Value> from = endIndices(op, op.getGraph(), *rows);
    FailureOr<Value> keys = failed(from)
                                ? FailureOr<Value>(failure())
                                : endIndices(op, op.getGraph(), op.getTo());
    if (failed(keys))
      return failure();
    if (cast<ShapedType>(op.getWeight().getType()).getRank() != 2)
      return op.emitOpError() << "rows(...) takes weights of [E, 1]";
    FailureOr<Value> weight = parameter(op.getWeight(), op);
    FailureOr<Value> input = failed(weight) ? FailureOr<Value>(failure())
                                            : parameter(op.getInput(), op);
    if (failed(input))
      return failure();
    SmallVector<Value> inputs = {*weight, *input};
    SmallVector<Attribute> maps = {axes({Axis::I, Axis::K}),
                                   axes({Axis::I, Axis::J})};
    auto scatter = task(loc, inputs, {*keys}, dest, {*from}, maps,
                        tile::OutputKind::aggregate, false,
                        {b.getI64ArrayAttr({1, 0})});
    buildProduct(scatter, loc);
    return success();
  }
  auto linear = op.getInput().getDefiningOp<graph::TypedLinearOp>();
  if (!linear || !linear->hasOneUse())
    return op.emitOpError()
           << "aggregates rows that are not a typed linear layer's result "
              "used only here; the lowering to tile fuses the two and does "
              "not materialize per-edge tensors yet";
  if (linear.getGraph() != op.getGraph())
    return op.emitOpError() << "aggregates rows of another graph value";
  if (linear.getRows() == graph::Rows::nodes)
    return op.emitOpError() << "aggregates a typed linear layer's node rows "
                               "(rows(nodes)); an aggregate takes one row per "
                               "edge";
  FailureOr<TypedProduct> product = typedProduct(linear);
  if (failed(product))
    return failure();
  Value keys =
      op.getTo() == graph::End::dst ? product->graph.dst : product->graph.src;
  if (failed(appendVector(op, op.getWeight(), Axis::I, product->inputs,
                          product->maps)))
    return failure();
  auto aggregate = task(loc, product->inputs, {keys}, dest, product->gathers,
                        product->maps, tile::OutputKind::aggregate, false,
                        product->gathered);
  if (op.getWeight())
    buildProduct<arith::MulFOp>(aggregate, loc);
  else
    buildProduct(aggregate, loc);
  return success();
}

LogicalResult FunctionLowering::tieDim(Operation *op, Value size, Value dest,
                                       unsigned destDim, StringRef prefix) {
  auto dimOp = size.getDefiningOp<tensor::DimOp>();
  std::optional<int64_t> index =
      dimOp ? dimOp.getConstantIndex() : std::optional<int64_t>();
  auto source = dimOp ? dyn_cast<BlockArgument>(dimOp.getSource())
                      : BlockArgument();
  if (!index || !source || source.getOwner() != &func.getBody().front())
    return op->emitOpError()
           << "takes a size that is not a dimension of a parameter "
              "(tensor.dim %param, d): the lowering sizes the result by that "
              "parameter";
  auto sourceType = dyn_cast<RankedTensorType>(source.getType());
  if (!sourceType || *index < 0 || *index >= sourceType.getRank())
    return op->emitOpError() << "takes dimension " << *index
                             << " of a parameter of type " << source.getType()
                             << ", which has no such dimension";
  unsigned p = source.getArgNumber(), d = cast<BlockArgument>(dest).getArgNumber();
  auto dimsOf = [&](unsigned arg) {
    SmallVector<Attribute> dims;
    if (auto given = lowered.getArgAttrOfType<ArrayAttr>(arg, "kge.dims"))
      dims.assign(given.begin(), given.end());
    int64_t rank = cast<MemRefType>(lowered.getArgument(arg).getType()).getRank();
    dims.resize(rank, b.getStringAttr(""));
    return dims;
  };
  SmallVector<Attribute> sourceDims = dimsOf(p), destDims = dimsOf(d);
  std::string symbol = prefix.str();
  if (auto name = lowered.getArgAttrOfType<StringAttr>(p, "kge.param"))
    symbol += "_" + name.str();
  if (auto named = dyn_cast<StringAttr>(sourceDims[*index]);
      named && !named.getValue().empty())
    symbol = named.str();
  sourceDims[*index] = destDims[destDim] = b.getStringAttr(symbol);
  lowered.setArgAttr(p, "kge.dims", b.getArrayAttr(sourceDims));
  lowered.setArgAttr(d, "kge.dims", b.getArrayAttr(destDims));
  return success();
}

LogicalResult FunctionLowering::emitOuterSum(graph::OuterSumOp op,
                                             Value dest) {
  using Axis = tile::TaskOp::Axis;
  Location loc = op.getLoc();
  SmallVector<Value> inputs;
  if (failed(parameters(op, {op.getLhs(), op.getRhs()}, inputs)))
    return failure();
  SmallVector<Attribute> maps = {axes({Axis::K, Axis::I}),
                                 axes({Axis::K, Axis::J})};
  if (op.getLhsRows() == graph::Rows::nodes && !op.getBy()) {
    // lhs^T rhs: a dense task reducing over the nodes, added into the
    // destination (which starts at zero): a reduction this long and an
    // output this small take the split reduction's kernel on the GPU.
    buildProduct(task(loc, inputs, {}, dest, {}, maps, tile::OutputKind::dense,
                      /*update=*/true, {}),
                 loc);
    return success();
  }
  if (!op.getBy())
    return op.emitOpError() << "sums edge rows without by(etype): not lowered "
                               "to tile (the sum by type is)";
  // By edge type the edges are the reduction, by node type the nodes.
  bool byNodeType = *op.getBy() == graph::TypeOf::ntype;
  FailureOr<Structure> g = structure(op, op.getGraph(), byNodeType);
  if (failed(g))
    return failure();
  // Rows of per-node tensors at an edge's end: gathered along k.
  SmallVector<Value> gathers;
  SmallVector<Attribute> gathered;
  graph::Rows sides[2] = {op.getLhsRows(), op.getRhsRows()};
  for (auto [n, rows] : llvm::enumerate(sides)) {
    if (rows == graph::Rows::edges || rows == graph::Rows::nodes)
      continue;
    gathers.push_back(rows == graph::Rows::src ? g->src : g->dst);
    gathered.push_back(b.getI64ArrayAttr({static_cast<int64_t>(n), 0}));
  }
  if (failed(appendVector(op, op.getWeight(), Axis::K, inputs, maps)))
    return failure();
  if (failed(tieDim(op, op.getNumTypes(), dest, 0, "T")))
    return failure();
  auto perKey = task(loc, inputs, {byNodeType ? g->ntype : g->etype},
                     dest, gathers, maps,
                     tile::OutputKind::per_key, false, gathered);
  // The inner computation: lhs * rhs (* the edge's weight).
  SmallVector<Type> scalars;
  for (Value input : perKey.getInputs())
    scalars.push_back(cast<ShapedType>(input.getType()).getElementType());
  OpBuilder inner = block(perKey.getInner(), scalars);
  Block *innerBlock = inner.getInsertionBlock();
  Value product = arith::MulFOp::create(inner, loc, innerBlock->getArgument(0),
                                        innerBlock->getArgument(1));
  if (op.getWeight())
    product = arith::MulFOp::create(inner, loc, product,
                                    innerBlock->getArgument(2));
  tile::YieldOp::create(inner, loc, product);
  return success();
}

LogicalResult FunctionLowering::emit(Value value, Value dest,
                                     bool accumulate) {
  SmallVector<Value> terms;
  collectTerms(value, terms);
  // The first term that can store writes the destination (a linear
  // layer); the others add into it. Without one, the terms add into the
  // result, which starts at zero (the runtimes clear a result that a task
  // combines into first).
  auto stores = [](Value term) {
    return isa_and_present<graph::LinearOp, graph::TypedLinearOp>(
        term.getDefiningOp());
  };
  auto first = llvm::find_if(terms, stores);
  bool stored = accumulate;
  if (!accumulate && first != terms.end()) {
    std::rotate(terms.begin(), first, first + 1);
  }
  // Aggregates alone: the result has a row per node of their graph (per
  // source of a bipartite graph, into its sources).
  if (!accumulate && first == terms.end())
    if (auto aggregate = dyn_cast_or_null<graph::AggregateOp>(
            terms.front().getDefiningOp()))
      if (auto coo = aggregate.getGraph().getDefiningOp<graph::CooOp>();
          coo && cast<MemRefType>(dest.getType()).isDynamicDim(0)) {
        bool sources =
            aggregate.getTo() == graph::End::src && coo.getNumSources();
        if (failed(tieDim(aggregate,
                          sources ? coo.getNumSources() : coo.getNumNodes(),
                          dest, 0, sources ? "P" : "V")))
          return failure();
      }
  for (Value term : terms) {
    bool add = stored;
    Operation *op = term.getDefiningOp();
    LogicalResult lowered =
        !op ? func.emitOpError()
                  << "returns a parameter; a graph function computes its "
                     "results"
        : isa<graph::LinearOp>(op)
            ? emitLinear(cast<graph::LinearOp>(op), dest, add)
        : isa<graph::AggregateOp>(op)
            ? emitAggregate(cast<graph::AggregateOp>(op), dest)
        : isa<graph::TypedLinearOp>(op)
            ? emitTypedLinear(cast<graph::TypedLinearOp>(op), dest, add)
        : isa<graph::OuterSumOp>(op)
            ? emitOuterSum(cast<graph::OuterSumOp>(op), dest)
        : isa<graph::EdgeSoftmaxOp, graph::EdgeSoftmaxGradOp,
              graph::InnerProductOp, graph::LeakyReluOp,
              graph::LeakyReluGradOp>(op) && terms.size() > 1
            ? op->emitOpError() << "is a term of a sum; the lowering to "
                                   "tile stores it alone (materialize the "
                                   "sum's other terms apart)"
        : isa<graph::EdgeSoftmaxOp>(op)
            ? emitEdgeSoftmax(cast<graph::EdgeSoftmaxOp>(op), dest)
        : isa<graph::EdgeSoftmaxGradOp>(op)
            ? emitEdgeSoftmaxGrad(cast<graph::EdgeSoftmaxGradOp>(op), dest)
        : isa<graph::InnerProductOp>(op)
            ? emitInnerProduct(cast<graph::InnerProductOp>(op), dest)
        : isa<graph::LeakyReluOp>(op)
            ? emitLeakyRelu(cast<graph::LeakyReluOp>(op), dest)
        : isa<graph::LeakyReluGradOp>(op)
            ? emitLeakyReluGrad(cast<graph::LeakyReluGradOp>(op), dest)
            : op->emitOpError() << "is not lowered to tile: a graph "
                                   "function's values are sums of linear "
                                   "and typed linear layers, aggregates, "
                                   "outer sums, edge softmaxes, inner "
                                   "products and leaky ReLUs (and their "
                                   "gradients)";
    stored = true;
    if (failed(lowered))
      return failure();
  }
  return success();
}

LogicalResult FunctionLowering::run() {
  MLIRContext *context = func.getContext();
  Location loc = func.getLoc();
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  if (!func.getBody().hasOneBlock())
    return func.emitOpError() << "has " << func.getBody().getBlocks().size()
                              << " blocks; a graph function is one block of "
                                 "layers";
  if (func.getNumResults() == 0)
    return func.emitOpError() << "returns nothing; a graph function returns "
                                 "its layers' results";
  if (auto uses = SymbolTable::getSymbolUses(func, func->getParentOp());
      uses && !uses->empty())
    return func.emitOpError() << "is referenced in the module; graph "
                                 "functions are entry points (their lowering "
                                 "changes their signature)";
  for (auto [n, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return func.emitOpError() << "parameter #" << n << " has type " << type
                                << "; graph functions take ranked tensors";
    types.push_back(MemRefType::get(tensor.getShape(), tensor.getElementType()));
    attrs.push_back(func.getArgAttrDict(n));
  }
  for (auto [n, type] : llvm::enumerate(func.getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.getElementType().isF32())
      return func.emitOpError() << "result #" << n << " has type " << type
                                << "; graph functions return f32 tensors";
    types.push_back(MemRefType::get(tensor.getShape(), tensor.getElementType()));
    NamedAttrList fields(func.getResultAttrDict(n));
    if (!fields.get("kge.param")) {
      // The first of out, out_1, ... (out0, out1, ... for several results)
      // that names no parameter.
      std::string base = func.getNumResults() == 1
                             ? std::string("out")
                             : "out" + std::to_string(n);
      std::string name = base;
      auto taken = [&](StringRef candidate) {
        for (DictionaryAttr dict : attrs)
          if (auto named = dict ? dict.getAs<StringAttr>("kge.param")
                                : StringAttr();
              named && named.getValue() == candidate)
            return true;
        return false;
      };
      for (int suffix = 1; taken(name); ++suffix)
        name = base + "_" + std::to_string(suffix);
      fields.set("kge.param", b.getStringAttr(name));
    }
    fields.set("kge.result", b.getUnitAttr());
    attrs.push_back(fields.getDictionary(context));
  }
  b.setInsertionPoint(func);
  lowered = func::FuncOp::create(b, loc, func.getSymName(),
                                 b.getFunctionType(types, {}));
  for (auto [n, dict] : llvm::enumerate(attrs))
    if (dict)
      lowered.setArgAttrs(n, dict);
  Block *body = lowered.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [n, value] : llvm::enumerate(ret.getOperands()))
    if (failed(emit(value, body->getArgument(func.getNumArguments() + n),
                    /*accumulate=*/false))) {
      lowered.erase();
      return failure();
    }
  func::ReturnOp::create(b, loc);
  if (failed(mlir::verify(lowered))) {
    lowered.erase();
    return failure();
  }
  func.erase();
  return success();
}

namespace {
struct ConvertGraphToTilePass
    : kge::impl::ConvertGraphToTileBase<ConvertGraphToTilePass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && holdsGraphOps(func))
        funcs.push_back(func);
    for (func::FuncOp func : funcs)
      if (failed(FunctionLowering(func).run()))
        return signalPassFailure();
  }
};
} // namespace
