//===- Dialects.cpp - C API of KGE's dialects -----------------------------===//

#include "kge-c/Dialects.h"

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "Dialect/Graph/IR/GraphDialect.h"
#include "Dialect/Kron/IR/KronDialect.h"
#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(BatchedVector, bvec,
                                      bvec::BatchedVectorDialect)
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Graph, graph, graph::GraphDialect)
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(TileIterator, tile,
                                      tile::TileIteratorDialect)
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Kron, kron, kron::KronDialect)

namespace {

/// Emits a type's verification errors at an unknown location of `ctx`.
auto emitterOf(MLIRContext *ctx) {
  return [ctx] { return emitError(UnknownLoc::get(ctx)); };
}

/// The context's dialect `D`, loaded: a type of a dialect that was only
/// registered cannot be built.
template <typename D>
MLIRContext *loaded(MlirContext ctx) {
  MLIRContext *context = unwrap(ctx);
  context->getOrLoadDialect<D>();
  return context;
}

/// Null when `elementType` is null (the verifier would dereference it).
bool missingElement(MLIRContext *ctx, MlirType elementType) {
  if (!mlirTypeIsNull(elementType))
    return false;
  emitError(UnknownLoc::get(ctx)) << "element type is null";
  return true;
}

bool missingShape(MLIRContext *ctx, intptr_t rank, const int64_t *shape) {
  if (rank >= 0 && (rank == 0 || shape))
    return false;
  emitError(UnknownLoc::get(ctx)) << "shape of rank " << rank
                                  << " is missing or negative";
  return true;
}

} // namespace

int64_t kgeGetDynamicSize(void) { return ShapedType::kDynamic; }

bool kgeTypeIsABvecTable(MlirType type) {
  return isa<bvec::TableType>(unwrap(type));
}

MlirType kgeBvecTableTypeGet(MlirContext ctx, intptr_t rank,
                             const int64_t *shape, MlirType elementType) {
  MLIRContext *context = loaded<bvec::BatchedVectorDialect>(ctx);
  if (missingElement(context, elementType) ||
      missingShape(context, rank, shape))
    return {nullptr};
  return wrap(bvec::TableType::getChecked(emitterOf(context), context,
                                          llvm::ArrayRef(shape, rank),
                                          unwrap(elementType)));
}

intptr_t kgeBvecTableTypeGetRank(MlirType type) {
  return cast<bvec::TableType>(unwrap(type)).getRank();
}

int64_t kgeBvecTableTypeGetDimSize(MlirType type, intptr_t dim) {
  return cast<bvec::TableType>(unwrap(type)).getShape()[dim];
}

bool kgeTypeIsABvecIndices(MlirType type) {
  return isa<bvec::IndicesType>(unwrap(type));
}

MlirType kgeBvecIndicesTypeGet(MlirContext ctx, int64_t batchSize,
                               MlirType elementType) {
  MLIRContext *context = loaded<bvec::BatchedVectorDialect>(ctx);
  if (missingElement(context, elementType))
    return {nullptr};
  return wrap(bvec::IndicesType::getChecked(emitterOf(context), context,
                                            batchSize, unwrap(elementType)));
}

bool kgeTypeIsABvecScalar(MlirType type) {
  return isa<bvec::ScalarType>(unwrap(type));
}

MlirType kgeBvecScalarTypeGet(MlirContext ctx, int64_t batchSize,
                              MlirType elementType) {
  MLIRContext *context = loaded<bvec::BatchedVectorDialect>(ctx);
  if (missingElement(context, elementType))
    return {nullptr};
  return wrap(bvec::ScalarType::getChecked(emitterOf(context), context,
                                           batchSize, unwrap(elementType)));
}

bool kgeTypeIsABvecVec(MlirType type) {
  return isa<bvec::VecType>(unwrap(type));
}

MlirType kgeBvecVecTypeGet(MlirContext ctx, int64_t batchSize, int64_t length,
                           MlirType elementType) {
  MLIRContext *context = loaded<bvec::BatchedVectorDialect>(ctx);
  if (missingElement(context, elementType))
    return {nullptr};
  return wrap(bvec::VecType::getChecked(emitterOf(context), context, batchSize,
                                        length, unwrap(elementType)));
}

int64_t kgeBvecVecTypeGetLength(MlirType type) {
  return cast<bvec::VecType>(unwrap(type)).getLength();
}

bool kgeTypeIsABvecMat(MlirType type) {
  return isa<bvec::MatType>(unwrap(type));
}

MlirType kgeBvecMatTypeGet(MlirContext ctx, int64_t batchSize, int64_t rows,
                           int64_t cols, MlirType elementType) {
  MLIRContext *context = loaded<bvec::BatchedVectorDialect>(ctx);
  if (missingElement(context, elementType))
    return {nullptr};
  return wrap(bvec::MatType::getChecked(emitterOf(context), context, batchSize,
                                        rows, cols, unwrap(elementType)));
}

int64_t kgeBvecMatTypeGetRows(MlirType type) {
  return cast<bvec::MatType>(unwrap(type)).getRows();
}

int64_t kgeBvecMatTypeGetCols(MlirType type) {
  return cast<bvec::MatType>(unwrap(type)).getCols();
}

bool kgeTypeIsABvecBatched(MlirType type) {
  return isa<bvec::BatchedType>(unwrap(type));
}

int64_t kgeBvecBatchedTypeGetBatchSize(MlirType type) {
  return cast<bvec::BatchedType>(unwrap(type)).getBatchSize();
}

MlirType kgeTypeGetElementType(MlirType type) {
  Type t = unwrap(type);
  if (auto table = dyn_cast<bvec::TableType>(t))
    return wrap(table.getElementType());
  if (auto indices = dyn_cast<bvec::IndicesType>(t))
    return wrap(indices.getElementType());
  if (auto scalar = dyn_cast<bvec::ScalarType>(t))
    return wrap(scalar.getElementType());
  if (auto vec = dyn_cast<bvec::VecType>(t))
    return wrap(vec.getElementType());
  if (auto mat = dyn_cast<bvec::MatType>(t))
    return wrap(mat.getElementType());
  if (auto tile = dyn_cast<tile::TileType>(t))
    return wrap(tile.getElementType());
  return {nullptr};
}

bool kgeAttributeIsABvecReductionKind(MlirAttribute attr) {
  return isa<bvec::ReductionKindAttr>(unwrap(attr));
}

MlirAttribute kgeBvecReductionKindAttrGet(MlirContext ctx, MlirStringRef kind) {
  MLIRContext *context = loaded<bvec::BatchedVectorDialect>(ctx);
  std::optional<bvec::ReductionKind> value =
      bvec::symbolizeReductionKind(unwrap(kind));
  if (!value) {
    emitError(UnknownLoc::get(context))
        << "unknown reduction kind '" << unwrap(kind)
        << "' (expected sum, mean, max or min)";
    return {nullptr};
  }
  return wrap(static_cast<Attribute>(bvec::ReductionKindAttr::get(context, *value)));
}

MlirStringRef kgeBvecReductionKindAttrGetValue(MlirAttribute attr) {
  return wrap(bvec::stringifyReductionKind(
      cast<bvec::ReductionKindAttr>(unwrap(attr)).getValue()));
}

bool kgeTypeIsATile(MlirType type) { return isa<tile::TileType>(unwrap(type)); }

MlirType kgeTileTypeGet(MlirContext ctx, intptr_t rank, const int64_t *shape,
                        MlirType elementType) {
  MLIRContext *context = loaded<tile::TileIteratorDialect>(ctx);
  if (missingElement(context, elementType) ||
      missingShape(context, rank, shape))
    return {nullptr};
  return wrap(tile::TileType::getChecked(emitterOf(context), context,
                                         llvm::ArrayRef(shape, rank),
                                         unwrap(elementType)));
}

intptr_t kgeTileTypeGetRank(MlirType type) {
  return cast<tile::TileType>(unwrap(type)).getShape().size();
}

int64_t kgeTileTypeGetDimSize(MlirType type, intptr_t dim) {
  return cast<tile::TileType>(unwrap(type)).getShape()[dim];
}
