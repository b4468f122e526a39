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
"""

import argparse
import json
import pathlib
import sys

import numpy as np

from . import training
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
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-every", type=int, default=0,
                        help="validation MRR every this many epochs (0: only the test at the end)")
    parser.add_argument("--checkpoint", type=pathlib.Path)
    parser.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    parser.add_argument("--log", type=pathlib.Path)
    parser.add_argument("--progress", action="store_true", help="a progress bar (tqdm)")
    args = parser.parse_args(argv)
    for name in ("dim", "epochs", "batch_size", "negatives"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
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
    forward, gradient = training.compile_model(args.model, args.dim)
    return forward.text, gradient.text


def run(args):
    train, valid, test, entities, relations = load_data(args.data)
    forward, gradient = bundles_for(args)
    model = training.Model.create(args.model, forward, gradient, entities, relations, args.dim,
                                  seed=args.seed)
    trainer = training.Trainer(model, train, batch_size=args.batch_size,
                               negatives=args.negatives, loss=args.loss, margin=args.margin,
                               temperature=args.temperature, optimizer=args.optimizer,
                               lr=args.lr, sampler=args.sampler, seed=args.seed)
    if args.resume and args.checkpoint.exists():
        trainer.load(args.checkpoint)
        print(f"resumed {args.checkpoint} at epoch {trainer.epoch}", flush=True)
    known = np.concatenate([train, valid, test])
    while trainer.epoch < args.epochs:
        record = trainer.train_epoch(progress=args.progress)
        if args.eval_every and trainer.epoch % args.eval_every == 0 and len(valid):
            metrics, _ = training.evaluate(model, valid, known)
            record["valid"] = metrics
        print(json.dumps(record), flush=True)
        if args.checkpoint:
            trainer.save(args.checkpoint)
        if args.log:
            args.log.write_text(json.dumps({"model": args.model, "log": trainer.log}, indent=2)
                                + "\n")
    result = {}
    if len(test):
        result, _ = training.evaluate(model, test, known)
        print(json.dumps({"test": result}), flush=True)
    if args.log:
        args.log.write_text(json.dumps({"model": args.model, "log": trainer.log,
                                        "test": result}, indent=2) + "\n")
    return result


def main(argv=None):
    args = parse_args(argv)
    try:
        run(args)
    except (training.TrainingError, CheckpointError, FileNotFoundError, ValueError) as error:
        print(f"kge-train: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
