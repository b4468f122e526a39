//===- TileIteratorTypes.td - tile types -------------------*- tablegen -*-===//
//
// `!tile.tile`, the tile of an operand or of the accumulators that one block
// of a scheduled kernel holds.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_TILEITERATOR_IR_TILEITERATORTYPES_TD
#define KGE_DIALECT_TILEITERATOR_IR_TILEITERATORTYPES_TD

include "mlir/IR/AttrTypeBase.td"
include "Dialect/TileIterator/IR/TileIteratorDialect.td"

def TileIterator_TileType : TypeDef<TileIterator_Dialect, "Tile"> {
  let mnemonic = "tile";
  let summary = "a block's tile of an operand or of the accumulators";
  let description = [{
    The elements one thread block of a scheduled kernel holds at a time: a
    load iterator's tile of an input per reduction step (its dimensions in
    the order of the input's indexing map, each the block's extent along
    that axis: `block-m` for `i`, `block-n` for `j`, `block-k` for `k`), or
    the `block-m x block-n` accumulators of the compute step. Rank 1 or 2,
    static positive extents, an integer or floating-point element type.

    Example:

    ```mlir
    !tile.tile<128x16xf32>     // an (i, k) operand, block 128 x _ x 16
    !tile.tile<128xf32>        // a per-row (i) operand
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // KGE_DIALECT_TILEITERATOR_IR_TILEITERATORTYPES_TD
