//===- Error.h - errors of the KGE runtime ----------------------*- C++ -*-===//
//
// Every failure of the runtime is one of these exceptions, with a message
// that names what is wrong. The Python module maps them to Python
// exceptions (BundleError and ArgumentError to ValueError, IndexRangeError
// to IndexError, CudaError to RuntimeError).
//
//===----------------------------------------------------------------------===//

#ifndef KGE_RUNTIME_ERROR_H
#define KGE_RUNTIME_ERROR_H

#include <stdexcept>
#include <string>

namespace kge_runtime {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A bundle that is malformed, of another version, or needs what this
/// runtime does not have.
struct BundleError : Error {
  using Error::Error;
};

/// Arguments that do not match the bundle's signature (dtype, rank, shape,
/// device, alignment, contiguity).
struct ArgumentError : Error {
  using Error::Error;
};

/// An index outside its table, found in checked mode.
struct IndexRangeError : Error {
  using Error::Error;
};

/// A CUDA driver call failed (or the driver is missing).
struct CudaError : Error {
  using Error::Error;
};

} // namespace kge_runtime

#endif // KGE_RUNTIME_ERROR_H
