// RUN: kge-opt %s -bvec-fuse="reorder-key=h reorder-group=0 reorder-min-batch=65536" -convert-bvec-to-gpu | FileCheck %s
// RUN: kge-opt %s -bvec-fuse="reorder-key=h reorder-group=0 reorder-min-reuse=4" -convert-bvec-to-gpu | FileCheck %s --check-prefix=REUSE
// RUN: kge-opt %s -bvec-fuse -convert-bvec-to-gpu | FileCheck %s --check-prefix=NARROW
// RUN: kge-opt %s -bvec-fuse=reorder-min-batch=4096 -convert-bvec-to-gpu | FileCheck %s --check-prefix=NARROW
// RUN: sed -e 's/?x64xf32/?x?xf32/g' %s | kge-opt -bvec-fuse -convert-bvec-to-gpu | FileCheck %s --check-prefix=DEFAULT
// RUN: sed -e 's/?x64xf32/?x512xf32/g' %s | kge-opt -bvec-fuse -convert-bvec-to-gpu | FileCheck %s --check-prefix=WIDE

// A layout that sorts large batches only: the launch plan's counting sort
// runs where B / 65536 is positive (the runtime evaluates `when`), and the
// kernel is told whether it ran; a batch that was not sorted is scored in
// its own order, the permutation never read. With reorder-min-reuse, only
// batches with at least that many edges per row of the key's table are
// sorted. By default both conditions hold (65536 edges, 16 per entity)
// and a third, rows of at least 512 elements (reorder_min_row): a table of
// static rows narrower than that is never sorted (no sort steps, no
// permutation), one of dynamic rows is sorted where D_E / 512 is positive.
// A threshold given for a function the layout does not sort (no key asked
// for) holds trivially: no sort, no error.

// REUSE: kge.launch_plan = [{buffer = "scratch:counts", kind = "memset", when = "B / max(1, 4 * N_E)"}
// REUSE-SAME: {kind = "i32", value = "min(1, B / max(1, 4 * N_E))"}], block
// NARROW-NOT: kge_key_
// NARROW: kge.scratch = []
// NARROW-NOT: kge_key_
// DEFAULT: kge.launch_plan = [{buffer = "scratch:counts", kind = "memset", when = "min(min(B / 65536, B / max(1, 16 * N_E)), D_E / 512)"}
// DEFAULT-SAME: {kind = "i32", value = "min(1, min(min(B / 65536, B / max(1, 16 * N_E)), D_E / 512))"}], block
// WIDE: kge.launch_plan = [{buffer = "scratch:counts", kind = "memset", when = "min(min(B / 65536, B / max(1, 16 * N_E)), 512 / 512)"}

// CHECK: gpu.module @transe_kernels
// CHECK-SAME: kge.launch_plan = [{buffer = "scratch:counts", kind = "memset", when = "B / 65536"}
// CHECK-SAME: function = "kge_key_histogram"
// CHECK-SAME: when = "B / 65536"
// CHECK-SAME: function = "kge_key_scan"
// CHECK-SAME: when = "B / 65536"
// CHECK-SAME: function = "kge_key_scatter"
// CHECK-SAME: when = "B / 65536"
// CHECK-SAME: {buffer = "scratch:perm", kind = "memref", shape = ["B"]}, {kind = "i32", value = "min(1, B / 65536)"}], block
// CHECK-SAME: function = "transe"
// CHECK: gpu.func @transe(
// CHECK-SAME: %[[PERM:[^ ]*]]: memref<?xi32>, %[[SORTED:[^ ]*]]: i32)
// A sorted batch's tiles are taken from its two halves in turn (rare keys
// beside frequent ones), an unsorted batch's in order.
// CHECK: %[[INTERLEAVED:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
// CHECK: %[[TILESORTED:.*]] = arith.cmpi ne, %[[SORTED]], %{{.*}} : i32
// CHECK: arith.select %[[TILESORTED]], %[[INTERLEAVED]], %{{.*}} : index
// CHECK: %[[WAS:.*]] = arith.cmpi ne, %[[SORTED]], %{{.*}} : i32
// CHECK: scf.if %[[WAS]] -> (index) {
// CHECK: memref.load %[[PERM]]
// CHECK: } else {
// CHECK-NOT: memref.load %[[PERM]]
// CHECK: scf.yield
bvec.func @transe(%E: !bvec.table<?x64xf32>, %R: !bvec.table<?x64xf32>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %E[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tail = bvec.gather_vec %E[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %rel = bvec.gather_vec %R[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %d = bvec.sub %head, %tail : !bvec.vec<?x64xf32>
  %s = bvec.add %d, %rel : !bvec.vec<?x64xf32>
  %score = bvec.norm %s, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
