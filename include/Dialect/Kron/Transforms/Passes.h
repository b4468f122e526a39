//===- Passes.h - kron transformation passes --------------------*- C++ -*-===//

#ifndef KGE_DIALECT_KRON_TRANSFORMS_PASSES_H
#define KGE_DIALECT_KRON_TRANSFORMS_PASSES_H

#include "Dialect/Kron/IR/KronDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace kron {

#define GEN_PASS_DECL
#include "Dialect/Kron/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Dialect/Kron/Transforms/Passes.h.inc"

} // namespace kron
} // namespace mlir

#endif // KGE_DIALECT_KRON_TRANSFORMS_PASSES_H
