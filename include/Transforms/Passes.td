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

def GridConstantArguments
    : Pass<"kge-grid-constant-arguments", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Pass a kernel's TMA tensor maps by value as grid constants";
  let description = [{
    A kernel that loads with TMA takes each tensor map (CUtensorMap, 128
    bytes) by value, as its last arguments; its `llvm.func` counts them in
    `kge.grid_constants` (written by `convert-tile-to-gpu` on the
    `gpu.func` and carried through `convert-gpu-to-nvvm`, which drops
    argument attributes it does not know). This pass marks those pointer arguments `llvm.byval` of 128 bytes,
    64-byte aligned and `nvvm.grid_constant`, so that PTX declares
    `.param .align 64 .b8 name[128]` and the kernel addresses the map where
    the launch put it.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

#endif // KGE_TRANSFORMS_PASSES_TD
