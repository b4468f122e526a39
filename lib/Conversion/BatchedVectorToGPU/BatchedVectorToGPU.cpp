//===- BatchedVectorToGPU.cpp - the convert-bvec-to-gpu pass --------------===//
//
// Replaces each planned bvec.func with a gpu.module holding its fused kernel
// and the description of the bundle: signature, launch plan (edge
// reordering by the device library, then the kernel), scratch buffers and
// index checks. Sizes in the launch plan are expressions over the
// signature's symbols (B, K, N_<table>, D_<table>, ...), evaluated by the
// runtime for each call.
//
//===----------------------------------------------------------------------===//

#include "Conversion/BatchedVectorToGPU/BatchedVectorToGPU.h"
#include "KernelEmitter.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace kge {
#define GEN_PASS_DEF_CONVERTBATCHEDVECTORTOGPU
#include "Conversion/Passes.h.inc"
} // namespace kge
} // namespace mlir

using namespace mlir;
using namespace mlir::kge;

//===----------------------------------------------------------------------===//
// Bundle attributes
//===----------------------------------------------------------------------===//

namespace {
/// The bundle's parameter of a function parameter: in negative mode the
/// corrupted index array is [B, K] and results gain a K dimension.
kge_runtime::Signature bundleSignature(const kge_runtime::Signature &base,
                                       StringRef negative) {
  kge_runtime::Signature signature = base;
  if (negative.empty())
    return signature;
  for (kge_runtime::Parameter &param : signature.params) {
    if (param.name == negative)
      param.shape.push_back(kge_runtime::Dim::named("K"));
    else if (param.role == kge_runtime::ParamRole::Result)
      param.shape.insert(param.shape.begin() + 1,
                         kge_runtime::Dim::named("K"));
  }
  return signature;
}

} // namespace

/// Attaches kge.signature, kge.mode, kge.scratch, kge.checks and
/// kge.launch_plan to `module`.
static void attachBundle(gpu::GPUModuleOp module, gpu::GPUFuncOp kernel,
                         bvec::FuncOp func, const KernelEmitter &emitter,
                         const bvec::KernelLayout &layout,
                         const GPUKernelOptions &options,
                         const kge_runtime::Signature &base) {
  Builder builder(module.getContext());
  BundleBuilder bb(builder);
  kge_runtime::Signature signature =
      bundleSignature(base, options.negative);
  bool negative = !options.negative.empty();
  std::string edges = negative ? "B*K" : "B";

  module->setAttr(kSignatureAttrName, bb.signature(signature));
  module->setAttr(kModeAttrName,
                  negative ? bb.dict({{"kind", bb.str("negative")},
                                      {"corrupted", bb.str(options.negative)}})
                           : bb.dict({{"kind", bb.str("positive")}}));

  auto paramOf = [&](StringRef name) -> const kge_runtime::Parameter & {
    return signature.params[signature.find(name.str())];
  };
  auto bitsOf = [&](const kge_runtime::Parameter &p) {
    return bb.str(p.dtype == kge_runtime::DType::I32 ? "32" : "64");
  };
  auto pointer = [&](StringRef buffer) { return bb.pointer(buffer); };
  auto scalarArg = [&](StringRef kind, Attribute value) {
    return bb.scalar(kind, value);
  };
  auto launch = [&](StringRef function, StringRef moduleName,
                    ArrayRef<std::string> grid, int64_t block,
                    StringRef sharedBytes, ArrayRef<Attribute> args) {
    return bb.launch(function, moduleName, grid, block, sharedBytes, args);
  };

  SmallVector<Attribute> scratch, steps, checks;
  // Layouts that sort some batches only: the sort's steps run when B
  // reaches reorder_min_batch and reorder_min_reuse edges per row of the
  // key's table and that table's rows have reorder_min_row elements (a
  // positive `when`), and the kernel is told whether they ran.
  std::string sortedWhen;
  if (layout.sortsSomeBatches()) {
    SmallVector<std::string> terms;
    if (layout.reorderMinBatch > 0)
      terms.push_back("B / " + std::to_string(layout.reorderMinBatch));
    if (layout.reorderMinReuse > 0)
      terms.push_back(
          "B / max(1, " + std::to_string(layout.reorderMinReuse) + " * " +
          indexRange(signature, paramOf(layout.reorderKey)) + ")");
    if (layout.reorderMinRow > 0)
      terms.push_back(rowLength(signature, paramOf(layout.reorderKey)) +
                      " / " + std::to_string(layout.reorderMinRow));
    sortedWhen = terms.front();
    for (const std::string &term : ArrayRef(terms).drop_front())
      sortedWhen = "min(" + sortedWhen + ", " + term + ")";
  }
  auto onlyWhenSorted = [&](Attribute step) -> Attribute {
    if (sortedWhen.empty())
      return step;
    NamedAttrList fields(cast<DictionaryAttr>(step));
    fields.set("when", bb.str(sortedWhen));
    return fields.getDictionary(step.getContext());
  };

  // Edge reordering by the key index array (cuKE, Section VI-B).
  bool reorders = !layout.reorderKey.empty() && layout.reorderGroup != 1;
  if (reorders) {
    const kge_runtime::Parameter &key = paramOf(layout.reorderKey);
    std::string keyBuffer = "param:" + key.name;
    scratch.push_back(bb.dict({{"name", bb.str("perm")},
                               {"dtype", bb.str("i32")},
                               {"count", bb.str("B")}}));
    if (layout.reorderGroup == 0) {
      // Whole batch: counting sort by key.
      bb.appendCountingSort(
          scratch, steps, keyBuffer,
          key.dtype == kge_runtime::DType::I32 ? 32 : 64, "B",
          indexRange(signature, key), "scratch:perm", onlyWhenSorted);
    } else {
      int64_t group = layout.reorderGroup * layout.tile;
      int64_t padded = llvm::PowerOf2Ceil(group);
      steps.push_back(launch(
          "kge_sort_groups", "library",
          {"ceildiv(B, " + std::to_string(group) + ")", "1", "1"},
          std::min<int64_t>(1024, padded), std::to_string(8 * padded),
          {pointer(keyBuffer), scalarArg("i32", bitsOf(key)),
           scalarArg("i64", bb.str("B")),
           scalarArg("i32", bb.str(std::to_string(group))),
           pointer("scratch:perm")}));
    }
  }

  // The fused kernel.
  SmallVector<Attribute> args;
  for (const kge_runtime::Parameter &p : signature.params) {
    SmallVector<std::string> shape;
    if (negative && p.role == kge_runtime::ParamRole::Result) {
      // Results are passed flattened to B * K rows.
      shape.push_back(edges);
      for (size_t d = 2; d < p.shape.size(); ++d)
        shape.push_back(p.shape[d].str());
    } else {
      for (const kge_runtime::Dim &d : p.shape)
        shape.push_back(d.str());
    }
    args.push_back(bb.memref("param:" + p.name, shape));
  }
  if (reorders)
    args.push_back(bb.memref("scratch:perm", {"B"}));
  if (!sortedWhen.empty())
    args.push_back(scalarArg("i32", bb.str("min(1, " + sortedWhen + ")")));
  std::string sharedBytes =
      std::to_string(emitter.sharedLayout().staticBytes);
  for (Value m : emitter.sharedLayout().materialized)
    sharedBytes += " + " + std::to_string(4 * layout.tile) + "*" +
                   emitter.rowStrideOf(m).str();
  steps.push_back(launch(
      kernel.getName(), module.getName(),
      {"ceildiv(" + edges + ", " + std::to_string(layout.tile) + ")", "1",
       "1"},
      emitter.blockSize(), sharedBytes, args));

  // Checked mode: every index against every table it selects from.
  for (const kge_runtime::Parameter &p : signature.params) {
    if (p.role != kge_runtime::ParamRole::Indices || p.indexedTables.empty())
      continue;
    std::string count = p.name == options.negative ? edges : "B";
    checks.push_back(bb.dict({{"param", bb.str(p.name)},
                              {"bound", bb.str(indexRange(signature, p))},
                              {"count", bb.str(count)}}));
  }

  module->setAttr(kScratchAttrName, bb.arr(scratch));
  module->setAttr(kLaunchPlanAttrName, bb.arr(steps));
  module->setAttr(kChecksAttrName, bb.arr(checks));
  (void)func;
}

//===----------------------------------------------------------------------===//
// The pattern
//===----------------------------------------------------------------------===//

/// Declares the device-library functions in `module`.
static void declareDeviceLibrary(OpBuilder &b, Location loc) {
  auto i32 = b.getI32Type(), i64 = b.getI64Type();
  LLVM::LLVMFuncOp::create(
      b, loc, kInspectUnique,
      LLVM::LLVMFunctionType::get(i32, {i64, i32, i64, i64, i64, i64, i64}));
  LLVM::LLVMFuncOp::create(
      b, loc, kInspectFrequent,
      LLVM::LLVMFunctionType::get(i32, {i64, i32, i64, i64}));
}

namespace {
struct FuncToGPUModule : OpRewritePattern<bvec::FuncOp> {
  FuncToGPUModule(MLIRContext *context, const GPUKernelOptions &options)
      : OpRewritePattern(context), options(options) {}

  LogicalResult matchAndRewrite(bvec::FuncOp func,
                                PatternRewriter &rewriter) const override {
    FailureOr<bvec::KernelLayout> layout = bvec::KernelLayout::fromFunc(func);
    if (failed(layout))
      return failure();
    // The default sort by entity cannot key on the corrupted array of
    // negative mode (B x K indices, not one per edge): it keys on another
    // index array of the same table (tails for heads) whose rows qualify
    // (reorder_min_row), or there is none.
    // A sort by the corrupted array that was asked for is an error (the
    // emitter's).
    if (layout->reorderAuto && layout->reorderKey == options.negative) {
      Value key = func.getArgumentByName(layout->reorderKey);
      std::string other;
      func.getBody().walk([&](bvec::GatherVecOp gather) {
        auto indices = dyn_cast<BlockArgument>(gather.getIndices());
        if (!other.empty() || !indices || indices == key ||
            func.getArgName(indices.getArgNumber()) == options.negative ||
            !bvec::rowsMaySort(gather, layout->reorderMinRow))
          return;
        func.getBody().walk([&](bvec::GatherVecOp keyed) {
          if (keyed.getIndices() == key && keyed.getTable() == gather.getTable())
            other = func.getArgName(indices.getArgNumber()).str();
        });
      });
      layout->reorderKey = other;
      if (other.empty()) {
        layout->reorderGroup = 1;
        layout->reorderMinBatch = layout->reorderMinReuse =
            layout->reorderMinRow = 0;
      }
    }
    FailureOr<kge_runtime::Signature> signature =
        bvec::computeSignature(func);
    if (failed(signature))
      return failure();
    bvec::FusionStages stages = bvec::computeFusionStages(func);
    KernelEmitter emitter(rewriter, func, *layout, stages, options);
    if (failed(emitter.plan()))
      return failure();

    Location loc = func.getLoc();
    rewriter.setInsertionPoint(func);
    auto module = gpu::GPUModuleOp::create(
        rewriter, loc, (func.getSymName() + "_kernels").str());
    rewriter.setInsertionPointToStart(module.getBody());
    declareDeviceLibrary(rewriter, loc);
    auto kernel = gpu::GPUFuncOp::create(
        rewriter, loc, func.getSymName(),
        rewriter.getFunctionType(emitter.kernelArgumentTypes(), {}));
    kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                    rewriter.getUnitAttr());
    kernel.setKnownBlockSizeAttr(rewriter.getDenseI32ArrayAttr(
        {static_cast<int32_t>(emitter.blockSize()), 1, 1}));
    // The occupancy the layout asks for (bvec-fuse checked that it leaves
    // every thread the registers the inspector needs).
    if (layout->blocksPerSM > 0)
      kernel->setAttr("nvvm.minctasm", rewriter.getI32IntegerAttr(
                                           static_cast<int32_t>(layout->blocksPerSM)));
    if (failed(emitter.emit(kernel))) {
      rewriter.eraseOp(module);
      return failure();
    }
    attachBundle(module, kernel, func, emitter, *layout, options, *signature);
    rewriter.eraseOp(func);
    return success();
  }

  GPUKernelOptions options;
};

struct ConvertBatchedVectorToGPUPass
    : kge::impl::ConvertBatchedVectorToGPUBase<ConvertBatchedVectorToGPUPass> {
  using ConvertBatchedVectorToGPUBase::ConvertBatchedVectorToGPUBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    GPUKernelOptions kernelOptions;
    kernelOptions.negative = negative;
    RewritePatternSet patterns(&getContext());
    populateBatchedVectorToGPUPatterns(patterns, kernelOptions);
    // Each function is rewritten once; nothing else to fold.
    GreedyRewriteConfig config;
    config.setMaxIterations(1);
    // The pattern explains its failures; a function left behind without an
    // explanation still gets one.
    bool explained = false;
    {
      ScopedDiagnosticHandler observe(&getContext(), [&](Diagnostic &diag) {
        explained |= diag.getSeverity() == DiagnosticSeverity::Error;
        return failure(); // Reported by the next handler.
      });
      (void)applyPatternsGreedily(module, std::move(patterns), config);
    }
    bool failedAny = false;
    for (auto func : module.getOps<bvec::FuncOp>()) {
      if (!explained)
        func.emitOpError("could not be lowered to a GPU kernel");
      failedAny = true;
    }
    if (failedAny)
      return signalPassFailure();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(&getContext()));
  }
};
} // namespace

void mlir::kge::populateBatchedVectorToGPUPatterns(
    RewritePatternSet &patterns, const GPUKernelOptions &options) {
  patterns.add<FuncToGPUModule>(patterns.getContext(), options);
}
