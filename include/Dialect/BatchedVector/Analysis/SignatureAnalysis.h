//===- SignatureAnalysis.h - public interface of a bvec.func ----*- C++ -*-===//
//
// Derives the kge_runtime::Signature of a `bvec.func`: named parameters with dtypes
// and symbolic shapes. Dynamic sizes are unified through the operations
// (a gather ties its result length to the table's row length, an
// elementwise operation ties its operands together, ...), so that every
// dynamic size of a result is determined by a table dimension or by the
// batch size `B`.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_BATCHEDVECTOR_ANALYSIS_SIGNATUREANALYSIS_H
#define KGE_DIALECT_BATCHEDVECTOR_ANALYSIS_SIGNATUREANALYSIS_H

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "kge/runtime/Signature.h"

namespace mlir {
namespace bvec {

/// Computes the signature of `func`. Emits a diagnostic at the offending
/// operation and fails when a dynamic size is determined by nothing.
FailureOr<kge_runtime::Signature> computeSignature(FuncOp func);

/// The runtime dtype of an MLIR element type, if it has one.
std::optional<kge_runtime::DType> getDType(Type elementType);

} // namespace bvec
} // namespace mlir

#endif // KGE_DIALECT_BATCHEDVECTOR_ANALYSIS_SIGNATUREANALYSIS_H
