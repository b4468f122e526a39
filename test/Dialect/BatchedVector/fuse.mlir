// RUN: kge-opt %s -split-input-file -bvec-fuse | FileCheck %s
// RUN: kge-opt %s -split-input-file -bvec-fuse="tile=64 warps=4 reorder-key=r reorder-group=8 stage-repeats=50 matrix-math=fma carry-floats=32 blocks-per-sm=6 deterministic=0" \
// RUN:   | FileCheck %s --check-prefix=OPTIONS
// RUN: not kge-opt %s -split-input-file -bvec-fuse="warps=3 tile=32" 2>&1 | FileCheck %s --check-prefix=TILE
// RUN: not kge-opt %s -split-input-file -bvec-fuse="warps=64" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not kge-opt %s -split-input-file -bvec-fuse="vector-width=2" 2>&1 | FileCheck %s --check-prefix=WIDTH
// RUN: not kge-opt %s -split-input-file -bvec-fuse="vector-width=4" 2>&1 | FileCheck %s --check-prefix=WIDTH4
// RUN: not kge-opt %s -split-input-file -bvec-fuse="reorder-key=Eemb" 2>&1 | FileCheck %s --check-prefix=KEY
// RUN: not kge-opt %s -split-input-file -bvec-fuse="reorder-key=r reorder-group=1000" 2>&1 | FileCheck %s --check-prefix=GROUP
// RUN: not kge-opt %s -split-input-file -bvec-fuse="stage-repeats=102" 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not kge-opt %s -split-input-file -bvec-fuse="matrix-math=tf32" 2>&1 | FileCheck %s --check-prefix=MATH
// RUN: not kge-opt %s -split-input-file -bvec-fuse="carry-floats=193" 2>&1 | FileCheck %s --check-prefix=CARRY
// RUN: not kge-opt %s -split-input-file -bvec-fuse="blocks-per-sm=5" 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: not kge-opt %s -split-input-file -bvec-fuse="warps=32 blocks-per-sm=2" 2>&1 | FileCheck %s --check-prefix=BLOCKS32
// RUN: not kge-opt %s -split-input-file -bvec-fuse="deterministic=2" 2>&1 | FileCheck %s --check-prefix=DETERMINISTIC
// RUN: not kge-opt %s -split-input-file -bvec-fuse="reorder-min-batch=1024 reorder-group=1" 2>&1 | FileCheck %s --check-prefix=MINBATCH
// RUN: not kge-opt %s -split-input-file -bvec-fuse="reorder-min-reuse=4" 2>&1 | FileCheck %s --check-prefix=MINREUSE
// RUN: not kge-opt %s -split-input-file -bvec-fuse="reorder-min-row=512 reorder-group=1" 2>&1 | FileCheck %s --check-prefix=MINROW
// RUN: not kge-opt %s -split-input-file -bvec-fuse="reorder-min-row=-5" 2>&1 | FileCheck %s --check-prefix=MINROWNEG

// bvec-fuse assigns every operator its stage (a pass over the embedding
// length), marks the vectors that must be kept whole in shared memory, and
// records the kernel layout. Functions without matrix products sort large
// batches by entity (the first index array of the table gathered by the
// most index arrays: `h`) when they have at least 65536 edges and 16 per
// entity, and that table's rows at least 512 elements (statically narrower
// rows: never; dynamic ones: the launch plan checks, see the end).

// TransH: the projection `w . (h - t)` is a complete reduction, so the
// operators that use it start stage 1; the rest fuses into stage 0.
// CHECK-LABEL: bvec.func @transh
// Vector kernels are compiled for 4 blocks of 8 warps per multiprocessor
// (64 registers per thread); matrix kernels (TransR below) for none.
// Its rows of 64 are narrower than reorder_min_row (512): never sorted.
// CHECK-SAME: bvec.kernel = {blocks_per_sm = 4 : i64, carry_floats = 128 : i64, deterministic = 1 : i64, matrix_math = "tf32x3", reorder_auto = 0 : i64, reorder_group = 1 : i64, reorder_key = "", reorder_min_batch = 0 : i64, reorder_min_reuse = 0 : i64, reorder_min_row = 0 : i64, stage_repeats = 101 : i64, stages = 2 : i64, tile = 32 : i64, vector_width = 4 : i64, warps = 8 : i64}
// CHECK: %[[H:.*]] = bvec.gather_vec %Eemb[%h] {bvec.stage = 0 : i64}
// CHECK: %[[D:.*]] = bvec.sub {{.*}} {bvec.stage = 0 : i64}
// CHECK: %[[P:.*]] = bvec.vec_mul_vec {{.*}} {bvec.stage = 0 : i64}
// CHECK: bvec.scal_mul_vec %[[P]], {{.*}} {bvec.stage = 1 : i64}
// CHECK: bvec.norm {{.*}} {bvec.stage = 1 : i64}
// CHECK-NOT: bvec.materialize
// OPTIONS-LABEL: bvec.func @transh
// OPTIONS-SAME: bvec.kernel = {blocks_per_sm = 6 : i64, carry_floats = 32 : i64, deterministic = 0 : i64, matrix_math = "fma", reorder_auto = 0 : i64, reorder_group = 8 : i64, reorder_key = "r", reorder_min_batch = 0 : i64, reorder_min_reuse = 0 : i64, reorder_min_row = 0 : i64, stage_repeats = 50 : i64, stages = 2 : i64, tile = 64 : i64, vector_width = 4 : i64, warps = 4 : i64}
// TILE: error: 'bvec.func' op kernel layout: the tile must be a multiple of the warp count (3) in [1, 1024], got 32
// WARPS: error: 'bvec.func' op kernel layout: warps must be in [1, 32], got 64
// WIDTH: error: 'bvec.func' op kernel layout: vector width must be 1 or 4, got 2
// KEY: error: 'bvec.func' op kernel layout: reorder key 'Eemb' is not an index array of the function
// MATH: error: 'bvec.func' op kernel layout: matrix_math must be "tf32x3" or "fma", got "tf32"
// CARRY: error: 'bvec.func' op kernel layout: carry_floats must be in [0, 192] (floats per lane, 0: never carry), got 193
// BLOCKS: error: 'bvec.func' op kernel layout: blocks_per_sm must be in [0, 4] for blocks of 256 threads (each thread keeps 64 of the 65536 registers of a multiprocessor), got 5
// BLOCKS32: error: 'bvec.func' op kernel layout: blocks_per_sm must be in [0, 1] for blocks of 1024 threads (each thread keeps 64 of the 65536 registers of a multiprocessor), got 2
// MINBATCH: error: 'bvec.func' op kernel layout: reorder_min_batch 1024 needs a whole-batch sort (a reorder key, reorder_group 0)
// MINROW: error: 'bvec.func' op kernel layout: reorder_min_row 512 needs a whole-batch sort (a reorder key, reorder_group 0)
// MINROWNEG: error: 'bvec.func' op kernel layout: reorder_min_row must be non-negative (-1: choose), got -5
// MINREUSE: error: 'bvec.func' op kernel layout: reorder_min_reuse applies to functions without matrix products (theirs always sort by matrix)
// DETERMINISTIC: error: 'bvec.func' op kernel layout: deterministic must be 0 or 1, got 2
// STAGE: error: 'bvec.func' op kernel layout: stage_repeats is a percentage in [0, 101] (101: never stage), got 102
// GROUP: error: 'bvec.func' op kernel layout: groups of 1000 tiles of 32 edges exceed 4096 edges; use 0 to sort the whole batch
bvec.func @transh(%Eemb: !bvec.table<?x64xf32>, %Remb: !bvec.table<?x64xf32>,
                  %Pv: !bvec.table<?x64xf32>, %h: !bvec.indices<?xi64>,
                  %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %w = bvec.gather_vec %Pv[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x64xf32>
  %proj = bvec.vec_mul_vec %w, %diff : !bvec.vec<?x64xf32>, !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  %scaled = bvec.scal_mul_vec %proj, %w : !bvec.scalar<?xf32>, !bvec.vec<?x64xf32> -> !bvec.vec<?x64xf32>
  %sum = bvec.add %diff, %rel : !bvec.vec<?x64xf32>
  %out = bvec.sub %sum, %scaled : !bvec.vec<?x64xf32>
  %score = bvec.norm %out, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// TransR: the input of `vec_mul_mat` is read at arbitrary positions, so it
// is materialized; edges are sorted by the matrix index array over the
// whole batch; dynamic lengths take 4-byte loads; tiles are smaller and
// warps more numerous than for vector-only functions.
// CHECK-LABEL: bvec.func @transr
// CHECK-SAME: bvec.kernel = {blocks_per_sm = 0 : i64, carry_floats = 128 : i64, deterministic = 1 : i64, matrix_math = "tf32x3", reorder_auto = 0 : i64, reorder_group = 0 : i64, reorder_key = "r", reorder_min_batch = 0 : i64, reorder_min_reuse = 0 : i64, reorder_min_row = 0 : i64, stage_repeats = 101 : i64, stages = 2 : i64, tile = 16 : i64, vector_width = 1 : i64, warps = 16 : i64}
// CHECK: bvec.gather_mat %Pm[%r] {bvec.stage = 0 : i64}
// CHECK: bvec.sub {{.*}} {bvec.materialize, bvec.stage = 0 : i64}
// CHECK: bvec.vec_mul_mat {{.*}} {bvec.stage = 1 : i64}
// CHECK: bvec.add {{.*}} {bvec.stage = 1 : i64}
// WIDTH4: error: 'bvec.gather_vec' op kernel layout: vector width 4 needs every length to be a static multiple of 4, got '!bvec.vec<?x?xf32>'
bvec.func @transr(%Eemb: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>,
                  %Pm: !bvec.table<?x?x?xf32>, %h: !bvec.indices<?xi64>,
                  %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %m = bvec.gather_mat %Pm[%r] : !bvec.table<?x?x?xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x?x?xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x?xf32>
  %projected = bvec.vec_mul_mat %diff, %m : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
  %sum = bvec.add %projected, %rel : !bvec.vec<?x?xf32>
  %score = bvec.norm %sum, p = 2 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// ComplEx gathers 6 rows per edge: warps take 2 edges each (tiles of 16),
// so that a chunk keeps 12 row loads per lane in flight, not 24.
// CHECK-LABEL: bvec.func @complex
// CHECK-SAME: tile = 16 : i64, vector_width = 4 : i64, warps = 8 : i64}
bvec.func @complex(%Ere: !bvec.table<?x64xf32>, %Eim: !bvec.table<?x64xf32>,
                   %Rre: !bvec.table<?x64xf32>, %Rim: !bvec.table<?x64xf32>,
                   %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                   %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %hre = bvec.gather_vec %Ere[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %him = bvec.gather_vec %Eim[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tre = bvec.gather_vec %Ere[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tim = bvec.gather_vec %Eim[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %rre = bvec.gather_vec %Rre[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %rim = bvec.gather_vec %Rim[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %a = bvec.mul %hre, %rre : !bvec.vec<?x64xf32>
  %b = bvec.mul %him, %rim : !bvec.vec<?x64xf32>
  %real = bvec.sub %a, %b : !bvec.vec<?x64xf32>
  %c = bvec.mul %hre, %rim : !bvec.vec<?x64xf32>
  %d = bvec.mul %him, %rre : !bvec.vec<?x64xf32>
  %imag = bvec.add %c, %d : !bvec.vec<?x64xf32>
  %sre = bvec.vec_mul_vec %real, %tre : !bvec.vec<?x64xf32>, !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  %sim = bvec.vec_mul_vec %imag, %tim : !bvec.vec<?x64xf32>, !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  %score = bvec.add %sre, %sim : !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// Elementwise functions of vectors bound a kernel by its arithmetic, not by
// its rows: such functions are not sorted by entity by default.
// CHECK-LABEL: bvec.func @gated
// CHECK-SAME: reorder_group = 1 : i64, reorder_key = "", reorder_min_batch = 0 : i64, reorder_min_reuse = 0 : i64
bvec.func @gated(%E: !bvec.table<?x64xf32>, %R: !bvec.table<?x64xf32>,
                 %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %E[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tail = bvec.gather_vec %E[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %rel = bvec.gather_vec %R[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %sum = bvec.add %head, %rel : !bvec.vec<?x64xf32>
  %gate = bvec.tanh %sum : !bvec.vec<?x64xf32>
  %score = bvec.vec_mul_vec %gate, %tail : !bvec.vec<?x64xf32>, !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// Rows of dynamic length: the sort by entity is chosen, with the rows'
// condition left to the launch plan (reorder_min_row); static rows of 512
// qualify too, static rows of 256 do not.
// CHECK-LABEL: bvec.func @distmult_dynamic
// CHECK-SAME: reorder_auto = 1 : i64, reorder_group = 0 : i64, reorder_key = "h", reorder_min_batch = 65536 : i64, reorder_min_reuse = 16 : i64, reorder_min_row = 512 : i64
// CHECK-LABEL: bvec.func @distmult_512
// CHECK-SAME: reorder_key = "h", reorder_min_batch = 65536 : i64, reorder_min_reuse = 16 : i64, reorder_min_row = 512 : i64
// CHECK-LABEL: bvec.func @distmult_256
// CHECK-SAME: reorder_auto = 0 : i64, reorder_group = 1 : i64, reorder_key = "", reorder_min_batch = 0 : i64, reorder_min_reuse = 0 : i64, reorder_min_row = 0 : i64
bvec.func @distmult_dynamic(%E: !bvec.table<?x?xf32>, %R: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %b = bvec.gather_vec %R[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %c = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %ab = bvec.mul %a, %b : !bvec.vec<?x?xf32>
  %s = bvec.vec_mul_vec %ab, %c : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}
bvec.func @distmult_512(%E: !bvec.table<?x512xf32>, %R: !bvec.table<?x512xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x512xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x512xf32>
  %b = bvec.gather_vec %R[%r] : !bvec.table<?x512xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x512xf32>
  %c = bvec.gather_vec %E[%t] : !bvec.table<?x512xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x512xf32>
  %ab = bvec.mul %a, %b : !bvec.vec<?x512xf32>
  %s = bvec.vec_mul_vec %ab, %c : !bvec.vec<?x512xf32>, !bvec.vec<?x512xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}
bvec.func @distmult_256(%E: !bvec.table<?x256xf32>, %R: !bvec.table<?x256xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x256xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x256xf32>
  %b = bvec.gather_vec %R[%r] : !bvec.table<?x256xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x256xf32>
  %c = bvec.gather_vec %E[%t] : !bvec.table<?x256xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x256xf32>
  %ab = bvec.mul %a, %b : !bvec.vec<?x256xf32>
  %s = bvec.vec_mul_vec %ab, %c : !bvec.vec<?x256xf32>, !bvec.vec<?x256xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}
