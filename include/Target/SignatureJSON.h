//===- SignatureJSON.h - signatures as JSON ---------------------*- C++ -*-===//
//
// The JSON form of a function signature, as it appears in a bundle
// manifest:
//
//   {"name": "transe_l2",
//    "params": [{"name": "Eemb", "role": "table", "dtype": "f32",
//                "shape": ["N_Eemb", "D_Eemb"]},
//               {"name": "h", "role": "indices", "dtype": "i64",
//                "shape": ["B"], "indexes": ["Eemb"]}, ...]}
//
// Static sizes are numbers, symbolic sizes are strings.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_TARGET_SIGNATUREJSON_H
#define KGE_TARGET_SIGNATUREJSON_H

#include "kge/runtime/Signature.h"
#include "llvm/Support/JSON.h"

namespace mlir {
namespace kge {

llvm::json::Object signatureToJSON(const kge_runtime::Signature &signature);

} // namespace kge
} // namespace mlir

#endif // KGE_TARGET_SIGNATUREJSON_H
