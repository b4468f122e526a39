//===- Bundle.cpp - kernel bundles: PTX + manifest ------------------------===//

#include "Target/Bundle.h"

#include "Conversion/BatchedVectorToGPU/BatchedVectorToGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Base64.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::kge;

/// The JSON form of the attributes convert-bvec-to-gpu attaches.
static llvm::json::Value toJSON(Attribute attr) {
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object object;
    for (NamedAttribute entry : dict)
      object[entry.getName().getValue()] = toJSON(entry.getValue());
    return object;
  }
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array values;
    for (Attribute element : array)
      values.push_back(toJSON(element));
    return values;
  }
  if (auto string = dyn_cast<StringAttr>(attr))
    return string.getValue().str();
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return integer.getInt();
  return nullptr;
}

/// Assembles `ptx` into a relocatable sm object with ptxas; empty on any
/// failure (a bundle without cubin is still complete).
static std::string assemble(StringRef ptx, StringRef chip,
                            const BundleOptions &options) {
  std::string ptxas = options.ptxas;
  if (ptxas.empty()) {
    if (auto found = llvm::sys::findProgramByName("ptxas"))
      ptxas = *found;
    else if (auto found =
                 llvm::sys::findProgramByName("ptxas", {"/usr/local/cuda/bin"}))
      ptxas = *found;
    else
      return "";
  }
  SmallString<128> input, output;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("kge", "ptx", fd, input))
    return "";
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << ptx;
  }
  if (llvm::sys::fs::createTemporaryFile("kge", "o", output))
    return "";
  std::string arch = "-arch=" + chip.str();
  SmallVector<StringRef> args{ptxas, arch, "--compile-only", "-O3",
                              input, "-o", output};
  int status = llvm::sys::ExecuteAndWait(ptxas, args);
  std::string object;
  if (status == 0)
    if (auto buffer = llvm::MemoryBuffer::getFile(output))
      object = (*buffer)->getBuffer().str();
  llvm::sys::fs::remove(input);
  llvm::sys::fs::remove(output);
  return object;
}

FailureOr<std::string> mlir::kge::translateToBundle(ModuleOp module,
                                                    const BundleOptions &options) {
  SmallVector<gpu::GPUModuleOp> lowered;
  for (auto gpuModule : module.getOps<gpu::GPUModuleOp>())
    if (gpuModule->hasAttr(kSignatureAttrName))
      lowered.push_back(gpuModule);
  if (lowered.size() != 1) {
    module.emitError() << "a bundle holds one function lowered by "
                          "kge-lower-to-gpu; the module has "
                       << lowered.size();
    return failure();
  }
  gpu::GPUModuleOp kernels = lowered.front();

  // The attributes convert-bvec-to-gpu wrote (hand-written IR may lack or
  // garble them).
  auto signature = kernels->getAttrOfType<DictionaryAttr>(kSignatureAttrName);
  auto mode = kernels->getAttrOfType<DictionaryAttr>(kModeAttrName);
  auto scratch = kernels->getAttrOfType<ArrayAttr>(kScratchAttrName);
  auto launches = kernels->getAttrOfType<ArrayAttr>(kLaunchPlanAttrName);
  auto checks = kernels->getAttrOfType<ArrayAttr>(kChecksAttrName);
  if (!signature || !mode || !scratch || !launches || !checks) {
    kernels.emitError() << "needs the dictionaries " << kSignatureAttrName
                        << " and " << kModeAttrName << " and the arrays "
                        << kScratchAttrName << ", " << kLaunchPlanAttrName
                        << " and " << kChecksAttrName
                        << " that convert-bvec-to-gpu attaches";
    return failure();
  }

  FailureOr<std::vector<PTXModule>> ptx = serializeToPTX(module, options.ptx);
  if (failed(ptx))
    return failure();

  // The bundle's chip: the requested one, or the architecture-specific
  // variant a module needs (warpgroup MMA: sm_90a).
  std::string chip = options.ptx.chip;
  llvm::json::Array modules;
  for (const PTXModule &m : *ptx) {
    if (m.chip != options.ptx.chip)
      chip = m.chip;
    llvm::json::Object entry{{"name", m.name}, {"ptx", m.ptx}};
    if (options.cubin) {
      std::string object = assemble(m.ptx, m.chip, options);
      if (!object.empty())
        entry["cubin_base64"] = llvm::encodeBase64(object);
    }
    modules.push_back(std::move(entry));
  }

  // Device-library functions the kernels call (external declarations) and
  // library kernels the launch plan runs.
  llvm::json::Array library;
  for (auto func : kernels.getOps<LLVM::LLVMFuncOp>())
    if (func.isExternal() && !func.getName().starts_with("__nv_"))
      library.push_back(func.getName().str());
  for (Attribute step : launches) {
    auto dict = dyn_cast<DictionaryAttr>(step);
    auto module = dict ? dict.getAs<StringAttr>("module") : StringAttr();
    auto function = dict ? dict.getAs<StringAttr>("function") : StringAttr();
    if (module && function && module.getValue() == "library")
      library.push_back(function.getValue().str());
  }

  // Kernels of modules that wait for the prior grids at their entry (sm_90
  // and newer) may be launched as dependents. Library kernels run in stream
  // order.
  llvm::StringSet<> waiting;
  for (const PTXModule &m : *ptx)
    if (m.waitsForPriorGrids)
      waiting.insert(m.name);
  llvm::json::Value plan = toJSON(launches);
  for (llvm::json::Value &step : *plan.getAsArray())
    if (llvm::json::Object *object = step.getAsObject())
      if (std::optional<StringRef> module = object->getString("module");
          module && object->getString("kind") == "kernel" &&
          waiting.contains(*module))
        (*object)["dependent"] = true;

  llvm::json::Object bundle{
      {"format", "kge-bundle"},
      {"version", kBundleFormatVersion},
      {"generator", "KGE"},
      {"target",
       llvm::json::Object{{"chip", chip},
                          {"features", options.ptx.features}}},
      {"function", toJSON(signature)},
      {"mode", toJSON(mode)},
      {"modules", std::move(modules)},
      {"library", std::move(library)},
      {"scratch", toJSON(scratch)},
      {"launches", std::move(plan)},
      {"checks", toJSON(checks)},
  };
  if (auto derived = kernels->getAttrOfType<DictionaryAttr>(kDerivedAttrName))
    bundle["derived"] = toJSON(derived);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:1}", llvm::json::Value(std::move(bundle))) << "\n";
  return text;
}
