//===- Internal.h - what the runtime's sources share ------------*- C++ -*-===//

#ifndef KGE_RUNTIME_SRC_INTERNAL_H
#define KGE_RUNTIME_SRC_INTERNAL_H

#include "kge/runtime/Cuda.h"

namespace kge_runtime {

/// Makes the primary context of `device` current on this thread (retained
/// once per process). Throws CudaError for a device that does not exist.
cuda::CUcontext useDevice(int device);

/// Kernel `name` of the device library linked alone for `device` (linked
/// and loaded once per device). Throws BundleError without the library.
cuda::CUfunction libraryKernel(int device, const char *name);

} // namespace kge_runtime

#endif // KGE_RUNTIME_SRC_INTERNAL_H
