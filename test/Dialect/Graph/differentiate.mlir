// RUN: kge-opt %s -split-input-file --graph-differentiate -verify-diagnostics | FileCheck %s
// RUN: kge-opt %s -split-input-file --graph-differentiate=keep-forward=0 -verify-diagnostics | FileCheck %s --check-prefix=ALONE

// RGCN's backward function: the forward's parameters and the output's
// gradient in; the gradients of x (through the transposed relation
// matrices, summed into the edges' sources, plus the transposed root term),
// of the relation matrices (an outer sum per edge type, the edges' norm
// applied) and of the root weight (an outer sum over the nodes) out. The
// forward layers it does not read are gone; the bias and the norm get no
// gradient.
// CHECK-LABEL: func.func @rgcn(
// CHECK-LABEL: func.func @rgcn_grad(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x?xf32> {kge.param = "x"}, %[[W:[^:]*]]: tensor<?x?x?xf32> {kge.param = "weight"}, %[[ROOT:[^:]*]]: tensor<?x?xf32> {kge.param = "root"}, %{{[^:]*}}: tensor<?xf32> {kge.param = "bias"}, %[[SRC:[^:]*]]: tensor<?xi32> {kge.param = "src"}, %[[DST:[^:]*]]: tensor<?xi32> {kge.param = "dst"}, %[[ET:[^:]*]]: tensor<?xi32> {kge.param = "edge_type"}, %[[NORM:[^:]*]]: tensor<?xf32> {kge.param = "norm"}, %[[DY:[^:]*]]: tensor<?x?xf32> {kge.param = "grad_out"})
// CHECK-SAME: -> (tensor<?x?xf32> {kge.param = "grad_x"}, tensor<?x?x?xf32> {kge.param = "grad_weight"}, tensor<?x?xf32> {kge.param = "grad_root"})
// CHECK: %[[G:.*]] = graph.coo %[[SRC]], %[[DST]], %[[ET]]
// CHECK-NOT: graph.typed_linear %[[G]], %[[X]]
// CHECK-DAG: %[[DXS:.*]] = graph.linear %[[DY]], %[[ROOT]] transposed
// CHECK-DAG: %[[DR:.*]] = graph.outer_sum %[[G]], %[[X]], %[[DY]] rows(nodes, nodes)
// CHECK-DAG: %[[M:.*]] = graph.typed_linear %[[G]], %[[DY]], %[[W]] rows(dst) by(etype) transposed
// CHECK-DAG: %[[DXE:.*]] = graph.aggregate %[[G]], %[[M]] weights(%[[NORM]] : tensor<?xf32>) to(src) reduce(sum)
// CHECK-DAG: %[[T:.*]] = tensor.dim %[[W]], %{{.*}} : tensor<?x?x?xf32>
// CHECK-DAG: %[[DW:.*]] = graph.outer_sum %[[G]], %[[X]], %[[DY]] rows(src, dst) by(etype) types(%[[T]]) weights(%[[NORM]] : tensor<?xf32>)
// CHECK: %[[DX:.*]] = arith.addf %[[DXS]], %[[DXE]]
// CHECK: return %[[DX]], %[[DW]], %[[DR]]
// ALONE-NOT: func.func @rgcn(
// ALONE: func.func @rgcn_grad(
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
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %messages = graph.typed_linear %g, %x, %weight rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %neighbours = graph.aggregate %g, %messages weights(%norm : tensor<?xf32>)
      to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  %self = graph.linear %x, %root bias(%bias : tensor<?xf32>)
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %out = arith.addf %neighbours, %self : tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}

// -----

// Messages along the other direction (rows of the destinations summed into
// the sources), a transposed layer: the rules exchange the ends and the
// transposition.
// CHECK-LABEL: func.func @reverse_grad(
// CHECK-DAG: graph.typed_linear %{{.*}}, %{{.*}}, %{{.*}} rows(src) by(etype) : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
// CHECK-DAG: graph.aggregate %{{.*}}, %{{.*}} to(dst) reduce(sum)
// CHECK-DAG: graph.outer_sum %{{.*}}, %[[DY:[^,]*]], %[[H:[^ ]*]] rows(src, dst) by(etype)
func.func @reverse(%h: tensor<?x?xf32> {kge.param = "h"}, %w: tensor<?x?x?xf32> {kge.param = "w"},
                   %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>)
    -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %h, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %m = graph.typed_linear %g, %h, %w rows(dst) by(etype) transposed
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %r = graph.aggregate %g, %m to(src) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

func.func @node_types(%x: tensor<?x?xf32>, %w: tensor<?x?x?xf32>, %src: tensor<?xi32>,
                      %dst: tensor<?xi32>, %etype: tensor<?xi32>, %ntype: tensor<?xi32>)
    -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) ntypes(%ntype : tensor<?xi32>)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{rows(src) by(src_ntype) is not differentiated: the backward of an aggregated typed linear layer takes a node's rows at an edge's end by the edge type}}
  %m = graph.typed_linear %g, %x, %w rows(src) by(src_ntype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %r = graph.aggregate %g, %m to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

func.func @half_input(%x: tensor<?x?xf16>, %root: tensor<?x?xf16>, %src: tensor<?xi32>,
                      %dst: tensor<?xi32>, %etype: tensor<?xi32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{is differentiated with respect to its input of type 'tensor<?x?xf16>'; gradients are computed in f32}}
  %s = graph.linear %x, %root : tensor<?x?xf16>, tensor<?x?xf16> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

func.func @no_rule(%x: tensor<?x?xf32>, %root: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %s = graph.linear %x, %root : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  // expected-error @+1 {{has no backward rule (graph-differentiate derives sums, linear and typed linear layers, aggregates of typed linear layers, edge softmaxes, leaky ReLUs and inner products)}}
  %e = math.exp %s : tensor<?x?xf32>
  return %e : tensor<?x?xf32>
}

// -----

// Typed linear layers alone: by node type, the transposed layer over the
// nodes and an outer sum per node type.
// CHECK-LABEL: func.func @node_types_grad(
// CHECK-DAG: graph.typed_linear %[[G:[^,]*]], %[[DY:[^,]*]], %{{[^ ]*}} rows(nodes) by(ntype) transposed
// CHECK-DAG: graph.outer_sum %[[G]], %{{[^,]*}}, %[[DY]] rows(nodes, nodes) by(ntype) types(%{{.*}})
func.func @node_types(%x: tensor<?x?xf32> {kge.param = "x"}, %wn: tensor<?x?x?xf32> {kge.param = "wn"},
                      %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>,
                      %ntype: tensor<?xi32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) ntypes(%ntype : tensor<?xi32>)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %p = graph.typed_linear %g, %x, %wn rows(nodes) by(ntype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  return %p : tensor<?x?xf32>
}

// -----

// Over an edge's source rows (one result row per edge): the rows of the
// output's gradient through the transposed matrices, summed back into the
// sources, and an outer sum per edge type.
// CHECK-LABEL: func.func @edge_rows_grad(
// CHECK-DAG: %[[B:.*]] = graph.typed_linear %[[G:[^,]*]], %[[DY:[^,]*]], %{{[^ ]*}} rows(edges) by(etype) transposed
// CHECK-DAG: graph.aggregate %[[G]], %[[B]] to(src) reduce(sum)
// CHECK-DAG: graph.outer_sum %[[G]], %{{[^,]*}}, %[[DY]] rows(src, edges) by(etype) types(%{{.*}})
func.func @edge_rows(%x: tensor<?x?xf32> {kge.param = "x"}, %w: tensor<?x?x?xf32> {kge.param = "w"},
                     %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>)
    -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %y = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// expected-error @+1 {{has a parameter named 'grad_x', the name of a gradient of its backward function; rename it}}
func.func @name_clash(%x: tensor<?x?xf32> {kge.param = "x"}, %grad_x: tensor<?x?xf32> {kge.param = "grad_x"},
                      %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>)
    -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %s = graph.linear %x, %grad_x : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// RGAT: the attention's gradient is each message's inner product with the
// gradient at its destination (the computed weights are differentiated),
// then goes back through the edge softmax and the leaky ReLU to the
// scores' one-column typed linear layers.
// CHECK-LABEL: func.func @rgat_grad
// CHECK: %[[SUM:.*]] = arith.addf %[[QI:.*]], %[[KJ:.*]] : tensor<?x1xf32>
// CHECK: %[[ACT:.*]] = graph.leaky_relu %[[SUM]]
// CHECK: %[[ALPHA:.*]] = graph.edge_softmax %{{.*}}, %[[ACT]] to(dst)
// CHECK: %[[M:.*]] = graph.typed_linear %{{.*}}, %{{.*}}, %{{.*}} rows(src) by(etype)
// CHECK: %[[DA:.*]] = graph.inner_product %{{.*}}, %{{.*}}, %[[M]] rows(dst, edges)
// CHECK: graph.aggregate %{{.*}}, %{{.*}} weights(%[[ALPHA]] : tensor<?x1xf32>) to(src)
// CHECK: graph.outer_sum {{.*}} rows(src, dst) by(etype) {{.*}} weights(%[[ALPHA]] : tensor<?x1xf32>)
// CHECK: %[[DS:.*]] = graph.edge_softmax_grad %{{.*}}, %[[ALPHA]], %[[DA]] to(dst)
// CHECK: %[[DP:.*]] = graph.leaky_relu_grad %[[SUM]], %[[DS]] slope(2.000000e-01)
// CHECK: graph.typed_linear %{{.*}}, %[[DP]], %{{.*}} rows(edges) by(etype) transposed
// CHECK: graph.outer_sum %{{.*}}, %{{.*}}, %[[DP]] rows(src, edges) by(etype)
// CHECK: graph.outer_sum %{{.*}}, %{{.*}}, %[[DP]] rows(dst, edges) by(etype)
// CHECK: return {{.*}} : tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>
// ALONE-LABEL: func.func @rgat_grad
func.func @rgat(%x: tensor<?x?xf32> {kge.param = "x"},
                %weight: tensor<?x?x?xf32> {kge.param = "weight"},
                %query: tensor<?x?x1xf32> {kge.param = "query"},
                %key: tensor<?x?x1xf32> {kge.param = "key"},
                %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>)
    -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %qi = graph.typed_linear %g, %x, %query rows(dst) by(etype)
      : tensor<?x?xf32>, tensor<?x?x1xf32> -> tensor<?x1xf32>
  %kj = graph.typed_linear %g, %x, %key rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x1xf32> -> tensor<?x1xf32>
  %s = arith.addf %qi, %kj : tensor<?x1xf32>
  %a = graph.leaky_relu %s slope(2.000000e-01) : tensor<?x1xf32>
  %alpha = graph.edge_softmax %g, %a to(dst) : tensor<?x1xf32>
  %m = graph.typed_linear %g, %x, %weight rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %out = graph.aggregate %g, %m weights(%alpha : tensor<?x1xf32>) to(dst) reduce(sum)
      : tensor<?x?xf32> -> tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}

// -----

// HGT's scores: the inner product of each edge's key (a typed linear
// layer's edge rows) with its destination's query. The keys' input and
// matrices get the queries through the transposed matrices and an outer
// sum, both weighted by the scores' gradient; the queries get the keys
// (recomputed by a new typed linear layer) summed into the destinations.
// CHECK-LABEL: func.func @hgt_grad
// CHECK: %[[DS:.*]] = graph.edge_softmax_grad
// CHECK: %[[T:.*]] = graph.typed_linear %{{.*}}, %[[Q:[^,]*]], %[[K:[^ ]*]] rows(dst) by(etype) transposed
// CHECK: graph.aggregate %{{.*}}, %[[T]] weights(%[[DS]] : tensor<?x1xf32>) to(src)
// CHECK: graph.outer_sum {{.*}} rows(src, dst) by(etype) {{.*}} weights(%[[DS]] : tensor<?x1xf32>)
// CHECK: %[[AGAIN:.*]] = graph.typed_linear %{{.*}}, %{{.*}}, %[[K]] rows(src) by(etype) :
// CHECK: graph.aggregate %{{.*}}, %[[AGAIN]] weights(%[[DS]] : tensor<?x1xf32>) to(dst)
// ALONE-LABEL: func.func @hgt_grad
func.func @hgt(%k: tensor<?x?xf32>, %q: tensor<?x?xf32>, %v: tensor<?x?xf32>,
               %krel: tensor<?x?x?xf32>, %vrel: tensor<?x?x?xf32>,
               %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>)
    -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %keys = graph.typed_linear %g, %k, %krel rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %s = graph.inner_product %g, %keys, %q rows(edges, dst)
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x1xf32>
  %alpha = graph.edge_softmax %g, %s to(dst) : tensor<?x1xf32>
  %values = graph.typed_linear %g, %v, %vrel rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %out = graph.aggregate %g, %values weights(%alpha : tensor<?x1xf32>) to(dst) reduce(sum)
      : tensor<?x?xf32> -> tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}
