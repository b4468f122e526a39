// HGT's attention and messages (Hu et al., 2020; Pigeon Section 2.1), one
// head, as PyG's HGTConv computes them between its per-node-type
// projections (k, q, v: node rows, computed before) and its output layer:
//   s_e = <k_src W^k_r, q_dst> * p_r / sqrt(D),  e = (src, dst) of type r
//   alpha_e = softmax of s over the incoming edges of dst
//   h_v = sum_{e into v} alpha_e v_src W^v_r
// `k_rel` holds W^k_r with p_r / sqrt(D) folded in (linear-operator
// fusion); each edge's k_src W^k_r is computed in the task that takes its
// inner product with q_dst, never stored.
func.func @hgt(%k: tensor<?x?xf32> {kge.param = "k"},
               %q: tensor<?x?xf32> {kge.param = "q"},
               %v: tensor<?x?xf32> {kge.param = "v"},
               %krel: tensor<?x?x?xf32> {kge.param = "k_rel"},
               %vrel: tensor<?x?x?xf32> {kge.param = "v_rel"},
               %src: tensor<?xi32> {kge.param = "src"},
               %dst: tensor<?xi32> {kge.param = "dst"},
               %etype: tensor<?xi32> {kge.param = "edge_type"})
    -> (tensor<?x?xf32> {kge.param = "out"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %keys = graph.typed_linear %g, %k, %krel rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %s = graph.inner_product %g, %keys, %q rows(edges, dst) {kge.name = "scores"}
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x1xf32>
  %alpha = graph.edge_softmax %g, %s to(dst) : tensor<?x1xf32>
  %values = graph.typed_linear %g, %v, %vrel rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %out = graph.aggregate %g, %values weights(%alpha : tensor<?x1xf32>)
      to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}
