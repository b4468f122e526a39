//===- ElementaryFunctions.cpp - f32 math for generated GPU kernels -------===//
//
// The reduction constants and polynomials follow the classic single-
// precision designs (Cody & Waite's split of pi/2 with FMAs; Payne & Hanek's
// multiplication by the bits of 2/pi; Cephes' minimax polynomials on
// [-pi/4, pi/4]); the accuracy figures in the header were measured against
// a double-precision reference (test/unittests/ElementaryFunctionsTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "Conversion/GPUCommon/ElementaryFunctions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::kge;

namespace {

/// Builds arith operations on values shaped like one f32 operand (a scalar
/// or a vector): constants and element types follow that shape.
class ShapedBuilder {
public:
  ShapedBuilder(OpBuilder &b, Location loc, Type like) : b(b), loc(loc) {
    if (auto vector = dyn_cast<VectorType>(like))
      shape = vector.getShape();
  }

  Type type(Type element) const {
    return shape.empty() ? element : VectorType::get(shape, element);
  }
  Value constant(Type element, TypedAttr scalar) const {
    if (shape.empty())
      return arith::ConstantOp::create(b, loc, scalar);
    auto vectorType = VectorType::get(shape, element);
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vectorType, scalar));
  }
  Value f32(float v) const {
    return constant(b.getF32Type(), b.getF32FloatAttr(v));
  }
  Value f64(double v) const {
    return constant(b.getF64Type(), b.getF64FloatAttr(v));
  }
  Value i32(int64_t v) const {
    return constant(b.getI32Type(), b.getI32IntegerAttr(v));
  }
  Value i64(int64_t v) const {
    return constant(b.getI64Type(), b.getI64IntegerAttr(v));
  }
  Value fma(Value a, Value x, Value c) const {
    return LLVM::FMAOp::create(b, loc, a, x, c);
  }
  Value abs(Value x) const { return math::AbsFOp::create(b, loc, x); }
  Value add(Value x, Value y) const {
    return isFloat(x) ? arith::AddFOp::create(b, loc, x, y).getResult()
                      : arith::AddIOp::create(b, loc, x, y).getResult();
  }
  Value sub(Value x, Value y) const {
    return isFloat(x) ? arith::SubFOp::create(b, loc, x, y).getResult()
                      : arith::SubIOp::create(b, loc, x, y).getResult();
  }
  Value mul(Value x, Value y) const {
    return isFloat(x) ? arith::MulFOp::create(b, loc, x, y).getResult()
                      : arith::MulIOp::create(b, loc, x, y).getResult();
  }
  Value andI(Value x, Value y) const {
    return arith::AndIOp::create(b, loc, x, y);
  }
  Value orI(Value x, Value y) const {
    return arith::OrIOp::create(b, loc, x, y);
  }
  Value shl(Value x, Value y) const {
    return arith::ShLIOp::create(b, loc, x, y);
  }
  Value shr(Value x, Value y) const {
    return arith::ShRUIOp::create(b, loc, x, y);
  }
  Value select(Value c, Value x, Value y) const {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value cmpf(arith::CmpFPredicate p, Value x, Value y) const {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) const {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value cast(Value x, Type element) const {
    return arith::BitcastOp::create(b, loc, type(element), x);
  }
  Value zext64(Value x) const {
    return arith::ExtUIOp::create(b, loc, type(b.getI64Type()), x);
  }
  Value trunc32(Value x) const {
    return arith::TruncIOp::create(b, loc, type(b.getI32Type()), x);
  }
  /// True in the scalar case when `x` holds; in any element of a vector.
  Value any(Value x) const {
    if (shape.empty())
      return x;
    return vector::ReductionOp::create(b, loc, vector::CombiningKind::OR, x);
  }

  OpBuilder &b;
  Location loc;
  ArrayRef<int64_t> shape;

private:
  static bool isFloat(Value x) {
    return isa<FloatType>(getElementTypeOrSelf(x.getType()));
  }
};

/// |x| above which the Cody-Waite reduction loses accuracy.
constexpr float kFastReductionLimit = 105615.0f;

/// 2/pi in 32-bit words, after one leading zero word (the integer part):
/// 2/pi = sum_i kTwoOverPi[i] * 2^(-32 i).
constexpr uint32_t kTwoOverPi[8] = {0x00000000, 0xa2f9836e, 0x4e441529,
                                    0xfc2757d1, 0xf534ddc0, 0xdb629599,
                                    0x3c439041, 0xfe5163ab};

/// Payne-Hanek: `x * 2/pi` exactly enough to give the quadrant and a reduced
/// argument with 64 bits of fraction, for every finite |x| >= 2^16.
std::pair<Value, Value> payneHanek(const ShapedBuilder &s, Value x) {
  OpBuilder &b = s.b;
  Value bits = s.cast(x, b.getI32Type());
  Value exponent = s.sub(s.andI(s.shr(bits, s.i32(23)), s.i32(0xff)),
                         s.i32(127 + 23));
  Value mantissa = s.zext64(
      s.orI(s.andI(bits, s.i32(0x7fffff)), s.i32(0x800000)));
  // x = mantissa * 2^exponent. Words before `word` only add multiples of 4
  // to x * 2/pi; four words from `word` on leave an error under 2^-71.
  Value biased = s.add(exponent, s.i32(30));
  Value word = arith::ShRSIOp::create(b, s.loc, biased, s.i32(5));
  Value within = s.zext64(s.andI(biased, s.i32(31)));
  auto wordAt = [&](int64_t k) {
    // Exponents outside the slow path's range (lanes that take the fast
    // path) clamp to the last window; their result is not used.
    Value result = s.i32(static_cast<int32_t>(kTwoOverPi[4 + k]));
    for (int64_t w = 3; w >= 0; --w)
      result = s.select(s.cmpi(arith::CmpIPredicate::eq, word, s.i32(w)),
                        s.i32(static_cast<int32_t>(kTwoOverPi[w + k])),
                        result);
    return s.zext64(result);
  };
  Value thirtyTwo = s.i64(32);
  Value hi = s.orI(s.shl(wordAt(0), thirtyTwo), wordAt(1));
  Value lo = s.orI(s.shl(wordAt(2), thirtyTwo), wordAt(3));
  // The product mantissa * (hi:lo) modulo 2^128.
  auto product = arith::MulUIExtendedOp::create(b, s.loc, mantissa, lo);
  Value productLo = product.getLow();
  Value productHi = s.add(product.getHigh(), s.mul(mantissa, hi));
  // The binary point lies at bit 126 - within: keep 2 integer bits and 64
  // fraction bits.
  Value point = s.sub(s.i64(62), within); // in [31, 62]
  Value fraction =
      s.orI(s.shr(productLo, point), s.shl(productHi, s.sub(s.i64(64), point)));
  // A fraction of 1/2 or more rounds the quadrant up; read as signed, the
  // fraction is then the (negative) distance to the next quadrant.
  Value quadrant = s.trunc32(s.add(s.andI(s.shr(productHi, point), s.i64(3)),
                                   s.shr(fraction, s.i64(63))));
  Value reduced = arith::SIToFPOp::create(b, s.loc, s.type(b.getF64Type()),
                                          fraction);
  reduced = s.mul(reduced, s.f64(1.5707963267948966 / 18446744073709551616.0));
  reduced = arith::TruncFOp::create(b, s.loc, s.type(b.getF32Type()), reduced);
  Value negative =
      s.cmpf(arith::CmpFPredicate::OLT, x, s.f32(0.0f));
  reduced = s.select(negative, arith::NegFOp::create(b, s.loc, reduced),
                     reduced);
  quadrant = s.select(negative, s.sub(s.i32(0), quadrant), quadrant);
  // NaN for NaN and +-inf.
  Value finite = s.cmpf(arith::CmpFPredicate::OLT,
                        s.abs(x), s.f32(INFINITY));
  reduced = s.select(finite, reduced, s.sub(x, x));
  return {reduced, quadrant};
}

/// Cody-Waite: x - j * pi/2 with pi/2 split in three floats, exact enough
/// for |x| <= kFastReductionLimit.
std::pair<Value, Value> codyWaite(const ShapedBuilder &s, Value x) {
  OpBuilder &b = s.b;
  // j = round(x * 2/pi) (the constant rounds to nearest for |j| < 2^22).
  Value magic = s.f32(12582912.0f);
  Value j = s.sub(s.fma(x, s.f32(0.636619772367581f), magic), magic);
  Value negJ = arith::NegFOp::create(b, s.loc, j);
  Value reduced = s.fma(negJ, s.f32(0x1.921fb6p+0f), x);
  reduced = s.fma(negJ, s.f32(-0x1.777a5cp-25f), reduced);
  reduced = s.fma(negJ, s.f32(-0x1.ee59dap-50f), reduced);
  Value quadrant =
      arith::FPToSIOp::create(b, s.loc, s.type(b.getI32Type()), j);
  return {reduced, quadrant};
}

} // namespace

/// `x` is in the range of the Cody-Waite reduction (false for NaN, +-inf).
static Value inFastRange(const ShapedBuilder &s, Value x) {
  return s.cmpf(arith::CmpFPredicate::OLE, s.abs(x),
                s.f32(kFastReductionLimit));
}

/// sin and cos of `x` from its reduction (`r`, `quadrant`).
static SinCos evaluateSinCos(const ShapedBuilder &s, Value x, Value r,
                             Value quadrant) {
  OpBuilder &b = s.b;
  Value r2 = s.mul(r, r);
  // Minimax polynomials on [-pi/4, pi/4].
  Value p = s.fma(s.f32(-1.9515295891e-4f), r2, s.f32(8.3321608736e-3f));
  p = s.fma(p, r2, s.f32(-1.6666654611e-1f));
  Value sinR = s.fma(s.mul(p, r2), r, r);
  Value q = s.fma(s.f32(2.443315711809948e-5f), r2,
                  s.f32(-1.388731625493765e-3f));
  q = s.fma(q, r2, s.f32(4.166664568298827e-2f));
  q = s.fma(q, r2, s.f32(-0.5f));
  Value cosR = s.fma(q, r2, s.f32(1.0f));
  // Quadrant k: sin(r + k pi/2) is sin r, cos r, -sin r, -cos r.
  auto bitSet = [&](Value v, int64_t bit) {
    return s.cmpi(arith::CmpIPredicate::ne, s.andI(v, s.i32(bit)), s.i32(0));
  };
  Value odd = bitSet(quadrant, 1);
  Value sinV = s.select(odd, cosR, sinR);
  Value cosV = s.select(odd, sinR, cosR);
  sinV = s.select(bitSet(quadrant, 2), arith::NegFOp::create(b, s.loc, sinV),
                  sinV);
  cosV = s.select(bitSet(s.add(quadrant, s.i32(1)), 2),
                  arith::NegFOp::create(b, s.loc, cosV), cosV);
  // sin(-0) = -0.
  sinV = s.select(s.cmpf(arith::CmpFPredicate::OEQ, x, s.f32(0.0f)), x, sinV);
  return {sinV, cosV};
}

std::pair<Value, Value> mlir::kge::emitQuadrantReduction(OpBuilder &b,
                                                         Location loc,
                                                         Value x) {
  ShapedBuilder s(b, loc, x.getType());
  auto [fastReduced, fastQuadrant] = codyWaite(s, x);
  Value fast = inFastRange(s, x);
  // One branch per value, taken only when some element needs the slow path
  // (never for embeddings of usual magnitudes), and marked unlikely: the
  // optimizer would otherwise speculate the slow path (it has no side
  // effects) into the fast one.
  Value slow = s.any(arith::XOrIOp::create(
      b, loc, fast, s.constant(b.getI1Type(), b.getBoolAttr(true))));
  slow = LLVM::ExpectOp::create(b, loc, slow,
                                arith::ConstantIntOp::create(b, loc, 0, 1));
  Type f32 = s.type(b.getF32Type()), i32 = s.type(b.getI32Type());
  auto branch = scf::IfOp::create(b, loc, TypeRange{f32, i32}, slow,
                                  /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    // Element by element: fewer registers live at once than in vectors.
    ShapedBuilder one(b, loc, b.getF32Type());
    Value reduced = fastReduced, quadrant = fastQuadrant;
    if (s.shape.empty()) {
      std::tie(reduced, quadrant) = payneHanek(one, x);
    } else {
      for (int64_t i = 0, e = cast<VectorType>(x.getType()).getNumElements();
           i < e; ++i) {
        auto [r, q] = payneHanek(one, vector::ExtractOp::create(b, loc, x, i));
        reduced = vector::InsertOp::create(b, loc, r, reduced, i);
        quadrant = vector::InsertOp::create(b, loc, q, quadrant, i);
      }
    }
    reduced = s.select(fast, fastReduced, reduced);
    quadrant = s.select(fast, fastQuadrant, quadrant);
    scf::YieldOp::create(b, loc, ValueRange{reduced, quadrant});
    b.setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{fastReduced, fastQuadrant});
  }
  Value quadrant = s.andI(branch.getResult(1), s.i32(3));
  return {branch.getResult(0), quadrant};
}

SinCos mlir::kge::emitSinCos(OpBuilder &b, Location loc, Value x) {
  ShapedBuilder s(b, loc, x.getType());
  auto [r, quadrant] = emitQuadrantReduction(b, loc, x);
  return evaluateSinCos(s, x, r, quadrant);
}

SinCos mlir::kge::emitSinCosInRange(OpBuilder &b, Location loc, Value x,
                                    Value &outOfRange) {
  ShapedBuilder s(b, loc, x.getType());
  auto [r, quadrant] = codyWaite(s, x);
  outOfRange = s.any(arith::XOrIOp::create(
      b, loc, inFastRange(s, x),
      s.constant(b.getI1Type(), b.getBoolAttr(true))));
  return evaluateSinCos(s, x, r, s.andI(quadrant, s.i32(3)));
}

Value mlir::kge::emitSqrtRN(OpBuilder &b, Location loc, Value x) {
  return LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(),
                                       b.getStringAttr("llvm.nvvm.sqrt.rn.f"),
                                       ValueRange{x})
      .getResult(0);
}

Value mlir::kge::emitExp2Approx(OpBuilder &b, Location loc, Value x) {
  return LLVM::CallIntrinsicOp::create(
             b, loc, b.getF32Type(),
             b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"), ValueRange{x})
      .getResult(0);
}
