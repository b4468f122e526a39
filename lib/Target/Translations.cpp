//===- Translations.cpp - kge-translate's translations --------------------===//
//
//   --mlir-to-ptx        gpu.modules (NVVM/LLVM dialects) -> PTX text
//   --kge-to-bundle      a function lowered by kge-lower-to-gpu -> bundle
//   --bvec-to-signature  bvec.func -> JSON signatures (the manifest's
//                        parameter lists)
//   --tile-to-signature  tile functions -> JSON signatures
//   --import-gamut       a query in GAMUT's declarative syntax -> a tile
//                        function (`--gamut-name`, `--gamut-dtype=X:i32`)
//
//===----------------------------------------------------------------------===//

#include "InitAll.h"

#include "Dialect/BatchedVector/Analysis/SignatureAnalysis.h"
#include "Dialect/TileIterator/Analysis/SignatureAnalysis.h"
#include "Dialect/TileIterator/Query/QueryParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "Target/Bundle.h"
#include "Target/PTX.h"
#include "Target/SignatureJSON.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <mutex>

using namespace mlir;
using namespace mlir::kge;

namespace {
llvm::cl::opt<std::string> ptxChip("ptx-chip",
                                   llvm::cl::desc("chip of gpu.modules that "
                                                  "have no target (sm_90)"),
                                   llvm::cl::init("sm_90"));
llvm::cl::opt<std::string> gamutName("gamut-name",
                                     llvm::cl::desc("name of the function "
                                                    "--import-gamut builds"),
                                     llvm::cl::init("query"));
llvm::cl::list<std::string>
    gamutDTypes("gamut-dtype",
                llvm::cl::desc("element type of an array of a GAMUT query, "
                               "as name:dtype (f16, bf16, f32, f64, i32, "
                               "i64)"),
                llvm::cl::CommaSeparated);
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

/// Prints the signatures of the functions `Fn` computes them for.
template <typename FuncT, typename Fn>
static LogicalResult
printSignatures(Operation *op, llvm::raw_ostream &os, Fn computeSignature,
                llvm::function_ref<bool(FuncT)> include = nullptr) {
  llvm::json::Array signatures;
  WalkResult result = op->walk([&](FuncT func) {
    if (include && !include(func))
      return WalkResult::advance();
    FailureOr<kge_runtime::Signature> signature = computeSignature(func);
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

static LogicalResult translateToSignature(Operation *op,
                                          llvm::raw_ostream &os) {
  return printSignatures<bvec::FuncOp>(op, os, [](bvec::FuncOp func) {
    return bvec::computeSignature(func);
  });
}

static LogicalResult translateTileToSignature(Operation *op,
                                              llvm::raw_ostream &os) {
  return printSignatures<func::FuncOp>(
      op, os, [](func::FuncOp func) { return tile::computeSignature(func); },
      tile::isTileFunction);
}

static OwningOpRef<Operation *> importGamut(llvm::SourceMgr &sourceMgr,
                                            MLIRContext *context) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  tile::QueryOptions options;
  options.name = gamutName;
  options.bufferName = buffer->getBufferIdentifier().str();
  for (const std::string &entry : gamutDTypes) {
    auto [name, dtype] = StringRef(entry).split(':');
    if (dtype.empty()) {
      emitError(UnknownLoc::get(context))
          << "--gamut-dtype expects name:dtype, got '" << entry << "'";
      return nullptr;
    }
    options.dtypes[name] = dtype.str();
  }
  OwningOpRef<ModuleOp> module =
      tile::parseQuery(buffer->getBuffer(), context, options);
  if (!module)
    return nullptr;
  return OwningOpRef<Operation *>(module.release());
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
    TranslateFromMLIRRegistration(
        "tile-to-signature", "print the signatures of tile functions as JSON",
        translateTileToSignature, registerAllDialects);
    TranslateToMLIRRegistration(
        "import-gamut",
        "parse a query in GAMUT's declarative syntax into a tile function",
        importGamut, registerAllDialects);
  });
}
