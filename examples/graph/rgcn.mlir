// RGCN (Schlichtkrull et al., 2018; Pigeon Section 2.1), one layer as PyG's
// RGCNConv computes it with aggr='mean':
//   h_v = sum_r sum_{u in N_v^r} 1 / |N_v^r| W_r x_u + W_0 x_v + b
// The normalization 1 / |N_v^r| depends on the graph alone: `norm` holds it
// per edge (computed once per graph, before the layer).
func.func @rgcn(%x: tensor<?x?xf32> {kge.param = "x"},
                %weight: tensor<?x?x?xf32> {kge.param = "weight"},
                %root: tensor<?x?xf32> {kge.param = "root"},
                %bias: tensor<?xf32> {kge.param = "bias"},
                %src: tensor<?xi32> {kge.param = "src"},
                %dst: tensor<?xi32> {kge.param = "dst"},
                %etype: tensor<?xi32> {kge.param = "edge_type"},
                %norm: tensor<?xf32> {kge.param = "norm"})
    -> (tensor<?x?xf32> {kge.param = "out"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %messages = graph.typed_linear %g, %x, %weight rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %neighbours = graph.aggregate %g, %messages weights(%norm : tensor<?xf32>)
      to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  %self = graph.linear %x, %root bias(%bias : tensor<?xf32>)
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %out = arith.addf %neighbours, %self : tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}
