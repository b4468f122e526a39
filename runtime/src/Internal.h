//===- Internal.h - what the runtime's sources share ------------*- C++ -*-===//

#ifndef KGE_RUNTIME_SRC_INTERNAL_H
#define KGE_RUNTIME_SRC_INTERNAL_H

#include "kge/runtime/Cuda.h"
#include "kge/runtime/Error.h"
#include "kge/runtime/Runtime.h"

#include <string>

namespace kge_runtime {

/// Makes the primary context of `device` current on this thread (retained
/// once per process). Throws CudaError for a device that does not exist.
cuda::CUcontext useDevice(int device);

/// Kernel `name` of the device library linked alone for `device` (linked
/// and loaded once per device). Throws BundleError without the library.
cuda::CUfunction libraryKernel(int device, const char *name);

/// The CUDA device holding `a`'s memory: its recorded ordinal, or for -1
/// the driver's answer; -2 (host memory) is returned for the caller to
/// refuse in its own words. Throws ArgumentError, naming the array by
/// `what()` (called only then), for memory the driver does not know as
/// device memory.
template <typename What> int deviceOf(const DeviceArray &a, What &&what) {
  int ordinal = a.device;
  if (ordinal != -1)
    return ordinal;
  const cuda::Driver &d = cuda::driver();
  unsigned type = 0;
  if (d.cuPointerGetAttribute(&type, cuda::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                              a.data) != cuda::CUDA_SUCCESS ||
      (type != cuda::CU_MEMORYTYPE_DEVICE &&
       type != cuda::CU_MEMORYTYPE_UNIFIED))
    throw ArgumentError(what() + " is not in CUDA device memory");
  if (d.cuPointerGetAttribute(&ordinal,
                              cuda::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                              a.data) != cuda::CUDA_SUCCESS)
    throw ArgumentError(what() + " has no CUDA device");
  return ordinal;
}

/// Throws ArgumentError "<what()> must be contiguous (row-major)" unless
/// `a` is C-contiguous (no strides, or the strides of its shape).
template <typename What>
void checkContiguous(const DeviceArray &a, What &&what) {
  int64_t expected = 1;
  for (size_t i = a.strides.empty() ? 0 : a.shape.size(); i-- > 0;) {
    if (a.shape[i] != 1 && a.strides[i] != expected)
      throw ArgumentError(what() + " must be contiguous (row-major)");
    expected *= a.shape[i];
  }
}

} // namespace kge_runtime

#endif // KGE_RUNTIME_SRC_INTERNAL_H
