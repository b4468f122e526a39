// RUN: kge-opt %s | FileCheck %s
// RUN: kge-opt %s | kge-opt | FileCheck %s
// RUN: kge-opt %s -mlir-print-op-generic | kge-opt | FileCheck %s

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
#jk = affine_map<(i, j, k) -> (j, k)>
#i = affine_map<(i, j, k) -> (i)>
#j = affine_map<(i, j, k) -> (j)>
#k = affine_map<(i, j, k) -> (k)>

// Plain GEMM.
// CHECK-LABEL: func.func @gemm
// CHECK: tile.task ins(%{{.*}}, %{{.*}} : memref<?x?xf32>, memref<?x?xf32>) outs(%{{.*}} : memref<?x?xf32>) maps [#{{.*}}, #{{.*}}] accumulate add output dense inner {
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK: arith.mulf %[[A]], %[[B]] : f32
// CHECK: tile.yield %{{.*}} : f32
func.func @gemm(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// Query 1: a spatial-only threshold inside the inner computation, the
// output transposed.
// CHECK-LABEL: func.func @q1
// CHECK: output dense {output_map = #{{.*}}} inner {
func.func @q1(%S: memref<64x32xf32>, %W: memref<32x48xf32>, %t: memref<64xf32>, %N: memref<48x64xf32>) {
  tile.task ins(%S, %W, %t : memref<64x32xf32>, memref<32x48xf32>, memref<64xf32>)
      outs(%N : memref<48x64xf32>) maps [#ik, #kj, #i] accumulate add output dense
      {output_map = affine_map<(i, j, k) -> (j, i)>}
      inner {
      ^bb0(%s: f32, %w: f32, %th: f32):
        %p = arith.mulf %s, %w : f32
        %above = arith.cmpf ogt, %p, %th : f32
        %d = arith.subf %p, %th : f32
        %zero = arith.constant 0.0 : f32
        %extra = arith.select %above, %d, %zero : f32
        %v = arith.addf %p, %extra : f32
        tile.yield %v : f32
      }
  return
}

// Query 3: project to a 0/1 count, aggregated by zip codes.
// CHECK-LABEL: func.func @q3
// CHECK: keys(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi64>) outs(%{{.*}} : memref<?x?xi32>) maps [#{{.*}}, #{{.*}}] accumulate add output aggregate inner {
// CHECK: project {
// CHECK: ^bb0(%{{.*}}: f32, %{{.*}}: index, %{{.*}}: index):
func.func @q3(%P: memref<?x?xf32>, %R: memref<?x?xf32>, %pz: memref<?xi32>, %rz: memref<?xi64>, %C: memref<?x?xi32>) {
  tile.task ins(%P, %R : memref<?x?xf32>, memref<?x?xf32>)
      keys(%pz, %rz : memref<?xi32>, memref<?xi64>) outs(%C : memref<?x?xi32>)
      maps [#ik, #kj] accumulate add output aggregate
      inner {
      ^bb0(%p: f32, %r: f32):
        %v = arith.mulf %p, %r : f32
        tile.yield %v : f32
      }
      project {
      ^bb0(%acc: f32, %i: index, %j: index):
        %t = arith.constant 0.5 : f32
        %above = arith.cmpf ogt, %acc, %t : f32
        %one = arith.extui %above : i1 to i32
        tile.yield %one : i32
      }
  return
}

// Query 4: a join on zip codes (spatial-only integer inputs), max groups.
// CHECK-LABEL: func.func @q4
// CHECK: accumulate max output dense when {
// CHECK: ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: i32, %{{.*}}: i32):
func.func @q4(%P: memref<?x?xf32>, %R: memref<?x?xf32>, %pz: memref<?xi32>, %rz: memref<?xi32>, %C: memref<?x?xf32>) {
  tile.task ins(%P, %R, %pz, %rz : memref<?x?xf32>, memref<?x?xf32>, memref<?xi32>, memref<?xi32>)
      outs(%C : memref<?x?xf32>) maps [#ik, #kj, #i, #j] accumulate max output dense
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

// Query 5: select above a threshold (a compacted coordinate list).
// CHECK-LABEL: func.func @q5
// CHECK: output select inner {
// CHECK: predicate {
func.func @q5(%P: memref<?x?xf32>, %R: memref<?x?xf32>, %rows: memref<?xi32>, %cols: memref<?xi32>, %vals: memref<?xf32>, %count: memref<1xi64>) {
  tile.task ins(%P, %R : memref<?x?xf32>, memref<?x?xf32>)
      outs(%rows, %cols, %vals, %count : memref<?xi32>, memref<?xi32>, memref<?xf32>, memref<1xi64>)
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

// A custom accumulator (log-sum-exp pairs would need two values; here a
// saturating add) with its identity and associativity declared, over rows
// of both operands (B indexed by (j, k)), and a per-k weight.
// CHECK-LABEL: func.func @custom
// CHECK: accumulate custom output top_k {associative, identity = 0.000000e+00 : f32, k = 8 : i64, smallest} inner {
// CHECK: combine {
func.func @custom(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %w: memref<?xf32>, %vals: memref<8xf32>, %rows: memref<8xi64>, %cols: memref<8xi64>) {
  tile.task ins(%A, %B, %w : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>)
      outs(%vals, %rows, %cols : memref<8xf32>, memref<8xi64>, memref<8xi64>)
      maps [#ik, #jk, #k] accumulate custom output top_k
      {identity = 0.0 : f32, associative, k = 8, smallest}
      inner {
      ^bb0(%a: f32, %b: f32, %x: f32):
        %d = arith.subf %a, %b : f32
        %e = arith.mulf %d, %d : f32
        %v = arith.mulf %e, %x : f32
        tile.yield %v : f32
      }
      combine {
      ^bb0(%x: f32, %y: f32):
        %s = arith.addf %x, %y : f32
        %cap = arith.constant 1.0e6 : f32
        %m = arith.minimumf %s, %cap : f32
        tile.yield %m : f32
      }
  return
}

// Distinct values of an integer task.
// CHECK-LABEL: func.func @distinct
// CHECK: accumulate min output distinct inner {
func.func @distinct(%A: memref<?x?xi32>, %B: memref<?x?xi32>, %vals: memref<?xi32>, %count: memref<1xi64>) {
  tile.task ins(%A, %B : memref<?x?xi32>, memref<?x?xi32>)
      outs(%vals, %count : memref<?xi32>, memref<1xi64>)
      maps [#ik, #kj] accumulate min output distinct
      inner {
      ^bb0(%a: i32, %b: i32):
        %v = arith.addi %a, %b : i32
        tile.yield %v : i32
      }
  return
}

// Gathered rows and a matrix per row's key (TransR's projection).
// CHECK-LABEL: func.func @gathered
// CHECK: tile.task ins(%{{.*}}, %{{.*}} : memref<?x?xf32>, memref<?x?x?xf32>) outs(%{{.*}} : memref<?x?xf32>) gathers(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi64>) maps [#{{.*}}, #{{.*}}] accumulate add output dense {gathered = {{\[}}[0, 0], [1, 0]]}
func.func @gathered(%E: memref<?x?xf32>, %W: memref<?x?x?xf32>, %h: memref<?xi32>,
                    %r: memref<?xi64>, %Y: memref<?x?xf32>) {
  tile.task ins(%E, %W : memref<?x?xf32>, memref<?x?x?xf32>)
      outs(%Y : memref<?x?xf32>)
      gathers(%h, %r : memref<?xi32>, memref<?xi64>)
      maps [#ik, affine_map<(i, j, k) -> (i, k, j)>]
      accumulate add output dense {gathered = [[0, 0], [1, 0]]}
      inner {
      ^bb0(%e: f32, %w: f32):
        %v = arith.mulf %e, %w : f32
        tile.yield %v : f32
      }
  return
}

// A reduce output (TransR's score): a pair operand read along j, the row's
// values summed, the root taken by finalize.
// CHECK-LABEL: func.func @reduce
// CHECK: accumulate add output reduce {gathered = {{\[}}[0, 0], [1, 0], [2, 0]]} inner {
// CHECK: } project {
// CHECK: } finalize {
// CHECK: math.sqrt
func.func @reduce(%E: memref<?x?xf32>, %W: memref<?x?x?xf32>, %R: memref<?x?xf32>, %h: memref<?xi32>,
                  %r: memref<?xi64>, %S: memref<?xf32>) {
  tile.task ins(%E, %W, %R : memref<?x?xf32>, memref<?x?x?xf32>, memref<?x?xf32>)
      outs(%S : memref<?xf32>)
      gathers(%h, %r, %r : memref<?xi32>, memref<?xi64>, memref<?xi64>)
      maps [#ik, affine_map<(i, j, k) -> (i, k, j)>, affine_map<(i, j, k) -> (i, j)>]
      accumulate add output reduce {gathered = [[0, 0], [1, 0], [2, 0]]}
      inner {
      ^bb0(%e: f32, %w: f32, %x: f32):
        %v = arith.mulf %e, %w : f32
        tile.yield %v : f32
      }
      project {
      ^bb0(%acc: f32, %i: index, %j: index, %x: f32):
        %y = arith.addf %acc, %x : f32
        %sq = arith.mulf %y, %y : f32
        tile.yield %sq : f32
      }
      finalize {
      ^bb0(%sum: f32, %i: index):
        %norm = math.sqrt %sum : f32
        tile.yield %norm : f32
      }
  return
}

// Output per_key: a matrix per key of the reduction's steps, rows gathered
// along k.
// CHECK-LABEL: func.func @per_key
// CHECK: tile.task ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>) keys(%{{.*}} : memref<?xi32>) outs(%{{.*}} : memref<?x?x?xf32>) gathers(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>)
// CHECK-SAME: accumulate add output per_key {gathered = {{\[}}[0, 0], [1, 0]]} inner {
func.func @per_key(%x: memref<?x?xf32>, %g: memref<?x?xf32>, %n: memref<?xf32>, %src: memref<?xi32>,
                   %dst: memref<?xi32>, %t: memref<?xi32>, %dW: memref<?x?x?xf32>) {
  tile.task ins(%x, %g, %n : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>)
      keys(%t : memref<?xi32>) outs(%dW : memref<?x?x?xf32>)
      gathers(%src, %dst : memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>,
            affine_map<(i, j, k) -> (k)>]
      accumulate add output per_key {gathered = [[0, 0], [1, 0]]}
      inner {
      ^bb0(%a: f32, %b: f32, %w: f32):
        %p = arith.mulf %a, %b : f32
        %v = arith.mulf %p, %w : f32
        tile.yield %v : f32
      }
  return
}
