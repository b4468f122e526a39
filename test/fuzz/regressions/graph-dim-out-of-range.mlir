

// Layers typed by their row's own node type are computed once per node
// (rows(nodes) by(ntype)) and read at the edge's end: no graph data. The
// inner product's other side is read at the source on the same graph.
func.func @node_typed(%x: tensor<?x?xf32> {kge.param = "x"},
                      %w: tensor<?x?x?xf32> {kge.param = "w"},
                      %src: tensor<?xi32> {kge.param = "src"},
                      %dst: tensor<?xi32> {kge.param = "dst"},
                      %etype: tensor<?xi32> {kge.param = "edge_type"},
                      %ntype: tensor<?xi32> {kge.param = "node_type"})
    -> (tensor<?x?xf32> {kge.param = "out"}) {
  %c0 = arith.constant 4096 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) ntypes(%ntype : tensor<?xi32>)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %keys = graph.typed_linear %g, %x, %w rows(src) by(src_ntype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %s = graph.inner_product %g, %x, %keys rows(src, edges)
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x1xf32>
  %values = graph.typed_linear %g, %x, %w rows(dst) by(dst_ntype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %out = graph.aggregate %g, %values weights(%s : tensor<?x1xf32>)
      to(src) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}


