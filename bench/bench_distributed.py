"""KGE on several GPUs of one host (kge.distributed, NCCL) against one GPU.

Training: TransE-L2 and ComplEx on the WikiKG2-like graph (bench/datasets.py:
ogbl-wikikg2's 2.5 M entities, 535 relations, 16.6 M triples, power-law
degrees), D = 128, batches of 8,192 positives with 64 negatives, the
settings of bench_training.py. For each model, in one run on one machine:

1. one GPU, the whole tables in its memory (kge.training.Trainer);
2. one GPU with the buffer a GPU of the 4-GPU run holds (3 partition
   slots of 8: 37.5 % of the tables), out of core (kge.out_of_core,
   Legend's order, prefetching): "one GPU" for a graph that does not fit
   its buffer;
3. kge.distributed.DistributedTrainer on N = 2 and 4 GPUs (processes
   started with torch.multiprocessing, one per GPU).

Epoch seconds (the slowest rank's), the speed-up over runs 1 and 2, and
MRR / Hits@k by OGB's sampled protocol (1,000 candidates per side) on
5,000 held-out triples.

Equal MRR on a real graph: DistMult on the WN18-like graph (WordNet 3.0,
bench_training.py --prepare), 10 epochs on 1, 2 and 4 GPUs, filtered MRR.

Gram matrices: the normalized marginalized graph kernel of the molecules
(all of rdkit-data's NCI set, kge.kron.from_molecule) on 1, 2 and 4 GPUs
by kge.distributed.gram, end to end (the node orders, the schedule, the
solves and the gathering of the matrix) and against the one-GPU kernel
call; the matrices must be identical (bitwise).

Every process has NVLink multicast off (NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1).

Here (RDKit, the compiler):
    KGE_CACHE_DIR=.carry/kge-cache python3 bench/bench_distributed.py --prepare DIR
On the GPU machine:
    python3 bench/bench_distributed.py --bundles BUNDLES --data DIR --out results.json \\
        [--gpus 2 4] [--models transe_l2 complex] [--epochs 2] [--parts wn18 train gram]
"""

import argparse
import json
import os
import pathlib
import sys
import time

for key, value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                   ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[key] = value

import numpy as np  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.append(str(HERE.parent / "python"))
sys.path.insert(0, str(HERE))

CONFIGS = {  # bench_training.py's: loss, optimizer, learning rate, margin
    "transe_l2": ("adversarial", "adam", 0.01, 6.0),
    "distmult": ("softplus", "adagrad", 0.1, 1.0),
    "complex": ("softplus", "adagrad", 0.1, 1.0),
}
MOLECULE_FEATURES = (["element", "aromatic"], ["order"])


def gram_kernel(device="cuda"):
    from kge import kron
    return kron.MarginalizedGraphKernel(
        kron.TensorProduct(element=kron.KroneckerDelta(0.5), aromatic=kron.KroneckerDelta(0.5)),
        kron.TensorProduct(order=kron.KroneckerDelta(0.5)), q=0.05, normalize=True,
        device=device)


def prepare(directory):
    """The molecules (packed) and the Gram bundle in the bundle cache."""
    from kge import kron
    directory.mkdir(parents=True, exist_ok=True)
    molecules = [kron.from_molecule(m) for m in kron.nci_molecules(100_000)]
    nodes, edges = MOLECULE_FEATURES
    np.savez_compressed(directory / "molecules.npz", **kron.pack(molecules, nodes, edges))
    k = gram_kernel()
    names = (kron._feature_names(k.node_kernel, molecules, "node"),
             kron._feature_names(k.edge_kernel, molecules, "edge"))
    kron.compile_gram(k.node_kernel, k.edge_kernel, *names, k.q, k.tol, k.maxiter,
                      k.normalize, True, k.order, degrees=k.degrees, nodal=False)
    print(f"{directory}: {len(molecules)} molecules; the Gram bundle is in the cache")


def molecules(directory):
    from kge import kron
    stored = np.load(directory / "molecules.npz")
    return kron.unpack({k: stored[k] for k in stored.files}, *MOLECULE_FEATURES)


def settings(args, name):
    loss, optimizer, lr, margin = CONFIGS[name]
    return dict(batch_size=args.batch, negatives=args.negatives, loss=loss,
                optimizer=optimizer, lr=lr, margin=margin, seed=1)


def evaluate(model, data):
    """OGB's sampled protocol, or the filtered one where the data file
    holds every known triple (`known`)."""
    from kge import training
    if "known" in data:
        metrics, _ = training.evaluate(model, data["test"], data["known"])
    else:
        metrics, _ = training.evaluate(model, data["test"], data["test"], candidates=1000)
    return metrics


# -- the ranks ------------------------------------------------------------------

def _rank(rank, world, port, job):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import torch
    import torch.distributed as dist
    from kge import distributed
    distributed.init("nccl", timeout=900)
    try:
        result = job(rank, world)
        if rank == 0:
            pathlib.Path(os.environ["KGE_BENCH_RESULT"]).write_text(json.dumps(result))
    finally:
        torch.cuda.synchronize()
        dist.destroy_process_group()


def spawn(world, job):
    """job(rank, world) on `world` processes, one per GPU; rank 0's result."""
    import torch.multiprocessing as mp
    from kge.distributed import free_port
    port = free_port()
    out = pathlib.Path(f"/tmp/kge-bench-distributed-{os.getpid()}.json")
    os.environ["KGE_BENCH_RESULT"] = str(out)
    mp.spawn(_rank, args=(world, port, job), nprocs=world, join=True)
    return json.loads(out.read_text())


class TrainJob:
    """Training on the ranks; `split`: out of core, each rank's partitions
    cut in `split` in files under the work directory, a buffer of 3."""

    def __init__(self, args, name, graph, epochs, split=None):
        self.args, self.name, self.graph, self.epochs = args, name, graph, epochs
        self.split = split

    def __call__(self, rank, world):
        from kge import distributed, training
        args = self.args
        data = np.load(self.graph)
        forward, gradient, outer_sum = training.load_bundles(args.bundles, self.name, args.dim)
        start = time.perf_counter()
        files = {}
        if self.split:
            files = dict(out_of_core=args.workdir / f"ooc-{self.name}-{world}", split=self.split,
                         capacity=3)
        t = distributed.DistributedTrainer(
            self.name, data["train"], num_entities=int(data["entities"]),
            num_relations=int(data["relations"]), dim=args.dim, forward=forward,
            gradient=gradient, outer_sum=outer_sum, **settings(args, self.name), **files)
        setup = time.perf_counter() - start
        records = []
        for _ in range(self.epochs):
            records.append(t.train_epoch())
            if rank == 0:
                print(world, "GPUs", self.name, json.dumps(records[-1]), flush=True)
        model = t.gather()
        result = None
        if rank == 0:
            result = {"epochs": records, "setup_seconds": setup,
                      "slot_bytes_per_gpu": t.capacity * t.partition_bytes,
                      **evaluate(model, data)}
        return result


def copy_variants(shape, group):
    """Seconds (the slowest rank's) of ways to bring a float32 matrix of
    `shape` on each rank's GPU to a float64 NumPy array, all ranks at once."""
    import torch
    k = torch.rand(shape, device="cuda")
    pinned = torch.empty(shape, dtype=torch.float32, pin_memory=True)
    variants = {
        "cpu, then float64 on the host": lambda: np.asarray(k.cpu().numpy(), np.float64),
        "float64 on the GPU, then cpu": lambda: k.double().cpu().numpy(),
        "into pinned memory, then float64": lambda: np.asarray(
            pinned.copy_(k).numpy(), np.float64),
    }
    out = {}
    for name, variant in variants.items():
        times = []
        for _ in range(3):
            torch.cuda.synchronize()
            group.barrier()
            start = time.perf_counter()
            variant()
            times.append(time.perf_counter() - start)
        out[name] = max(group.all_gather_object(min(times)))
    return out


def one_rank(fn, *args):
    from kge import distributed
    return distributed.ThreadGroup.run(1, lambda group: fn(*args, group))[0]


class GramJob:
    def __init__(self, data, reference):
        self.data, self.reference = data, reference

    def __call__(self, rank, world):
        import torch
        from kge import distributed
        X = molecules(self.data)
        kernel = gram_kernel()
        distributed.gram(kernel, X[:64])  # compiles, loads, warms up
        group = distributed.TorchGroup()

        def timed(**options):
            """The matrix, the seconds of two calls, every rank's step timings."""
            times = []
            for _ in range(2):
                torch.cuda.synchronize()
                group.barrier()
                start = time.perf_counter()
                k = distributed.gram(kernel, X, **options)
                times.append(time.perf_counter() - start)
            return k, times, group.all_gather_object(kernel.timings)
        k, times, timings = timed()
        # The matrix returned on rank 0 only (one copy to the host).
        on_root, root_times, root_timings = timed(root=0)
        copies = copy_variants(k.shape, group)
        if rank != 0:
            return None
        expected = np.load(self.reference)
        return {"seconds": times, "rank0_timings": timings[0], "timings": timings,
                "root0_seconds": root_times, "root0_timings": root_timings,
                "copies_to_host": copies,
                "identical": bool(np.array_equal(k, expected, equal_nan=True)),
                "root0_identical": bool(np.array_equal(on_root, expected, equal_nan=True)),
                "max_difference": float(np.nanmax(np.abs(k - expected)))}


# -- the driver ------------------------------------------------------------------

def dataset(args):
    import datasets
    path = args.workdir / f"wikikg2-like-{args.scale}.npz"
    if not path.exists():
        triples, entities, relations = datasets.wikikg2_like(scale=args.scale)
        np.savez(path, train=triples[args.test:], test=triples[:args.test],
                 entities=entities, relations=relations)
    return path


def train_one_gpu(args, name, graph, runs, epochs, out_of_core_run):
    import torch
    from kge import out_of_core, training
    data = np.load(graph)
    train = data["train"]
    entities, relations = int(data["entities"]), int(data["relations"])
    forward, gradient, outer_sum = training.load_bundles(args.bundles, name, args.dim)
    model = training.Model.create(name, forward, gradient, entities, relations, args.dim,
                                  seed=1, outer_sum=outer_sum)
    trainer = training.Trainer(model, train, **settings(args, name))
    records = [trainer.train_epoch() for _ in range(epochs)]
    runs["1 GPU in memory"] = {"epochs": records, "table_bytes": sum(
        t.numel() * 4 for t in model.tables.values()), **evaluate(model, data)}
    print(name, "1 GPU", json.dumps(runs["1 GPU in memory"]), flush=True)
    del model, trainer
    torch.cuda.empty_cache()
    if out_of_core_run:
        directory = args.workdir / f"ooc-{name}"
        import shutil
        shutil.rmtree(directory, ignore_errors=True)
        trainer = out_of_core.OutOfCoreTrainer(
            name, train, directory, num_entities=entities, num_relations=relations,
            dim=args.dim, partitions=8, capacity=3, forward=forward, gradient=gradient,
            outer_sum=outer_sum, **settings(args, name))
        records = [trainer.train_epoch() for _ in range(epochs)]
        runs["1 GPU out of core (3 of 8 partitions)"] = {
            "epochs": records, "buffer_bytes": trainer.capacity * trainer.partition_bytes,
            **evaluate(trainer.gather(), data)}
        print(name, "1 GPU OOC", json.dumps(records), flush=True)
        trainer.close()
        del trainer
        torch.cuda.empty_cache()


def median_epoch(run):
    """The median epoch after the first (which also sets up NCCL's
    communicators and the workspaces), of all where there is only one."""
    epochs = run["epochs"][1:] or run["epochs"]
    seconds = sorted(r["seconds"] for r in epochs)
    return seconds[len(seconds) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prepare", type=pathlib.Path)
    parser.add_argument("--data", type=pathlib.Path)
    parser.add_argument("--bundles", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--gpus", type=int, nargs="*", default=[2, 4])
    parser.add_argument("--models", nargs="*", default=["transe_l2", "complex"])
    parser.add_argument("--parts", nargs="*", default=["wn18", "train", "gram"],
                        help="of wn18, train, gram, pbg (PyTorch-BigGraph's distributed "
                             "mode on the training graph: its package must be installed)")
    parser.add_argument("--pbg-lr", type=float, default=0.1)
    parser.add_argument("--pbg-machines", type=int, nargs="*",
                        help="PyTorch-BigGraph's machine counts (default: 1 and --gpus)")
    parser.add_argument("--pbg-workers", type=int, default=max(1, (os.cpu_count() or 2) // 4),
                        help="HOGWILD threads per PBG machine")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8192)
    parser.add_argument("--negatives", type=int, default=64)
    parser.add_argument("--test", type=int, default=5000)
    parser.add_argument("--no-out-of-core", dest="out_of_core", action="store_false")
    parser.add_argument("--split", type=int, default=0,
                        help="also train out of core on the GPUs, each rank's two partitions "
                             "cut in SPLIT (a buffer of 3)")
    parser.add_argument("--wn18", type=pathlib.Path, default=HERE.parent / ".carry" / "wn18like.npz")
    parser.add_argument("--wn18-epochs", type=int, default=10)
    parser.add_argument("--workdir", type=pathlib.Path, default=pathlib.Path("/tmp/kge-dist"))
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare)
        return
    import torch
    args.workdir.mkdir(parents=True, exist_ok=True)
    cuda = torch.cuda.is_available()
    results = {"device": torch.cuda.get_device_name() if cuda else "cpu",
               "gpus": torch.cuda.device_count(), "torch": torch.__version__,
               "nccl": ".".join(map(str, torch.cuda.nccl.version())) if cuda else None,
               "dim": args.dim, "batch": args.batch, "negatives": args.negatives,
               "epochs": args.epochs, "configs": {m: CONFIGS[m] for m in args.models},
               "training": {}, "gram": {}, "wn18": {}, "pbg": {}}
    gpus = [g for g in args.gpus if g <= torch.cuda.device_count()]

    def save():
        if args.out:
            args.out.write_text(json.dumps(results, indent=2) + "\n")

    def compare(runs):
        memory = median_epoch(runs["1 GPU in memory"])
        ooc = runs.get("1 GPU out of core (3 of 8 partitions)")
        for world in gpus:
            run = runs[f"{world} GPUs"]
            run["speedup_over_1_gpu_in_memory"] = memory / median_epoch(run)
            if ooc:
                run["speedup_over_1_gpu_out_of_core"] = median_epoch(ooc) / median_epoch(run)
            run["mrr_difference"] = run["mrr"] - runs["1 GPU in memory"]["mrr"]

    def train(key, name, graph, epochs, out_of_core_run):
        runs = results[key].setdefault(name, {})
        train_one_gpu(args, name, graph, runs, epochs, out_of_core_run)
        save()
        for world in gpus:
            run = spawn(world, TrainJob(args, name, graph, epochs))
            runs[f"{world} GPUs"] = run
            print(name, world, "GPUs", json.dumps({k: v for k, v in run.items()
                                                   if k != "epochs"}), flush=True)
            save()
        for world in gpus if args.split and out_of_core_run else ():
            run = spawn(world, TrainJob(args, name, graph, epochs, args.split))
            run["speedup_over_1_gpu_out_of_core"] = (
                median_epoch(runs["1 GPU out of core (3 of 8 partitions)"]) / median_epoch(run))
            runs[f"{world} GPUs out of core (3 of {2 * args.split} partitions per GPU)"] = run
            print(name, world, "GPUs out of core", json.dumps(
                {k: v for k, v in run.items() if k != "epochs"}), flush=True)
            save()
        compare(runs)
        save()

    if "wn18" in args.parts:
        # Equal MRR on a real graph: WordNet's, the filtered protocol.
        stored = np.load(args.wn18)
        graph = args.workdir / "wn18.npz"
        np.savez(graph, train=stored["train"], test=stored["test"],
                 known=np.concatenate([stored["train"], stored["valid"], stored["test"]]),
                 entities=int(stored["num_entities"]), relations=int(stored["num_relations"]))
        results["wn18"] = {"dataset": {"entities": int(stored["num_entities"]),
                                       "train": len(stored["train"]),
                                       "test": len(stored["test"])}}
        train("wn18", "distmult", graph, args.wn18_epochs, False)
    if "train" in args.parts:
        graph = dataset(args)
        data = np.load(graph)
        results["dataset"] = {"name": "wikikg2_like", "scale": args.scale,
                              "entities": int(data["entities"]),
                              "relations": int(data["relations"]),
                              "train": len(data["train"]), "test": len(data["test"])}
        for name in args.models:
            train("training", name, graph, args.epochs, args.out_of_core)
    if "pbg" in args.parts:
        # The baseline on the same graph: PyTorch-BigGraph's distributed
        # mode (bench_pbg_distributed.py), on 1 and N machines of this host.
        import bench_pbg_distributed as pbg
        graph = dataset(args)
        options = argparse.Namespace(dim=args.dim, epochs=args.epochs, batch=args.batch,
                                     negatives=args.negatives, lr=args.pbg_lr,
                                     workers=args.pbg_workers, partitions=1)
        for name in args.models:
            # (PBG's machines are CPU processes: as many as the GPUs asked for.)
            for machines in args.pbg_machines or [1] + list(args.gpus):
                run = pbg.run(options, name, graph, machines, args.workdir)
                results["pbg"][f"{name} {machines} machines"] = run
                print("pbg", name, machines, json.dumps(run), flush=True)
                save()
    if "gram" in args.parts:
        X = molecules(args.data)
        kernel = gram_kernel()
        kernel(X[:64])
        times = []
        for _ in range(2):
            torch.cuda.synchronize()
            start = time.perf_counter()
            k = kernel(X)
            times.append(time.perf_counter() - start)
        reference = args.workdir / "gram-1gpu.npy"
        np.save(reference, k)
        results["gram"] = {"molecules": len(X), "pairs": len(X) * (len(X) + 1) // 2,
                           "1 GPU kernel call": {"seconds": times, "timings": kernel.timings,
                                                 "copies_to_host": one_rank(copy_variants,
                                                                            k.shape)}}
        print("gram 1 GPU", times, flush=True)
        for world in [1] + gpus:
            run = spawn(world, GramJob(args.data, reference))
            run["speedup_over_1_gpu"] = min(times) / min(run["seconds"])
            run["root0_speedup_over_1_gpu"] = min(times) / min(run["root0_seconds"])
            results["gram"][f"{world} GPUs (kge.distributed.gram)"] = run
            print("gram", world, json.dumps(run), flush=True)
            save()
    save()


if __name__ == "__main__":
    main()
