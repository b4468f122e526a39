//===- ElementwiseToSCF.cpp - bvec constants and elementwise operations ---===//

#include "Conversion/BatchedVectorToSCF/BatchedVectorToSCF.h"
#include "LoopBuilder.h"

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::kge;

namespace {

/// `bvec.constant` -> a buffer filled with the value.
struct ConstantOpLowering : OpConversionPattern<bvec::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(bvec::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<MemRefType>(getTypeConverter()->convertType(op.getType()));
    FailureOr<Value> batch = loops::functionBatchSize(rewriter, loc, op);
    if (failed(batch))
      return rewriter.notifyMatchFailure(op, "enclosing function not lowered");
    SmallVector<Value> sizes{*batch};
    auto dynamicSizes =
        op->getAttrOfType<ArrayAttr>(loops::kItemSizesAttrName);
    for (auto [i, d] : llvm::enumerate(type.getShape().drop_front())) {
      if (!ShapedType::isDynamic(d)) {
        sizes.push_back(arith::ConstantIndexOp::create(rewriter, loc, d));
        continue;
      }
      if (!dynamicSizes)
        return rewriter.notifyMatchFailure(op, "dynamic size not recorded");
      // A table dimension of the lowered function's arguments.
      Attribute size = dynamicSizes[i];
      if (auto fixed = dyn_cast<IntegerAttr>(size)) {
        sizes.push_back(
            arith::ConstantIndexOp::create(rewriter, loc, fixed.getInt()));
        continue;
      }
      auto source = cast<ArrayAttr>(size);
      auto func = op->getParentOfType<func::FuncOp>();
      Value table = func.getArgument(cast<IntegerAttr>(source[0]).getInt());
      sizes.push_back(loops::dimSize(rewriter, loc, table,
                                     cast<IntegerAttr>(source[1]).getInt()));
    }
    Value out = loops::alloc(rewriter, loc, type, sizes);
    Value value = arith::ConstantOp::create(rewriter, loc, op.getValueAttr());
    loops::forEach(rewriter, loc, sizes,
                   [&](OpBuilder &b, Location l, ValueRange ivs) {
                     memref::StoreOp::create(b, l, value, out, ivs);
                   });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// Elementwise operations: one loop nest over the shape of the first operand
/// computing `compute(operands...)` per element.
template <typename OpTy>
struct ElementwiseOpLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using ComputeFn = Value (*)(OpBuilder &, Location, ValueRange);

  ElementwiseOpLowering(const TypeConverter &converter, MLIRContext *context,
                        ComputeFn compute)
      : OpConversionPattern<OpTy>(converter, context), compute(compute) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<MemRefType>(
        this->getTypeConverter()->convertType(op.getType()));
    ValueRange operands = adaptor.getOperands();
    SmallVector<Value> sizes = loops::sizes(rewriter, loc, operands.front());
    Value out = loops::alloc(rewriter, loc, type, sizes);
    loops::forEach(rewriter, loc, sizes,
                   [&](OpBuilder &b, Location l, ValueRange ivs) {
                     SmallVector<Value> elements;
                     for (Value operand : operands)
                       elements.push_back(
                           memref::LoadOp::create(b, l, operand, ivs));
                     memref::StoreOp::create(b, l, compute(b, l, elements),
                                             out, ivs);
                   });
    rewriter.replaceOp(op, out);
    return success();
  }

  ComputeFn compute;
};

template <typename ArithOp>
Value binary(OpBuilder &b, Location loc, ValueRange x) {
  return ArithOp::create(b, loc, x[0], x[1]);
}

template <typename MathOp>
Value unary(OpBuilder &b, Location loc, ValueRange x) {
  return MathOp::create(b, loc, x[0]);
}

Value sigmoid(OpBuilder &b, Location loc, ValueRange x) {
  Type type = x[0].getType();
  Value one = loops::floatConstant(b, loc, type, 1.0);
  Value negated = arith::NegFOp::create(b, loc, x[0]);
  Value denominator =
      arith::AddFOp::create(b, loc, one, math::ExpOp::create(b, loc, negated));
  return arith::DivFOp::create(b, loc, one, denominator);
}

template <typename OpTy>
void addElementwise(RewritePatternSet &patterns,
                    const TypeConverter &converter,
                    typename ElementwiseOpLowering<OpTy>::ComputeFn compute) {
  patterns.add<ElementwiseOpLowering<OpTy>>(converter, patterns.getContext(),
                                            compute);
}

} // namespace

void mlir::kge::populateBatchedVectorElementwiseToSCFPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ConstantOpLowering>(converter, patterns.getContext());
  addElementwise<bvec::AddOp>(patterns, converter, binary<arith::AddFOp>);
  addElementwise<bvec::SubOp>(patterns, converter, binary<arith::SubFOp>);
  addElementwise<bvec::MulOp>(patterns, converter, binary<arith::MulFOp>);
  addElementwise<bvec::DivOp>(patterns, converter, binary<arith::DivFOp>);
  addElementwise<bvec::MaxOp>(patterns, converter, binary<arith::MaximumFOp>);
  addElementwise<bvec::MinOp>(patterns, converter, binary<arith::MinimumFOp>);
  addElementwise<bvec::NegOp>(patterns, converter, unary<arith::NegFOp>);
  addElementwise<bvec::AbsOp>(patterns, converter, unary<math::AbsFOp>);
  addElementwise<bvec::ExpOp>(patterns, converter, unary<math::ExpOp>);
  addElementwise<bvec::LogOp>(patterns, converter, unary<math::LogOp>);
  addElementwise<bvec::SqrtOp>(patterns, converter, unary<math::SqrtOp>);
  addElementwise<bvec::TanhOp>(patterns, converter, unary<math::TanhOp>);
  addElementwise<bvec::SinOp>(patterns, converter, unary<math::SinOp>);
  addElementwise<bvec::CosOp>(patterns, converter, unary<math::CosOp>);
  addElementwise<bvec::SigmoidOp>(patterns, converter, sigmoid);
}
