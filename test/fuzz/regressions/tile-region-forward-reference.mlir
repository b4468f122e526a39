// A tile.task whose later region fails to parse after its first region
// defined %p, a name a module-level operation forward-references: the
// declarative format's region locals were destroyed with that use still
// pointing at them (a use-after-free valgrind reported).

        %v = arith.mulf %p, %r : f32

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @predicate_dense(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      predicate {
      ^bb0(%v: f32, %acc: f32, %i: index, %j: index):
        %t = arith.constant true
        tile.yield %t : i1
      }
  return
}


