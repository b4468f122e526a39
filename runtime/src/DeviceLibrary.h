//===- DeviceLibrary.h - the device library embedded in the runtime -*- C++ -*-//
//
// runtime/device/kge_device.cu compiled by nvcc when the runtime is built:
// PTX for any GPU, and a relocatable object for one chip. Generated into
// DeviceLibraryImage.cpp by CMake.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_RUNTIME_SRC_DEVICELIBRARY_H
#define KGE_RUNTIME_SRC_DEVICELIBRARY_H

#include <cstddef>
#include <string>

namespace kge_runtime {
namespace device_library {

/// Whether the runtime was built with the device library.
bool available();
/// NUL-terminated PTX (relocatable) of the library.
const char *ptx();
/// A relocatable object for objectChip(), or empty.
const unsigned char *object();
size_t objectSize();
/// "sm_90" for example; empty without an object.
std::string objectChip();

} // namespace device_library
} // namespace kge_runtime

#endif // KGE_RUNTIME_SRC_DEVICELIBRARY_H
