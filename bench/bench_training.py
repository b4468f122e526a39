#!/usr/bin/env python3
"""Training on the WN18-like graph: KGE's kernels (forward and gradient
kernels through kge.autograd.ScoreOperator) against the same training loop
in plain PyTorch (sparse embedding lookups, autograd), everything else equal:
model, initialization, negatives (the same generator), loss, sparse
optimizer, batch order. Per model: epoch times (median), the time in
forward + backward, and the filtered MRR / Hits@k on the test set after the
last epoch, for both.

    python3 bench/bench_training.py --data .carry/wn18like.npz \\
        --bundles .carry/gradients --out $OUT/training.json

The data file comes from `bench/bench_training.py --prepare FILE` on a
machine with WordNet (Debian's wordnet-base): kge.link_prediction.wn18_like;
`--prepare FILE --dataset fb15k_like` writes the FB15k-like graph.
Bundles from test/gpu/build_gradient_bundles.py --lengths 128.

With `--shared N` the negatives are chunked shared negatives
(kge.shared_negatives: chunks of `--chunk` positives, N entities per chunk
and side, 2N negatives per positive; DistMult, ComplEx, TransE-L2): `kge`
runs the products on tile (the bundles of
kge.shared_negatives.save_products in `--products`), `kge_cublas` the
same step with cuBLAS's products instead (torch.bmm over the chunks), and
`pytorch` PyTorch-BigGraph's computation in plain PyTorch (sparse
lookups, torch.bmm products, autograd, an eager step); matrix products at TF32
in all three (torch.set_float32_matmul_precision("high"), Legend's
precision).
"""

import argparse
import json
import pathlib
import statistics
import sys

import numpy as np

# name: loss, optimizer, learning rate, margin (or the adversarial gamma).
CONFIGS = {
    "transe_l2": ("adversarial", "adam", 0.01, 6.0),
    "distmult": ("softplus", "adagrad", 0.1, 1.0),
    "complex": ("softplus", "adagrad", 0.1, 1.0),
    "rotate": ("adversarial", "adam", 0.01, 6.0),
    # TransR's matrices take dense gradients: adagrad (plain PyTorch's
    # SparseAdam refuses them).
    "transr": ("adversarial", "adagrad", 0.05, 6.0),
}


def prepare(path, dataset):
    """Writes the data file: the WN18-like graph from WordNet 3.0, or the
    FB15k-like graph (FB15k's sizes, power-law entities, skewed relations;
    bench/datasets.py) with a fixed split of 50,000 / 59,071 held-out
    triples, FB15k's own validation and test sizes."""
    here = pathlib.Path(__file__).resolve().parent
    sys.path.insert(0, str(here.parent / "python"))
    sys.path.insert(0, str(here))
    from kge.link_prediction import split, wn18_like
    if dataset == "wn18_like":
        data = wn18_like()
        arrays = dict(train=data.train, valid=data.valid, test=data.test,
                      num_entities=data.num_entities, num_relations=data.num_relations)
    else:
        import datasets
        triples, entities, relations = datasets.fb15k_like()
        triples = np.unique(triples, axis=0)
        train, valid, test = split(triples, 50000, 59071)
        arrays = dict(train=train, valid=valid, test=test, num_entities=entities,
                      num_relations=relations)
    np.savez(path, dataset=dataset, **arrays)
    print(f"{path}: {dataset}, {arrays['num_entities']} entities, "
          f"{arrays['num_relations']} relations, {len(arrays['train'])}/"
          f"{len(arrays['valid'])}/{len(arrays['test'])} triples")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prepare", type=pathlib.Path)
    parser.add_argument("--dataset", choices=("wn18_like", "fb15k_like"), default="wn18_like",
                        help="the graph --prepare writes")
    parser.add_argument("--data", type=pathlib.Path)
    parser.add_argument("--bundles", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--models", nargs="*", default=list(CONFIGS))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--negatives", type=int, default=64)
    parser.add_argument("--runs", nargs="*", default=["kge", "pytorch", "pykeen"],
                        help="kge, kge-eager-step (KGE's kernels, the step not captured in "
                        "a CUDA graph), kge-cublas (with --shared: the products by "
                        "torch.bmm), pytorch (the same loop in plain PyTorch), pykeen (PyKEEN's "
                        "sLCWA loop with its models' defaults, bench/pykeen_baseline.py), "
                        "pykeen-aligned (with KGE's initialization, no constraint or "
                        "regularizer); PyKEEN is skipped where it is not installed")
    parser.add_argument("--shared", type=int, default=0,
                        help="chunked shared negatives: N per chunk and side")
    parser.add_argument("--chunk", type=int, default=1024)
    parser.add_argument("--loss", help="every model's loss (default: CONFIGS')")
    parser.add_argument("--products", type=pathlib.Path,
                        help="the shared-negative products' bundles (save_products)")
    args = parser.parse_args()
    if args.prepare:
        return prepare(args.prepare, args.dataset)

    import torch
    from kge import training
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import pykeen_baseline
    runs = list(args.runs)
    wanted = [r for r in runs if r.startswith("pykeen")]
    missing = pykeen_baseline.available() if wanted else None
    if missing:
        print("PyKEEN not run:", missing, flush=True)
        runs = [r for r in runs if r not in wanted]
    data = np.load(args.data)
    train, test = data["train"], data["test"]
    known = np.concatenate([train, data["valid"], test])
    entities, relations = int(data["num_entities"]), int(data["num_relations"])
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "dataset": {"name": str(data["dataset"]) if "dataset" in data.files else "wn18_like",
                           "entities": entities, "relations": relations,
                           "train": len(train), "test": len(test)},
               "epochs": args.epochs, "dim": args.dim, "batch": args.batch,
               "negatives": args.negatives, "rows": [],
               **({"shared": args.shared, "chunk": args.chunk} if args.shared else {}),
               **({"pykeen_missing": missing} if missing else {})}
    for name in args.models:
        loss, optimizer, lr, margin = CONFIGS[name]
        loss = args.loss or loss
        fwd, grad, outer_sum = training.load_bundles(args.bundles, name, args.dim)
        row = {"model": name, "loss": loss, "optimizer": optimizer, "lr": lr, "margin": margin}
        for label in ("pykeen", "pykeen_aligned"):
            if label.replace("_", "-") not in runs and label not in runs:
                continue
            row[label] = pykeen_baseline.train(
                name, train, test, known, entities, relations, dim=args.dim, batch=args.batch,
                negatives=args.negatives, epochs=args.epochs, loss=loss, optimizer=optimizer,
                lr=lr, margin=margin, aligned=label == "pykeen_aligned")
            print(name, label, json.dumps(row[label]), flush=True)
            torch.cuda.empty_cache()
        for label, eager, graph in (("kge", False, "auto"), ("kge_eager_step", False, False),
                                    ("kge_cublas", False, "auto"), ("pytorch", True, False)):
            if label.replace("_", "-") not in runs and label not in runs:
                continue
            model = training.Model.create(name, fwd, grad, entities, relations, args.dim,
                                          seed=0, eager=eager,
                                          gradients="sparse" if eager else "rows",
                                          outer_sum=outer_sum)
            negatives = args.negatives
            if args.shared:
                from kge import shared_negatives
                products = (shared_negatives.load_products(args.products)
                            if label.startswith("kge") and label != "kge_cublas" else None)
                negatives = shared_negatives.SharedNegatives(args.shared, args.chunk, products)
            trainer = training.Trainer(model, train, batch_size=args.batch,
                                       negatives=negatives, loss=loss, optimizer=optimizer,
                                       lr=lr, margin=margin, seed=1, graph=graph)
            precision = torch.get_float32_matmul_precision()
            if args.shared:
                torch.set_float32_matmul_precision("high")
            try:
                times = [trainer.train_epoch()["seconds"] for _ in range(args.epochs)]
            finally:
                torch.set_float32_matmul_precision(precision)
            metrics, _ = training.evaluate(model, test, known)
            graphed = trainer.graphed is not None and trainer.graphed.graph is not None
            row[label] = {"epoch_seconds": times, "median_epoch_seconds": statistics.median(times),
                          "final_loss": trainer.log[-1]["loss"], "graphed_step": graphed,
                          **metrics}
            print(name, label, json.dumps(row[label]), flush=True)
            del model, trainer
            torch.cuda.empty_cache()
        for label in ("pytorch", "kge_eager_step", "kge_cublas", "pykeen", "pykeen_aligned"):
            if label in row and "kge" in row:
                suffix = "" if label == "pytorch" else "_over_" + label
                row["speedup" + suffix] = (row[label]["median_epoch_seconds"]
                                           / row["kge"]["median_epoch_seconds"])
                row["mrr_difference" + suffix] = row["kge"]["mrr"] - row[label]["mrr"]
        results["rows"].append(row)
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
