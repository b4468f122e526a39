#!/usr/bin/env python3
"""Gram matrices of the marginalized graph kernel on the GPU: KGE's `kron`
solver (bundles of test/gpu/build_kron_bundles.py) side by side with the
dense PyTorch conjugate-gradient anchor (the product system formed on the
GPU, float32, one pair at a time) and GraphDot's MarginalizedGraphKernel
on the same GPU (when its package is importable), on

  nws24       24 Newman-Watts-Strogatz graphs of 10-60 nodes (unlabeled)
  nws160, ba160, geometric160
              160 graphs of 96 nodes of each synthetic type (unlabeled)
  molecules   2,000 RDKit molecules of rdkit-data's NCI set (elements,
              aromaticity, bond orders)
  proteins    25-residue segments of rdkit-data's PDB structures (the
              PDB-3k size range; elements, interatomic distances)

Run `--prepare DATA.npz` here (RDKit and rdkit-data), then on the GPU
machine with the bundles and the data:

  python3 bench/bench_kron.py --data DATA.npz --bundles DIR --out results.json

Reports pairs per second, time to the full Gram matrix (GPU time of the
launch plan, host preparation of the octiles and schedule apart), the
speedup over each baseline, and the agreement of the matrices.
"""

import argparse
import json
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "test" / "gpu"))

from kge import kron  # noqa: E402

MOLECULE_FEATURES = (["element", "aromatic"], ["order"])
PROTEIN_FEATURES = (["element"], ["distance"])


def prepare(out):
    molecules = [kron.from_molecule(m) for m in kron.nci_molecules(2000)]
    proteins = kron.protein_segments()
    arrays = {}
    for prefix, graphs, (nodes, edges) in (("molecules", molecules, MOLECULE_FEATURES),
                                           ("proteins", proteins, PROTEIN_FEATURES)):
        for key, value in kron.pack(graphs, nodes, edges).items():
            arrays[f"{prefix}.{key}"] = value
    np.savez_compressed(out, **arrays)
    print(f"{out}: {len(molecules)} molecules, {len(proteins)} protein segments")


def datasets(data):
    """name -> (graphs, kron_configs config)."""
    out = {"nws24": (kron.synthetic_graphs("nws", nodes=np.linspace(10, 60, 24).astype(int),
                                           seed=1), "unlabeled")}
    for kind in ("nws", "ba", "geometric"):
        out[f"{kind}160"] = (kron.synthetic_graphs(kind, 160, 96, seed=2), "unlabeled")
    if data is not None:
        stored = np.load(data)
        for prefix, (nodes, edges), config in (("molecules", MOLECULE_FEATURES, "molecules"),
                                                ("proteins", PROTEIN_FEATURES, "proteins")):
            packed = {k.split(".", 1)[1]: stored[k] for k in stored.files
                      if k.startswith(prefix + ".")}
            out[prefix] = (kron.unpack(packed, nodes, edges), config)
    return out


def time_kge(bundle_dir, config, graphs, order, repeats):
    """(K, iterations, GPU seconds, host seconds: packing, derived
    arrays and their transfer, pair count) of the Gram matrix."""
    import torch
    from kge.compiler import Bundle
    from kron_configs import CONFIGS, bundle_name
    c = CONFIGS[config]
    bundle = Bundle.read(pathlib.Path(bundle_dir) / bundle_name(config, order))
    program = bundle.load()
    start = time.perf_counter()
    packed = kron.pack(graphs, c["node_features"], c["edge_features"])
    tensors = kron.gram_arguments(bundle, packed)
    torch.cuda.synchronize()
    host = time.perf_counter() - start
    results = program(**tensors)  # warm-up (module load)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        results = program(**tensors)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return (results["gram"].cpu().numpy().astype(np.float64),
            results["iterations"].cpu().numpy(), float(np.median(times)), host,
            len(tensors["pairs"]))


def dense_pair(g1, g2, c, tol=1e-6, maxiter=10000):
    """K(g1, g2) from the product system formed densely on the GPU
    (float32), solved by conjugate gradient with the diagonal
    preconditioner: the PyTorch anchor."""
    import torch
    dev = "cuda"
    a1 = torch.tensor(g1.adjacency, dtype=torch.float32, device=dev)
    a2 = torch.tensor(g2.adjacency, dtype=torch.float32, device=dev)
    n1, n2 = a1.shape[0], a2.shape[0]
    q = c["q"]
    kv = torch.tensor(np.broadcast_to(kron._node_kernel(g1, g2, c["node_kernel"]), (n1, n2)),
                      dtype=torch.float32, device=dev)
    d = torch.outer(a1.sum(1) + q, a2.sum(1) + q)
    w = (a1[:, None, :, None] * a2[None, :, None, :])
    if not isinstance(c["edge_kernel"], kron.Constant):
        features = c["edge_features"]
        e1 = {f: torch.tensor(g1.edge_labels[f], dtype=torch.float32, device=dev)
              for f in features}
        e2 = {f: torch.tensor(g2.edge_labels[f], dtype=torch.float32, device=dev)
              for f in features}
        k = c["edge_kernel"]
        kernels = k.features.items() if hasattr(k, "features") else [(features[0], k)]
        ke = 1.0
        for name, base in kernels:
            x, y = e1[name][:, None, :, None], e2[name][None, :, None, :]
            if isinstance(base, kron.KroneckerDelta):
                ke = ke * torch.where(x == y, 1.0, base.h)
            elif isinstance(base, kron.SquareExponential):
                ke = ke * torch.exp(-(x - y) ** 2 / (2 * base.length_scale ** 2))
            else:
                ke = ke * base.c
        w = w * ke
    else:
        w = w * c["edge_kernel"].c
    n = n1 * n2
    m = torch.diag((d / kv).reshape(n)) - w.reshape(n, n)
    diag = (d / kv).reshape(n)
    b = (d * q * q).reshape(n)
    x = torch.zeros_like(b)
    r = b.clone()
    z = r / diag
    p = z.clone()
    rz = (r * z).sum()
    bound = tol * tol * (b * b).sum()
    for _ in range(maxiter):
        ap = m @ p
        alpha = rz / (p * ap).sum()
        x += alpha * p
        r -= alpha * ap
        if (r * r).sum() <= bound:
            break
        z = r / diag
        rz_next = (r * z).sum()
        p = z + (rz_next / rz) * p
        rz = rz_next
    return float(x.sum()) / n


def time_dense(graphs, config, pairs):
    """(values by pair, seconds) of the dense anchor on `pairs`."""
    import torch
    from kron_configs import CONFIGS
    c = CONFIGS[config]
    dense_pair(graphs[0], graphs[0], c)
    torch.cuda.synchronize()
    start = time.perf_counter()
    values = [dense_pair(graphs[a], graphs[b], c) for a, b in pairs]
    torch.cuda.synchronize()
    return np.array(values), time.perf_counter() - start


def import_graphdot():
    """GraphDot 0.8.1 uses NumPy names removed in NumPy 1.24 and 2.0 (the
    aliases np.float, np.int, np.object; np.issctype, np.issubsctype):
    restored, with their old meaning, in this process before it is
    imported (the GPU machine's NumPy is 2.x)."""
    for alias, builtin in (("float", float), ("int", int), ("bool", bool),
                           ("object", object)):
        if alias not in np.__dict__:
            setattr(np, alias, builtin)
    try:
        np.issctype(np.float64)
    except (AttributeError, TypeError):
        def issctype(rep):
            # NumPy 1.x: whether rep names a scalar type (Python's scalar
            # types included), object excluded.
            if not isinstance(rep, (type, np.dtype)):
                return False
            try:
                return np.dtype(rep).type is not np.object_
            except TypeError:
                return False
        np.issctype = issctype
    try:
        np.issubsctype(np.float64, np.floating)
    except (AttributeError, TypeError):
        np.issubsctype = lambda a, b: issubclass(np.dtype(a).type, np.dtype(b).type
                                                 if not isinstance(b, type) else b)
    import graphdot
    return graphdot


def graphdot_kernel(config):
    """GraphDot's MarginalizedGraphKernel of the same base kernels."""
    from graphdot.kernel.marginalized import MarginalizedGraphKernel
    from graphdot.microkernel import (Constant, KroneckerDelta, SquareExponential,
                                      TensorProduct)
    from kron_configs import CONFIGS
    c = CONFIGS[config]

    def elementary(kernel):
        if isinstance(kernel, kron.KroneckerDelta):
            return KroneckerDelta(kernel.h)
        if isinstance(kernel, kron.SquareExponential):
            return SquareExponential(kernel.length_scale)
        return Constant(kernel.c)

    def convert(kernel, features):
        if isinstance(kernel, kron.Constant):
            return Constant(kernel.c)
        if isinstance(kernel, kron.TensorProduct):
            return TensorProduct(**{name: elementary(k) for name, k in kernel.features.items()})
        return TensorProduct(**{features[0]: elementary(kernel)})
    return MarginalizedGraphKernel(convert(c["node_kernel"], c["node_features"]),
                                   convert(c["edge_kernel"], c["edge_features"]), q=c["q"])


def graphdot_graphs(graphs, config):
    import networkx as nx
    from graphdot import Graph
    from kron_configs import CONFIGS
    c = CONFIGS[config]
    out = []
    for g in graphs:
        nxg = nx.Graph()
        for v in range(g.num_nodes):
            labels = {f: float(g.node_labels[f][v]) for f in c["node_features"]}
            nxg.add_node(v, **(labels or {"unlabeled": 0.0}))
        for i, j in zip(*np.nonzero(np.triu(g.adjacency, 1))):
            labels = {f: float(g.edge_labels[f][i, j]) for f in c["edge_features"]}
            nxg.add_edge(int(i), int(j), w=float(g.adjacency[i, j]),
                         **(labels or {"unlabeled": 0.0}))
        out.append(Graph.from_networkx(nxg, weight="w"))
    return out


def time_graphdot(graphs, config, repeats=3):
    """(K, median seconds of warm calls) of GraphDot's Gram matrix."""
    kernel = graphdot_kernel(config)
    converted = graphdot_graphs(graphs, config)
    kernel(converted[:2])  # compiles its CUDA kernel
    times, k = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        k = kernel(converted)
        times.append(time.perf_counter() - start)
    return np.asarray(k, np.float64), float(np.median(times))


def normalized(k):
    d = np.sqrt(np.diag(k))
    return k / np.outer(d, d)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prepare", type=pathlib.Path)
    parser.add_argument("--data", type=pathlib.Path)
    parser.add_argument("--bundles", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--sets", default="nws24,nws160,ba160,geometric160,molecules,proteins")
    parser.add_argument("--dense-pairs", type=int, default=100,
                        help="pairs the dense anchor solves on the sets other than nws24")
    parser.add_argument("--no-graphdot", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.prepare:
        return prepare(args.prepare)
    import torch
    from kron_configs import CONFIGS
    results = {"device": torch.cuda.get_device_name(), "sets": {}}
    graphdot_error = None
    if not args.no_graphdot:
        try:
            import_graphdot()
        except Exception as error:  # pragma: no cover - depends on the machine
            graphdot_error = f"{type(error).__name__}: {error}"
    all_sets = datasets(args.data)
    for name in args.sets.split(","):
        graphs, config = all_sets[name]
        c = CONFIGS[config]
        row = {"graphs": len(graphs), "config": config,
               "nodes": [int(min(g.num_nodes for g in graphs)),
                         int(max(g.num_nodes for g in graphs))]}
        # Every node order, then (auto order) GraphDot's degrees, whose
        # normalized values are GraphDot's.
        for variant, run_config, order in (("auto", config, "auto"),
                                           ("natural", config, "natural"),
                                           ("rcm", config, "rcm"), ("pbr", config, "pbr"),
                                           ("refined", config, "refined"),
                                           ("scaled", f"{config}_scaled", "auto")):
            if order == "pbr" and not kron.has_pymetis():
                row["kge_pbr"] = {"skipped": "pymetis is not installed", "seconds": float("nan")}
                continue
            k, iterations, gpu, host, pairs = time_kge(args.bundles, run_config, graphs, order,
                                                      args.repeats)
            row[f"kge_{variant}"] = {"seconds": gpu, "host_seconds": host, "pairs": pairs,
                                     "pairs_per_second": pairs / gpu,
                                     "iterations_mean": float(np.abs(iterations).mean()),
                                     "failed": int((iterations <= 0).sum())}
            if variant == "auto":
                kge_k = k
            if variant == "scaled":
                scaled_k = k
        kge = row["kge_auto"]
        rng = np.random.default_rng(0)
        n = len(graphs)
        if name == "nws24":
            sample = [(a, b) for a in range(n) for b in range(a, n)]
        else:
            # Product systems beyond 20,000 nodes (the protein segments':
            # 40,000, 6.4 GB dense) take a tenth of the sample.
            largest = max(g.num_nodes for g in graphs) ** 2
            count = args.dense_pairs if largest <= 20000 else max(1, args.dense_pairs // 10)
            sample = [tuple(sorted(rng.integers(0, n, 2))) for _ in range(count)]
        values, seconds = time_dense(graphs, config, sample)
        raw = kge_k if not c["normalize"] else None
        row["dense"] = {"pairs": len(sample), "seconds": seconds,
                        "pairs_per_second": len(sample) / seconds,
                        "projected": name != "nws24"}
        row["speedup_over_dense"] = kge["pairs_per_second"] / row["dense"]["pairs_per_second"]
        if raw is not None:
            ours = np.array([raw[a, b] for a, b in sample])
            row["dense"]["max_relative_difference"] = float(
                np.max(np.abs(ours - values) / np.abs(values)))
        if not args.no_graphdot and graphdot_error is None:
            try:
                gk, gseconds = time_graphdot(graphs, config)
                ours = kge_k if c["normalize"] else normalized(kge_k)
                same = scaled_k if c["normalize"] else normalized(scaled_k)
                row["graphdot"] = {
                    "seconds": gseconds, "pairs_per_second": kge["pairs"] / gseconds,
                    # KGE's default (the paper's degrees) against GraphDot's
                    # kernel, and KGE with GraphDot's degrees (the same
                    # kernel: only the solvers' rounding and stopping differ).
                    "max_difference_normalized": float(np.max(np.abs(normalized(gk) - ours))),
                    "max_difference_normalized_scaled": float(
                        np.max(np.abs(normalized(gk) - same)))}
                row["speedup_over_graphdot"] = gseconds / kge["seconds"]
                row["scaled_speedup_over_graphdot"] = gseconds / row["kge_scaled"]["seconds"]
            except Exception as error:  # pragma: no cover - reported
                row["graphdot"] = {"error": f"{type(error).__name__}: {error}"[:500]}
        elif graphdot_error:
            row["graphdot"] = {"error": graphdot_error[:500]}
        results["sets"][name] = row
        print(f"{name:13s} {len(graphs):5d} graphs  KGE {kge['seconds'] * 1e3:9.2f} ms "
              f"({kge['pairs_per_second']:12.0f} pairs/s; natural/rcm/pbr/refined "
              + "/".join(f"{row['kge_' + o]['seconds'] * 1e3:.1f}"
                         for o in ("natural", "rcm", "pbr", "refined"))
              + f" ms; scaled degrees {row['kge_scaled']['seconds'] * 1e3:.1f} ms; "
              f"host {kge['host_seconds']:.2f} s)"
              f"  dense {row['dense']['pairs_per_second']:9.1f} pairs/s -> "
              f"{row['speedup_over_dense']:8.1f}x"
              + (f"  GraphDot {row['graphdot']['seconds']:8.3f} s -> "
                 f"{row['speedup_over_graphdot']:6.2f}x (same kernel: "
                 f"{row['graphdot']['max_difference_normalized_scaled']:.1e})"
                 if "speedup_over_graphdot" in row else
                 f"  GraphDot: {row.get('graphdot', {}).get('error', 'skipped')[:80]}"),
              flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
