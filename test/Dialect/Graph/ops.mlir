// RUN: kge-opt %s | FileCheck %s
// RUN: kge-opt %s | kge-opt | FileCheck %s
// RUN: kge-opt %s -mlir-print-op-generic | kge-opt | FileCheck %s

// Every operation and form round-trips: graphs with and without node
// types, typed linear layers over every kind of rows, a linear layer with
// and without bias, aggregates with and without weights, into either end.
// CHECK-LABEL: func.func @layers
// CHECK: %[[G:.*]] = graph.coo %{{.*}}, %{{.*}}, %{{.*}} nodes(%{{.*}}) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
// CHECK: %[[T:.*]] = graph.coo %{{.*}}, %{{.*}}, %{{.*}} nodes(%{{.*}}) ntypes(%{{.*}} : tensor<?xi64>) : tensor<?xi64>, tensor<?xi64>, tensor<?xi32>
// CHECK: graph.typed_linear %[[G]], %{{.*}}, %{{.*}} rows(src) by(etype) : tensor<?x16xf32>, tensor<4x16x8xf32> -> tensor<?x8xf32>
// CHECK: graph.typed_linear %[[T]], %{{.*}}, %{{.*}} rows(dst) by(src_ntype) : tensor<?x16xf32>, tensor<3x16x8xf32> -> tensor<?x8xf32>
// CHECK: graph.typed_linear %[[T]], %{{.*}}, %{{.*}} rows(nodes) by(ntype) : tensor<?x16xf32>, tensor<3x16x8xf32> -> tensor<?x8xf32>
// CHECK: graph.typed_linear %[[G]], %{{.*}}, %{{.*}} rows(edges) by(etype) : tensor<?x8xbf16>, tensor<4x8x8xbf16> -> tensor<?x8xf32>
// CHECK: graph.linear %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<8xf32>) : tensor<?x16xf32>, tensor<16x8xf32> -> tensor<?x8xf32>
// CHECK: graph.linear %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<16x8xf32> -> tensor<?x8xf32>
// CHECK: graph.aggregate %[[G]], %{{.*}} weights(%{{.*}} : tensor<?xf32>) to(dst) reduce(sum) : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK: graph.aggregate %[[G]], %{{.*}} to(src) reduce(sum) : tensor<?x8xf32> -> tensor<?x8xf32>
func.func @layers(%x: tensor<?x16xf32>, %e: tensor<?x8xbf16>, %w: tensor<4x16x8xf32>,
                  %wn: tensor<3x16x8xf32>, %we: tensor<4x8x8xbf16>, %root: tensor<16x8xf32>,
                  %b: tensor<8xf32>, %src: tensor<?xi32>, %dst: tensor<?xi32>,
                  %etype: tensor<?xi32>, %src64: tensor<?xi64>, %dst64: tensor<?xi64>,
                  %ntype: tensor<?xi64>, %norm: tensor<?xf32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %t = graph.coo %src64, %dst64, %etype nodes(%n) ntypes(%ntype : tensor<?xi64>)
      : tensor<?xi64>, tensor<?xi64>, tensor<?xi32>
  %m = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x16xf32>, tensor<4x16x8xf32> -> tensor<?x8xf32>
  %m2 = graph.typed_linear %t, %x, %wn rows(dst) by(src_ntype)
      : tensor<?x16xf32>, tensor<3x16x8xf32> -> tensor<?x8xf32>
  %v = graph.typed_linear %t, %x, %wn rows(nodes) by(ntype)
      : tensor<?x16xf32>, tensor<3x16x8xf32> -> tensor<?x8xf32>
  %m3 = graph.typed_linear %g, %e, %we rows(edges) by(etype)
      : tensor<?x8xbf16>, tensor<4x8x8xbf16> -> tensor<?x8xf32>
  %s = graph.linear %x, %root bias(%b : tensor<8xf32>)
      : tensor<?x16xf32>, tensor<16x8xf32> -> tensor<?x8xf32>
  %s2 = graph.linear %x, %root : tensor<?x16xf32>, tensor<16x8xf32> -> tensor<?x8xf32>
  %h = graph.aggregate %g, %m weights(%norm : tensor<?xf32>) to(dst) reduce(sum)
      : tensor<?x8xf32> -> tensor<?x8xf32>
  %h2 = graph.aggregate %g, %m to(src) reduce(sum) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// Backward forms: transposed layers (the gradient of their input) and
// outer sums (the gradient of their weights), per type and over the nodes.
// CHECK-LABEL: func.func @backward_forms
// CHECK: graph.typed_linear %{{.*}}, %{{.*}}, %{{.*}} rows(dst) by(etype) transposed : tensor<?x8xf32>, tensor<4x16x8xf32> -> tensor<?x16xf32>
// CHECK: graph.linear %{{.*}}, %{{.*}} transposed : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
// CHECK: graph.outer_sum %{{.*}}, %{{.*}}, %{{.*}} rows(src, dst) by(etype) types(%{{.*}}) weights(%{{.*}} : tensor<?xf32>) : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<4x16x8xf32>
// CHECK: graph.outer_sum %{{.*}}, %{{.*}}, %{{.*}} rows(nodes, nodes) : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<16x8xf32>
func.func @backward_forms(%x: tensor<?x16xf32>, %dy: tensor<?x8xf32>, %w: tensor<4x16x8xf32>,
                          %root: tensor<16x8xf32>, %src: tensor<?xi32>, %dst: tensor<?xi32>,
                          %etype: tensor<?xi32>, %norm: tensor<?xf32>, %n: index, %t: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %m = graph.typed_linear %g, %dy, %w rows(dst) by(etype) transposed
      : tensor<?x8xf32>, tensor<4x16x8xf32> -> tensor<?x16xf32>
  %s = graph.linear %dy, %root transposed : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
  %dw = graph.outer_sum %g, %x, %dy rows(src, dst) by(etype) types(%t) weights(%norm : tensor<?xf32>)
      : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<4x16x8xf32>
  %dr = graph.outer_sum %g, %x, %dy rows(nodes, nodes)
      : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<16x8xf32>
  return
}

// Attention: scores through a leaky ReLU, softmax over each node's edges,
// per-edge inner products, the gradients of the softmax and the ReLU, and
// an aggregate weighted by per-edge scalars [E, 1].
// CHECK-LABEL: func.func @attention
// CHECK: %[[A:.*]] = graph.leaky_relu %{{.*}} slope(2.000000e-01) : tensor<?x1xf32>
// CHECK: %[[S:.*]] = graph.edge_softmax %{{.*}}, %[[A]] to(dst) : tensor<?x1xf32>
// CHECK: graph.edge_softmax %{{.*}}, %[[A]] to(src) : tensor<?x1xf32>
// CHECK: %[[D:.*]] = graph.inner_product %{{.*}}, %{{.*}}, %{{.*}} rows(dst, edges) : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x1xf32>
// CHECK: %[[G:.*]] = graph.edge_softmax_grad %{{.*}}, %[[S]], %[[D]] to(dst) : tensor<?x1xf32>
// CHECK: graph.leaky_relu_grad %{{.*}}, %[[G]] slope(2.000000e-01) : tensor<?x1xf32>
// CHECK: graph.aggregate %{{.*}}, %{{.*}} weights(%[[S]] : tensor<?x1xf32>) to(dst) reduce(sum)
// CHECK: graph.outer_sum %{{.*}}, %{{.*}}, %{{.*}} rows(src, dst) by(etype) types(%{{.*}}) weights(%[[S]] : tensor<?x1xf32>)
func.func @attention(%x: tensor<?x8xf32>, %m: tensor<?x8xf32>, %s: tensor<?x1xf32>,
                     %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>,
                     %n: index, %t: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %a = graph.leaky_relu %s slope(2.000000e-01) : tensor<?x1xf32>
  %alpha = graph.edge_softmax %g, %a to(dst) : tensor<?x1xf32>
  %beta = graph.edge_softmax %g, %a to(src) : tensor<?x1xf32>
  %d = graph.inner_product %g, %x, %m rows(dst, edges)
      : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x1xf32>
  %ds = graph.edge_softmax_grad %g, %alpha, %d to(dst) : tensor<?x1xf32>
  %da = graph.leaky_relu_grad %s, %ds slope(2.000000e-01) : tensor<?x1xf32>
  %h = graph.aggregate %g, %m weights(%alpha : tensor<?x1xf32>) to(dst) reduce(sum)
      : tensor<?x8xf32> -> tensor<?x8xf32>
  %w = graph.outer_sum %g, %x, %x rows(src, dst) by(etype) types(%t)
      weights(%alpha : tensor<?x1xf32>) : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8x8xf32>
  return
}

// Compact materialization: a bipartite graph from (source, type) pairs to
// nodes, and an aggregate of node rows read at the edges' sources.
// CHECK-LABEL: func.func @bipartite
// CHECK: %[[B:.*]] = graph.coo %{{.*}}, %{{.*}}, %{{.*}} nodes(%{{.*}}) sources(%{{.*}}) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
// CHECK: graph.aggregate %[[B]], %{{.*}} rows(src) weights(%{{.*}} : tensor<?x1xf32>) to(dst) reduce(sum)
func.func @bipartite(%rows: tensor<?x8xf32>, %w: tensor<?x1xf32>, %pair: tensor<?xi32>,
                     %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index, %p: index) {
  %b = graph.coo %pair, %dst, %etype nodes(%n) sources(%p)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %h = graph.aggregate %b, %rows rows(src) weights(%w : tensor<?x1xf32>) to(dst) reduce(sum)
      : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}
