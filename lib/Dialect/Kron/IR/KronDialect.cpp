//===- KronDialect.cpp - kron dialect -------------------------------------===//

#include "Dialect/Kron/IR/KronDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::kron;

/// A real parameter of a base kernel, printed so that it parses back to the
/// same double.
static ParseResult parseReal(AsmParser &parser, FailureOr<llvm::APFloat> &value) {
  double real;
  if (parser.parseFloat(real))
    return failure();
  value = llvm::APFloat(real);
  return success();
}

static void printReal(AsmPrinter &printer, const llvm::APFloat &value) {
  printer.printFloat(value);
}

#include "Dialect/Kron/IR/KronOpsDialect.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "Dialect/Kron/IR/KronAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "Dialect/Kron/IR/KronOpsTypes.cpp.inc"

void KronDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Dialect/Kron/IR/KronOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "Dialect/Kron/IR/KronOpsTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Dialect/Kron/IR/KronAttrs.cpp.inc"
      >();
}
