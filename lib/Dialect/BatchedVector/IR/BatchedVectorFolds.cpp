//===- BatchedVectorFolds.cpp - bvec folders and canonicalizations --------===//
//
// Constant folding and algebraic simplification of bvec operations. bvec
// assumes finite operands (as KGE training does): `x - x` and `x * 0` fold
// to zero.
//
//===----------------------------------------------------------------------===//

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::bvec;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static FloatAttr asFloat(Attribute attr) {
  return dyn_cast_if_present<FloatAttr>(attr);
}

static bool isConstantValue(Attribute attr, double value) {
  FloatAttr f = asFloat(attr);
  return f && f.getValue().isExactlyValue(value);
}

static bool isZero(Attribute attr) {
  FloatAttr f = asFloat(attr);
  return f && f.getValue().isZero();
}

/// The splat constant that defines `value`, if any.
static FloatAttr getConstant(Value value) {
  if (auto constant = value.getDefiningOp<ConstantOp>())
    return constant.getValueAttr();
  return {};
}

/// A splat constant of `batchedType`, or null when the type cannot be a
/// constant (its item dimensions are dynamic).
static FloatAttr floatLike(Type batchedType, double value) {
  auto type = cast<BatchedType>(batchedType);
  if (!ConstantOp::isMaterializable(type))
    return {};
  return FloatAttr::get(type.getElementType(), value);
}

/// Applies an exact APFloat binary operation in the element semantics.
/// Both operands are constants, so the result type is materializable.
static FloatAttr foldBinary(
    Attribute lhs, Attribute rhs,
    function_ref<APFloat(const APFloat &, const APFloat &)> fn) {
  FloatAttr a = asFloat(lhs), b = asFloat(rhs);
  if (!a || !b)
    return {};
  return FloatAttr::get(a.getType(), fn(a.getValue(), b.getValue()));
}

/// Applies a math function through double, rounding to the element type.
static FloatAttr foldUnaryMath(Attribute input, double (*fn)(double)) {
  FloatAttr a = asFloat(input);
  if (!a)
    return {};
  return FloatAttr::get(a.getType(), fn(a.getValueAsDouble()));
}

static std::optional<int64_t> staticLength(Type vecType) {
  int64_t length = cast<VecType>(vecType).getLength();
  if (ShapedType::isDynamic(length))
    return std::nullopt;
  return length;
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

//===----------------------------------------------------------------------===//
// Elementwise binary
//===----------------------------------------------------------------------===//

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (isZero(adaptor.getRhs()))
    return getLhs();
  if (isZero(adaptor.getLhs()))
    return getRhs();
  return foldBinary(adaptor.getLhs(), adaptor.getRhs(),
                    [](const APFloat &a, const APFloat &b) { return a + b; });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isZero(adaptor.getRhs()))
    return getLhs();
  if (getLhs() == getRhs())
    return floatLike(getType(), 0.0);
  return foldBinary(adaptor.getLhs(), adaptor.getRhs(),
                    [](const APFloat &a, const APFloat &b) { return a - b; });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isConstantValue(adaptor.getRhs(), 1.0))
    return getLhs();
  if (isConstantValue(adaptor.getLhs(), 1.0))
    return getRhs();
  if (isZero(adaptor.getLhs()) || isZero(adaptor.getRhs()))
    return floatLike(getType(), 0.0);
  return foldBinary(adaptor.getLhs(), adaptor.getRhs(),
                    [](const APFloat &a, const APFloat &b) { return a * b; });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isConstantValue(adaptor.getRhs(), 1.0))
    return getLhs();
  return foldBinary(adaptor.getLhs(), adaptor.getRhs(),
                    [](const APFloat &a, const APFloat &b) { return a / b; });
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return getLhs();
  return foldBinary(adaptor.getLhs(), adaptor.getRhs(),
                    [](const APFloat &a, const APFloat &b) {
                      return llvm::maximum(a, b);
                    });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return getLhs();
  return foldBinary(adaptor.getLhs(), adaptor.getRhs(),
                    [](const APFloat &a, const APFloat &b) {
                      return llvm::minimum(a, b);
                    });
}

namespace {
/// `x + (-y)` -> `x - y`.
struct AddOfNeg : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [x, y] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      if (auto neg = y.getDefiningOp<NegOp>()) {
        rewriter.replaceOpWithNewOp<SubOp>(op, x, neg.getInput());
        return success();
      }
    }
    return failure();
  }
};

/// `x - (-y)` -> `x + y`; `0 - y` -> `-y`.
struct SubOfNegOrFromZero : OpRewritePattern<SubOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SubOp op,
                                PatternRewriter &rewriter) const override {
    if (auto neg = op.getRhs().getDefiningOp<NegOp>()) {
      rewriter.replaceOpWithNewOp<AddOp>(op, op.getLhs(), neg.getInput());
      return success();
    }
    if (FloatAttr lhs = getConstant(op.getLhs()); lhs && lhs.getValue().isZero()) {
      rewriter.replaceOpWithNewOp<NegOp>(op, op.getRhs());
      return success();
    }
    return failure();
  }
};
} // namespace

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<AddOfNeg>(context);
}

void SubOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<SubOfNegOrFromZero>(context);
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  if (FloatAttr a = asFloat(adaptor.getInput()))
    return FloatAttr::get(a.getType(), neg(a.getValue()));
  return {};
}

OpFoldResult AbsOp::fold(FoldAdaptor adaptor) {
  if (auto inner = getInput().getDefiningOp<AbsOp>())
    return inner.getResult();
  if (FloatAttr a = asFloat(adaptor.getInput()))
    return FloatAttr::get(a.getType(), abs(a.getValue()));
  return {};
}

OpFoldResult ExpOp::fold(FoldAdaptor adaptor) {
  return foldUnaryMath(adaptor.getInput(), [](double x) { return std::exp(x); });
}
OpFoldResult LogOp::fold(FoldAdaptor adaptor) {
  return foldUnaryMath(adaptor.getInput(), [](double x) { return std::log(x); });
}
OpFoldResult SqrtOp::fold(FoldAdaptor adaptor) {
  return foldUnaryMath(adaptor.getInput(),
                       [](double x) { return std::sqrt(x); });
}
OpFoldResult TanhOp::fold(FoldAdaptor adaptor) {
  return foldUnaryMath(adaptor.getInput(),
                       [](double x) { return std::tanh(x); });
}
OpFoldResult SigmoidOp::fold(FoldAdaptor adaptor) {
  return foldUnaryMath(adaptor.getInput(),
                       [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}
OpFoldResult SinOp::fold(FoldAdaptor adaptor) {
  return foldUnaryMath(adaptor.getInput(), [](double x) { return std::sin(x); });
}
OpFoldResult CosOp::fold(FoldAdaptor adaptor) {
  return foldUnaryMath(adaptor.getInput(), [](double x) { return std::cos(x); });
}
OpFoldResult SignOp::fold(FoldAdaptor adaptor) {
  // sign(sign(x)) = sign(x), sign(|x|) is not |x|.
  if (auto inner = getInput().getDefiningOp<SignOp>())
    return inner.getResult();
  return foldUnaryMath(adaptor.getInput(), [](double x) {
    return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0);
  });
}

//===----------------------------------------------------------------------===//
// Gathers: a repeated gather of the same rows is the earlier gather.
//===----------------------------------------------------------------------===//

/// Replaces `op` with an identical gather that precedes it in its block.
template <typename GatherOp>
static LogicalResult reuseEarlierGather(GatherOp op,
                                        PatternRewriter &rewriter) {
  for (Operation *user : op.getIndices().getUsers()) {
    auto other = dyn_cast<GatherOp>(user);
    if (!other || other == op || other.getTable() != op.getTable() ||
        other.getType() != op.getType() ||
        other->getBlock() != op->getBlock() || !other->isBeforeInBlock(op))
      continue;
    rewriter.replaceOp(op, other.getResult());
    return success();
  }
  return failure();
}

LogicalResult GatherVecOp::canonicalize(GatherVecOp op,
                                        PatternRewriter &rewriter) {
  return reuseEarlierGather(op, rewriter);
}

LogicalResult GatherMatOp::canonicalize(GatherMatOp op,
                                        PatternRewriter &rewriter) {
  return reuseEarlierGather(op, rewriter);
}

//===----------------------------------------------------------------------===//
// Batched products
//===----------------------------------------------------------------------===//

namespace {
/// `scal_mul_vec(1, v)` -> `v`; `scal_mul_vec(0, v)` and
/// `scal_mul_vec(s, 0)` -> `0`; `scal_mul_vec(c, c')` -> `c * c'`.
struct SimplifyScalMulVec : OpRewritePattern<ScalMulVecOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScalMulVecOp op,
                                PatternRewriter &rewriter) const override {
    FloatAttr scalar = getConstant(op.getScalar());
    FloatAttr vec = getConstant(op.getVec());
    if (scalar && scalar.getValue().isExactlyValue(1.0)) {
      rewriter.replaceOp(op, op.getVec());
      return success();
    }
    bool zero = (scalar && scalar.getValue().isZero()) ||
                (vec && vec.getValue().isZero());
    if (zero && ConstantOp::isMaterializable(op.getType())) {
      rewriter.replaceOpWithNewOp<ConstantOp>(op, op.getType(),
                                              floatLike(op.getType(), 0.0));
      return success();
    }
    if (scalar && vec) {
      rewriter.replaceOpWithNewOp<ConstantOp>(
          op, op.getType(),
          FloatAttr::get(vec.getType(), scalar.getValue() * vec.getValue()));
      return success();
    }
    return failure();
  }
};
} // namespace

void ScalMulVecOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                               MLIRContext *context) {
  results.add<SimplifyScalMulVec>(context);
}

OpFoldResult VecMulVecOp::fold(FoldAdaptor adaptor) {
  if (isZero(adaptor.getLhs()) || isZero(adaptor.getRhs()))
    return floatLike(getType(), 0.0);
  FloatAttr a = asFloat(adaptor.getLhs()), b = asFloat(adaptor.getRhs());
  std::optional<int64_t> length = staticLength(getLhs().getType());
  if (!a || !b || !length)
    return {};
  return floatLike(getType(), static_cast<double>(*length) *
                                  a.getValueAsDouble() * b.getValueAsDouble());
}

//===----------------------------------------------------------------------===//
// Norms, reductions, slices
//===----------------------------------------------------------------------===//

OpFoldResult NormOp::fold(FoldAdaptor adaptor) {
  FloatAttr a = asFloat(adaptor.getInput());
  std::optional<int64_t> length = staticLength(getInput().getType());
  if (!a || !length)
    return {};
  double magnitude = std::fabs(a.getValueAsDouble());
  double n = static_cast<double>(*length);
  return floatLike(getType(), getP() == 1 ? n * magnitude
                                          : std::sqrt(n) * magnitude);
}

OpFoldResult ReduceOp::fold(FoldAdaptor adaptor) {
  FloatAttr a = asFloat(adaptor.getInput());
  if (!a)
    return {};
  if (getKind() != ReductionKind::sum)
    return floatLike(getType(), a.getValueAsDouble());
  std::optional<int64_t> length = staticLength(getInput().getType());
  if (!length)
    return {};
  return floatLike(getType(),
                   static_cast<double>(*length) * a.getValueAsDouble());
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() && getOffset() == 0)
    return getInput();
  if (FloatAttr a = asFloat(adaptor.getInput()))
    return a;
  return {};
}
