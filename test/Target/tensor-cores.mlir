// Kernels on warpgroup MMA compile for sm_90a (the bundle says so); other
// targets are refused with a diagnostic, as are tensor cores before sm_80.
// RUN: kge-opt %s --convert-tile-to-gpu --kge-lower-to-gpu | kge-translate --mlir-to-ptx \
// RUN:   | FileCheck %s
// RUN: kge-opt %s --convert-tile-to-gpu --kge-lower-to-gpu | kge-translate --kge-to-bundle \
// RUN:   | FileCheck %s --check-prefix=BUNDLE
// RUN: kge-opt %s --convert-tile-to-gpu --kge-lower-to-gpu \
// RUN:   | not kge-translate --mlir-to-ptx --ptx-chip=sm_80 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: kge-opt %s --convert-tile-to-gpu=warpgroup=false --kge-lower-to-gpu \
// RUN:   | kge-translate --mlir-to-ptx --ptx-chip=sm_80 | FileCheck %s --check-prefix=SYNC
// RUN: kge-opt %s --convert-tile-to-gpu=warpgroup=false --kge-lower-to-gpu \
// RUN:   | not kge-translate --mlir-to-ptx --ptx-chip=sm_75 2>&1 | FileCheck %s --check-prefix=SM75

// CHECK: .target sm_90a
// The tensor maps are 128-byte grid constants, addressed in param space.
// CHECK: .entry gemm_f16_wgmma(
// CHECK: .param .align 64 .b8 gemm_f16_wgmma_param_21[128],
// CHECK-NEXT: .param .align 64 .b8 gemm_f16_wgmma_param_22[128]
// CHECK: cvta.param.u64
// CHECK: mbarrier.init.shared.b64
// CHECK: fence.mbarrier_init.release.cluster
// CHECK: wgmma.fence.sync.aligned
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16
// CHECK: wgmma.wait_group.sync.aligned 1
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK: .entry gemm_f16_mma_small
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// BUNDLE: "target": {
// BUNDLE-NEXT: "chip": "sm_90a"
// SM80: error: warpgroup MMA (wgmma) needs sm_90a, but the target is sm_80; lower with convert-tile-to-gpu{warpgroup=false} for this GPU
// SYNC: .target sm_80
// SYNC-NOT: wgmma
// SYNC: cp.async.cg.shared.global
// SYNC: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// SM75: error: mma.sync with FP16 operands needs sm_80 or newer, but the target is sm_75

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @gemm_f16(%A: memref<?x?xf16> {kge.param = "A"}, %B: memref<?x?xf16> {kge.param = "B"},
                    %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B : memref<?x?xf16>, memref<?x?xf16>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense inner {
  ^bb0(%a: f16, %b: f16):
    %x = arith.extf %a : f16 to f32
    %y = arith.extf %b : f16 to f32
    %p = arith.mulf %x, %y : f32
    tile.yield %p : f32
  }
  return
}
