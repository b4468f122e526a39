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

#endif // KGE_DIALECT_GRAPH_TRANSFORMS_PASSES_TD
