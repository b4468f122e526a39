// RUN: kge-opt %s -split-input-file --convert-graph-to-tile | FileCheck %s
// RUN: kge-opt %s -split-input-file --convert-graph-to-tile --convert-tile-to-scf | FileCheck %s --check-prefix=LOOPS

// RGCN: the root term is stored first (a dense task, its bias in the
// projection), then the messages are added into their destination nodes:
// one task whose rows are gathered through the sources, whose matrix is
// the edge type's and whose rows are scaled by the edges' weights; no
// per-edge tensor. The result becomes the last parameter, allocated by the
// runtime (kge.result).
// CHECK-LABEL: func.func @rgcn
// CHECK-SAME: (%[[X:.*]]: memref<?x?xf32> {kge.param = "x"}, %[[W:.*]]: memref<?x?x?xf32> {kge.param = "weight"}, %[[ROOT:.*]]: memref<?x?xf32> {kge.param = "root"}, %[[B:.*]]: memref<?xf32> {kge.param = "bias"}, %[[SRC:.*]]: memref<?xi32> {kge.param = "src"}, %[[DST:.*]]: memref<?xi32> {kge.param = "dst"}, %[[ET:.*]]: memref<?xi32> {kge.param = "edge_type"}, %[[NORM:.*]]: memref<?xf32> {kge.param = "norm"}, %[[OUT:.*]]: memref<?x?xf32> {kge.param = "out", kge.result})
// CHECK: tile.task ins(%[[X]], %[[ROOT]], %[[B]] : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>) outs(%[[OUT]] : memref<?x?xf32>) maps [#{{.*}}, #{{.*}}, #{{.*}}] accumulate add output dense inner {
// CHECK: arith.mulf
// CHECK: } project {
// CHECK: arith.addf
// CHECK: tile.task ins(%[[X]], %[[W]], %[[NORM]] : memref<?x?xf32>, memref<?x?x?xf32>, memref<?xf32>) keys(%[[DST]] : memref<?xi32>) outs(%[[OUT]] : memref<?x?xf32>) gathers(%[[SRC]], %[[ET]] : memref<?xi32>, memref<?xi32>) maps [#{{.*}}, #{{.*}}, #{{.*}}] accumulate add output aggregate {gathered = {{\[}}[0, 0], [1, 0]]} inner {
// CHECK: } project {
// CHECK: arith.mulf
// CHECK: return
// The CPU path: both tasks as loops, the second adding each edge's row
// into its destination's.
// LOOPS-LABEL: func.func @rgcn
// LOOPS-NOT: tile.task
// LOOPS: memref.store %{{.*}}, %arg8[%{{.*}}, %{{.*}}] : memref<?x?xf32>
// LOOPS: %[[D:.*]] = memref.load %arg5[%{{.*}}] : memref<?xi32>
// LOOPS: %[[ROW:.*]] = arith.index_cast %[[D]] : i32 to index
// LOOPS: %[[OLD:.*]] = memref.load %arg8[%[[ROW]], %[[J:.*]]] : memref<?x?xf32>
// LOOPS: %[[NEW:.*]] = arith.addf %[[OLD]], %{{.*}} : f32
// LOOPS: memref.store %[[NEW]], %arg8[%[[ROW]], %[[J]]] : memref<?x?xf32>
func.func @rgcn(%x: tensor<?x?xf32> {kge.param = "x"}, %weight: tensor<?x?x?xf32> {kge.param = "weight"},
                %root: tensor<?x?xf32> {kge.param = "root"}, %bias: tensor<?xf32> {kge.param = "bias"},
                %src: tensor<?xi32> {kge.param = "src"}, %dst: tensor<?xi32> {kge.param = "dst"},
                %etype: tensor<?xi32> {kge.param = "edge_type"}, %norm: tensor<?xf32> {kge.param = "norm"})
    -> (tensor<?x?xf32> {kge.param = "out"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %m = graph.typed_linear %g, %x, %weight rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %h = graph.aggregate %g, %m weights(%norm : tensor<?xf32>) to(dst) reduce(sum)
      : tensor<?x?xf32> -> tensor<?x?xf32>
  %s = graph.linear %x, %root bias(%bias : tensor<?xf32>)
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %o = arith.addf %h, %s : tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}

// -----

// Messages from destinations into sources, unweighted, on bf16 features
// (widened to f32 in the inner computation); the linear term comes first
// whatever the order of the sum's terms; unnamed parameters keep no name
// (the signature calls them argN) and the result is named out.
// CHECK-LABEL: func.func @reverse
// CHECK-SAME: %{{.*}}: memref<?x?xf32> {kge.param = "out", kge.result})
// CHECK: output dense
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: keys(%arg4 : memref<?xi64>)
// CHECK-SAME: gathers(%arg5, %arg6 : memref<?xi64>, memref<?xi32>)
// CHECK-SAME: output aggregate {gathered = {{\[}}[0, 0], [1, 0]]} inner {
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK-NOT: project
// CHECK: return
func.func @reverse(%x: tensor<?x?xbf16>, %w: tensor<?x?x?xbf16>, %root: tensor<?x?xbf16>,
                   %unused: tensor<?xf32>, %src: tensor<?xi64>, %dst: tensor<?xi64>,
                   %etype: tensor<?xi32>, %n: tensor<1xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %nodes = tensor.dim %x, %c0 : tensor<?x?xbf16>
  %g = graph.coo %src, %dst, %etype nodes(%nodes) : tensor<?xi64>, tensor<?xi64>, tensor<?xi32>
  %m = graph.typed_linear %g, %x, %w rows(dst) by(etype)
      : tensor<?x?xbf16>, tensor<?x?x?xbf16> -> tensor<?x?xf32>
  %h = graph.aggregate %g, %m to(src) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  %s = graph.linear %x, %root : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xf32>
  %o = arith.addf %h, %s : tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}

// -----

// Two results scattered through the same destinations (each its own
// aggregate task keyed by dst); a parameter already named out: the
// results are named out0 and out1, a single one would be out_1.
// CHECK-LABEL: func.func @two_results
// CHECK-SAME: %{{.*}}: memref<?x?xf32> {kge.param = "out0", kge.result}, %{{.*}}: memref<?x?xf32> {kge.param = "out1", kge.result})
// CHECK-COUNT-2: output aggregate
// CHECK-LABEL: func.func @named_out
// CHECK-SAME: %{{.*}}: memref<?x?xf32> {kge.param = "out"}, %{{.*}}: memref<?x?xf32> {kge.param = "out_1", kge.result})
func.func @two_results(%x: tensor<?x?xf32>, %w: tensor<?x?x?xf32>, %root: tensor<?x?xf32>,
                       %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %m = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %h = graph.aggregate %g, %m to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  %s = graph.linear %x, %root : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %o = arith.addf %h, %s : tensor<?x?xf32>
  return %o, %o : tensor<?x?xf32>, tensor<?x?xf32>
}
func.func @named_out(%out: tensor<?x?xf32> {kge.param = "out"}, %root: tensor<?x?xf32>)
    -> tensor<?x?xf32> {
  %o = graph.linear %out, %root : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}

// -----

// RGCN's backward function (graph-differentiate's): the transposed root
// term stored first ((j, k): root read transposed), the messages of the
// output's gradient through the transposed matrices ((i, j, k)) added into
// the sources, the relation matrices' gradient an output per_key over the
// edges (k) sorted by type, its count named like the weights' (kge.dims),
// and the root's gradient added over the nodes into a result that starts at
// zero.
// CHECK-DAG: #[[IK:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[JK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[IJK:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[KI:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[KJ:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-LABEL: func.func @rgcn_grad
// CHECK-SAME: %[[W:[^:]*]]: memref<?x?x?xf32> {kge.dims = ["T_weight", "", ""], kge.param = "weight"}
// CHECK-SAME: %[[DW:[^:]*]]: memref<?x?x?xf32> {kge.dims = ["T_weight", "", ""], kge.param = "grad_weight", kge.result}
// CHECK: tile.task ins(%{{.*}}, %{{.*}} : memref<?x?xf32>, memref<?x?xf32>) outs(%{{.*}} : memref<?x?xf32>) maps [#[[IK]], #[[JK]]] accumulate add output dense inner
// CHECK: tile.task ins(%{{.*}}, %[[W]], %{{.*}} : {{.*}}) keys(%{{.*}} : memref<?xi32>) {{.*}} maps [#[[IK]], #[[IJK]], #{{.*}}] accumulate add output aggregate
// CHECK: tile.task ins({{.*}}) keys(%{{.*}} : memref<?xi32>) outs(%[[DW]] : memref<?x?x?xf32>) gathers({{.*}}) maps [#[[KI]], #[[KJ]], #{{.*}}] accumulate add output per_key {gathered = {{\[}}[0, 0], [1, 0]]}
// CHECK: tile.task ins({{.*}}) outs(%{{.*}} : memref<?x?xf32>) maps [#[[KI]], #[[KJ]]] accumulate add output dense {update}
func.func @rgcn_grad(%x: tensor<?x?xf32> {kge.param = "x"},
                %weight: tensor<?x?x?xf32> {kge.param = "weight"},
                %root: tensor<?x?xf32> {kge.param = "root"},
                %src: tensor<?xi32> {kge.param = "src"},
                %dst: tensor<?xi32> {kge.param = "dst"},
                %etype: tensor<?xi32> {kge.param = "edge_type"},
                %norm: tensor<?xf32> {kge.param = "norm"},
                %dout: tensor<?x?xf32> {kge.param = "grad_out"})
    -> (tensor<?x?xf32> {kge.param = "grad_x"}, tensor<?x?x?xf32> {kge.param = "grad_weight"}, tensor<?x?xf32> {kge.param = "grad_root"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %t = tensor.dim %weight, %c0 : tensor<?x?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %m = graph.typed_linear %g, %dout, %weight rows(dst) by(etype) transposed
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %dxe = graph.aggregate %g, %m weights(%norm : tensor<?xf32>) to(src) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  %dxs = graph.linear %dout, %root transposed : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %dx = arith.addf %dxe, %dxs : tensor<?x?xf32>
  %dw = graph.outer_sum %g, %x, %dout rows(src, dst) by(etype) types(%t) weights(%norm : tensor<?xf32>)
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?x?xf32>
  %dr = graph.outer_sum %g, %x, %dout rows(nodes, nodes) : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %dx, %dw, %dr : tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>
}

// -----

// An aggregate alone adds into its result, which the runtimes clear first;
// the result has a row per node (named like the features' rows).
// CHECK-LABEL: func.func @aggregate_alone
// CHECK-SAME: {kge.dims = ["V", ""]}
// CHECK-SAME: {kge.dims = ["V", ""], kge.param = "out", kge.result}
// CHECK: tile.task {{.*}} accumulate add output aggregate
// CHECK-NOT: tile.task
func.func @aggregate_alone(%x: tensor<?x?xf32>, %w: tensor<?x?x?xf32>, %src: tensor<?xi32>,
                           %dst: tensor<?xi32>, %etype: tensor<?xi32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %m = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %h = graph.aggregate %g, %m to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  return %h : tensor<?x?xf32>
}

// -----

// Typed linear layers as terms: by node type (HGT's per-node-type
// projections: the matrix of each node's type through the segment
// iterators, a dense output), stored first; the linear layer added.
// CHECK-LABEL: func.func @node_type_projection
// CHECK-SAME: %[[NT:[^:]*]]: memref<?xi32> {kge.param = "node_type"}
// CHECK: tile.task ins(%{{.*}}, %{{.*}} : memref<?x?xf32>, memref<?x?x?xf32>) outs(%{{.*}} : memref<?x?xf32>) gathers(%[[NT]] : memref<?xi32>) maps [#{{.*}}, #{{.*}}] accumulate add output dense {gathered = {{\[}}[1, 0]]}
// CHECK: tile.task ins(%{{.*}}, %{{.*}} : memref<?x?xf32>, memref<?x?xf32>) outs(%{{.*}} : memref<?x?xf32>) maps [#{{.*}}, #{{.*}}] accumulate add output dense {update}
func.func @node_type_projection(%x: tensor<?x?xf32> {kge.param = "x"}, %w: tensor<?x?x?xf32> {kge.param = "weight"},
                %root: tensor<?x?xf32> {kge.param = "root"}, %src: tensor<?xi32> {kge.param = "src"},
                %dst: tensor<?xi32> {kge.param = "dst"}, %etype: tensor<?xi32> {kge.param = "edge_type"},
                %ntype: tensor<?xi32> {kge.param = "node_type"}) -> (tensor<?x?xf32> {kge.param = "out"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) ntypes(%ntype : tensor<?xi32>) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %p = graph.typed_linear %g, %x, %w rows(nodes) by(ntype) : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %s = graph.linear %x, %root : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %o = arith.addf %p, %s : tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}

// -----

// An edge's projected source row, one result row per edge: the rows
// gathered through the sources, the matrices through the edge types.
// CHECK-LABEL: func.func @edge_projection
// CHECK: tile.task ins({{.*}}) outs(%{{.*}} : memref<?x?xf32>) gathers(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>) maps [#{{.*}}, #{{.*}}] accumulate add output dense {gathered = {{\[}}[0, 0], [1, 0]]}

func.func @edge_projection(%x: tensor<?x?xf32> {kge.param = "x"},
                   %w: tensor<?x?x?xf32> {kge.param = "w"},
                   %src: tensor<?xi32> {kge.param = "src"},
                   %dst: tensor<?xi32> {kge.param = "dst"},
                   %etype: tensor<?xi32> {kge.param = "edge_type"})
    -> (tensor<?x?xf32> {kge.param = "y"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %y = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// RGAT: the scores (one-column matrices read as rows gathered by the edge
// type, no segments) materialized as a result after the output, the edge
// softmax as an aggregate by max (leaky ReLU applied where read), an
// aggregate of exponentials and the normalized attention, then the
// messages weighted by the attention ([E, 1] read along i).
// CHECK-LABEL: func.func @rgat
// CHECK-SAME: %[[OUT:arg[0-9]+]]: memref<?x?xf32> {kge.dims = ["V_x", ""], kge.param = "out", kge.result}
// CHECK-SAME: %[[ATT:arg[0-9]+]]: memref<?x1xf32> {kge.param = "attention", kge.result}
// CHECK-SAME: %[[SC:arg[0-9]+]]: memref<?x1xf32> {kge.param = "scores", kge.result}
// CHECK-SAME: %[[MAX:arg[0-9]+]]: memref<?x1xf32> {kge.dims = ["V_x", ""], kge.param = "attention_max", kge.result}
// CHECK-SAME: %[[SUM:arg[0-9]+]]: memref<?x1xf32> {kge.dims = ["V_x", ""], kge.param = "attention_sum", kge.result}
// CHECK: tile.task ins(%{{.*}}, %{{.*}} : memref<?x?xf32>, memref<?x?x1xf32>) outs(%[[SC]] : memref<?x1xf32>) {{.*}} maps [#[[IK:.*]], #[[IK]]] accumulate add output dense
// CHECK: tile.task ins(%{{.*}}, %{{.*}} : memref<?x?xf32>, memref<?x?x1xf32>) outs(%[[SC]] : {{.*}} output dense {{.*}}update
// CHECK: tile.task ins(%[[SC]] : memref<?x1xf32>) keys(%{{.*}}) outs(%[[MAX]] : {{.*}} output aggregate {aggregate = 2 : i32}
// CHECK: arith.select
// CHECK: tile.task ins(%[[SC]], %[[MAX]] : {{.*}} outs(%[[SUM]] : {{.*}} output aggregate
// CHECK: math.exp
// CHECK: tile.task ins(%[[SC]], %[[MAX]], %[[SUM]] : {{.*}} outs(%[[ATT]] : {{.*}} output dense
// CHECK: arith.divf
// CHECK: tile.task ins(%{{.*}}, %{{.*}}, %[[ATT]] : memref<?x?xf32>, memref<?x?x?xf32>, memref<?x1xf32>) keys(%{{.*}}) outs(%[[OUT]] : {{.*}} output aggregate
// LOOPS-LABEL: func.func @rgat
// The largest scores start at -inf.
// LOOPS: arith.constant 0xFF800000 : f32
func.func @rgat(%x: tensor<?x?xf32> {kge.param = "x"},
                %weight: tensor<?x?x?xf32> {kge.param = "weight"},
                %query: tensor<?x?x1xf32> {kge.param = "query"},
                %key: tensor<?x?x1xf32> {kge.param = "key"},
                %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>)
    -> (tensor<?x?xf32> {kge.param = "out"}) {
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

// The gradient of the attention: the messages' products in the task (a
// matrix per edge type through the segments) reduced per edge against the
// gradient at the destination (a pair operand gathered by dst): output
// reduce into [E, 1].
// CHECK-LABEL: func.func @attention_gradient
// CHECK: tile.task ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<?x?xf32>, memref<?x?x?xf32>, memref<?x?xf32>) outs(%{{.*}} : memref<?x1xf32>) {{.*}} output reduce {gathered = {{\[\[}}0, 0], [1, 0], [2, 0]]}
// CHECK: project
// CHECK: arith.mulf
func.func @attention_gradient(%x: tensor<?x?xf32> {kge.param = "x"},
                              %weight: tensor<?x?x?xf32> {kge.param = "weight"},
                              %dy: tensor<?x?xf32> {kge.param = "dy"},
                              %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>)
    -> (tensor<?x1xf32> {kge.param = "dalpha"}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %m = graph.typed_linear %g, %x, %weight rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %d = graph.inner_product %g, %dy, %m rows(dst, edges)
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x1xf32>
  return %d : tensor<?x1xf32>
}
