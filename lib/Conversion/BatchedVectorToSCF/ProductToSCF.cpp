//===- ProductToSCF.cpp - bvec products, norms, reductions, slices --------===//

#include "Conversion/BatchedVectorToSCF/BatchedVectorToSCF.h"
#include "LoopBuilder.h"

#include "Conversion/ReductionKinds.h"
#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::kge;

namespace {

MemRefType convertedType(const TypeConverter *converter, Type type) {
  return cast<MemRefType>(converter->convertType(type));
}

/// `bvec.scal_mul_vec`: `out[b][d] = s[b] * v[b][d]`.
struct ScalMulVecOpLowering : OpConversionPattern<bvec::ScalMulVecOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(bvec::ScalMulVecOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Value> sizes = loops::sizes(rewriter, loc, adaptor.getVec());
    Value out = loops::alloc(
        rewriter, loc, convertedType(getTypeConverter(), op.getType()), sizes);
    loops::forEach(rewriter, loc, sizes,
                   [&](OpBuilder &b, Location l, ValueRange ivs) {
                     Value s = memref::LoadOp::create(b, l, adaptor.getScalar(),
                                                      ivs[0]);
                     Value v = memref::LoadOp::create(b, l, adaptor.getVec(),
                                                      ivs);
                     memref::StoreOp::create(
                         b, l, arith::MulFOp::create(b, l, s, v), out, ivs);
                   });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// Operations that reduce each vector of a batch to one scalar:
/// `out[b] = finish(fold_k combine(acc, element(x[b][k], y[b][k])))`.
template <typename OpTy>
struct VectorReductionLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  /// The per-element value, the combining operation, its identity and the
  /// final transformation of the accumulator (given the vector length).
  virtual Value element(OpBuilder &b, Location loc, OpTy op,
                        ValueRange elements) const = 0;
  virtual Value combine(OpBuilder &b, Location loc, OpTy op, Value acc,
                        Value x) const {
    return arith::AddFOp::create(b, loc, acc, x);
  }
  virtual double identity(OpTy op) const { return 0.0; }
  virtual Value finish(OpBuilder &b, Location loc, OpTy op, Value acc,
                       Value length) const {
    return acc;
  }

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ValueRange inputs = adaptor.getOperands();
    Value batch = loops::dimSize(rewriter, loc, inputs.front(), 0);
    Value length = loops::dimSize(rewriter, loc, inputs.front(), 1);
    MemRefType type = convertedType(this->getTypeConverter(), op.getType());
    Value out = loops::alloc(rewriter, loc, type, {batch});
    Type elementType = type.getElementType();
    loops::forEach(
        rewriter, loc, {batch}, [&](OpBuilder &b, Location l, ValueRange ivs) {
          Value init = loops::floatConstant(b, l, elementType, identity(op));
          Value acc = loops::reduce(
              b, l, length, init,
              [&](OpBuilder &b2, Location l2, Value k, Value acc) {
                SmallVector<Value> elements;
                for (Value input : inputs)
                  elements.push_back(memref::LoadOp::create(
                      b2, l2, input, ValueRange{ivs[0], k}));
                return combine(b2, l2, op, acc,
                               element(b2, l2, op, elements));
              });
          memref::StoreOp::create(b, l, finish(b, l, op, acc, length), out,
                                  ivs);
        });
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct VecMulVecOpLowering : VectorReductionLowering<bvec::VecMulVecOp> {
  using VectorReductionLowering::VectorReductionLowering;
  Value element(OpBuilder &b, Location loc, bvec::VecMulVecOp,
                ValueRange x) const override {
    return arith::MulFOp::create(b, loc, x[0], x[1]);
  }
};

struct NormOpLowering : VectorReductionLowering<bvec::NormOp> {
  using VectorReductionLowering::VectorReductionLowering;
  Value element(OpBuilder &b, Location loc, bvec::NormOp op,
                ValueRange x) const override {
    if (op.getP() == 1)
      return math::AbsFOp::create(b, loc, x[0]);
    return arith::MulFOp::create(b, loc, x[0], x[0]);
  }
  Value finish(OpBuilder &b, Location loc, bvec::NormOp op, Value acc,
               Value) const override {
    return op.getP() == 1 ? acc : math::SqrtOp::create(b, loc, acc);
  }
};

struct ReduceOpLowering : VectorReductionLowering<bvec::ReduceOp> {
  using VectorReductionLowering::VectorReductionLowering;
  Value element(OpBuilder &, Location, bvec::ReduceOp,
                ValueRange x) const override {
    return x[0];
  }
  Value combine(OpBuilder &b, Location loc, bvec::ReduceOp op, Value acc,
                Value x) const override {
    return kge::combineReduction(b, loc, op.getKind(), acc, x);
  }
  double identity(bvec::ReduceOp op) const override {
    return kge::reductionIdentity(op.getKind());
  }
  Value finish(OpBuilder &b, Location loc, bvec::ReduceOp op, Value acc,
               Value length) const override {
    if (op.getKind() != bvec::ReductionKind::mean)
      return acc;
    Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), length);
    Value asFloat = arith::SIToFPOp::create(b, loc, acc.getType(), asInt);
    return arith::DivFOp::create(b, loc, acc, asFloat);
  }
};

/// A batched matrix-vector product: `out[b][i] = sum_k v[b][k] * m[b][k][i]`
/// (`bvec.vec_mul_mat`), or with the matrix transposed, `out[b][i] = sum_k
/// m[b][i][k] * v[b][k]` (`bvec.mat_mul_vec`).
template <typename OpTy, bool Transposed>
struct MatrixVectorLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value vec = adaptor.getVec(), mat = adaptor.getMat();
    Value batch = loops::dimSize(rewriter, loc, vec, 0);
    Value inner = loops::dimSize(rewriter, loc, mat, Transposed ? 2 : 1);
    Value length = loops::dimSize(rewriter, loc, mat, Transposed ? 1 : 2);
    MemRefType type = convertedType(this->getTypeConverter(), op.getType());
    Value out = loops::alloc(rewriter, loc, type, {batch, length});
    loops::forEach(
        rewriter, loc, {batch, length},
        [&](OpBuilder &b, Location l, ValueRange ivs) {
          Value zero = loops::floatConstant(b, l, type.getElementType(), 0.0);
          Value sum = loops::reduce(
              b, l, inner, zero,
              [&](OpBuilder &b2, Location l2, Value k, Value acc) {
                Value v = memref::LoadOp::create(b2, l2, vec,
                                                 ValueRange{ivs[0], k});
                SmallVector<Value> at{ivs[0], k, ivs[1]};
                if (Transposed)
                  std::swap(at[1], at[2]);
                Value m = memref::LoadOp::create(b2, l2, mat, at);
                return arith::AddFOp::create(
                    b2, l2, acc, arith::MulFOp::create(b2, l2, v, m));
              });
          memref::StoreOp::create(b, l, sum, out, ivs);
        });
    rewriter.replaceOp(op, out);
    return success();
  }
};
using VecMulMatOpLowering = MatrixVectorLowering<bvec::VecMulMatOp, false>;
using MatMulVecOpLowering = MatrixVectorLowering<bvec::MatMulVecOp, true>;

/// `bvec.vec_outer_vec`: `out[b][i][j] = x[b][i] * y[b][j]`.
struct VecOuterVecOpLowering : OpConversionPattern<bvec::VecOuterVecOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(bvec::VecOuterVecOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    SmallVector<Value> sizes{loops::dimSize(rewriter, loc, lhs, 0),
                             loops::dimSize(rewriter, loc, lhs, 1),
                             loops::dimSize(rewriter, loc, rhs, 1)};
    Value out = loops::alloc(
        rewriter, loc, convertedType(getTypeConverter(), op.getType()), sizes);
    loops::forEach(rewriter, loc, sizes,
                   [&](OpBuilder &b, Location l, ValueRange ivs) {
                     Value x = memref::LoadOp::create(
                         b, l, lhs, ValueRange{ivs[0], ivs[1]});
                     Value y = memref::LoadOp::create(
                         b, l, rhs, ValueRange{ivs[0], ivs[2]});
                     memref::StoreOp::create(
                         b, l, arith::MulFOp::create(b, l, x, y), out, ivs);
                   });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// `bvec.slice`: `out[b][k] = in[b][offset + k]`.
struct SliceOpLowering : OpConversionPattern<bvec::SliceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(bvec::SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MemRefType type = convertedType(getTypeConverter(), op.getType());
    Value batch = loops::dimSize(rewriter, loc, adaptor.getInput(), 0);
    Value length =
        arith::ConstantIndexOp::create(rewriter, loc, type.getDimSize(1));
    Value offset =
        arith::ConstantIndexOp::create(rewriter, loc, op.getOffset());
    Value out = loops::alloc(rewriter, loc, type, {batch, length});
    loops::forEach(rewriter, loc, {batch, length},
                   [&](OpBuilder &b, Location l, ValueRange ivs) {
                     Value k = arith::AddIOp::create(b, l, ivs[1], offset);
                     Value v = memref::LoadOp::create(
                         b, l, adaptor.getInput(), ValueRange{ivs[0], k});
                     memref::StoreOp::create(b, l, v, out, ivs);
                   });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// `bvec.pad`: `out[b][k] = in[b][k - offset]` inside the input's range,
/// 0 elsewhere.
struct PadOpLowering : OpConversionPattern<bvec::PadOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(bvec::PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MemRefType type = convertedType(getTypeConverter(), op.getType());
    Value input = adaptor.getInput();
    Value batch = loops::dimSize(rewriter, loc, input, 0);
    Value length =
        arith::ConstantIndexOp::create(rewriter, loc, type.getDimSize(1));
    Value inputLength = arith::ConstantIndexOp::create(
        rewriter, loc, op.getInput().getType().getLength());
    Value offset =
        arith::ConstantIndexOp::create(rewriter, loc, op.getOffset());
    Value out = loops::alloc(rewriter, loc, type, {batch, length});
    Value zero = loops::floatConstant(rewriter, loc, type.getElementType(), 0.0);
    loops::forEach(rewriter, loc, {batch, length},
                   [&](OpBuilder &b, Location l, ValueRange ivs) {
                     memref::StoreOp::create(b, l, zero, out, ivs);
                   });
    loops::forEach(rewriter, loc, {batch, inputLength},
                   [&](OpBuilder &b, Location l, ValueRange ivs) {
                     Value v = memref::LoadOp::create(b, l, input, ivs);
                     Value k = arith::AddIOp::create(b, l, ivs[1], offset);
                     memref::StoreOp::create(b, l, v, out,
                                             ValueRange{ivs[0], k});
                   });
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::kge::populateBatchedVectorProductToSCFPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ScalMulVecOpLowering, VecMulVecOpLowering, NormOpLowering,
               ReduceOpLowering, VecMulMatOpLowering, VecOuterVecOpLowering,
               SliceOpLowering, MatMulVecOpLowering, PadOpLowering>(
      converter, patterns.getContext());
}
