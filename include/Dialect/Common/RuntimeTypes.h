//===- RuntimeTypes.h - MLIR element types as runtime dtypes ----*- C++ -*-===//
//
// The mapping every dialect's signature analysis uses between MLIR element
// types and the runtime's dtypes.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_COMMON_RUNTIMETYPES_H
#define KGE_DIALECT_COMMON_RUNTIMETYPES_H

#include "kge/runtime/Signature.h"
#include "mlir/IR/Types.h"

#include <optional>

namespace mlir {
namespace kge {

/// The runtime dtype of an MLIR element type, if it has one.
inline std::optional<kge_runtime::DType> getDType(Type type) {
  if (type.isF16())
    return kge_runtime::DType::F16;
  if (type.isBF16())
    return kge_runtime::DType::BF16;
  if (type.isF32())
    return kge_runtime::DType::F32;
  if (type.isF64())
    return kge_runtime::DType::F64;
  if (type.isSignlessInteger(32))
    return kge_runtime::DType::I32;
  if (type.isSignlessInteger(64))
    return kge_runtime::DType::I64;
  return std::nullopt;
}

} // namespace kge
} // namespace mlir

#endif // KGE_DIALECT_COMMON_RUNTIMETYPES_H
