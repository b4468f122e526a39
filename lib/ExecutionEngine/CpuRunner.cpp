//===- CpuRunner.cpp - run bvec functions on the CPU ----------------------===//

#include "ExecutionEngine/CpuRunner.h"

#include "Dialect/BatchedVector/Analysis/SignatureAnalysis.h"
#include "Dialect/TileIterator/Analysis/SignatureAnalysis.h"
#include "Transforms/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace mlir;
using namespace mlir::kge;

CpuFunction::~CpuFunction() = default;

/// Collects the diagnostics emitted while `fn` runs into `error`.
template <typename Fn>
static auto captureDiagnostics(MLIRContext *context, std::string &error,
                               Fn &&fn) {
  llvm::raw_string_ostream os(error);
  ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
    os << diag.getLocation() << ": " << diag << "\n";
    for (Diagnostic &note : diag.getNotes())
      os << note.getLocation() << ": note: " << note << "\n";
    return success();
  });
  return fn();
}

std::unique_ptr<CpuFunction> CpuFunction::compile(ModuleOp module,
                                                  StringRef name,
                                                  std::string &error) {
  static std::once_flag initTarget;
  std::call_once(initTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });

  // Runnable functions: bvec.funcs and tile functions (func.funcs of
  // tile.tasks).
  SmallVector<Operation *> candidates;
  for (auto func : module.getOps<bvec::FuncOp>())
    if (name.empty() || func.getSymName() == name)
      candidates.push_back(func);
  for (auto func : module.getOps<func::FuncOp>())
    if ((name.empty() || func.getSymName() == name) &&
        tile::isTileFunction(func))
      candidates.push_back(func);
  if (candidates.empty()) {
    error = name.empty()
                ? "the module has no bvec.func and no tile function"
                : ("the module has no bvec.func or tile function named '" +
                   name + "'")
                      .str();
    return nullptr;
  }
  if (candidates.size() > 1) {
    error = "the module has several functions to run; name the one to run";
    return nullptr;
  }
  Operation *func = candidates.front();
  MLIRContext *context = module.getContext();

  std::unique_ptr<CpuFunction> result(new CpuFunction());
  FailureOr<kge_runtime::Signature> signature =
      captureDiagnostics(context, error, [&] {
        if (auto bvecFunc = dyn_cast<bvec::FuncOp>(func))
          return bvec::computeSignature(bvecFunc);
        return tile::computeSignature(cast<func::FuncOp>(func));
      });
  if (failed(signature))
    return nullptr;
  result->signature_ = std::move(*signature);

  // Lower a copy that holds only this function.
  OwningOpRef<ModuleOp> lowered = ModuleOp::create(module.getLoc());
  Operation *copy = func->clone();
  if (isa<func::FuncOp>(copy))
    copy->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  UnitAttr::get(context));
  lowered->getBody()->push_front(copy);
  PassManager pm(context);
  buildLowerToCPUPipeline(pm);
  if (failed(captureDiagnostics(context, error,
                                [&] { return pm.run(*lowered); }))) {
    if (error.empty())
      error = "lowering to the CPU failed";
    return nullptr;
  }

  // `transformer` is a function_ref: keep the optimizer alive beside it.
  std::function<llvm::Error(llvm::Module *)> optimizer =
      makeOptimizingTransformer(/*optLevel=*/2, /*sizeLevel=*/0,
                                /*targetMachine=*/nullptr);
  ExecutionEngineOptions options;
  options.transformer = optimizer;
  auto engine = captureDiagnostics(context, error, [&] {
    return ExecutionEngine::create(*lowered, options);
  });
  if (!engine) {
    llvm::raw_string_ostream os(error);
    os << "JIT compilation failed: " << llvm::toString(engine.takeError());
    return nullptr;
  }
  result->engine_ = std::move(*engine);
  return result;
}

static std::vector<kge_runtime::ArrayDesc>
describe(const std::vector<HostArray> &arrays) {
  std::vector<kge_runtime::ArrayDesc> descs;
  for (const HostArray &array : arrays)
    descs.push_back({array.dtype, array.shape});
  return descs;
}

bool CpuFunction::bind(const std::vector<HostArray> &arguments,
                       std::optional<int64_t> batchSize,
                       kge_runtime::Bindings &bindings, std::string &error) const {
  if (!kge_runtime::bindArguments(signature_, describe(arguments), batchSize,
                            bindings, error))
    return false;
  for (unsigned i = 0; i < arguments.size(); ++i) {
    if (signature_.params[i].role != kge_runtime::ParamRole::Indices)
      continue;
    if (!arguments[i].data && bindings.shapeOf(signature_.params[i])[0] > 0) {
      error = "index array '" + signature_.params[i].name + "' has no data";
      return false;
    }
    if (!kge_runtime::checkIndexRange(signature_, bindings, i, arguments[i].data,
                                error))
      return false;
  }
  return true;
}

bool CpuFunction::resultShapes(const std::vector<HostArray> &arguments,
                               std::optional<int64_t> batchSize,
                               std::vector<std::vector<int64_t>> &shapes,
                               std::string &error) const {
  kge_runtime::Bindings bindings;
  if (!kge_runtime::bindArguments(signature_, describe(arguments), batchSize,
                            bindings, error))
    return false;
  shapes.clear();
  for (unsigned i = signature_.numArguments(); i < signature_.params.size();
       ++i)
    shapes.push_back(bindings.shapeOf(signature_.params[i]));
  return true;
}

namespace {
/// A ranked memref descriptor laid out as the C interface expects:
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct Descriptor {
  explicit Descriptor(const HostArray &array) {
    auto ptr = reinterpret_cast<int64_t>(array.data);
    words = {ptr, ptr, 0};
    words.insert(words.end(), array.shape.begin(), array.shape.end());
    std::vector<int64_t> strides(array.shape.size(), 1);
    for (int i = static_cast<int>(array.shape.size()) - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * array.shape[i + 1];
    words.insert(words.end(), strides.begin(), strides.end());
  }
  std::vector<int64_t> words;
};
} // namespace

bool CpuFunction::run(const std::vector<HostArray> &arguments,
                      const std::vector<HostArray> &results,
                      std::optional<int64_t> batchSize,
                      std::string &error) const {
  kge_runtime::Bindings bindings;
  if (!bind(arguments, batchSize, bindings, error) ||
      !kge_runtime::checkResults(signature_, bindings, describe(results), error))
    return false;

  std::vector<Descriptor> descriptors;
  for (const HostArray &array : arguments)
    descriptors.emplace_back(array);
  for (const HostArray &array : results)
    descriptors.emplace_back(array);
  std::vector<void *> pointers;
  for (Descriptor &d : descriptors)
    pointers.push_back(d.words.data());
  std::vector<void *> packed;
  for (void *&p : pointers)
    packed.push_back(&p);

  llvm::Error status = engine_->invokePacked(
      ("_mlir_ciface_" + signature_.name), packed);
  if (status) {
    error = "invoking '" + signature_.name +
            "' failed: " + llvm::toString(std::move(status));
    return false;
  }
  return true;
}
