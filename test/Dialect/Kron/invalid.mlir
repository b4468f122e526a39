// RUN: kge-opt %s -split-input-file -verify-diagnostics

func.func @label_columns(%nodes: tensor<?x2xi32>, %nl: tensor<?x3xf32>, %edges: tensor<?x2xi32>,
                         %ends: tensor<?x2xi32>, %w: tensor<?xf32>, %el: tensor<?x1xf32>) {
  // expected-error @+1 {{'node_labels' must have 2 columns (a static size), got 'tensor<?x3xf32>'}}
  %X = kron.graphs nodes(%nodes, %nl) edges(%edges, %ends, %w, %el)
      : tensor<?x2xi32>, tensor<?x3xf32>, tensor<?x2xi32>, tensor<?x2xi32>, tensor<?xf32>,
        tensor<?x1xf32> -> !kron.graphs<node_labels = 2, edge_labels = 1>
  return
}

// -----

func.func @edge_rows(%nodes: tensor<?x2xi32>, %nl: tensor<?x1xf32>, %edges: tensor<?x2xi32>,
                     %ends: tensor<7x2xi32>, %w: tensor<6xf32>, %el: tensor<?x1xf32>) {
  // expected-error @+1 {{'ends' has 7 rows but 'weights' has 6; they hold one row per item}}
  %X = kron.graphs nodes(%nodes, %nl) edges(%edges, %ends, %w, %el)
      : tensor<?x2xi32>, tensor<?x1xf32>, tensor<?x2xi32>, tensor<7x2xi32>, tensor<6xf32>,
        tensor<?x1xf32> -> !kron.graphs<node_labels = 1, edge_labels = 1>
  return
}

// -----

func.func @integer_labels(%nodes: tensor<?x2xi32>, %nl: tensor<?x1xi32>, %edges: tensor<?x2xi32>,
                          %ends: tensor<?x2xi32>, %w: tensor<?xf32>, %el: tensor<?x1xf32>) {
  // expected-error @+1 {{operand #1 must be 2D tensor of 32-bit float values}}
  %X = kron.graphs nodes(%nodes, %nl) edges(%edges, %ends, %w, %el)
      : tensor<?x2xi32>, tensor<?x1xi32>, tensor<?x2xi32>, tensor<?x2xi32>, tensor<?xf32>,
        tensor<?x1xf32> -> !kron.graphs<node_labels = 1, edge_labels = 1>
  return
}

// -----

func.func @bad_order(%nodes: tensor<?x2xi32>, %nl: tensor<?x0xf32>, %deg: tensor<?xf32>, %rows: tensor<?xi32>,
                     %tiles: tensor<?x2xi32>, %coords: tensor<?xi32>, %bitmaps: tensor<?xi64>,
                     %offsets: tensor<?xi32>, %w: tensor<?xf32>, %el: tensor<?x0xf32>) {
  // expected-error @+1 {{orders the nodes 'natural', 'rcm', 'pbr', 'auto' or 'refined', got 'metis'}}
  %X = kron.octiles nodes(%nodes, %nl, %deg, %rows) tiles(%tiles, %coords, %bitmaps, %offsets)
      nonzeros(%w, %el) order("metis")
      : tensor<?x2xi32>, tensor<?x0xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?x2xi32>, tensor<?xi32>,
        tensor<?xi64>, tensor<?xi32>, tensor<?xf32>, tensor<?x0xf32>
      -> !kron.graphs<node_labels = 0, edge_labels = 0>
  return
}

// -----

func.func @tile_rows(%nodes: tensor<?x2xi32>, %nl: tensor<?x0xf32>, %deg: tensor<?xf32>, %rows: tensor<?xi32>,
                     %tiles: tensor<?x2xi32>, %coords: tensor<4xi32>, %bitmaps: tensor<5xi64>,
                     %offsets: tensor<?xi32>, %w: tensor<?xf32>, %el: tensor<?x0xf32>) {
  // expected-error @+1 {{'coords' has 4 rows but 'bitmaps' has 5}}
  %X = kron.octiles nodes(%nodes, %nl, %deg, %rows) tiles(%tiles, %coords, %bitmaps, %offsets)
      nonzeros(%w, %el) order("natural")
      : tensor<?x2xi32>, tensor<?x0xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?x2xi32>, tensor<4xi32>,
        tensor<5xi64>, tensor<?xi32>, tensor<?xf32>, tensor<?x0xf32>
      -> !kron.graphs<node_labels = 0, edge_labels = 0>
  return
}

// -----

func.func @stop_out_of_range(%X: !kron.graphs<node_labels = 0, edge_labels = 0>) {
  // expected-error @+1 {{stopping probability must be in (0, 1), got 1}}
  %K, %it = kron.gram %X node(#kron.constant<1.0>) edge(#kron.constant<1.0>)
      stop(1.0) tol(1.0e-06) max_iter(10)
      : !kron.graphs<node_labels = 0, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @degrees(%X: !kron.graphs<node_labels = 0, edge_labels = 0>) {
  // expected-error @+1 {{takes degrees "additive" (sum + stop) or "scaled" (sum / (1 - stop)), not "walk"}}
  %K, %it = kron.gram %X node(#kron.constant<1.0>) edge(#kron.constant<1.0>)
      stop(0.05) degrees("walk") tol(1.0e-06) max_iter(10)
      : !kron.graphs<node_labels = 0, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @tolerance(%X: !kron.graphs<node_labels = 0, edge_labels = 0>) {
  // expected-error @+1 {{tolerance must be positive and finite, got 0}}
  %K, %it = kron.gram %X node(#kron.constant<1.0>) edge(#kron.constant<1.0>)
      stop(0.05) tol(0.0) max_iter(10)
      : !kron.graphs<node_labels = 0, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @iteration_cap(%X: !kron.graphs<node_labels = 0, edge_labels = 0>) {
  // expected-error @+1 {{iteration cap must be at least 1, got 0}}
  %K, %it = kron.gram %X node(#kron.constant<1.0>) edge(#kron.constant<1.0>)
      stop(0.05) tol(1.0e-6) max_iter(0)
      : !kron.graphs<node_labels = 0, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @kernel_features(%X: !kron.graphs<node_labels = 2, edge_labels = 0>) {
  // expected-error @+1 {{the node kernel #kron.delta<5.000000e-01> reads 1 label feature(s); the graphs' nodes have 2}}
  %K, %it = kron.gram %X node(#kron.delta<0.5>) edge(#kron.constant<1.0>)
      stop(0.05) tol(1.0e-6) max_iter(10)
      : !kron.graphs<node_labels = 2, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @not_a_kernel(%X: !kron.graphs<node_labels = 0, edge_labels = 0>) {
  // expected-error @+1 {{the edge kernel must be a base kernel}}
  %K, %it = kron.gram %X node(#kron.constant<1.0>) edge(1.0 : f32)
      stop(0.05) tol(1.0e-6) max_iter(10)
      : !kron.graphs<node_labels = 0, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @datasets_differ(%X: !kron.graphs<node_labels = 1, edge_labels = 0>,
                           %Y: !kron.graphs<node_labels = 2, edge_labels = 0>) {
  // expected-error @+1 {{compares datasets of different labels}}
  %K, %it = kron.gram %X, %Y node(#kron.delta<0.5>) edge(#kron.constant<1.0>)
      stop(0.05) tol(1.0e-6) max_iter(10)
      : !kron.graphs<node_labels = 1, edge_labels = 0>, !kron.graphs<node_labels = 2, edge_labels = 0>
      -> tensor<?x?xf32>, tensor<?x?xi32>
  return
}

// -----

// expected-error @+1 {{#kron.delta's off-diagonal value must be in (0, 1], got 1.5}}
func.func private @delta_above_one() attributes {k = #kron.delta<1.5>}

// -----

// expected-error @+1 {{#kron.sqexp's length scale must be positive and finite, got -1}}
func.func private @negative_length() attributes {k = #kron.sqexp<-1.0>}

// -----

// expected-error @+1 {{#kron.constant must be in (0, 1], got 0}}
func.func private @zero_constant() attributes {k = #kron.constant<0.0>}

// -----

// expected-error @+1 {{#kron.product takes #kron.delta, #kron.sqexp or #kron.constant per feature, got #kron.product}}
func.func private @nested_product() attributes {k = #kron.product<[#kron.product<[#kron.delta<0.5>]>]>}

// -----

// expected-error @+1 {{#kron.sum takes at least one base kernel}}
func.func private @empty_sum() attributes {k = #kron.sum<[]>}

// -----

func.func @nodewise_stop(%X: !kron.graphs<node_labels = 0, edge_labels = 0>) {
  // expected-error @+1 {{'kron.nodewise' op stopping probability must be in (0, 1), got 0}}
  %S, %it = kron.nodewise %X node(#kron.constant<1.0>) edge(#kron.constant<1.0>)
      stop(0.0) tol(1.0e-06) max_iter(10)
      : !kron.graphs<node_labels = 0, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @nodewise_kernel(%X: !kron.graphs<node_labels = 0, edge_labels = 0>) {
  // expected-error @+1 {{'kron.nodewise' op the node kernel #kron.delta<5.000000e-01> reads 1 label feature(s); the graphs' nodes have 0}}
  %S, %it = kron.nodewise %X node(#kron.delta<0.5>) edge(#kron.constant<1.0>)
      stop(0.05) tol(1.0e-06) max_iter(10)
      : !kron.graphs<node_labels = 0, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  return
}
