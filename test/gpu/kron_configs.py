"""The kernel configurations of the `kron` GPU suite and benchmarks, shared
by test/gpu/build_kron_bundles.py (which compiles them here) and the tests
and benchmarks (which run them on the GPU machine): name -> the arguments
of kge.kron.compile_gram."""

from kge import kron

ATOM = kron.TensorProduct(element=kron.KroneckerDelta(0.5), aromatic=kron.KroneckerDelta(0.5))
BOND = kron.TensorProduct(order=kron.KroneckerDelta(0.5))

CONFIGS = {
    # Labeled graphs: a delta on one node label, a square exponential on
    # one edge label.
    "delta_sqexp": dict(node_kernel=kron.KroneckerDelta(0.5),
                        edge_kernel=kron.SquareExponential(1.0),
                        node_features=["label"], edge_features=["length"], q=0.05,
                        normalize=True, symmetric=True),
    "delta_sqexp_xy": dict(node_kernel=kron.KroneckerDelta(0.5),
                           edge_kernel=kron.SquareExponential(1.0),
                           node_features=["label"], edge_features=["length"], q=0.05,
                           normalize=True, symmetric=False),
    # Unlabeled graphs (the random-walk case).
    "unlabeled": dict(node_kernel=kron.Constant(1.0), edge_kernel=kron.Constant(1.0),
                      node_features=[], edge_features=[], q=0.05, normalize=False,
                      symmetric=True),
    # Products and sums over two features.
    "product_sum_xy": dict(
        node_kernel=kron.TensorProduct(label=kron.KroneckerDelta(0.3),
                                       charge=kron.SquareExponential(2.0)),
        edge_kernel=kron.Additive(length=kron.SquareExponential(0.5),
                                  kind=kron.KroneckerDelta(0.5)),
        node_features=["label", "charge"], edge_features=["length", "kind"], q=0.1,
        normalize=False, symmetric=False),
    # A stopping probability of 5e-4 (slow convergence).
    "small_q": dict(node_kernel=kron.KroneckerDelta(0.5), edge_kernel=kron.Constant(1.0),
                    node_features=["label"], edge_features=[], q=5e-4, tol=1e-5,
                    maxiter=20000, normalize=True, symmetric=True),
    # An iteration cap the solves cannot meet: reported per pair.
    "capped": dict(node_kernel=kron.KroneckerDelta(0.5), edge_kernel=kron.Constant(1.0),
                   node_features=["label"], edge_features=[], q=0.05, maxiter=2,
                   normalize=False, symmetric=True),
    # Molecules (RDKit's atoms and bonds, kge.kron.from_molecule).
    "molecules": dict(node_kernel=ATOM, edge_kernel=BOND,
                      node_features=["element", "aromatic"], edge_features=["order"],
                      q=0.05, normalize=True, symmetric=True),
    # Protein segments (kge.kron.protein_segments): elements by a delta,
    # interatomic distances by a square exponential.
    "proteins": dict(node_kernel=kron.KroneckerDelta(0.5),
                     edge_kernel=kron.SquareExponential(1.0),
                     node_features=["element"], edge_features=["distance"], q=0.05,
                     normalize=True, symmetric=True),
    # The benchmarks' unlabeled kernel, normalized.
    "unlabeled_norm": dict(node_kernel=kron.Constant(1.0), edge_kernel=kron.Constant(1.0),
                           node_features=[], edge_features=[], q=0.05, normalize=True,
                           symmetric=True),
}

# The node-wise similarities (kron.nodewise): X with itself by factored
# XMV, X against Y by product rows.
CONFIGS["nodal"] = {**CONFIGS["unlabeled"], "nodal": True}
CONFIGS["nodal_xy"] = {**CONFIGS["delta_sqexp_xy"], "normalize": False, "nodal": True}
# ... X against Y factored, and by octile pairs (the diagonal stored with p).
CONFIGS["nodal_factored_xy"] = {**CONFIGS["unlabeled"], "symmetric": False, "nodal": True}
CONFIGS["nodal_pairs"] = {**CONFIGS["delta_sqexp"], "normalize": False, "nodal": True,
                          "product_rows": False}

# Every octile pair by the dense (register-blocked) primitive: all 64 x 64
# entries, zeros included; with one feature and with products and sums of
# two.
CONFIGS["dense_octiles"] = {**CONFIGS["delta_sqexp"], "product_rows": False,
                            "dense_threshold": 1}
CONFIGS["dense_octiles_xy"] = {**CONFIGS["product_sum_xy"], "product_rows": False,
                               "dense_threshold": 1}

# GraphDot's degrees (sum / (1 - q)): the same values as GraphDot's
# MarginalizedGraphKernel up to its scaling (normalized: equal).
CONFIGS.update({f"{name}_scaled": {**CONFIGS[name], "degrees": "scaled"}
                for name in ("delta_sqexp", "unlabeled", "molecules", "proteins")})

#: Node orders the bundles are built for (kron-octile-tiling).
ORDERS = ("auto", "natural", "rcm", "pbr", "refined")


def bundle_name(config, order):
    return f"{config}.{order}.kgebundle"
