//===- BatchedVectorToGPU.h - bvec to one fused GPU kernel ------*- C++ -*-===//

#ifndef KGE_CONVERSION_BATCHEDVECTORTOGPU_BATCHEDVECTORTOGPU_H
#define KGE_CONVERSION_BATCHEDVECTORTOGPU_BATCHEDVECTORTOGPU_H

#include "mlir/IR/PatternMatch.h"
#include "Conversion/GPUCommon/BundleAttributes.h"
#include "mlir/Pass/Pass.h"

#include <string>

namespace mlir {
namespace kge {

#define GEN_PASS_DECL_CONVERTBATCHEDVECTORTOGPU
#include "Conversion/Passes.h.inc"

/// How a bvec function is compiled for the GPU.
struct GPUKernelOptions {
  /// Negative-sampling mode: the index array whose entries are corrupted.
  /// Empty for positive scoring. In negative mode that array has shape
  /// [B, K] (K corrupted entities per positive edge) and every result gets
  /// a leading [B, K] instead of [B].
  std::string negative;
};

/// Adds the pattern that replaces each `bvec.func` (planned by `bvec-fuse`)
/// with a `gpu.module` holding its fused kernel, the declarations of the
/// device-library functions it calls, and the launch plan.
void populateBatchedVectorToGPUPatterns(RewritePatternSet &patterns,
                                        const GPUKernelOptions &options);

} // namespace kge
} // namespace mlir

#endif // KGE_CONVERSION_BATCHEDVECTORTOGPU_BATCHEDVECTORTOGPU_H
