//===- Passes.td - tile transformation passes --------------*- tablegen -*-===//

#ifndef KGE_DIALECT_TILEITERATOR_TRANSFORMS_PASSES_TD
#define KGE_DIALECT_TILEITERATOR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TileRaiseLinalg : Pass<"tile-raise-linalg", "ModuleOp"> {
  let summary = "Raise matmul-like linalg operations on memrefs to tile.task";
  let description = [{
    Replaces every linalg operation on memrefs that is a matrix
    multiplication-like task with a `tile.task`, so that a compiler that
    emits `linalg` (named ops such as `linalg.matmul` or
    `linalg.matmul_transpose_b`, or `linalg.generic`) gets KGE's kernels.
    An operation is raised when it has three loops, two parallel and one
    reduction; its output is indexed by the two parallel loops; each input
    is indexed by at most one of them (GAMUT's operand kinds); and its body
    yields `combine(%out, v)` where `combine` is an add, multiply, maximum
    or minimum (`arith.addf/addi`, `mulf/muli`, `maximumf/maxsi`,
    `minimumf/minsi`), `%out` the output's element and `v` a value computed
    from the inputs alone. The task's inner computation computes `v`, its
    accumulator is `combine`, and its output is dense with `update`
    (`linalg` accumulates into its output). Other operations are left as
    they are.

    Example:

    ```mlir
    // Before
    linalg.matmul ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)
                  outs(%C : memref<?x?xf32>)
    // After
    tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)
        outs(%C : memref<?x?xf32>)
        maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>]
        accumulate add output dense {update} inner { ... }
    ```
  }];
  let dependentDialects = ["::mlir::tile::TileIteratorDialect"];
}

#endif // KGE_DIALECT_TILEITERATOR_TRANSFORMS_PASSES_TD
