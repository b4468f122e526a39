// RUN: kge-opt %s | FileCheck %s
// RUN: kge-opt %s | kge-opt | FileCheck %s
// RUN: kge-opt %s -mlir-print-op-generic | kge-opt | FileCheck %s

// Every operation, type and base kernel round-trips.

// CHECK-LABEL: func.func @edge_lists
// CHECK: kron.graphs nodes(%{{.*}}, %{{.*}}) edges(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-SAME: -> <node_labels = 2, edge_labels = 1>
// CHECK: kron.gram %{{.*}} node(#kron.product<[#kron.delta<5.000000e-01>, #kron.sqexp<2.000000e+00>]>)
// CHECK-SAME: edge(#kron.sum<[#kron.delta<2.500000e-01>]>) stop(5.000000e-02) tol({{.*}}) max_iter(500) normalize
// CHECK-NOT: degrees
func.func @edge_lists(%nodes: tensor<?x2xi32>, %nl: tensor<?x2xf32>, %edges: tensor<?x2xi32>,
                      %ends: tensor<?x2xi32>, %w: tensor<?xf32>, %el: tensor<?x1xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xi32>) {
  %X = kron.graphs nodes(%nodes, %nl) edges(%edges, %ends, %w, %el)
      : tensor<?x2xi32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<?x2xi32>, tensor<?xf32>,
        tensor<?x1xf32> -> !kron.graphs<node_labels = 2, edge_labels = 1>
  %K, %it = kron.gram %X
      node(#kron.product<[#kron.delta<5.000000e-01>, #kron.sqexp<2.000000e+00>]>)
      edge(#kron.sum<[#kron.delta<2.500000e-01>]>) stop(5.000000e-02) tol(1.000000e-06)
      max_iter(500) normalize
      : !kron.graphs<node_labels = 2, edge_labels = 1> -> tensor<?x?xf32>, tensor<?x?xi32>
  return %K, %it : tensor<?x?xf32>, tensor<?x?xi32>
}

// CHECK-LABEL: func.func @octiles_x_against_y
// CHECK: kron.octiles nodes({{.*}}) tiles({{.*}}) nonzeros({{.*}}) order("rcm")
// CHECK: kron.gram %{{.*}}, %{{.*}} node(#kron.constant<1.000000e+00>) edge(#kron.constant<5.000000e-01>)
// CHECK-SAME: stop(1.000000e-01) degrees("scaled") tol(
// CHECK-NOT: normalize
func.func @octiles_x_against_y(%nodes: tensor<?x2xi32>, %nl: tensor<?x0xf32>, %deg: tensor<?xf32>, %rows: tensor<?xi32>,
                               %tiles: tensor<?x2xi32>, %coords: tensor<?xi32>,
                               %bitmaps: tensor<?xi64>, %offsets: tensor<?xi32>,
                               %w: tensor<?xf32>, %el: tensor<?x0xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xi32>) {
  %X = kron.octiles nodes(%nodes, %nl, %deg, %rows) tiles(%tiles, %coords, %bitmaps, %offsets)
      nonzeros(%w, %el) order("rcm")
      : tensor<?x2xi32>, tensor<?x0xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?x2xi32>, tensor<?xi32>,
        tensor<?xi64>, tensor<?xi32>, tensor<?xf32>, tensor<?x0xf32>
      -> !kron.graphs<node_labels = 0, edge_labels = 0>
  %K, %it = kron.gram %X, %X node(#kron.constant<1.000000e+00>) edge(#kron.constant<5.000000e-01>)
      stop(1.000000e-01) degrees("scaled") tol(1.000000e-05) max_iter(100)
      : !kron.graphs<node_labels = 0, edge_labels = 0>, !kron.graphs<node_labels = 0, edge_labels = 0>
      -> tensor<?x?xf32>, tensor<?x?xi32>
  return %K, %it : tensor<?x?xf32>, tensor<?x?xi32>
}

// CHECK-LABEL: func.func @nodewise
// CHECK: kron.nodewise %{{.*}} node(#kron.delta<5.000000e-01>) edge(#kron.constant<1.000000e+00>)
// CHECK-SAME: stop(5.000000e-02) degrees("scaled") tol({{.*}}) max_iter(1000)
// CHECK: kron.nodewise %{{.*}}, %{{.*}} node
// CHECK-NOT: degrees
// CHECK-SAME: max_iter(10)
func.func @nodewise(%X: !kron.graphs<node_labels = 1, edge_labels = 0>)
    -> (tensor<?x?xf32>, tensor<?x?xi32>) {
  %S, %it = kron.nodewise %X node(#kron.delta<5.000000e-01>) edge(#kron.constant<1.000000e+00>)
      stop(5.000000e-02) degrees("scaled") tol(1.000000e-06) max_iter(1000)
      : !kron.graphs<node_labels = 1, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  %S2, %it2 = kron.nodewise %X, %X node(#kron.delta<5.000000e-01>) edge(#kron.constant<1.000000e+00>)
      stop(5.000000e-02) tol(1.000000e-06) max_iter(10)
      : !kron.graphs<node_labels = 1, edge_labels = 0>, !kron.graphs<node_labels = 1, edge_labels = 0>
      -> tensor<?x?xf32>, tensor<?x?xi32>
  return %S, %it : tensor<?x?xf32>, tensor<?x?xi32>
}
