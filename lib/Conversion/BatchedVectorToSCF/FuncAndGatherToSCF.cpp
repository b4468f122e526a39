//===- FuncAndGatherToSCF.cpp - bvec.func, return and gathers -------------===//

#include "Conversion/BatchedVectorToSCF/BatchedVectorToSCF.h"
#include "LoopBuilder.h"

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::kge;

namespace {

/// `bvec.func` -> `func.func` in destination-passing style.
struct FuncOpLowering : OpConversionPattern<bvec::FuncOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(bvec::FuncOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    const TypeConverter &converter = *getTypeConverter();
    TypeConverter::SignatureConversion signature(op.getNumArguments());
    for (auto [i, type] : llvm::enumerate(op.getArgumentTypes())) {
      Type converted = converter.convertType(type);
      if (!converted)
        return rewriter.notifyMatchFailure(op, "unsupported argument type");
      signature.addInputs(i, converted);
    }
    SmallVector<Type> outputs;
    for (Type type : op.getResultTypes()) {
      Type converted = converter.convertType(type);
      if (!converted)
        return rewriter.notifyMatchFailure(op, "unsupported result type");
      outputs.push_back(converted);
    }
    signature.addInputs(outputs);

    auto func = func::FuncOp::create(
        rewriter, op.getLoc(), op.getSymName(),
        rewriter.getFunctionType(signature.getConvertedTypes(), {}));
    func->setAttr("llvm.emit_c_interface", rewriter.getUnitAttr());
    if (op.getSymVisibility())
      func.setSymVisibility(*op.getSymVisibility());
    for (unsigned i = 0, e = op.getNumArguments(); i < e; ++i)
      func.setArgAttr(i, loops::kParamAttrName,
                      rewriter.getStringAttr(op.getArgName(i)));
    for (unsigned i = 0, e = op.getNumResults(); i < e; ++i)
      func.setArgAttr(op.getNumArguments() + i, loops::kResultAttrName,
                      rewriter.getStringAttr(op.getResultName(i)));

    rewriter.inlineRegionBefore(op.getBody(), func.getBody(), func.end());
    if (!rewriter.applySignatureConversion(&func.getBody().front(), signature,
                                           &converter))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }
};

/// `bvec.return` -> copies into the output buffers and `func.return`.
struct ReturnOpLowering : OpConversionPattern<bvec::ReturnOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(bvec::ReturnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto func = op->getParentOfType<func::FuncOp>();
    if (!func)
      return rewriter.notifyMatchFailure(op, "function not lowered yet");
    unsigned numResults = adaptor.getOperands().size();
    unsigned firstOutput = func.getNumArguments() - numResults;
    for (auto [i, value] : llvm::enumerate(adaptor.getOperands()))
      memref::CopyOp::create(rewriter, op.getLoc(), value,
                             func.getArgument(firstOutput + i));
    rewriter.replaceOpWithNewOp<func::ReturnOp>(op);
    return success();
  }
};

/// Loads `table[indices]`, widened to `element` (f32 from a half-precision
/// table) when the types differ.
Value loadElement(OpBuilder &b, Location loc, Value table, ValueRange indices,
                  Type element) {
  Value v = memref::LoadOp::create(b, loc, table, indices);
  if (v.getType() == element)
    return v;
  return arith::ExtFOp::create(b, loc, element, v);
}

/// Loads `indices[b]` as an index value.
Value loadIndex(OpBuilder &b, Location loc, Value indices, Value batchIv) {
  Value raw = memref::LoadOp::create(b, loc, indices, batchIv);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
}

/// `bvec.gather_vec`: `out[b][d] = table[indices[b]][d]`.
struct GatherVecOpLowering : OpConversionPattern<bvec::GatherVecOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(bvec::GatherVecOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<MemRefType>(getTypeConverter()->convertType(op.getType()));
    Value batch = loops::dimSize(rewriter, loc, adaptor.getIndices(), 0);
    Value length = loops::dimSize(rewriter, loc, adaptor.getTable(), 1);
    Value out = loops::alloc(rewriter, loc, type, {batch, length});
    loops::forEach(rewriter, loc, {batch},
                   [&](OpBuilder &b, Location l, ValueRange ivs) {
                     Value row = loadIndex(b, l, adaptor.getIndices(), ivs[0]);
                     loops::forEach(b, l, {length},
                                    [&](OpBuilder &b2, Location l2,
                                        ValueRange inner) {
                                      Value v = loadElement(
                                          b2, l2, adaptor.getTable(),
                                          ValueRange{row, inner[0]},
                                          type.getElementType());
                                      memref::StoreOp::create(
                                          b2, l2, v, out,
                                          ValueRange{ivs[0], inner[0]});
                                    });
                   });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// `bvec.gather_mat`: `out[b][i][j] = table[indices[b]][i][j]`.
struct GatherMatOpLowering : OpConversionPattern<bvec::GatherMatOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(bvec::GatherMatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<MemRefType>(getTypeConverter()->convertType(op.getType()));
    Value batch = loops::dimSize(rewriter, loc, adaptor.getIndices(), 0);
    Value rows = loops::dimSize(rewriter, loc, adaptor.getTable(), 1);
    Value cols = loops::dimSize(rewriter, loc, adaptor.getTable(), 2);
    Value out = loops::alloc(rewriter, loc, type, {batch, rows, cols});
    loops::forEach(
        rewriter, loc, {batch}, [&](OpBuilder &b, Location l, ValueRange ivs) {
          Value row = loadIndex(b, l, adaptor.getIndices(), ivs[0]);
          loops::forEach(b, l, {rows, cols},
                         [&](OpBuilder &b2, Location l2, ValueRange inner) {
                           Value v = loadElement(
                               b2, l2, adaptor.getTable(),
                               ValueRange{row, inner[0], inner[1]},
                               type.getElementType());
                           memref::StoreOp::create(
                               b2, l2, v, out,
                               ValueRange{ivs[0], inner[0], inner[1]});
                         });
        });
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::kge::populateBatchedVectorFuncAndGatherToSCFPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns) {
  patterns.add<FuncOpLowering, ReturnOpLowering, GatherVecOpLowering,
               GatherMatOpLowering>(typeConverter, patterns.getContext());
}
