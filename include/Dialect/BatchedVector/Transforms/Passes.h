//===- Passes.h - bvec transformation passes --------------------*- C++ -*-===//

#ifndef KGE_DIALECT_BATCHEDVECTOR_TRANSFORMS_PASSES_H
#define KGE_DIALECT_BATCHEDVECTOR_TRANSFORMS_PASSES_H

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace bvec {

#define GEN_PASS_DECL
#include "Dialect/BatchedVector/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Dialect/BatchedVector/Transforms/Passes.h.inc"

} // namespace bvec
} // namespace mlir

#endif // KGE_DIALECT_BATCHEDVECTOR_TRANSFORMS_PASSES_H
