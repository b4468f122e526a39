//===- Passes.h - KGE's cross-dialect passes --------------------*- C++ -*-===//

#ifndef KGE_TRANSFORMS_PASSES_H
#define KGE_TRANSFORMS_PASSES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace kge {

#define GEN_PASS_DECL
#include "Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Transforms/Passes.h.inc"

} // namespace kge
} // namespace mlir

#endif // KGE_TRANSFORMS_PASSES_H
