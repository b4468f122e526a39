//===- SignatureJSON.cpp - signatures as JSON -----------------------------===//

#include "Target/SignatureJSON.h"

using namespace mlir;
using namespace mlir::kge;

llvm::json::Object
mlir::kge::signatureToJSON(const kge_runtime::Signature &signature) {
  llvm::json::Array params;
  for (const kge_runtime::Parameter &param : signature.params) {
    llvm::json::Array shape;
    for (const kge_runtime::Dim &dim : param.shape) {
      if (dim.isStatic())
        shape.push_back(dim.size);
      else
        shape.push_back(dim.symbol);
    }
    llvm::json::Object object{{"name", param.name},
                              {"role", kge_runtime::roleName(param.role)},
                              {"dtype", kge_runtime::dtypeName(param.dtype)},
                              {"shape", std::move(shape)}};
    if (param.role == kge_runtime::ParamRole::Indices) {
      llvm::json::Array indexes;
      for (unsigned table : param.indexedTables)
        indexes.push_back(signature.params[table].name);
      object["indexes"] = std::move(indexes);
      if (param.indexedDim != 0)
        object["indexed_dim"] = static_cast<int64_t>(param.indexedDim);
    }
    params.push_back(std::move(object));
  }
  return llvm::json::Object{{"name", signature.name},
                            {"params", std::move(params)}};
}
