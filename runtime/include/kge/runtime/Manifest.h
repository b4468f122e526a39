//===- Manifest.h - the manifest of a kernel bundle -------------*- C++ -*-===//
//
// The parsed and validated form of a bundle (see docs/BundleFormat.md).
// Parsing checks everything that can be checked without a GPU: the format
// and version, the signature, that every expression parses and uses known
// sizes, that launches refer to existing modules, buffers and arguments,
// and that the device library provides what the bundle needs.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_RUNTIME_MANIFEST_H
#define KGE_RUNTIME_MANIFEST_H

#include "kge/runtime/Error.h"
#include "kge/runtime/Expression.h"
#include "kge/runtime/Signature.h"

#include <memory>
#include <string>
#include <vector>

namespace kge_runtime {

/// The bundle format version this runtime reads.
inline constexpr int kSupportedBundleVersion = 1;

using ExpressionPtr = std::shared_ptr<Expression>;

/// A buffer a launch refers to: a parameter of the function or a scratch
/// buffer of the call.
struct BufferRef {
  enum class Kind { Param, Scratch };
  Kind kind = Kind::Param;
  int index = -1; ///< Into Signature::params or Manifest::scratch.
  std::string name;
};

struct KernelArg {
  /// TensorMap: a TMA descriptor (CUtensorMap, 128 bytes by value) of a
  /// row-major 2-D parameter, 128-byte swizzled boxes, zero fill past its
  /// extents.
  enum class Kind { Memref, Pointer, I32, I64, TensorMap };
  Kind kind = Kind::I64;
  BufferRef buffer;                  ///< Memref, Pointer, TensorMap
  std::vector<ExpressionPtr> shape;  ///< Memref: the view's sizes
  ExpressionPtr value;               ///< I32, I64
  /// TensorMap: rows and columns of a box (columns * element size <= 128).
  int64_t box[2] = {0, 0};
};

struct LaunchStep {
  enum class Kind { Memset, Kernel };
  Kind kind = Kind::Kernel;
  BufferRef buffer;       ///< Memset: a scratch buffer or a result
  uint32_t value = 0;     ///< Memset: the word each 32-bit element gets
                          ///< (zero: every byte cleared)
  std::string function;   ///< Kernel
  std::string module;     ///< A bundle module, or "library"
  ExpressionPtr grid[3], block[3], sharedBytes;
  std::vector<KernelArg> args;
  /// The kernel waits at its entry for the work before it in the stream
  /// (griddepcontrol.wait): it may be launched while that work finishes
  /// (programmatic dependent launch, sm_90 and newer).
  bool dependent = false;
  /// The step runs only where this evaluates to a positive number (null:
  /// always): a plan that sorts large batches only, say (`B / 65536`).
  ExpressionPtr when;
};

struct ScratchBuffer {
  std::string name;
  DType dtype = DType::I32;
  ExpressionPtr count;
};

struct IndexCheck {
  int param = -1;
  ExpressionPtr bound, count;
};

struct ModuleImage {
  std::string name;
  std::string ptx;
  std::string cubin; ///< Relocatable object for `Manifest::chip`, may be empty.
};

struct Manifest {
  int version = 0;
  std::string chip, features;
  Signature signature;
  /// Negative-sampling mode: the corrupted index array ("" when positive).
  std::string corrupted;
  std::vector<ModuleImage> modules;
  std::vector<std::string> library;
  std::vector<ScratchBuffer> scratch;
  std::vector<LaunchStep> launches;
  std::vector<IndexCheck> checks;

  /// Parses and validates a bundle. Throws BundleError naming the problem.
  static Manifest parse(const std::string &text);
};

/// Names of the functions and kernels the device library provides.
const std::vector<std::string> &deviceLibraryFunctions();

} // namespace kge_runtime

#endif // KGE_RUNTIME_MANIFEST_H
