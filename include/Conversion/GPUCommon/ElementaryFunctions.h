//===- ElementaryFunctions.h - f32 math for generated GPU kernels -*- C++ -*-===//
//
// Elementary functions that a GPU lowering expands into `arith` operations
// instead of calling libdevice, shared by every dialect's GPU lowering.
//
// libdevice's sinf/cosf carry their slow path for huge arguments (a
// Payne-Hanek reduction over a local-memory array) inline: unrolled over the
// chunks and edges of a fused kernel, that is thousands of instructions, a
// local-memory frame and register spills in every copy. The expansions here
// reduce the argument in registers (a three-constant Cody-Waite reduction
// for |x| <= 105615, a 128-bit Payne-Hanek reduction with the bits of 2/pi
// held in selects for larger |x|), share one reduction between the sine and
// the cosine of a value, and evaluate minimax polynomials. Every function
// works on f32 scalars and on vectors of f32 alike.
//
// emitSinCos() branches to the slow path per value (unlikely, never taken
// for embeddings of usual magnitudes); emitSinCosInRange() has no slow path
// at all and reports the values that would need it, so that a kernel can
// run a whole loop without it and redo the loop, rarely, with emitSinCos().
//
// Accuracy: at most 1.6 ulp from the correctly rounded result (checked by
// test/unittests on every 61st float of both signs and on the floats
// nearest multiples of pi/2, and on the GPU over random floats of every
// magnitude); sin(+-0) = +-0; NaN for NaN and +-inf.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_CONVERSION_GPUCOMMON_ELEMENTARYFUNCTIONS_H
#define KGE_CONVERSION_GPUCOMMON_ELEMENTARYFUNCTIONS_H

#include "mlir/IR/Builders.h"

namespace mlir {
namespace kge {

/// The sine and the cosine of one f32 value (scalar or vector).
struct SinCos {
  Value sin, cos;
};

/// sin(x) and cos(x) from one argument reduction. Operations the caller
/// does not use fold away in canonicalization.
SinCos emitSinCos(OpBuilder &b, Location loc, Value x);

/// sin(x) and cos(x) with the Cody-Waite reduction alone: as accurate as
/// emitSinCos() where |x| <= 105615, wrong elsewhere. `outOfRange` (i1) is
/// set to whether some element of `x` is outside that range (or NaN or
/// +-inf).
SinCos emitSinCosInRange(OpBuilder &b, Location loc, Value x,
                         Value &outOfRange);

/// The argument reduction behind emitSinCos: `x = (quadrant + 4k) * pi/2 +
/// reduced` with |reduced| <= pi/4 (quadrant as i32 of x's shape, in [0, 4)).
std::pair<Value, Value> emitQuadrantReduction(OpBuilder &b, Location loc,
                                              Value x);

/// Correctly rounded f32 square root (`sqrt.rn`, like PyTorch's): the NVVM
/// intrinsic, since convert-gpu-to-nvvm turns `math.sqrt` into the
/// approximate libdevice default. Scalars only.
Value emitSqrtRN(OpBuilder &b, Location loc, Value x);

/// f32 `2^x` by one `ex2.approx.ftz` (relative error 2^-22, subnormal
/// results flushed to zero): the NVVM intrinsic, since `math.exp2` becomes
/// libdevice's `ex2.approx` without ftz, which adds a scaling around it for
/// subnormals. For kernels whose values need no subnormals (a base
/// kernel's weight). Scalars only.
Value emitExp2Approx(OpBuilder &b, Location loc, Value x);

} // namespace kge
} // namespace mlir

#endif // KGE_CONVERSION_GPUCOMMON_ELEMENTARYFUNCTIONS_H
