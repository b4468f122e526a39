//===- ElementwiseToSCF.cpp - bvec constants and elementwise operations ---===//

#include "Conversion/BatchedVectorToSCF/BatchedVectorToSCF.h"
#include "LoopBuilder.h"

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

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
/// computing emitElementwise per element.
template <typename OpTy>
struct ElementwiseOpLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

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
                     memref::StoreOp::create(
                         b, l, emitElementwise(b, l, op, elements), out, ivs);
                   });
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

bool mlir::kge::isElementwiseOp(Operation *op) {
  return isa<bvec::AddOp, bvec::SubOp, bvec::MulOp, bvec::DivOp, bvec::MaxOp,
             bvec::MinOp, bvec::NegOp, bvec::AbsOp, bvec::ExpOp, bvec::LogOp,
             bvec::SqrtOp, bvec::TanhOp, bvec::SinOp, bvec::CosOp,
             bvec::SigmoidOp, bvec::SignOp>(op);
}

Value mlir::kge::emitElementwise(OpBuilder &b, Location loc, Operation *op,
                                 ValueRange x) {
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](bvec::AddOp) { return arith::AddFOp::create(b, loc, x[0], x[1]); })
      .Case([&](bvec::SubOp) { return arith::SubFOp::create(b, loc, x[0], x[1]); })
      .Case([&](bvec::MulOp) { return arith::MulFOp::create(b, loc, x[0], x[1]); })
      .Case([&](bvec::DivOp) { return arith::DivFOp::create(b, loc, x[0], x[1]); })
      .Case([&](bvec::MaxOp) {
        return arith::MaximumFOp::create(b, loc, x[0], x[1]);
      })
      .Case([&](bvec::MinOp) {
        return arith::MinimumFOp::create(b, loc, x[0], x[1]);
      })
      .Case([&](bvec::NegOp) { return arith::NegFOp::create(b, loc, x[0]); })
      .Case([&](bvec::AbsOp) { return math::AbsFOp::create(b, loc, x[0]); })
      .Case([&](bvec::ExpOp) { return math::ExpOp::create(b, loc, x[0]); })
      .Case([&](bvec::LogOp) { return math::LogOp::create(b, loc, x[0]); })
      .Case([&](bvec::SqrtOp) { return math::SqrtOp::create(b, loc, x[0]); })
      .Case([&](bvec::TanhOp) { return math::TanhOp::create(b, loc, x[0]); })
      .Case([&](bvec::SinOp) { return math::SinOp::create(b, loc, x[0]); })
      .Case([&](bvec::CosOp) { return math::CosOp::create(b, loc, x[0]); })
      .Case([&](bvec::SigmoidOp) -> Value {
        Value one = loops::floatConstant(b, loc, x[0].getType(), 1.0);
        Value negated = arith::NegFOp::create(b, loc, x[0]);
        Value denominator = arith::AddFOp::create(
            b, loc, one, math::ExpOp::create(b, loc, negated));
        return arith::DivFOp::create(b, loc, one, denominator);
      })
      .Case([&](bvec::SignOp) -> Value {
        // -1, 0 or 1: 0 at zero (and for NaN).
        Type type = x[0].getType();
        Value zero = loops::floatConstant(b, loc, type, 0.0);
        Value one = loops::floatConstant(b, loc, type, 1.0);
        Value minusOne = loops::floatConstant(b, loc, type, -1.0);
        Value positive = arith::CmpFOp::create(
            b, loc, arith::CmpFPredicate::OGT, x[0], zero);
        Value negative = arith::CmpFOp::create(
            b, loc, arith::CmpFPredicate::OLT, x[0], zero);
        return arith::SelectOp::create(
            b, loc, positive, one,
            arith::SelectOp::create(b, loc, negative, minusOne, zero));
      })
      .Default([](Operation *) { return Value(); });
}

void mlir::kge::populateBatchedVectorElementwiseToSCFPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ConstantOpLowering>(converter, patterns.getContext());
  patterns.add<ElementwiseOpLowering<bvec::AddOp>,
               ElementwiseOpLowering<bvec::SubOp>,
               ElementwiseOpLowering<bvec::MulOp>,
               ElementwiseOpLowering<bvec::DivOp>,
               ElementwiseOpLowering<bvec::MaxOp>,
               ElementwiseOpLowering<bvec::MinOp>,
               ElementwiseOpLowering<bvec::NegOp>,
               ElementwiseOpLowering<bvec::AbsOp>,
               ElementwiseOpLowering<bvec::ExpOp>,
               ElementwiseOpLowering<bvec::LogOp>,
               ElementwiseOpLowering<bvec::SqrtOp>,
               ElementwiseOpLowering<bvec::TanhOp>,
               ElementwiseOpLowering<bvec::SinOp>,
               ElementwiseOpLowering<bvec::CosOp>,
               ElementwiseOpLowering<bvec::SigmoidOp>,
               ElementwiseOpLowering<bvec::SignOp>>(converter,
                                                       patterns.getContext());
}
