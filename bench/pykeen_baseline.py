"""PyKEEN as a training baseline (bench_training.py): the same model,
embedding size, loss, optimizer, learning rate, batch size and number of
negatives per positive as KGE's run, through PyKEEN's stochastic local
closed-world training loop (sLCWA) on the GPU, evaluated by PyKEEN's
filtered rank-based evaluator (both sides, realistic ranks: ties count
half, as kge.training.evaluate does).

Two settings. Default (`aligned=False`): the model as PyKEEN's users get
it — its initializers (Xavier; ComplEx standard normal), TransE's and
DistMult's unit-norm entity constraint applied after each step,
ComplEx's L2 regularizer; only DistMult's regularizer is turned off.
`aligned=True`: the model KGE trains — every table uniform in
[-1/sqrt(D), 1/sqrt(D)] (RotatE's relation phases stay uniform angles, as
in KGE), no constraint, no regularizer, RotatE's distance the L1 norm of
the moduli (PyKEEN's default is their L2 norm) — so that the MRRs compare
the same model. Both: PyKEEN's uniform negative sampler corrupting head or
tail, automatic memory optimization (its batch-size search) off.

PyKEEN 1.11 and its dependencies missing from the GPU machine's image
travel as wheels (bench/NOTES.md)."""

import statistics
import time

# KGE's model name: PyKEEN's model and its keyword arguments.
MODELS = {
    "transe_l2": ("TransE", {"scoring_fct_norm": 2}),
    "distmult": ("DistMult", {"regularizer": None}),
    "complex": ("ComplEx", {}),
    "rotate": ("RotatE", {}),
    # PyKEEN's TransR clamps the projected entities' norms to at most 1
    # inside its interaction (KGE's does not): even aligned, another model.
    "transr": ("TransR", {"scoring_fct_norm": 2}),
}


def available():
    """Whether PyKEEN can be imported here (None) or why not."""
    import importlib
    try:
        importlib.import_module("pykeen.training")
    except Exception as error:  # noqa: BLE001 - any import failure is reported
        return f"{type(error).__name__}: {error}"
    return None


def _aligned(name, dim):
    """PyKEEN keyword arguments that make model `name` KGE's (see above)."""
    import math
    import torch
    scale = 1 / math.sqrt(dim)

    def uniform(x):
        with torch.no_grad():
            (torch.view_as_real(x) if x.is_complex() else x).uniform_(-scale, scale)
        return x

    kwargs = {"entity_initializer": uniform}
    if name != "rotate":
        kwargs["relation_initializer"] = uniform
    if name in ("transe_l2", "distmult"):
        kwargs["entity_constrainer"] = None
    if name in ("distmult", "complex"):
        kwargs["regularizer"] = None
    if name == "transr":
        def identity(x):
            with torch.no_grad():
                flat = x.view(-1, dim * dim)
                flat.copy_(torch.eye(dim, device=x.device, dtype=x.dtype).reshape(1, -1)
                           .expand_as(flat))
            return x
        kwargs.update(entity_constrainer=None, relation_constrainer=None,
                      relation_projection_initializer=identity)
    return kwargs


def _rotate_l1():
    """PyKEEN's RotatE interaction with the paper's distance, the L1 norm of
    the moduli: PyKEEN 1.11's forward takes the L2 norm whatever its `p`."""
    from pykeen.nn.modules import RotatEInteraction
    from pykeen.utils import ensure_complex, negative_norm

    class RotatEL1(RotatEInteraction):
        def forward(self, h, r, t):
            h, r, t = ensure_complex(h, r, t)
            return negative_norm(h * r - t, p=1, power_norm=False)

    return RotatEL1(p=1)


def train(name, train_triples, test, known, entities, relations, *, dim, batch, negatives,
          epochs, loss, optimizer, lr, margin, seed=0, aligned=False):
    """Trains model `name` with PyKEEN for `epochs` epochs; returns {epoch_seconds,
    median_epoch_seconds, final_loss, mrr, hits@1, hits@3, hits@10, version}."""
    import numpy as np
    import pykeen
    import torch
    from pykeen import losses, models
    from pykeen.evaluation import RankBasedEvaluator
    from pykeen.training import SLCWATrainingLoop
    from pykeen.training.callbacks import TrainingCallback
    from pykeen.triples import CoreTriplesFactory

    if name not in MODELS:
        raise ValueError(f"no PyKEEN model for {name!r} (known: {sorted(MODELS)})")
    model_name, model_kwargs = MODELS[name]
    model_kwargs = {**model_kwargs, **(_aligned(name, dim) if aligned else {})}
    if name == "transr":
        model_kwargs["relation_dim"] = dim
    device = torch.device("cuda")

    def mapped(triples):
        return torch.as_tensor(np.asarray(triples, np.int64))

    factory = CoreTriplesFactory.create(mapped(train_triples), num_entities=entities,
                                        num_relations=relations)
    if loss == "softplus":
        loss_instance = losses.SoftplusLoss()
    elif loss == "adversarial":
        loss_instance = losses.NSSALoss(margin=margin, adversarial_temperature=1.0)
    elif loss == "softmax":
        loss_instance = losses.CrossEntropyLoss()
    else:
        raise ValueError(f"no PyKEEN loss for {loss!r}")
    model = getattr(models, model_name)(triples_factory=factory, embedding_dim=dim,
                                        loss=loss_instance, random_seed=seed,
                                        **model_kwargs).to(device)
    if aligned and name == "rotate":
        model.interaction = _rotate_l1()
    optimizers = {"adagrad": torch.optim.Adagrad, "adam": torch.optim.Adam}
    loop = SLCWATrainingLoop(model=model, triples_factory=factory,
                             optimizer=optimizers[optimizer](model.parameters(), lr=lr),
                             negative_sampler="basic",
                             negative_sampler_kwargs={"num_negs_per_pos": negatives},
                             automatic_memory_optimization=False)
    marks = []

    class Clock(TrainingCallback):
        def post_epoch(self, epoch, epoch_loss, **kwargs):
            torch.cuda.synchronize()
            marks.append(time.perf_counter())

    torch.cuda.synchronize()
    marks.append(time.perf_counter())
    epoch_losses = loop.train(triples_factory=factory, num_epochs=epochs, batch_size=batch,
                              use_tqdm=False, use_tqdm_batch=False, callbacks=[Clock()])
    times = [b - a for a, b in zip(marks, marks[1:])]
    evaluator = RankBasedEvaluator(filtered=True)
    result = evaluator.evaluate(model, mapped(test), batch_size=256, use_tqdm=False,
                                additional_filter_triples=[mapped(known)])
    metric = "both.realistic.{}"
    return {"epoch_seconds": times, "median_epoch_seconds": statistics.median(times),
            "final_loss": float(epoch_losses[-1]),
            "mrr": float(result.get_metric(metric.format("inverse_harmonic_mean_rank"))),
            **{f"hits@{k}": float(result.get_metric(metric.format(f"hits_at_{k}")))
               for k in (1, 3, 10)},
            "version": pykeen.get_version()}
