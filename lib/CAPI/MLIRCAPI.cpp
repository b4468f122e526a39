//===- MLIRCAPI.cpp - MLIR's core C API as a shared library ---------------===//
//
// The library's content is MLIR's own C API (linked whole from Debian's
// libMLIRCAPIIR.a); this file only names what it carries.
//
//===----------------------------------------------------------------------===//

#include "mlir-c/IR.h"

/// Referenced so that the linker keeps the archive even where whole-archive
/// linking is not honoured.
MLIR_CAPI_EXPORTED MlirContext (*const kgeMLIRCAPIAnchor)(void) = mlirContextCreate;
