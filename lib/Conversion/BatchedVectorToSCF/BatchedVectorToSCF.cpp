//===- BatchedVectorToSCF.cpp - the convert-bvec-to-scf pass --------------===//

#include "Conversion/BatchedVectorToSCF/BatchedVectorToSCF.h"
#include "LoopBuilder.h"

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir {
namespace kge {
#define GEN_PASS_DEF_CONVERTBATCHEDVECTORTOSCF
#include "Conversion/Passes.h.inc"
} // namespace kge
} // namespace mlir

using namespace mlir;
using namespace mlir::kge;

BatchedVectorToMemRefTypeConverter::BatchedVectorToMemRefTypeConverter() {
  addConversion([](Type type) -> std::optional<Type> {
    if (isa<bvec::BatchedType, bvec::TableType>(type))
      return std::nullopt;
    return type;
  });
  addConversion([](bvec::TableType type) -> Type {
    return MemRefType::get(type.getShape(), type.getElementType());
  });
  addConversion([](bvec::BatchedType type) -> Type {
    SmallVector<int64_t> shape{type.getBatchSize()};
    llvm::append_range(shape, type.getItemShape());
    return MemRefType::get(shape, type.getElementType());
  });
}

void mlir::kge::populateBatchedVectorToSCFConversionPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns) {
  populateBatchedVectorFuncAndGatherToSCFPatterns(typeConverter, patterns);
  populateBatchedVectorElementwiseToSCFPatterns(typeConverter, patterns);
  populateBatchedVectorProductToSCFPatterns(typeConverter, patterns);
}

/// Frees the temporaries of a lowered function before it returns: every
/// buffer allocated at the top level of the body.
static void freeTemporaries(func::FuncOp func) {
  Block &body = func.getBody().front();
  Operation *terminator = body.getTerminator();
  OpBuilder builder(terminator);
  for (auto alloc : body.getOps<memref::AllocOp>())
    memref::DeallocOp::create(builder, alloc.getLoc(), alloc);
}

namespace {
struct ConvertBatchedVectorToSCFPass
    : kge::impl::ConvertBatchedVectorToSCFBase<ConvertBatchedVectorToSCFPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<StringAttr> lowered;
    for (auto func : module.getOps<bvec::FuncOp>())
      lowered.push_back(func.getSymNameAttr());

    BatchedVectorToMemRefTypeConverter typeConverter;
    ConversionTarget target(getContext());
    target.addIllegalDialect<bvec::BatchedVectorDialect>();
    target.addLegalDialect<arith::ArithDialect, func::FuncDialect,
                           math::MathDialect, memref::MemRefDialect,
                           scf::SCFDialect>();
    RewritePatternSet patterns(&getContext());
    populateBatchedVectorToSCFConversionPatterns(typeConverter, patterns);
    ConversionConfig config;
    config.allowPatternRollback = false;
    if (failed(applyPartialConversion(module, target, std::move(patterns),
                                      config)))
      return signalPassFailure();

    for (StringAttr name : lowered)
      freeTemporaries(module.lookupSymbol<func::FuncOp>(name));
  }
};
} // namespace
