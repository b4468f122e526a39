//===- GridConstantArguments.cpp - tensor maps as grid constants ----------===//

#include "Conversion/GPUCommon/BundleAttributes.h"
#include "Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir {
namespace kge {
#define GEN_PASS_DEF_GRIDCONSTANTARGUMENTS
#include "Transforms/Passes.h.inc"
} // namespace kge
} // namespace mlir

using namespace mlir;

namespace {
struct GridConstantArgumentsPass
    : kge::impl::GridConstantArgumentsBase<GridConstantArgumentsPass> {
  void runOnOperation() override {
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      auto count =
          func->getAttrOfType<IntegerAttr>(kge::kGridConstantsAttrName);
      if (!count)
        return;
      func->removeAttr(kge::kGridConstantsAttrName);
      OpBuilder b(func);
      Type map = LLVM::LLVMArrayType::get(b.getI8Type(), 128);
      int64_t arguments = func.getNumArguments();
      for (int64_t index = arguments - count.getInt(); index < arguments;
           ++index) {
        if (index < 0 ||
            !isa<LLVM::LLVMPointerType>(func.getArgument(index).getType())) {
          func.emitError() << "kge.grid_constants counts " << count.getInt()
                           << " trailing pointer arguments; argument " << index
                           << " is not one";
          return signalPassFailure();
        }
        func.setArgAttr(index, LLVM::LLVMDialect::getByValAttrName(),
                        TypeAttr::get(map));
        func.setArgAttr(index, LLVM::LLVMDialect::getAlignAttrName(),
                        b.getI64IntegerAttr(64));
        func.setArgAttr(index, NVVM::NVVMDialect::getGridConstantAttrName(),
                        b.getUnitAttr());
      }
    });
  }
};
} // namespace
