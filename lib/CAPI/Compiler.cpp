//===- Compiler.cpp - C API of KGE's compiler -----------------------------===//

#include "kge-c/Compiler.h"

#include "InitAll.h"
#include "Target/Bundle.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm-c/Core.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;

namespace {

const char *const kDefaultPipeline = "builtin.module(kge-lower-to-gpu)";

kge::BundleOptions bundleOptionsOf(const kgeBundleOptions *options) {
  kge::BundleOptions out;
  if (!options)
    return out;
  if (options->chip.length)
    out.ptx.chip = unwrap(options->chip).str();
  if (options->features.length)
    out.ptx.features = unwrap(options->features).str();
  out.ptx.optLevel = options->optLevel;
  out.cubin = options->cubin;
  if (options->ptxas.length)
    out.ptxas = unwrap(options->ptxas).str();
  return out;
}

/// Options the translation cannot use, reported on `op`.
LogicalResult checkOptions(Operation *op, const kgeBundleOptions *options) {
  if (options && (options->optLevel < 0 || options->optLevel > 3))
    return op->emitError() << "bundle option optLevel must be 0 to 3, got "
                           << options->optLevel;
  return success();
}

LogicalResult runPipeline(Operation *op, llvm::StringRef text) {
  kge::registerAllPasses();
  std::string errors;
  llvm::raw_string_ostream stream(errors);
  FailureOr<OpPassManager> parsed = parsePassPipeline(text, stream);
  if (failed(parsed))
    return op->emitError() << "invalid pass pipeline '" << text
                           << "': " << errors;
  PassManager pm(op->getContext(), parsed->getOpAnchorName());
  static_cast<OpPassManager &>(pm) = std::move(*parsed);
  return pm.run(op);
}

/// Translates `module` (its options checked by the caller).
LogicalResult translate(ModuleOp module, const kgeBundleOptions *options,
                        MlirStringCallback callback, void *userData) {
  FailureOr<std::string> bundle =
      kge::translateToBundle(module, bundleOptionsOf(options));
  if (failed(bundle))
    return failure();
  callback(wrap(llvm::StringRef(*bundle)), userData);
  return success();
}

} // namespace

int kgeGetCAPIVersion(void) { return KGE_CAPI_VERSION; }

MlirLogicalResult kgeCheckCAPIVersion(int headerVersion,
                                      MlirStringCallback onError,
                                      void *userData) {
  std::string error;
  unsigned major = 0, minor = 0, patch = 0;
  LLVMGetVersion(&major, &minor, &patch);
  if (headerVersion != KGE_CAPI_VERSION)
    error = "the caller was built for version " +
            std::to_string(headerVersion) +
            " of the KGE C API, but the loaded library implements version " +
            std::to_string(KGE_CAPI_VERSION);
  else if (major != LLVM_VERSION_MAJOR || minor != LLVM_VERSION_MINOR)
    error = "KGE was built for MLIR " LLVM_VERSION_STRING
            " but runs on MLIR " +
            std::to_string(major) + "." + std::to_string(minor) + "." +
            std::to_string(patch);
  if (error.empty())
    return mlirLogicalResultSuccess();
  if (onError)
    onError(wrap(llvm::StringRef(error)), userData);
  return mlirLogicalResultFailure();
}

MlirStringRef kgeGetMLIRVersion(void) {
  return wrap(llvm::StringRef(LLVM_VERSION_STRING));
}

void kgeRegisterAllDialects(MlirDialectRegistry registry) {
  kge::registerAllDialects(*unwrap(registry));
}

void kgeRegisterAllPasses(void) { kge::registerAllPasses(); }

MlirLogicalResult kgeRunPassPipeline(MlirOperation op, MlirStringRef pipeline) {
  if (mlirOperationIsNull(op))
    return mlirLogicalResultFailure();
  return wrap(runPipeline(unwrap(op), unwrap(pipeline)));
}

MlirLogicalResult kgeLowerToGPU(MlirModule module, MlirStringRef options) {
  if (mlirModuleIsNull(module))
    return mlirLogicalResultFailure();
  std::string text = "builtin.module(kge-lower-to-gpu";
  if (options.length)
    text += "{" + unwrap(options).str() + "}";
  text += ")";
  return wrap(runPipeline(unwrap(module), text));
}

MlirLogicalResult kgeLowerToCPU(MlirModule module) {
  if (mlirModuleIsNull(module))
    return mlirLogicalResultFailure();
  return wrap(runPipeline(unwrap(module), "builtin.module(kge-lower-to-cpu)"));
}

kgeBundleOptions kgeBundleOptionsGetDefault(void) {
  // The compiler's defaults live in BundleOptions; these strings outlive
  // every caller.
  static const kge::BundleOptions defaults;
  kgeBundleOptions options;
  options.chip = wrap(llvm::StringRef(defaults.ptx.chip));
  options.features = wrap(llvm::StringRef(defaults.ptx.features));
  options.optLevel = defaults.ptx.optLevel;
  options.cubin = defaults.cubin;
  options.ptxas = wrap(llvm::StringRef(defaults.ptxas));
  return options;
}

MlirLogicalResult kgeTranslateToBundle(MlirModule module,
                                       const kgeBundleOptions *options,
                                       MlirStringCallback callback,
                                       void *userData) {
  if (mlirModuleIsNull(module) || !callback)
    return mlirLogicalResultFailure();
  ModuleOp op = unwrap(module);
  if (failed(checkOptions(op, options)))
    return mlirLogicalResultFailure();
  return wrap(translate(op, options, callback, userData));
}

MlirLogicalResult kgeCompileToBundle(MlirModule module, MlirStringRef pipeline,
                                     const kgeBundleOptions *options,
                                     MlirStringCallback callback,
                                     void *userData) {
  if (mlirModuleIsNull(module) || !callback)
    return mlirLogicalResultFailure();
  if (failed(checkOptions(unwrap(module), options)))
    return mlirLogicalResultFailure();
  OwningOpRef<ModuleOp> lowered = unwrap(module).clone();
  llvm::StringRef text =
      pipeline.length ? unwrap(pipeline) : llvm::StringRef(kDefaultPipeline);
  if (failed(runPipeline(*lowered, text)))
    return mlirLogicalResultFailure();
  return wrap(translate(*lowered, options, callback, userData));
}
