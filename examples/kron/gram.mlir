// The marginalized graph kernel's Gram matrix of a dataset of molecules
// (Kashima et al.; the GPU solver of Tang et al.): atoms are nodes labeled
// by their element, bonds are edges labeled by their order. Elements are
// compared by a Kronecker delta (0.5 between different elements), bond
// orders by a square exponential of length scale 1; a walk stops at each
// step with probability 0.05. Normalized, K[a, a] = 1.
func.func @gram(%nodes: tensor<?x2xi32> {kge.param = "nodes"},
                %elements: tensor<?x1xf32> {kge.param = "node_labels"},
                %edges: tensor<?x2xi32> {kge.param = "edges"},
                %ends: tensor<?x2xi32> {kge.param = "ends"},
                %weights: tensor<?xf32> {kge.param = "weights"},
                %orders: tensor<?x1xf32> {kge.param = "edge_labels"})
    -> (tensor<?x?xf32> {kge.param = "gram"},
        tensor<?x?xi32> {kge.param = "iterations"}) {
  %X = kron.graphs nodes(%nodes, %elements) edges(%edges, %ends, %weights, %orders)
      : tensor<?x2xi32>, tensor<?x1xf32>, tensor<?x2xi32>, tensor<?x2xi32>,
        tensor<?xf32>, tensor<?x1xf32>
      -> !kron.graphs<node_labels = 1, edge_labels = 1>
  %K, %iterations = kron.gram %X node(#kron.delta<5.000000e-01>)
      edge(#kron.sqexp<1.000000e+00>) stop(5.000000e-02) tol(1.000000e-06)
      max_iter(1000) normalize
      : !kron.graphs<node_labels = 1, edge_labels = 1>
      -> tensor<?x?xf32>, tensor<?x?xi32>
  return %K, %iterations : tensor<?x?xf32>, tensor<?x?xi32>
}
