//===- BatchedVectorDialect.td - bvec dialect definition ---*- tablegen -*-===//
//
// The `bvec` dialect: batched-vector operators of KGE score functions.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTORDIALECT_TD
#define KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTORDIALECT_TD

include "mlir/IR/DialectBase.td"

def BatchedVector_Dialect : Dialect {
  let name = "bvec";
  let cppNamespace = "::mlir::bvec";
  let summary = "Batched-vector operators for knowledge-graph-embedding score functions";
  let description = [{
    The `bvec` dialect expresses a knowledge-graph-embedding (KGE) score
    function as a program over *batches*: every value holds one item per
    edge of a sampled batch of `B` edges. An item is a vector (`!bvec.vec`),
    a matrix (`!bvec.mat`) or a scalar (`!bvec.scalar`). Items are produced
    by gathering rows of embedding tables (`!bvec.table`) with index arrays
    (`!bvec.indices`) and combined by the batched operators of cuKE:
    elementwise arithmetic, `scal_mul_vec` (bsv), `vec_mul_vec` (bvv),
    `vec_mul_mat` (bmv), `vec_outer_vec` (bov), norms and reductions.

    Because every operator consumes and produces whole batches in the same
    order, any composition of `bvec` operators can be fused into a single
    kernel; the dialect keeps that property by construction (all values of a
    `bvec.func` share one batch size).

    Arithmetic assumes finite operands, as every KGE system does: patterns
    such as `x - x -> 0` are applied by canonicalization.
  }];
  let useDefaultTypePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    void registerTypes();
  }];
}

#endif // KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTORDIALECT_TD
