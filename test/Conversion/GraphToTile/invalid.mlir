// RUN: kge-opt %s -split-input-file --convert-graph-to-tile -verify-diagnostics

func.func @messages_used_twice(%x: tensor<?x?xf32>, %w: tensor<?x?x?xf32>, %root: tensor<?x?xf32>,
                               %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %m = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  // expected-error @+1 {{aggregates rows that are not a typed linear layer's result used only here; the lowering to tile fuses the two and does not materialize per-edge tensors yet}}
  %h = graph.aggregate %g, %m to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  %s = graph.linear %x, %root : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %o = arith.addf %h, %s : tensor<?x?xf32>
  return %o, %m : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

func.func @typed_by_node_type(%x: tensor<?x?xf32>, %w: tensor<?x?x?xf32>, %root: tensor<?x?xf32>,
                              %src: tensor<?xi32>, %dst: tensor<?xi32>, %etype: tensor<?xi32>,
                              %nt: tensor<?xi32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) ntypes(%nt : tensor<?xi32>)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{rows(src) by(src_ntype) is not lowered to tile yet: a typed linear layer takes an edge's rows by its edge type or a node's by its node type}}
  %m = graph.typed_linear %g, %x, %w rows(src) by(src_ntype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  %h = graph.aggregate %g, %m to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  %s = graph.linear %x, %root : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %o = arith.addf %h, %s : tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}

// -----

func.func @computed_input(%x: tensor<?x?xf32>, %root: tensor<?x?xf32>, %root2: tensor<?x?xf16>)
    -> tensor<?x?xf32> {
  %h = graph.linear %x, %root : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  // expected-error @+1 {{computes 'tensor<?x?xf16>', an intermediate the lowering to tile materializes in f32 only}}
  %c = arith.truncf %h : tensor<?x?xf32> to tensor<?x?xf16>
  %o = graph.linear %c, %root2 : tensor<?x?xf16>, tensor<?x?xf16> -> tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}

// -----

// expected-error @+1 {{parameter #1 has type 'index'; graph functions take ranked tensors}}
func.func @index_parameter(%x: tensor<?x?xf32>, %n: index, %root: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %o = graph.linear %x, %root : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}

// -----

func.func @other_result(%x: tensor<?x?xf32>, %root: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %o = graph.linear %x, %root : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  // expected-error @+1 {{is not lowered to tile: a graph function's values are sums of linear and typed linear layers, aggregates, outer sums, edge softmaxes, inner products and leaky ReLUs (and their gradients)}}
  %e = math.exp %o : tensor<?x?xf32>
  %s = arith.addf %o, %e : tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// -----

// expected-error @+1 {{has 2 blocks; a graph function is one block of layers}}
func.func @two_blocks(%x: tensor<?x?xf32>, %root: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %o = graph.linear %x, %root : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  cf.br ^bb1
^bb1:
  return %o : tensor<?x?xf32>
}

// -----

// expected-error @+1 {{returns nothing; a graph function returns its layers' results}}
func.func @no_results(%x: tensor<?x?xf32>, %root: tensor<?x?xf32>) {
  %o = graph.linear %x, %root : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return
}

// -----

// expected-error @+1 {{is referenced in the module; graph functions are entry points (their lowering changes their signature)}}
func.func @called(%x: tensor<?x?xf32>, %root: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %o = graph.linear %x, %root : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}
func.func @caller(%x: tensor<?x?xf32>, %root: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %o = func.call @called(%x, %root) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}

// -----

func.func @outer_sum_of_edges_untyped(%x: tensor<?x?xf32>, %dy: tensor<?x?xf32>, %src: tensor<?xi32>,
                                      %dst: tensor<?xi32>, %etype: tensor<?xi32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{sums edge rows without by(etype): not lowered to tile (the sum by type is)}}
  %w = graph.outer_sum %g, %x, %dy rows(src, dst) : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %w : tensor<?x?xf32>
}

// -----

func.func @outer_sum_types_not_a_dimension(%x: tensor<?x?xf32>, %dy: tensor<?x?xf32>, %src: tensor<?xi32>,
                                           %dst: tensor<?xi32>, %etype: tensor<?xi32>)
    -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %t = arith.constant 4 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  // expected-error @+1 {{takes a size that is not a dimension of a parameter (tensor.dim %param, d): the lowering sizes the result by that parameter}}
  %w = graph.outer_sum %g, %x, %dy rows(src, dst) by(etype) types(%t)
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?x?xf32>
  return %w : tensor<?x?x?xf32>
}

// -----

func.func @node_count_beyond_the_rank(%x: tensor<?x?xf32>, %w: tensor<?x?x?xf32>,
                                      %src: tensor<?xi32>, %dst: tensor<?xi32>,
                                      %etype: tensor<?xi32>) -> tensor<?x?xf32> {
  %c9 = arith.constant 9 : index
  %n = tensor.dim %x, %c9 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %m = graph.typed_linear %g, %x, %w rows(src) by(etype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  // expected-error @+1 {{takes dimension 9 of a parameter of type 'tensor<?x?xf32>', which has no such dimension}}
  %out = graph.aggregate %g, %m to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}

// -----

func.func @aggregate_node_rows(%x: tensor<?x?xf32>, %w: tensor<?x?x?xf32>, %src: tensor<?xi32>,
                               %dst: tensor<?xi32>, %etype: tensor<?xi32>, %ntype: tensor<?xi32>)
    -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %g = graph.coo %src, %dst, %etype nodes(%n) ntypes(%ntype : tensor<?xi32>)
      : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  %p = graph.typed_linear %g, %x, %w rows(nodes) by(ntype)
      : tensor<?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?xf32>
  // expected-error @+1 {{aggregates a typed linear layer's node rows (rows(nodes)); an aggregate takes one row per edge}}
  %h = graph.aggregate %g, %p to(dst) reduce(sum) : tensor<?x?xf32> -> tensor<?x?xf32>
  return %h : tensor<?x?xf32>
}
