"""Training beyond device memory (kge.out_of_core.OutOfCoreTrainer) on the
CPU: every edge trained once per epoch with the order's loads, the model
learns as in memory, checkpoints resume exactly, and bad partition files,
buffers and triples are refused."""

import re

import numpy as np
import pytest
import torch

from kge import checkpoint, out_of_core as ooc, partition_order as po, training
from graphs import clustered

TRAIN, TEST, ALL = clustered()
ENTITIES, RELATIONS = 900, 6


def make(directory, name="distmult", partitions=9, capacity=3, **options):
    settings = dict(num_entities=ENTITIES, num_relations=RELATIONS, dim=16,
                    partitions=partitions, capacity=capacity, eager=True, device="cpu",
                    batch_size=512, negatives=8, lr=0.05)
    triples = options.pop("triples", TRAIN)
    settings.update(options)
    return ooc.OutOfCoreTrainer(name, triples, directory, **settings)


@pytest.mark.parametrize("partitions,capacity,order", [(9, 3, "legend"), (6, 3, "beta"),
                                                       (8, 4, "beta"), (4, 5, "legend")])
def test_an_epoch_trains_every_edge_once_with_the_orders_loads(tmp_path, partitions, capacity,
                                                               order):
    t = make(tmp_path, partitions=partitions, capacity=capacity, order=order)
    seen = []
    step = t.step

    def counting(batch):
        seen.append(t.describe(batch).count("("))
        return step(batch)

    t.step = counting
    record = t.train_epoch()
    assert sum(seen) == len(TRAIN)
    states = [tuple(range(partitions))] if capacity >= partitions else (
        po.legend_order(partitions) if order == "legend" else po.beta_order(partitions, capacity))
    assert record["loads"] == (po.io_count(states) if len(states) > 1 else partitions)
    # Swaps write back what they evict; the last state stays in the buffer
    # for the next epoch, which walks the order backwards from it.
    rows = np.diff(t.ranges)
    assert record["bytes_stored"] == sum(int(rows[step[2]]) for step in t.plan[:-1]) * 16 * 4 * 2
    again = t.train_epoch()
    assert again["loads"] == len(states) - 1 and sum(seen) == 2 * len(TRAIN)
    t.flush()
    assert t.store.stores == 2 * (len(states) - 1) + t.capacity
    # Each load moves one partition: embeddings and Adagrad's state.
    rows = np.diff(t.ranges)
    assert record["bytes_loaded"] >= record["loads"] * rows.min() * 16 * 4 * 2


def test_out_of_core_training_learns_like_training_in_memory(tmp_path):
    model = training.Model.create("distmult", None, None, ENTITIES, RELATIONS, 16, eager=True,
                                  device="cpu")
    memory = training.Trainer(model, TRAIN, batch_size=512, negatives=8, device="cpu", lr=0.05)
    for _ in range(8):
        memory.train_epoch()
    in_memory, _ = training.evaluate(model, TEST, ALL)
    mrr = {}
    for capacity in (9, 3):
        t = make(tmp_path / str(capacity), capacity=capacity)
        for _ in range(8):
            t.train_epoch()
        mrr[capacity] = training.evaluate(t.gather(), TEST, ALL)[0]["mrr"]
    # Every partition in the buffer: the same training but for the
    # sampler's draws. A third of them: buckets in the order's sequence and
    # negatives from the buffer change what 8 epochs of this small graph
    # learn (random ranking: MRR ~ 0.008).
    assert in_memory["mrr"] > 0.08
    assert mrr[9] == pytest.approx(in_memory["mrr"], rel=0.15)
    assert mrr[3] > 0.4 * in_memory["mrr"]


def test_transr_trains_out_of_core(tmp_path):
    """TransR out of core: its matrices stay on the device with the relation
    vectors, the entity rows move by partition; the loss falls and the
    gathered model is TransR's."""
    t = make(tmp_path, "transr", loss="margin", margin=2.0)
    losses = [t.train_epoch()["loss"] for _ in range(3)]
    assert losses[-1] < 0.9 * losses[0], losses
    model = t.gather()
    assert model.tables["Pm"].shape == (RELATIONS, 16, 16)
    assert model.tables["Eemb"].shape == (ENTITIES, 16)
    metrics, _ = training.evaluate(model, TEST, ALL)
    assert metrics["mrr"] > 0


@pytest.mark.parametrize("sampler", training.SAMPLERS)
def test_negatives_come_from_the_partitions_in_the_buffer(tmp_path, sampler):
    # The graph's own numbering: its power-law heads are the low ids.
    t = make(tmp_path, sampler=sampler, shuffle=False)
    t.train_epoch()
    t.close()  # writes the buffer back and empties it
    engine = ooc._SwapEngine(t, overlap=False)
    engine.load_state((0, 4, 7))
    with pytest.raises(ValueError, match="no room for partitions \\[1\\]: the buffer has 0 "
                                         "free slots of 3"):
        engine.load_state((1,))
    rows = torch.tensor([0, t.rows + 3, 2 * t.rows + 5])
    drawn = t.corruptions(rows, rows, torch.ones(3, 1, dtype=torch.bool), 4000)
    slot, row = drawn // t.rows, drawn % t.rows
    sizes = torch.tensor([int(np.diff(t.ranges)[p]) for p in (0, 4, 7)])
    assert bool((row < sizes[slot]).all())
    assert set(slot.unique().tolist()) == {0, 1, 2}
    if sampler == "degree":
        # Popular entities (low ids: the graph's power-law heads) drawn more.
        counts = torch.bincount(drawn[slot == 0].reshape(-1), minlength=t.rows)
        assert counts[:10].sum() > 2 * counts[-10:].sum()


@pytest.mark.parametrize("optimizer", training.OPTIMIZERS)
def test_resuming_continues_as_if_uninterrupted(tmp_path, optimizer):
    straight = make(tmp_path / "a", "transe_l2", optimizer=optimizer)
    for _ in range(3):
        straight.train_epoch()
    stopped = make(tmp_path / "b", "transe_l2", optimizer=optimizer)
    for _ in range(2):
        stopped.train_epoch()
    stopped.save(tmp_path / "b.ckpt")
    resumed = make(tmp_path / "b", "transe_l2", optimizer=optimizer, seed=5,
                   resume=tmp_path / "b.ckpt")
    assert resumed.epoch == 2
    resumed.train_epoch()
    a, b = straight.store.gather(), resumed.store.gather()
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name]), name
    assert torch.equal(straight.model.tables["Remb"], resumed.model.tables["Remb"])


def test_bad_partition_files_are_refused_whole(tmp_path):
    t = make(tmp_path)
    t.train_epoch()
    t.save(tmp_path / "model.ckpt")
    # A partition the next epoch loads (not one the buffer holds).
    p = min(set(range(9)) - set(t.slot_of))
    path = t.store.path(p)
    good = path.read_bytes()
    path.write_bytes(good[:len(good) // 2])
    with pytest.raises(checkpoint.CheckpointError, match=f"partition-{p}.kge is truncated"):
        t.train_epoch()
    with pytest.raises(checkpoint.CheckpointError, match=f"partition-{p}.kge is truncated"):
        make(tmp_path, resume=tmp_path / "model.ckpt")
    path.write_bytes(good)
    other = make(tmp_path / "other", "distmult", dim=16, optimizer="adam")
    path.write_bytes(other.store.path(p).read_bytes())
    with pytest.raises(checkpoint.CheckpointError, match="belongs to model"):
        make(tmp_path, resume=tmp_path / "model.ckpt")
    path.write_bytes(t.store.path(p + 1).read_bytes())
    with pytest.raises(checkpoint.CheckpointError,
                       match=f"holds partition {p + 1} .* not partition {p}"):
        make(tmp_path, resume=tmp_path / "model.ckpt")


def test_buffers_orders_and_triples_that_cannot_work_are_refused(tmp_path):
    with pytest.raises(ValueError, match="smaller than the order needs: 3 partitions of"):
        make(tmp_path, buffer_bytes=10_000)
    with pytest.raises(ValueError, match="cannot hold the two partitions of a bucket"):
        make(tmp_path, capacity=1)
    with pytest.raises(ValueError, match="Legend's order is for a buffer of 3 partitions, not 4"):
        make(tmp_path, capacity=4)
    with pytest.raises(ValueError, match="unknown partition order 'snake'"):
        make(tmp_path, order="snake")
    with pytest.raises(ValueError, match="beyond the model's tables"):
        make(tmp_path, triples=np.array([[0, 0, ENTITIES]]))
    with pytest.raises(ValueError, match="cannot make 1000 non-empty partitions"):
        make(tmp_path, partitions=1000)


def test_a_non_finite_loss_names_its_triples_by_entity(tmp_path):
    t = make(tmp_path)
    # Poison the file of partition 8: only its entities' edges turn NaN.
    arrays, meta = checkpoint.load(t.store.path(8), "partition", t.fingerprint())
    arrays["Eemb"][:] = np.nan
    t.store.store(8, arrays)
    with pytest.raises(training.TrainingError, match=r"first triples: \(\d+, \d+, \d+\)") as e:
        t.train_epoch()
    # The message names the batch's triples by entity id (buffer rows
    # mapped back): triples of the training set.
    named = [tuple(int(x) for x in m) for m in re.findall(r"\((\d+), (\d+), (\d+)\)", str(e.value))]
    known = set(map(tuple, TRAIN.tolist()))
    assert named and all(triple in known for triple in named)
