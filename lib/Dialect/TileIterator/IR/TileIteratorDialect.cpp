//===- TileIteratorDialect.cpp - tile dialect -----------------------------===//

#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tile;

#include "Dialect/TileIterator/IR/TileIteratorOpsDialect.cpp.inc"
#include "Dialect/TileIterator/IR/TileIteratorEnums.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "Dialect/TileIterator/IR/TileIteratorOpsTypes.cpp.inc"

void TileIteratorDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Dialect/TileIterator/IR/TileIteratorOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "Dialect/TileIterator/IR/TileIteratorOpsTypes.cpp.inc"
      >();
}
