//===- BatchedVectorTypes.td - bvec types ------------------*- tablegen -*-===//

#ifndef KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTORTYPES_TD
#define KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTORTYPES_TD

include "mlir/IR/AttrTypeBase.td"
include "Dialect/BatchedVector/IR/BatchedVectorDialect.td"
include "Dialect/BatchedVector/IR/BatchedVectorInterfaces.td"

class BatchedVector_Type<string name, string typeMnemonic,
                         list<Trait> traits = []>
    : TypeDef<BatchedVector_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

// A type with one item per edge. The parameter accessors `getBatchSize` and
// `getElementType` implement the interface; `getItemShape` is written by hand.
class BatchedVector_BatchedValueType<string name, string typeMnemonic>
    : BatchedVector_Type<name, typeMnemonic,
        [BatchedVector_BatchedTypeInterface]> {
  let extraClassDeclaration = [{
    ::llvm::SmallVector<int64_t> getItemShape() const;
  }];
}

def BatchedVector_TableType : BatchedVector_Type<"Table", "table"> {
  let summary = "an embedding table or a tensor of projection matrices";
  let description = [{
    A table of `N` rows held in device memory. A rank-2 table
    (`N x D`) holds one vector of length `D` per row and is read with
    `bvec.gather_vec`; a rank-3 table (`N x R x C`) holds one `R x C` matrix
    per row and is read with `bvec.gather_mat`. Every dimension is static or
    dynamic (`?`); the element type is a floating-point type.

    Example:

    ```mlir
    !bvec.table<14951x512xf32>      // entity embeddings
    !bvec.table<?x512x512xf32>      // projection matrices, one per relation
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType);
  let extraClassDeclaration = [{
    int64_t getNumRows() const { return getShape()[0]; }
    int64_t getRank() const { return getShape().size(); }
    /// True for a table of vectors (rank 2), false for matrices (rank 3).
    bool holdsVectors() const { return getRank() == 2; }
  }];
}

def BatchedVector_IndicesType : BatchedVector_BatchedValueType<"Indices", "indices"> {
  let summary = "a batch of row indices (cuKE's BInt)";
  let description = [{
    One signless integer (`i32` or `i64`) per edge of the batch, used to
    gather rows of a table.

    Example:

    ```mlir
    !bvec.indices<?xi64>
    !bvec.indices<4096xi32>
    ```
  }];
  let parameters = (ins "int64_t":$batchSize, "::mlir::Type":$elementType);
}

def BatchedVector_ScalarType : BatchedVector_BatchedValueType<"Scalar", "scalar"> {
  let summary = "a batch of scalars (cuKE's BFloat)";
  let description = [{
    One floating-point number per edge of the batch; scores, inner products
    and norms are scalars.

    Example:

    ```mlir
    !bvec.scalar<?xf32>
    ```
  }];
  let parameters = (ins "int64_t":$batchSize, "::mlir::Type":$elementType);
}

def BatchedVector_VecType : BatchedVector_BatchedValueType<"Vec", "vec"> {
  let summary = "a batch of vectors (cuKE's BVec)";
  let description = [{
    One vector of length `D` per edge of the batch. The batch size and the
    length are static or dynamic (`?`).

    Example:

    ```mlir
    !bvec.vec<?x128xf32>
    !bvec.vec<4096x?xf64>
    ```
  }];
  let parameters = (ins "int64_t":$batchSize, "int64_t":$length,
                        "::mlir::Type":$elementType);
}

def BatchedVector_MatType : BatchedVector_BatchedValueType<"Mat", "mat"> {
  let summary = "a batch of matrices (cuKE's BMat)";
  let description = [{
    One `R x C` matrix per edge of the batch, row-major: `vec_mul_mat`
    multiplies a row vector of length `R` by it.

    Example:

    ```mlir
    !bvec.mat<?x128x64xf32>
    ```
  }];
  let parameters = (ins "int64_t":$batchSize, "int64_t":$rows, "int64_t":$cols,
                        "::mlir::Type":$elementType);
}

def BatchedVector_AnyFloatValue : AnyTypeOf<
    [BatchedVector_ScalarType, BatchedVector_VecType, BatchedVector_MatType],
    "batch of scalars, vectors or matrices">;

#endif // KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTORTYPES_TD
