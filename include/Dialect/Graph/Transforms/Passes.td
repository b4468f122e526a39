//===- Passes.td - graph transformation passes -------------*- tablegen -*-===//

#ifndef KGE_DIALECT_GRAPH_TRANSFORMS_PASSES_TD
#define KGE_DIALECT_GRAPH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GraphDifferentiate : Pass<"graph-differentiate", "ModuleOp"> {
  let summary = "Derive the backward function of every graph function";
  let description = [{
    Reverse-mode automatic differentiation at the inter-operator level:
    for every graph function `@f` with one result, adds `@f_grad`, which
    takes `@f`'s parameters followed by the gradient of its result
    (`grad_<result>`) and returns the gradients of the parameters that
    `@f` multiplies (the inputs and weights of its `graph.linear` and
    `graph.typed_linear` layers), each named `grad_<parameter>`, in the
    order of `@f`'s parameters. The rules, for an output gradient `dy`:

    - a sum (`arith.addf`): `dy` reaches every term;
    - `graph.linear %x, %w` (`y = x w + b`): `dx += dy w^T` (a transposed
      linear layer), `dw += x^T dy` (`graph.outer_sum` over the nodes);
    - `graph.aggregate` of `graph.typed_linear %g, %x, %w rows(src)
      by(etype)` with per-edge weights `a` to `dst` (`y[dst e] += a[e]
      x[src e] w[etype e]`): `dx += aggregate(typed_linear(dy rows(dst),
      w transposed), a, to(src))`, and `dw += outer_sum(x, dy rows(src,
      dst) by(etype), a)` (a segment matrix multiplication per edge type);
      likewise with the ends exchanged;
    - a typed linear layer as a result, `y = typed_linear(x, w rows(r)
      by(t))`: the transposed layer of `dy` (`rows(nodes)` or
      `rows(edges)`), summed back into an edge's end for `rows(src|dst)`,
      and `dw += outer_sum(x, dy rows(r, ...) by(t))` (per node type over
      the nodes, per edge type over the edges).

    Per-edge weights (normalizations: graph data) and biases get no
    gradient here: a bias' gradient is the column sum of `dy`. Layers the
    rules do not cover are diagnosed.

    Example (RGCN, `examples/graph/rgcn.mlir`): `@rgcn_grad(x, weight,
    root, bias, src, dst, edge_type, norm, grad_out) -> (grad_x,
    grad_weight, grad_root)`.
  }];
  let options = [
    Option<"keepForward", "keep-forward", "bool", /*default=*/"true",
           "Keep the forward functions beside their backward ones (false: "
           "replace them, e.g. to compile the backward function alone into "
           "a bundle)">
  ];
  let dependentDialects = ["::mlir::graph::GraphDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def GraphCompactMaterialize : Pass<"graph-compact-materialize", "ModuleOp"> {
  let summary = "Compute per-edge typed linear layers once per source instead of once per edge";
  let description = [{
    Pigeon's compact materialization (Section 3.3). A typed linear layer of
    an edge's source row, `typed_linear %g, %x, %w rows(src) by(etype)`,
    depends on the edge only through its (source node, edge type) pair:
    computing it once per edge repeats the product for every edge that
    shares a pair (on skewed graphs most do). This pass computes it once
    per pair and lets each edge read its pair's row:

    - the graph's distinct (source, type) pairs become graph data, three
      new parameters of the function computed once per graph before the
      layer (like RGCN's normalization): `pair_src` and `pair_type` (pair
      `p` joins node `pair_src[p]` and type `pair_type[p]`) and `edge_pair`
      (edge `e`'s pair), each marked `kge.derived = {function =
      "source_type_pairs", part = ..., src = <src's kge.param>, etype =
      <etype's>}` so that a caller derives them from the graph (Python:
      `kge.graph.source_type_pairs`);
    - the layer becomes `typed_linear %pairs, %x, %w rows(src) by(etype)`
      over the graph of the pairs, one row per pair;
    - its uses read the pair rows through the bipartite graph `graph.coo
      %edge_pair, %dst, %etype nodes(%n) sources(%p)` (same edges, same
      order): an inner product's `rows(edges)` side becomes `rows(src)`,
      an aggregate of the edges' rows into `dst` becomes `rows(src)`.

    A layer typed by its row's own node type, `rows(src) by(src_ntype)`
    (`rows(dst) by(dst_ntype)`), depends on the node alone: it becomes
    `rows(nodes) by(ntype)`, once per node, read at the edge's end by its
    uses; no graph data is needed.

    A layer is left as it is (vanilla materialization) when one of its
    uses cannot read compact rows: an aggregate without weights of
    `[E, 1]` (RGCN's `[E]` normalization: there the vanilla lowering
    fuses the layer into the aggregate's segment product, which stores no
    per-edge rows either) or into the sources, an inner product whose other side is read at the source,
    any other op. `kge.materialize = "vanilla"` on a layer keeps it; with
    `marked-only`, only layers marked `kge.materialize = "compact"` are
    rewritten (the schedule as an attribute, the model unchanged).

    Example (HGT, `examples/graph/hgt.mlir`): the keys' and values' typed
    linear layers are computed per (source, type) pair; `@hgt` gains the
    parameters `pair_src`, `pair_type`, `edge_pair`.
  }];
  let options = [
    Option<"markedOnly", "marked-only", "bool", /*default=*/"false",
           "Rewrite only the layers marked kge.materialize = \"compact\"">
  ];
  let dependentDialects = ["::mlir::graph::GraphDialect",
                           "::mlir::tensor::TensorDialect"];
}

def GraphFuseLinear : Pass<"graph-fuse-linear", "ModuleOp"> {
  let summary = "Compose chained linear layers' weights: one typed linear layer per chain";
  let description = [{
    Pigeon's linear-operator fusion (Section 3.2). A typed linear layer
    whose rows are multiplied again by a matrix — `(x W_t) q`, RGAT's
    attention score `(W_r x_dst) . q` as PyG writes it, or `(x W_t) Q_t`
    with a second matrix per type — equals one typed linear layer by the
    composed matrices `x (W_t q)`: the chain's intermediate rows (one per
    edge, `K -> D` columns) are never computed, and the second product runs
    on `N` columns instead of `D` (one for a score). Rewritten:

    - `graph.linear %h, %q` (no bias) of `%h = graph.typed_linear %g, %x,
      %W rows(r) by(t)`: `graph.typed_linear %g, %x, %C rows(r) by(t)`,
      `C[t] = W[t] q`;
    - `graph.typed_linear %g, %h, %Q rows(edges) by(etype)` of such an
      `%h` typed by edge type over edge rows (or `rows(nodes) by(ntype)`
      of one over node rows by node type): `C[t] = W[t] Q[t]`.

    `C` is a new parameter of the function: the weights are tiny (one
    matrix per type) and change every training step, so they are composed
    by the caller with its tensor library, whose autograd (or the chain
    rule `dW += dC q^T`, `dq += sum_t W[t]^T dC[t]`) takes `C`'s gradient
    back. It is marked `kge.derived = {function = "compose", lhs = <W's
    kge.param>, rhs = <q's>}` and named `<W>_<q>`; `kge.graph` computes it
    and chains its gradient (`Layer.run_cpu`, `run_backward_cpu`). The
    first layer stays where it has other uses. Chains whose matrices are
    not parameters named by `kge.param`, transposed layers, and consumers
    marked `kge.fuse = false` are left as they are.

    Example: RGAT as PyG writes it (`kge.graph.rgat_unfused`): the scores
    `(x_dst W_r) q + (x_src W_r) k` become typed linear layers of one
    column by `W_r q` and `W_r k`.
  }];
  let dependentDialects = ["::mlir::graph::GraphDialect"];
}

#endif // KGE_DIALECT_GRAPH_TRANSFORMS_PASSES_TD
