//===- GraphDialect.cpp - graph dialect -----------------------------------===//

#include "Dialect/Graph/IR/GraphDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::graph;

#include "Dialect/Graph/IR/GraphOpsDialect.cpp.inc"
#include "Dialect/Graph/IR/GraphEnums.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "Dialect/Graph/IR/GraphOpsTypes.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Dialect/Graph/IR/GraphOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "Dialect/Graph/IR/GraphOpsTypes.cpp.inc"
      >();
}
