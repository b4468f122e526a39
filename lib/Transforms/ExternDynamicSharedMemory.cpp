//===- ExternDynamicSharedMemory.cpp - dynamic shared memory in PTX -------===//

#include "Transforms/Passes.h"

namespace mlir {
namespace kge {
#define GEN_PASS_DEF_EXTERNDYNAMICSHAREDMEMORY
#include "Transforms/Passes.h.inc"
} // namespace kge
} // namespace mlir

using namespace mlir;

namespace {
struct ExternDynamicSharedMemoryPass
    : kge::impl::ExternDynamicSharedMemoryBase<ExternDynamicSharedMemoryPass> {
  void runOnOperation() override {
    getOperation().walk([](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      // The workgroup (shared) address space of NVVM is 3.
      if (global.getAddrSpace() == 3 && array && array.getNumElements() == 0)
        global.setLinkage(LLVM::Linkage::External);
    });
  }
};
} // namespace
