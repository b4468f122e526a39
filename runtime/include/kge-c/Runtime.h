/*===- kge-c/Runtime.h - C API of the KGE runtime -----------------*- C -*-===*\
|*                                                                            *|
|* Loads kernel bundles and launches them from C, without MLIR: the API a     *|
|* compiler or a serving process that embeds KGE's kernels links              *|
|* (libkge_runtime_c.so). It wraps the C++ runtime (kge/runtime/Runtime.h):   *|
|* every argument is checked against the bundle's signature before a launch.  *|
|*                                                                            *|
|* Errors: every entry point returns a kgertStatus; on failure                *|
|* kgertGetLastError() holds a message naming the problem (per thread, valid  *|
|* until the next call on that thread). Nothing aborts the process.           *|
|*                                                                            *|
|* Versions: a caller checks that the library it loaded implements the API    *|
|* its header describes with kgertCheckApiVersion(KGERT_API_VERSION).         *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef KGE_C_RUNTIME_H
#define KGE_C_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define KGERT_EXPORTED __attribute__((visibility("default")))
#else
#define KGERT_EXPORTED
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// The version of the API this header describes.
#define KGERT_API_VERSION 1

typedef enum kgertStatus {
  KGERT_SUCCESS = 0,
  /// A bundle that is malformed, of another format version, or needs what
  /// this runtime does not have.
  KGERT_ERROR_BUNDLE = 1,
  /// Arrays that do not match the signature (dtype, rank, shape, device,
  /// alignment, contiguity), or an invalid argument to the API itself.
  KGERT_ERROR_ARGUMENT = 2,
  /// An index outside its table (checked calls).
  KGERT_ERROR_INDEX_RANGE = 3,
  /// A CUDA driver call failed, or there is no driver.
  KGERT_ERROR_CUDA = 4,
  /// The caller's header and the loaded library implement different APIs.
  KGERT_ERROR_VERSION = 5,
  /// Anything else (out of memory, say).
  KGERT_ERROR_INTERNAL = 6,
} kgertStatus;

typedef enum kgertDType {
  KGERT_F16 = 0,
  KGERT_BF16 = 1,
  KGERT_F32 = 2,
  KGERT_F64 = 3,
  KGERT_I32 = 4,
  KGERT_I64 = 5,
} kgertDType;

/// Table: read by the function. Indices: an index array. Result: allocated
/// by the caller with the shape kgertManifestResultShape gives, written by
/// the call. Output: passed among the arguments and written.
typedef enum kgertRole {
  KGERT_TABLE = 0,
  KGERT_INDICES = 1,
  KGERT_RESULT = 2,
  KGERT_OUTPUT = 3,
} kgertRole;

/// An array passed to a call.
typedef struct kgertArray {
  /// Device address (a CUdeviceptr).
  uint64_t data;
  /// A kgertDType (an int, so that a bad value is reported, not undefined).
  int32_t dtype;
  int32_t rank;
  const int64_t *shape;
  /// Strides in elements; NULL: C-contiguous.
  const int64_t *strides;
  /// CUDA device ordinal; -1: ask the driver.
  int32_t device;
} kgertArray;

typedef struct kgertCallOptions {
  /// CUstream (0: the legacy default stream).
  uint64_t stream;
  /// Non-zero: check every index against its tables first (synchronizes).
  int32_t checked;
  /// The batch size when no index array gives it; negative: none.
  int64_t batchSize;
} kgertCallOptions;

/// What a signature says of one parameter.
typedef struct kgertParamInfo {
  /// Owned by the manifest.
  const char *name;
  kgertRole role;
  kgertDType dtype;
  int32_t rank;
} kgertParamInfo;

/// A parsed bundle: its signature, target and launch plan. Needs no GPU.
typedef struct kgertManifest_ *kgertManifest;
/// A bundle loaded on one GPU.
typedef struct kgertProgram_ *kgertProgram;

/// The API version of the loaded library.
KGERT_EXPORTED int kgertGetApiVersion(void);

/// KGERT_SUCCESS when the loaded library implements `headerVersion` (pass
/// KGERT_API_VERSION); KGERT_ERROR_VERSION otherwise.
KGERT_EXPORTED kgertStatus kgertCheckApiVersion(int headerVersion);

/// The message of this thread's last failed call ("" after a success).
KGERT_EXPORTED const char *kgertGetLastError(void);

/// "f32", "i64", ... for a kgertDType; NULL for any other value.
KGERT_EXPORTED const char *kgertDTypeName(int32_t dtype);

//===----------------------------------------------------------------------===//
// Manifests
//===----------------------------------------------------------------------===//

/// Parses and validates the bundle `text` (`length` bytes).
KGERT_EXPORTED kgertStatus kgertManifestParse(const char *text, size_t length,
                                              kgertManifest *manifest);
KGERT_EXPORTED void kgertManifestDestroy(kgertManifest manifest);

/// The function's name and the chip it was compiled for (owned by the
/// manifest).
KGERT_EXPORTED const char *kgertManifestGetFunctionName(kgertManifest manifest);
KGERT_EXPORTED const char *kgertManifestGetChip(kgertManifest manifest);

/// Parameters: the arguments first, then the results.
KGERT_EXPORTED size_t kgertManifestGetNumParams(kgertManifest manifest);
KGERT_EXPORTED size_t kgertManifestGetNumArguments(kgertManifest manifest);
KGERT_EXPORTED kgertStatus kgertManifestGetParam(kgertManifest manifest,
                                                 size_t position,
                                                 kgertParamInfo *info);

/// Checks `arguments` against the signature (no device memory is read)
/// and writes the shape of result `result` (0 for the first result) into
/// `shape` (room for `capacity` sizes) and its rank into `rank`.
/// `batchSize`: as in kgertCallOptions.
KGERT_EXPORTED kgertStatus kgertManifestGetResultShape(
    kgertManifest manifest, const kgertArray *arguments, size_t numArguments,
    int64_t batchSize, size_t result, int64_t *shape, size_t capacity,
    int32_t *rank);

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

/// Loads the bundle `text` on CUDA device `device` (cached per bundle and
/// device inside the process).
KGERT_EXPORTED kgertStatus kgertProgramLoad(const char *text, size_t length,
                                            int device, kgertProgram *program);
KGERT_EXPORTED void kgertProgramDestroy(kgertProgram program);

/// The program's manifest, owned by the program.
KGERT_EXPORTED kgertManifest kgertProgramGetManifest(kgertProgram program);

/// Runs the program: `arguments` in the signature's order, `results`
/// preallocated with the shapes kgertManifestGetResultShape gives.
/// `options`: NULL for the defaults (stream 0, unchecked, no batch size).
KGERT_EXPORTED kgertStatus kgertProgramCall(kgertProgram program,
                                            const kgertArray *arguments,
                                            size_t numArguments,
                                            const kgertArray *results,
                                            size_t numResults,
                                            const kgertCallOptions *options);

/// Number of CUDA devices (0 without a driver).
KGERT_EXPORTED int kgertGetDeviceCount(void);

#ifdef __cplusplus
}
#endif

#endif // KGE_C_RUNTIME_H
