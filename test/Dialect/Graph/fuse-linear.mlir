// RUN: kge-opt %s -split-input-file --graph-fuse-linear | FileCheck %s

// RGAT's scores as PyG writes them, (x_dst W_r) q + (x_src W_r) k: each
// becomes one typed linear layer of one column by the composed matrices
// W_r q and W_r k, new parameters derived from the weights. The per-edge
// rows x W_r are gone; the messages' layer (another weight) stays.
// CHECK-LABEL: func.func @rgat(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x?xf32> {kge.param = "x"}, %[[W:[^:]*]]: tensor<?x?x?xf32> {kge.param = "weight"},
// CHECK-SAME: %[[WQ:[^:]*]]: tensor<?x?x1xf32> {kge.derived = {function = "compose", lhs = "weight", rhs = "query"}, kge.param = "weight_query"},
// CHECK-SAME: %[[WK:[^:]*]]: tensor<?x?x1xf32> {kge.derived = {function = "compose", lhs = "weight", rhs = "key"}, kge.param = "weight_key"})
// CHECK: %[[G:.*]] = graph.coo
// CHECK-NOT: graph.linear
// CHECK: %[[SD:.*]] = graph.typed_linear %[[G]], %[[X]], %[[WQ]] rows(dst) by(etype) {kge.name = "query_scores"} : tensor<?x?xf32>, tensor<?x?x1xf32> -> tensor<?x1xf32>
// CHECK: %[[SS:.*]] = graph.typed_linear %[[G]], %[[X]], %[[WK]] rows(src) by(etype) : tensor<?x?xf32>, tensor<?x?x1xf32> -> tensor<?x1xf32>
// CHECK: arith.addf %[[SD]], %[[SS]]
// CHECK: graph.typed_linear %[[G]], %[[X]], %[[W]] rows(src) by(etype) : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
// CHECK-NOT: graph.linear
func.func @rgat(%x: tensor<?x?xf32> {kge.param = "x"},
                %w: tensor<?x?x?xf32> {kge.param = "weight"},
                %q: tensor<?x1xf32> {kge.param = "query"},
                %k: tensor<?x1xf32> {kge.param = "key"},
                %src: tensor<?xi32> {kge.param = "src"},
                %dst: tensor<?xi32> {kge.param = "dst"},
                %etype: tensor<?xi32> {kge.param = "edge_type"})
    -> (tensor<?x?xf32> {kge.param = "out"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %hd = graph.typed_linear %g, %x, %w rows(dst) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %sd = graph.linear %hd, %q {kge.name = "query_scores"}
      : tensor<?x?xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
  %hs = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %ss = graph.linear %hs, %k : tensor<?x?xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
  %s = arith.addf %sd, %ss : tensor<?x1xf32>
  %a = graph.edge_softmax %g, %s to(dst) : tensor<?x1xf32>
  %m = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %out = graph.aggregate %g, %m weights(%a : tensor<?x1xf32>) to(dst) reduce(sum)
      : tensor<?x?xf32> -> tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}

// -----

// A second matrix per type: over edge rows by edge type, and over node rows
// by node type; a chain of three composes twice (the second composition
// derived from the first). The first layer stays where it has another use.
// CHECK-LABEL: func.func @typed(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x8xf32> {kge.param = "x"}, %[[A:[^:]*]]: tensor<3x8x16xf32> {kge.param = "a"}, %[[B:[^:]*]]: tensor<3x16x4xf32> {kge.param = "b"}, %[[C:[^:]*]]: tensor<3x4x2xf32> {kge.param = "c"},
// CHECK-SAME: %[[AB:[^:]*]]: tensor<3x8x4xf32> {kge.derived = {function = "compose", lhs = "a", rhs = "b"}, kge.param = "a_b"},
// CHECK-SAME: %[[ABC:[^:]*]]: tensor<3x8x2xf32> {kge.derived = {function = "compose", lhs = "a_b", rhs = "c"}, kge.param = "a_b_c"})
// CHECK: %[[H:.*]] = graph.typed_linear %{{.*}}, %[[X]], %[[A]] rows(src) by(etype)
// CHECK: graph.typed_linear %{{.*}}, %[[X]], %[[ABC]] rows(src) by(etype) : tensor<?x8xf32>, tensor<3x8x2xf32> -> tensor<?x2xf32>
// The same two matrices compose once, whichever layers they chain.
// CHECK: graph.typed_linear %{{.*}}, %[[X]], %[[AB]] rows(nodes) by(ntype) : tensor<?x8xf32>, tensor<3x8x4xf32> -> tensor<?x4xf32>
// CHECK: graph.aggregate %{{.*}}, %[[H]]
func.func @typed(%x: tensor<?x8xf32> {kge.param = "x"},
                 %a: tensor<3x8x16xf32> {kge.param = "a"},
                 %b: tensor<3x16x4xf32> {kge.param = "b"},
                 %c: tensor<3x4x2xf32> {kge.param = "c"},
                 %wt: tensor<?x1xf32> {kge.param = "weights"},
                 %src: tensor<?xi32> {kge.param = "src"},
                 %dst: tensor<?xi32> {kge.param = "dst"},
                 %etype: tensor<?xi32> {kge.param = "edge_type"},
                 %ntype: tensor<?xi32> {kge.param = "node_type"})
    -> (tensor<?x2xf32>, tensor<?x4xf32>, tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) ntypes(%ntype : tensor<?xi32>)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %h = graph.typed_linear %g, %x, %a rows(src) by(etype)
      : tensor<?x8xf32>, tensor<3x8x16xf32> -> tensor<?x16xf32>
  %h2 = graph.typed_linear %g, %h, %b rows(edges) by(etype)
      : tensor<?x16xf32>, tensor<3x16x4xf32> -> tensor<?x4xf32>
  %h3 = graph.typed_linear %g, %h2, %c rows(edges) by(etype)
      : tensor<?x4xf32>, tensor<3x4x2xf32> -> tensor<?x2xf32>
  %v = graph.typed_linear %g, %x, %a rows(nodes) by(ntype)
      : tensor<?x8xf32>, tensor<3x8x16xf32> -> tensor<?x16xf32>
  %v2 = graph.typed_linear %g, %v, %b rows(nodes) by(ntype)
      : tensor<?x16xf32>, tensor<3x16x4xf32> -> tensor<?x4xf32>
  %sum = graph.aggregate %g, %h weights(%wt : tensor<?x1xf32>) to(dst) reduce(sum)
      : tensor<?x16xf32> -> tensor<?x16xf32>
  return %h3, %v2, %sum : tensor<?x2xf32>, tensor<?x4xf32>, tensor<?x16xf32>
}

// -----

// Left as they are: a linear layer with a bias, a consumer marked
// kge.fuse = false, a matrix that is not a named parameter, a second layer
// typed differently from the first, a transposed first layer.
// CHECK-LABEL: func.func @kept(
// CHECK-NOT: kge.derived
// CHECK: graph.linear {{.*}} bias(
// CHECK: graph.linear %{{.*}}, %{{.*}} :
// CHECK: graph.typed_linear {{.*}} rows(edges) by(etype) {kge.fuse = false}
// CHECK: graph.typed_linear {{.*}} rows(edges) by(etype) :
// CHECK: graph.typed_linear {{.*}} transposed
// CHECK: graph.linear %{{.*}}, %{{.*}} :
// CHECK: return
func.func @kept(%x: tensor<?x8xf32> {kge.param = "x"},
                %a: tensor<3x8x16xf32> {kge.param = "a"},
                %at: tensor<3x16x8xf32> {kge.param = "at"},
                %q: tensor<16x1xf32> {kge.param = "q"},
                %unnamed: tensor<16x1xf32>,
                %bias: tensor<1xf32> {kge.param = "bias"},
                %b: tensor<3x16x4xf32> {kge.param = "b"},
                %src: tensor<?xi32> {kge.param = "src"},
                %dst: tensor<?xi32> {kge.param = "dst"},
                %etype: tensor<?xi32> {kge.param = "edge_type"},
                %ntype: tensor<?xi32> {kge.param = "node_type"})
    -> (tensor<?x1xf32>, tensor<?x1xf32>, tensor<?x1xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) ntypes(%ntype : tensor<?xi32>)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %h = graph.typed_linear %g, %x, %a rows(src) by(etype)
      : tensor<?x8xf32>, tensor<3x8x16xf32> -> tensor<?x16xf32>
  %s0 = graph.linear %h, %q bias(%bias : tensor<1xf32>)
      : tensor<?x16xf32>, tensor<16x1xf32> -> tensor<?x1xf32>
  %s1 = graph.linear %h, %unnamed : tensor<?x16xf32>, tensor<16x1xf32> -> tensor<?x1xf32>
  %s2 = graph.typed_linear %g, %h, %b rows(edges) by(etype) {kge.fuse = false}
      : tensor<?x16xf32>, tensor<3x16x4xf32> -> tensor<?x4xf32>
  %hn = graph.typed_linear %g, %x, %a rows(src) by(src_ntype)
      : tensor<?x8xf32>, tensor<3x8x16xf32> -> tensor<?x16xf32>
  %s3 = graph.typed_linear %g, %hn, %b rows(edges) by(etype)
      : tensor<?x16xf32>, tensor<3x16x4xf32> -> tensor<?x4xf32>
  %ht = graph.typed_linear %g, %x, %at rows(src) by(etype) transposed
      : tensor<?x8xf32>, tensor<3x16x8xf32> -> tensor<?x16xf32>
  %s4 = graph.linear %ht, %q : tensor<?x16xf32>, tensor<16x1xf32> -> tensor<?x1xf32>
  return %s0, %s1, %s4, %s2, %s3 : tensor<?x1xf32>, tensor<?x1xf32>, tensor<?x1xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}
