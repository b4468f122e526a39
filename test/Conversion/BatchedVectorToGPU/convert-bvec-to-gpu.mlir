// RUN: kge-opt %s -split-input-file -bvec-fuse=reorder-min-row=0 -convert-bvec-to-gpu | FileCheck %s
// RUN: kge-opt %s -split-input-file -bvec-fuse=reorder-min-row=0 -convert-bvec-to-gpu=negative=t | FileCheck %s --check-prefix=NEG
// RUN: kge-opt %s -split-input-file -bvec-fuse="stage-repeats=25 reorder-min-row=0" -convert-bvec-to-gpu | FileCheck %s --check-prefix=STAGED
// RUN: kge-opt %s -split-input-file -bvec-fuse="blocks-per-sm=0 reorder-min-row=0" -convert-bvec-to-gpu | FileCheck %s --check-prefix=NOOCC
// RUN: kge-opt %s -split-input-file -bvec-fuse=reorder-min-row=0 -convert-bvec-to-gpu=negative=h | FileCheck %s --check-prefix=NEGKEY
// RUN: kge-opt %s -split-input-file -bvec-fuse=reorder-group=1 -convert-bvec-to-gpu | FileCheck %s --check-prefix=UNSORTED
// RUN: not kge-opt %s -split-input-file -bvec-fuse="reorder-key=h reorder-group=0 reorder-min-reuse=4" \
// RUN:   -convert-bvec-to-gpu=negative=h 2>&1 | FileCheck %s --check-prefix=NEGEXPLICIT

// One score function becomes one gpu.module with ONE kernel. The kernel
// carves its buffers out of dynamic shared memory, loads every row directly
// (several chunks in flight) and reduces with warp shuffles. With staging
// enabled (stage_repeats <= 100) it asks the runtime inspector (declared,
// defined by the device library) for the unique rows of each gather and,
// in tiles where enough edges repeat a row, stages them with barriers.
// The module carries what the bundle needs: the signature, the launch plan
// with symbolic geometry, scratch buffers, the index checks of checked mode.
// Batches of at least 65536 edges and 16 per entity are sorted by head first
// (the launch plan's `when`), and the kernel is told whether they were.
// (Rows of any length here, reorder-min-row=0: by default rows as narrow as
// these 64 are never sorted, sort-large-batches.mlir.)

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @transe_kernels attributes {
// CHECK-SAME: kge.checks = [{bound = "N_Eemb", count = "B", param = "h"}, {bound = "N_Remb", count = "B", param = "r"}, {bound = "N_Eemb", count = "B", param = "t"}]
// CHECK-SAME: kge.launch_plan = [{buffer = "scratch:counts", kind = "memset", when = "min(B / 65536, B / max(1, 16 * N_Eemb))"}
// CHECK-SAME: {args = [{buffer = "param:h", kind = "pointer"}, {kind = "i32", value = "64"}, {kind = "i64", value = "B"}, {kind = "i64", value = "N_Eemb"}, {buffer = "scratch:counts", kind = "pointer"}], block = ["256", "1", "1"], function = "kge_key_histogram", grid = ["ceildiv(B, 2048) * (1 - min(1, N_Eemb / 8193)) + ceildiv(B, 256) * min(1, N_Eemb / 8193)", "1", "1"], kind = "kernel", module = "library", shared_bytes = "4 * ceildiv(N_Eemb, 2) * (1 - min(1, N_Eemb / 8193))", when = "min(B / 65536, B / max(1, 16 * N_Eemb))"}
// CHECK-SAME: {args = [{buffer = "scratch:counts", kind = "pointer"}, {kind = "i64", value = "N_Eemb"}], block = ["1024", "1", "1"], function = "kge_key_scan", grid = ["1", "1", "1"], kind = "kernel", module = "library", shared_bytes = "0", when = "min(B / 65536, B / max(1, 16 * N_Eemb))"}
// CHECK-SAME: function = "kge_key_scatter", grid = ["ceildiv(B, 2048) * (1 - min(1, N_Eemb / 8193)) + ceildiv(B, 256) * min(1, N_Eemb / 8193)", "1", "1"], kind = "kernel", module = "library", shared_bytes = "(16 * ceildiv(N_Eemb, 8) + 16384) * (1 - min(1, N_Eemb / 8193))", when = "min(B / 65536, B / max(1, 16 * N_Eemb))"}
// CHECK-SAME: {args = [{buffer = "param:Eemb", kind = "memref", shape = ["N_Eemb", "64"]}
// CHECK-SAME: {buffer = "scratch:perm", kind = "memref", shape = ["B"]}, {kind = "i32", value = "min(1, min(B / 65536, B / max(1, 16 * N_Eemb)))"}], block = ["256", "1", "1"], function = "transe", grid = ["ceildiv(B, 32)", "1", "1"], kind = "kernel", module = "transe_kernels", shared_bytes =
// CHECK-SAME: kge.mode = {kind = "positive"}
// CHECK-SAME: kge.scratch = [{count = "B", dtype = "i32", name = "perm"}, {count = "N_Eemb", dtype = "i32", name = "counts"}]
// CHECK-SAME: kge.signature = {name = "transe", params = [{dtype = "f32", name = "Eemb", role = "table", shape = ["N_Eemb", 64]}
// CHECK-NEXT: llvm.func @kge_inspect_unique(i64, i32, i64, i64, i64, i64, i64) -> i32
// CHECK-NEXT: llvm.func @kge_inspect_frequent(i64, i32, i64, i64) -> i32
// CHECK-NEXT: gpu.func @transe(%{{.*}}: memref<?x64xf32>, %{{.*}}: memref<?x64xf32>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xf32>, %{{.*}}: memref<?xi32>, %{{.*}}: i32) kernel
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK-SAME: nvvm.minctasm = 4 : i32
// A sorted batch's blocks take tiles from its two halves in turn; an
// unsorted one's in order.
// CHECK: %[[BLOCK:.*]] = gpu.block_id x
// CHECK: %[[INTERLEAVED:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
// CHECK: %[[SORTED:.*]] = arith.cmpi ne, %{{.*}}, %{{.*}} : i32
// CHECK: %[[TILE:.*]] = arith.select %[[SORTED]], %[[INTERLEAVED]], %[[BLOCK]] : index
// CHECK: arith.muli %[[TILE]], %{{.*}} : index
// CHECK: gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK-NOT: llvm.call @kge_inspect
// CHECK: vector.load
// CHECK-NOT: llvm.call @kge_inspect
// CHECK: gpu.shuffle xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
// CHECK: gpu.return
// CHECK-NOT: gpu.func
// CHECK-NOT: bvec.

// The layout's blocks_per_sm (4 for vector kernels of 8 warps) becomes
// nvvm.minctasm; 0 asks for nothing.
// NOOCC: gpu.func @transe
// NOOCC-NOT: minctasm
// NOOCC: gpu.block_id

// STAGED: gpu.func @transe
// STAGED-COUNT-3: llvm.call @kge_inspect_unique
// STAGED: scf.if
// STAGED: scf.for
// STAGED: gpu.barrier
// STAGED: gpu.barrier
// STAGED: gpu.shuffle xor

// Negative mode: each edge is scored against K corrupted tails that share
// its head and relation; the mode names the corrupted index array.
// NEG: when = "min(B / 65536, B / max(1, 16 * N_Eemb))"
// NEG: kge.mode = {corrupted = "t", kind = "negative"}

// The default sort by entity cannot key on the corrupted array (B x K
// indices, not one per edge): with `h` corrupted it sorts by `t`, the other
// index array of the entity table.
// NEGKEY: kge.launch_plan = [{buffer = "scratch:counts", kind = "memset", when = "min(B / 65536, B / max(1, 16 * N_Eemb))"}
// NEGKEY-SAME: {args = [{buffer = "param:t", kind = "pointer"}, {kind = "i32", value = "64"}, {kind = "i64", value = "B"}, {kind = "i64", value = "N_Eemb"}, {buffer = "scratch:counts", kind = "pointer"}], block = ["256", "1", "1"], function = "kge_key_histogram"
// NEGKEY: kge.mode = {corrupted = "h", kind = "negative"}
// A sort by the corrupted array that was asked for is refused.
// NEGEXPLICIT: error: 'bvec.func' op negative mode: cannot reorder edges by the corrupted index array 'h'; choose another reorder key

// reorder-group=1: every batch in its own order, no sort in the plan.
// UNSORTED: kge.launch_plan = [{args = [{buffer = "param:Eemb"
// UNSORTED-NOT: kge_key_
// UNSORTED: kge.scratch = []
// UNSORTED: gpu.func @transe(%{{.*}}: memref<?x64xf32>, %{{.*}}: memref<?x64xf32>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xf32>) kernel
// UNSORTED-NOT: gpu.grid_dim
// UNSORTED: %[[BLOCK:.*]] = gpu.block_id x
// UNSORTED-NOT: gpu.grid_dim
// UNSORTED: arith.muli %[[BLOCK]], %{{.*}} : index
// NEG: kge.signature = {name = "transe", params = [
// NEG-SAME: {dtype = "i64", indexes = ["Eemb"], name = "t", role = "indices", shape = ["B", "K"]}
// NEG-SAME: {dtype = "f32", name = "score", role = "result", shape = ["B", "K"]}

bvec.func @transe(%Eemb: !bvec.table<?x64xf32>, %Remb: !bvec.table<?x64xf32>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                  %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x64xf32>
  %sum = bvec.add %diff, %rel : !bvec.vec<?x64xf32>
  %score = bvec.norm %sum, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// TransR: projection matrices go through the frequency-based inspector and
// the edges are sorted by relation before the kernel: the launch plan runs
// the device library's counting sort (histogram, scan, scatter) into the
// scratch permutation first. Blocks take the tiles of the sorted batch from
// its two halves in turn: block b takes tile b / 2 when b is even and tile
// ceil(T / 2) + b / 2 when it is odd (T = the grid size).

// CHECK: gpu.module @transr_kernels
// CHECK-SAME: kge.launch_plan = [{buffer = "scratch:counts", kind = "memset"}
// CHECK-SAME: function = "kge_key_histogram"
// CHECK-SAME: function = "kge_key_scan"
// CHECK-SAME: function = "kge_key_scatter"
// CHECK-SAME: function = "transr"
// CHECK-SAME: kge.scratch = [{count = "B", dtype = "i32", name = "perm"}
// CHECK: gpu.func @transr
// CHECK-NOT: minctasm
// CHECK: %[[BLOCK:.*]] = gpu.block_id x
// CHECK: %[[GRID:.*]] = gpu.grid_dim x
// CHECK: %[[HALF:.*]] = arith.divui %[[BLOCK]], %{{.*}} : index
// CHECK: %[[PARITY:.*]] = arith.remui %[[BLOCK]], %{{.*}} : index
// CHECK: %[[ODD:.*]] = arith.cmpi ne, %[[PARITY]], %{{.*}} : index
// CHECK: %[[H:.*]] = arith.ceildivui %[[GRID]], %{{.*}} : index
// CHECK: %[[SECOND:.*]] = arith.addi %[[H]], %[[HALF]] : index
// CHECK: %[[TILE:.*]] = arith.select %[[ODD]], %[[SECOND]], %[[HALF]] : index
// CHECK: arith.muli %[[TILE]], %{{.*}} : index
// CHECK-DAG: llvm.call @kge_inspect_frequent
// CHECK-DAG: llvm.call @kge_inspect_unique
// CHECK: gpu.return
// CHECK-NOT: gpu.func
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
