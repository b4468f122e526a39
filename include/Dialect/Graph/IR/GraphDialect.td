//===- GraphDialect.td - graph dialect definition ----------*- tablegen -*-===//
//
// The `graph` dialect: relational graph neural networks (Pigeon) at the
// inter-operator level.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_GRAPH_IR_GRAPHDIALECT_TD
#define KGE_DIALECT_GRAPH_IR_GRAPHDIALECT_TD

include "mlir/IR/DialectBase.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::mlir::graph";
  let summary = "Relational graph neural networks over heterogeneous graphs";
  let description = [{
    The `graph` dialect is KGE's graph-traversal level: the layers of
    relational graph neural networks (RGCN, RGAT, HGT; Pigeon's
    inter-operator level) written over a heterogeneous graph, whose nodes
    and edges carry types. A model is written once, as operations on whole
    per-node and per-edge tensors (value semantics): a *typed linear*
    layer multiplies each row by the weight matrix of its node's or edge's
    type (`W[etype]`, `W[ntype]`), an *aggregate* reduces per-edge data
    into the nodes at one end of the edges, a *linear* layer multiplies
    per-node data by one matrix. How the graph is stored (COO today) and
    how per-edge data are materialized are decided by the lowering, not by
    the model.

    `convert-graph-to-tile` lowers the GEMM-like operations to `tile`
    tasks: a typed linear layer over an edge's source rows whose only user
    is an aggregate becomes one task whose rows are gathered through the
    source indices, whose matrix is picked per edge type (`tile`'s segment
    iterators on the GPU) and whose output operator scatters each edge's
    row into its destination node (`output aggregate` by row keys). No
    per-edge tensor is materialized.

    The graph's structure enters through `graph.coo`: source, destination
    and edge-type index tensors (and optionally node types), with the node
    count.
  }];
  let useDefaultTypePrinterParser = 1;
}

#endif // KGE_DIALECT_GRAPH_IR_GRAPHDIALECT_TD
