//===- KronOps.cpp - kron attributes and operations -----------------------===//

#include "Dialect/Kron/IR/KronDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kron;

//===----------------------------------------------------------------------===//
// Base kernels
//===----------------------------------------------------------------------===//

LogicalResult DeltaAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                llvm::APFloat hValue) {
  double h = hValue.convertToDouble();
  if (!(h > 0 && h <= 1))
    return emitError() << "#kron.delta's off-diagonal value must be in (0, 1], "
                          "got "
                       << h;
  return success();
}

LogicalResult
SquareExponentialAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              llvm::APFloat lengthScaleValue) {
  double lengthScale = lengthScaleValue.convertToDouble();
  if (!(lengthScale > 0) || !std::isfinite(lengthScale))
    return emitError() << "#kron.sqexp's length scale must be positive and "
                          "finite, got "
                       << lengthScale;
  return success();
}

LogicalResult
ConstantAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     llvm::APFloat constant) {
  double value = constant.convertToDouble();
  if (!(value > 0 && value <= 1))
    return emitError() << "#kron.constant must be in (0, 1], got " << value;
  return success();
}

/// A product's or sum's list: one elementary kernel per feature.
static LogicalResult verifyKernelList(function_ref<InFlightDiagnostic()> emitError,
                                      StringRef name, ArrayAttr kernels) {
  if (kernels.empty())
    return emitError() << name << " takes at least one base kernel";
  for (Attribute kernel : kernels)
    if (!isa<DeltaAttr, SquareExponentialAttr, ConstantAttr>(kernel))
      return emitError() << name << " takes #kron.delta, #kron.sqexp or "
                                    "#kron.constant per feature, got "
                         << kernel;
  return success();
}

LogicalResult ProductAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayAttr kernels) {
  return verifyKernelList(emitError, "#kron.product", kernels);
}

LogicalResult SumAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              ArrayAttr kernels) {
  return verifyKernelList(emitError, "#kron.sum", kernels);
}

bool mlir::kron::isBaseKernel(Attribute attr) {
  return isa<DeltaAttr, SquareExponentialAttr, ConstantAttr, ProductAttr,
             SumAttr>(attr);
}

bool mlir::kron::isNodeOrder(StringRef order) {
  return order == "natural" || order == "rcm" || order == "pbr" ||
         order == "auto" || order == "refined";
}

FeatureKernels mlir::kron::getFeatureKernels(Attribute kernel) {
  FeatureKernels result;
  if (auto product = dyn_cast<ProductAttr>(kernel)) {
    llvm::append_range(result.perFeature, product.getKernels().getValue());
  } else if (auto sum = dyn_cast<SumAttr>(kernel)) {
    llvm::append_range(result.perFeature, sum.getKernels().getValue());
    result.sum = true;
  } else if (auto constant = dyn_cast<ConstantAttr>(kernel)) {
    result.constant = constant.getValue().convertToDouble();
  } else {
    result.perFeature.push_back(kernel);
  }
  return result;
}

LogicalResult
mlir::kron::verifyBaseKernel(Attribute kernel, unsigned features,
                             StringRef what,
                             function_ref<InFlightDiagnostic()> emitError) {
  if (!isBaseKernel(kernel))
    return emitError() << "the " << what
                       << " kernel must be a base kernel (#kron.delta, "
                          "#kron.sqexp, #kron.constant, #kron.product or "
                          "#kron.sum), got "
                       << kernel;
  if (isa<ConstantAttr>(kernel))
    return success();
  unsigned reads = getFeatureKernels(kernel).perFeature.size();
  if (reads != features)
    return emitError() << "the " << what << " kernel " << kernel << " reads "
                       << reads << " label feature(s); the graphs' " << what
                       << "s have " << features;
  return success();
}

//===----------------------------------------------------------------------===//
// Operations
//===----------------------------------------------------------------------===//

/// The static size of dimension `d` of `value`'s ranked tensor type, or
/// nullopt.
static std::optional<int64_t> staticDim(Value value, unsigned d) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.isDynamicDim(d))
    return std::nullopt;
  return type.getDimSize(d);
}

/// `value` must have `expected` columns (a static size).
static LogicalResult expectColumns(Operation *op, Value value, StringRef name,
                                   int64_t expected) {
  std::optional<int64_t> columns = staticDim(value, 1);
  if (!columns || *columns != expected)
    return op->emitOpError()
           << "'" << name << "' must have " << expected
           << " columns (a static size), got " << value.getType();
  return success();
}

/// The values of `values` (by name) must agree in dimension 0 where static.
static LogicalResult
expectSameRows(Operation *op,
               ArrayRef<std::pair<StringRef, Value>> values) {
  std::optional<int64_t> rows;
  StringRef first;
  for (auto [name, value] : values) {
    std::optional<int64_t> size = staticDim(value, 0);
    if (!size)
      continue;
    if (rows && *rows != *size)
      return op->emitOpError() << "'" << first << "' has " << *rows
                               << " rows but '" << name << "' has " << *size
                               << "; they hold one row per item";
    if (!rows) {
      rows = size;
      first = name;
    }
  }
  return success();
}

LogicalResult GraphsOp::verify() {
  GraphsType type = getGraphs().getType();
  if (failed(expectColumns(*this, getNodes(), "nodes", 2)) ||
      failed(expectColumns(*this, getEdges(), "edges", 2)) ||
      failed(expectColumns(*this, getEnds(), "ends", 2)) ||
      failed(expectColumns(*this, getNodeLabels(), "node_labels",
                           type.getNodeLabels())) ||
      failed(expectColumns(*this, getEdgeLabels(), "edge_labels",
                           type.getEdgeLabels())))
    return failure();
  return expectSameRows(*this, {{"nodes", getNodes()}, {"edges", getEdges()}})
             .succeeded() &&
                 expectSameRows(*this, {{"ends", getEnds()},
                                        {"weights", getWeights()},
                                        {"edge_labels", getEdgeLabels()}})
                     .succeeded()
             ? success()
             : failure();
}

LogicalResult OctilesOp::verify() {
  GraphsType type = getGraphs().getType();
  if (!isNodeOrder(getOrder()))
    return emitOpError() << "orders the nodes " << kNodeOrders << ", got '"
                         << getOrder() << "'";
  if (failed(expectColumns(*this, getNodes(), "nodes", 2)) ||
      failed(expectColumns(*this, getTiles(), "tiles", 2)) ||
      failed(expectColumns(*this, getNodeLabels(), "node_labels",
                           type.getNodeLabels())) ||
      failed(expectColumns(*this, getEdgeLabels(), "edge_labels",
                           type.getEdgeLabels())))
    return failure();
  if (failed(expectSameRows(*this, {{"nodes", getNodes()}, {"tiles", getTiles()}})) ||
      failed(expectSameRows(*this, {{"node_labels", getNodeLabels()},
                                    {"degrees", getDegrees()},
                                    {"rows", getRows()}})) ||
      failed(expectSameRows(*this, {{"coords", getCoords()},
                                    {"bitmaps", getBitmaps()},
                                    {"offsets", getOffsets()}})) ||
      failed(expectSameRows(*this, {{"weights", getWeights()},
                                    {"edge_labels", getEdgeLabels()}})))
    return failure();
  return success();
}

/// The checks kron.gram and kron.nodewise share: the datasets, the base
/// kernels, the stopping probability, the degrees, the tolerance and the
/// iteration cap.
template <typename SolveOp>
static LogicalResult verifySolve(SolveOp op) {
  GraphsType x = op.getX().getType();
  if (op.getY() && op.getY().getType() != x)
    return op.emitOpError() << "compares datasets of different labels: " << x
                            << " and " << op.getY().getType();
  auto emit = [&] { return op.emitOpError(); };
  if (failed(verifyBaseKernel(op.getNodeKernel(), x.getNodeLabels(), "node",
                              emit)) ||
      failed(verifyBaseKernel(op.getEdgeKernel(), x.getEdgeLabels(), "edge",
                              emit)))
    return failure();
  double stop = op.getStop().convertToDouble();
  if (!(stop > 0 && stop < 1))
    return op.emitOpError() << "stopping probability must be in (0, 1), got "
                            << stop;
  if (op.getDegrees() != "additive" && op.getDegrees() != "scaled")
    return op.emitOpError() << "takes degrees \"additive\" (sum + stop) or "
                               "\"scaled\" (sum / (1 - stop)), not \""
                            << op.getDegrees() << "\"";
  double tol = op.getTol().convertToDouble();
  if (!(tol > 0) || !std::isfinite(tol))
    return op.emitOpError() << "tolerance must be positive and finite, got "
                            << tol;
  if (op.getMaxIter() < 1)
    return op.emitOpError() << "iteration cap must be at least 1, got "
                            << op.getMaxIter();
  return success();
}

LogicalResult GramOp::verify() { return verifySolve(*this); }

LogicalResult NodewiseOp::verify() { return verifySolve(*this); }

#define GET_OP_CLASSES
#include "Dialect/Kron/IR/KronOps.cpp.inc"
