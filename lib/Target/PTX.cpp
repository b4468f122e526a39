//===- PTX.cpp - serialize gpu.modules to PTX -----------------------------===//

#include "Target/PTX.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;
using namespace mlir::kge;

FailureOr<std::vector<PTXModule>>
mlir::kge::serializeToPTX(ModuleOp module, const PTXOptions &options) {
  OwningOpRef<ModuleOp> copy = module.clone();
  MLIRContext *context = module.getContext();
  // Input that holds no NVVM op has not loaded the dialect of its target.
  context->getOrLoadDialect<NVVM::NVVMDialect>();
  bool any = false;
  for (auto gpuModule : copy->getOps<gpu::GPUModuleOp>()) {
    any = true;
    if (gpuModule.getTargetsAttr() && !gpuModule.getTargetsAttr().empty())
      continue;
    auto target = NVVM::NVVMTargetAttr::get(
        context, options.optLevel, "nvptx64-nvidia-cuda", options.chip,
        options.features);
    gpuModule.setTargetsAttr(ArrayAttr::get(context, {target}));
  }
  if (!any) {
    module.emitError("the module has no gpu.module to serialize");
    return failure();
  }

  PassManager pm(context);
  GpuModuleToBinaryPassOptions binaryOptions;
  binaryOptions.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binaryOptions));
  if (failed(pm.run(*copy)))
    return failure();

  std::vector<PTXModule> result;
  for (auto binary : copy->getOps<gpu::BinaryOp>()) {
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      result.push_back(
          {binary.getSymName().str(), object.getObject().getValue().str()});
    }
  }
  return result;
}
