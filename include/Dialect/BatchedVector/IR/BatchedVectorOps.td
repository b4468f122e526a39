//===- BatchedVectorOps.td - bvec operations ---------------*- tablegen -*-===//
//
// The operators of cuKE's Table III, elementwise arithmetic, norms,
// reductions and the function-level container `bvec.func`.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTOROPS_TD
#define KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTOROPS_TD

include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "Dialect/BatchedVector/IR/BatchedVectorTypes.td"

class BatchedVector_Op<string mnemonic, list<Trait> traits = []>
    : Op<BatchedVector_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def BatchedVector_ReductionKind : I32EnumAttr<"ReductionKind",
    "how `bvec.reduce` combines the elements of a vector", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"mean", 1>,
      I32EnumAttrCase<"max", 2>,
      I32EnumAttrCase<"min", 3>,
    ]> {
  let cppNamespace = "::mlir::bvec";
}

//===----------------------------------------------------------------------===//
// bvec.func / bvec.return
//===----------------------------------------------------------------------===//

def BatchedVector_FuncOp : BatchedVector_Op<"func", [
    FunctionOpInterface, IsolatedFromAbove, OpAsmOpInterface,
    SingleBlock
  ]> {
  let summary = "a score function: named tables and index arrays in, batches out";
  let description = [{
    The unit KGE compiles: one score function (or gradient function) over a
    batch of `B` edges. Every argument is a table (`!bvec.table`), an index
    array (`!bvec.indices`) or a per-edge input (`!bvec.scalar`: one value
    per edge, such as a label, a weight, or the gradient seed of a function
    that `bvec-differentiate` derives); every result is a batch of scalars,
    vectors or matrices. Arguments and results are *named*: the argument names are the
    SSA names written in the signature and the result names are written
    before their types. The names are the function's public interface: the
    CPU runner, the kernel-bundle manifest and the Python front end address
    parameters by them.

    All batched values of the function (index arrays, intermediate values,
    results) share one batch size, static or dynamic; this is what lets any
    composition of `bvec` operators fuse into one kernel.

    Example (TransE with the 2-norm):

    ```mlir
    bvec.func @transe(%Eemb: !bvec.table<?x128xf32>, %Remb: !bvec.table<?x128xf32>,
                      %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                      %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
      %eh = bvec.gather_vec %Eemb[%h] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
      %et = bvec.gather_vec %Eemb[%t] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
      %er = bvec.gather_vec %Remb[%r] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
      %d = bvec.sub %eh, %et : !bvec.vec<?x128xf32>
      %s = bvec.add %d, %er : !bvec.vec<?x128xf32>
      %n = bvec.norm %s, p = 2 : !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
      bvec.return %n : !bvec.scalar<?xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       StrArrayAttr:$arg_names,
                       StrArrayAttr:$result_names,
                       OptionalAttr<StrAttr>:$sym_visibility,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);

  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
      "::mlir::FunctionType":$type,
      "::llvm::ArrayRef<::llvm::StringRef>":$argNames,
      "::llvm::ArrayRef<::llvm::StringRef>":$resultNames)>];

  let extraClassDeclaration = [{
    //===------------------------------------------------------------------===//
    // FunctionOpInterface
    //===------------------------------------------------------------------===//
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }

    //===------------------------------------------------------------------===//
    // OpAsmOpInterface
    //===------------------------------------------------------------------===//
    void getAsmBlockArgumentNames(::mlir::Region &region,
                                  ::mlir::OpAsmSetValueNameFn setNameFn);

    //===------------------------------------------------------------------===//
    // Helpers
    //===------------------------------------------------------------------===//
    ::llvm::StringRef getArgName(unsigned i) {
      return ::llvm::cast<::mlir::StringAttr>(getArgNames()[i]).getValue();
    }
    ::llvm::StringRef getResultName(unsigned i) {
      return ::llvm::cast<::mlir::StringAttr>(getResultNames()[i]).getValue();
    }
    /// The entry block argument called `name`, or null.
    ::mlir::BlockArgument getArgumentByName(::llvm::StringRef name);
    /// The batch size shared by every batched value (ShapedType::kDynamic
    /// when dynamic).
    int64_t getBatchSize();
    /// The terminator.
    ::mlir::Operation *getReturn() { return getBody().front().getTerminator(); }
  }];
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def BatchedVector_ReturnOp : BatchedVector_Op<"return", [
    Pure, HasParent<"FuncOp">, ReturnLike, Terminator
  ]> {
  let summary = "returns the results of a `bvec.func`";
  let description = [{
    Ends a `bvec.func`; its operands are the function's results, in order.

    Example:

    ```mlir
    bvec.return %score : !bvec.scalar<?xf32>
    ```
  }];
  let arguments = (ins Variadic<BatchedVector_AnyFloatValue>:$operands);
  let assemblyFormat =
      "attr-dict ($operands^ `:` qualified(type($operands)))?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gathers
//===----------------------------------------------------------------------===//

def BatchedVector_GatherVecOp : BatchedVector_Op<"gather_vec", [Pure]> {
  let summary = "gathers one row of an embedding table per edge";
  let description = [{
    `result[b] = table[indices[b]]` for every edge `b` of the batch
    (cuKE's `gather_vec`, written `Eemb[h]` in a score function). The table
    must have rank 2 and the result length must equal its row length.
    Indices outside `[0, N)` are rejected by the runner before any kernel
    runs. The result has the table's element type, or f32 for a table in
    half precision (f16, bf16): its rows are read in half precision, half
    the bytes, and widened exactly, so that the function computes in f32.

    Example:

    ```mlir
    %eh = bvec.gather_vec %Eemb[%h] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
    %th = bvec.gather_vec %Ebf16[%t] : !bvec.table<?x128xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
    ```
  }];
  let arguments = (ins BatchedVector_TableType:$table,
                       BatchedVector_IndicesType:$indices);
  let results = (outs BatchedVector_VecType:$result);
  let assemblyFormat = [{
    $table `[` $indices `]` attr-dict `:` qualified(type($table)) `,` qualified(type($indices))
    `->` qualified(type($result))
  }];
  let hasVerifier = 1;
  let hasCanonicalizeMethod = 1;
}

def BatchedVector_GatherMatOp : BatchedVector_Op<"gather_mat", [Pure]> {
  let summary = "gathers one matrix of a projection tensor per edge";
  let description = [{
    `result[b] = table[indices[b]]` for a rank-3 table of matrices
    (cuKE's `gather_mat`, written `Pm[r]`). Like `bvec.gather_vec`, it
    widens a table in half precision to f32.

    Example:

    ```mlir
    %pm = bvec.gather_mat %Pm[%r] : !bvec.table<?x128x64xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x128x64xf32>
    ```
  }];
  let arguments = (ins BatchedVector_TableType:$table,
                       BatchedVector_IndicesType:$indices);
  let results = (outs BatchedVector_MatType:$result);
  let assemblyFormat = [{
    $table `[` $indices `]` attr-dict `:` qualified(type($table)) `,` qualified(type($indices))
    `->` qualified(type($result))
  }];
  let hasVerifier = 1;
  let hasCanonicalizeMethod = 1;
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def BatchedVector_FloatValueAttr : Attr<
    CPred<"::llvm::isa<::mlir::FloatAttr>($_self)">, "floating-point value"> {
  let storageType = "::mlir::FloatAttr";
  let returnType = "::llvm::APFloat";
  let convertFromStorage = "$_self.getValue()";
}

def BatchedVector_ConstantOp : BatchedVector_Op<"constant",
    [ConstantLike, Pure]> {
  let summary = "a batch whose every element is one constant";
  let description = [{
    Every element of every item of the batch equals `value`. The batch size
    is the function's; a dynamic item size is the size of the values the
    constant is combined with (`x + 1e-9` on a vector of dynamic length),
    and a constant whose size nothing determines is refused when the
    function is compiled. The value is written as a floating-point literal
    and stored with the element type of the result.

    Example:

    ```mlir
    %two = bvec.constant 2.0 : !bvec.scalar<?xf32>
    %zero = bvec.constant 0.0 : !bvec.vec<?x128xf32>
    %eps = bvec.constant 1.0e-09 : !bvec.vec<?x?xf32>
    %safe = bvec.add %squares, %eps : !bvec.vec<?x?xf32>
    ```
  }];
  let arguments = (ins BatchedVector_FloatValueAttr:$value);
  let results = (outs BatchedVector_AnyFloatValue:$result);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasFolder = 1;
  let builders = [OpBuilder<(ins "::mlir::Type":$type, "double":$value)>];
  let extraClassDeclaration = [{
    /// True when folding may create a constant of `type`: a batched float
    /// type whose item dimensions are static (a folded constant has no
    /// operation to take a dynamic size from).
    static bool isMaterializable(::mlir::Type type);
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic
//===----------------------------------------------------------------------===//

class BatchedVector_ElementwiseBinaryOp<string mnemonic, string expr,
                                        list<Trait> traits = []>
    : BatchedVector_Op<mnemonic,
        !listconcat(traits, [Pure, SameOperandsAndResultType])> {
  let summary = "elementwise `" # expr # "` of two batches";
  let description = [{
    Computes `}] # expr # [{` for every element of every item. Both
    operands and the result have the same type: batches of scalars, of
    vectors of one length, or of matrices of one shape.

    Example:

    ```mlir
    %c = bvec.}] # mnemonic # [{ %a, %b : !bvec.vec<?x128xf32>
    ```
  }];
  let arguments = (ins BatchedVector_AnyFloatValue:$lhs,
                       BatchedVector_AnyFloatValue:$rhs);
  let results = (outs BatchedVector_AnyFloatValue:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` qualified(type($result))";
  let hasFolder = 1;
}

def BatchedVector_AddOp
    : BatchedVector_ElementwiseBinaryOp<"add", "lhs + rhs", [Commutative]> {
  let hasCanonicalizer = 1;
}
def BatchedVector_SubOp
    : BatchedVector_ElementwiseBinaryOp<"sub", "lhs - rhs"> {
  let hasCanonicalizer = 1;
}
def BatchedVector_MulOp
    : BatchedVector_ElementwiseBinaryOp<"mul", "lhs * rhs", [Commutative]>;
def BatchedVector_DivOp
    : BatchedVector_ElementwiseBinaryOp<"div", "lhs / rhs">;
def BatchedVector_MaxOp
    : BatchedVector_ElementwiseBinaryOp<"max", "max(lhs, rhs)", [Commutative]>;
def BatchedVector_MinOp
    : BatchedVector_ElementwiseBinaryOp<"min", "min(lhs, rhs)", [Commutative]>;

class BatchedVector_ElementwiseUnaryOp<string mnemonic, string expr,
                                       list<Trait> traits = []>
    : BatchedVector_Op<mnemonic,
        !listconcat(traits, [Pure, SameOperandsAndResultType])> {
  let summary = "elementwise `" # expr # "` of a batch";
  let description = [{
    Computes `}] # expr # [{` for every element of every item.

    Example:

    ```mlir
    %y = bvec.}] # mnemonic # [{ %x : !bvec.vec<?x128xf32>
    ```
  }];
  let arguments = (ins BatchedVector_AnyFloatValue:$input);
  let results = (outs BatchedVector_AnyFloatValue:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($result))";
  let hasFolder = 1;
}

def BatchedVector_NegOp : BatchedVector_ElementwiseUnaryOp<"neg", "-x">;
def BatchedVector_AbsOp : BatchedVector_ElementwiseUnaryOp<"abs", "|x|">;
def BatchedVector_ExpOp : BatchedVector_ElementwiseUnaryOp<"exp", "exp(x)">;
def BatchedVector_LogOp : BatchedVector_ElementwiseUnaryOp<"log", "log(x)">;
def BatchedVector_SqrtOp : BatchedVector_ElementwiseUnaryOp<"sqrt", "sqrt(x)">;
def BatchedVector_TanhOp : BatchedVector_ElementwiseUnaryOp<"tanh", "tanh(x)">;
def BatchedVector_SigmoidOp
    : BatchedVector_ElementwiseUnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def BatchedVector_SinOp : BatchedVector_ElementwiseUnaryOp<"sin", "sin(x)">;
def BatchedVector_CosOp : BatchedVector_ElementwiseUnaryOp<"cos", "cos(x)">;
def BatchedVector_SignOp : BatchedVector_ElementwiseUnaryOp<"sign", "sign(x)"> {
  let description = [{
    Computes `sign(x)` for every element of every item: -1, 0 or 1, with
    `sign(0) = 0`. It is the derivative of `|x|` that `bvec-differentiate`
    uses (0 at 0, a subgradient), and the gradient of the 1-norm.

    Example:

    ```mlir
    %s = bvec.sign %x : !bvec.vec<?x128xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Batched products (cuKE's bsv, bvv, bmv, bov)
//===----------------------------------------------------------------------===//

def BatchedVector_ScalMulVecOp : BatchedVector_Op<"scal_mul_vec", [Pure]> {
  let summary = "scales each vector by its edge's scalar (bsv)";
  let description = [{
    `result[b] = scalar[b] * vec[b]`.

    Example (the projection term of TransH, `(Pv[r] . d) * Pv[r]`):

    ```mlir
    %p = bvec.scal_mul_vec %s, %pv : !bvec.scalar<?xf32>, !bvec.vec<?x128xf32> -> !bvec.vec<?x128xf32>
    ```
  }];
  let arguments = (ins BatchedVector_ScalarType:$scalar,
                       BatchedVector_VecType:$vec);
  let results = (outs BatchedVector_VecType:$result);
  let assemblyFormat = [{
    $scalar `,` $vec attr-dict `:` qualified(type($scalar)) `,` qualified(type($vec)) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def BatchedVector_VecMulVecOp : BatchedVector_Op<"vec_mul_vec",
    [Pure, Commutative]> {
  let summary = "inner product of two vectors per edge (bvv)";
  let description = [{
    `result[b] = sum_k lhs[b][k] * rhs[b][k]`.

    Example (DistMult, `<h * r, t>`):

    ```mlir
    %s = bvec.vec_mul_vec %hr, %et : !bvec.vec<?x128xf32>, !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
    ```
  }];
  let arguments = (ins BatchedVector_VecType:$lhs, BatchedVector_VecType:$rhs);
  let results = (outs BatchedVector_ScalarType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` qualified(type($lhs)) `,` qualified(type($rhs)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def BatchedVector_VecMulMatOp : BatchedVector_Op<"vec_mul_mat", [Pure]> {
  let summary = "row vector times matrix per edge (bmv)";
  let description = [{
    `result[b][j] = sum_k vec[b][k] * mat[b][k][j]`: the vector (length `R`)
    is multiplied from the left by an `R x C` matrix, giving length `C`.

    Example (the projection of TransR, `(h - t) . Pm[r]`):

    ```mlir
    %p = bvec.vec_mul_mat %d, %pm : !bvec.vec<?x128xf32>, !bvec.mat<?x128x64xf32> -> !bvec.vec<?x64xf32>
    ```
  }];
  let arguments = (ins BatchedVector_VecType:$vec, BatchedVector_MatType:$mat);
  let results = (outs BatchedVector_VecType:$result);
  let assemblyFormat = [{
    $vec `,` $mat attr-dict `:` qualified(type($vec)) `,` qualified(type($mat)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def BatchedVector_MatMulVecOp : BatchedVector_Op<"mat_mul_vec", [Pure]> {
  let summary = "matrix times column vector per edge";
  let description = [{
    `result[b][i] = sum_j mat[b][i][j] * vec[b][j]`: an `R x C` matrix
    times a vector of length `C`, giving length `R`. It is the transpose
    of `bvec.vec_mul_mat` and appears in gradient functions (the gradient
    of TransR with respect to the projected vector).

    Example:

    ```mlir
    %g = bvec.mat_mul_vec %pm, %dout : !bvec.mat<?x128x64xf32>, !bvec.vec<?x64xf32> -> !bvec.vec<?x128xf32>
    ```
  }];
  let arguments = (ins BatchedVector_MatType:$mat, BatchedVector_VecType:$vec);
  let results = (outs BatchedVector_VecType:$result);
  let assemblyFormat = [{
    $mat `,` $vec attr-dict `:` qualified(type($mat)) `,` qualified(type($vec)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def BatchedVector_VecOuterVecOp : BatchedVector_Op<"vec_outer_vec", [Pure]> {
  let summary = "outer product of two vectors per edge (bov)";
  let description = [{
    `result[b][i][j] = lhs[b][i] * rhs[b][j]`. It appears in gradient
    functions (the gradient of TransR with respect to `Pm[r]`).

    Example:

    ```mlir
    %g = bvec.vec_outer_vec %d, %dout : !bvec.vec<?x128xf32>, !bvec.vec<?x64xf32> -> !bvec.mat<?x128x64xf32>
    ```
  }];
  let arguments = (ins BatchedVector_VecType:$lhs, BatchedVector_VecType:$rhs);
  let results = (outs BatchedVector_MatType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` qualified(type($lhs)) `,` qualified(type($rhs)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Norms, reductions, slices
//===----------------------------------------------------------------------===//

def BatchedVector_NormOp : BatchedVector_Op<"norm", [Pure]> {
  let summary = "p-norm of each vector (p = 1 or 2)";
  let description = [{
    `result[b] = (sum_k |input[b][k]|^p)^(1/p)` for `p = 1` or `p = 2`.

    Example:

    ```mlir
    %n = bvec.norm %v, p = 1 : !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
    ```
  }];
  let arguments = (ins BatchedVector_VecType:$input, I64Attr:$p);
  let results = (outs BatchedVector_ScalarType:$result);
  let assemblyFormat = [{
    $input `,` `p` `=` $p attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def BatchedVector_ReduceOp : BatchedVector_Op<"reduce", [Pure]> {
  let summary = "reduces each vector to a scalar (sum, mean, max, min)";
  let description = [{
    Combines the elements of each vector with the given kind.

    Example (the real part of ComplEx ends with a sum):

    ```mlir
    %s = bvec.reduce sum %v : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
    ```
  }];
  let arguments = (ins BatchedVector_ReductionKind:$kind,
                       BatchedVector_VecType:$input);
  let results = (outs BatchedVector_ScalarType:$result);
  let assemblyFormat = [{
    $kind $input attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def BatchedVector_SliceOp : BatchedVector_Op<"slice", [Pure]> {
  let summary = "a contiguous part of each vector";
  let description = [{
    `result[b][k] = input[b][offset + k]` for `k` in `[0, L)`, where `L` is
    the result length. The input length must be static and
    `offset + L` at most that length. Complex-valued models (ComplEx,
    RotatE) store the real and imaginary parts as the two halves of a row.
    A slice of a gathered row is a gather of a column range: the GPU
    kernel reads it from the table at the slice's offset, without a copy
    of the whole row.

    Example:

    ```mlir
    %im = bvec.slice %v[64] : !bvec.vec<?x128xf32> -> !bvec.vec<?x64xf32>
    ```
  }];
  let arguments = (ins BatchedVector_VecType:$input, I64Attr:$offset);
  let results = (outs BatchedVector_VecType:$result);
  let assemblyFormat = [{
    $input `[` $offset `]` attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def BatchedVector_PadOp : BatchedVector_Op<"pad", [Pure]> {
  let summary = "places each vector inside a longer vector of zeros";
  let description = [{
    `result[b][k] = input[b][k - offset]` for `k` in `[offset, offset + L)`
    and 0 elsewhere, where `L` is the input length: the transpose of
    `bvec.slice`, which it undoes in gradient functions. Both lengths must
    be static and `offset + L` at most the result length.

    Example (the gradient of the imaginary half of a ComplEx row):

    ```mlir
    %g = bvec.pad %dim[64] : !bvec.vec<?x64xf32> -> !bvec.vec<?x128xf32>
    ```
  }];
  let arguments = (ins BatchedVector_VecType:$input, I64Attr:$offset);
  let results = (outs BatchedVector_VecType:$result);
  let assemblyFormat = [{
    $input `[` $offset `]` attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

#endif // KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTOROPS_TD
