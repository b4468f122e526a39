// RUN: kge-opt %s -split-input-file --graph-compact-materialize -verify-diagnostics | FileCheck %s
// RUN: kge-opt %s -split-input-file --graph-compact-materialize=marked-only=1 -verify-diagnostics | FileCheck %s --check-prefix=MARKED

// HGT (examples/graph/hgt.mlir): the keys' and the values' typed linear
// layers are computed once per (source, edge type) pair. The function
// gains the pairs' graph data, derived from its src and edge_type, shared
// by both layers; the inner product and the aggregate read the pairs' rows
// at the sources of the bipartite graph from the pairs to the nodes. The
// softmax stays on the original graph (same edges, same order).
// CHECK-LABEL: func.func @hgt(
// CHECK-SAME: %[[K:[^:]*]]: tensor<?x?xf32> {kge.param = "k"}, %[[Q:[^:]*]]: tensor<?x?xf32> {kge.param = "q"}, %[[V:[^:]*]]: tensor<?x?xf32> {kge.param = "v"}, %[[KR:[^:]*]]: tensor<?x?x?xf32> {kge.param = "k_rel"}, %[[VR:[^:]*]]: tensor<?x?x?xf32> {kge.param = "v_rel"},
// CHECK-SAME: %[[SRC:[^:]*]]: tensor<?xi32> {kge.param = "src"}, %[[DST:[^:]*]]: tensor<?xi32> {kge.param = "dst"}, %[[ET:[^:]*]]: tensor<?xi32> {kge.param = "edge_type"},
// CHECK-SAME: %[[PS:[^:]*]]: tensor<?xi32> {kge.derived = {etype = "edge_type", function = "source_type_pairs", part = "pair_src", src = "src"}, kge.param = "pair_src"},
// CHECK-SAME: %[[PT:[^:]*]]: tensor<?xi32> {kge.derived = {etype = "edge_type", function = "source_type_pairs", part = "pair_type", src = "src"}, kge.param = "pair_type"},
// CHECK-SAME: %[[EP:[^:]*]]: tensor<?xi32> {kge.derived = {etype = "edge_type", function = "source_type_pairs", part = "edge_pair", src = "src"}, kge.param = "edge_pair"})
// CHECK: %[[N:.*]] = tensor.dim %[[Q]]
// CHECK: %[[G:.*]] = graph.coo %[[SRC]], %[[DST]], %[[ET]] nodes(%[[N]])
// CHECK: %[[P:.*]] = tensor.dim %[[PS]]
// CHECK: %[[PAIRS:.*]] = graph.coo %[[PS]], %[[PS]], %[[PT]] nodes(%[[N]])
// CHECK: %[[EDGES:.*]] = graph.coo %[[EP]], %[[DST]], %[[ET]] nodes(%[[N]]) sources(%[[P]])
// CHECK: %[[KEYS:.*]] = graph.typed_linear %[[PAIRS]], %[[K]], %[[KR]] rows(src) by(etype) {kge.name = "keys"}
// CHECK: %[[S:.*]] = graph.inner_product %[[EDGES]], %[[KEYS]], %[[Q]] rows(src, dst) {kge.name = "scores"}
// CHECK: %[[A:.*]] = graph.edge_softmax %[[G]], %[[S]] to(dst)
// CHECK: %[[VALS:.*]] = graph.typed_linear %[[PAIRS]], %[[V]], %[[VR]] rows(src) by(etype)
// CHECK: %[[OUT:.*]] = graph.aggregate %[[EDGES]], %[[VALS]] rows(src) weights(%[[A]] : tensor<?x1xf32>) to(dst) reduce(sum)
// CHECK: return %[[OUT]]
// Only the marked layer (the values) with marked-only; the keys stay per
// edge.
// MARKED-LABEL: func.func @hgt(
// MARKED: graph.typed_linear %{{.*}}, %{{.*}}, %{{.*}} rows(src) by(etype) {kge.name = "keys"}
// MARKED: graph.inner_product %{{.*}}, %{{.*}}, %{{.*}} rows(edges, dst)
// MARKED: graph.typed_linear %{{.*}}, %{{.*}}, %{{.*}} rows(src) by(etype) :
// MARKED: graph.aggregate %{{.*}}, %{{.*}} rows(src) weights
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
  %keys = graph.typed_linear %g, %k, %krel rows(src) by(etype) {kge.name = "keys"}
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %s = graph.inner_product %g, %keys, %q rows(edges, dst) {kge.name = "scores"}
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x1xf32>
  %alpha = graph.edge_softmax %g, %s to(dst) : tensor<?x1xf32>
  %values = graph.typed_linear %g, %v, %vrel rows(src) by(etype) {kge.materialize = "compact"}
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %out = graph.aggregate %g, %values weights(%alpha : tensor<?x1xf32>)
      to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}

// -----

// Layers typed by their row's own node type are computed once per node
// (rows(nodes) by(ntype)) and read at the edge's end: no graph data. The
// inner product's other side is read at the source on the same graph.
// CHECK-LABEL: func.func @node_typed(
// CHECK-NOT: pair_src
// CHECK: %[[G:.*]] = graph.coo
// CHECK: %[[KEYS:.*]] = graph.typed_linear %[[G]], %{{.*}}, %{{.*}} rows(nodes) by(ntype)
// CHECK: %[[S:.*]] = graph.inner_product %[[G]], %{{.*}}, %[[KEYS]] rows(src, src)
// CHECK: %[[VALS:.*]] = graph.typed_linear %[[G]], %{{.*}}, %{{.*}} rows(nodes) by(ntype)
// CHECK: graph.aggregate %[[G]], %[[VALS]] rows(dst) weights(%[[S]] : tensor<?x1xf32>) to(src)
func.func @node_typed(%x: tensor<?x?xf32> {kge.param = "x"},
                      %w: tensor<?x?x?xf32> {kge.param = "w"},
                      %src: tensor<?xi32> {kge.param = "src"},
                      %dst: tensor<?xi32> {kge.param = "dst"},
                      %etype: tensor<?xi32> {kge.param = "edge_type"},
                      %ntype: tensor<?xi32> {kge.param = "node_type"})
    -> (tensor<?x?xf32> {kge.param = "out"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) ntypes(%ntype : tensor<?xi32>)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %keys = graph.typed_linear %g, %x, %w rows(src) by(src_ntype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %s = graph.inner_product %g, %x, %keys rows(src, edges)
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x1xf32>
  %values = graph.typed_linear %g, %x, %w rows(dst) by(dst_ntype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %out = graph.aggregate %g, %values weights(%s : tensor<?x1xf32>)
      to(src) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}

// -----

// Layers whose uses cannot read compact rows stay per edge: an aggregate
// without weights, one with [E] weights (RGCN's normalization), one into
// the sources, an inner product with the other side at the source, a use
// by another op, a layer marked vanilla. No graph data is added.
// CHECK-LABEL: func.func @vanilla(
// CHECK-NOT: pair_src
// CHECK-NOT: rows(nodes)
// CHECK-NOT: sources(
// CHECK-NOT: aggregate {{.*}} rows(
// CHECK: return
func.func @vanilla(%x: tensor<?x?xf32> {kge.param = "x"},
                   %w: tensor<?x?x?xf32> {kge.param = "w"},
                   %u: tensor<?x?x?xf32> {kge.param = "u"},
                   %norm: tensor<?xf32> {kge.param = "norm"},
                   %a: tensor<?x1xf32> {kge.param = "a"},
                   %src: tensor<?xi32> {kge.param = "src"},
                   %dst: tensor<?xi32> {kge.param = "dst"},
                   %etype: tensor<?xi32> {kge.param = "edge_type"})
    -> (tensor<?x?xf32> {kge.param = "out"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %m0 = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %h0 = graph.aggregate %g, %m0 to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  %m1 = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %h1 = graph.aggregate %g, %m1 weights(%norm : tensor<?xf32>) to(dst) reduce(sum)
      : tensor<?x?xf32> -> tensor<?x?xf32>
  %m2 = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %h2 = graph.aggregate %g, %m2 weights(%a : tensor<?x1xf32>) to(src) reduce(sum)
      : tensor<?x?xf32> -> tensor<?x?xf32>
  %k = graph.typed_linear %g, %x, %u rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x1xf32>
  %s = graph.inner_product %g, %x, %k rows(src, edges)
      : tensor<?x?xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
  %k2 = graph.typed_linear %g, %x, %u rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x1xf32>
  %t = arith.addf %s, %k2 : tensor<?x1xf32>
  %m3 = graph.typed_linear %g, %x, %w rows(src) by(etype) {kge.materialize = "vanilla"}
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %h3 = graph.aggregate %g, %m3 weights(%t : tensor<?x1xf32>) to(dst) reduce(sum)
      : tensor<?x?xf32> -> tensor<?x?xf32>
  %o0 = arith.addf %h0, %h1 : tensor<?x?xf32>
  %o1 = arith.addf %o0, %h2 : tensor<?x?xf32>
  %o2 = arith.addf %o1, %h3 : tensor<?x?xf32>
  return %o2 : tensor<?x?xf32>
}

// -----

// The pairs' parameters take names that are free: a function with a
// `pair_src` of its own gets `src_pair_src`.
// CHECK-LABEL: func.func @clash(
// CHECK-SAME: {kge.param = "pair_src"}
// CHECK-SAME: kge.param = "src_pair_src"}
// CHECK-SAME: kge.param = "pair_type"}
// CHECK-SAME: kge.param = "edge_pair"}
func.func @clash(%x: tensor<?x?xf32> {kge.param = "x"},
                 %w: tensor<?x?x?xf32> {kge.param = "w"},
                 %a: tensor<?x1xf32> {kge.param = "pair_src"},
                 %src: tensor<?xi32> {kge.param = "src"},
                 %dst: tensor<?xi32> {kge.param = "dst"},
                 %etype: tensor<?xi32> {kge.param = "edge_type"})
    -> (tensor<?x?xf32> {kge.param = "out"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %m = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %h = graph.aggregate %g, %m weights(%a : tensor<?x1xf32>) to(dst) reduce(sum)
      : tensor<?x?xf32> -> tensor<?x?xf32>
  return %h : tensor<?x?xf32>
}

// -----

// The pairs are derived from the graph's parameters: a graph whose edges
// are not named parameters cannot be compacted.
func.func @unnamed(%x: tensor<?x?xf32> {kge.param = "x"},
                   %w: tensor<?x?x?xf32> {kge.param = "w"},
                   %a: tensor<?x1xf32> {kge.param = "a"},
                   %src: tensor<?xi32>,
                   %dst: tensor<?xi32> {kge.param = "dst"},
                   %etype: tensor<?xi32> {kge.param = "edge_type"})
    -> (tensor<?x?xf32> {kge.param = "out"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @below {{its graph's src and etype must be parameters of the function named by kge.param}}
  %m = graph.typed_linear %g, %x, %w rows(src) by(etype) {kge.materialize = "compact"}
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %h = graph.aggregate %g, %m weights(%a : tensor<?x1xf32>) to(dst) reduce(sum)
      : tensor<?x?xf32> -> tensor<?x?xf32>
  return %h : tensor<?x?xf32>
}
