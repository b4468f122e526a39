//===- KronDialect.td - kron dialect definition ------------*- tablegen -*-===//
//
// The `kron` dialect: marginalized graph kernels over datasets of labeled
// graphs, solved with the Kronecker product formed on the fly.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_KRON_IR_KRONDIALECT_TD
#define KGE_DIALECT_KRON_IR_KRONDIALECT_TD

include "mlir/IR/DialectBase.td"

def Kron_Dialect : Dialect {
  let name = "kron";
  let cppNamespace = "::mlir::kron";
  let summary = "Marginalized graph kernels: Kronecker-product solves over datasets of graphs";
  let description = [{
    The `kron` dialect is KGE's Kronecker-product level: the marginalized
    graph kernel (Kashima et al.; the GPU solver of Tang et al.) between
    every pair of a dataset of labeled, weighted, undirected graphs. The
    kernel of a pair G, G' is

        K(G, G') = p_x^T (D_x V_x^-1 - A_x o E_x)^-1 D_x q_x

    over the pair's product graph, with base kernels on the node labels
    (V_x) and on the edge labels (E_x) given as attributes
    (`#kron.delta`, `#kron.sqexp`, `#kron.constant`, and their products
    and sums over label features). The product graph is never formed: the
    lowering solves each pair's system by a preconditioned conjugate
    gradient whose matrix-vector product (XMV) streams the two graphs'
    8 x 8 tiles (octiles) and evaluates the base kernels on the fly.

    A dataset enters through `kron.graphs` (edge lists);
    `kron-octile-tiling` turns it into `kron.octiles` (non-empty octiles,
    compact: a 64-bit bitmap and the non-zeros, in a node order chosen per
    dataset), data the caller derives from the edge lists;
    `convert-kron-to-gpu` lowers `kron.gram` to one kernel in which each
    thread block solves pairs taken from a schedule in decreasing order of
    cost.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
}

#endif // KGE_DIALECT_KRON_IR_KRONDIALECT_TD
