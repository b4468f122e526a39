"""Training beyond GPU memory (kge.out_of_core) against training in GPU
memory, on a graph whose embeddings are several times the buffer.

The graph is WikiKG2-like (bench/datasets.py: ogbl-wikikg2's 2.5 M
entities, 535 relations and 17 M triples, power-law degrees, communities
to learn). The entity embeddings and their Adagrad state (D = 128) take
2.6 GB; the out-of-core buffer holds `capacity` of `partitions`
partitions (3 of 9: a third). One run, all on the same GPU:

1. in memory: kge.training.Trainer with the whole tables on the GPU;
2. out of core with Legend's order and prefetching (the swaps' I/O
   overlapped with training);
3. out of core without prefetching (each swap done synchronously).

All three start from the same tables (the partition files' initial rows)
with the same batch, negatives, loss, optimizer and learning rate. For
each: epoch seconds, and for the out-of-core runs the loads and bytes per
epoch (against the order's computed I/O count), the time the compute
stream waited for a load, and the GPU's busy share sampled by NVML every
20 ms (where pynvml is installed). MRR and Hits@k by OGB's protocol
(1,000 sampled candidates per side, as ogbl-wikikg2 is evaluated) on
held-out triples. It also tabulates the orders' I/O counts (Legend, BETA,
PyTorch-BigGraph, the lower bound) and Legend's prefetch failures for
n = 4 .. 16.

    python3 bench/bench_out_of_core.py --bundles DIR --out results.json \
        [--model distmult] [--epochs 2] [--scale 1.0] [--workdir /tmp/kge-ooc]

`--data FILE` trains on a prepared graph instead (`bench_training.py
--prepare`: the WN18-like graph from WordNet, with its fixed split), whose
MRR (the full filtered protocol on its test triples) says whether training
out of core learns what training in memory does.
"""

import argparse
import json
import pathlib
import shutil
import statistics
import sys
import threading
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE))


class BusyMonitor:
    """The GPU's utilization (NVML: the share of time a kernel ran),
    sampled every `period` seconds while active."""

    def __init__(self, period=0.02):
        self.period, self.samples, self.handle = period, [], None
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:  # pragma: no cover - pynvml is optional
            self.nvml = None

    def __enter__(self):
        self.samples, self.stop = [], threading.Event()
        if self.handle is not None:
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()
        return self

    def _run(self):
        while not self.stop.is_set():
            self.samples.append(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)
            time.sleep(self.period)

    def __exit__(self, *exc):
        self.stop.set()
        if self.handle is not None:
            self.thread.join()

    def mean(self):
        return float(np.mean(self.samples)) / 100 if self.samples else None


def order_table():
    from kge import partition_order as po
    rows = []
    for n in range(4, 17):
        legend = po.legend_order(n)
        beta = po.beta_order(n, 3)
        rows.append({"n": n, "legend": po.io_count(legend), "beta": po.io_count(beta),
                     "pbg_capacity2": po.pbg_order(n)[1], "lower_bound": po.lower_bound(n, 3),
                     "legend_prefetch_failures": len(po.prefetch_failures(
                         legend, po.legend_buckets(legend, n))),
                     "beta_prefetch_failures": len(po.prefetch_failures(
                         beta, po.legend_buckets(beta, n))),
                     "swaps": len(legend) - 1})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundles", type=pathlib.Path)
    parser.add_argument("--data", type=pathlib.Path,
                        help="a prepared graph (bench_training.py --prepare) instead of "
                        "WikiKG2-like; evaluated by the full filtered protocol")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--model", default="distmult")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8192)
    parser.add_argument("--negatives", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--partitions", type=int, default=9)
    parser.add_argument("--capacity", type=int, default=3)
    parser.add_argument("--test", type=int, default=5000)
    parser.add_argument("--workdir", type=pathlib.Path, default=pathlib.Path("/tmp/kge-ooc"))
    parser.add_argument("--write-buffers", type=int, nargs="*", default=[2],
                        help="out_of_core.WRITE_BUFFERS: one prefetching run each")
    parser.add_argument("--runs", nargs="*", default=["memory", "prefetch", "synchronous"])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--no-shuffle", action="store_true",
                        help="cut the partitions in the graph's own numbering of entities")
    parser.add_argument("--eager", action="store_true",
                        help="PyTorch scores instead of KGE's kernels (a smoke run on the CPU)")
    args = parser.parse_args()

    import torch
    import datasets
    from kge import out_of_core, partition_order, training

    results = {"device": (torch.cuda.get_device_name() if args.device == "cuda"
                          else args.device), "torch": torch.__version__,
               "model": args.model, "dim": args.dim, "batch": args.batch,
               "negatives": args.negatives, "lr": args.lr, "loss": "softplus",
               "optimizer": "adagrad", "partitions": args.partitions,
               "capacity": args.capacity, "orders": order_table(), "runs": {},
               "workdir": str(args.workdir)}
    start = time.perf_counter()
    if args.data:
        data = np.load(args.data)
        train, test = data["train"], data["test"]
        triples = np.concatenate([train, data["valid"], test])
        entities, relations = int(data["num_entities"]), int(data["num_relations"])
        name = str(data["dataset"]) if "dataset" in data.files else "wn18_like"
    else:
        triples, entities, relations = datasets.wikikg2_like(scale=args.scale)
        test, train = triples[:args.test], triples[args.test:]
        name = "wikikg2_like"
    results["dataset"] = {"name": name, "entities": entities, "relations": relations,
                          "train": len(train), "test": len(test),
                          "skew": datasets.skew_summary(triples, entities),
                          "seconds_to_generate": time.perf_counter() - start}
    print(json.dumps(results["dataset"]), flush=True)
    fwd = grad = outer_sum = None
    if not args.eager:
        fwd, grad, outer_sum = training.load_bundles(args.bundles, args.model, args.dim)
    states = partition_order.legend_order(args.partitions) if args.capacity == 3 else \
        partition_order.beta_order(args.partitions, args.capacity)

    def ooc(directory, prefetch, resume=False):
        return out_of_core.OutOfCoreTrainer(
            args.model, train, directory, num_entities=entities, num_relations=relations,
            dim=args.dim, partitions=args.partitions, capacity=args.capacity, forward=fwd,
            gradient=grad, outer_sum=outer_sum, eager=args.eager, device=args.device,
            batch_size=args.batch, negatives=args.negatives, lr=args.lr, seed=1,
            prefetch=prefetch, resume=resume, shuffle=not args.no_shuffle)

    # The initial partitions, shared by every run (copied per run).
    initial = args.workdir / "initial"
    shutil.rmtree(args.workdir, ignore_errors=True)
    first = ooc(initial, True)
    results["buffer_bytes"] = first.capacity * first.partition_bytes
    results["graph_bytes"] = entities * args.dim * 4 * 2
    # The bytes the order's loads move: its first state's partitions and
    # the one each swap loads (embeddings and Adagrad's state).
    sizes = np.diff(first.ranges) * args.dim * 4 * 2
    expected = [(partition_order.io_count(states), int(sum(
        sizes[p] for p in list(first.plans[0][0][0]) + [s[3] for s in first.plans[0][:-1]])))]
    # Later epochs start from the buffer the one before left (walking the
    # order backwards, then forwards again): the swaps' loads only.
    for plan in (first.plans[1], first.plans[0]):
        expected.append((len(states) - 1, int(sum(sizes[s[3]] for s in plan[:-1]))))
    del first
    print("buffer", results["buffer_bytes"], "graph", results["graph_bytes"], flush=True)

    def evaluate(model):
        # OGB's sampled protocol for WikiKG2-like; all entities otherwise.
        metrics, _ = training.evaluate(model, test, triples,
                                       candidates=None if args.data else 1000)
        return metrics

    variants = []
    for run in args.runs:
        if run == "prefetch":
            variants += [("prefetch" if w == 2 else f"prefetch-{w}-write-buffers", w)
                         for w in args.write_buffers]
        else:
            variants.append((run, 2))
    for run, write_buffers in variants:
        out_of_core.WRITE_BUFFERS = write_buffers
        directory = args.workdir / run
        shutil.rmtree(directory, ignore_errors=True)
        shutil.copytree(initial, directory)
        if run == "memory":
            model = ooc(directory, True, resume=True).gather()
            trainer = training.Trainer(model, train, batch_size=args.batch,
                                       negatives=args.negatives, lr=args.lr, seed=1,
                                       device=args.device)
        else:
            trainer = ooc(directory, run.startswith("prefetch"), resume=True)
        records = []
        for _ in range(args.epochs):
            with BusyMonitor() as busy:
                record = trainer.train_epoch()
            record["gpu_busy_nvml"] = busy.mean()
            if run != "memory":
                k = 0 if record["epoch"] == 0 else (1 if record["epoch"] % 2 else 2)
                record["expected_loads"], record["expected_bytes"] = expected[k]
            records.append(record)
            print(run, json.dumps(record), flush=True)
        model = trainer.model if run == "memory" else trainer.gather()
        metrics = evaluate(model)
        results["runs"][run] = {"epochs": records, "median_epoch_seconds": statistics.median(
            r["seconds"] for r in records), **metrics}
        print(run, json.dumps(metrics), flush=True)
        del model, trainer
        if args.device == "cuda":
            torch.cuda.empty_cache()
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    runs = results["runs"]
    if "memory" in runs:
        for run in runs:
            if run != "memory":
                runs[run]["epoch_ratio_to_memory"] = (runs[run]["median_epoch_seconds"]
                                                      / runs["memory"]["median_epoch_seconds"])
                runs[run]["mrr_difference"] = runs[run]["mrr"] - runs["memory"]["mrr"]
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
