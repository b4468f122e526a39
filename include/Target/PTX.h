//===- PTX.h - serialize gpu.modules to PTX ---------------------*- C++ -*-===//

#ifndef KGE_TARGET_PTX_H
#define KGE_TARGET_PTX_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mlir {
namespace kge {

/// Options of the NVVM target attached to gpu.modules that have none.
struct PTXOptions {
  std::string chip = "sm_90";
  std::string features = "+ptx81";
  int optLevel = 3;
};

/// One serialized gpu.module.
struct PTXModule {
  std::string name;
  std::string ptx;
  /// Every kernel begins with griddepcontrol.wait (see waitsForPriorGrids).
  bool waitsForPriorGrids = false;
  /// The chip it was compiled for: the requested one, or its
  /// architecture-specific variant (sm_90a) for warpgroup MMA.
  std::string chip;
};

/// Whether kernels for `chip` wait for the work before them in their stream
/// at their entry (`griddepcontrol.wait`, sm_90 and newer), so that the
/// runtime may launch them while that work finishes (programmatic dependent
/// launch).
bool waitsForPriorGrids(llvm::StringRef chip);

/// Serializes every `gpu.module` of `module` (already lowered to the NVVM
/// and LLVM dialects) to PTX. Modules without a target get one from
/// `options`; every kernel of a module whose targets are all chips where
/// waitsForPriorGrids holds begins with `griddepcontrol.wait`. `module` is
/// not modified. Diagnostics go to the context.
FailureOr<std::vector<PTXModule>>
serializeToPTX(ModuleOp module, const PTXOptions &options = {});

} // namespace kge
} // namespace mlir

#endif // KGE_TARGET_PTX_H
