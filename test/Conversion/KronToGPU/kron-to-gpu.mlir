// RUN: kge-opt %s -split-input-file -kron-octile-tiling -convert-kron-to-gpu -verify-diagnostics | FileCheck %s
// RUN: kge-opt %s -split-input-file -kron-octile-tiling -convert-kron-to-gpu="product-rows=false blocks=64 blocks-per-sm=0" -verify-diagnostics | FileCheck %s --check-prefix=PAIRS

// A Gram matrix of one dataset: the solver kernel (one pair per block,
// pairs from a counter), the normalization kernel, and the bundle
// description: the octiles, the pair schedule and the workspace as derived
// parameters, the results cleared to NaN / 0 iterations first.

// CHECK-LABEL: gpu.module @gram_kernels
// CHECK-SAME: kge.derived = {{{.*}}pairs = {{{.*}}function = "pair_schedule"{{.*}}normalize = "true"{{.*}}symmetric = "true"
// CHECK-SAME: workspace = {blocks = "1024", function = "solver_workspace", pairs = "pairs", vectors = "4"
// CHECK-SAME: kge.launch_plan = [{buffer = "scratch:counter", kind = "memset"}, {buffer = "param:gram", kind = "memset", value = 2143289344 : i64}, {buffer = "param:iterations", kind = "memset"}
// CHECK-SAME: function = "gram_solve", grid = ["min(P, 1024)", "1", "1"]
// CHECK-SAME: function = "gram_normalize", grid = ["ceildiv(G * G, 256)", "1", "1"]
// CHECK-SAME: kge.signature = {name = "gram"
// CHECK-SAME: {dtype = "i32", name = "pairs", role = "table", shape = ["P", 3]}
// CHECK-SAME: {dtype = "f32", name = "workspace", role = "output", shape = ["W"]}
// CHECK-SAME: {dtype = "f32", name = "gram", role = "result", shape = ["G", "G"]}
// CHECK-SAME: {dtype = "i32", name = "iterations", role = "result", shape = ["G", "G"]}
// CHECK: gpu.func @gram_solve
// CHECK-SAME: kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-SAME: nvvm.minctasm = 8 : i32
// CHECK: gpu.dynamic_shared_memory
// CHECK: scf.while
// CHECK: memref.atomic_rmw addi
// CHECK: gpu.shuffle xor
// CHECK: gpu.func @gram_normalize
// CHECK-NOT: func.func @gram
// PAIRS-LABEL: gpu.module @gram_kernels
// PAIRS-SAME: grid = ["min(P, 64)", "1", "1"]
// PAIRS: gpu.func @gram_solve
// PAIRS-NOT: nvvm.minctasm
// PAIRS: memref.atomic_rmw addf
func.func @gram(%nodes: tensor<?x2xi32> {kge.param = "nodes"},
                %nl: tensor<?x1xf32> {kge.param = "node_labels"},
                %edges: tensor<?x2xi32> {kge.param = "edges"},
                %ends: tensor<?x2xi32> {kge.param = "ends"},
                %w: tensor<?xf32> {kge.param = "weights"},
                %el: tensor<?x1xf32> {kge.param = "edge_labels"})
    -> (tensor<?x?xf32> {kge.param = "gram"}, tensor<?x?xi32> {kge.param = "iterations"}) {
  %X = kron.graphs nodes(%nodes, %nl) edges(%edges, %ends, %w, %el)
      : tensor<?x2xi32>, tensor<?x1xf32>, tensor<?x2xi32>, tensor<?x2xi32>, tensor<?xf32>,
        tensor<?x1xf32> -> !kron.graphs<node_labels = 1, edge_labels = 1>
  %K, %it = kron.gram %X node(#kron.delta<0.5>) edge(#kron.sqexp<1.0>)
      stop(0.05) tol(1.0e-6) max_iter(100) normalize
      : !kron.graphs<node_labels = 1, edge_labels = 1> -> tensor<?x?xf32>, tensor<?x?xi32>
  return %K, %it : tensor<?x?xf32>, tensor<?x?xi32>
}

// -----

// X against Y: results [G, G_y]; normalization takes both datasets'
// self-kernels from scratch arrays of their own.
// A constant edge kernel factors XMV (c A P A'^T): a fifth vector holds
// P A'^T; without product rows, XMV stays by octile pairs (four vectors).
// CHECK-LABEL: gpu.module @xy_kernels
// CHECK-SAME: symmetric = "false"
// CHECK-SAME: vectors = "5"
// PAIRS-LABEL: gpu.module @xy_kernels
// PAIRS-SAME: vectors = "4"
// CHECK-SAME: kge.scratch = [{count = "1", dtype = "i32", name = "counter"}, {count = "G", dtype = "f32", name = "self_x"}, {count = "G_y", dtype = "f32", name = "self_y"}]
// CHECK-SAME: {dtype = "f32", name = "gram", role = "result", shape = ["G", "G_y"]}
func.func @xy(%n: tensor<?x2xi32> {kge.param = "nodes"}, %nl: tensor<?x0xf32> {kge.param = "nl"},
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
      stop(0.05) tol(1.0e-6) max_iter(100) normalize
      : !kron.graphs<node_labels = 0, edge_labels = 0>, !kron.graphs<node_labels = 0, edge_labels = 0>
      -> tensor<?x?xf32>, tensor<?x?xi32>
  return %K, %it : tensor<?x?xf32>, tensor<?x?xi32>
}

// -----

// expected-error @+1 {{must return its kron.gram's two results}}
func.func @only_the_gram(%X: !kron.graphs<node_labels = 0, edge_labels = 0>)
    -> tensor<?x?xf32> {
  %K, %it = kron.gram %X node(#kron.constant<1.0>) edge(#kron.constant<1.0>)
      stop(0.05) tol(1.0e-6) max_iter(100)
      : !kron.graphs<node_labels = 0, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  return %K : tensor<?x?xf32>
}

// -----

func.func @not_tiled(%X: !kron.graphs<node_labels = 0, edge_labels = 0>)
    -> (tensor<?x?xf32>, tensor<?x?xi32>) {
  // expected-error @+1 {{reads a dataset that is not stored as octiles; run kron-octile-tiling before convert-kron-to-gpu}}
  %K, %it = kron.gram %X node(#kron.constant<1.0>) edge(#kron.constant<1.0>)
      stop(0.05) tol(1.0e-6) max_iter(100)
      : !kron.graphs<node_labels = 0, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  return %K, %it : tensor<?x?xf32>, tensor<?x?xi32>
}

// -----

// The node-wise similarities: a sixth vector keeps the solution (the
// factored XMV's five and x), the first result is [V, V] and the kernel
// scatters each pair's block through the tiled order's `rows`.
// CHECK-LABEL: gpu.module @nodal_kernels
// CHECK-SAME: vectors = "6"
// CHECK-SAME: {dtype = "i32", name = "rows", role = "table", shape = ["V"]}
// CHECK-SAME: {dtype = "f32", name = "similarity", role = "result", shape = ["V", "V"]}
// CHECK-SAME: {dtype = "i32", name = "iterations", role = "result", shape = ["G", "G"]}
// CHECK-NOT: gram_normalize
// CHECK: gpu.func @nodal_solve
// PAIRS-LABEL: gpu.module @nodal_kernels
// PAIRS-SAME: vectors = "5"
func.func @nodal(%n: tensor<?x2xi32> {kge.param = "nodes"}, %nl: tensor<?x0xf32> {kge.param = "nl"},
                 %e: tensor<?x2xi32> {kge.param = "edges"}, %ends: tensor<?x2xi32> {kge.param = "ends"},
                 %w: tensor<?xf32> {kge.param = "w"}, %el: tensor<?x0xf32> {kge.param = "el"})
    -> (tensor<?x?xf32> {kge.param = "similarity"}, tensor<?x?xi32> {kge.param = "iterations"}) {
  %X = kron.graphs nodes(%n, %nl) edges(%e, %ends, %w, %el)
      : tensor<?x2xi32>, tensor<?x0xf32>, tensor<?x2xi32>, tensor<?x2xi32>, tensor<?xf32>,
        tensor<?x0xf32> -> !kron.graphs<node_labels = 0, edge_labels = 0>
  %S, %it = kron.nodewise %X node(#kron.constant<1.0>) edge(#kron.constant<1.0>)
      stop(0.05) tol(1.0e-6) max_iter(100)
      : !kron.graphs<node_labels = 0, edge_labels = 0> -> tensor<?x?xf32>, tensor<?x?xi32>
  return %S, %it : tensor<?x?xf32>, tensor<?x?xi32>
}
