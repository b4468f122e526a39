// RUN: kge-opt %s -split-input-file -verify-diagnostics

// One case per verifier and parser error of the bvec dialect.

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

// expected-error @+1 {{!bvec.table expects 2 or 3 dimensions before the element type, got 1}}
func.func private @table_rank(!bvec.table<10xf32>)

// -----

// expected-error @+1 {{!bvec.table element type must be a floating-point type, got 'i32'}}
func.func private @table_element(!bvec.table<10x4xi32>)

// -----

// expected-error @+1 {{!bvec.table row count must be positive or '?', got 0}}
func.func private @table_rows(!bvec.table<0x4xf32>)

// -----

// expected-error @+1 {{!bvec.table dimension 2 must be positive or '?', got 0}}
func.func private @table_cols(!bvec.table<3x4x0xf32>)

// -----

// expected-error @+1 {{!bvec.indices element type must be i32 or i64, got 'f32'}}
func.func private @indices_float(!bvec.indices<?xf32>)

// -----

// expected-error @+1 {{!bvec.indices element type must be i32 or i64, got 'i16'}}
func.func private @indices_i16(!bvec.indices<?xi16>)

// -----

// expected-error @+1 {{!bvec.indices expects 1 dimensions before the element type, got 2}}
func.func private @indices_rank(!bvec.indices<?x4xi64>)

// -----

// expected-error @+1 {{!bvec.vec expects 2 dimensions before the element type, got 3}}
func.func private @vec_rank(!bvec.vec<?x4x4xf32>)

// -----

// expected-error @+1 {{!bvec.vec length must be positive or '?', got 0}}
func.func private @vec_length(!bvec.vec<?x0xf32>)

// -----

// expected-error @+1 {{!bvec.vec batch size must be positive or '?', got 0}}
func.func private @vec_batch(!bvec.vec<0x4xf32>)

// -----

// expected-error @+1 {{!bvec.mat element type must be a floating-point type, got 'i64'}}
func.func private @mat_element(!bvec.mat<?x4x4xi64>)

// -----

// expected-error @+1 {{!bvec.mat column count must be positive or '?', got 0}}
func.func private @mat_cols(!bvec.mat<?x4x0xf32>)

// -----

// expected-error @+1 {{!bvec.scalar element type must be a floating-point type, got 'i1'}}
func.func private @scalar_element(!bvec.scalar<?xi1>)

// -----

// expected-error @+1 {{!bvec.scalar expects 1 dimensions before the element type, got 2}}
func.func private @scalar_rank(!bvec.scalar<?x2xf32>)

//===----------------------------------------------------------------------===//
// bvec.func
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{argument name '%0' must be an identifier}}
bvec.func @numeric_name(%0: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  bvec.return
}

// -----

// expected-error @+1 {{result name '2x' must be an identifier}}
bvec.func @bad_result_name(%E: !bvec.table<?x4xf32>) -> ("2x": !bvec.scalar<?xf32>) {
  %c = bvec.constant 1.0 : !bvec.scalar<?xf32>
  bvec.return %c : !bvec.scalar<?xf32>
}

// -----

// expected-error @+1 {{'bvec.func' op parameter name 'score' is used more than once}}
bvec.func @duplicate_name(%score: !bvec.table<?x4xf32>) -> (score: !bvec.scalar<?xf32>) {
  %c = bvec.constant 1.0 : !bvec.scalar<?xf32>
  bvec.return %c : !bvec.scalar<?xf32>
}

// -----

// expected-error @+1 {{'bvec.func' op argument 'v' must be a !bvec.table, !bvec.indices or !bvec.scalar, got '!bvec.vec<?x4xf32>'}}
bvec.func @vector_argument(%v: !bvec.vec<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  %c = bvec.constant 1.0 : !bvec.scalar<?xf32>
  bvec.return %c : !bvec.scalar<?xf32>
}

// -----

// expected-error @+1 {{'bvec.func' op result 'T' must be a !bvec.scalar, !bvec.vec or !bvec.mat, got '!bvec.indices<?xi64>'}}
bvec.func @indices_result(%h: !bvec.indices<?xi64>) -> (T: !bvec.indices<?xi64>) {
  bvec.return
}

// -----

// expected-error @+1 {{'bvec.func' op must return at least one batch}}
bvec.func @no_result(%E: !bvec.table<?x4xf32>) -> () {
  bvec.return
}

// -----

// expected-error @+1 {{'bvec.func' op batch size 8 of the result 's' differs from batch size ? of the index array 'h'; all batches of a function have one size}}
bvec.func @signature_batch(%h: !bvec.indices<?xi64>) -> (s: !bvec.scalar<8xf32>) {
  %c = bvec.constant 1.0 : !bvec.scalar<8xf32>
  bvec.return %c : !bvec.scalar<8xf32>
}

// -----

bvec.func @body_batch(%h: !bvec.indices<?xi64>) -> (s: !bvec.scalar<?xf32>) {
  // expected-error @+1 {{'bvec.constant' op produces a batch of size 5 in a function whose batch size is ?}}
  %c = bvec.constant 1.0 : !bvec.scalar<5xf32>
  %d = bvec.constant 1.0 : !bvec.scalar<?xf32>
  bvec.return %d : !bvec.scalar<?xf32>
}

// -----

// expected-error @+1 {{'bvec.func' op has 1 argument names for 2 arguments}}
"bvec.func"() <{arg_names = ["a"], result_names = ["s"], sym_name = "names",
               function_type = (!bvec.table<?x4xf32>, !bvec.indices<?xi64>) -> !bvec.scalar<?xf32>}> ({
^bb0(%a: !bvec.table<?x4xf32>, %b: !bvec.indices<?xi64>):
  %c = "bvec.constant"() <{value = 1.0 : f32}> : () -> !bvec.scalar<?xf32>
  "bvec.return"(%c) : (!bvec.scalar<?xf32>) -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'bvec.func' op has 2 result names for 1 results}}
"bvec.func"() <{arg_names = ["a"], result_names = ["s", "t"], sym_name = "result_names",
               function_type = (!bvec.table<?x4xf32>) -> !bvec.scalar<?xf32>}> ({
^bb0(%a: !bvec.table<?x4xf32>):
  %c = "bvec.constant"() <{value = 1.0 : f32}> : () -> !bvec.scalar<?xf32>
  "bvec.return"(%c) : (!bvec.scalar<?xf32>) -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'bvec.func' op type of entry block argument #0('!bvec.table<?x8xf32>') must match the type of the corresponding argument in function signature('!bvec.table<?x4xf32>')}}
"bvec.func"() <{arg_names = ["a"], result_names = ["s"], sym_name = "block_args",
               function_type = (!bvec.table<?x4xf32>) -> !bvec.scalar<?xf32>}> ({
^bb0(%a: !bvec.table<?x8xf32>):
  %c = "bvec.constant"() <{value = 1.0 : f32}> : () -> !bvec.scalar<?xf32>
  "bvec.return"(%c) : (!bvec.scalar<?xf32>) -> ()
}) : () -> ()

// -----

bvec.func @return_count(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  %c = bvec.constant 1.0 : !bvec.scalar<?xf32>
  // expected-error @+1 {{'bvec.return' op returns 2 values but the function declares 1 results}}
  bvec.return %c, %c : !bvec.scalar<?xf32>, !bvec.scalar<?xf32>
}

// -----

bvec.func @return_type(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  %c = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  // expected-error @+1 {{'bvec.return' op type '!bvec.vec<?x4xf32>' of returned value #0 does not match result 's' of type '!bvec.scalar<?xf32>'}}
  bvec.return %c : !bvec.vec<?x4xf32>
}

//===----------------------------------------------------------------------===//
// Gathers
//===----------------------------------------------------------------------===//

// -----

bvec.func @gather_vec_of_matrices(%P: !bvec.table<?x4x4xf32>, %r: !bvec.indices<?xi64>) -> (s: !bvec.vec<?x4xf32>) {
  // expected-error @+1 {{'bvec.gather_vec' op expects a table of vectors (rank 2), got '!bvec.table<?x4x4xf32>'; use bvec.gather_mat for matrices}}
  %v = bvec.gather_vec %P[%r] : !bvec.table<?x4x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  bvec.return %v : !bvec.vec<?x4xf32>
}

// -----

bvec.func @gather_vec_length(%E: !bvec.table<?x128xf32>, %h: !bvec.indices<?xi64>) -> (s: !bvec.vec<?x64xf32>) {
  // expected-error @+1 {{'bvec.gather_vec' op result length 64 does not match the table's row length 128}}
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  bvec.return %v : !bvec.vec<?x64xf32>
}

// -----

bvec.func @gather_vec_dynamic_length(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>) -> (s: !bvec.vec<?x64xf32>) {
  // expected-error @+1 {{'bvec.gather_vec' op result length 64 does not match the table's row length ?}}
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  bvec.return %v : !bvec.vec<?x64xf32>
}

// -----

bvec.func @gather_vec_element(%E: !bvec.table<?x4xf64>, %h: !bvec.indices<?xi64>) -> (s: !bvec.vec<?x4xf32>) {
  // expected-error @+1 {{'bvec.gather_vec' op gives element type 'f32' from a table of 'f64'; expected 'f64'}}
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x4xf64>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  bvec.return %v : !bvec.vec<?x4xf32>
}

// -----

// Half-precision tables widen to f32, and only to f32.
bvec.func @gather_vec_narrowing(%E: !bvec.table<?x4xbf16>, %h: !bvec.indices<?xi64>) -> (s: !bvec.vec<?x4xf16>) {
  // expected-error @+1 {{'bvec.gather_vec' op gives element type 'f16' from a table of 'bf16'; expected 'bf16' or f32 (widened)}}
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x4xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf16>
  bvec.return %v : !bvec.vec<?x4xf16>
}

// -----

bvec.func @gather_mat_to_f64(%P: !bvec.table<?x4x4xf16>, %h: !bvec.indices<?xi64>) -> (s: !bvec.mat<?x4x4xf64>) {
  // expected-error @+1 {{'bvec.gather_mat' op gives element type 'f64' from a table of 'f16'; expected 'f16' or f32 (widened)}}
  %m = bvec.gather_mat %P[%h] : !bvec.table<?x4x4xf16>, !bvec.indices<?xi64> -> !bvec.mat<?x4x4xf64>
  bvec.return %m : !bvec.mat<?x4x4xf64>
}

// -----

bvec.func @gather_vec_batch(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>) -> (s: !bvec.vec<?x4xf32>) {
  // expected-error @+1 {{'bvec.gather_vec' op batch size 8 of the result differs from batch size ? of the indices}}
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<8x4xf32>
  %w = bvec.constant 0.0 : !bvec.vec<?x4xf32>
  bvec.return %w : !bvec.vec<?x4xf32>
}

// -----

bvec.func @gather_mat_of_vectors(%E: !bvec.table<?x4xf32>, %r: !bvec.indices<?xi64>) -> (m: !bvec.mat<?x4x4xf32>) {
  // expected-error @+1 {{'bvec.gather_mat' op expects a table of matrices (rank 3), got '!bvec.table<?x4xf32>'; use bvec.gather_vec for vectors}}
  %m = bvec.gather_mat %E[%r] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x4x4xf32>
  bvec.return %m : !bvec.mat<?x4x4xf32>
}

// -----

bvec.func @gather_mat_rows(%P: !bvec.table<?x4x8xf32>, %r: !bvec.indices<?xi64>) -> (m: !bvec.mat<?x8x8xf32>) {
  // expected-error @+1 {{'bvec.gather_mat' op result row count 8 does not match the table's row count 4}}
  %m = bvec.gather_mat %P[%r] : !bvec.table<?x4x8xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x8x8xf32>
  bvec.return %m : !bvec.mat<?x8x8xf32>
}

// -----

bvec.func @gather_mat_cols(%P: !bvec.table<?x4x8xf32>, %r: !bvec.indices<?xi64>) -> (m: !bvec.mat<?x4x4xf32>) {
  // expected-error @+1 {{'bvec.gather_mat' op result column count 4 does not match the table's column count 8}}
  %m = bvec.gather_mat %P[%r] : !bvec.table<?x4x8xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x4x4xf32>
  bvec.return %m : !bvec.mat<?x4x4xf32>
}

//===----------------------------------------------------------------------===//
// Constants and elementwise operations
//===----------------------------------------------------------------------===//

// -----

bvec.func @constant_not_batched(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  // expected-error @+1 {{bvec.constant expects a batch of scalars, vectors or matrices, got 'f32'}}
  %c = bvec.constant 1.0 : f32
  bvec.return %c : !bvec.scalar<?xf32>
}

// -----

bvec.func @constant_value_type(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  // expected-error @+1 {{'bvec.constant' op value of type 'f64' does not match the element type 'f32'}}
  %c = "bvec.constant"() <{value = 1.0 : f64}> : () -> !bvec.scalar<?xf32>
  bvec.return %c : !bvec.scalar<?xf32>
}

// -----

bvec.func @elementwise_types(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>) -> (s: !bvec.vec<?x4xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %b = bvec.constant 1.0 : !bvec.vec<?x8xf32>
  // expected-error @+1 {{'bvec.add' op requires the same type for all operands and results}}
  %c = "bvec.add"(%a, %b) : (!bvec.vec<?x4xf32>, !bvec.vec<?x8xf32>) -> !bvec.vec<?x4xf32>
  bvec.return %c : !bvec.vec<?x4xf32>
}

// -----

bvec.func @elementwise_on_indices(%h: !bvec.indices<?xi64>) -> (s: !bvec.scalar<?xf32>) {
  // expected-error @+1 {{'bvec.neg' op operand #0 must be batch of scalars, vectors or matrices, but got '!bvec.indices<?xi64>'}}
  %n = "bvec.neg"(%h) : (!bvec.indices<?xi64>) -> !bvec.indices<?xi64>
  %c = bvec.constant 1.0 : !bvec.scalar<?xf32>
  bvec.return %c : !bvec.scalar<?xf32>
}

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

// -----

bvec.func @scal_mul_vec_result(%E: !bvec.table<?x4xf32>) -> (v: !bvec.vec<?x8xf32>) {
  %s = bvec.constant 2.0 : !bvec.scalar<?xf32>
  %v = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  // expected-error @+1 {{'bvec.scal_mul_vec' op result type '!bvec.vec<?x8xf32>' must equal the vector type '!bvec.vec<?x4xf32>'}}
  %r = bvec.scal_mul_vec %s, %v : !bvec.scalar<?xf32>, !bvec.vec<?x4xf32> -> !bvec.vec<?x8xf32>
  bvec.return %r : !bvec.vec<?x8xf32>
}

// -----

bvec.func @scal_mul_vec_element(%E: !bvec.table<?x4xf32>) -> (v: !bvec.vec<?x4xf32>) {
  %s = bvec.constant 2.0 : !bvec.scalar<?xf64>
  %v = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  // expected-error @+1 {{'bvec.scal_mul_vec' op element type 'f32' of the vector differs from element type 'f64' of the scalar}}
  %r = bvec.scal_mul_vec %s, %v : !bvec.scalar<?xf64>, !bvec.vec<?x4xf32> -> !bvec.vec<?x4xf32>
  bvec.return %r : !bvec.vec<?x4xf32>
}

// -----

bvec.func @vec_mul_vec_length(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  %a = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  %b = bvec.constant 1.0 : !bvec.vec<?x5xf32>
  // expected-error @+1 {{'bvec.vec_mul_vec' op right-hand length 5 does not match left-hand length 4}}
  %s = bvec.vec_mul_vec %a, %b : !bvec.vec<?x4xf32>, !bvec.vec<?x5xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

bvec.func @vec_mul_vec_element(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf64>) {
  %a = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  // expected-error @+1 {{'bvec.vec_mul_vec' op element type 'f64' of the result differs from element type 'f32' of the left-hand side}}
  %s = bvec.vec_mul_vec %a, %a : !bvec.vec<?x4xf32>, !bvec.vec<?x4xf32> -> !bvec.scalar<?xf64>
  bvec.return %s : !bvec.scalar<?xf64>
}

// -----

bvec.func @vec_mul_mat_rows(%E: !bvec.table<?x4xf32>) -> (v: !bvec.vec<?x8xf32>) {
  %v = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  %m = bvec.constant 1.0 : !bvec.mat<?x5x8xf32>
  // expected-error @+1 {{'bvec.vec_mul_mat' op matrix row count 5 does not match vector length 4}}
  %r = bvec.vec_mul_mat %v, %m : !bvec.vec<?x4xf32>, !bvec.mat<?x5x8xf32> -> !bvec.vec<?x8xf32>
  bvec.return %r : !bvec.vec<?x8xf32>
}

// -----

bvec.func @vec_mul_mat_cols(%E: !bvec.table<?x4xf32>) -> (v: !bvec.vec<?x4xf32>) {
  %v = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  %m = bvec.constant 1.0 : !bvec.mat<?x4x8xf32>
  // expected-error @+1 {{'bvec.vec_mul_mat' op result length 4 does not match matrix column count 8}}
  %r = bvec.vec_mul_mat %v, %m : !bvec.vec<?x4xf32>, !bvec.mat<?x4x8xf32> -> !bvec.vec<?x4xf32>
  bvec.return %r : !bvec.vec<?x4xf32>
}

// -----

bvec.func @vec_mul_mat_element(%E: !bvec.table<?x4xf32>) -> (v: !bvec.vec<?x8xf32>) {
  %v = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  %m = bvec.constant 1.0 : !bvec.mat<?x4x8xf64>
  // expected-error @+1 {{'bvec.vec_mul_mat' op element type 'f64' of the matrix differs from element type 'f32' of the vector}}
  %r = bvec.vec_mul_mat %v, %m : !bvec.vec<?x4xf32>, !bvec.mat<?x4x8xf64> -> !bvec.vec<?x8xf32>
  bvec.return %r : !bvec.vec<?x8xf32>
}

// -----

bvec.func @vec_outer_vec_rows(%E: !bvec.table<?x4xf32>) -> (m: !bvec.mat<?x3x8xf32>) {
  %a = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  %b = bvec.constant 1.0 : !bvec.vec<?x8xf32>
  // expected-error @+1 {{'bvec.vec_outer_vec' op result row count 3 does not match left-hand length 4}}
  %m = bvec.vec_outer_vec %a, %b : !bvec.vec<?x4xf32>, !bvec.vec<?x8xf32> -> !bvec.mat<?x3x8xf32>
  bvec.return %m : !bvec.mat<?x3x8xf32>
}

// -----

bvec.func @vec_outer_vec_cols(%E: !bvec.table<?x4xf32>) -> (m: !bvec.mat<?x4x7xf32>) {
  %a = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  %b = bvec.constant 1.0 : !bvec.vec<?x8xf32>
  // expected-error @+1 {{'bvec.vec_outer_vec' op result column count 7 does not match right-hand length 8}}
  %m = bvec.vec_outer_vec %a, %b : !bvec.vec<?x4xf32>, !bvec.vec<?x8xf32> -> !bvec.mat<?x4x7xf32>
  bvec.return %m : !bvec.mat<?x4x7xf32>
}

//===----------------------------------------------------------------------===//
// Norms, reductions, slices
//===----------------------------------------------------------------------===//

// -----

bvec.func @norm_p(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  %v = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  // expected-error @+1 {{'bvec.norm' op supports the 1-norm and the 2-norm, got p = 3}}
  %n = bvec.norm %v, p = 3 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %n : !bvec.scalar<?xf32>
}

// -----

bvec.func @norm_element(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf64>) {
  %v = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  // expected-error @+1 {{'bvec.norm' op element type 'f64' of the result differs from element type 'f32' of the input}}
  %n = bvec.norm %v, p = 2 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf64>
  bvec.return %n : !bvec.scalar<?xf64>
}

// -----

bvec.func @reduce_kind(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  %v = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, mean, max, min]}}
  %n = bvec.reduce product %v : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %n : !bvec.scalar<?xf32>
}

// -----

bvec.func @reduce_batch(%h: !bvec.indices<?xi64>) -> (s: !bvec.scalar<?xf32>) {
  %v = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  // expected-error @+1 {{'bvec.reduce' op batch size 3 of the result differs from batch size ? of the input}}
  %n = bvec.reduce sum %v : !bvec.vec<?x4xf32> -> !bvec.scalar<3xf32>
  bvec.return %v : !bvec.vec<?x4xf32>
}

// -----

bvec.func @slice_dynamic(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>) -> (s: !bvec.vec<?x2xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  // expected-error @+1 {{'bvec.slice' op needs a static input length, got '!bvec.vec<?x?xf32>'}}
  %s = bvec.slice %v[0] : !bvec.vec<?x?xf32> -> !bvec.vec<?x2xf32>
  bvec.return %s : !bvec.vec<?x2xf32>
}

// -----

bvec.func @slice_bounds(%E: !bvec.table<?x4xf32>) -> (s: !bvec.vec<?x2xf32>) {
  %v = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  // expected-error @+1 {{'bvec.slice' op slice [3, 5) is out of bounds for input length 4}}
  %s = bvec.slice %v[3] : !bvec.vec<?x4xf32> -> !bvec.vec<?x2xf32>
  bvec.return %s : !bvec.vec<?x2xf32>
}

// -----

bvec.func @slice_negative(%E: !bvec.table<?x4xf32>) -> (s: !bvec.vec<?x2xf32>) {
  %v = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  // expected-error @+1 {{'bvec.slice' op slice [-1, 1) is out of bounds for input length 4}}
  %s = bvec.slice %v[-1] : !bvec.vec<?x4xf32> -> !bvec.vec<?x2xf32>
  bvec.return %s : !bvec.vec<?x2xf32>
}

// -----

// Offsets near INT64_MAX are out of bounds, not an overflow.
bvec.func @slice_huge_offset(%E: !bvec.table<?x4xf32>) -> (s: !bvec.vec<?x2xf32>) {
  %v = bvec.constant 1.0 : !bvec.vec<?x4xf32>
  // expected-error @+1 {{'bvec.slice' op slice [9223372036854775807, 9223372036854775807 + 2) is out of bounds for input length 4}}
  %s = bvec.slice %v[9223372036854775807] : !bvec.vec<?x4xf32> -> !bvec.vec<?x2xf32>
  bvec.return %s : !bvec.vec<?x2xf32>
}

// -----

bvec.func @seed_batch(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>, %d: !bvec.scalar<7xf32>)
    -> (s: !bvec.scalar<?xf32>) {
  // expected-error @-2 {{'bvec.func' op batch size 7 of the per-edge input 'd' differs from batch size ? of the index array 'h'; all batches of a function have one size}}
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %n = bvec.norm %e, p = 2 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %n : !bvec.scalar<?xf32>
}

// -----

func.func private @mat_mul_vec_inner(%m: !bvec.mat<?x8x6xf32>, %v: !bvec.vec<?x5xf32>) {
  // expected-error @+1 {{'bvec.mat_mul_vec' op matrix column count 6 does not match vector length 5}}
  %y = bvec.mat_mul_vec %m, %v : !bvec.mat<?x8x6xf32>, !bvec.vec<?x5xf32> -> !bvec.vec<?x8xf32>
  return
}

// -----

func.func private @mat_mul_vec_result(%m: !bvec.mat<?x8x6xf32>, %v: !bvec.vec<?x6xf32>) {
  // expected-error @+1 {{'bvec.mat_mul_vec' op result length 6 does not match matrix row count 8}}
  %y = bvec.mat_mul_vec %m, %v : !bvec.mat<?x8x6xf32>, !bvec.vec<?x6xf32> -> !bvec.vec<?x6xf32>
  return
}

// -----

func.func private @pad_bounds(%v: !bvec.vec<?x6xf32>) {
  // expected-error @+1 {{'bvec.pad' op places 6 elements at offset 3, outside result length 8}}
  %y = bvec.pad %v[3] : !bvec.vec<?x6xf32> -> !bvec.vec<?x8xf32>
  return
}

// -----

func.func private @pad_dynamic(%v: !bvec.vec<?x?xf32>) {
  // expected-error @+1 {{'bvec.pad' op needs a static input length, got '!bvec.vec<?x?xf32>'}}
  %y = bvec.pad %v[0] : !bvec.vec<?x?xf32> -> !bvec.vec<?x8xf32>
  return
}
