//===- TensorCores.h - the one tensor-core emitter --------------*- C++ -*-===//
//
// Warp-level matrix multiply-adds (mma.sync through upstream's nvgpu
// dialect) for every KGE lowering that has GEMM-like work: the fragments'
// layouts, the precisions and the TF32 split live here once.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_CONVERSION_GPUCOMMON_TENSORCORES_H
#define KGE_CONVERSION_GPUCOMMON_TENSORCORES_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <utility>

namespace mlir {
namespace kge {

/// The operand precision of a tensor-core product; accumulation is FP32.
enum class MmaPrecision {
  /// FP16 operands, mma.sync.m16n8k16.
  f16,
  /// BF16 operands, mma.sync.m16n8k16.
  bf16,
  /// FP32 operands rounded to TF32, mma.sync.m16n8k8.
  tf32,
  /// FP32 operands split into two TF32 parts, three mma.sync.m16n8k8
  /// (FP32-accurate products).
  tf32x3,
};

/// The precision named `tf32`, `tf32x3`, `f16` or `bf16`.
std::optional<MmaPrecision> parseMmaPrecision(llvm::StringRef name);

/// The name of `precision` (parseMmaPrecision's inverse).
llvm::StringRef getMmaPrecisionName(MmaPrecision precision);

/// The reduction depth of one mma.sync: 16 for 16-bit operands, 8 for TF32.
int64_t getMmaK(MmaPrecision precision);

/// The bits of an operand element as stored: 16, or 32 for TF32.
int64_t getMmaElementBits(MmaPrecision precision);

/// The element type of the operands as stored (f16, bf16 or f32).
Type getMmaElementType(MLIRContext *context, MmaPrecision precision);

/// Registers per lane of the operand fragments of one m16n8k* product:
/// A is vector<4 x P x T>, B vector<2 x P x T> with P = 32 / bitwidth(T)
/// elements per register; the accumulator is vector<2x2xf32> (lane
/// (g, t) = (lane / 4, lane % 4) holds C[g][2t], C[g][2t + 1],
/// C[g + 8][2t], C[g + 8][2t + 1]).
VectorType getMmaFragmentType(MLIRContext *context, MmaPrecision precision,
                              int64_t registers);

/// `value` (f32, scalar or vector) as a TF32 value rounded to nearest (ties
/// away from zero) and the FP32 rest: value = big + small up to 2^-22 of
/// |value|. For a NaN the rest is NaN (big may be anything).
std::pair<Value, Value> splitTF32(OpBuilder &b, Location loc, Value value);

/// `acc` + `a` x `b` on the tensor cores (row-major A, column-major B): one
/// mma.sync, three for tf32x3 (the small products first, chained from zero
/// and added to `acc` in FP32: the tensor cores truncate their sums, and a
/// chain through `acc` over all of K drifts by one truncation a step).
Value buildMmaSync(OpBuilder &b, Location loc, MmaPrecision precision,
                   Value a, Value bFragment, Value acc);

} // namespace kge
} // namespace mlir

#endif // KGE_CONVERSION_GPUCOMMON_TENSORCORES_H
