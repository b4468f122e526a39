//===- Translations.cpp - kge-translate's translations --------------------===//
//
//   --mlir-to-ptx        gpu.modules (NVVM/LLVM dialects) -> PTX text
//   --kge-to-bundle      a function lowered by kge-lower-to-gpu -> bundle
//   --bvec-to-signature  bvec.func -> JSON signatures (the manifest's
//                        parameter lists)
//
//===----------------------------------------------------------------------===//

#include "InitAll.h"

#include "Dialect/BatchedVector/Analysis/SignatureAnalysis.h"
#include "Target/Bundle.h"
#include "Target/PTX.h"
#include "Target/SignatureJSON.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"

#include <mutex>

using namespace mlir;
using namespace mlir::kge;

namespace {
llvm::cl::opt<std::string> ptxChip("ptx-chip",
                                   llvm::cl::desc("chip of gpu.modules that "
                                                  "have no target (sm_90)"),
                                   llvm::cl::init("sm_90"));
} // namespace

static LogicalResult translateToPTX(Operation *op, llvm::raw_ostream &os) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return op->emitError("expected a builtin.module");
  PTXOptions options;
  options.chip = ptxChip;
  FailureOr<std::vector<PTXModule>> modules = serializeToPTX(module, options);
  if (failed(modules))
    return failure();
  for (const PTXModule &m : *modules)
    os << "// gpu.module @" << m.name << "\n" << m.ptx << "\n";
  return success();
}

static LogicalResult translateBundle(Operation *op, llvm::raw_ostream &os) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return op->emitError("expected a builtin.module");
  BundleOptions options;
  options.ptx.chip = ptxChip;
  FailureOr<std::string> bundle = translateToBundle(module, options);
  if (failed(bundle))
    return failure();
  os << *bundle;
  return success();
}

static LogicalResult translateToSignature(Operation *op,
                                          llvm::raw_ostream &os) {
  llvm::json::Array signatures;
  WalkResult result = op->walk([&](bvec::FuncOp func) {
    FailureOr<kge_runtime::Signature> signature = bvec::computeSignature(func);
    if (failed(signature))
      return WalkResult::interrupt();
    signatures.push_back(signatureToJSON(*signature));
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(signatures)))
     << "\n";
  return success();
}

void mlir::kge::registerAllTranslations() {
  static std::once_flag once;
  std::call_once(once, [] {
    TranslateFromMLIRRegistration(
        "mlir-to-ptx", "serialize gpu.modules to PTX", translateToPTX,
        registerAllDialects);
    TranslateFromMLIRRegistration(
        "kge-to-bundle",
        "write the kernel bundle (PTX, cubin, manifest) of a function "
        "lowered by kge-lower-to-gpu",
        translateBundle, registerAllDialects);
    TranslateFromMLIRRegistration(
        "bvec-to-signature",
        "print the signatures of bvec functions as JSON",
        translateToSignature, registerAllDialects);
  });
}
