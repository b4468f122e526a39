/*===- kge-c/Dialects.h - C API of KGE's dialects -----------------*- C -*-===*\
|*                                                                            *|
|* Dialect handles of bvec, graph, tile and kron (for                        *|
|* mlirDialectHandleInsertDialect / LoadDialect), and the types and           *|
|* attributes of bvec and tile: build, test and inspect them.                 *|
|*                                                                            *|
|* A `...Get` function checks its parameters like the parser does: for an     *|
|* invalid one it emits an error diagnostic to the context's handlers and     *|
|* returns a null type or attribute (test with mlirTypeIsNull).               *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef KGE_C_DIALECTS_H
#define KGE_C_DIALECTS_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(BatchedVector, bvec);
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Graph, graph);
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(TileIterator, tile);
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Kron, kron);

/// The size that stands for a dynamic dimension (`?`).
MLIR_CAPI_EXPORTED int64_t kgeGetDynamicSize(void);

//===----------------------------------------------------------------------===//
// bvec types
//===----------------------------------------------------------------------===//

/// !bvec.table<NxDxT> (rank 2) or <NxRxCxT> (rank 3).
MLIR_CAPI_EXPORTED bool kgeTypeIsABvecTable(MlirType type);
MLIR_CAPI_EXPORTED MlirType kgeBvecTableTypeGet(MlirContext ctx, intptr_t rank,
                                                const int64_t *shape,
                                                MlirType elementType);
MLIR_CAPI_EXPORTED intptr_t kgeBvecTableTypeGetRank(MlirType type);
MLIR_CAPI_EXPORTED int64_t kgeBvecTableTypeGetDimSize(MlirType type,
                                                      intptr_t dim);

/// !bvec.indices<BxI>, !bvec.scalar<BxF>, !bvec.vec<BxDxF>, !bvec.mat<BxRxCxF>.
MLIR_CAPI_EXPORTED bool kgeTypeIsABvecIndices(MlirType type);
MLIR_CAPI_EXPORTED MlirType kgeBvecIndicesTypeGet(MlirContext ctx,
                                                  int64_t batchSize,
                                                  MlirType elementType);
MLIR_CAPI_EXPORTED bool kgeTypeIsABvecScalar(MlirType type);
MLIR_CAPI_EXPORTED MlirType kgeBvecScalarTypeGet(MlirContext ctx,
                                                 int64_t batchSize,
                                                 MlirType elementType);
MLIR_CAPI_EXPORTED bool kgeTypeIsABvecVec(MlirType type);
MLIR_CAPI_EXPORTED MlirType kgeBvecVecTypeGet(MlirContext ctx,
                                              int64_t batchSize, int64_t length,
                                              MlirType elementType);
MLIR_CAPI_EXPORTED int64_t kgeBvecVecTypeGetLength(MlirType type);
MLIR_CAPI_EXPORTED bool kgeTypeIsABvecMat(MlirType type);
MLIR_CAPI_EXPORTED MlirType kgeBvecMatTypeGet(MlirContext ctx,
                                              int64_t batchSize, int64_t rows,
                                              int64_t cols,
                                              MlirType elementType);
MLIR_CAPI_EXPORTED int64_t kgeBvecMatTypeGetRows(MlirType type);
MLIR_CAPI_EXPORTED int64_t kgeBvecMatTypeGetCols(MlirType type);

/// Any batched type (indices, scalar, vec, mat): its batch size.
MLIR_CAPI_EXPORTED bool kgeTypeIsABvecBatched(MlirType type);
MLIR_CAPI_EXPORTED int64_t kgeBvecBatchedTypeGetBatchSize(MlirType type);

/// The element type of any bvec or tile type; null for another type.
MLIR_CAPI_EXPORTED MlirType kgeTypeGetElementType(MlirType type);

//===----------------------------------------------------------------------===//
// bvec attributes
//===----------------------------------------------------------------------===//

/// The reduction kind of `bvec.reduce`: "sum", "mean", "max" or "min".
MLIR_CAPI_EXPORTED bool kgeAttributeIsABvecReductionKind(MlirAttribute attr);
MLIR_CAPI_EXPORTED MlirAttribute kgeBvecReductionKindAttrGet(MlirContext ctx,
                                                             MlirStringRef kind);
MLIR_CAPI_EXPORTED MlirStringRef
kgeBvecReductionKindAttrGetValue(MlirAttribute attr);

//===----------------------------------------------------------------------===//
// tile types
//===----------------------------------------------------------------------===//

/// !tile.tile<MxT> or <MxNxT>.
MLIR_CAPI_EXPORTED bool kgeTypeIsATile(MlirType type);
MLIR_CAPI_EXPORTED MlirType kgeTileTypeGet(MlirContext ctx, intptr_t rank,
                                           const int64_t *shape,
                                           MlirType elementType);
MLIR_CAPI_EXPORTED intptr_t kgeTileTypeGetRank(MlirType type);
MLIR_CAPI_EXPORTED int64_t kgeTileTypeGetDimSize(MlirType type, intptr_t dim);

#ifdef __cplusplus
}
#endif

#endif // KGE_C_DIALECTS_H
