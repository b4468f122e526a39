// RUN: kge-opt %s -split-input-file -verify-diagnostics

// One case per verifier error of tile.task.

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Structure.
func.func @map_count(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{has 2 inputs but 1 indexing maps}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @four_axes(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{indexing map of input #0 has 4 dimensions and 0 symbols; a matmul-like task has exactly three axes (i, j, k) and no symbols}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [affine_map<(i, j, k, l) -> (i, l)>, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @repeated_axis(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{indexing map of input #1 (affine_map<(d0, d1, d2) -> (d2, d2)>) must select distinct axes}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, affine_map<(i, j, k) -> (k, k)>] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @rank_mismatch(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{input #0 has rank 2 but its indexing map selects 1 axes (dimensions past them must have size 1)}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [affine_map<(i, j, k) -> (i)>, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

// Trailing dimensions of size 1 are read at 0 (a per-row scalar [M, 1]);
// others are not.
#kj2 = affine_map<(i, j, k) -> (k, j)>

func.func @unit_tail(%A: memref<?x1xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>,
                     %W: memref<?x2xf32>) {
  tile.task ins(%A, %B, %A : memref<?x1xf32>, memref<?x?xf32>, memref<?x1xf32>)
      outs(%C : memref<?x?xf32>)
      maps [affine_map<(i, j, k) -> (i)>, #kj2, affine_map<(i, j, k) -> (k)>]
      accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32, %c: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.mulf %p, %c : f32
        tile.yield %q : f32
      }
  // expected-error @+1 {{input #0 has rank 2 but its indexing map selects 1 axes (dimensions past them must have size 1)}}
  tile.task ins(%W, %B : memref<?x2xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [affine_map<(i, j, k) -> (i)>, #kj2] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @both_spatial(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{input #1 is indexed by both spatial axes; an input of a matmul-like task has at most one spatial axis (only outputs are indexed by (i, j))}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, affine_map<(i, j, k) -> (i, j)>] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @no_k(%x: memref<?xf32>, %y: memref<?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{no input is indexed by the reduction axis k, so its extent is unknown}}
  tile.task ins(%x, %y : memref<?xf32>, memref<?xf32>) outs(%C : memref<?x?xf32>)
      maps [affine_map<(i, j, k) -> (i)>, affine_map<(i, j, k) -> (j)>] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @no_j(%A: memref<?x?xf32>, %y: memref<?xf32>, %r: memref<?xi32>, %c: memref<?xi32>, %v: memref<?xf32>, %n: memref<1xi64>) {
  // expected-error @+1 {{no operand is indexed by the spatial axis j, so its extent is unknown}}
  tile.task ins(%A, %y : memref<?x?xf32>, memref<?xf32>) outs(%r, %c, %v, %n : memref<?xi32>, memref<?xi32>, memref<?xf32>, memref<1xi64>)
      maps [#ik, affine_map<(i, j, k) -> (k)>] accumulate add output select
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      predicate {
      ^bb0(%v0: f32, %acc: f32, %i: index, %j: index):
        %t = arith.constant true
        tile.yield %t : i1
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @extent_mismatch(%A: memref<4x8xf32>, %B: memref<16x4xf32>, %C: memref<4x4xf32>) {
  // expected-error @+1 {{axis k has extent 16 in input #1 dimension 0 but 8 in input #0 dimension 1}}
  tile.task ins(%A, %B : memref<4x8xf32>, memref<16x4xf32>) outs(%C : memref<4x4xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @overflow(%A: memref<3000000000x8xf32>, %B: memref<8x4xf32>, %C: memref<?x4xf32>) {
  // expected-error @+1 {{axis i has extent 3000000000 (input #0 dimension 0), which overflows 32-bit tile arithmetic (at most 2147483647)}}
  tile.task ins(%A, %B : memref<3000000000x8xf32>, memref<8x4xf32>) outs(%C : memref<?x4xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @index_input(%A: memref<?x?xindex>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{input #0 has element type 'index'; inputs hold f16, bf16, f32, f64 or i8 to i64}}
  tile.task ins(%A, %B : memref<?x?xindex>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: index, %b: f32):
        tile.yield %b : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Accumulators.
func.func @custom_no_region(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{accumulate custom needs a combine region}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate custom output dense {identity = 0.0 : f32, associative}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @custom_no_identity(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{accumulate custom needs an identity: the accumulator's neutral element}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate custom output dense {associative}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      combine {
      ^bb0(%x: f32, %y: f32):
        %s = arith.addf %x, %y : f32
        tile.yield %s : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @custom_not_associative(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{accumulate custom needs the 'associative' declaration: tiling the reduction reorders the combinations}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate custom output dense {identity = 0.0 : f32}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      combine {
      ^bb0(%x: f32, %y: f32):
        %s = arith.addf %x, %y : f32
        tile.yield %s : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @identity_type(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{identity 0 : i32 does not have the accumulator type 'f32'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate custom output dense {identity = 0 : i32, associative}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      combine {
      ^bb0(%x: f32, %y: f32):
        %s = arith.addf %x, %y : f32
        tile.yield %s : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @combine_without_custom(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{a combine region needs accumulate custom, not max}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate max output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      combine {
      ^bb0(%x: f32, %y: f32):
        %s = arith.addf %x, %y : f32
        tile.yield %s : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @identity_builtin(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{accumulate add has its own identity; 'identity' is for accumulate custom}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense {identity = 0.0 : f32}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @combine_type(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{region 'combine' must yield the accumulator type 'f32', got 'i32'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate custom output dense {identity = 0.0 : f32, associative}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      combine {
      ^bb0(%x: f32, %y: f32):
        %s = arith.constant 0 : i32
        tile.yield %s : i32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @index_acc(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{the accumulator type 'index' must be f16, bf16, f32, f64 or i8 to i64}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.constant 0 : index
        tile.yield %p : index
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Regions.
func.func @inner_args(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{region 'inner' takes 2 arguments, got 1}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32):
        tile.yield %a : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @inner_arg_type(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{argument #1 of region 'inner' must be 'f32', got 'f16'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f16):
        tile.yield %a : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @when_type(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{region 'when' must yield i1, got 'f32'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      when {
      ^bb0(%i: index, %j: index):
        %z = arith.constant 0.0 : f32
        tile.yield %z : f32
      }
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @when_args(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{region 'when' takes 2 arguments, got 1}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      when {
      ^bb0(%i: index):
        %t = arith.constant true
        tile.yield %t : i1
      }
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @project_args(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{argument #0 of region 'project' must be 'f32', got 'index'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      project {
      ^bb0(%i: index, %j: index, %acc: f32):
        tile.yield %acc : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @project_type(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{the output value has type 'i32' but output #0 holds 'f32'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      project {
      ^bb0(%acc: f32, %i: index, %j: index):
        %n = arith.fptosi %acc : f32 to i32
        tile.yield %n : i32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @predicate_dense(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{a predicate region is for outputs select, distinct and top_k}}
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Output operators.
func.func @output_map_k(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{the dense output must be indexed by the two spatial axes, (i, j) or (j, i); got affine_map<(d0, d1, d2) -> (d0, d2)>}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense {output_map = affine_map<(i, j, k) -> (i, k)>}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @dense_two(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>, %D: memref<?x?xf32>) {
  // expected-error @+1 {{output dense takes 1 outputs (C), got 2}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C, %D : memref<?x?xf32>, memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @dense_rank(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?xf32>) {
  // expected-error @+1 {{the dense output must have rank 2, got 'memref<?xf32>'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @aggregate_no_keys(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{output aggregate takes row keys indexed by i and optionally column keys indexed by j, got 0 key arrays}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output aggregate
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @aggregate_row_keys_columns(%A: memref<?x?xf32>, %B: memref<?x8xf32>, %r: memref<?xi32>, %C: memref<?x4xf32>) {
  // expected-error @+1 {{axis j has extent 4 in the aggregate output's columns but 8 in input #1 dimension 1}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x8xf32>)
      keys(%r : memref<?xi32>) outs(%C : memref<?x4xf32>)
      maps [#ik, #kj] accumulate add output aggregate
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @aggregate_key_type(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %r: memref<?xi32>, %c: memref<?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{the column keys must be a rank-1 memref of i32 or i64, got 'memref<?xf32>'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)
      keys(%r, %c : memref<?xi32>, memref<?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output aggregate
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @aggregate_mul(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %r: memref<?xi32>, %c: memref<?xi32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{aggregate mul is not supported: groups combine with add, max or min}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)
      keys(%r, %c : memref<?xi32>, memref<?xi32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output aggregate {aggregate = 1 : i32}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @aggregate_attr_dense(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{'aggregate' is for outputs aggregate and reduce}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense {aggregate = 0 : i32}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @keys_dense(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %r: memref<?xi32>, %c: memref<?xi32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{keys are for outputs aggregate and per_key}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)
      keys(%r, %c : memref<?xi32>, memref<?xi32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @select_no_predicate(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %r: memref<?xi32>, %c: memref<?xi32>, %v: memref<?xf32>, %n: memref<1xi64>) {
  // expected-error @+1 {{output select needs a predicate region}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%r, %c, %v, %n : memref<?xi32>, memref<?xi32>, memref<?xf32>, memref<1xi64>)
      maps [#ik, #kj] accumulate add output select
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @select_count(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{output select takes 4 outputs (rows, cols, values, count), got 1}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output select
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      predicate {
      ^bb0(%v0: f32, %acc: f32, %i: index, %j: index):
        %t = arith.constant true
        tile.yield %t : i1
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @select_count_type(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %r: memref<?xi32>, %c: memref<?xi32>, %v: memref<?xf32>, %n: memref<1xi32>) {
  // expected-error @+1 {{output 'count' must be memref<1xi64>, got 'memref<1xi32>'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%r, %c, %v, %n : memref<?xi32>, memref<?xi32>, memref<?xf32>, memref<1xi32>)
      maps [#ik, #kj] accumulate add output select
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      predicate {
      ^bb0(%v0: f32, %acc: f32, %i: index, %j: index):
        %t = arith.constant true
        tile.yield %t : i1
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @select_capacity(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %r: memref<8xi32>, %c: memref<8xi32>, %v: memref<4xf32>, %n: memref<1xi64>) {
  // expected-error @+1 {{outputs 'rows', 'cols' and 'values' must share one capacity}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%r, %c, %v, %n : memref<8xi32>, memref<8xi32>, memref<4xf32>, memref<1xi64>)
      maps [#ik, #kj] accumulate add output select
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      predicate {
      ^bb0(%v0: f32, %acc: f32, %i: index, %j: index):
        %t = arith.constant true
        tile.yield %t : i1
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @select_rows(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %r: memref<?xf32>, %c: memref<?xi32>, %v: memref<?xf32>, %n: memref<1xi64>) {
  // expected-error @+1 {{output 'rows' must hold i32 or i64 coordinates, got 'memref<?xf32>'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%r, %c, %v, %n : memref<?xf32>, memref<?xi32>, memref<?xf32>, memref<1xi64>)
      maps [#ik, #kj] accumulate add output select
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      predicate {
      ^bb0(%v0: f32, %acc: f32, %i: index, %j: index):
        %t = arith.constant true
        tile.yield %t : i1
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @topk_no_k(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %v: memref<4xf32>, %r: memref<4xi32>, %c: memref<4xi32>) {
  // expected-error @+1 {{output top_k needs 'k'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%v, %r, %c : memref<4xf32>, memref<4xi32>, memref<4xi32>)
      maps [#ik, #kj] accumulate add output top_k
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @topk_length(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %v: memref<4xf32>, %r: memref<4xi32>, %c: memref<4xi32>) {
  // expected-error @+1 {{the top_k outputs must have static length 8, got 'memref<4xf32>'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%v, %r, %c : memref<4xf32>, memref<4xi32>, memref<4xi32>)
      maps [#ik, #kj] accumulate add output top_k {k = 8}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @topk_zero(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %v: memref<4xf32>, %r: memref<4xi32>, %c: memref<4xi32>) {
  // expected-error @+1 {{'k' must be in [1, 2147483647], got 0}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%v, %r, %c : memref<4xf32>, memref<4xi32>, memref<4xi32>)
      maps [#ik, #kj] accumulate add output top_k {k = 0}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @smallest_dense(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{'k' and 'smallest' are for output top_k}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense {smallest}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @distinct_outputs(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{output distinct takes 2 outputs (values, count), got 1}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output distinct
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

func.func @yield_parent(%x: f32) {
  // expected-error @+1 {{'tile.yield' op expects parent op 'tile.task'}}
  tile.yield %x : f32
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @captured(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>, %s: f32) {
  // expected-note @+1 {{required by region isolation constraints}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        // expected-error @+1 {{using value defined outside the region}}
        %p = arith.mulf %a, %s : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @no_infinity(%A: memref<?x?xf8E4M3FN>, %B: memref<?x?xf8E4M3FN>, %C: memref<?x?xf8E4M3FN>) {
  // expected-error @+1 {{input #0 has element type 'f8E4M3FN'; inputs hold f16, bf16, f32, f64 or i8 to i64}}
  tile.task ins(%A, %B : memref<?x?xf8E4M3FN>, memref<?x?xf8E4M3FN>) outs(%C : memref<?x?xf8E4M3FN>)
      maps [#ik, #kj] accumulate max output dense
      inner {
      ^bb0(%a: f8E4M3FN, %b: f8E4M3FN):
        tile.yield %a : f8E4M3FN
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @project_to_index(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xindex>) {
  // expected-error @+1 {{the output value type 'index' must be f16, bf16, f32, f64 or i8 to i64}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xindex>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        tile.yield %a : f32
      }
      project {
      ^bb0(%acc: f32, %i: index, %j: index):
        tile.yield %i : index
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @update_select(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %r: memref<?xi32>, %c: memref<?xi32>, %v: memref<?xf32>, %n: memref<1xi64>) {
  // expected-error @+1 {{'update' is for output dense}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)
      outs(%r, %c, %v, %n : memref<?xi32>, memref<?xi32>, memref<?xf32>, memref<1xi64>)
      maps [#ik, #kj] accumulate add output select {update}
      inner {
      ^bb0(%a: f32, %b: f32):
        tile.yield %a : f32
      }
      predicate {
      ^bb0(%x: f32, %acc: f32, %i: index, %j: index):
        %t = arith.constant true
        tile.yield %t : i1
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @update_type(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xi32>) {
  // expected-error @+1 {{'update' combines the output with the value by the accumulator, so the value must have the accumulator type 'f32', got 'i32'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xi32>)
      maps [#ik, #kj] accumulate add output dense {update}
      inner {
      ^bb0(%a: f32, %b: f32):
        tile.yield %a : f32
      }
      project {
      ^bb0(%acc: f32, %i: index, %j: index):
        %n = arith.fptosi %acc : f32 to i32
        tile.yield %n : i32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @gather_count(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<6x?xf32>, %h: memref<?xi32>) {
  // expected-error @+1 {{has 1 gathers but 'gathered' names 0 [input, dimension] pairs}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<6x?xf32>)
      gathers(%h : memref<?xi32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @gather_pair(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<6x?xf32>, %h: memref<?xi32>) {
  // expected-error @+1 {{'gathered' entry #0 must be an [input, dimension] pair of integers}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<6x?xf32>)
      gathers(%h : memref<?xi32>)
      maps [#ik, #kj] accumulate add output dense {gathered = [[0]]}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @gather_input(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<6x?xf32>, %h: memref<?xi32>) {
  // expected-error @+1 {{gather #0 names input #2 but the task has 2 inputs}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<6x?xf32>)
      gathers(%h : memref<?xi32>)
      maps [#ik, #kj] accumulate add output dense {gathered = [[2, 0]]}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @gather_dim(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<6x?xf32>, %h: memref<?xi32>) {
  // expected-error @+1 {{gather #0 names dimension 2 of input #0, which has 2}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<6x?xf32>)
      gathers(%h : memref<?xi32>)
      maps [#ik, #kj] accumulate add output dense {gathered = [[0, 2]]}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @gather_k(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<6x?xf32>, %h: memref<?xi32>) {
  // expected-error @+1 {{gather #0 indexes the reduction axis k (dimension 1 of input #0); only tasks with output per_key gather k, others the spatial axes i and j}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<6x?xf32>)
      gathers(%h : memref<?xi32>)
      maps [#ik, #kj] accumulate add output dense {gathered = [[0, 1]]}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @gather_twice(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<6x?xf32>, %h: memref<?xi32>, %g: memref<?xi32>) {
  // expected-error @+1 {{dimension 0 of input #0 is gathered twice}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<6x?xf32>)
      gathers(%h, %g : memref<?xi32>, memref<?xi32>)
      maps [#ik, #kj] accumulate add output dense {gathered = [[0, 0], [0, 0]]}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @gather_type(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<6x?xf32>, %h: memref<?xf32>) {
  // expected-error @+1 {{gather #0 must be a rank-1 array of i32 or i64 indices, got 'memref<?xf32>'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<6x?xf32>)
      gathers(%h : memref<?xf32>)
      maps [#ik, #kj] accumulate add output dense {gathered = [[0, 0]]}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @gather_extent(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<6x?xf32>, %h: memref<5xi32>) {
  // expected-error @+1 {{axis i has extent 6 in output dimension 0 but 5 in the gather of input #0 dimension 0}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<6x?xf32>)
      gathers(%h : memref<5xi32>)
      maps [#ik, #kj] accumulate add output dense {gathered = [[0, 0]]}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#ikj = affine_map<(i, j, k) -> (i, k, j)>
func.func @both_spatial_ungathered(%A: memref<?x?xf32>, %W: memref<?x?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{input #1 is indexed by both spatial axes; an input of a matmul-like task has at most one spatial axis (only outputs are indexed by (i, j)) unless one of them is gathered}}
  tile.task ins(%A, %W : memref<?x?xf32>, memref<?x?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #ikj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %w: f32):
        %p = arith.mulf %a, %w : f32
        tile.yield %p : f32
      }
  return
}

// -----

// Output reduce: a rank-1 output along i, combined by add, max or min; a
// finalize region only there, of (value, index) to the stored type.
#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @reduce_rank(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %S: memref<?x?xf32>) {
  // expected-error @+1 {{output 'S' must be [M] or [M, 1], got 'memref<?x?xf32>'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output reduce
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @reduce_mul(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %S: memref<?xf32>) {
  // expected-error @+1 {{reduce mul is not supported: a row's values combine with add, max or min}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?xf32>)
      maps [#ik, #kj] accumulate add output reduce {aggregate = 1 : i32}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @reduce_rows(%A: memref<5x?xf32>, %B: memref<?x?xf32>, %S: memref<4xf32>) {
  // expected-error @+1 {{axis i has extent 4 in the reduce output but 5 in input #0 dimension 0}}
  tile.task ins(%A, %B : memref<5x?xf32>, memref<?x?xf32>) outs(%S : memref<4xf32>)
      maps [#ik, #kj] accumulate add output reduce
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @finalize_not_reduce(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @+1 {{a finalize region is for output reduce}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      finalize {
      ^bb0(%s: f32, %i: index):
        tile.yield %s : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @finalize_arguments(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %S: memref<?xf32>) {
  // expected-error @+1 {{region 'finalize' takes 2 arguments, got 1}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?xf32>)
      maps [#ik, #kj] accumulate add output reduce
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      finalize {
      ^bb0(%s: f32):
        tile.yield %s : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @finalize_type(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %S: memref<?xf32>) {
  // expected-error @+1 {{the finalized value has type 'i1' but output #0 holds 'f32'}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?xf32>)
      maps [#ik, #kj] accumulate add output reduce
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      finalize {
      ^bb0(%s: f32, %i: index):
        %zero = arith.constant 0.0 : f32
        %pos = arith.cmpf ogt, %s, %zero : f32
        tile.yield %pos : i1
      }
  return
}

// -----

// Two matrices per key: a task multiplies by one.
#ik = affine_map<(i, j, k) -> (i, k)>
#ikj = affine_map<(i, j, k) -> (i, k, j)>

func.func @two_matrices(%E: memref<?x?xf32>, %W: memref<?x?x?xf32>, %V: memref<?x?x?xf32>,
                        %h: memref<?xi32>, %r: memref<?xi32>, %q: memref<?xi32>, %Y: memref<?x?xf32>) {
  // expected-error @+1 {{has 2 inputs indexed by i, j and k (matrices per key); a task multiplies by at most one}}
  tile.task ins(%E, %W, %V : memref<?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>) outs(%Y : memref<?x?xf32>)
      gathers(%h, %r, %q : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      maps [#ik, #ikj, #ikj] accumulate add output dense {gathered = [[0, 0], [1, 0], [2, 0]]}
      inner {
      ^bb0(%e: f32, %w: f32, %v: f32):
        %p = arith.mulf %e, %w : f32
        %q2 = arith.mulf %p, %v : f32
        tile.yield %q2 : f32
      }
  return
}

// -----

#ki = affine_map<(i, j, k) -> (k, i)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @per_key_two_keys(%x: memref<?x?xf32>, %g: memref<?x?xf32>, %t: memref<?xi32>,
                            %dW: memref<?x?x?xf32>) {
  // expected-error @+1 {{output per_key takes one key array indexed by k, got 2 key arrays}}
  tile.task ins(%x, %g : memref<?x?xf32>, memref<?x?xf32>) keys(%t, %t : memref<?xi32>, memref<?xi32>)
      outs(%dW : memref<?x?x?xf32>) maps [#ki, #kj] accumulate add output per_key
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ki = affine_map<(i, j, k) -> (k, i)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @per_key_rank(%x: memref<?x?xf32>, %g: memref<?x?xf32>, %t: memref<?xi32>,
                        %dW: memref<?x?xf32>) {
  // expected-error @+1 {{the per_key output must have rank 3 (a matrix per key), got 'memref<?x?xf32>'}}
  tile.task ins(%x, %g : memref<?x?xf32>, memref<?x?xf32>) keys(%t : memref<?xi32>)
      outs(%dW : memref<?x?xf32>) maps [#ki, #kj] accumulate add output per_key
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ki = affine_map<(i, j, k) -> (k, i)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @per_key_keys_length(%x: memref<100x?xf32>, %g: memref<?x?xf32>, %t: memref<99xi32>,
                               %dW: memref<?x?x?xf32>) {
  // expected-error @+1 {{axis k has extent 99 in the keys but 100 in input #0 dimension 0}}
  tile.task ins(%x, %g : memref<100x?xf32>, memref<?x?xf32>) keys(%t : memref<99xi32>)
      outs(%dW : memref<?x?x?xf32>) maps [#ki, #kj] accumulate add output per_key
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ki = affine_map<(i, j, k) -> (k, i)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @per_key_mul(%x: memref<?x?xf32>, %g: memref<?x?xf32>, %t: memref<?xi32>,
                       %dW: memref<?x?x?xf32>) {
  // expected-error @+1 {{output per_key combines into its matrices with the accumulator: accumulate add, max or min, got mul}}
  tile.task ins(%x, %g : memref<?x?xf32>, memref<?x?xf32>) keys(%t : memref<?xi32>)
      outs(%dW : memref<?x?x?xf32>) maps [#ki, #kj] accumulate mul output per_key
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ki = affine_map<(i, j, k) -> (k, i)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @per_key_project(%x: memref<?x?xf32>, %g: memref<?x?xf32>, %t: memref<?xi32>,
                           %dW: memref<?x?x?xf32>) {
  // expected-error @+1 {{output per_key takes no project or when region: a key's matrix combines partial reductions}}
  tile.task ins(%x, %g : memref<?x?xf32>, memref<?x?xf32>) keys(%t : memref<?xi32>)
      outs(%dW : memref<?x?x?xf32>) maps [#ki, #kj] accumulate add output per_key
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
      project {
      ^bb0(%acc: f32, %i: index, %j: index):
        tile.yield %acc : f32
      }
  return
}
