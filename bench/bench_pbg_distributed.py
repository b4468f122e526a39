#!/usr/bin/env python3
"""PyTorch-BigGraph's distributed mode on a graph of bench_distributed.py:
the baseline of KGE's training over several GPUs (issue 20).

PBG's distributed mode trains on CPUs: N "machines" (here processes of
one host, each with `--workers` HOGWILD threads), a lock server handing
out buckets whose partitions no other machine holds, partitions swapped
through partition servers (here the trainers themselves), relations
synchronized through a parameter server. This script writes the graph in
PBG's input format (edges bucketed by (head partition, tail partition) in
HDF5 files, entity counts per partition, the relations' count for dynamic
relations), trains ComplEx (PBG's `complex_diagonal` operator and `dot`
comparator; or TransE: `translation` and `l2`) with KGE's benchmark
settings on 1 and N machines, and reports the seconds per epoch and the
MRR of the trained embeddings by KGE's evaluation (OGB's sampled
protocol: 1,000 candidates), as bench_distributed.py does.

    python3 bench/bench_pbg_distributed.py --graph /tmp/kge-dist/wikikg2-like-1.0.npz \\
        --machines 1 2 4 --epochs 2 --out pbg.json

`--graph`: a .npz with train, test, entities, relations (bench_distributed's
dataset). PBG's package is torchbiggraph (pure Python; it needs torch,
h5py, attrs, tqdm).
"""

import argparse
import json
import os
import pathlib
import shutil
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.append(str(HERE.parent / "python"))

OPERATORS = {"complex": ("complex_diagonal", "dot"), "transe_l2": ("translation", "l2")}


def write_input(directory, train, entities, relations, partitions):
    """The graph in PBG's format under `directory`: entity counts per
    partition (entities in contiguous id ranges), the relations' count,
    and edges/edges_<lhs>_<rhs>.h5 with lhs, rhs (offsets in their
    partitions) and rel. Returns (entity path, edge path, ranges)."""
    import h5py
    directory.mkdir(parents=True, exist_ok=True)
    ranges = np.linspace(0, entities, partitions + 1).astype(np.int64)
    for p in range(partitions):
        (directory / f"entity_count_all_{p}.txt").write_text(f"{ranges[p + 1] - ranges[p]}\n")
    (directory / "dynamic_rel_count.txt").write_text(f"{relations}\n")
    edges = directory / "edges"
    edges.mkdir(exist_ok=True)
    heads, rels, tails = (train[:, k].astype(np.int64) for k in range(3))
    hp = np.searchsorted(ranges, heads, "right") - 1
    tp = np.searchsorted(ranges, tails, "right") - 1
    bucket = hp * partitions + tp
    order = np.argsort(bucket, kind="stable")
    bounds = np.searchsorted(bucket[order], np.arange(partitions * partitions + 1))
    for a in range(partitions):
        for b in range(partitions):
            k = a * partitions + b
            rows = order[bounds[k]:bounds[k + 1]]
            with h5py.File(edges / f"edges_{a}_{b}.h5", "w") as hf:
                hf.attrs["format_version"] = 1
                hf.create_dataset("lhs", data=heads[rows] - ranges[a])
                hf.create_dataset("rhs", data=tails[rows] - ranges[b])
                hf.create_dataset("rel", data=rels[rows])
    return str(directory), str(edges), ranges


def config(args, model, entity_path, edge_path, checkpoint, partitions, machines, port):
    operator, comparator = OPERATORS[model]
    settings = dict(
        entity_path=entity_path, edge_paths=[edge_path], checkpoint_path=str(checkpoint),
        entities={"all": {"num_partitions": partitions}},
        relations=[{"name": "all_edges", "lhs": "all", "rhs": "all", "operator": operator}],
        # (ComplEx: a real and an imaginary half of `dim` each, as KGE's.)
        dynamic_relations=True, global_emb=False,
        dimension=2 * args.dim if model == "complex" else args.dim, comparator=comparator,
        num_epochs=args.epochs, batch_size=args.batch, num_batch_negs=args.negatives,
        num_uniform_negs=args.negatives, loss_fn="softmax", lr=args.lr,
        eval_fraction=0, workers=args.workers, num_machines=machines,
        num_partition_servers=0 if machines > 1 else -1,
        distributed_init_method=f"tcp://127.0.0.1:{port}" if machines > 1 else None,
        bucket_order="affinity")
    return settings


def _patch_pbg():
    """torchbiggraph 1.0.0 on today's Python and PyTorch: it recognizes
    Optional[T] in its config schema by identity (`type_ is Optional[T]`),
    which Python 3.12's typing no longer guarantees (each Optional[T] a new
    object): by equality instead; its distributed mode's RPC unpickles
    its own objects (buckets) with torch.load, which PyTorch >= 2.6 limits
    to weights by default: allowed in full (the machines' own messages)."""
    import typing
    os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
    from torchbiggraph import schema

    def unpack_optional(type_):
        args = getattr(type_, "__args__", None)
        if not args or type_ != typing.Optional[args[0]]:
            raise TypeError("Not an optional type")
        return args[0]
    schema.unpack_optional = unpack_optional


def _machine(rank, settings, out):
    """One PBG machine: trains; writes when it started and when it finished
    its last bucket of each epoch (wall-clock time, to merge the machines')."""
    start = time.time()
    _patch_pbg()
    from torchbiggraph.config import parse_config
    from torchbiggraph.train import train_and_report_stats
    config = parse_config(settings)
    buckets = config.entities["all"].num_partitions ** 2
    ends = {}
    # A step per bucket (one per pass on one machine), its index counting
    # the buckets of every epoch before (one edge path in one chunk: an
    # iteration is an epoch).
    for index, _, _, _ in train_and_report_stats(config, rank=rank):
        ends[int(index) // buckets if config.num_machines > 1 else int(index)] = time.time()
    pathlib.Path(f"{out}.{rank}").write_text(json.dumps({"start": start, "ends": ends}))


def run(args, model, graph, machines, workdir):
    """Trains on `machines` processes; returns {epochs (seconds), mrr...}."""
    import multiprocessing as mp
    from kge.distributed import free_port
    data = np.load(graph)
    train = data["train"]
    partitions = max(1, 2 * machines) if machines > 1 else args.partitions
    base = workdir / f"pbg-{model}-{machines}"
    # (PBG resumes from a checkpoint it finds: each run starts from none.)
    shutil.rmtree(base / "model", ignore_errors=True)
    entity_path, edge_path, ranges = write_input(base / "data", train, int(data["entities"]),
                                                 int(data["relations"]), partitions)
    settings = config(args, model, entity_path, edge_path, base / "model", partitions, machines,
                      free_port())
    out = base / "times.json"
    context = mp.get_context("spawn")
    processes = [context.Process(target=_machine, args=(r, settings, str(out)))
                 for r in range(machines)]
    for p in processes:
        p.start()
    for p in processes:
        p.join()
    if any(p.exitcode for p in processes):
        raise RuntimeError(f"PBG on {machines} machines failed: exit codes "
                           f"{[p.exitcode for p in processes]}")
    # An epoch ends when the last machine finishes its buckets of it.
    machines_times = [json.loads(pathlib.Path(f"{out}.{r}").read_text()) for r in range(machines)]
    epochs = sorted({int(e) for t in machines_times for e in t["ends"]})
    ends = [max(t["ends"].get(str(e), 0.0) for t in machines_times) for e in epochs]
    start = min(t["start"] for t in machines_times)
    seconds = [b - a for a, b in zip([start] + ends[:-1], ends)]
    return {"partitions": partitions, "epochs": seconds,
            **evaluate(model, base / "model", ranges, data)}


def evaluate(model, checkpoint, ranges, data):
    """KGE's evaluation of PBG's trained embeddings: the entity table
    assembled from the partitions' files, the relation parameters from the
    model file, scored by KGE's reference model of the same function."""
    import h5py
    import torch
    from kge import training
    version = int((checkpoint / "checkpoint_version.txt").read_text())
    parts = []
    for p in range(len(ranges) - 1):
        with h5py.File(checkpoint / f"embeddings_all_{p}.v{version}.h5", "r") as hf:
            parts.append(hf["embeddings"][...])
    entities = torch.as_tensor(np.concatenate(parts))
    with h5py.File(checkpoint / f"model.v{version}.h5", "r") as hf:
        group = hf["model/relations/0/operator/rhs"]
        params = {name: torch.as_tensor(group[name][...]) for name in group}
    tables = _tables(model, entities, params)
    reference = training.Model.create(model, None, None, len(entities), int(data["relations"]),
                                      next(iter(tables.values())).shape[1], eager=True,
                                      device="cpu")
    whole = training.Model(model, {n: torch.nn.Parameter(t) for n, t in tables.items()},
                           reference.score, reference.distance, reference.operator)
    metrics, _ = training.evaluate(whole, data["test"], data["test"], candidates=1000)
    return metrics


def _tables(model, entities, params):
    """PBG's embeddings as KGE's tables. PBG applies the relation to the
    tail: ComplEx scores Re(conj(h) . (r t)) = Re(h . conj(r) . conj(t)),
    KGE's with r conjugated; TransE scores ||h - (t + r)||, KGE's with r
    negated."""
    if model == "complex":
        half = entities.shape[1] // 2
        return {"Ere": entities[:, :half], "Eim": entities[:, half:],
                "Rre": params["real"], "Rim": -params["imag"]}
    return {"Eemb": entities, "Remb": -params["translations"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graph", type=pathlib.Path, required=True)
    parser.add_argument("--models", nargs="*", default=["complex"], choices=sorted(OPERATORS))
    parser.add_argument("--machines", type=int, nargs="*", default=[1, 2, 4])
    parser.add_argument("--partitions", type=int, default=1,
                        help="partitions of the one-machine run")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8192)
    parser.add_argument("--negatives", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="HOGWILD threads per machine")
    parser.add_argument("--workdir", type=pathlib.Path, default=pathlib.Path("/tmp/kge-pbg"))
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    import torch
    results = {"torch": torch.__version__, "workers": args.workers, "dim": args.dim,
               "batch": args.batch, "negatives": args.negatives, "runs": {}}
    for model in args.models:
        for machines in args.machines:
            result = run(args, model, args.graph, machines, args.workdir)
            results["runs"][f"{model} {machines} machines"] = result
            print(model, machines, "machines", json.dumps(result), flush=True)
            if args.out:
                args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
