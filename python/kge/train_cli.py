"""`kge-train`: trains a KGE model on the GPU with KGE's kernels.

    kge-train --model distmult --data wn18like.npz --dim 128 --epochs 20 \\
        --checkpoint distmult.ckpt --log distmult.json --progress

The data file holds `train`, `valid` and `test` ([N, 3] head, relation,
tail), `num_entities` and `num_relations` (bench/bench_training.py
--prepare writes the WN18-like graph so). The kernels come from --bundles
(a directory of <example>.fwd.D<dim>.kgebundle and
<example>.grad.D<dim>.kgebundle, test/gpu/build_gradient_bundles.py) or are
compiled when the compiler is installed. Each epoch's loss and time, and
the filtered validation MRR every --eval-every epochs, go to --log (JSON,
rewritten after every epoch; bench/plot_training.py draws it); the
checkpoint is written atomically after every epoch and --resume continues
from it. The test set's filtered MRR and Hits@1/3/10 end the run.
Errors (a missing or malformed file, a checkpoint of another model, a
non-finite loss) end it with a message and exit status 1.

    kge-train --gpus 4 --model transe_l2 --data big.npz --checkpoint ckpt/

trains on 4 GPUs of the host (kge.distributed: the entity embeddings
sharded by partition, NCCL): kge-train starts one process per GPU; under
torchrun (several hosts) each process it starts runs one rank. --checkpoint
is then a directory, written after every epoch (and every
--checkpoint-every rounds); a rank that dies stops the job with its error,
and --resume continues from the last complete state, mid-epoch.

    kge-train --model complex --data wn18like.npz --shared 512 --chunk 1024 \
        --batch-size 4096 --loss softmax

trains against chunked shared negatives (kge.shared_negatives): chunks of
--chunk positives, --shared entities per chunk and side, the products on
tile at TF32 (from --bundles' shared.tf32/ directory, or compiled);
DistMult, ComplEx and TransE-L2.
--device cpu trains with PyTorch's scores on the CPU (gloo between the
processes): a trial without a GPU.
"""

import argparse
import json
import os
import pathlib
import sys

import numpy as np

from . import shared_negatives, training
from .checkpoint import CheckpointError


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="kge-train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, choices=sorted(training.MODELS))
    parser.add_argument("--data", type=pathlib.Path, required=True)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--bundles", type=pathlib.Path)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--negatives", type=int, default=64)
    parser.add_argument("--loss", choices=training.LOSSES, default="softplus")
    parser.add_argument("--margin", type=float, default=1.0)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--optimizer", choices=training.OPTIMIZERS, default="adagrad")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--sampler", choices=training.SAMPLERS, default="uniform")
    parser.add_argument("--shared", type=int, default=0, metavar="N",
                        help="chunked shared negatives: N entities per chunk and side "
                        "(instead of --negatives per positive)")
    parser.add_argument("--chunk", type=int, default=1024,
                        help="positives per chunk of --shared negatives")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-every", type=int, default=0,
                        help="validation MRR every this many epochs (0: only the test at the end)")
    parser.add_argument("--checkpoint", type=pathlib.Path)
    parser.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    parser.add_argument("--log", type=pathlib.Path)
    parser.add_argument("--progress", action="store_true", help="a progress bar (tqdm)")
    parser.add_argument("--eager-step", action="store_true",
                        help="launch each step's kernels one by one instead of replaying the "
                        "step captured in a CUDA graph (one GPU, where it can be captured)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: PyTorch's scores on the CPU (a trial without a GPU)")
    parser.add_argument("--gpus", type=int, default=1,
                        help="processes (GPUs of this host) to train with (kge.distributed)")
    parser.add_argument("--checkpoint-every", type=int, default=0,
                        help="with --gpus: also checkpoint every this many rounds")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="with --gpus: seconds a rank waits for the others before failing")
    parser.add_argument("--out-of-core", type=pathlib.Path, metavar="DIR",
                        help="with --gpus: the partitions in files under DIR (shared by the "
                             "ranks), a buffer of --capacity of them per GPU")
    parser.add_argument("--split", type=int, default=2,
                        help="with --out-of-core: each GPU partition cut into this many")
    parser.add_argument("--capacity", type=int, default=3,
                        help="with --out-of-core: partitions in each GPU's buffer")
    args = parser.parse_args(argv)
    if args.checkpoint_every < 0:
        parser.error("--checkpoint-every must be >= 0")
    if args.out_of_core and args.gpus == 1 and int(os.environ.get("WORLD_SIZE", "1")) == 1:
        parser.error("--out-of-core trains on several ranks: give --gpus N (or start the ranks "
                     "with torchrun)")
    for name in ("dim", "epochs", "batch_size", "negatives", "gpus", "split", "capacity",
                 "chunk"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if args.shared < 0:
        parser.error("--shared must be positive (0: negatives per positive)")
    if args.shared and args.model not in shared_negatives.MODELS:
        parser.error(f"--shared: {args.model} has no shared-negative form (models with one: "
                     f"{', '.join(shared_negatives.MODELS)})")
    if args.resume and not args.checkpoint:
        parser.error("--resume needs --checkpoint")
    return args


def load_data(path):
    """(train, valid, test, num_entities, num_relations) of a data file,
    checked."""
    try:
        data = np.load(path)
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: not a readable .npz data file ({error})") from None
    missing = [k for k in ("train", "valid", "test", "num_entities", "num_relations")
               if k not in data.files]
    if missing:
        raise ValueError(f"{path} lacks {', '.join(missing)}")
    entities, relations = int(data["num_entities"]), int(data["num_relations"])
    parts = []
    for name in ("train", "valid", "test"):
        part = np.asarray(data[name])
        if part.ndim != 2 or part.shape[1] != 3 or not np.issubdtype(part.dtype, np.integer):
            raise ValueError(f"{path}: '{name}' must be an integer [N, 3] array, got "
                             f"{part.dtype} {part.shape}")
        if len(part) and (part.min() < 0 or part[:, [0, 2]].max() >= entities
                          or part[:, 1].max() >= relations):
            raise ValueError(f"{path}: '{name}' indexes beyond {entities} entities or "
                             f"{relations} relations")
        parts.append(part.astype(np.int64))
    if not len(parts[0]):
        raise ValueError(f"{path}: no training triples")
    return (*parts, entities, relations)


def bundles_for(args):
    if args.bundles:
        return training.load_bundles(args.bundles, args.model, args.dim)
    return tuple(b.text if b is not None else None
                 for b in training.compile_model(args.model, args.dim))


def _negatives(args):
    """--negatives, or the chunked shared negatives of --shared (their
    products on tile on the GPU: from --bundles/shared.tf32 or compiled)."""
    if not args.shared:
        return args.negatives
    products = None
    if args.device == "cuda":
        products = (shared_negatives.load_products(args.bundles / "shared.tf32") if args.bundles
                    else shared_negatives.compile_products())
    return shared_negatives.SharedNegatives(args.shared, args.chunk, products)


def _options(args):
    return dict(batch_size=args.batch_size, negatives=_negatives(args), loss=args.loss,
                margin=args.margin, temperature=args.temperature, optimizer=args.optimizer,
                lr=args.lr, sampler=args.sampler, seed=args.seed)


def run(args):
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return run_rank(args)
    if args.gpus > 1:
        return launch(args)
    train, valid, test, entities, relations = load_data(args.data)
    forward, gradient, outer_sum = (bundles_for(args) if args.device == "cuda"
                                    else (None, None, None))
    model = training.Model.create(args.model, forward, gradient, entities, relations, args.dim,
                                  seed=args.seed, eager=args.device == "cpu", device=args.device,
                                  outer_sum=outer_sum)
    trainer = training.Trainer(model, train, device=args.device,
                               graph=False if args.eager_step else "auto", **_options(args))
    if args.resume and args.checkpoint.exists():
        trainer.load(args.checkpoint)
        print(f"resumed {args.checkpoint} at epoch {trainer.epoch}", flush=True)

    def save():
        if args.checkpoint:
            trainer.save(args.checkpoint)

    return _epochs(args, trainer, lambda: model, save, (train, valid, test))


def _epochs(args, trainer, whole, save, data, lead=True):
    """Trains to --epochs, evaluating, logging and checkpointing; `whole()`
    gives the model to evaluate (None on the ranks that do not evaluate);
    only the `lead` prints and logs. Returns the test metrics."""
    train, valid, test = data
    known = np.concatenate([train, valid, test])

    def write_log(**extra):
        if args.log and lead:
            args.log.write_text(json.dumps({"model": args.model, "log": trainer.log, **extra},
                                           indent=2) + "\n")

    while trainer.epoch < args.epochs:
        record = trainer.train_epoch(progress=args.progress and lead)
        if args.eval_every and trainer.epoch % args.eval_every == 0 and len(valid):
            model = whole()
            if model is not None:
                record["valid"], _ = training.evaluate(model, valid, known)
        if lead:
            print(json.dumps(record), flush=True)
        save()
        write_log()
    result = {}
    if len(test):
        model = whole()
        if model is not None:
            result, _ = training.evaluate(model, test, known)
            print(json.dumps({"test": result}), flush=True)
    write_log(test=result)
    return result


class RankError(RuntimeError):
    """A rank of a multi-process run failed."""


def launch(args):
    """--gpus N on this host: N processes (torch.multiprocessing), each one
    rank; the first that fails stops the others, and its error ends the
    run."""
    import torch
    import torch.multiprocessing as mp
    from .distributed import free_port
    if args.device == "cuda" and args.gpus > torch.cuda.device_count():
        raise ValueError(f"--gpus {args.gpus}, but this host has {torch.cuda.device_count()} "
                         "GPU(s)")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                      WORLD_SIZE=str(args.gpus))
    try:
        mp.spawn(_rank_main, args=(sys.argv[1:] if args.argv is None else args.argv,),
                 nprocs=args.gpus, join=True)
    except mp.ProcessExitedException as error:
        raise RankError(f"rank {error.error_index} stopped with exit status "
                        f"{error.exit_code}; the other ranks were stopped") from None
    except mp.ProcessRaisedException as error:
        raise RankError(f"rank {error.error_index} failed; the other ranks were "
                        f"stopped:\n{error}") from None
    finally:
        for key in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE"):
            os.environ.pop(key, None)
    return {}


def _rank_main(rank, argv):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank))
    status = main(argv)
    if status:
        sys.exit(status)


def run_rank(args):
    """One rank of a distributed run (started by launch or torchrun)."""
    from . import distributed
    if args.resume and not args.checkpoint:
        raise ValueError("--resume needs --checkpoint")
    rank, _, device = distributed.init("nccl" if args.device == "cuda" else "gloo",
                                       timeout=args.timeout)
    try:
        train, valid, test, entities, relations = load_data(args.data)
        forward, gradient, outer_sum = (bundles_for(args) if args.device == "cuda"
                                        else (None, None, None))
        resume = bool(args.resume and (args.checkpoint / "latest.json").exists())
        trainer = distributed.DistributedTrainer(
            args.model, train, args.checkpoint, num_entities=entities,
            num_relations=relations, dim=args.dim, forward=forward, gradient=gradient,
            outer_sum=outer_sum,
            eager=args.device == "cpu", device=device, checkpoint_every=args.checkpoint_every,
            resume=resume, **_options(args), **({"out_of_core": args.out_of_core,
                                                  "split": args.split,
                                                  "capacity": args.capacity}
                                                 if args.out_of_core else {}))
        if resume and rank == 0:
            print(f"resumed {args.checkpoint} at epoch {trainer.epoch}, round "
                  f"{trainer.round}", flush=True)
        return _epochs(args, trainer, trainer.gather, lambda: None, (train, valid, test),
                       lead=rank == 0)
    finally:
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()


def main(argv=None):
    args = parse_args(argv)
    args.argv = argv
    from .distributed import DistributedError
    try:
        run(args)
    except (training.TrainingError, CheckpointError, FileNotFoundError, ValueError,
            RankError, DistributedError) as error:
        print(f"kge-train: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
