//===- TileIteratorDialect.cpp - tile dialect -----------------------------===//

#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tile;

#include "Dialect/TileIterator/IR/TileIteratorOpsDialect.cpp.inc"
#include "Dialect/TileIterator/IR/TileIteratorEnums.cpp.inc"

void TileIteratorDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Dialect/TileIterator/IR/TileIteratorOps.cpp.inc"
      >();
}
