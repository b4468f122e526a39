// RUN: kge-opt %s -split-input-file -verify-diagnostics

func.func @coo_lengths(%src: tensor<5xi32>, %dst: tensor<4xi32>, %etype: tensor<5xi32>, %n: index) {
  // expected-error @+1 {{the source indices' length has 5 but the destinations' has 4}}
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<5xi32>, tensor<4xi32>, tensor<5xi32>
  return
}

// -----

func.func @coo_float_indices(%src: tensor<?xf32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  // expected-error @+1 {{operand #0 must be 1D tensor of 32-bit signless integer or 64-bit signless integer values}}
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xf32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @typed_linear_nodes_by_etype(%x: tensor<?x16xf32>, %w: tensor<4x16x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{rows(nodes) take the node's own type: by(ntype), got by(etype)}}
  %v = graph.typed_linear %g, %x, %w rows(nodes) by(etype)
      : tensor<?x16xf32>, tensor<4x16x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @typed_linear_edges_by_ntype(%x: tensor<?x16xf32>, %w: tensor<4x16x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %nt: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) ntypes(%nt : tensor<?xi32>)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{by(ntype) is for rows(nodes); an edge's rows take by(etype), by(src_ntype) or by(dst_ntype)}}
  %v = graph.typed_linear %g, %x, %w rows(src) by(ntype)
      : tensor<?x16xf32>, tensor<4x16x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @typed_linear_needs_node_types(%x: tensor<?x16xf32>, %w: tensor<4x16x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{by(src_ntype) needs node types: a graph built with graph.coo ... ntypes(...)}}
  %v = graph.typed_linear %g, %x, %w rows(dst) by(src_ntype)
      : tensor<?x16xf32>, tensor<4x16x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @typed_linear_row_length(%x: tensor<?x12xf32>, %w: tensor<4x16x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{the input's row length has 12 but the weights' matrices' rows has 16}}
  %v = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x12xf32>, tensor<4x16x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @typed_linear_result_columns(%x: tensor<?x16xf32>, %w: tensor<4x16x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{the result's row length has 4 but the weights' matrices' columns has 8}}
  %v = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x16xf32>, tensor<4x16x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @typed_linear_edge_count(%x: tensor<?x16xf32>, %w: tensor<4x16x8xf32>,
    %src: tensor<7xi32>, %dst: tensor<7xi32>, %etype: tensor<7xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<7xi32>, tensor<7xi32>, tensor<7xi32>
  // expected-error @+1 {{the result's row count has 6 but the graph's edge count has 7}}
  %v = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x16xf32>, tensor<4x16x8xf32> -> tensor<6x8xf32>
  return
}

// -----

func.func @typed_linear_mixed_elements(%x: tensor<?x16xbf16>, %w: tensor<4x16x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{the input's elements ('bf16') and the weights' ('f32') differ}}
  %v = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x16xbf16>, tensor<4x16x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @typed_linear_weights_rank(%x: tensor<?x16xf32>, %w: tensor<16x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{operand #2 must be 3D tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %v = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x16xf32>, tensor<16x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @linear_bias_length(%x: tensor<?x16xf32>, %w: tensor<16x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{the bias' length has 4 but the weights' columns has 8}}
  %s = graph.linear %x, %w bias(%b : tensor<4xf32>)
      : tensor<?x16xf32>, tensor<16x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @linear_rows(%x: tensor<5x16xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{the result's row count has 4 but the input's has 5}}
  %s = graph.linear %x, %w : tensor<5x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @aggregate_weights(%m: tensor<7x8xf32>, %norm: tensor<6xf32>,
    %src: tensor<7xi32>, %dst: tensor<7xi32>, %etype: tensor<7xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<7xi32>, tensor<7xi32>, tensor<7xi32>
  // expected-error @+1 {{the weights' length (one per edge) has 6 but the input's row count has 7}}
  %h = graph.aggregate %g, %m weights(%norm : tensor<6xf32>) to(dst) reduce(sum)
      : tensor<7x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @aggregate_weights_edges(%m: tensor<?x8xf32>, %norm: tensor<5xf32>,
    %src: tensor<7xi32>, %dst: tensor<7xi32>, %etype: tensor<7xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<7xi32>, tensor<7xi32>, tensor<7xi32>
  // expected-error @+1 {{the weights' length (one per edge) has 5 but the graph's edge count has 7}}
  %h = graph.aggregate %g, %m weights(%norm : tensor<5xf32>) to(dst) reduce(sum)
      : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @aggregate_edge_count(%m: tensor<6x8xf32>,
    %src: tensor<7xi32>, %dst: tensor<7xi32>, %etype: tensor<7xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<7xi32>, tensor<7xi32>, tensor<7xi32>
  // expected-error @+1 {{the input's row count (one per edge) has 6 but the graph's edge count has 7}}
  %h = graph.aggregate %g, %m to(dst) reduce(sum) : tensor<6x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @aggregate_row_length(%m: tensor<?x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{the result's row length has 4 but the input's has 8}}
  %h = graph.aggregate %g, %m to(dst) reduce(sum) : tensor<?x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @aggregate_unknown_end(%m: tensor<?x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'to' [dst, src]}}
  %h = graph.aggregate %g, %m to(middle) reduce(sum) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @transposed_shapes(%dy: tensor<?x8xf32>, %w: tensor<4x8x16xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{the input's row length has 8 but the weights' matrices' columns has 16}}
  %m = graph.typed_linear %g, %dy, %w rows(dst) by(etype) transposed
      : tensor<?x8xf32>, tensor<4x8x16xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @outer_sum_mixed_rows(%x: tensor<?x16xf32>, %dy: tensor<?x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{rows(nodes, dst) pair a node's row with an edge's; rows(nodes) go with rows(nodes)}}
  %w = graph.outer_sum %g, %x, %dy rows(nodes, dst) : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @outer_sum_by_without_types(%x: tensor<?x16xf32>, %dy: tensor<?x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{by(...) needs types(...): the number of matrices}}
  %w = graph.outer_sum %g, %x, %dy rows(src, dst) by(etype) : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<4x16x8xf32>
  return
}

// -----

func.func @outer_sum_rank(%x: tensor<?x16xf32>, %dy: tensor<?x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index, %t: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{the result must have rank 3 (a matrix per type), got 'tensor<16x8xf32>'}}
  %w = graph.outer_sum %g, %x, %dy rows(src, dst) by(etype) types(%t) : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @outer_sum_columns(%x: tensor<?x16xf32>, %dy: tensor<?x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{the rhs row length has 8 but the result's columns has 4}}
  %w = graph.outer_sum %g, %x, %dy rows(nodes, nodes) : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<16x4xf32>
  return
}

// -----

func.func @outer_sum_node_weights(%x: tensor<?x16xf32>, %dy: tensor<?x8xf32>, %norm: tensor<?xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{weights(...) are per edge: not with rows(nodes)}}
  %w = graph.outer_sum %g, %x, %dy rows(nodes, nodes) weights(%norm : tensor<?xf32>) : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @outer_sum_ntype_of_edges(%x: tensor<?x16xf32>, %dy: tensor<?x8xf32>, %ntype: tensor<?xi32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index, %t: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) ntypes(%ntype : tensor<?xi32>) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{by(ntype) takes rows(nodes), not edge rows}}
  %w = graph.outer_sum %g, %x, %dy rows(src, dst) by(ntype) types(%t) : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<4x16x8xf32>
  return
}

// -----

func.func @outer_sum_ntype_without_node_types(%x: tensor<?x16xf32>, %dy: tensor<?x8xf32>,
    %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index, %t: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{by(ntype) needs node types: a graph built with graph.coo ... ntypes(...)}}
  %w = graph.outer_sum %g, %x, %dy rows(nodes, nodes) by(ntype) types(%t) : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<4x16x8xf32>
  return
}

// -----

func.func @softmax_rows(%s: tensor<5x1xf32>, %src: tensor<4xi32>, %dst: tensor<4xi32>,
                        %etype: tensor<4xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
  // expected-error @+1 {{the input's row count (one per edge) has 5 but the graph's edge count has 4}}
  %a = graph.edge_softmax %g, %s to(dst) : tensor<5x1xf32>
  return
}

// -----

func.func @softmax_grad_rows(%s: tensor<5x1xf32>, %src: tensor<4xi32>, %dst: tensor<4xi32>,
                             %etype: tensor<4xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
  // expected-error @+1 {{the output's row count (one per edge) has 5 but the graph's edge count has 4}}
  %a = graph.edge_softmax_grad %g, %s, %s to(dst) : tensor<5x1xf32>
  return
}

// -----

func.func @leaky_types(%s: tensor<?x1xf32>, %d: tensor<?x2xf32>) {
  // expected-error @+1 {{all of {input, grad, result} have same type}}
  %a = "graph.leaky_relu_grad"(%s, %d) {slope = 2.0e-01 : f32} : (tensor<?x1xf32>, tensor<?x2xf32>) -> tensor<?x1xf32>
  return
}

// -----

func.func @inner_product_nodes(%x: tensor<?x8xf32>, %src: tensor<?xi32>, %dst: tensor<?xi32>,
                               %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{rows(nodes) is not an edge's row: the rhs is read at src, dst or edges}}
  %d = graph.inner_product %g, %x, %x rows(src, nodes) : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x1xf32>
  return
}

// -----

func.func @inner_product_lengths(%x: tensor<?x8xf32>, %y: tensor<?x4xf32>, %src: tensor<?xi32>,
                                 %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{the lhs row length has 8 but the rhs' has 4}}
  %d = graph.inner_product %g, %x, %y rows(src, dst) : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x1xf32>
  return
}

// -----

func.func @inner_product_result(%x: tensor<?x8xf32>, %src: tensor<?xi32>, %dst: tensor<?xi32>,
                                %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{the result holds one scalar per edge: [E, 1], got 'tensor<?x2xf32>'}}
  %d = graph.inner_product %g, %x, %x rows(src, dst) : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x2xf32>
  return
}

// -----

func.func @aggregate_wide_weights(%m: tensor<?x8xf32>, %w: tensor<?x2xf32>, %src: tensor<?xi32>,
                                  %dst: tensor<?xi32>, %etype: tensor<?xi32>, %n: index) {
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{the weights hold one scalar per edge ([E] or [E, 1]), got 'tensor<?x2xf32>'}}
  %h = graph.aggregate %g, %m weights(%w : tensor<?x2xf32>) to(dst) reduce(sum)
      : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}
