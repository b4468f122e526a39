//===- KronOps.td - kron types, attributes and operations --*- tablegen -*-===//
//
// Datasets of labeled graphs, base kernels on their labels, and the
// marginalized graph kernel's Gram matrix.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_KRON_IR_KRONOPS_TD
#define KGE_DIALECT_KRON_IR_KRONOPS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "Dialect/Kron/IR/KronDialect.td"

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Kron_GraphsType : TypeDef<Kron_Dialect, "Graphs"> {
  let mnemonic = "graphs";
  let summary = "a dataset of labeled, weighted, undirected graphs";
  let description = [{
    A list of graphs, each with its own node count, whose nodes carry
    `node_labels` label features and whose edges carry a weight and
    `edge_labels` label features (f32 values: integer labels such as an
    atom's element are exact up to 2^24). Values of this type come from
    `kron.graphs` (edge lists) or `kron.octiles` (the tiled layout).

    Example:

    ```mlir
    !kron.graphs<node_labels = 2, edge_labels = 1>
    ```
  }];
  let parameters = (ins "unsigned":$node_labels, "unsigned":$edge_labels);
  let assemblyFormat = "`<` struct(params) `>`";
}

//===----------------------------------------------------------------------===//
// Base kernels
//===----------------------------------------------------------------------===//

class Kron_Attr<string name, string attrMnemonic>
    : AttrDef<Kron_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def Kron_DeltaAttr : Kron_Attr<"Delta", "delta"> {
  let summary = "Kronecker delta base kernel";
  let description = [{
    1 where the two labels are equal, `h` elsewhere (`0 < h <= 1`). On its
    own it reads the one label feature of the nodes (or edges); inside
    `#kron.product` / `#kron.sum`, the feature of its position.

    Example:

    ```mlir
    #kron.delta<5.000000e-01>
    ```
  }];
  let parameters = (ins APFloatParameter<"the off-diagonal value">:$h);
  let assemblyFormat = "`<` custom<Real>($h) `>`";
  let genVerifyDecl = 1;
}

def Kron_SquareExponentialAttr : Kron_Attr<"SquareExponential", "sqexp"> {
  let summary = "square exponential base kernel";
  let description = [{
    `exp(-(x - y)^2 / (2 l^2))` of two numeric labels `x`, `y`, with the
    length scale `l > 0`.

    Example:

    ```mlir
    #kron.sqexp<2.000000e+00>
    ```
  }];
  let parameters = (ins APFloatParameter<"the length scale">:$length_scale);
  let assemblyFormat = "`<` custom<Real>($length_scale) `>`";
  let genVerifyDecl = 1;
}

def Kron_ConstantAttr : Kron_Attr<"Constant", "constant"> {
  let summary = "constant base kernel";
  let description = [{
    `c` for every pair of labels (`0 < c <= 1`): the base kernel of
    unlabeled nodes or edges (it reads no feature; inside a product or a
    sum it stands for the feature of its position, which it ignores).

    Example:

    ```mlir
    #kron.constant<1.000000e+00>
    ```
  }];
  let parameters = (ins APFloatParameter<"the value">:$value);
  let assemblyFormat = "`<` custom<Real>($value) `>`";
  let genVerifyDecl = 1;
}

def Kron_ProductAttr : Kron_Attr<"Product", "product"> {
  let summary = "product of base kernels over the label features";
  let description = [{
    The tensor product of base kernels: feature `f` of the labels is
    compared by the `f`-th kernel of the list and the results multiply.
    The list has one kernel per label feature (`#kron.delta`,
    `#kron.sqexp` or `#kron.constant`).

    Example (an atom's element by a delta, its charge by a square
    exponential):

    ```mlir
    #kron.product<[#kron.delta<5.000000e-01>, #kron.sqexp<1.000000e+00>]>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$kernels);
  let assemblyFormat = "`<` $kernels `>`";
  let genVerifyDecl = 1;
}

def Kron_SumAttr : Kron_Attr<"Sum", "sum"> {
  let summary = "normalized sum of base kernels over the label features";
  let description = [{
    The mean of base kernels over the label features: feature `f` is
    compared by the `f`-th kernel of the list and the results are summed
    and divided by their count, so that the kernel stays in (0, 1].

    Example:

    ```mlir
    #kron.sum<[#kron.delta<5.000000e-01>, #kron.delta<2.000000e-01>]>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$kernels);
  let assemblyFormat = "`<` $kernels `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Operations
//===----------------------------------------------------------------------===//

class Kron_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kron_Dialect, mnemonic, traits>;

def Kron_Ranges : TensorRankOf<[I32], [2]>;
def Kron_Labels : TensorRankOf<[F32], [2]>;

def Kron_GraphsOp : Kron_Op<"graphs", [Pure]> {
  let summary = "a dataset of labeled graphs from their edge lists";
  let description = [{
    The dataset whose graph `g` has the `nodes[g][1]` nodes (rows of
    `node_labels`) starting at row `nodes[g][0]`, and the `edges[g][1]`
    undirected edges starting at row `edges[g][0]` of `ends` (the two
    nodes, numbered within the graph from 0), `weights` (positive) and
    `edge_labels`. Each edge is listed once. `nodes` and `edges` are `[G,
    2]` (G graphs), `node_labels` `[V, node_labels]`, `ends` `[E, 2]`,
    `weights` `[E]` and `edge_labels` `[E, edge_labels]`.

    Graphs of no nodes, edges outside their graph, self-loops, repeated
    edges, non-positive or non-finite weights and non-finite labels are
    refused by the caller that packs the dataset (`kge.kron`), before it
    runs.

    Example:

    ```mlir
    %X = kron.graphs nodes(%nodes, %vlabels)
        edges(%edges, %ends, %weights, %elabels)
        : tensor<?x2xi32>, tensor<?x1xf32>, tensor<?x2xi32>, tensor<?x2xi32>,
          tensor<?xf32>, tensor<?x1xf32> -> !kron.graphs<node_labels = 1, edge_labels = 1>
    ```
  }];
  let arguments = (ins Kron_Ranges:$nodes, Kron_Labels:$node_labels,
                       Kron_Ranges:$edges, Kron_Ranges:$ends,
                       1DTensorOf<[F32]>:$weights, Kron_Labels:$edge_labels);
  let results = (outs Kron_GraphsType:$graphs);
  let assemblyFormat = [{
    `nodes` `(` $nodes `,` $node_labels `)`
    `edges` `(` $edges `,` $ends `,` $weights `,` $edge_labels `)` attr-dict
    `:` type($nodes) `,` type($node_labels) `,` type($edges) `,` type($ends)
    `,` type($weights) `,` type($edge_labels) `->` type($graphs)
  }];
  let hasVerifier = 1;
}

def Kron_OctilesOp : Kron_Op<"octiles", [Pure]> {
  let summary = "a dataset of labeled graphs as compact octiles";
  let description = [{
    The tiled layout of a dataset (the solver's two-level sparsity): each
    graph's nodes in the order `order` names (`natural`, `rcm` — reverse
    Cuthill-McKee — or `auto`, the one of the two with fewer tiles, per
    graph), its adjacency cut into 8 x 8 tiles of which only the
    non-empty ones are stored, each compact — a 64-bit bitmap whose bit
    `r * 8 + c` marks a non-zero at row `r`, column `c` of the tile, and
    the non-zeros' weights and labels in bit order. Both directions of an
    undirected edge are stored.

    - `nodes` `[G, 2]`: each graph's first node row and node count;
      `node_labels` `[V, node_labels]`, `degrees` `[V]` (a node's sum of
      edge weights) and `rows` `[V]` (its row in the dataset's own order)
      per node, in the tiled order;
    - `tiles` `[G, 2]`: each graph's first tile and tile count; per tile,
      `coords` `[T]` (tile row `<< 16 |` tile column), `bitmaps` `[T]` and
      `offsets` `[T]` (its first non-zero);
    - `weights` `[Z]` and `edge_labels` `[Z, edge_labels]` per non-zero.

    `kron-octile-tiling` makes it from a `kron.graphs`, its arrays
    parameters the caller derives from the edge lists (`kge.derived =
    {function = "octiles", part = ..., order = ...}`).

    Example:

    ```mlir
    %X = kron.octiles nodes(%nodes, %vlabels, %degrees, %rows)
        tiles(%tiles, %coords, %bitmaps, %offsets) nonzeros(%w, %elabels)
        order("rcm")
        : tensor<?x2xi32>, tensor<?x1xf32>, tensor<?xf32>, tensor<?xi32>,
          tensor<?x2xi32>, tensor<?xi32>, tensor<?xi64>, tensor<?xi32>,
          tensor<?xf32>, tensor<?x1xf32>
          -> !kron.graphs<node_labels = 1, edge_labels = 1>
    ```
  }];
  let arguments = (ins Kron_Ranges:$nodes, Kron_Labels:$node_labels,
                       1DTensorOf<[F32]>:$degrees, 1DTensorOf<[I32]>:$rows,
                       Kron_Ranges:$tiles,
                       1DTensorOf<[I32]>:$coords, 1DTensorOf<[I64]>:$bitmaps,
                       1DTensorOf<[I32]>:$offsets, 1DTensorOf<[F32]>:$weights,
                       Kron_Labels:$edge_labels, StrAttr:$order);
  let results = (outs Kron_GraphsType:$graphs);
  let assemblyFormat = [{
    `nodes` `(` $nodes `,` $node_labels `,` $degrees `,` $rows `)`
    `tiles` `(` $tiles `,` $coords `,` $bitmaps `,` $offsets `)`
    `nonzeros` `(` $weights `,` $edge_labels `)` `order` `(` $order `)` attr-dict
    `:` type($nodes) `,` type($node_labels) `,` type($degrees) `,`
    type($rows) `,` type($tiles) `,` type($coords) `,` type($bitmaps) `,` type($offsets) `,`
    type($weights) `,` type($edge_labels) `->` type($graphs)
  }];
  let hasVerifier = 1;
}

def Kron_GramOp : Kron_Op<"gram", [Pure]> {
  let summary = "the marginalized graph kernel between all pairs of datasets";
  let description = [{
    The Gram matrix `K[a, b] = K(X[a], Y[b])` of the marginalized graph
    kernel with node base kernel `node` and edge base kernel `edge`, the
    stopping probability `stop` (the same at every node, `0 < stop < 1`)
    and uniform starting probabilities; without `%Y`, between all pairs of
    `%X` (symmetric: each pair solved once). With `normalize`, `K[a, b] /
    sqrt(K(X[a], X[a]) K(Y[b], Y[b]))`.

    `degrees` names the degree `d_i` of the product system's diagonal
    `D_x = diag(d (x) d')`: `"additive"` (the default) takes `d_i = sum_j
    A_ij + stop`, the solver paper's convention; `"scaled"` takes `d_i =
    sum_j A_ij / (1 - stop)` (the walk's transition probabilities
    `(1 - stop) A_ij / sum_j A_ij`, Kashima's and GraphDot's convention; a
    node without edges counts as of degree 1). The right-hand side is
    `D_x q_x` with `q_x = stop^2` either way.

    Each pair's linear system is solved by conjugate gradient with the
    diagonal preconditioner to the relative residual `tol` within
    `max_iter` iterations. The second result holds each pair's iteration
    count, negated where the solve did not converge (its kernel value is
    then the last iterate's: reported, never silent). `kge.kron` raises on
    such pairs unless told otherwise.

    The base kernels must fit the datasets' label features (a product or
    sum names one kernel per feature; a lone delta or square exponential
    reads the only feature).

    Example:

    ```mlir
    %K, %iterations = kron.gram %X
        node(#kron.delta<5.000000e-01>) edge(#kron.constant<1.000000e+00>)
        stop(5.000000e-02) tol(1.000000e-06) max_iter(1000) normalize
        : !kron.graphs<node_labels = 1, edge_labels = 0>
        -> tensor<?x?xf32>, tensor<?x?xi32>
    ```

    With GraphDot's degrees:

    ```mlir
    %K, %iterations = kron.gram %X
        node(#kron.delta<5.000000e-01>) edge(#kron.constant<1.000000e+00>)
        stop(5.000000e-02) degrees("scaled") tol(1.000000e-06) max_iter(1000)
        : !kron.graphs<node_labels = 1, edge_labels = 0>
        -> tensor<?x?xf32>, tensor<?x?xi32>
    ```
  }];
  let arguments = (ins Kron_GraphsType:$x, Optional<Kron_GraphsType>:$y,
                       AnyAttr:$node_kernel, AnyAttr:$edge_kernel,
                       F64Attr:$stop,
                       DefaultValuedStrAttr<StrAttr, "additive">:$degrees,
                       F64Attr:$tol, I64Attr:$max_iter,
                       UnitAttr:$normalize);
  let results = (outs TensorRankOf<[F32], [2]>:$gram,
                      TensorRankOf<[I32], [2]>:$iterations);
  let assemblyFormat = [{
    $x (`,` $y^)? `node` `(` $node_kernel `)` `edge` `(` $edge_kernel `)`
    `stop` `(` $stop `)` (`degrees` `(` $degrees^ `)`)?
    `tol` `(` $tol `)` `max_iter` `(` $max_iter `)`
    (`normalize` $normalize^)? attr-dict
    `:` type($x) (`,` type($y)^)? `->` type($gram) `,` type($iterations)
  }];
  let hasVerifier = 1;
}

def Kron_NodewiseOp : Kron_Op<"nodewise", [Pure]> {
  let summary = "the node-wise similarities of all pairs of graphs";
  let description = [{
    The node-wise similarity matrix of the marginalized graph kernel: for
    each pair of graphs `(X[a], Y[b])` it holds the solution `x` of the
    pair's linear system, `S[u, v] = x[(u, v)]` for node `u` of `X[a]` and
    node `v` of `Y[b]` (rows of the datasets' node arrays, in their own
    order) — the expected similarity of the walks that start at `u` and
    `v`. `K(X[a], Y[b])` of `kron.gram` (without `normalize`) is the mean
    of the pair's block. Without `%Y`, between all pairs of `%X` (each
    pair solved once, its block written with its transpose). `S` is `[V,
    V_y]` (all nodes of `%X` by all nodes of `%Y`); entries of pairs that
    did not converge hold the last iterate, the second result (`[G, G_y]`)
    holds each pair's iteration count, negated where it did not converge.

    The base kernels, `stop`, `degrees`, `tol` and `max_iter` are those of
    `kron.gram`.

    Example:

    ```mlir
    %S, %iterations = kron.nodewise %X
        node(#kron.delta<5.000000e-01>) edge(#kron.constant<1.000000e+00>)
        stop(5.000000e-02) tol(1.000000e-06) max_iter(1000)
        : !kron.graphs<node_labels = 1, edge_labels = 0>
        -> tensor<?x?xf32>, tensor<?x?xi32>
    ```
  }];
  let arguments = (ins Kron_GraphsType:$x, Optional<Kron_GraphsType>:$y,
                       AnyAttr:$node_kernel, AnyAttr:$edge_kernel,
                       F64Attr:$stop,
                       DefaultValuedStrAttr<StrAttr, "additive">:$degrees,
                       F64Attr:$tol, I64Attr:$max_iter);
  let results = (outs TensorRankOf<[F32], [2]>:$similarity,
                      TensorRankOf<[I32], [2]>:$iterations);
  let assemblyFormat = [{
    $x (`,` $y^)? `node` `(` $node_kernel `)` `edge` `(` $edge_kernel `)`
    `stop` `(` $stop `)` (`degrees` `(` $degrees^ `)`)?
    `tol` `(` $tol `)` `max_iter` `(` $max_iter `)` attr-dict
    `:` type($x) (`,` type($y)^)? `->` type($similarity) `,` type($iterations)
  }];
  let hasVerifier = 1;
}

#endif // KGE_DIALECT_KRON_IR_KRONOPS_TD
