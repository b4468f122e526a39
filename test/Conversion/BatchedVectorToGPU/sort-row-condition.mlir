// RUN: kge-opt %s -split-input-file -bvec-fuse -convert-bvec-to-gpu | FileCheck %s
// RUN: kge-opt %s -split-input-file -bvec-fuse -convert-bvec-to-gpu=negative=h | FileCheck %s --check-prefix=NEG

// The rows' condition of the default sort by entity is the widest table the
// key reads: heads gather their embedding (rows of D_E) and a bias of 4, and
// the sort runs where max(D_E, 4) reaches 512. In negative mode the sort
// moves to another index array of a table whose rows qualify (t, on E), not
// to one that reads only the narrow bias (x).

// CHECK: kge.launch_plan = [{buffer = "scratch:counts", kind = "memset", when = "min(min(B / 65536, B / max(1, 16 * min(N_E, N_Eb))), max(D_E, 4) / 512)"}
// CHECK-SAME: {buffer = "param:h", kind = "pointer"}
// NEG: kge.launch_plan = [{buffer = "scratch:counts", kind = "memset", when = "min(min(B / 65536, B / max(1, 16 * N_E)), D_E / 512)"}
// NEG-SAME: {buffer = "param:t", kind = "pointer"}
// NEG: kge.mode = {corrupted = "h", kind = "negative"}
bvec.func @with_bias(%E: !bvec.table<?x?xf32>, %Eb: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>,
                     %x: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %bx = bvec.gather_vec %Eb[%x] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %bh = bvec.gather_vec %Eb[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %c = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %s = bvec.vec_mul_vec %a, %c : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %n = bvec.vec_mul_vec %bx, %bh : !bvec.vec<?x4xf32>, !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %o = bvec.add %s, %n : !bvec.scalar<?xf32>
  bvec.return %o : !bvec.scalar<?xf32>
}
