//===- TensorCores.cpp - the one tensor-core emitter ----------------------===//

#include "Conversion/GPUCommon/TensorCores.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::kge;

std::optional<MmaPrecision> kge::parseMmaPrecision(StringRef name) {
  return llvm::StringSwitch<std::optional<MmaPrecision>>(name)
      .Case("f16", MmaPrecision::f16)
      .Case("bf16", MmaPrecision::bf16)
      .Case("tf32", MmaPrecision::tf32)
      .Case("tf32x3", MmaPrecision::tf32x3)
      .Default(std::nullopt);
}

StringRef kge::getMmaPrecisionName(MmaPrecision precision) {
  switch (precision) {
  case MmaPrecision::f16:
    return "f16";
  case MmaPrecision::bf16:
    return "bf16";
  case MmaPrecision::tf32:
    return "tf32";
  case MmaPrecision::tf32x3:
    return "tf32x3";
  }
  llvm_unreachable("unknown precision");
}

int64_t kge::getMmaK(MmaPrecision precision) {
  return precision == MmaPrecision::f16 || precision == MmaPrecision::bf16
             ? 16
             : 8;
}

int64_t kge::getMmaElementBits(MmaPrecision precision) {
  return getMmaK(precision) == 16 ? 16 : 32;
}

Type kge::getMmaElementType(MLIRContext *context, MmaPrecision precision) {
  Builder b(context);
  switch (precision) {
  case MmaPrecision::f16:
    return b.getF16Type();
  case MmaPrecision::bf16:
    return b.getBF16Type();
  case MmaPrecision::tf32:
  case MmaPrecision::tf32x3:
    return b.getF32Type();
  }
  llvm_unreachable("unknown precision");
}

VectorType kge::getMmaFragmentType(MLIRContext *context,
                                   MmaPrecision precision,
                                   int64_t registers) {
  Type element = getMmaElementType(context, precision);
  return VectorType::get({registers, 32 / element.getIntOrFloatBitWidth()},
                         element);
}

/// `value` (f32, scalar or vector) rounded to TF32 (see splitTF32).
static Value roundTF32(OpBuilder &b, Location loc, Value value) {
  Type floatType = value.getType();
  Type intType = b.getI32Type();
  if (auto vector = dyn_cast<VectorType>(floatType))
    intType = VectorType::get(vector.getShape(), intType);
  auto constant = [&](int32_t v) -> Value {
    TypedAttr attr = b.getI32IntegerAttr(v);
    if (auto vector = dyn_cast<VectorType>(intType))
      attr = DenseElementsAttr::get(vector, attr);
    return arith::ConstantOp::create(b, loc, attr);
  };
  // Round to nearest (ties away from zero) at the 13th bit, then clear the
  // 13 bits TF32 lacks. Two integer operations: the TF32 kernels are bound
  // by them (a NaN check per element cost the mma.sync kernel 28 %). A NaN
  // may carry into an infinity or +-0 here (0x7FFFFFFF, CUDA's NaN, gives
  // -0): only splitTF32 uses this, and its small part, value - big, is
  // then NaN, so NaNs reach the product.
  Value bits = arith::BitcastOp::create(b, loc, intType, value);
  Value rounded = arith::AndIOp::create(
      b, loc, arith::AddIOp::create(b, loc, bits, constant(0x1000)),
      constant(static_cast<int32_t>(0xFFFFE000u)));
  return arith::BitcastOp::create(b, loc, floatType, rounded);
}

std::pair<Value, Value> kge::splitTF32(OpBuilder &b, Location loc,
                                       Value value) {
  Value big = roundTF32(b, loc, value);
  return {big, arith::SubFOp::create(b, loc, value, big)};
}

/// mma.sync.m16n8k16 with BF16 operands as NVVM's op: fragments
/// vector<R x 2 x bf16> pass as R packed i32 registers.
static Value buildBF16Mma(OpBuilder &b, Location loc, Value a, Value bFragment,
                          Value acc) {
  auto registers = [&](Value fragment) {
    SmallVector<Value> result;
    auto type = cast<VectorType>(fragment.getType());
    for (int64_t r = 0; r < type.getDimSize(0); ++r) {
      Value pair = vector::ExtractOp::create(b, loc, fragment,
                                             ArrayRef<int64_t>{r});
      Value packed = vector::BitCastOp::create(
          b, loc, VectorType::get({1}, b.getI32Type()), pair);
      result.push_back(
          vector::ExtractOp::create(b, loc, packed, ArrayRef<int64_t>{0}));
    }
    return result;
  };
  SmallVector<Value> c;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t q = 0; q < 2; ++q)
      c.push_back(vector::ExtractOp::create(b, loc, acc,
                                            ArrayRef<int64_t>{h, q}));
  Type f32 = b.getF32Type();
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  Value d = NVVM::MmaOp::create(
      b, loc, resultType, registers(a), registers(bFragment), c,
      ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                    NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> elements;
  for (int64_t i = 0; i < 4; ++i)
    elements.push_back(LLVM::ExtractValueOp::create(b, loc, d, i));
  return vector::FromElementsOp::create(b, loc, acc.getType(), elements);
}

Value kge::buildMmaSync(OpBuilder &b, Location loc, MmaPrecision precision,
                        Value a, Value bFragment, Value acc) {
  SmallVector<int64_t, 3> shape = {16, 8, getMmaK(precision)};
  auto mma = [&](Value lhs, Value rhs, Value c) -> Value {
    bool tf32 = precision == MmaPrecision::tf32 ||
                precision == MmaPrecision::tf32x3;
    return nvgpu::MmaSyncOp::create(b, loc, lhs, rhs, c, shape, tf32);
  };
  switch (precision) {
  case MmaPrecision::f16:
    return mma(a, bFragment, acc);
  case MmaPrecision::bf16:
    // Upstream's nvgpu lowering deduces no PTX type for bf16: the NVVM op
    // itself, its registers as packed i32.
    return buildBF16Mma(b, loc, a, bFragment, acc);
  case MmaPrecision::tf32:
    // Operands as stored: the tensor cores read the 19 high bits of each
    // (truncation, as warpgroup MMA does), so NaNs stay NaN or become
    // infinities, never finite, and no instruction is spent rounding.
    return mma(a, bFragment, acc);
  case MmaPrecision::tf32x3: {
    // a b ~ a_small b_big + a_big b_small + a_big b_big, summed from zero
    // on the tensor cores and added to acc with an FP32 add (rounded to
    // nearest). The tensor cores round their sums toward zero: chaining
    // every step through acc biases a K = 512 dot product by about 2e-6 of
    // its value, 8x the FP32 loop's error; a chain of one step's three
    // products errs by one truncation of that step's sum.
    auto [aBig, aSmall] = splitTF32(b, loc, a);
    auto [bBig, bSmall] = splitTF32(b, loc, bFragment);
    Value zero = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(cast<ShapedType>(acc.getType()),
                                       b.getF32FloatAttr(0.0f)));
    Value step = mma(aSmall, bBig, zero);
    step = mma(aBig, bSmall, step);
    step = mma(aBig, bBig, step);
    return arith::AddFOp::create(b, loc, acc, step);
  }
  }
  llvm_unreachable("unknown precision");
}
