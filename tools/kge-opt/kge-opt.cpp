//===- kge-opt.cpp - KGE's optimizer driver -------------------------------===//
//
// Like mlir-opt, for KGE's dialects, passes and pipelines plus the upstream
// dialects and passes they use.
//
//===----------------------------------------------------------------------===//

#include "InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::kge::registerAllDialects(registry);
  mlir::kge::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "KGE optimizer driver\n", registry));
}
