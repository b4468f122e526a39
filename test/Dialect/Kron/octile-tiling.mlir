// RUN: kge-opt %s -split-input-file -kron-octile-tiling="order=rcm" -verify-diagnostics | FileCheck %s
// RUN: kge-opt %s -split-input-file -kron-octile-tiling -verify-diagnostics | FileCheck %s --check-prefix=AUTO

// A dataset's edge lists become compact octiles: eight parameters derived
// from the edge lists, named after their parts (prefixed where a name is
// taken), each marked with the octiles' order.

// CHECK-LABEL: func.func @gram
// CHECK-SAME: %[[NODES:[a-z0-9]+]]: tensor<?x2xi32> {kge.param = "nodes"}
// CHECK-SAME: %[[NL:[a-z0-9]+]]: tensor<?x1xf32> {kge.derived = {{{.*}}function = "octiles"{{.*}}order = "rcm", part = "node_labels"{{.*}}}, kge.param = "octile_node_labels"}
// CHECK-SAME: %[[DEG:[a-z0-9]+]]: tensor<?xf32> {kge.derived = {{{.*}}part = "degrees"{{.*}}}, kge.param = "degrees"}
// CHECK-SAME: %[[ROWS:[a-z0-9]+]]: tensor<?xi32> {kge.derived = {{{.*}}part = "rows"{{.*}}}, kge.param = "rows"}
// CHECK-SAME: %[[TILES:[a-z0-9]+]]: tensor<?x2xi32> {kge.derived = {{{.*}}part = "tiles"{{.*}}}, kge.param = "tiles"}
// CHECK-SAME: %[[COORDS:[a-z0-9]+]]: tensor<?xi32> {kge.derived = {{{.*}}part = "coords"{{.*}}}, kge.param = "coords"}
// CHECK-SAME: %[[BITMAPS:[a-z0-9]+]]: tensor<?xi64> {kge.derived = {{{.*}}part = "bitmaps"{{.*}}}, kge.param = "bitmaps"}
// CHECK-SAME: %[[OFFSETS:[a-z0-9]+]]: tensor<?xi32> {kge.derived = {{{.*}}part = "offsets"{{.*}}}, kge.param = "offsets"}
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<?xf32> {kge.derived = {{{.*}}part = "weights"{{.*}}}, kge.param = "octile_weights"}
// CHECK-SAME: %[[EL:[a-z0-9]+]]: tensor<?x1xf32> {kge.derived = {{{.*}}part = "edge_labels"{{.*}}}, kge.param = "octile_edge_labels"}
// CHECK-NOT: kron.graphs
// CHECK: %[[X:.*]] = kron.octiles nodes(%[[NODES]], %[[NL]], %[[DEG]], %[[ROWS]]) tiles(%[[TILES]], %[[COORDS]], %[[BITMAPS]], %[[OFFSETS]]) nonzeros(%[[W]], %[[EL]]) order("rcm")
// CHECK: kron.gram %[[X]]
// AUTO: order("auto")
func.func @gram(%nodes: tensor<?x2xi32> {kge.param = "nodes"},
                %nl: tensor<?x1xf32> {kge.param = "node_labels"},
                %edges: tensor<?x2xi32> {kge.param = "edges"},
                %ends: tensor<?x2xi32> {kge.param = "ends"},
                %w: tensor<?xf32> {kge.param = "weights"},
                %el: tensor<?x1xf32> {kge.param = "edge_labels"})
    -> (tensor<?x?xf32>, tensor<?x?xi32>) {
  %X = kron.graphs nodes(%nodes, %nl) edges(%edges, %ends, %w, %el)
      : tensor<?x2xi32>, tensor<?x1xf32>, tensor<?x2xi32>, tensor<?x2xi32>, tensor<?xf32>,
        tensor<?x1xf32> -> !kron.graphs<node_labels = 1, edge_labels = 1>
  %K, %it = kron.gram %X node(#kron.delta<0.5>) edge(#kron.delta<0.5>)
      stop(0.05) tol(1.0e-6) max_iter(100)
      : !kron.graphs<node_labels = 1, edge_labels = 1> -> tensor<?x?xf32>, tensor<?x?xi32>
  return %K, %it : tensor<?x?xf32>, tensor<?x?xi32>
}

// -----

// Two datasets: the second's parts take prefixed names.
// CHECK-LABEL: func.func @two
// CHECK-SAME: kge.param = "degrees"
// CHECK-SAME: kge.param = "octile_degrees"
// CHECK-COUNT-2: kron.octiles
func.func @two(%n: tensor<?x2xi32> {kge.param = "nodes"}, %nl: tensor<?x0xf32> {kge.param = "nl"},
               %e: tensor<?x2xi32> {kge.param = "edges"}, %ends: tensor<?x2xi32> {kge.param = "ends"},
               %w: tensor<?xf32> {kge.param = "w"}, %el: tensor<?x0xf32> {kge.param = "el"},
               %n2: tensor<?x2xi32> {kge.param = "nodes_y"}, %nl2: tensor<?x0xf32> {kge.param = "nl_y"},
               %e2: tensor<?x2xi32> {kge.param = "edges_y"}, %ends2: tensor<?x2xi32> {kge.param = "ends_y"},
               %w2: tensor<?xf32> {kge.param = "w_y"}, %el2: tensor<?x0xf32> {kge.param = "el_y"})
    -> (tensor<?x?xf32>, tensor<?x?xi32>) {
  %X = kron.graphs nodes(%n, %nl) edges(%e, %ends, %w, %el)
      : tensor<?x2xi32>, tensor<?x0xf32>, tensor<?x2xi32>, tensor<?x2xi32>, tensor<?xf32>,
        tensor<?x0xf32> -> !kron.graphs<node_labels = 0, edge_labels = 0>
  %Y = kron.graphs nodes(%n2, %nl2) edges(%e2, %ends2, %w2, %el2)
      : tensor<?x2xi32>, tensor<?x0xf32>, tensor<?x2xi32>, tensor<?x2xi32>, tensor<?xf32>,
        tensor<?x0xf32> -> !kron.graphs<node_labels = 0, edge_labels = 0>
  %K, %it = kron.gram %X, %Y node(#kron.constant<1.0>) edge(#kron.constant<1.0>)
      stop(0.05) tol(1.0e-6) max_iter(100)
      : !kron.graphs<node_labels = 0, edge_labels = 0>, !kron.graphs<node_labels = 0, edge_labels = 0>
      -> tensor<?x?xf32>, tensor<?x?xi32>
  return %K, %it : tensor<?x?xf32>, tensor<?x?xi32>
}

// -----

func.func @not_parameters(%nodes: tensor<?x2xi32> {kge.param = "nodes"},
                          %edges: tensor<?x2xi32> {kge.param = "edges"},
                          %ends: tensor<?x2xi32> {kge.param = "ends"},
                          %w: tensor<?xf32> {kge.param = "weights"}) -> (tensor<?x?xf32>, tensor<?x?xi32>) {
  %c0 = arith.constant 0 : index
  %nodes_count = tensor.dim %nodes, %c0 : tensor<?x2xi32>
  %nl = tensor.empty(%nodes_count) : tensor<?x0xf32>
  %el = tensor.empty(%nodes_count) : tensor<?x0xf32>
  // expected-error @+1 {{takes 'node_labels' from a value that is not a named parameter (kge.param) of its function}}
  %X = kron.graphs nodes(%nodes, %nl) edges(%edges, %ends, %w, %el)
      : tensor<?x2xi32>, tensor<?x0xf32>, tensor<?x2xi32>, tensor<?x2xi32>, tensor<?xf32>,
        tensor<?x0xf32> -> !kron.graphs<node_labels = 0, edge_labels = 0>
  %K, %it = kron.gram %X node(#kron.constant<1.0>) edge(#kron.constant<1.0>)
      stop(0.05) tol(1.0e-6) max_iter(100)
      : !kron.graphs<node_labels = 0, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  return %K, %it : tensor<?x?xf32>, tensor<?x?xi32>
}
