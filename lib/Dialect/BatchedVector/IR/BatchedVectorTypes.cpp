//===- BatchedVectorTypes.cpp - bvec types --------------------------------===//
//
// Parsing, printing and verification of the bvec types. Every type prints
// as a dimension list followed by an element type, like builtin shaped
// types: `!bvec.vec<?x128xf32>`.
//
//===----------------------------------------------------------------------===//

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::bvec;

#include "Dialect/BatchedVector/IR/BatchedVectorTypeInterfaces.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "Dialect/BatchedVector/IR/BatchedVectorOpsTypes.cpp.inc"

void BatchedVectorDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "Dialect/BatchedVector/IR/BatchedVectorOpsTypes.cpp.inc"
      >();
}

std::string mlir::bvec::dimToString(int64_t dim) {
  return ShapedType::isDynamic(dim) ? std::string("?") : std::to_string(dim);
}

Type mlir::bvec::cloneWithBatchSize(Type type, int64_t batchSize) {
  return TypeSwitch<Type, Type>(type)
      .Case([&](IndicesType t) {
        return IndicesType::get(t.getContext(), batchSize, t.getElementType());
      })
      .Case([&](ScalarType t) {
        return ScalarType::get(t.getContext(), batchSize, t.getElementType());
      })
      .Case([&](VecType t) {
        return VecType::get(t.getContext(), batchSize, t.getLength(),
                            t.getElementType());
      })
      .Case([&](MatType t) {
        return MatType::get(t.getContext(), batchSize, t.getRows(),
                            t.getCols(), t.getElementType());
      })
      .Default([](Type t) { return t; });
}

Type mlir::bvec::batchedType(Type like, ArrayRef<int64_t> item, Type element) {
  int64_t batch = cast<BatchedType>(like).getBatchSize();
  MLIRContext *ctx = like.getContext();
  if (item.empty())
    return ScalarType::get(ctx, batch, element);
  if (item.size() == 1)
    return VecType::get(ctx, batch, item[0], element);
  return MatType::get(ctx, batch, item[0], item[1], element);
}

//===----------------------------------------------------------------------===//
// Shared parsing/printing: `<d0 x d1 x ... x elementType>`
//===----------------------------------------------------------------------===//

/// Parses `<dims x type>` where the number of dimensions must be one of
/// `ranks`. `what` names the type in diagnostics.
static ParseResult parseShapeAndElementType(AsmParser &parser,
                                            ArrayRef<unsigned> ranks,
                                            StringRef what,
                                            SmallVectorImpl<int64_t> &shape,
                                            Type &elementType) {
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/true,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType) || parser.parseGreater())
    return failure();
  if (!llvm::is_contained(ranks, shape.size())) {
    auto diag = parser.emitError(loc) << what << " expects ";
    llvm::interleave(
        ranks, diag, [&](unsigned r) { diag << r; }, " or ");
    return diag << " dimensions before the element type, got "
                << shape.size();
  }
  return success();
}

static void printShapeAndElementType(AsmPrinter &printer,
                                     ArrayRef<int64_t> shape,
                                     Type elementType) {
  printer << '<';
  for (int64_t dim : shape)
    printer << dimToString(dim) << 'x';
  printer << elementType << '>';
}

/// Checks that every dimension is positive or dynamic.
static LogicalResult verifyDims(function_ref<InFlightDiagnostic()> emitError,
                                StringRef what, ArrayRef<int64_t> dims,
                                ArrayRef<StringRef> dimNames) {
  for (auto [dim, name] : llvm::zip_equal(dims, dimNames))
    if (!ShapedType::isDynamic(dim) && dim <= 0)
      return emitError() << what << " " << name
                         << " must be positive or '?', got " << dim;
  return success();
}

static LogicalResult verifyFloatElement(
    function_ref<InFlightDiagnostic()> emitError, StringRef what, Type type) {
  if (!isa<FloatType>(type))
    return emitError() << what
                       << " element type must be a floating-point type, got "
                       << type;
  return success();
}

//===----------------------------------------------------------------------===//
// TableType
//===----------------------------------------------------------------------===//

Type TableType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parseShapeAndElementType(parser, {2, 3}, "!bvec.table", shape,
                               elementType))
    return {};
  return parser.getChecked<TableType>(parser.getContext(), shape, elementType);
}

void TableType::print(AsmPrinter &printer) const {
  printShapeAndElementType(printer, getShape(), getElementType());
}

LogicalResult TableType::verify(function_ref<InFlightDiagnostic()> emitError,
                                ArrayRef<int64_t> shape, Type elementType) {
  if (shape.size() != 2 && shape.size() != 3)
    return emitError() << "!bvec.table must have rank 2 (rows of vectors) or "
                          "3 (rows of matrices), got rank "
                       << shape.size();
  static constexpr StringRef names[] = {"row count", "dimension 1",
                                        "dimension 2"};
  if (failed(verifyDims(emitError, "!bvec.table", shape,
                        ArrayRef<StringRef>(names).take_front(shape.size()))))
    return failure();
  return verifyFloatElement(emitError, "!bvec.table", elementType);
}

//===----------------------------------------------------------------------===//
// IndicesType
//===----------------------------------------------------------------------===//

Type IndicesType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parseShapeAndElementType(parser, {1}, "!bvec.indices", shape,
                               elementType))
    return {};
  return parser.getChecked<IndicesType>(parser.getContext(), shape[0],
                                        elementType);
}

void IndicesType::print(AsmPrinter &printer) const {
  printShapeAndElementType(printer, {getBatchSize()}, getElementType());
}

LogicalResult IndicesType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t batchSize, Type elementType) {
  if (failed(verifyDims(emitError, "!bvec.indices", {batchSize},
                        {"batch size"})))
    return failure();
  if (!elementType.isSignlessInteger(32) && !elementType.isSignlessInteger(64))
    return emitError() << "!bvec.indices element type must be i32 or i64, got "
                       << elementType;
  return success();
}

SmallVector<int64_t> IndicesType::getItemShape() const { return {}; }

//===----------------------------------------------------------------------===//
// ScalarType
//===----------------------------------------------------------------------===//

Type ScalarType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parseShapeAndElementType(parser, {1}, "!bvec.scalar", shape,
                               elementType))
    return {};
  return parser.getChecked<ScalarType>(parser.getContext(), shape[0],
                                       elementType);
}

void ScalarType::print(AsmPrinter &printer) const {
  printShapeAndElementType(printer, {getBatchSize()}, getElementType());
}

LogicalResult ScalarType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t batchSize, Type elementType) {
  if (failed(verifyDims(emitError, "!bvec.scalar", {batchSize},
                        {"batch size"})))
    return failure();
  return verifyFloatElement(emitError, "!bvec.scalar", elementType);
}

SmallVector<int64_t> ScalarType::getItemShape() const { return {}; }

//===----------------------------------------------------------------------===//
// VecType
//===----------------------------------------------------------------------===//

Type VecType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parseShapeAndElementType(parser, {2}, "!bvec.vec", shape, elementType))
    return {};
  return parser.getChecked<VecType>(parser.getContext(), shape[0], shape[1],
                                    elementType);
}

void VecType::print(AsmPrinter &printer) const {
  printShapeAndElementType(printer, {getBatchSize(), getLength()},
                           getElementType());
}

LogicalResult VecType::verify(function_ref<InFlightDiagnostic()> emitError,
                              int64_t batchSize, int64_t length,
                              Type elementType) {
  if (failed(verifyDims(emitError, "!bvec.vec", {batchSize, length},
                        {"batch size", "length"})))
    return failure();
  return verifyFloatElement(emitError, "!bvec.vec", elementType);
}

SmallVector<int64_t> VecType::getItemShape() const { return {getLength()}; }

//===----------------------------------------------------------------------===//
// MatType
//===----------------------------------------------------------------------===//

Type MatType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parseShapeAndElementType(parser, {3}, "!bvec.mat", shape, elementType))
    return {};
  return parser.getChecked<MatType>(parser.getContext(), shape[0], shape[1],
                                    shape[2], elementType);
}

void MatType::print(AsmPrinter &printer) const {
  printShapeAndElementType(printer, {getBatchSize(), getRows(), getCols()},
                           getElementType());
}

LogicalResult MatType::verify(function_ref<InFlightDiagnostic()> emitError,
                              int64_t batchSize, int64_t rows, int64_t cols,
                              Type elementType) {
  if (failed(verifyDims(emitError, "!bvec.mat", {batchSize, rows, cols},
                        {"batch size", "row count", "column count"})))
    return failure();
  return verifyFloatElement(emitError, "!bvec.mat", elementType);
}

SmallVector<int64_t> MatType::getItemShape() const {
  return {getRows(), getCols()};
}
