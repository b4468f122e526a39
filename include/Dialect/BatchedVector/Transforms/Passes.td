//===- Passes.td - bvec transformation passes --------------*- tablegen -*-===//

#ifndef KGE_DIALECT_BATCHEDVECTOR_TRANSFORMS_PASSES_TD
#define KGE_DIALECT_BATCHEDVECTOR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def BatchedVectorSpecialize : Pass<"bvec-specialize", "ModuleOp"> {
  let summary = "Give dynamic sizes of bvec functions static values";
  let description = [{
    Replaces the dynamic sizes named in `sizes` by static ones in every
    `bvec.func`. Sizes are named by the symbols of the function's signature
    (`kge-translate --bvec-to-signature` prints them): `B` for the batch,
    `N_<table>` for row counts, `D_<table>` for the length of a table of
    vectors, `D1_<table>`/`D2_<table>` for matrix shapes. Every dimension of
    every value in the class of a symbol becomes static, so the function
    stays well typed. Static lengths let the GPU lowering use 16-byte loads
    and unroll loops.

    Example: `-bvec-specialize="sizes=D_Eemb=512,D_Remb=256"`.
  }];
  let options = [
    ListOption<"sizes", "sizes", "std::string",
               "SYMBOL=VALUE pairs, e.g. D_Eemb=512">,
  ];
}

def BatchedVectorDifferentiate : Pass<"bvec-differentiate", "ModuleOp"> {
  let summary = "Derive the gradient function of each bvec function (reverse mode)";
  let description = [{
    For every `bvec.func @f` (with scalar results), adds `bvec.func @f_grad`:
    the reverse-mode derivative of `sum_b sum_r d_r[b] * r[b]` over the
    results `r` of `f`, given one per-edge seed `d_<r>` (`!bvec.scalar`)
    per result, with respect to the rows that `f` gathers from its tables.
    `@f_grad` takes `f`'s arguments followed by the seeds and returns one
    batch per (table, index array) pair that `f` gathers through, named
    `d_<table>_<indices>`: row `b` is the gradient of the row
    `table[indices[b]]` that edge `b` read (a vector for a table of
    vectors, a matrix for a table of matrices). These are row-sparse
    gradients: the gradient of the table is their sum scattered to the
    rows `indices[b]`, which the caller does (an index-add, a segmented
    sum, or a sparse optimizer update) without a dense gradient table.

    The derivative recomputes what it needs of the forward computation in
    the same function, so `@f_grad` is one fused kernel like `@f`. Rules
    that are not smooth everywhere take these values:

    - `abs` and the 1-norm: `sign(x)`, 0 at `x = 0`;
    - the 2-norm: `x / max(|x|, 1e-20)`, so 0 at `x = 0`;
    - `max`/`min` of two batches: the gradient goes to the larger (smaller)
      operand, half to each where they are equal;
    - `reduce max`/`reduce min`: shared equally by the elements equal to
      the extreme (as `torch.amax`);
    - `sqrt` at 0 and `log` at 0 follow IEEE arithmetic (infinite).

    A table of matrices (TransR's and RESCAL's relation matrices) gets a
    matrix per edge, the sum of outer products of vectors that its
    `vec_mul_mat` / `mat_mul_vec` uses give. For training batches that is
    `B x R x C` floats; with `factor-matrices` the gradient function
    returns the factors instead, two vectors per term `n` of the sum,
    `d_<table>_<indices>_u<n>` (length `R`) and `d_<table>_<indices>_v<n>`
    (length `C`): row `b`'s gradient is the sum over `n` of `u<n>[b] (x)
    v<n>[b]`, and the table's gradient their sum per row `indices[b]` — a
    segment matrix product the caller runs (`kge.tile.per_key`). A matrix
    whose gradient is not such a sum (an elementwise product of matrices)
    is refused with a diagnostic.

    Only tables of floating-point rows are differentiated; `wrt` restricts
    the derivative to the named tables (the others are treated as
    constants, e.g. frozen embeddings; functions without any of them are
    left alone, and a name no function has is refused). Functions named in
    `functions` (all when empty) are differentiated; a function whose
    gradient function name is taken, whose results are not scalars, or
    that gathers from no table of floats is refused with a diagnostic.

    Example (TransE, `-bvec-differentiate`):

    ```mlir
    bvec.func @transe_grad(%Eemb: ..., %Remb: ..., %h: ..., %r: ..., %t: ...,
                           %d_score: !bvec.scalar<?xf32>)
        -> (d_Eemb_h: !bvec.vec<?x128xf32>, d_Eemb_t: !bvec.vec<?x128xf32>,
            d_Remb_r: !bvec.vec<?x128xf32>)
    ```
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "bvec functions to differentiate (empty: all)">,
    ListOption<"wrt", "wrt", "std::string",
               "tables to differentiate with respect to (empty: all tables of floats)">,
    Option<"factorMatrices", "factor-matrices", "bool", /*default=*/"false",
           "return a table of matrices' gradient as the factors of its outer "
           "products (d_<table>_<indices>_u<n>, _v<n>) instead of a matrix per edge">,
  ];
}

def BatchedVectorFuse : Pass<"bvec-fuse", "ModuleOp"> {
  let summary = "Plan one fused GPU kernel per bvec function";
  let description = [{
    Decides how each `bvec.func` becomes a single kernel and records the
    decisions as attributes that `convert-bvec-to-gpu` implements (cuKE,
    Section V):

    - *stages*: every operator gets `bvec.stage`, the pass over the
      embedding length in which it is computed. Operators whose inputs are
      complete reductions (a scalar from `vec_mul_vec`, `norm`, `reduce`)
      start a later stage; everything else of a stage runs in one loop over
      the length, chunk by chunk.
    - *materialization*: vectors that must be read at arbitrary positions
      (the input of `vec_mul_mat`, `vec_outer_vec` and `slice`) get
      `bvec.materialize`: they are kept whole in shared memory for the
      block's tile of edges. A slice of a gathered row is not such a read: it
      is computed in the gather's stage, from the table at the slice's offset,
      and its row is not materialized for it.
    - *layout*: the function gets `bvec.kernel`, a dictionary with the tile
      (edges per thread block), the warps per block, the vector width of
      loads, and the edge reordering: edges sorted by the index array of the
      projection matrices (`reorder_key`) within groups of
      `reorder_group` tiles (0: the whole batch; 1: no reordering).

    Options left at 0 or empty are chosen by the pass: 8 warps, each with
    as many edges (at most 4) as keep 16 row loads per lane in flight
    (4 for up to 4 gathers, so tiles of 32 edges; 2 for ComplEx's 6; an
    elementwise function of vectors counts like 2 loads and a square root
    like 1, so RotatE gets 1; the tile is the warps times those edges when
    only `warps` is given),
    16 edges and 16 warps for functions with `vec_mul_mat`, 16-byte loads
    when every length is a static multiple of 4, a whole-batch reordering
    by the matrix index when the function gathers matrices, and
    `carry_floats = 128`: vectors that a later stage reads again stay in
    registers when they need at most 128 floats per lane, and
    `blocks_per_sm` (the kernel's `nvvm.minctasm`) as many blocks per
    multiprocessor as leave each thread 64 registers for functions without
    `vec_mul_mat` (4 for 8 warps), 0 (no request) for those with it,
    for functions without matrix products, a whole-batch sort by entity
    (`reorder_key`: the first index array of the table that the most index
    arrays gather from, e.g. `h`) that runs only for batches of at least
    `reorder_min_batch = 65536` edges with at least `reorder_min_reuse = 16`
    edges per row of that table (B >= 16 x entities: rows repeat often
    enough for the sort to pay; below, the batch is scored in its own order
    and the kernel is told so) and rows of at least `reorder_min_row = 512`
    elements (narrower rows gain nothing from it: a table of static rows
    that narrow is never sorted, dynamic ones are checked per batch),
    unless the function has elementwise
    functions of vectors (bound by their arithmetic: never sorted), marked
    `reorder_auto = 1` (negative mode that corrupts the key sorts by another
    index array of the same table instead, e.g. `t`); with a
    reorder key given, or for functions with matrix products, both are 0
    unless given (every batch is sorted),
    and
    `deterministic = 1`: identical inputs give bitwise-identical results
    (0: the sort's atomics may decide which products of a batch sorted by
    matrix run on tensor cores, and so their last bits).

    Example output (TransR):

    ```mlir
    bvec.func @transr(...) -> (score: ...) attributes {bvec.kernel = {
        blocks_per_sm = 0 : i64, carry_floats = 128 : i64,
        deterministic = 1 : i64, matrix_math = "tf32x3",
        reorder_group = 0 : i64, reorder_key = "r", reorder_min_batch = 0 : i64,
        stage_repeats = 101 : i64, stages = 2 : i64, tile = 16 : i64,
        vector_width = 1 : i64, warps = 16 : i64}} {
      %diff = bvec.sub %head, %tail {bvec.materialize, bvec.stage = 0 : i64} ...
      %projected = bvec.vec_mul_mat %diff, %proj {bvec.stage = 1 : i64} ...
    ```
  }];
  let options = [
    Option<"tile", "tile", "int64_t", /*default=*/"0",
           "edges per thread block (0: choose)">,
    Option<"warps", "warps", "int64_t", /*default=*/"0",
           "warps per thread block (0: choose)">,
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"0",
           "elements per lane per load: 1 or 4 (0: choose)">,
    Option<"reorderKey", "reorder-key", "std::string", /*default=*/"\"\"",
           "index array to sort edges by (empty: choose)">,
    Option<"reorderGroup", "reorder-group", "int64_t", /*default=*/"-1",
           "sort within groups of this many tiles; 0: whole batch, 1: none "
           "(-1: choose)">,
    Option<"stageRepeats", "stage-repeats", "int64_t", /*default=*/"-1",
           "stage a gather's rows in shared memory in tiles where at least "
           "this percentage of the edges repeat a row; 0: always, 101: never "
           "(-1: choose)">,
    Option<"matrixMath", "matrix-math", "std::string", /*default=*/"\"\"",
           "matrix products over shared matrices: tf32x3 (tensor cores, "
           "FP32 accuracy) or fma (empty: choose)">,
    Option<"carryFloats", "carry-floats", "int64_t", /*default=*/"-1",
           "keep vectors that later stages read again in registers when "
           "they need at most this many floats per lane; 0: never "
           "(-1: choose)">,
    Option<"blocksPerSM", "blocks-per-sm", "int64_t", /*default=*/"-1",
           "thread blocks per multiprocessor to compile for (registers per "
           "thread: 64K / (blocks x threads), at least 64); 0: no request "
           "(-1: choose)">,
    Option<"reorderMinBatch", "reorder-min-batch", "int64_t", /*default=*/"-1",
           "with a whole-batch sort, sort only batches of at least this many "
           "edges; 0: always (-1: choose)">,
    Option<"reorderMinReuse", "reorder-min-reuse", "int64_t",
           /*default=*/"-1",
           "with a whole-batch sort, sort only batches with at least this "
           "many edges per row of the key's table; 0: no such condition "
           "(-1: choose)">,
    Option<"reorderMinRow", "reorder-min-row", "int64_t", /*default=*/"-1",
           "with a whole-batch sort, sort only when the rows of the key's "
           "table have at least this many elements; 0: no such condition "
           "(-1: choose; the three thresholds are ignored by functions that "
           "the layout does not sort)">,
    Option<"deterministic", "deterministic", "int64_t", /*default=*/"-1",
           "1: bitwise-identical results for identical inputs; 0: not "
           "guaranteed (-1: choose, 1)">,
  ];
}

def BatchedVectorRaiseLinalg : Pass<"bvec-raise-linalg", "ModuleOp"> {
  let summary = "Raise score functions written in linalg and tensor to bvec";
  let description = [{
    Replaces every `func.func` whose whole body is a score function on
    tensors with a `bvec.func` of the same name, so that a compiler that
    emits `linalg` (torch-mlir's lowering of `aten.embedding` and
    elementwise and reduction operations, for one) gets KGE's fused kernels.
    A function is raised when:

    - each argument is a table (a rank-2 floating-point tensor, `N x D`) or
      an index array (a rank-1 `i32`/`i64` tensor, `B`), and its one result
      is a rank-1 floating-point tensor (`B`, one score per edge);
    - its operations are, besides `tensor.empty` and `linalg.fill`
      (initial values):
      - gathers: a `linalg.generic` over `(b, d)` with the index array as
        its input (`(b, d) -> (b)`) whose body extracts
        `table[index_cast(i), linalg.index 1]` (`tensor.extract`);
      - elementwise computations: a `linalg.generic` with parallel loops
        and identity maps (a rank-1 input broadcast along `d` multiplies
        vectors), `linalg.add/sub/mul/div/max/min`, or `arith`/`math`
        operations on whole tensors, whose bodies are `arith.addf/subf/
        mulf/divf/negf/maximumf/minimumf`, `math.exp/log/sqrt/tanh/sin/
        cos/absf` and float constants;
      - reductions along `d`: a `linalg.generic` with loops `(parallel,
        reduction)` and output map `(b, d) -> (b)` whose body combines an
        elementwise value with `addf`, `maximumf` or `minimumf` into an
        output initialized by `linalg.fill` with 0, -inf or +inf (an
        inner product, `(a * b)` summed, becomes `bvec.vec_mul_vec`), or
        `linalg.reduce` along dimension 1.

    Anything else leaves the function as it is, with a remark naming the
    operation that stopped it. The `bvec.func`'s parameters are named after
    the function's `kge.name` argument attributes, else `arg0`, `arg1`, ...;
    its result is `score`.

    Example:

    ```mlir
    // Before: DistMult as torch-mlir lowers it (gathers abbreviated)
    %hr = linalg.mul ins(%head, %rel : tensor<?x64xf32>, tensor<?x64xf32>)
                     outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
    %s = linalg.generic {indexing_maps = [#id, #id, #row],
                         iterator_types = ["parallel", "reduction"]}
        ins(%hr, %tail : ...) outs(%zero : tensor<?xf32>) {
      ^bb0(%a: f32, %b: f32, %acc: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.addf %p, %acc : f32
        linalg.yield %q : f32
    } -> tensor<?xf32>
    // After
    %hr = bvec.mul %head, %rel : !bvec.vec<?x64xf32>
    %s = bvec.vec_mul_vec %hr, %tail
        : !bvec.vec<?x64xf32>, !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
    ```
  }];
  let dependentDialects = ["::mlir::bvec::BatchedVectorDialect"];
}

#endif // KGE_DIALECT_BATCHEDVECTOR_TRANSFORMS_PASSES_TD
