"""One rank of the distributed tests (test_distributed.py), started by
torchrun with the gloo backend: trains DistMult on the clustered graph
with kge.distributed.DistributedTrainer and computes a Gram matrix with
kge.distributed.gram; rank 0 writes the gathered tables, the log and the
matrix to --out. --die-after E:R makes rank 1 exit abruptly after round R
of epoch E (after its checkpoint); --resume continues from --directory;
--split M trains out of core (each of the 2N partitions cut in M, in
files under --directory).
The in-process reference (ThreadGroup) is `run` with another group."""

import argparse
import json
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

from graphs import clustered  # noqa: E402

TRAIN, TEST, ALL = clustered()
ENTITIES, RELATIONS = 900, 6


def trainer(group, directory, resume=False, name="distmult", **options):
    from kge import distributed
    settings = dict(num_entities=ENTITIES, num_relations=RELATIONS, dim=16, group=group,
                    eager=True, device="cpu", batch_size=512, negatives=8, lr=0.05,
                    checkpoint_every=1, resume=resume)
    settings.update(options)
    return distributed.DistributedTrainer(name, TRAIN, directory, **settings)


def out_of_core(directory, split):
    """The trainer's options out of core: the partition files beside the
    checkpoints, each of the 2N partitions cut in `split`, a buffer of 3."""
    return {"out_of_core": pathlib.Path(directory) / "live", "split": split, "capacity": 3}


def gram_graphs():
    from kge import kron
    rng = np.random.default_rng(3)
    return [kron.random_labeled_graph(rng, int(rng.integers(3, 9)), 0.5) for _ in range(7)]


def gram_kernel(normalize=True):
    from kge import kron
    return kron.MarginalizedGraphKernel(
        kron.TensorProduct(label=kron.KroneckerDelta(0.5)),
        kron.TensorProduct(length=kron.SquareExponential(1.0)), q=0.1, normalize=normalize,
        device="cpu")


def run(group, directory, epochs, die_after=None, resume=False, **options):
    """Trains to `epochs` epochs; returns (tables on rank 0, log, Gram
    matrices, whether the shared Gram preparation equals the whole)."""
    from kge import distributed
    t = trainer(group, directory, resume, **options)

    def after_round(t, r):
        if die_after == (t.epoch, r) and t.rank == 1:
            os._exit(17)

    while t.epoch < epochs:
        t.train_epoch(after_round=after_round)
    model = t.gather()
    X = gram_graphs()
    grams = [distributed.gram(gram_kernel(), X, group=group),
             distributed.gram(gram_kernel(False), X[:3], X[3:], group=group),
             distributed.gram(gram_kernel(), X[:3], X[3:], group=group)]
    shared = shared_preparation_equal(X, group)
    if model is None:
        return None
    tables = {n: v.detach().cpu().numpy() for n, v in model.tables.items()}
    return tables, t.log, grams, shared


def shared_preparation_equal(X, group):
    """Whether the datasets packed and tiled a block per rank
    (kge.distributed.blocks, the GPU Gram's preparation) equal them packed
    and tiled here at once."""
    from kge import distributed, kron
    whole = kron.pack(X, ["label"], ["length"])
    packed = kron.pack_shared(X, ["label"], ["length"], share=distributed.blocks(group))
    args = [whole[k] for k in ("nodes", "node_labels", "edges", "ends", "weights", "edge_labels")]
    tiles = kron.octile_parts(*args, order="auto")
    shared = kron.octiles_shared(*args, order="auto", share=distributed.blocks(group))
    return all(np.array_equal(whole[k], packed[k]) for k in whole) and \
        all(np.array_equal(tiles[k], shared[k]) for k in tiles)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--directory", type=pathlib.Path, required=True)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--die-after")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--split", type=int, help="out of core, each partition cut in SPLIT")
    args = parser.parse_args()
    from kge import distributed
    rank, world, _ = distributed.init("gloo", timeout=60)
    die = tuple(map(int, args.die_after.split(":"))) if args.die_after else None
    options = out_of_core(args.directory, args.split) if args.split else {}
    result = run(distributed.TorchGroup(), args.directory, args.epochs, die, args.resume,
                 **options)
    if rank == 0:
        tables, log, grams, shared = result
        np.savez(args.out, **tables, **{f"gram{i}": g for i, g in enumerate(grams)})
        args.out.with_suffix(".json").write_text(json.dumps({"world": world, "log": log,
                                                             "shared": shared}))
    # Leave together: gloo's threads torn down under a live group abort.
    import torch.distributed as dist
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
