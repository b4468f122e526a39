//===- Passes.td - bvec transformation passes --------------*- tablegen -*-===//

#ifndef KGE_DIALECT_BATCHEDVECTOR_TRANSFORMS_PASSES_TD
#define KGE_DIALECT_BATCHEDVECTOR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

#endif // KGE_DIALECT_BATCHEDVECTOR_TRANSFORMS_PASSES_TD
