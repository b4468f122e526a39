// RGAT (Busbridge et al., 2019; Pigeon Section 2.1), one layer as PyG's
// RGATConv computes it by default (one head, additive self-attention
// across relations):
//   s_e = leaky_relu(x_dst W_r q + x_src W_r k),  e = (src, dst) of type r
//   alpha_e = softmax of s over the incoming edges of dst
//   h_v = sum_{e into v} alpha_e x_src W_r
// With linear-operator fusion (Pigeon Section 3.2) the attention's
// projections are typed linear layers of one column: `query` holds
// W_r q and `key` W_r k per relation ([T, K, 1]), so that no per-edge
// W_r x row is materialized for the scores.
func.func @rgat(%x: tensor<?x?xf32> {kge.param = "x"},
                %weight: tensor<?x?x?xf32> {kge.param = "weight"},
                %query: tensor<?x?x1xf32> {kge.param = "query"},
                %key: tensor<?x?x1xf32> {kge.param = "key"},
                %src: tensor<?xi32> {kge.param = "src"},
                %dst: tensor<?xi32> {kge.param = "dst"},
                %etype: tensor<?xi32> {kge.param = "edge_type"})
    -> (tensor<?x?xf32> {kge.param = "out"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %qi = graph.typed_linear %g, %x, %query rows(dst) by(etype)
      : tensor<?x?xf32>, tensor<?x?x1xf32> -> tensor<?x1xf32>
  %kj = graph.typed_linear %g, %x, %key rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x1xf32> -> tensor<?x1xf32>
  %s = arith.addf %qi, %kj {kge.name = "scores"} : tensor<?x1xf32>
  %a = graph.leaky_relu %s slope(2.000000e-01) : tensor<?x1xf32>
  %alpha = graph.edge_softmax %g, %a to(dst) : tensor<?x1xf32>
  %messages = graph.typed_linear %g, %x, %weight rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %out = graph.aggregate %g, %messages weights(%alpha : tensor<?x1xf32>)
      to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}
