//===- Pipelines.h - KGE's named pass pipelines -----------------*- C++ -*-===//
//
// The named pipelines of KGE, registered with kge-opt and used by the
// runners and the Python module:
//
//   kge-lower-to-cpu   bvec -> loops -> LLVM dialect, ready for MLIR's
//                      ExecutionEngine (the CPU execution path).
//
//===----------------------------------------------------------------------===//

#ifndef KGE_TRANSFORMS_PIPELINES_H
#define KGE_TRANSFORMS_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace kge {

/// bvec -> scf/memref/arith/math -> LLVM dialect.
void buildLowerToCPUPipeline(OpPassManager &pm);

/// Registers every named pipeline with the global pass registry.
void registerPipelines();

} // namespace kge
} // namespace mlir

#endif // KGE_TRANSFORMS_PIPELINES_H
