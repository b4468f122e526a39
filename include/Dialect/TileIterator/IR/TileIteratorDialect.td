//===- TileIteratorDialect.td - tile dialect definition ----*- tablegen -*-===//
//
// The `tile` dialect: matrix-multiplication-like tasks and the tile
// iterators they are built from.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_TILEITERATOR_IR_TILEITERATORDIALECT_TD
#define KGE_DIALECT_TILEITERATOR_IR_TILEITERATORDIALECT_TD

include "mlir/IR/DialectBase.td"

def TileIterator_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::mlir::tile";
  let summary = "Matrix-multiplication-like tasks and their tile iterators";
  let description = [{
    The `tile` dialect is KGE's shared middle level for GEMM-like work. Its
    central operation, `tile.task`, is a *matrix-multiplication-like task*
    (MMLT, GAMUT): two spatial axes `i` and `j`, one reduction axis `k`,
    input operands indexed by `(i, k)`, `(k, j)`, `(k)`, `(i)` or `(j)` (in
    any order of their two axes), a scalar *inner computation* of the
    operands' elements, an *accumulator* that combines the inner values
    along `k`, and an *output operator* that decides what happens to each
    `(i, j)` result: stored densely (project), kept when a predicate holds
    (select, a compacted coordinate list), combined into groups given by
    key arrays (aggregate), kept among the `k` best (top-k), or kept once
    per distinct value (distinct). A *join* predicate over the spatial
    operands skips the whole reduction of the pairs it rejects.

    Plain GEMM is the task whose inner computation multiplies and whose
    accumulator adds; every other task keeps that loop structure, which is
    what lets one tiled kernel skeleton with fused load and store iterators
    serve all of them.

    Operands are memrefs (destination-passing style): a task reads its
    inputs and writes its outputs, and the functions that hold tasks are
    ordinary `func.func`s.

    After scheduling (`tile-schedule`), a task also holds its *schedule*:
    the GPU kernels that compute it, written as tile iterators. A
    `tile.kernel` fixes the tiling (block and thread tiles, pipeline
    stages); inside it, one `tile.load` per input (global memory to shared
    memory to registers: dense, gathered through an index array, rows
    sorted into segments by a key, or the matrix of the block's key), one
    compute step (`tile.mma` on tensor cores or `tile.compute`, the inner
    computation on CUDA cores) and one `tile.store` (the output operator's
    store iterator). `convert-tile-to-gpu` emits exactly the kernels the
    schedule lists.
  }];
  let useDefaultAttributePrinterParser = 0;
  let useDefaultTypePrinterParser = 1;
}

#endif // KGE_DIALECT_TILEITERATOR_IR_TILEITERATORDIALECT_TD
