bvec.func @f(%E: !bvec.table<?x?xf32>
