//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//

#ifndef KGE_TOOLS_KGE_CPU_RUNNER_NPY_H
#define KGE_TOOLS_KGE_CPU_RUNNER_NPY_H

#include "kge/runtime/Signature.h"

#include <cstdint>
#include <string>
#include <vector>

namespace npy {
using kge_runtime::DType;
using kge_runtime::dtypeName;
using kge_runtime::dtypeSize;

/// A dense C-order array loaded from or saved to a .npy file.
struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<char> bytes;

  int64_t numElements() const;
};

/// Reads a version 1-3 .npy file of a supported dtype (f2, f4, f8, i4, i8,
/// little-endian, C order). On failure returns false and sets `error`.
bool readNpy(const std::string &path, NpyArray &array, std::string &error);

/// Writes a version 1 .npy file.
bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error);

} // namespace npy

#endif // KGE_TOOLS_KGE_CPU_RUNNER_NPY_H
