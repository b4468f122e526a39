//===- Bundle.h - kernel bundles: PTX + manifest ----------------*- C++ -*-===//
//
// A kernel bundle is one JSON document that any runtime can launch from:
//
//   {"format": "kge-bundle", "version": 1,
//    "target": {"chip": "sm_90", "features": "+ptx81"},
//    "function": {"name": ..., "params": [...]},     // the signature
//    "mode": {"kind": "positive"} | {"kind": "negative", "corrupted": "t"},
//    "modules": [{"name": ..., "ptx": "...", "cubin_base64": "..."}],
//    "library": ["kge_inspect_unique", ...],         // device library needs
//    "scratch": [{"name": "perm", "dtype": "i32", "count": "B"}],
//    "launches": [{"kind": "memset", "buffer": "scratch:counts"},
//                 {"kind": "kernel", "function": ..., "module": ...,
//                  "grid": [...], "block": [...], "shared_bytes": "...",
//                  "args": [...]}, ...],
//    "checks": [{"param": "h", "bound": "N_Eemb", "count": "B"}]}
//
// Sizes are expressions over the signature's symbols (integers, symbols,
// + - * /, ceildiv, min, max). docs/BundleFormat.md describes every field.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_TARGET_BUNDLE_H
#define KGE_TARGET_BUNDLE_H

#include "Target/PTX.h"

#include <string>

namespace mlir {
namespace kge {

/// The version of the bundle format written by this compiler.
inline constexpr int kBundleFormatVersion = 1;

struct BundleOptions {
  PTXOptions ptx;
  /// Also assemble a relocatable sm object with ptxas, when found.
  bool cubin = true;
  /// ptxas to use (empty: search PATH and /usr/local/cuda/bin).
  std::string ptxas;
};

/// Writes the bundle of the only lowered function of `module` (the output
/// of kge-lower-to-gpu). Diagnostics go to the module's context.
FailureOr<std::string> translateToBundle(ModuleOp module,
                                         const BundleOptions &options = {});

} // namespace kge
} // namespace mlir

#endif // KGE_TARGET_BUNDLE_H
