// RUN: kge-opt %s -bvec-specialize="sizes=D_Eemb=64,B=128" | FileCheck %s
// RUN: kge-opt %s -bvec-specialize="sizes=D_Eemb=64" | kge-opt | FileCheck %s --check-prefix=LEN
// RUN: not kge-opt %s -bvec-specialize="sizes=D_Nope=8" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not kge-opt %s -bvec-specialize="sizes=D_Eemb=0" 2>&1 | FileCheck %s --check-prefix=BADVALUE
// RUN: not kge-opt %s -bvec-specialize="sizes=D_Eemb" 2>&1 | FileCheck %s --check-prefix=BADVALUE2

// Every value in the class of a size symbol becomes static, so the function
// stays well typed: the tables' lengths, the gathered vectors, the result
// batch.

// CHECK-LABEL: bvec.func @transe
// CHECK-SAME: %Eemb: !bvec.table<?x64xf32>, %Remb: !bvec.table<?x64xf32>
// CHECK-SAME: %h: !bvec.indices<128xi64>
// CHECK-SAME: -> (score: !bvec.scalar<128xf32>)
// CHECK: bvec.gather_vec %Eemb[%h] : !bvec.table<?x64xf32>, !bvec.indices<128xi64> -> !bvec.vec<128x64xf32>
// CHECK: bvec.norm {{.*}} : !bvec.vec<128x64xf32> -> !bvec.scalar<128xf32>

// The batch stays dynamic when only the length is given.
// LEN: %h: !bvec.indices<?xi64>
// LEN: bvec.sub {{.*}} : !bvec.vec<?x64xf32>

// UNKNOWN: error: bvec-specialize: no function has a dynamic size named 'D_Nope'
// BADVALUE: error: bvec-specialize: expected SYMBOL=POSITIVE_INTEGER, got 'D_Eemb=0'
// BADVALUE2: error: bvec-specialize: expected SYMBOL=POSITIVE_INTEGER, got 'D_Eemb'

bvec.func @transe(%Eemb: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                  %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x?xf32>
  %sum = bvec.add %diff, %rel : !bvec.vec<?x?xf32>
  %score = bvec.norm %sum, p = 2 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
