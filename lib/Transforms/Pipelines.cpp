//===- Pipelines.cpp - KGE's named pass pipelines -------------------------===//

#include "Transforms/Pipelines.h"

#include "Conversion/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void kge::buildLowerToCPUPipeline(OpPassManager &pm) {
  pm.addPass(createConvertBatchedVectorToSCF());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // f16/bf16 math is computed in f32.
  pm.addNestedPass<func::FuncOp>(math::createMathExtendToSupportedTypes());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void kge::registerPipelines() {
  PassPipelineRegistration<>(
      "kge-lower-to-cpu",
      "Lower bvec functions to the LLVM dialect for the CPU execution path",
      buildLowerToCPUPipeline);
}
