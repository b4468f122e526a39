/*===- kge-c/Compiler.h - C API of KGE's compiler -----------------*- C -*-===*\
|*                                                                            *|
|* Registers KGE's dialects and passes, runs its named pipelines and compiles *|
|* modules to kernel bundles in memory, for compilers that embed KGE through  *|
|* MLIR's C API (libKGECAPI.so also exports MLIR's core C API: mlir-c/IR.h,   *|
|* Pass.h, Diagnostics.h). The bundles load through the runtime's C API       *|
|* (kge-c/Runtime.h), which links no MLIR.                                    *|
|*                                                                            *|
|* Errors are diagnostics on the module's context (attach a handler with      *|
|* mlirContextAttachDiagnosticHandler) and a failed MlirLogicalResult;        *|
|* nothing aborts.                                                            *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef KGE_C_COMPILER_H
#define KGE_C_COMPILER_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The version of the API this header describes.
#define KGE_CAPI_VERSION 1

/// The API version of the loaded library.
MLIR_CAPI_EXPORTED int kgeGetCAPIVersion(void);

/// Success when the loaded library implements `headerVersion` (pass
/// KGE_CAPI_VERSION) and runs on the MLIR it was built for; otherwise a
/// failure, with the reason passed to `onError` (may be NULL).
MLIR_CAPI_EXPORTED MlirLogicalResult kgeCheckCAPIVersion(
    int headerVersion, MlirStringCallback onError, void *userData);

/// The MLIR version KGE was built against ("22.1.x").
MLIR_CAPI_EXPORTED MlirStringRef kgeGetMLIRVersion(void);

/// Adds KGE's dialects, the upstream dialects its pipelines produce and the
/// interfaces they need (ConvertToLLVM, NVVM target, LLVM IR translation).
MLIR_CAPI_EXPORTED void kgeRegisterAllDialects(MlirDialectRegistry registry);

/// Registers KGE's passes, its named pipelines (kge-lower-to-gpu,
/// kge-lower-to-cpu) and the upstream passes they use with the global
/// registry, so mlirParsePassPipeline knows them. Idempotent.
MLIR_CAPI_EXPORTED void kgeRegisterAllPasses(void);

/// Parses `pipeline` (textual form, "builtin.module(kge-lower-to-gpu)")
/// and runs it on `op`. A malformed pipeline or a failing pass is reported
/// as a diagnostic on op's context.
MLIR_CAPI_EXPORTED MlirLogicalResult kgeRunPassPipeline(MlirOperation op,
                                                        MlirStringRef pipeline);

/// kge-lower-to-gpu{options} on `module`, in place (`options`: the
/// pipeline's options, "negative=t tile=128", or empty).
MLIR_CAPI_EXPORTED MlirLogicalResult kgeLowerToGPU(MlirModule module,
                                                   MlirStringRef options);

/// kge-lower-to-cpu on `module`, in place.
MLIR_CAPI_EXPORTED MlirLogicalResult kgeLowerToCPU(MlirModule module);

typedef struct kgeBundleOptions {
  /// The chip the PTX is compiled for ("sm_90").
  MlirStringRef chip;
  /// PTX features ("+ptx81").
  MlirStringRef features;
  /// LLVM optimization level, 0 to 3.
  int optLevel;
  /// Also assemble a cubin with ptxas when found.
  bool cubin;
  /// ptxas to use (empty: search PATH and /usr/local/cuda/bin).
  MlirStringRef ptxas;
} kgeBundleOptions;

/// The defaults: sm_90, +ptx81, -O3, a cubin when ptxas exists.
MLIR_CAPI_EXPORTED kgeBundleOptions kgeBundleOptionsGetDefault(void);

/// Writes the bundle of the only function of `module`, already lowered by
/// kge-lower-to-gpu, through `callback` (possibly in several pieces).
/// `options`: NULL for the defaults.
MLIR_CAPI_EXPORTED MlirLogicalResult
kgeTranslateToBundle(MlirModule module, const kgeBundleOptions *options,
                     MlirStringCallback callback, void *userData);

/// Compiles `module` to a bundle: runs `pipeline` (empty:
/// "builtin.module(kge-lower-to-gpu)") on a clone, so `module` is left
/// unchanged, then translates the clone like kgeTranslateToBundle.
MLIR_CAPI_EXPORTED MlirLogicalResult kgeCompileToBundle(
    MlirModule module, MlirStringRef pipeline, const kgeBundleOptions *options,
    MlirStringCallback callback, void *userData);

#ifdef __cplusplus
}
#endif

#endif // KGE_C_COMPILER_H
