//===- Passes.td - KGE's cross-dialect passes --------------*- tablegen -*-===//

#ifndef KGE_TRANSFORMS_PASSES_TD
#define KGE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ExternDynamicSharedMemory
    : Pass<"kge-extern-dynamic-shared-memory", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Declare dynamic shared memory `.extern .shared` in PTX";
  let description = [{
    `convert-gpu-to-nvvm` lowers `gpu.dynamic_shared_memory` to an
    *internal* zero-length global in address space 3, which the NVPTX
    backend demotes to a one-byte static `.shared` variable: kernels would
    then index past it into whatever static shared memory the linker places
    next (the device library's). This pass gives such globals external
    linkage, so PTX declares them `.extern .shared .align 16 .b8 name[]`,
    the dynamic shared memory window.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // KGE_TRANSFORMS_PASSES_TD
