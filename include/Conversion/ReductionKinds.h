//===- ReductionKinds.h - how bvec reductions combine -----------*- C++ -*-===//
//
// The arithmetic of `bvec.reduce` kinds, shared by the CPU lowering
// (convert-bvec-to-scf) and the GPU lowering (convert-bvec-to-gpu): the
// identity an accumulator starts from and the operation that folds an
// element (or a partial result) into it. `mean` accumulates like `sum`; the
// division by the length is the lowering's last step.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_CONVERSION_REDUCTIONKINDS_H
#define KGE_CONVERSION_REDUCTIONKINDS_H

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <limits>

namespace mlir {
namespace kge {

/// The value a `kind` accumulator starts from.
inline double reductionIdentity(bvec::ReductionKind kind) {
  switch (kind) {
  case bvec::ReductionKind::max:
    return -std::numeric_limits<double>::infinity();
  case bvec::ReductionKind::min:
    return std::numeric_limits<double>::infinity();
  case bvec::ReductionKind::sum:
  case bvec::ReductionKind::mean:
    break;
  }
  return 0.0;
}

/// `acc` combined with `x` the way `kind` reduces.
inline Value combineReduction(OpBuilder &b, Location loc,
                              bvec::ReductionKind kind, Value acc, Value x) {
  switch (kind) {
  case bvec::ReductionKind::max:
    return arith::MaximumFOp::create(b, loc, acc, x);
  case bvec::ReductionKind::min:
    return arith::MinimumFOp::create(b, loc, acc, x);
  case bvec::ReductionKind::sum:
  case bvec::ReductionKind::mean:
    break;
  }
  return arith::AddFOp::create(b, loc, acc, x);
}

} // namespace kge
} // namespace mlir

#endif // KGE_CONVERSION_REDUCTIONKINDS_H
