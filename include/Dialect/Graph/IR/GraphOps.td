//===- GraphOps.td - graph operations ----------------------*- tablegen -*-===//
//
// The graph type and the inter-operator level of relational GNNs: the
// graph's structure, typed and plain linear layers, aggregation of edge
// data into nodes.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_GRAPH_IR_GRAPHOPS_TD
#define KGE_DIALECT_GRAPH_IR_GRAPHOPS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "Dialect/Graph/IR/GraphDialect.td"

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Graph_GraphType : TypeDef<Graph_Dialect, "Graph"> {
  let mnemonic = "graph";
  let summary = "a heterogeneous graph: typed edges between typed nodes";
  let description = [{
    A directed graph whose edges carry an edge type and, optionally, whose
    nodes carry a node type. Values of this type come from `graph.coo`;
    the operations that take one read its structure (an edge's source,
    destination and type; a node's type and incoming edges) without
    fixing how it is stored.

    Example:

    ```mlir
    %g = graph.coo %src, %dst, %etype nodes(%n)
        : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Graph_Rows : I32EnumAttr<"Rows",
    "the rows a typed linear layer transforms", [
      I32EnumAttrCase<"src", 0>,
      I32EnumAttrCase<"dst", 1>,
      I32EnumAttrCase<"edges", 2>,
      I32EnumAttrCase<"nodes", 3>,
    ]> {
  let cppNamespace = "::mlir::graph";
}

def Graph_TypeOf : I32EnumAttr<"TypeOf",
    "whose type picks a typed linear layer's matrix", [
      I32EnumAttrCase<"etype", 0>,
      I32EnumAttrCase<"ntype", 1>,
      I32EnumAttrCase<"src_ntype", 2>,
      I32EnumAttrCase<"dst_ntype", 3>,
    ]> {
  let cppNamespace = "::mlir::graph";
}

def Graph_End : I32EnumAttr<"End", "an end of the edges", [
      I32EnumAttrCase<"dst", 0>,
      I32EnumAttrCase<"src", 1>,
    ]> {
  let cppNamespace = "::mlir::graph";
}

def Graph_Reduce : I32EnumAttr<"Reduce",
    "how an aggregate combines the edges of a node", [
      I32EnumAttrCase<"sum", 0>,
    ]> {
  let cppNamespace = "::mlir::graph";
}

//===----------------------------------------------------------------------===//
// Operations
//===----------------------------------------------------------------------===//

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

def Graph_IndexTensor : 1DTensorOf<[I32, I64]>;
def Graph_EdgeScalars : AnyTypeOf<[1DTensorOf<[F32]>, 2DTensorOf<[F32]>],
    "per-edge scalars: [E] or [E, 1] of f32">;
def Graph_DataTensor : 2DTensorOf<[F32, F16, BF16]>;

def Graph_CooOp : Graph_Op<"coo", [Pure, AttrSizedOperandSegments]> {
  let summary = "a graph from its edges' sources, destinations and types";
  let description = [{
    The graph of `num_nodes` nodes whose edge `e` runs from node `src[e]`
    to node `dst[e]` and has type `etype[e]`; with `ntypes`, node `v` has
    type `ntype[v]`. With `sources(%p)` the graph is bipartite: the
    sources are `%p` items of another kind (an aggregate into them has `%p`
    rows), such as the (source node, edge type) pairs of compact
    materialization, each edge reading its pair's row. The three edge tensors have one element per edge.
    Indices outside `[0, num_nodes)` and types outside the weights' range
    are refused by the runtime before launch (checked mode) or by the CPU
    runner.

    Example:

    ```mlir
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?x?xf32>
    %g = graph.coo %src, %dst, %etype nodes(%n)
        : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
    %h = graph.coo %src, %dst, %etype nodes(%n) ntypes(%ntype : tensor<?xi32>)
        : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
    %b = graph.coo %pair, %dst, %etype nodes(%n) sources(%p)
        : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Graph_IndexTensor:$src, Graph_IndexTensor:$dst,
                       Graph_IndexTensor:$etype, Index:$num_nodes,
                       Optional<Graph_IndexTensor>:$ntype,
                       Optional<Index>:$num_sources);
  let results = (outs Graph_GraphType:$graph);
  let assemblyFormat = [{
    $src `,` $dst `,` $etype `nodes` `(` $num_nodes `)`
    (`sources` `(` $num_sources^ `)`)?
    (`ntypes` `(` $ntype^ `:` type($ntype) `)`)? attr-dict
    `:` type($src) `,` type($dst) `,` type($etype)
  }];
  let hasVerifier = 1;
}

def Graph_TypedLinearOp : Graph_Op<"typed_linear", [Pure]> {
  let summary = "rows times the weight matrix of their node's or edge's type";
  let description = [{
    A typed linear layer (Pigeon's `W[e.etype]`, `W[n.ntype]`): row `r` of
    the result is a row of `input` times `weights[t]`, the matrix of type
    `t`. `rows` says which rows and which type:

    - `src` / `dst`: one result row per edge `e`, `input` per node: row
      `src[e]` (or `dst[e]`) of `input`;
    - `edges`: `input` per edge, row `e`;
    - `nodes`: one result row per node `v`, `input` per node, row `v`.

    `by` picks the type: `etype` (the edge's; not with `nodes`), `ntype`
    (the node's; with `nodes` only), `src_ntype` / `dst_ntype` (the type of
    the edge's source or destination node; not with `nodes`). Node types
    need a graph built with `ntypes`. `weights` holds one `[K, N]` matrix
    per type; `input` has `K` columns and the result `N`, in f32. With
    `transposed`, `weights` holds `[N, K]` matrices and each row is
    multiplied by the transpose (the backward of a typed linear layer with
    respect to its input).

    Example: RGCN's messages, each source node's features times the
    matrix of the edge's relation.

    ```mlir
    %m = graph.typed_linear %g, %x, %w rows(src) by(etype)
        : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Graph_GraphType:$graph, Graph_DataTensor:$input,
                       3DTensorOf<[F32, F16, BF16]>:$weights,
                       Graph_Rows:$rows, Graph_TypeOf:$by,
                       UnitAttr:$transposed);
  let results = (outs 2DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $graph `,` $input `,` $weights `rows` `(` $rows `)` `by` `(` $by `)`
    (`transposed` $transposed^)?
    attr-dict `:` type($input) `,` type($weights) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_LinearOp : Graph_Op<"linear", [Pure]> {
  let summary = "rows times one weight matrix, plus an optional bias";
  let description = [{
    `result[r] = input[r] weights (+ bias)`: the untyped linear layer
    (RGCN's root weight `W_0 h_v`). `weights` is `[K, N]`, `bias` `[N]`;
    the result is f32. With `transposed`, `weights` is `[N, K]` and
    `result[r] = input[r] weights^T`.

    Example:

    ```mlir
    %s = graph.linear %x, %root bias(%b : tensor<?xf32>)
        : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Graph_DataTensor:$input,
                       2DTensorOf<[F32, F16, BF16]>:$weights,
                       Optional<1DTensorOf<[F32]>>:$bias,
                       UnitAttr:$transposed);
  let results = (outs 2DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $input `,` $weights (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`transposed` $transposed^)? attr-dict
    `:` type($input) `,` type($weights) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_AggregateOp : Graph_Op<"aggregate", [Pure]> {
  let summary = "per-edge rows combined into the nodes at one end";
  let description = [{
    Row `v` of the result combines the rows of `input` (one per edge) of
    the edges whose `to` end (`dst`: incoming edges, `src`: outgoing ones)
    is node `v`, each first multiplied by its edge's `weight` when given
    (`[E]` or `[E, 1]`): `sum` adds them (a node without such edges gets
    zeros). The result has one row per node of the graph (per source of a
    bipartite graph for `to(src)`). With `rows(src|dst)`, `input` holds
    one row per node (per source) instead, each edge's row read at that end
    of the edge (weights required).

    Per-edge weights given as parameters carry normalizations that depend
    on the graph alone, such as RGCN's `1 / |N_v^r|` (the mean over a
    node's incoming edges of each relation): they are computed once per
    graph, before the layer (Pigeon's preprocessing), and are constants to
    `graph-differentiate`. Weights computed in the function (RGAT's
    attention, a `graph.edge_softmax`) are differentiated.

    Example: RGCN's messages summed into their destination nodes.

    ```mlir
    %h = graph.aggregate %g, %m weights(%norm : tensor<?xf32>) to(dst) reduce(sum)
        : tensor<?x?xf32> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Graph_GraphType:$graph, 2DTensorOf<[F32]>:$input,
                       OptionalAttr<Graph_End>:$rows,
                       Optional<Graph_EdgeScalars>:$weight,
                       Graph_End:$to, Graph_Reduce:$reduce);
  let results = (outs 2DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $graph `,` $input (`rows` `(` $rows^ `)`)?
    (`weights` `(` $weight^ `:` type($weight) `)`)?
    `to` `(` $to `)` `reduce` `(` $reduce `)` attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_OuterSumOp : Graph_Op<"outer_sum", [Pure, AttrSizedOperandSegments]> {
  let summary = "sums of outer products of rows: a linear layer's weight gradient";
  let description = [{
    `result = sum over r of w[r] lhs_row(r)^T rhs_row(r)`: the outer
    products of matching rows of `lhs` (`[*, K]`) and `rhs` (`[*, N]`)
    summed into a `[K, N]` matrix, each first scaled by the row's
    `weights` when given. `rows(a, b)` says which rows pair up:

    - `rows(nodes, nodes)`: row `v` of both, per node (`lhs^T rhs`: the
      gradient of `graph.linear`'s weights);
    - edge rows, `src`, `dst` or `edges` on either side: for each edge `e`,
      row `src[e]` / `dst[e]` of a per-node tensor or row `e` of a per-edge
      one.

    With `by(etype)` (edge rows) or `by(ntype)` (`rows(nodes, nodes)`, a
    graph with node types), the sum is split by the edge's or the node's
    type: the result is `[T, K, N]`, one matrix per type, `T` given by
    `types` (the weights' count, read from the weights as `tensor.dim %w,
    0`).
    This is the gradient of a typed linear layer's weights, Pigeon's
    segment matrix multiplication with the edges sorted by type; `weights`
    are an aggregate's per-edge weights.

    Example: the gradient of RGCN's relation matrices and of its root
    weight, given the layer's input `%x` and the gradient `%dy` of its
    output.

    ```mlir
    %c0 = arith.constant 0 : index
    %t = tensor.dim %w, %c0 : tensor<?x?x?xf32>
    %dw = graph.outer_sum %g, %x, %dy rows(src, dst) by(etype) types(%t)
        weights(%norm : tensor<?xf32>)
        : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?x?xf32>
    %droot = graph.outer_sum %g, %x, %dy rows(nodes, nodes)
        : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Graph_GraphType:$graph, 2DTensorOf<[F32]>:$lhs,
                       2DTensorOf<[F32]>:$rhs, Graph_Rows:$lhs_rows,
                       Graph_Rows:$rhs_rows, OptionalAttr<Graph_TypeOf>:$by,
                       Optional<Index>:$num_types,
                       Optional<Graph_EdgeScalars>:$weight);
  let results = (outs TensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $graph `,` $lhs `,` $rhs `rows` `(` $lhs_rows `,` $rhs_rows `)`
    (`by` `(` $by^ `)`)? (`types` `(` $num_types^ `)`)?
    (`weights` `(` $weight^ `:` type($weight) `)`)? attr-dict
    `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}


def Graph_LeakyReluOp : Graph_Op<"leaky_relu",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "elementwise leaky ReLU";
  let description = [{
    `result = input > 0 ? input : slope * input`, element by element: the
    activation of RGAT's and GAT's attention scores.

    The lowering to `tile` applies it where its result is read (the edge
    softmax's tasks read the scores and apply it on the fly); alone it
    lowers for per-row scalars (`[R, 1]`).

    Example:

    ```mlir
    %a = graph.leaky_relu %s slope(2.000000e-01) : tensor<?x1xf32>
    ```
  }];
  let arguments = (ins 2DTensorOf<[F32]>:$input, F32Attr:$slope);
  let results = (outs 2DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $input `slope` `(` $slope `)` attr-dict `:` type($input)
  }];
}

def Graph_LeakyReluGradOp : Graph_Op<"leaky_relu_grad",
    [Pure, AllTypesMatch<["input", "grad", "result"]>]> {
  let summary = "the gradient through a leaky ReLU";
  let description = [{
    `result = input > 0 ? grad : slope * grad`: the gradient of
    `graph.leaky_relu`'s input given `grad`, the gradient of its result
    (`graph-differentiate` writes it).

    Example:

    ```mlir
    %ds = graph.leaky_relu_grad %s, %da slope(2.000000e-01) : tensor<?x1xf32>
    ```
  }];
  let arguments = (ins 2DTensorOf<[F32]>:$input, 2DTensorOf<[F32]>:$grad,
                       F32Attr:$slope);
  let results = (outs 2DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $input `,` $grad `slope` `(` $slope `)` attr-dict `:` type($input)
  }];
}

def Graph_EdgeSoftmaxOp : Graph_Op<"edge_softmax",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "softmax of per-edge scores over the edges of each node";
  let description = [{
    `result[e, h] = exp(input[e, h]) / sum over e' of exp(input[e', h])`,
    the sum over the edges `e'` whose `to` end (`dst`: a node's incoming
    edges, `src`: its outgoing ones) is `e`'s: the attention of GAT and
    RGAT (across relations), normalized per node. It is computed stably
    (each node's largest score subtracted first). `input` has one row per
    edge.

    The lowering to `tile` materializes each node's largest score and its
    sum of exponentials (`[V, 1]`) and the result (`[E, 1]`): per-edge
    scalars, one attention head.

    Example: RGAT's attention over a node's incoming edges.

    ```mlir
    %alpha = graph.edge_softmax %g, %scores to(dst) : tensor<?x1xf32>
    ```
  }];
  let arguments = (ins Graph_GraphType:$graph, 2DTensorOf<[F32]>:$input,
                       Graph_End:$to);
  let results = (outs 2DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $graph `,` $input `to` `(` $to `)` attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Graph_EdgeSoftmaxGradOp : Graph_Op<"edge_softmax_grad",
    [Pure, AllTypesMatch<["output", "grad", "result"]>]> {
  let summary = "the gradient through an edge softmax";
  let description = [{
    Given `output`, the result `y` of a `graph.edge_softmax` to(`to`), and
    `grad`, the gradient `dy` of that result, the gradient of its input:
    `result[e] = y[e] (dy[e] - sum over e' of y[e'] dy[e'])`, the sum over
    the edges `e'` sharing `e`'s `to` end (`graph-differentiate` writes
    it).

    Example:

    ```mlir
    %ds = graph.edge_softmax_grad %g, %alpha, %dalpha to(dst) : tensor<?x1xf32>
    ```
  }];
  let arguments = (ins Graph_GraphType:$graph, 2DTensorOf<[F32]>:$output,
                       2DTensorOf<[F32]>:$grad, Graph_End:$to);
  let results = (outs 2DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $graph `,` $output `,` $grad `to` `(` $to `)` attr-dict `:` type($output)
  }];
  let hasVerifier = 1;
}

def Graph_InnerProductOp : Graph_Op<"inner_product", [Pure]> {
  let summary = "per-edge inner products of two rows";
  let description = [{
    `result[e, 0] = sum over c of lhs_row(e)[c] * rhs_row(e)[c]`: for each
    edge `e`, the inner product of a row of `lhs` and a row of `rhs`, both
    `[*, C]`. `rows(a, b)` says which rows: `src` / `dst` read row `src[e]`
    / `dst[e]` of a per-node tensor, `edges` row `e` of a per-edge one. The
    result is `[E, 1]`.

    A side that is a typed linear layer used only here is not
    materialized: the lowering computes its rows in the same task (the
    edge's row times its type's matrix) and takes the inner product of each
    tile (the gradient of RGAT's attention: each edge's message against
    the gradient at its destination).

    Example:

    ```mlir
    %m = graph.typed_linear %g, %x, %w rows(src) by(etype)
        : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
    %d = graph.inner_product %g, %dy, %m rows(dst, edges)
        : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x1xf32>
    ```
  }];
  let arguments = (ins Graph_GraphType:$graph, 2DTensorOf<[F32]>:$lhs,
                       2DTensorOf<[F32]>:$rhs, Graph_Rows:$lhs_rows,
                       Graph_Rows:$rhs_rows);
  let results = (outs 2DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $graph `,` $lhs `,` $rhs `rows` `(` $lhs_rows `,` $rhs_rows `)` attr-dict
    `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // KGE_DIALECT_GRAPH_IR_GRAPHOPS_TD
