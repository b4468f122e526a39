// RUN: kge-opt %s --convert-tile-to-scf --canonicalize | FileCheck %s

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
#i = affine_map<(i, j, k) -> (i)>
#j = affine_map<(i, j, k) -> (j)>

// Extents are read once; the reduction starts from the accumulator's
// identity and the dense output is stored transposed by its output map.
// CHECK-LABEL: func.func @gemm_transposed
// CHECK-SAME: (%[[A:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[C:.*]]: memref<?x?xf32>)
// CHECK-DAG: %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[M:.*]] = memref.dim %[[A]], %c0
// CHECK-DAG: %[[N:.*]] = memref.dim %[[B]], %c1
// CHECK-DAG: %[[K:.*]] = memref.dim %[[A]], %c1
// CHECK: scf.for %[[I:.*]] = %c0 to %[[M]]
// CHECK: scf.for %[[J:.*]] = %c0 to %[[N]]
// CHECK: %[[ACC:.*]] = scf.for %[[KK:.*]] = %c0 to %[[K]] step %c1 iter_args(%[[X:.*]] = %[[NEG_INF]])
// CHECK: %[[LA:.*]] = memref.load %[[A]][%[[I]], %[[KK]]]
// CHECK: %[[LB:.*]] = memref.load %[[B]][%[[KK]], %[[J]]]
// CHECK: %[[P:.*]] = arith.mulf %[[LA]], %[[LB]]
// CHECK: %[[MAX:.*]] = arith.maximumf %[[X]], %[[P]]
// CHECK: scf.yield %[[MAX]]
// CHECK: memref.store %[[ACC]], %[[C]][%[[J]], %[[I]]]
func.func @gemm_transposed(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate max output dense
      {output_map = affine_map<(i, j, k) -> (j, i)>}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// A join guards the whole reduction; the aggregate reads, combines and
// writes its group.
// CHECK-LABEL: func.func @join_aggregate
// CHECK-SAME: %[[PZ:[^:]*]]: memref<?xi32>, %[[RZ:[^:]*]]: memref<?xi32>, %[[C:[^:]*]]: memref<?x?xf32>
// CHECK: scf.for %[[I:.*]] = 
// CHECK: scf.for %[[J:.*]] = 
// CHECK: %[[KI:.*]] = memref.load %[[PZ]][%[[I]]]
// CHECK: %[[KJ:.*]] = memref.load %[[RZ]][%[[J]]]
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %[[KI]], %[[KJ]]
// CHECK: scf.if %[[SAME]] {
// CHECK: %[[ACC:.*]] = scf.for
// CHECK: %[[GI:.*]] = memref.load %[[PZ]][%[[I]]]
// CHECK: %[[GJ:.*]] = memref.load %[[RZ]][%[[J]]]
// CHECK: %[[G0:.*]] = arith.index_cast %[[GI]] : i32 to index
// CHECK: %[[G1:.*]] = arith.index_cast %[[GJ]] : i32 to index
// CHECK: %[[OLD:.*]] = memref.load %[[C]][%[[G0]], %[[G1]]]
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %[[ACC]]
// CHECK: memref.store %[[NEW]], %[[C]][%[[G0]], %[[G1]]]
func.func @join_aggregate(%P: memref<?x?xf32>, %R: memref<?x?xf32>, %pz: memref<?xi32>, %rz: memref<?xi32>, %C: memref<?x?xf32>) {
  tile.task ins(%P, %R, %pz, %rz : memref<?x?xf32>, memref<?x?xf32>, memref<?xi32>, memref<?xi32>)
      keys(%pz, %rz : memref<?xi32>, memref<?xi32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj, #i, #j] accumulate add output aggregate
      when {
      ^bb0(%i: index, %j: index, %a: i32, %b: i32):
        %same = arith.cmpi eq, %a, %b : i32
        tile.yield %same : i1
      }
      inner {
      ^bb0(%p: f32, %r: f32, %a: i32, %b: i32):
        %v = arith.mulf %p, %r : f32
        tile.yield %v : f32
      }
  return
}

// Row keys alone scatter whole rows: the group of (i, j) is (keys[i], j)
// (a graph's messages summed into their destination nodes).
// CHECK-LABEL: func.func @scatter_rows
// CHECK-SAME: %[[DST:[^:]*]]: memref<?xi32>, %[[OUT:[^:]*]]: memref<?x?xf32>
// CHECK: scf.for %[[I:.*]] = 
// CHECK: scf.for %[[J:.*]] = 
// CHECK: %[[ACC:.*]] = scf.for
// CHECK: %[[G:.*]] = memref.load %[[DST]][%[[I]]]
// CHECK: %[[G0:.*]] = arith.index_cast %[[G]] : i32 to index
// CHECK: %[[OLD:.*]] = memref.load %[[OUT]][%[[G0]], %[[J]]]
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %[[ACC]]
// CHECK: memref.store %[[NEW]], %[[OUT]][%[[G0]], %[[J]]]
func.func @scatter_rows(%X: memref<?x?xf32>, %W: memref<?x?xf32>, %dst: memref<?xi32>, %Out: memref<?x?xf32>) {
  tile.task ins(%X, %W : memref<?x?xf32>, memref<?x?xf32>)
      keys(%dst : memref<?xi32>) outs(%Out : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output aggregate
      inner {
      ^bb0(%x: f32, %w: f32):
        %v = arith.mulf %x, %w : f32
        tile.yield %v : f32
      }
  return
}

// Select counts every match and stores those that fit.
// CHECK-LABEL: func.func @select
// CHECK-SAME: %[[ROWS:[^:]*]]: memref<?xi64>, %[[COLS:[^:]*]]: memref<?xi64>, %[[VALS:[^:]*]]: memref<?xf32>, %[[COUNT:[^:]*]]: memref<1xi64>
// CHECK: memref.store %c0_i64, %[[COUNT]][%c0]
// CHECK: scf.if
// CHECK: %[[N:.*]] = memref.load %[[COUNT]][%c0]
// CHECK: %[[SLOT:.*]] = arith.index_cast %[[N]] : i64 to index
// CHECK: %[[CAP:.*]] = memref.dim %[[ROWS]], %c0
// CHECK: %[[FITS:.*]] = arith.cmpi slt, %[[SLOT]], %[[CAP]]
// CHECK: scf.if %[[FITS]] {
// CHECK: memref.store %{{.*}}, %[[ROWS]][%[[SLOT]]]
// CHECK: memref.store %{{.*}}, %[[COLS]][%[[SLOT]]]
// CHECK: memref.store %{{.*}}, %[[VALS]][%[[SLOT]]]
// CHECK: }
// CHECK: %[[NEXT:.*]] = arith.addi %[[N]], %c1_i64
// CHECK: memref.store %[[NEXT]], %[[COUNT]][%c0]
func.func @select(%P: memref<?x?xf32>, %R: memref<?x?xf32>, %rows: memref<?xi64>, %cols: memref<?xi64>, %vals: memref<?xf32>, %count: memref<1xi64>) {
  tile.task ins(%P, %R : memref<?x?xf32>, memref<?x?xf32>)
      outs(%rows, %cols, %vals, %count : memref<?xi64>, memref<?xi64>, memref<?xf32>, memref<1xi64>)
      maps [#ik, #kj] accumulate add output select
      inner {
      ^bb0(%p: f32, %r: f32):
        %v = arith.mulf %p, %r : f32
        tile.yield %v : f32
      }
      predicate {
      ^bb0(%v: f32, %acc: f32, %i: index, %j: index):
        %t = arith.constant 2.0 : f32
        %above = arith.cmpf ogt, %v, %t : f32
        tile.yield %above : i1
      }
  return
}

// Top-k starts from empty slots (row -1) and inserts by moving up.
// CHECK-LABEL: func.func @top_k
// CHECK-DAG: %[[POS_INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK-DAG: %[[NONE:.*]] = arith.constant -1 : i32
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1 {
// CHECK: memref.store %[[POS_INF]]
// CHECK: memref.store %[[NONE]]
// CHECK: memref.store %[[NONE]]
// CHECK: arith.cmpf olt
// CHECK: scf.for %{{.*}} = %c0 to %c3
func.func @top_k(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %v: memref<4xf32>, %r: memref<4xi32>, %c: memref<4xi32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)
      outs(%v, %r, %c : memref<4xf32>, memref<4xi32>, memref<4xi32>)
      maps [#ik, #kj] accumulate add output top_k {k = 4, smallest}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// A reduce output: the column loop carries the row's value from the
// combiner's identity (max: -inf); a pair the join rejects leaves it; the
// row is finalized and stored after the column loop.
// CHECK-LABEL: func.func @row_max
// CHECK-SAME: (%[[A:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[LO:.*]]: memref<?xf32>, %[[S:.*]]: memref<?xf32>)
// CHECK: scf.for %[[I:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK: %[[ROW:.*]] = scf.for %[[J:.*]] = %c0 to %{{.*}} step %c1 iter_args(%[[X:.*]] = %cst{{.*}}) -> (f32) {
// CHECK: %[[L:.*]] = memref.load %[[LO]][%[[J]]]
// CHECK: %[[KEEP:.*]] = arith.cmpf oge, %[[L]]
// CHECK: %[[NEXT:.*]] = scf.if %[[KEEP]] -> (f32) {
// CHECK: %[[M:.*]] = arith.maximumf %[[X]], %{{.*}} : f32
// CHECK: scf.yield %[[M]] : f32
// CHECK: } else {
// CHECK: scf.yield %[[X]] : f32
// CHECK: scf.yield %[[NEXT]] : f32
// CHECK: %[[F:.*]] = arith.mulf %[[ROW]], %cst{{.*}} : f32
// CHECK: memref.store %[[F]], %[[S]][%[[I]]]
func.func @row_max(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %lo: memref<?xf32>, %S: memref<?xf32>) {
  tile.task ins(%A, %B, %lo : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>)
      outs(%S : memref<?xf32>)
      maps [#ik, #kj, #j] accumulate add output reduce {aggregate = 2 : i32}
      when {
      ^bb0(%i: index, %j: index, %l: f32):
        %zero = arith.constant 0.0 : f32
        %keep = arith.cmpf oge, %l, %zero : f32
        tile.yield %keep : i1
      }
      inner {
      ^bb0(%a: f32, %b: f32, %l: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      finalize {
      ^bb0(%m: f32, %i: index):
        %half = arith.constant 0.5 : f32
        %h = arith.mulf %m, %half : f32
        tile.yield %h : f32
      }
  return
}

// Output per_key: for each pair, the reduction loop combines each step's
// value into the matrix of the step's key; rows of x and g are read
// through the step's gathers (x[src[k], i], g[dst[k], j]).
// CHECK-LABEL: func.func @per_key
// CHECK-SAME: (%[[X:.*]]: memref<?x?xf32>, %[[G:.*]]: memref<?x?xf32>, %[[SRC:.*]]: memref<?xi32>, %[[DST:.*]]: memref<?xi32>, %[[T:.*]]: memref<?xi32>, %[[DW:.*]]: memref<?x?x?xf32>)
// CHECK: scf.for %[[I:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK: scf.for %[[J:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK: scf.for %[[K:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK: %[[S:.*]] = memref.load %[[SRC]][%[[K]]]
// CHECK: %[[SI:.*]] = arith.index_cast %[[S]]
// CHECK: memref.load %[[X]][%[[SI]], %[[I]]]
// CHECK: %[[D:.*]] = memref.load %[[DST]][%[[K]]]
// CHECK: %[[DI:.*]] = arith.index_cast %[[D]]
// CHECK: memref.load %[[G]][%[[DI]], %[[J]]]
// CHECK: %[[P:.*]] = arith.mulf
// CHECK: %[[KEY:.*]] = memref.load %[[T]][%[[K]]]
// CHECK: %[[KI:.*]] = arith.index_cast %[[KEY]]
// CHECK: %[[OLD:.*]] = memref.load %[[DW]][%[[KI]], %[[I]], %[[J]]]
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %[[P]]
// CHECK: memref.store %[[NEW]], %[[DW]][%[[KI]], %[[I]], %[[J]]]
func.func @per_key(%x: memref<?x?xf32>, %g: memref<?x?xf32>, %src: memref<?xi32>, %dst: memref<?xi32>,
                   %t: memref<?xi32>, %dW: memref<?x?x?xf32>) {
  tile.task ins(%x, %g : memref<?x?xf32>, memref<?x?xf32>) keys(%t : memref<?xi32>)
      outs(%dW : memref<?x?x?xf32>) gathers(%src, %dst : memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>]
      accumulate add output per_key {gathered = [[0, 0], [1, 0]]}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}
