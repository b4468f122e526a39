// RUN: kge-opt %s -split-input-file -bvec-fuse | FileCheck %s --check-prefix=FUSE
// RUN: kge-opt %s -split-input-file -bvec-fuse -convert-bvec-to-gpu | FileCheck %s
// RUN: kge-opt %s -split-input-file -bvec-fuse=stage-repeats=0 -convert-bvec-to-gpu | FileCheck %s --check-prefix=STAGED

// A slice of a gathered row is a gather of a column range: read from the
// table at the row's address plus the slice's offset, in the gather's stage,
// with no copy of the row in shared memory and no barrier. ComplEx written
// as PyTorch users write it (one table of twice the rank, `chunk`ed) then
// lowers like the four-table example: one stage, 16-byte loads at column
// 256, tiles of 16 edges (six row reads per element, as six gathers).

// FUSE-LABEL: bvec.func @complex_chunked
// FUSE-SAME: stages = 1 : i64, tile = 16 : i64
// FUSE-NOT: bvec.materialize
// FUSE: bvec.slice %{{.*}}[256] {bvec.stage = 0 : i64}
// FUSE-NOT: bvec.materialize

// The one barrier is the tile's (its keys in shared memory).
// CHECK-LABEL: gpu.func @complex_chunked
// CHECK-NOT: #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK-NOT: #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: %[[COL:.*]] = arith.addi %{{.*}}, %c256{{.*}} : index
// CHECK-NEXT: vector.load %arg0[%{{.*}}, %[[COL]]] {alignment = 16 : i64} : memref<?x512xf32>, vector<4xf32>
// CHECK-NOT: gpu.barrier
// CHECK-NOT: #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: gpu.return

// Rows that may be staged: a row read only through slices has no staging
// buffer and is read from the table.
// STAGED-LABEL: gpu.func @complex_chunked
// STAGED-NOT: #gpu.address_space<workgroup>>, vector<4xf32>
// STAGED: vector.load %arg0[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x512xf32>, vector<4xf32>
// STAGED-NOT: #gpu.address_space<workgroup>>, vector<4xf32>
// STAGED: gpu.return
bvec.func @complex_chunked(%E: !bvec.table<?x512xf32>, %R: !bvec.table<?x512xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %hv = bvec.gather_vec %E[%h] : !bvec.table<?x512xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x512xf32>
  %rv = bvec.gather_vec %R[%r] : !bvec.table<?x512xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x512xf32>
  %tv = bvec.gather_vec %E[%t] : !bvec.table<?x512xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x512xf32>
  %hr = bvec.slice %hv[0] : !bvec.vec<?x512xf32> -> !bvec.vec<?x256xf32>
  %hi = bvec.slice %hv[256] : !bvec.vec<?x512xf32> -> !bvec.vec<?x256xf32>
  %rr = bvec.slice %rv[0] : !bvec.vec<?x512xf32> -> !bvec.vec<?x256xf32>
  %ri = bvec.slice %rv[256] : !bvec.vec<?x512xf32> -> !bvec.vec<?x256xf32>
  %tr = bvec.slice %tv[0] : !bvec.vec<?x512xf32> -> !bvec.vec<?x256xf32>
  %ti = bvec.slice %tv[256] : !bvec.vec<?x512xf32> -> !bvec.vec<?x256xf32>
  %a = bvec.mul %hr, %rr : !bvec.vec<?x256xf32>
  %a1 = bvec.mul %a, %tr : !bvec.vec<?x256xf32>
  %b = bvec.mul %hi, %rr : !bvec.vec<?x256xf32>
  %b1 = bvec.mul %b, %ti : !bvec.vec<?x256xf32>
  %c = bvec.mul %hr, %ri : !bvec.vec<?x256xf32>
  %c1 = bvec.mul %c, %ti : !bvec.vec<?x256xf32>
  %d = bvec.mul %hi, %ri : !bvec.vec<?x256xf32>
  %d1 = bvec.mul %d, %tr : !bvec.vec<?x256xf32>
  %s1 = bvec.add %a1, %b1 : !bvec.vec<?x256xf32>
  %s2 = bvec.add %s1, %c1 : !bvec.vec<?x256xf32>
  %s3 = bvec.sub %s2, %d1 : !bvec.vec<?x256xf32>
  %score = bvec.reduce sum %s3 : !bvec.vec<?x256xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// A row read whole and through a slice: the whole row in the gather's loop,
// the slice from the table in its own (a loop per length), both in stage 0;
// half-precision rows are widened after the load. An offset that is not a
// multiple of the vector width is read element by element.
// FUSE-LABEL: bvec.func @whole_and_unaligned
// FUSE-SAME: stages = 1 : i64
// FUSE-NOT: bvec.materialize
// FUSE: bvec.slice %{{.*}}[2] {bvec.stage = 0 : i64}

// CHECK-LABEL: gpu.func @whole_and_unaligned
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: vector.load %arg0[%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<?x8xbf16>, vector<4xbf16>
// CHECK: memref.load %arg0[%{{.*}}, %{{.*}}] : memref<?x8xbf16>
// CHECK-COUNT-3: memref.load %arg0[%{{.*}}, %{{.*}}] : memref<?x8xbf16>
// CHECK: arith.extf %{{.*}} : vector<4xbf16> to vector<4xf32>
// CHECK: gpu.return
bvec.func @whole_and_unaligned(%E: !bvec.table<?x8xbf16>, %h: !bvec.indices<?xi64>) -> (n: !bvec.scalar<?xf32>, m: !bvec.scalar<?xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x8xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %s = bvec.slice %v[2] : !bvec.vec<?x8xf32> -> !bvec.vec<?x4xf32>
  %n = bvec.norm %v, p = 2 : !bvec.vec<?x8xf32> -> !bvec.scalar<?xf32>
  %m = bvec.reduce max %s : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %n, %m : !bvec.scalar<?xf32>, !bvec.scalar<?xf32>
}

// -----

// A slice of a computed vector still reads that vector's copy in shared
// memory, in the next stage; a gathered slice feeding a matrix product is
// materialized itself (computed from the table in stage 0).
// FUSE-LABEL: bvec.func @computed_and_materialized
// FUSE: bvec.slice %{{.*}}[2] {bvec.materialize, bvec.stage = 0 : i64}
// FUSE: bvec.add {{.*}} {bvec.materialize, bvec.stage = 0 : i64}
// FUSE: bvec.slice %{{.*}}[4] {bvec.materialize, bvec.stage = 1 : i64}
// FUSE: bvec.vec_outer_vec {{.*}} {bvec.stage = 2 : i64}
// CHECK-LABEL: gpu.func @computed_and_materialized
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: gpu.return
bvec.func @computed_and_materialized(%E: !bvec.table<?x8xf32>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (o: !bvec.mat<?x4x4xf32>, q: !bvec.vec<?x4xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %w = bvec.gather_vec %E[%t] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %s = bvec.slice %v[2] : !bvec.vec<?x8xf32> -> !bvec.vec<?x4xf32>
  %x = bvec.add %v, %w : !bvec.vec<?x8xf32>
  %q = bvec.slice %x[4] : !bvec.vec<?x8xf32> -> !bvec.vec<?x4xf32>
  %o = bvec.vec_outer_vec %s, %q : !bvec.vec<?x4xf32>, !bvec.vec<?x4xf32> -> !bvec.mat<?x4x4xf32>
  bvec.return %o, %q : !bvec.mat<?x4x4xf32>, !bvec.vec<?x4xf32>
}
