//===- PTX.cpp - serialize gpu.modules to PTX -----------------------------===//

#include "Target/PTX.h"

#include "Conversion/GPUCommon/BundleAttributes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::kge;

/// The compute capability of an `sm_XY[a]` chip name (XY), or 0.
static int computeCapability(StringRef chip) {
  int capability = 0;
  if (!chip.consume_front("sm_"))
    return 0;
  chip = chip.take_while([](char c) { return c >= '0' && c <= '9'; });
  return chip.getAsInteger(10, capability) ? 0 : capability;
}

/// Tensor-core products (bvec matrix products with matrix_math = "tf32x3",
/// tile tasks on tensor cores: mma.sync with TF32, FP16 or BF16 operands)
/// exist from sm_80 on; warpgroup MMA on sm_90a.
static LogicalResult checkTensorCores(gpu::GPUModuleOp module,
                                      StringRef chip) {
  int capability = computeCapability(chip);
  if (capability == 0)
    return success();
  WalkResult walk = module.walk([&](Operation *op) {
    // wgmma.mma_async itself may already be inline assembly: its fence.
    if (isa<NVVM::WgmmaMmaAsyncOp, NVVM::WgmmaFenceAlignedOp>(op) &&
        (capability != 90 || !chip.ends_with("a"))) {
      op->emitError() << "warpgroup MMA (wgmma) needs sm_90a, but the target "
                         "is "
                      << chip
                      << "; lower with convert-tile-to-gpu{warpgroup=false} "
                         "for this GPU";
      return WalkResult::interrupt();
    }
    auto mma = dyn_cast<NVVM::MmaOp>(op);
    if (!mma || capability >= 80)
      return WalkResult::advance();
    StringRef type;
    switch (*mma.getMultiplicandAPtxType()) {
    case NVVM::MMATypes::tf32:
      type = "TF32";
      break;
    case NVVM::MMATypes::bf16:
      type = "BF16";
      break;
    default:
      type = "FP16";
    }
    mma.emitError() << "mma.sync with " << type
                    << " operands needs sm_80 or newer, but the target is "
                    << chip
                    << "; lower matrix products with matrix-math=fma for "
                       "this GPU";
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

/// `chip`, or its architecture-specific variant when `module` uses warpgroup
/// MMA and the chip has one (sm_90 -> sm_90a).
static std::string chipFor(gpu::GPUModuleOp module, StringRef chip) {
  bool warpgroup =
      module
          .walk([](Operation *op) {
            return isa<NVVM::WgmmaMmaAsyncOp, NVVM::WgmmaFenceAlignedOp>(op)
                       ? WalkResult::interrupt()
                       : WalkResult::advance();
          })
          .wasInterrupted();
  if (warpgroup && computeCapability(chip) == 90 && !chip.ends_with("a"))
    return (chip + "a").str();
  return chip.str();
}

bool mlir::kge::waitsForPriorGrids(StringRef chip) {
  return computeCapability(chip) >= 90;
}

/// Makes every kernel of `module` wait at its entry until the grids before
/// it in the stream have completed and their memory is visible. Launched
/// normally the wait returns at once; launched as a programmatic dependent
/// it lets the kernel's blocks start while the previous kernel finishes.
///
/// Two kernels that the launch plan runs side by side (a segment kernel of
/// long runs and the one of the rest: disjoint rows) fork and join: the
/// first (kge.launch_dependents) lets the next start once every block of it
/// has passed its own wait, so the grids before both are complete; the
/// second (kge.wait_at_exit) waits before it returns instead of at its
/// entry, so that it completes only after the first, and whatever follows
/// it waits for both.
static void insertPriorGridWaits(gpu::GPUModuleOp module) {
  module.walk([](LLVM::LLVMFuncOp func) {
    if (func.isExternal() || !func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
      return;
    if (func->hasAttr(kWaitAtExitAttrName)) {
      func.walk([](LLVM::ReturnOp ret) {
        OpBuilder b(ret);
        NVVM::GriddepcontrolOp::create(b, ret.getLoc(),
                                       NVVM::GridDepActionKind::wait);
      });
      return;
    }
    OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
    NVVM::GriddepcontrolOp::create(b, func.getLoc(),
                                   NVVM::GridDepActionKind::wait);
    if (func->hasAttr(kLaunchDependentsAttrName))
      NVVM::GriddepcontrolOp::create(b, func.getLoc(),
                                     NVVM::GridDepActionKind::launch_dependents);
  });
}

FailureOr<std::vector<PTXModule>>
mlir::kge::serializeToPTX(ModuleOp module, const PTXOptions &options) {
  OwningOpRef<ModuleOp> copy = module.clone();
  MLIRContext *context = module.getContext();
  // Input that holds no NVVM op has not loaded the dialect of its target.
  context->getOrLoadDialect<NVVM::NVVMDialect>();
  bool any = false;
  llvm::StringSet<> waiting;
  for (auto gpuModule : copy->getOps<gpu::GPUModuleOp>()) {
    any = true;
    if (!gpuModule.getTargetsAttr() || gpuModule.getTargetsAttr().empty()) {
      auto target = NVVM::NVVMTargetAttr::get(
          context, options.optLevel, "nvptx64-nvidia-cuda",
          chipFor(gpuModule, options.chip), options.features);
      gpuModule.setTargetsAttr(ArrayAttr::get(context, {target}));
    }
    // The IR is shared by every target of the module: the waits go in only
    // when every target has them.
    bool allWait = true;
    for (Attribute target : gpuModule.getTargetsAttr()) {
      auto nvvm = dyn_cast<NVVM::NVVMTargetAttr>(target);
      if (!nvvm) {
        allWait = false;
        continue;
      }
      if (failed(checkTensorCores(gpuModule, nvvm.getChip())))
        return failure();
      allWait &= waitsForPriorGrids(nvvm.getChip());
    }
    if (allWait) {
      insertPriorGridWaits(gpuModule);
      waiting.insert(gpuModule.getName());
    }
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
      auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
      result.push_back({binary.getSymName().str(),
                        object.getObject().getValue().str(),
                        waiting.contains(binary.getSymName()),
                        target ? target.getChip().str() : options.chip});
    }
  }
  return result;
}
