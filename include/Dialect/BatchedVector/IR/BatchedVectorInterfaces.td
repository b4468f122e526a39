//===- BatchedVectorInterfaces.td - bvec interfaces --------*- tablegen -*-===//

#ifndef KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTORINTERFACES_TD
#define KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTORINTERFACES_TD

include "mlir/IR/OpBase.td"

def BatchedVector_BatchedTypeInterface : TypeInterface<"BatchedType"> {
  let cppNamespace = "::mlir::bvec";
  let description = [{
    A type that holds one item per edge of a batch: the batch size is the
    leading dimension and is shared by every batched value of a `bvec.func`.
  }];
  let methods = [
    InterfaceMethod<"Returns the batch size, or ShapedType::kDynamic.",
                    "int64_t", "getBatchSize">,
    InterfaceMethod<"Returns the element type of the items.",
                    "::mlir::Type", "getElementType">,
    InterfaceMethod<"Returns the shape of one item (empty for scalars).",
                    "::llvm::SmallVector<int64_t>", "getItemShape">,
  ];
}

#endif // KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTORINTERFACES_TD
