//===- BatchedVectorToSCF.cpp - the convert-bvec-to-scf pass --------------===//

#include "Conversion/BatchedVectorToSCF/BatchedVectorToSCF.h"
#include "LoopBuilder.h"

#include "Dialect/BatchedVector/Analysis/SignatureAnalysis.h"
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

/// Records on every constant of a dynamic item size where that size comes
/// from (loops::kItemSizesAttrName): the signature analysis unifies it
/// with a table dimension, which the lowered function reads from the
/// table's buffer.
static LogicalResult recordConstantSizes(bvec::FuncOp func) {
  SmallVector<bvec::ConstantOp> dynamic;
  func.walk([&](bvec::ConstantOp constant) {
    if (!bvec::ConstantOp::isMaterializable(constant.getType()))
      dynamic.push_back(constant);
  });
  if (dynamic.empty())
    return success();
  FailureOr<bvec::DimensionSymbols> dims =
      bvec::DimensionSymbols::compute(func);
  if (failed(dims))
    return failure();
  Builder b(func.getContext());
  // [argument number, dimension] of the first table dimension named
  // `symbol` (the analysis names only table dimensions and the batch).
  auto tableDimension = [&](StringRef symbol) -> Attribute {
    for (BlockArgument arg : func.getArguments())
      if (isa<bvec::TableType>(arg.getType()))
        for (unsigned d = 0, e = bvec::getFullShape(arg.getType()).size();
             d < e; ++d)
          if (dims->dimOf(arg, d).symbol == symbol)
            return b.getI64ArrayAttr({arg.getArgNumber(), d});
    return {};
  };
  for (bvec::ConstantOp constant : dynamic) {
    SmallVector<Attribute> sizes;
    unsigned rank = bvec::getFullShape(constant.getType()).size();
    for (unsigned pos = 1; pos < rank; ++pos) {
      kge_runtime::Dim dim = dims->dimOf(constant, pos);
      sizes.push_back(dim.isStatic() ? b.getI64IntegerAttr(dim.size)
                                     : tableDimension(dim.symbol));
      assert(sizes.back() && "item sizes come from table dimensions");
    }
    constant->setAttr(loops::kItemSizesAttrName, b.getArrayAttr(sizes));
  }
  return success();
}

namespace {
struct ConvertBatchedVectorToSCFPass
    : kge::impl::ConvertBatchedVectorToSCFBase<ConvertBatchedVectorToSCFPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<StringAttr> lowered;
    for (auto func : module.getOps<bvec::FuncOp>()) {
      lowered.push_back(func.getSymNameAttr());
      if (failed(recordConstantSizes(func)))
        return signalPassFailure();
    }

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
