"""KGE on several processes (kge.distributed) on the CPU with gloo: the
round schedule's properties, training across ranks equal to the same
ranks run as threads of one process, every edge trained once per epoch,
Gram matrices equal to the one-process kernel's bit for bit, a rank that
dies stopping the job (never a hang) with a checkpoint that resumes to the
uninterrupted result, and bad checkpoints and settings refused."""

import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from kge import checkpoint, distributed as kd, partition_order as po, training
import distributed_worker as worker

HERE = pathlib.Path(__file__).resolve().parent


# -- the schedule -------------------------------------------------------------

@pytest.mark.parametrize("world", [1, 2, 3, 4, 5, 8])
def test_circle_rounds_meet_every_pair_once_and_move_partitions_to_neighbours(world):
    rounds = po.circle_rounds(world)
    n = 2 * world
    assert len(rounds) == n - 1
    met = np.zeros((n, n), int)
    for r, pairs in enumerate(rounds):
        held = [p for pair in pairs for p in pair]
        assert sorted(held) == list(range(n)), f"round {r} does not hold every partition once"
        for a, b in pairs:
            met[a, b] += 1
            met[b, a] += 1
        moves = po.round_moves(rounds, r)
        for g in range(world):
            sent = [m for m in moves if m[1] == g]
            received = [m for m in moves if m[2] == g]
            assert len(sent) <= 2 and len(received) <= 2
            # At most one partition each way per phase (leftward, rightward).
            assert len([m for m in sent if m[2] < g]) <= 1
            assert len([m for m in sent if m[2] > g]) <= 1
        assert all(abs(source - target) == 1 for _, source, target in moves)
    assert (met + np.eye(n, dtype=int) == 1).all()
    # Every bucket's edges once: pairs both ways, own buckets in chunks.
    covered = {}
    for r in range(len(rounds)):
        for g in range(world):
            for bucket in po.round_buckets(rounds, r, g):
                covered.setdefault(bucket[:2], []).append(bucket[2:])
    assert len(covered) == n * n
    for (a, b), chunks in covered.items():
        if a == b:
            assert sorted(chunks) == [(k, n - 1) for k in range(n - 1)]
        else:
            assert chunks == [()]


def _file_loads_at_round_starts(rounds, split, labels, states):
    """Per GPU and round: the first state's partitions that no GPU holds at
    the end of the round before (loaded from files), with labels[r][g]."""
    def walk(r, g):
        perm, backwards = labels[r][g]
        ids = [p * split + k for p in rounds[r][g] for k in range(split)]
        walked = [{ids[perm[i]] for i in state} for state in states]
        return walked[::-1] if backwards else walked
    loads = 0
    for r in range(len(rounds)):
        held = set().union(*(walk(r - 1, g)[-1] for g in range(len(rounds[0]))))
        loads += sum(len(walk(r, g)[0] - held) for g in range(len(rounds[0])))
    return loads


@pytest.mark.parametrize("world,split,expected", [(2, 2, 0), (4, 2, 0), (2, 3, 0), (5, 3, 0),
                                                   (4, 4, 0), (3, 4, 1)])
def test_round_labels_start_rounds_from_what_the_gpus_hold(world, split, expected):
    """The walks are relabelled so that a round's first state holds what the
    GPUs end the round before with: with partitions cut in 2 or 3 no round
    loads its first state from files (on 2 GPUs cut in 2, 6 loads an epoch
    with every walk labelled alike; on 4, 28); cut in 4, none on 4 GPUs and
    1 of 45 on 3 (30 alike)."""
    from kge import out_of_core
    rounds = po.circle_rounds(world)
    states, _ = out_of_core.buffer_order(2 * split, 3, "legend")
    labels = po.round_labels(rounds, split, states)
    alike = [[(tuple(range(2 * split)), False)] * world for _ in rounds]
    assert _file_loads_at_round_starts(rounds, split, labels, states) == expected
    assert _file_loads_at_round_starts(rounds, split, alike, states) > expected
    for r in range(len(rounds)):
        for perm, backwards in labels[r]:
            assert sorted(perm) == list(range(2 * split)) and backwards in (False, True)
    assert po.round_labels(rounds, split, states) == labels  # every rank computes the same
    # One labelling per (shared, first-only, last-only) choice of parts and
    # direction: Legend's first and last states over 4 share 2 positions.
    labelings = [label for label, _, _ in po._labelings(states, 2 * split)]
    assert len(set(labelings)) == len(labelings)
    if split == 2:
        assert len(po._labelings(states, 4)) == 2 * 6 * 2
    with pytest.raises(ValueError, match=f"not an order over {2 * split + 2} partitions"):
        po.round_labels(rounds, split + 1, states)


def test_handover_keeps_passes_and_writes_back():
    # GPU 0 ends with {0, 1, 2} and starts with {0, 1, 5}; GPU 1 ends with
    # {4, 5, 6} and starts with {2, 3, 4}: 0, 1 and 4 stay, 2 and 5 pass,
    # 6 goes to its file, 3 is loaded from its file by GPU 1.
    writes, phases = po.handover([(0, 1, 2), (4, 5, 6)], [(0, 1, 5), (2, 3, 4)], 3)
    assert writes == [[], [6]]
    # GPU 1's written slot takes 2 first; GPU 0 takes 5 once 2 has left.
    assert phases == [[(2, 0, 1, None)], [(5, 1, 0, None)]]
    # Two disjoint swaps of full buffers go in one phase.
    writes, phases = po.handover([(0, 1, 2), (3, 4, 5), (6, 7, 8), (9, 10, 11)],
                                 [(0, 1, 3), (2, 4, 5), (6, 7, 9), (8, 10, 11)], 3)
    assert writes == [[], [], [], []]
    assert phases == [[(2, 0, 1, 3), (3, 1, 0, 2), (8, 2, 3, 9), (9, 3, 2, 8)]]
    # Two full buffers that swap partitions: each receives into the slot it
    # sends from.
    writes, phases = po.handover([(0, 1, 2), (3, 4, 5)], [(0, 1, 3), (2, 4, 5)], 3)
    assert writes == [[], []] and phases == [[(2, 0, 1, 3), (3, 1, 0, 2)]]
    # A cycle of three full GPUs, and a fourth that waits for a slot.
    writes, phases = po.handover([(0, 1, 2), (3, 4, 5), (6, 7, 8), (9, 10)],
                                 [(0, 1, 3), (4, 5, 6), (2, 7, 8), (9, 10)], 3)
    assert writes == [[], [], [], []]
    assert phases == [[(2, 0, 2, 6), (3, 1, 0, 2), (6, 2, 1, 3)]]
    writes, phases = po.handover([(0, 1, 2), (3, 4, 5), (9, 10)],
                                 [(0, 1, 3), (2, 4, 5), (9, 10)], 3)
    assert phases == [[(2, 0, 1, 3), (3, 1, 0, 2)]]
    # A buffer with a free slot receives at once.
    writes, phases = po.handover([(0, 1), (3, 4, 5)], [(0, 1, 3), (4, 5)], 3)
    assert writes == [[], []] and phases == [[(3, 1, 0, None)]]
    with pytest.raises(ValueError, match="first states of GPUs 0 and 1"):
        po.handover([(0,), (1,)], [(0, 2), (2,)], 3)
    with pytest.raises(ValueError, match="do not fit a buffer of 2"):
        po.handover([(0, 1, 2), (3,)], [(0, 1), (3,)], 2)


def test_a_bad_number_of_ranks_is_refused():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="positive number of GPUs"):
            po.circle_rounds(bad)


def test_dealing_by_cost_balances_the_ranks():
    rng = np.random.default_rng(0)
    costs = np.sort(rng.pareto(1.5, 5000) * 100)[::-1]
    for world in (2, 3, 4):
        rank = kd.snake(len(costs), world)
        loads = np.bincount(rank, weights=costs, minlength=world)
        assert sorted(set(rank.tolist())) == list(range(world))
        assert loads.max() - loads.min() <= costs.max()


# -- training -------------------------------------------------------------------

def threads(world, directory, epochs=2, **options):
    """The worker's training with `world` ranks as threads of this process."""
    def run(group):
        t = worker.trainer(group, directory, **options)
        for _ in range(epochs):
            t.train_epoch()
        model = t.gather()
        tables = None if model is None else {
            n: v.detach().numpy() for n, v in model.tables.items()}
        return t, tables
    return kd.ThreadGroup.run(world, run)


def test_an_epoch_trains_every_edge_once_and_keeps_relation_copies_equal(tmp_path):
    results = threads(3, tmp_path, epochs=1)
    trainers = [t for t, _ in results]
    assert sum(t.log[0]["edges"] for t in trainers) == len(worker.TRAIN)
    # Every rank trained about as many edges (the ids are shuffled).
    edges = [t.log[0]["edges"] for t in trainers]
    assert max(edges) < 1.25 * min(edges)
    for name in trainers[0].relation_tables:
        for t in trainers[1:]:
            assert torch.equal(t.model.tables[name], trainers[0].model.tables[name])
            assert torch.equal(t.optimizer.state[name][0], trainers[0].optimizer.state[name][0])
    # The gathered tables are every entity's, in id order (the entity's
    # row in its partition mapped back).
    tables = results[0][1]
    t = trainers[0]
    assert tables["Eemb"].shape == (worker.ENTITIES, 16)
    for p, slot in t.slot_of.items():
        begin, end = t.ranges[p], t.ranges[p + 1]
        ids = t.entity_ids[begin:end]
        rows = t.model.tables["Eemb"][slot * t.rows:slot * t.rows + end - begin]
        assert np.array_equal(tables["Eemb"][ids], rows.detach().numpy())


def test_transr_matrices_train_on_several_ranks_and_out_of_core(tmp_path):
    """TransR's relation matrices (a [relations, dim, dim] table) are
    relation tables like the others: replicated and combined over the ranks,
    out of core too; two epochs lower the loss and keep every copy equal."""
    for label, options in (("memory", {}), ("files", worker.out_of_core(tmp_path / "f", 1))):
        results = threads(2, tmp_path / label, epochs=2, name="transr", loss="margin",
                          margin=2.0, **options)
        trainers = [t for t, _ in results]
        assert trainers[0].model.tables["Pm"].shape == (worker.RELATIONS, 16, 16)
        assert "Pm" in trainers[0].relation_tables
        assert torch.equal(trainers[0].model.tables["Pm"], trainers[1].model.tables["Pm"])
        identity = torch.eye(16).expand(worker.RELATIONS, 16, 16)
        assert not torch.equal(trainers[0].model.tables["Pm"].detach(), identity)
        log = trainers[0].log
        assert log[1]["loss"] < log[0]["loss"], (label, log)


def test_distributed_training_learns(tmp_path):
    results = threads(2, tmp_path, epochs=6)
    t = results[0][0]
    whole = training.Model(t.model.name, {n: torch.nn.Parameter(torch.as_tensor(v))
                                          for n, v in results[0][1].items()},
                           t.model.score, t.model.distance, t.model.operator)
    metrics, _ = training.evaluate(whole, worker.TEST, worker.ALL)
    # Random tables rank a test triple's entity about 450th of 900.
    assert metrics["mrr"] > 0.03 and t.log[-1]["loss"] < 0.6 * t.log[0]["loss"]


# -- out of core: each rank's partitions in files -------------------------------

def trained_edges(t):
    """Wraps t's steps over edges: the Counter it returns counts each edge
    (entity rows, relation) trained."""
    import collections
    seen = collections.Counter()
    train_edges = t._train_edges

    def counted(epoch, edges, bar=None, check_every=50):
        partition = {slot: p for p, slot in t.slot_of.items()}
        for h, r, tail in edges.tolist():
            a, b = partition[h // t.rows], partition[tail // t.rows]
            seen[(int(t.ranges[a]) + h % t.rows, r, int(t.ranges[b]) + tail % t.rows)] += 1
        return train_edges(epoch, edges, bar, check_every)
    t._train_edges = counted
    return seen


def test_out_of_core_ranks_train_every_edge_once_through_their_files(tmp_path):
    options = worker.out_of_core(tmp_path, 2)

    def run(group):
        t = worker.trainer(group, tmp_path, **options)
        seen = trained_edges(t)
        for _ in range(2):
            t.train_epoch()
        model = t.gather()
        return t, None if model is None else {
            n: v.detach().numpy() for n, v in model.tables.items()}, seen
    results = kd.ThreadGroup.run(2, run)
    trainers = [t for t, _, _ in results]
    assert sum(t.log[0]["edges"] for t in trainers) == len(worker.TRAIN)
    # Every edge trained once an epoch, counted as trained.
    seen = results[0][2] + results[1][2]
    assert len(seen) == len(worker.TRAIN) and set(seen.values()) == {2}
    t = trainers[0]
    # 8 partitions in files, a buffer of 3 of them on each rank (a third of
    # what three of the 4 in-memory partitions take); between rounds a rank
    # keeps what the next round starts with and receives the rest from the
    # other rank: it ends an epoch holding the first round's first state,
    # and no round loads its first state from files — an epoch loads the
    # 2 swaps of each of the 3 rounds (the first epoch also the first
    # round's first state, 3 more) and receives 1 partition a round.
    assert sorted(p.name for p in options["out_of_core"].glob("partition-*.kge")) == \
        [f"partition-{p}.kge" for p in range(8)]
    assert t.capacity == 3 and t.rows == 113
    for trainer in trainers:
        assert sorted(trainer.slot_of) == sorted(trainer._round_plan(0)[0][0])
        assert [r["loads"] for r in trainer.log] == [9, 6]
        assert [r["received"] for r in trainer.log] == [3, 3]
        sizes = trainer.sizes
        assert all(r["bytes_received"] > 3 * min(sizes) * 16 * 4 for r in trainer.log)
    assert t.model.tables["Eemb"].shape == (3 * 113, 16)
    for name in t.relation_tables:
        assert torch.equal(trainers[1].model.tables[name], t.model.tables[name])
    # The gathered tables are the files' (rows mapped back to entity ids),
    # and what the buffers hold equals them.
    files = t.store.gather()
    assert np.array_equal(results[0][1]["Eemb"][t.entity_ids], files["Eemb"])
    assert all(buffers_match_files(trainer) for trainer in trainers)
    # Rank 0's first round walks Legend's order over its pair's 4
    # partitions (of partitions 0 and 3 of the 4: 0, 1 and 6, 7), training
    # the buckets between them and a third of each one's own.
    assert t.rounds[0][0] == (0, 3)
    plan = t._round_plan(0)
    assert [state for state, *_ in plan] == [(0, 1, 6), (0, 6, 7), (0, 1, 7)]
    trained = sorted(b for _, first, _, _, rest in plan for b in first + rest)
    assert trained == sorted([(a, b) for a in (0, 1) for b in (6, 7)] +
                             [(b, a) for a in (0, 1) for b in (6, 7)] +
                             [(a, b, 0, 3) for a in (0, 1) for b in (0, 1)] +
                             [(a, b, 0, 3) for a in (6, 7) for b in (6, 7)])


def buffers_match_files(t):
    """Whether every partition in t's buffer equals its file (after a write
    back: gather, save)."""
    for p, slot in t.slot_of.items():
        stored = t.store.load(p)
        for name, view in t._slot_arrays(slot, t.sizes[p]).items():
            if not np.array_equal(view.detach().cpu().numpy(), stored[name]):
                return False
    return True


@pytest.mark.parametrize("world,split,capacity,order", [(3, 4, 3, "legend"),
                                                        (6, 2, 3, "legend"),
                                                        (2, 3, 4, "beta")])
def test_out_of_core_handover_on_more_ranks_and_other_orders(tmp_path, monkeypatch, world,
                                                             split, capacity, order):
    """Three and six ranks (partitions written back at a round's end,
    received into free slots, swapped in place in cycles, several cycles
    in one phase) and Marius's order with a buffer of 4, swaps in pieces
    of 5 rows: every edge trained once an epoch, the relation copies
    equal, each rank ending an epoch with the first round's first state,
    its buffer equal to the files after gather."""
    monkeypatch.setattr(kd, "PIECE_BYTES", 5 * 16 * 4)
    options = dict(out_of_core=tmp_path / "live", split=split, capacity=capacity, order=order)

    def run(group):
        t = worker.trainer(group, tmp_path, **options)
        seen = trained_edges(t)
        for _ in range(2):
            t.train_epoch()
        t.gather()
        return t, seen, buffers_match_files(t)
    results = kd.ThreadGroup.run(world, run)
    trainers = [t for t, _, _ in results]
    seen = sum((s for _, s, _ in results[1:]), results[0][1])
    assert len(seen) == len(worker.TRAIN) and set(seen.values()) == {2}
    assert all(match for _, _, match in results)
    for t in trainers:
        assert sorted(t.slot_of) == sorted(t._round_plan(0)[0][0])
        assert all(r["received"] > 0 for r in t.log)
        for name in t.relation_tables:
            assert torch.equal(trainers[0].model.tables[name], t.model.tables[name])
    handovers = [trainers[0]._handover(r) for r in range(len(trainers[0].rounds))]
    phases = [phase for _, p in handovers for phase in p]
    assert any(into is not None for phase in phases for *_, into in phase)
    if world > 2:
        # The paths these settings take, besides swaps in place.
        assert sum(len(w) for writes, _ in handovers for w in writes) > 0
        assert any(into is None for phase in phases for *_, into in phase)
    if world == 6:
        assert any(len(phase) > 2 and phase[0][3] is not None for phase in phases)


def test_ranks_that_compute_different_walks_are_refused(tmp_path, monkeypatch):
    """Each rank computes every rank's walks itself; where they disagree
    (hosts of different versions) the trainer stops at its start."""
    import threading
    real, calls, lock = po.round_labels, [], threading.Lock()

    def differing(rounds, split, states, **kwargs):
        labels = real(rounds, split, states, **kwargs)
        with lock:
            calls.append(None)
            if len(calls) == 2:
                labels[0][0] = (labels[0][0][0], not labels[0][0][1])
        return labels
    monkeypatch.setattr(po, "round_labels", differing)
    with pytest.raises(kd.DistributedError, match="different partition walks"):
        kd.ThreadGroup.run(2, lambda g: worker.trainer(g, tmp_path,
                                                       **worker.out_of_core(tmp_path, 2)))


def test_partitions_swapped_in_place_in_pieces_equal_whole_ones(tmp_path, monkeypatch):
    """Two full buffers swap partitions every round (each receives into the
    slot it sends from): in pieces of a few rows (partitions of 112 and 113
    rows) the tables equal those of the one-piece swap bit for bit."""
    def run(directory):
        return kd.ThreadGroup.run(2, lambda g: worker.run(
            g, directory, 2, **worker.out_of_core(directory, 2)))[0][0]
    whole = run(tmp_path / "whole")
    monkeypatch.setattr(kd, "PIECE_BYTES", 7 * 16 * 4)
    pieces = run(tmp_path / "pieces")
    for name, value in whole.items():
        assert np.array_equal(pieces[name], value), name


def test_out_of_core_distributed_training_learns(tmp_path):
    def mrr(results):
        t, tables = results[0]
        whole = training.Model(t.model.name, {n: torch.nn.Parameter(torch.as_tensor(v))
                                              for n, v in tables.items()},
                               t.model.score, t.model.distance, t.model.operator)
        return training.evaluate(whole, worker.TEST, worker.ALL)[0]["mrr"]

    untrained = mrr(threads(2, tmp_path / "0", epochs=0, **worker.out_of_core(tmp_path / "0", 3)))
    results = threads(2, tmp_path / "6", epochs=6, **worker.out_of_core(tmp_path / "6", 3))
    t = results[0][0]
    # (On this small graph, negatives from three partitions of 75 entities
    # learn more slowly than from two of 225 in memory: MRR 0.027-0.034
    # against 0.04-0.05 after six epochs over seeds 0-2, about the one-GPU
    # out-of-core trainer's 0.028 with 8 partitions; cut in 2 instead of
    # 3, 0.012-0.017.)
    assert mrr(results) > 2.5 * untrained and t.log[-1]["loss"] < 0.6 * t.log[0]["loss"]


def test_one_rank_out_of_core_is_the_one_gpu_out_of_core_trainer(tmp_path):
    """One rank, its 2 partitions cut in 2: an epoch is the one-GPU
    out-of-core trainer's first (Legend's order over 4 partitions, a
    buffer of 3), bit for bit."""
    from kge import out_of_core
    common = dict(num_entities=worker.ENTITIES, num_relations=worker.RELATIONS, dim=16,
                  eager=True, device="cpu", batch_size=512, negatives=8, lr=0.05, seed=3)
    single = out_of_core.OutOfCoreTrainer("distmult", worker.TRAIN, tmp_path / "one",
                                          partitions=4, capacity=3, shuffle=False, **common)
    single.train_epoch()

    def run(group):
        t = kd.DistributedTrainer("distmult", worker.TRAIN, None, group=group, shuffle=False,
                                  out_of_core=tmp_path / "ranks", split=2, capacity=3, **common)
        t.train_epoch()
        return t.gather()
    model = kd.ThreadGroup.run(1, run)[0]
    for name, table in single.gather().tables.items():
        assert torch.equal(table, model.tables[name]), name


def test_out_of_core_processes_die_and_resume_as_the_threads_train(tmp_path, one_thread):
    """Out of core on two processes: a rank that dies stops the job, the
    last checkpoint (the files copied at a round's end) resumes it, and the
    result is the uninterrupted run's of two threads, bit for bit."""
    out = tmp_path / "out.npz"
    ranks = launch(2, "--directory", tmp_path / "run", "--out", out, "--epochs", 2,
                   "--die-after", "1:0", "--split", 2)
    assert ranks[1][0] == 17 and ranks[0][0] != 0
    assert "DistributedError" in ranks[0][1], ranks[0][1]
    latest = json.loads((tmp_path / "run" / "latest.json").read_text())
    assert (latest["epoch"], latest["round"]) == (1, 1)
    assert len(list((tmp_path / "run" / latest["state"]).glob("partition-*.kge"))) == 8
    for rc, err in launch(2, "--directory", tmp_path / "run", "--out", out, "--epochs", 2,
                          "--resume", "--split", 2):
        assert rc == 0, err
    resumed = np.load(out)
    uninterrupted = kd.ThreadGroup.run(2, lambda g: worker.run(
        g, tmp_path / "t", 2, **worker.out_of_core(tmp_path / "t", 2)))[0][0]
    for name, value in uninterrupted.items():
        assert np.array_equal(resumed[name], value), name


def test_bad_out_of_core_settings_are_refused(tmp_path):
    with pytest.raises(ValueError, match="Legend's order is for a buffer of 3 partitions"):
        kd.ThreadGroup.run(2, lambda g: worker.trainer(
            g, tmp_path, out_of_core=tmp_path / "live", split=3, capacity=4))
    with pytest.raises(ValueError, match="unknown partition order 'pbg'"):
        kd.ThreadGroup.run(2, lambda g: worker.trainer(
            g, tmp_path, out_of_core=tmp_path / "live", split=1, order="pbg"))
    with pytest.raises(ValueError, match="split must be a positive integer"):
        kd.ThreadGroup.run(2, lambda g: worker.trainer(
            g, tmp_path, out_of_core=tmp_path / "live", split=0))
    with pytest.raises(ValueError, match="cannot make the 1200 partitions of 2 ranks"):
        kd.ThreadGroup.run(2, lambda g: worker.trainer(
            g, tmp_path, out_of_core=tmp_path / "live", split=300))
    with pytest.raises(ValueError, match="smaller than the order needs: 3 partitions"):
        kd.ThreadGroup.run(2, lambda g: worker.trainer(
            g, tmp_path, out_of_core=tmp_path / "live", split=2, buffer_bytes=1000))


def launch(world, *args, timeout=240):
    """The worker on `world` processes (gloo), as torchrun would start
    them; returns the processes' (returncode, stderr), after `timeout` at
    most (a hang fails the test)."""
    port = kd.free_port()
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
           "WORLD_SIZE": str(world), "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, str(HERE / "distributed_worker.py"),
                               *map(str, args)],
                              env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
                              stderr=subprocess.PIPE, text=True) for r in range(world)]
    deadline = time.monotonic() + timeout
    out = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail(f"the ranks did not finish within {timeout} s (a hang)")
        out.append((p.returncode, err))
    return out


@pytest.fixture
def one_thread():
    """PyTorch on one thread, as the worker processes are: the same
    arithmetic in both."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_processes_equal_the_ranks_as_threads_of_one_process(tmp_path, one_thread):
    out = tmp_path / "out.npz"
    for rc, err in launch(2, "--directory", tmp_path / "p", "--out", out, "--epochs", 2):
        assert rc == 0, err
    got = np.load(out)
    results = kd.ThreadGroup.run(2, lambda g: worker.run(g, tmp_path / "t", 2))
    tables, log, grams, shared = results[0]
    for name, value in tables.items():
        assert np.array_equal(got[name], value), name
    written = json.loads(out.with_suffix(".json").read_text())
    assert [r["loss"] for r in written["log"]] == [r["loss"] for r in log]
    # The GPU Gram's preparation by blocks of graphs, one per process.
    assert written["shared"] is True and shared is True
    # Gram matrices: the same as the ranks as threads, and as one process.
    X = worker.gram_graphs()
    expected = [worker.gram_kernel()(X), worker.gram_kernel(False)(X[:3], X[3:]),
                worker.gram_kernel()(X[:3], X[3:])]
    for i, (mine, theirs) in enumerate(zip(grams, expected)):
        assert np.array_equal(got[f"gram{i}"], theirs, equal_nan=True)
        assert np.array_equal(mine, theirs, equal_nan=True)


def test_a_rank_that_dies_stops_the_job_and_the_checkpoint_resumes_it(tmp_path):
    out = tmp_path / "out.npz"
    start = time.monotonic()
    ranks = launch(2, "--directory", tmp_path / "run", "--out", out, "--epochs", 2,
                   "--die-after", "1:0")
    assert ranks[1][0] == 17
    assert ranks[0][0] != 0 and "DistributedError" in ranks[0][1], ranks[0][1]
    assert "a peer left the job" in ranks[0][1]
    assert time.monotonic() - start < 120
    latest = json.loads((tmp_path / "run" / "latest.json").read_text())
    assert (latest["epoch"], latest["round"], latest["ranks"]) == (1, 1, 2)
    assert not out.exists()
    for rc, err in launch(2, "--directory", tmp_path / "run", "--out", out, "--epochs", 2,
                          "--resume"):
        assert rc == 0, err
    resumed = np.load(out)
    uninterrupted = kd.ThreadGroup.run(2, lambda g: worker.run(g, tmp_path / "t", 2))[0][0]
    for name, value in uninterrupted.items():
        assert np.array_equal(resumed[name], value), name


# -- bad input ------------------------------------------------------------------

def test_resuming_needs_a_checkpoint_of_this_job(tmp_path):
    with pytest.raises(checkpoint.CheckpointError, match="no checkpoint"):
        kd.ThreadGroup.run(2, lambda g: worker.trainer(g, tmp_path, resume=True))
    threads(2, tmp_path, epochs=1)
    with pytest.raises(checkpoint.CheckpointError, match="state of 2 ranks; this job has 3"):
        kd.ThreadGroup.run(3, lambda g: worker.trainer(g, tmp_path, resume=True))
    with pytest.raises(checkpoint.CheckpointError, match="belongs to model"):
        kd.ThreadGroup.run(2, lambda g: worker.trainer(g, tmp_path, resume=True, dim=8))
    latest = tmp_path / "latest.json"
    good = latest.read_text()
    for bad, message in (("{", "is corrupt"), ('{"state": "../x", "ranks": 2}',
                                                "not a state directory")):
        latest.write_text(bad)
        with pytest.raises(checkpoint.CheckpointError, match=message):
            kd.ThreadGroup.run(2, lambda g: worker.trainer(g, tmp_path, resume=True))
    latest.write_text(good)
    state = tmp_path / json.loads(good)["state"]
    part = state / "partition-1.kge"
    part.write_bytes(part.read_bytes()[:-10])
    with pytest.raises(checkpoint.CheckpointError, match="partition-1.kge"):
        kd.ThreadGroup.run(2, lambda g: worker.trainer(g, tmp_path, resume=True))


def test_bad_settings_are_refused(tmp_path):
    with pytest.raises(ValueError, match="smaller than the order needs: 3 partitions"):
        kd.ThreadGroup.run(2, lambda g: worker.trainer(g, tmp_path, buffer_bytes=1000))
    with pytest.raises(ValueError, match="cannot make the 8 partitions of 4 ranks"):
        kd.ThreadGroup.run(4, lambda g: kd.DistributedTrainer(
            "distmult", np.array([[0, 0, 1]]), num_entities=5, num_relations=1, dim=4,
            group=g, eager=True, device="cpu"))
    with pytest.raises(ValueError, match="resume=True needs the checkpoint directory"):
        kd.ThreadGroup.run(1, lambda g: worker.trainer(g, None, resume=True))
    with pytest.raises(ValueError, match="indexes|outside|entities"):
        kd.ThreadGroup.run(2, lambda g: kd.DistributedTrainer(
            "distmult", np.array([[0, 0, 950]]), num_entities=900, num_relations=6, dim=4,
            group=g, eager=True, device="cpu"))


def test_init_outside_a_launched_job_says_how_to_launch(monkeypatch):
    for key in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(kd.DistributedError, match="torchrun"):
        kd.init("gloo")
    with pytest.raises(kd.DistributedError, match="not initialized"):
        kd.TorchGroup()


def test_a_non_finite_loss_on_one_rank_stops_every_rank(tmp_path):
    def run(group):
        t = worker.trainer(group, tmp_path)
        if group.rank == 1:
            step = t.step
            t.step = lambda batch: step(batch) * float("nan")
        t.train_epoch()

    with pytest.raises(training.TrainingError, match=r"non-finite loss .*\(rank 1\)"):
        kd.ThreadGroup.run(2, run)


def kge_train(tmp_path):
    """kge-train on the worker's graph (a data file under tmp_path), on the
    CPU: a function of the extra arguments giving the finished process."""
    data = tmp_path / "data.npz"
    np.savez(data, train=worker.TRAIN, valid=worker.TEST[:100], test=worker.TEST[100:],
             num_entities=worker.ENTITIES, num_relations=worker.RELATIONS)
    package = str(pathlib.Path(kd.__file__).resolve().parents[1])
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([package, os.environ.get("PYTHONPATH", "")])}

    def train(*extra):
        return subprocess.run(
            [sys.executable, "-m", "kge.train_cli", "--model", "distmult", "--data", str(data),
             "--dim", "16", "--batch-size", "512", "--negatives", "8", "--lr", "0.05",
             "--device", "cpu", *map(str, extra)],
            capture_output=True, text=True, env=env, timeout=240)
    return train


def test_kge_train_out_of_core_on_several_processes(tmp_path):
    run = kge_train(tmp_path)

    def train(*extra):
        return run("--epochs", 1, *extra)

    done = train("--gpus", "2", "--out-of-core", str(tmp_path / "live"), "--split", "3")
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "live").glob("partition-*.kge"))) == 12
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert records[0]["rounds"] == 3 and "test" in records[-1]
    refused = train("--out-of-core", str(tmp_path / "live"))
    assert refused.returncode != 0 and "--out-of-core trains on several ranks" in refused.stderr
    refused = train("--gpus", "2", "--out-of-core", str(tmp_path / "x"), "--split", "3",
                    "--capacity", "4")
    assert refused.returncode != 0 and "Legend's order is for a buffer of 3" in refused.stderr


def test_kge_train_trains_transr_on_one_and_two_processes(tmp_path):
    """kge-train --model transr: its matrices through the command, on one
    process and on two ranks (the ranks' bundles come as three)."""
    run = kge_train(tmp_path)
    for extra in ((), ("--gpus", "2")):
        done = run("--model", "transr", "--loss", "margin", "--margin", "2", "--epochs", 1,
                   *extra)
        assert done.returncode == 0, done.stderr
        records = [json.loads(line) for line in done.stdout.splitlines()
                   if line.startswith("{")]
        assert "test" in records[-1] and records[-1]["test"]["mrr"] > 0


@pytest.mark.parametrize("world", [1, 2, 3, 5, 9])
def test_blocks_of_graphs_shared_by_the_ranks_equal_the_whole(world):
    """kge.distributed.blocks: each rank packs and tiles its block of
    graphs, all gather them; more ranks than graphs leave blocks empty."""
    X = worker.gram_graphs()
    assert len(X) < 9
    assert all(kd.ThreadGroup.run(world, lambda g: worker.shared_preparation_equal(X, g)))


def test_a_gram_matrix_returned_on_one_rank_is_the_whole_one():
    X = worker.gram_graphs()
    expected = worker.gram_kernel()(X)
    kernels = [worker.gram_kernel() for _ in range(3)]
    got = kd.ThreadGroup.run(3, lambda g: kd.gram(kernels[g.rank], X, group=g, root=1))
    assert got[0] is None and got[2] is None
    assert np.array_equal(got[1], expected, equal_nan=True)
    # The failures are known on the root only.
    assert kernels[1].failed_pairs == [] and kernels[0].failed_pairs is None
    for root in (3, -1, 1.0, True):
        with pytest.raises(ValueError, match="root is a rank of the group"):
            kd.ThreadGroup.run(3, lambda g: kd.gram(worker.gram_kernel(), X, group=g,
                                                    root=root))


@pytest.mark.parametrize("world", [1, 3])
def test_arrays_gathered_as_bytes_come_back_equal(world):
    """all_gather_arrays: dicts of arrays of any dtype, shape and size
    (empty, 0-d, odd byte counts before 8-byte ones), or None, arrive as
    they were sent, in rank order."""
    def block(rank):
        if rank == 1:
            return None
        rng = np.random.default_rng(rank)
        return {"flags": rng.integers(0, 2, 5).astype(bool), "pairs": rng.integers(
            -9, 9, (3, 2)).astype(np.int32), "empty": np.zeros((0, 4), np.float32),
            "scalar": np.float64(rank), "bits": rng.integers(0, 1 << 62, 7).astype(np.int64),
            "strided": np.arange(12.0).reshape(3, 4)[:, ::2]}

    def check(group):
        got = group.all_gather_arrays(block(group.rank))
        for rank, arrays in enumerate(got):
            sent = block(rank)
            if sent is None:
                assert arrays is None
                continue
            assert list(arrays) == list(sent)
            for key, value in sent.items():
                value = np.asarray(value)
                assert arrays[key].dtype == value.dtype and arrays[key].shape == value.shape
                assert np.array_equal(arrays[key], value), key
        return True
    assert all(kd.ThreadGroup.run(world, check))
    assert kd._from_bytes(kd._to_bytes({"x": np.arange(3)}))["x"].tolist() == [0, 1, 2]


@pytest.mark.parametrize("symmetric,normalize", [(True, False), (True, True), (False, False),
                                                 (False, True)])
def test_the_schedule_made_by_pytorch_is_the_hosts(symmetric, normalize):
    from kge import kron
    rng = np.random.default_rng(1)

    def sizes(count):
        return np.stack([np.zeros(count, np.int64), rng.integers(1, 30, count)], 1)

    x_nodes, x_tiles, y_nodes, y_tiles = sizes(37), sizes(37), sizes(23), sizes(23)
    args = (x_nodes, x_tiles) if symmetric else (x_nodes, x_tiles, y_nodes, y_tiles)
    host = kron.pair_schedule(*args, normalize=normalize)
    made = kron.pair_schedule_tensor(*args, normalize=normalize, device="cpu")
    assert made.dtype == torch.int32 and np.array_equal(made.numpy(), host)
    assert kron.workspace_size_tensor(made, x_nodes, None if symmetric else y_nodes, 7, 3) == \
        kron.workspace_size(host, x_nodes, None if symmetric else y_nodes, 7, 3)


def test_kge_train_on_several_processes_trains_logs_and_resumes(tmp_path):
    run = kge_train(tmp_path)

    def train(*extra):
        return run("--gpus", 2, "--checkpoint", tmp_path / "ckpt", "--log",
                   tmp_path / "log.json", *extra)

    first = train("--epochs", "2")
    assert first.returncode == 0, first.stderr
    records = [json.loads(line) for line in first.stdout.splitlines() if line.startswith("{")]
    assert [r.get("epoch") for r in records[:2]] == [0, 1] and "test" in records[-1]
    assert all(r["rounds"] == 3 for r in records[:2])
    assert json.loads((tmp_path / "ckpt" / "latest.json").read_text())["epoch"] == 2
    again = train("--epochs", "3", "--resume")
    assert again.returncode == 0, again.stderr
    assert "resumed" in again.stdout and "at epoch 2, round 0" in again.stdout
    log = json.loads((tmp_path / "log.json").read_text())["log"]
    assert [r["epoch"] for r in log] == [0, 1, 2]
    refused = train("--epochs", "1", "--gpus", "0")
    assert refused.returncode != 0 and "--gpus must be positive" in refused.stderr
