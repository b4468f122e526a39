//===- BatchedVectorDialect.cpp - bvec dialect ----------------------------===//

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::bvec;

#include "Dialect/BatchedVector/IR/BatchedVectorOpsDialect.cpp.inc"
#include "Dialect/BatchedVector/IR/BatchedVectorEnums.cpp.inc"

void BatchedVectorDialect::initialize() {
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "Dialect/BatchedVector/IR/BatchedVectorOps.cpp.inc"
      >();
}

Operation *BatchedVectorDialect::materializeConstant(OpBuilder &builder,
                                                     Attribute value, Type type,
                                                     Location loc) {
  auto floatValue = dyn_cast<FloatAttr>(value);
  if (!floatValue || !ConstantOp::isMaterializable(type))
    return nullptr;
  if (floatValue.getType() != cast<BatchedType>(type).getElementType())
    return nullptr;
  return ConstantOp::create(builder, loc, type, floatValue);
}
