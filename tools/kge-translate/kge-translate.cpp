//===- kge-translate.cpp - KGE's translation driver -----------------------===//
//
// Like mlir-translate, for KGE's translations: PTX, signatures and kernel
// bundles.
//
//===----------------------------------------------------------------------===//

#include "InitAll.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::kge::registerAllTranslations();
  return mlir::failed(
             mlir::mlirTranslateMain(argc, argv, "KGE translation driver\n"))
             ? 1
             : 0;
}
