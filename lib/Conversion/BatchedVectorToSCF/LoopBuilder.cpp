//===- LoopBuilder.cpp - loop-nest helpers for bvec-to-scf ----------------===//

#include "LoopBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::kge;

Value loops::dimSize(OpBuilder &b, Location loc, Value memref, unsigned dim) {
  auto type = cast<MemRefType>(memref.getType());
  if (!type.isDynamicDim(dim))
    return arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim));
  return memref::DimOp::create(b, loc, memref, dim);
}

SmallVector<Value> loops::sizes(OpBuilder &b, Location loc, Value memref) {
  SmallVector<Value> result;
  for (unsigned d = 0, e = cast<MemRefType>(memref.getType()).getRank(); d < e;
       ++d)
    result.push_back(dimSize(b, loc, memref, d));
  return result;
}

Value loops::alloc(OpBuilder &b, Location loc, MemRefType type,
                   ValueRange sizes) {
  SmallVector<Value> dynamic;
  for (unsigned d = 0, e = type.getRank(); d < e; ++d)
    if (type.isDynamicDim(d))
      dynamic.push_back(sizes[d]);
  return memref::AllocOp::create(b, loc, type, dynamic);
}

void loops::forEach(OpBuilder &b, Location loc, ValueRange sizes,
                    function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> lbs(sizes.size(), zero), steps(sizes.size(), one);
  scf::buildLoopNest(b, loc, lbs, sizes, steps, body);
}

Value loops::reduce(
    OpBuilder &b, Location loc, Value upper, Value init,
    function_ref<Value(OpBuilder &, Location, Value, Value)> step) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, zero, upper, one, ValueRange{init},
      [&](OpBuilder &nb, Location nloc, Value iv, ValueRange iterArgs) {
        Value next = step(nb, nloc, iv, iterArgs.front());
        scf::YieldOp::create(nb, nloc, next);
      });
  return loop.getResult(0);
}

FailureOr<Value> loops::functionBatchSize(OpBuilder &b, Location loc,
                                          Operation *op) {
  auto func = op->getParentOfType<func::FuncOp>();
  if (!func || func.isExternal())
    return failure();
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (func.getArgAttr(i, kResultAttrName))
      return dimSize(b, loc, func.getArgument(i), 0);
  return failure();
}

Value loops::floatConstant(OpBuilder &b, Location loc, Type type,
                           double value) {
  return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
}
