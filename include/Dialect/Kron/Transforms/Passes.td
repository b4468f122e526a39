//===- Passes.td - kron transformation passes --------------*- tablegen -*-===//

#ifndef KGE_DIALECT_KRON_TRANSFORMS_PASSES_TD
#define KGE_DIALECT_KRON_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KronOctileTiling : Pass<"kron-octile-tiling", "ModuleOp"> {
  let summary = "Store datasets of graphs as compact octiles in a chosen node order";
  let description = [{
    Rewrites every `kron.graphs` whose operands are parameters of its
    function into a `kron.octiles` of new parameters that the caller
    derives from the edge lists (`kge.derived = {function = "octiles",
    part = <array>, order = <order>, nodes = ..., node_labels = ...,
    edges = ..., ends = ..., weights = ..., edge_labels = ...}`, the
    parameters' names): each graph's adjacency cut into 8 x 8 tiles,
    empty tiles removed, each tile compact (a 64-bit bitmap and its
    non-zeros in bit order), the node labels, degrees and rows (each node's row in the
    dataset's own order) in the tiled
    order (the solver's two-level sparsity). The derived arrays are the
    `kron.octiles` operands of the same name (`node_labels` and
    `edge_labels` as `octile_node_labels`, `octile_edge_labels`).

    The node order (`order`) packs the non-zeros into fewer, denser
    tiles: `natural` keeps the graph's numbering, `rcm` is the reverse
    Cuthill-McKee order (bandwidth reduction), `pbr` the partition-based
    order (the nodes split into parts of 8 with few edges between parts
    by METIS, each part a tile row), `auto` takes per graph the one of
    the three that gives the fewest tiles, `refined` improves auto's by
    swapping nodes of different tile rows while a swap lowers the tile
    count (the objective, minimized directly: slower to make).

    Example:

    ```mlir
    %X = kron.graphs nodes(%n, %nl) edges(%e, %ends, %w, %el) : ...
    // kron-octile-tiling{order=rcm}:
    %X = kron.octiles nodes(%n, %octile_node_labels, %degrees, %rows)
        tiles(%tiles, %coords, %bitmaps, %offsets)
        nonzeros(%octile_weights, %octile_edge_labels) order("rcm") : ...
    ```
  }];
  let options = [
    Option<"order", "order", "std::string", /*default=*/"\"auto\"",
           "The node order the tiles are cut in: natural, rcm, pbr, auto or "
           "refined">,
  ];
}

#endif // KGE_DIALECT_KRON_TRANSFORMS_PASSES_TD
