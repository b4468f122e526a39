"""KGE on several GPUs through torch.distributed: training with the entity
embeddings sharded by partition, and Gram matrices split by pair cost.

Processes are started by `torchrun --nproc-per-node N script.py` (or
`kge-train --gpus N`, which starts torchrun) and join with `init()`: NCCL
between GPUs, gloo on the CPU. A collective that waits longer than the
group's timeout for a peer fails instead of hanging, and torchrun stops
the other workers when one dies.

Training (`DistributedTrainer`, PyTorch-BigGraph's distributed setting
with GPUs exchanging partitions directly, as GE2 does): the entities in
2N partitions for N GPUs; in each of the 2N - 1 rounds of an epoch every
GPU holds two partitions (`partition_order.circle_rounds`: every pair of
partitions meets on one GPU once per epoch) and trains the buckets between
them and a 1/(2N - 1) chunk of each one's own bucket, so that every GPU
trains about the same number of edges in every round; between rounds each
GPU passes at most two partitions (embeddings and optimizer states) to its
neighbours over NCCL, in two phases (leftward, then rightward moves) so a
buffer of three partition slots suffices: each GPU holds 3 / (2N) of the
table. Relation tables are replicated: each GPU updates its own copy
during a round, and at the round's end the updates of all GPUs are summed
into every copy (with Adam, averaged) — in rank order, so every copy is
the same and a run is reproducible. Negatives come from the GPU's
two partitions (as PyTorch-BigGraph's and Legend's do from the buffer).

Out of core (`out_of_core=DIR`): each of the 2N partitions is cut into
`split`, kept in files under DIR, and each GPU has a buffer of `capacity`
of them: a round walks Legend's order over the pair's partitions (the
one-GPU trainer's swap engine), the files are the exchange between
rounds.

Checkpoints (`save`, every `checkpoint_every` rounds and after each
epoch) go to a directory: `state-<epoch>-<round>/` with each partition's
file written by the GPU holding it and `model.kge` (relations, their
optimizer state, every rank's random generator and step count, the log)
by rank 0, then `latest.json` naming it, replaced atomically once every
rank has written; a job that dies leaves the last complete state, and
`resume=True` continues from it, mid-epoch, as if it had not stopped.

Gram matrices (`gram`): the pairs of kge.kron's schedule dealt to the
ranks by cost (sorted, dealt in snake order: loads within the dearest
pair), each rank solving its pairs with the same kernel (and the
self-kernels a normalized matrix divides by), the datasets packed and
tiled a block of graphs per rank (`blocks`), the entries summed into
one matrix on every rank: equal, bit for bit, to the one-device result.

`ThreadGroup` runs N ranks as threads of one process with the same
collectives over queues: the reference the tests compare processes with.
"""

import datetime
import hashlib
import json
import os
import pathlib
import queue
import re
import shutil
import threading

import numpy as np

from . import checkpoint, partition_order, training
from . import out_of_core as out_of_core_module


# The pieces in which a rank that sends a partition receives another into
# its slot (_exchange_in_place): the device memory that takes besides the
# buffer's slots, per array.
PIECE_BYTES = 32 << 20


class DistributedError(RuntimeError):
    """A process group that cannot be joined or that lost a peer."""


def free_port():
    """A TCP port free on this host now, for MASTER_PORT of a job on it."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init(backend=None, timeout=300.0):
    """Joins the process group that torchrun describes (RANK, WORLD_SIZE,
    MASTER_ADDR, MASTER_PORT): NCCL with LOCAL_RANK's GPU made current when
    CUDA is there, else gloo. `timeout`: the seconds a collective waits
    for a peer before failing. Returns (rank, world size, device)."""
    import torch
    import torch.distributed as dist
    if not dist.is_available():
        raise DistributedError("this PyTorch has no torch.distributed")
    missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
               if k not in os.environ]
    if missing and not dist.is_initialized():
        raise DistributedError(f"{', '.join(missing)} unset: start the processes with "
                               "torchrun --nproc-per-node N (or kge-train --gpus N)")
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    device = torch.device("cpu")
    if backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", 0))
        if local >= torch.cuda.device_count():
            raise DistributedError(f"local rank {local} has no GPU: this host has "
                                   f"{torch.cuda.device_count()}")
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    if not dist.is_initialized():
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout))
    return dist.get_rank(), dist.get_world_size(), device


class TorchGroup:
    """The collectives of DistributedTrainer and gram over torch.distributed's
    default group (initialized: init())."""

    def __init__(self):
        import torch.distributed as dist
        if not (dist.is_available() and dist.is_initialized()):
            raise DistributedError("torch.distributed is not initialized: call "
                                   "kge.distributed.init() in processes torchrun started")
        self.dist = dist
        self.rank, self.world = dist.get_rank(), dist.get_world_size()

    def _run(self, what, fn):
        try:
            return fn()
        except RuntimeError as error:
            detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error)
            raise DistributedError(f"rank {self.rank}: {what} failed: a peer left the job or "
                                   f"did not answer in time ({detail})") from error

    def exchange(self, sends, receives):
        """Sends each (peer, tensor) of `sends` and receives into each of
        `receives`, all at once; tensors between two ranks pair up in order."""
        dist = self.dist
        ops = [dist.P2POp(dist.isend, t, peer) for peer, t in sends]
        ops += [dist.P2POp(dist.irecv, t, peer) for peer, t in receives]
        if ops:
            self._run("a partition exchange",
                      lambda: [work.wait() for work in dist.batch_isend_irecv(ops)])

    def all_gather(self, tensor):
        import torch
        out = [torch.empty_like(tensor) for _ in range(self.world)]
        self._run("all_gather", lambda: self.dist.all_gather(out, tensor))
        return out

    def all_gather_object(self, value):
        out = [None] * self.world
        self._run("all_gather_object", lambda: self.dist.all_gather_object(out, value))
        return out

    def all_gather_arrays(self, arrays):
        """all_gather_object of a dict of NumPy arrays (or None) in one
        collective of bytes on the group's device (NCCL: the GPU; each
        rank's block once to the device and all once back) instead of a
        pickle per rank."""
        import torch
        device = (torch.device("cuda", torch.cuda.current_device())
                  if self.dist.get_backend() == "nccl" else torch.device("cpu"))
        local = torch.from_numpy(_to_bytes(arrays))
        sizes = self.all_gather(torch.tensor([len(local)], dtype=torch.int64, device=device))
        sizes = [int(n) for n in torch.cat(sizes).cpu()]
        # Rows of a multiple of 8 bytes: each rank's block starts aligned.
        width = -(-max(sizes) // 8) * 8
        padded = torch.zeros(width, dtype=torch.uint8, device=device)
        padded[:len(local)] = local.to(device)
        gathered = torch.empty((self.world, width), dtype=torch.uint8, device=device)
        self._run("all_gather", lambda: self.dist.all_gather(list(gathered), padded))
        gathered = gathered.cpu().numpy()
        return [_from_bytes(gathered[r, :sizes[r]]) for r in range(self.world)]

    def all_reduce_sum(self, tensor):
        self._run("all_reduce", lambda: self.dist.all_reduce(tensor))

    def reduce_sum(self, tensor, root):
        """The sum of the ranks' `tensor` into root's (the others' unspecified)."""
        self._run("reduce", lambda: self.dist.reduce(tensor, root))

    def barrier(self):
        self._run("a barrier", lambda: self.dist.barrier())


class _PeerFailed(DistributedError):
    """ThreadGroup: a collective broken by another rank's failure."""


class ThreadGroup:
    """`world` ranks as threads of one process with TorchGroup's collectives
    (queues and a barrier): `ThreadGroup.run(world, fn)` calls fn(group) on
    each rank's thread and returns their results; a rank that raises makes
    the others fail at their next collective, and the first error is
    raised."""

    class _Shared:
        def __init__(self, world, timeout):
            self.world, self.timeout = world, timeout
            self.barrier = threading.Barrier(world, timeout=timeout)
            self.slots = [None] * world
            self.queues = {(a, b): queue.Queue() for a in range(world) for b in range(world)}

    def __init__(self, shared, rank):
        self.shared, self.rank, self.world = shared, rank, shared.world

    @classmethod
    def run(cls, world, fn, timeout=120.0):
        shared = cls._Shared(world, timeout)
        results, errors = [None] * world, [None] * world

        def target(rank):
            try:
                results[rank] = fn(cls(shared, rank))
            except BaseException as error:  # noqa: B902 - re-raised below
                errors[rank] = error
                shared.barrier.abort()

        threads = [threading.Thread(target=target, args=(r,)) for r in range(world)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # The cause first: an error that is not a collective's, then a
        # rank's own DistributedError, then a peer's failure seen by others.
        raised = [e for e in errors if e is not None]
        causes = [e for e in raised
                  if not isinstance(e, (threading.BrokenBarrierError, DistributedError))]
        own = [e for e in raised if isinstance(e, DistributedError)
               and not isinstance(e, _PeerFailed)]
        first = causes or own or raised
        if first:
            raise first[0]
        return results

    def _wait(self):
        try:
            self.shared.barrier.wait()
        except threading.BrokenBarrierError:
            raise _PeerFailed(f"rank {self.rank}: a peer failed or timed out") from None

    def exchange(self, sends, receives):
        for peer, t in sends:
            self.shared.queues[(self.rank, peer)].put(t.detach().clone())
        for peer, t in receives:
            try:
                t.copy_(self.shared.queues[(peer, self.rank)].get(timeout=self.shared.timeout))
            except queue.Empty:
                raise DistributedError(f"rank {self.rank}: nothing from rank {peer} within "
                                       f"{self.shared.timeout} s") from None

    def all_gather_object(self, value):
        self._wait()
        self.shared.slots[self.rank] = value
        self._wait()
        out = list(self.shared.slots)
        self._wait()
        return out

    def all_gather(self, tensor):
        return [t.clone() for t in self.all_gather_object(tensor.detach().clone())]

    def all_gather_arrays(self, arrays):
        return [_from_bytes(b) for b in self.all_gather_object(_to_bytes(arrays))]

    def all_reduce_sum(self, tensor):
        parts = self.all_gather(tensor)
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        tensor.copy_(total)

    def reduce_sum(self, tensor, root):
        self.all_reduce_sum(tensor)

    def barrier(self):
        self._wait()


def _to_bytes(arrays):
    """A dict of NumPy arrays (or None) as one uint8 array: the header's
    length (8 bytes), the header (keys, dtypes, shapes; pickled), then each
    array's bytes from an offset that is a multiple of 8."""
    import pickle
    arrays = None if arrays is None else {k: np.asarray(v, order="C") for k, v in arrays.items()}
    fields = None if arrays is None else [(k, v.dtype.str, v.shape) for k, v in arrays.items()]
    header = np.frombuffer(pickle.dumps(fields), np.uint8)
    pieces, at = [np.array([len(header)], "<i8").view(np.uint8), header], 8 + len(header)
    for value in (arrays or {}).values():
        pieces.append(np.zeros(-at % 8, np.uint8))
        at += -at % 8 + value.nbytes
        pieces.append(value.reshape(-1).view(np.uint8))
    return np.concatenate(pieces)


def _from_bytes(data):
    """_to_bytes's dict (arrays copied out of `data`)."""
    import pickle
    length = int(data[:8].view("<i8")[0])
    fields = pickle.loads(data[8:8 + length].tobytes())
    if fields is None:
        return None
    out, at = {}, 8 + length
    for key, dtype, shape in fields:
        at += -at % 8
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        out[key] = data[at:at + nbytes].view(dtype).reshape(shape).copy()
        at += nbytes
    return out


def _default_group(group):
    return TorchGroup() if group is None else group


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------

class DistributedTrainer(out_of_core_module.PartitionedTrainer):
    """One rank's share of training `name` on `triples` (every rank passes
    the same ones) over the ranks of `group` (default: torch.distributed's,
    after init()): see the module's description. `directory`: where
    checkpoints go (`checkpoint_every` rounds, 0: after each epoch only);
    `resume=True` continues from its latest one. `buffer_bytes`: the device
    memory the partition slots may take (refused if three do not fit).
    `shuffle`: entities go to partitions in a random order (from `seed`),
    not by id, so that the ranks are about equally busy on graphs whose ids
    follow popularity.
    Other arguments as kge.training.Trainer's; `seed` draws every rank's
    negatives and batch order differently but reproducibly.

    Out of core (`out_of_core`: a directory every rank reads and writes —
    any on one host, a shared file system across hosts): each of the 2N
    partitions is cut into `split` partitions kept in files there, and a
    rank's device buffer holds `capacity` of them (Legend's path per GPU):
    in a round, the rank walks the buffer states of `order`
    (kge.out_of_core.buffer_order) over the 2 x `split` partitions of its
    pair, training the round's buckets among them with the next
    partition's load overlapped. Each rank's walk of each round is
    relabelled (partition_order.round_labels) so that the round starts
    from what the ranks end the round before with; at a round's end a
    rank keeps what its next first state holds, passes to another rank
    over NCCL what that rank's next first state holds
    (partition_order.handover) and writes the rest back to its file.
    Checkpoints copy the files (each rank a share of them)."""

    def __init__(self, name, triples, directory=None, *, num_entities, num_relations, dim,
                 group=None, forward=None, gradient=None, eager=False, batch_size=1024,
                 negatives=16, loss="softplus", margin=1.0, temperature=1.0,
                 optimizer="adagrad", lr=0.1, sampler="uniform", seed=0, device=None,
                 buffer_bytes=None, checkpoint_every=0, shuffle=True, resume=False,
                 out_of_core=None, split=1, capacity=3, order="legend", prefetch=True,
                 outer_sum=None):
        import torch
        self.group = _default_group(group)
        self.rank, self.world = self.group.rank, self.group.world
        self.rounds = partition_order.circle_rounds(self.world)
        if device is None:
            device = (torch.device("cuda", torch.cuda.current_device())
                      if torch.cuda.is_available() else "cpu")
        if not isinstance(checkpoint_every, int) or checkpoint_every < 0:
            raise ValueError(f"checkpoint_every must be a number of rounds >= 0, got "
                             f"{checkpoint_every!r}")
        if resume and directory is None:
            raise ValueError("resume=True needs the checkpoint directory")
        out_of_core_module._check_counts(num_entities=num_entities, split=split)
        self.split = split if out_of_core is not None else 1
        partitions = 2 * self.world * self.split
        if partitions > num_entities:
            raise ValueError(f"{num_entities} entities cannot make the {partitions} partitions "
                             f"of {self.world} ranks")
        slots = 2 if self.world == 1 else 3
        if out_of_core is not None:
            # The buffer states of a round: over the pair's 2 x split partitions.
            self._order = out_of_core_module.buffer_order(2 * self.split, capacity, order)
            slots = min(capacity, 2 * self.split)
        self._setup(name, triples, num_entities=num_entities, num_relations=num_relations,
                    dim=dim, partitions=partitions, slots=slots,
                    forward=forward, gradient=gradient, eager=eager, batch_size=batch_size,
                    negatives=negatives, loss=loss, margin=margin, temperature=temperature,
                    optimizer=optimizer, lr=lr, sampler=sampler, seed=seed, device=device,
                    buffer_bytes=buffer_bytes, fingerprint={"ranks": self.world},
                    shuffle=shuffle, outer_sum=outer_sum)
        self.prefetch = prefetch
        self._plans, self._handovers = {}, {}
        self._received = [0, 0]  # partitions and bytes received from other ranks
        self.store = None
        if out_of_core is not None:
            self.store = out_of_core_module.PartitionStore(out_of_core, self.ranges,
                                                           self.fingerprint())
        self.generator.manual_seed(seed + 1000003 * self.rank)
        self.relation_tables = [t for t in self.model.tables if t not in self.entity_tables]
        self.directory = None if directory is None else pathlib.Path(directory)
        self.checkpoint_every = checkpoint_every
        self.round = 0
        if self.store is not None:
            # Each rank's walk of each round (one rank: an epoch is one
            # round, the one-GPU trainer's walk); every rank must have
            # computed the same (one digest each, compared).
            self._labels = ([[(tuple(range(2 * self.split)), False)]] if self.world == 1 else
                            partition_order.round_labels(self.rounds, self.split, self._order[0]))
            digest = hashlib.sha256(repr(self._labels).encode()).hexdigest()
            digests = self.group.all_gather_object(digest)
            if len(set(digests)) > 1:
                raise DistributedError(
                    f"the ranks computed different partition walks (digests "
                    f"{sorted(set(d[:12] for d in digests))}): each host must run the same "
                    "KGE and Python versions")
        if resume:
            self._resume()
        elif self.store is not None:
            # Each rank writes a share of the partition files.
            for p in self._dealt():
                self.store.store(p, self._initial_partition(name, p, self.sizes[p], seed),
                                 sync=False)
            self.group.barrier()
        else:
            for slot, p in enumerate(self.rounds[0][self.rank]):
                initial = self._initial_partition(name, p, self.sizes[p], seed)
                self._copy_in(slot, p, initial)

    def _dealt(self):
        """The partition files this rank writes at the start and copies at
        checkpoints (out of core)."""
        return range(self.rank, len(self.ranges) - 1, self.world)

    def _copy_in(self, slot, p, arrays):
        import torch
        for n, view in self._slot_arrays(slot, self.sizes[p]).items():
            view.copy_(torch.as_tensor(arrays[n]))
        self._assign(p, slot)

    # -- relations ----------------------------------------------------------

    def _relation_state(self):
        """The relation tables and their optimizer states, and how the ranks'
        copies combine: with Adagrad "sum" (every rank's update applied: the
        summed squares slow the steps down as one GPU's would), with Adam
        "mean" (the ranks' updates averaged, as model averaging does: Adam's
        steps do not shrink, and summing them overshoots — measured on 4
        GPUs, TransE-L2's loss grew epoch after epoch)."""
        rule = "sum" if self.optimizer.method == "adagrad" else "mean"
        out = []
        for t in self.relation_tables:
            out.append((self.model.tables[t].data, rule))
            for s in self.optimizer.state[t]:
                out.append((s, rule))
        return out

    def _flat_relations(self):
        import torch
        return torch.cat([t.reshape(-1) for t, _ in self._relation_state()])

    def _combine_relations(self, before):
        """Every copy of the relations := before + the sum of every rank's
        update since (or their mean), summed in rank order."""
        if self.world == 1:
            return
        copies = self.group.all_gather(self._flat_relations())
        begin = 0
        for tensor, rule in self._relation_state():
            end = begin + tensor.numel()
            start = before[begin:end]
            total = copies[0][begin:end] - start
            for copy in copies[1:]:
                total = total + (copy[begin:end] - start)
            value = start + total if rule == "sum" else (total / self.world + start)
            tensor.copy_(value.view_as(tensor))
            begin = end

    # -- partitions ---------------------------------------------------------

    def _round_plan(self, r, rank=None):
        """Out of core: the swap plan of round r on `rank` (default this
        one) — the buffer states of the order over the pair's partitions,
        each training the round's buckets (round_buckets', of the 2N
        partitions, cut into theirs) it holds. Made once per round (a plan
        depends on the round and rank alone); the caller copies it before
        changing it."""
        rank = self.rank if rank is None else rank
        if (r, rank) not in self._plans:
            self._plans[(r, rank)] = self._make_round_plan(r, rank)
        return self._plans[(r, rank)]

    def _make_round_plan(self, r, rank):
        m = self.split
        states, trained = self._order
        perm, backwards = self._labels[r][rank]
        pair = [p * m + k for p in self.rounds[r][rank] for k in range(m)]
        pair = [pair[i] for i in perm]
        wanted = {}
        for bucket in partition_order.round_buckets(self.rounds, r, rank):
            s, t = bucket[:2]
            for x in range(s * m, (s + 1) * m):
                for y in range(t * m, (t + 1) * m):
                    wanted[(x, y)] = (x, y) + tuple(bucket[2:])
        states = [tuple(pair[i] for i in state) for state in states]
        trained = [[wanted[(pair[i], pair[j])] for i, j in state
                    if (pair[i], pair[j]) in wanted] for state in trained]
        if backwards:
            states, trained = states[::-1], trained[::-1]
        return out_of_core_module.swap_plan(states, trained)

    def _handover(self, r):
        """Out of core, between round r and the next: (writes, phases) of
        partition_order.handover over every rank's last state of r and first
        state of r + 1 (one rank writes its whole buffer back: the one-GPU
        trainer's epochs)."""
        if r not in self._handovers:
            following = (r + 1) % len(self.rounds)
            last = [self._round_plan(r, g)[-1][0] for g in range(self.world)]
            if self.world == 1:
                self._handovers[r] = ([sorted(last[0])], [])
            else:
                first = [self._round_plan(following, g)[0][0] for g in range(self.world)]
                self._handovers[r] = partition_order.handover(last, first, self.capacity)
        return self._handovers[r]

    def _present(self, r):
        """Out of core: the partitions of round r's first state that this
        rank holds when the round starts (kept from the round before or
        passed by another rank over NCCL). After a resume the buffer is
        empty: they are loaded from their files, before the buckets among
        them train or with the rest of the first state."""
        if self.world == 1:
            return set()
        writes, phases = self._handover((r - 1) % len(self.rounds))
        previous = self._round_plan((r - 1) % len(self.rounds))[-1][0]
        held = set(previous) - set(writes[self.rank]) - {
            p for phase in phases for p, g, _, _ in phase if g == self.rank}
        return held | {p for phase in phases for p, _, q, _ in phase if q == self.rank}

    def _train_round_out_of_core(self, epoch, r, bar, check_every):
        """Walks round r's plan (the partitions it ends with are written
        back or passed on by _exchange). Returns the edges trained."""
        plan = list(self._round_plan(r))
        io = self._io()
        spans = [self._span(b) for _, first, _, _, rest in plan for b in first + rest]
        # The buckets of the first state among the partitions the rank
        # holds (loaded first after a resume) train while this rank's last
        # writes and the other ranks' finish.
        present = self._present(r)
        early = [b for b in plan[0][1] + plan[0][4] if b[0] in present and b[1] in present]
        if early:
            state, first, evicted, loaded, rest = plan[0]
            plan[0] = (state, [b for b in first if b not in early], evicted, loaded,
                       [b for b in rest if b not in early])
            io.load_state([p for p in sorted(present) if p not in self.slot_of])
            self._train_buckets(epoch, early, bar, check_every)
        io.wait_writes()
        # Every rank's files of the round before written before any is read.
        self.group.barrier()
        self._walk(io, plan, epoch, bar, check_every)
        return sum(end - begin for begin, end in spans)

    def _exchange(self, r):
        """Moves the partitions that change rank between round r and the
        next. In memory: leftward moves, then rightward ones, each rank
        sending and receiving at most one partition per phase (into its
        free slot). Out of core (_handover): the partitions no rank's next
        first state holds go back to their files, then the phases of moves
        over NCCL."""
        if self.store is not None:
            writes, phases = self._handover(r)
            self._io().write_back(writes[self.rank], drop=True, wait=False)
        else:
            moves = [m + (None,) for m in partition_order.round_moves(self.rounds, r)]
            phases = [[m for m in moves if m[2] < m[1]], [m for m in moves if m[2] > m[1]]]
        for phase in phases:
            if any(into is not None for *_, into in phase):
                self._exchange_in_place(phase)
                continue
            sends, receives, sent, arrived = [], [], [], []
            free = sorted(set(range(self.capacity)) - set(self.slot_of.values()))
            for p, source, target, _ in phase:
                if source == self.rank:
                    slot = self.slot_of[p]
                    sends += [(target, v) for v in self._slot_arrays(slot, self.sizes[p]).values()]
                    sent.append(p)
                elif target == self.rank:
                    if not free:
                        raise DistributedError(f"rank {self.rank} has no free slot for "
                                               f"partition {p} after round {r}")
                    slot = free.pop(0)
                    receives += [(source, v)
                                 for v in self._slot_arrays(slot, self.sizes[p]).values()]
                    arrived.append((p, slot))
            self.group.exchange(sends, receives)
            for p in sent:
                slot = self.slot_of.pop(p)
                self._sample_from(slot, None)
            for p, slot in arrived:
                self._arrived(p, slot)

    def _exchange_in_place(self, phase):
        """A cycle of ranks each sending a partition and receiving one into
        the slot it sends from (partition_order.handover): each array in
        pieces of PIECE_BYTES, a piece received into a buffer of that size
        while the slot's piece is sent, then copied into the slot — every
        rank walks the same pieces, so the sends and receives pair up."""
        import torch
        out = [m for m in phase if m[1] == self.rank]
        into = [m for m in phase if m[2] == self.rank]
        if not out:
            return
        (p, _, target, _), (q, source, _, _) = out[0], into[0]
        slot = self.slot_of.pop(p)
        self._sample_from(slot, None)
        outgoing = self._slot_arrays(slot, self.sizes[p])
        incoming = self._slot_arrays(slot, self.sizes[q])
        for name, sending in outgoing.items():
            receiving = incoming[name]
            row = sending[0].numel() * sending.element_size()
            rows = max(1, PIECE_BYTES // max(1, row))
            buffer = torch.empty((min(rows, max(1, len(receiving))),) + tuple(sending.shape[1:]),
                                 dtype=sending.dtype, device=sending.device)
            for begin in range(0, max(len(sending), len(receiving)), rows):
                piece, landing = sending[begin:begin + rows], receiving[begin:begin + rows]
                self.group.exchange([(target, piece)] if len(piece) else [],
                                    [(source, buffer[:len(landing)])] if len(landing) else [])
                landing.copy_(buffer[:len(landing)])
        self._arrived(q, slot)

    def _arrived(self, p, slot):
        """Partition p received into `slot` (counted)."""
        self._assign(p, slot)
        self._received[0] += 1
        self._received[1] += sum(v.numel() * v.element_size()
                                 for v in self._slot_arrays(slot, self.sizes[p]).values())

    # -- an epoch -------------------------------------------------------------

    def train_epoch(self, progress=False, check_every=50, after_round=None):
        """The rounds of an epoch from the current one (a resumed trainer
        continues its epoch); `after_round(trainer, r)` is called after each
        round (its exchange and checkpoint). Returns {epoch, loss (the mean
        over every rank's batches), seconds (the slowest rank's), rounds,
        edges (this rank's)}; collective."""
        epoch = self._begin_epoch()
        first = self.round
        edges = 0
        counts = self._io_counts()
        bar = self._progress(progress, None)
        for r in range(first, len(self.rounds)):
            before = self._flat_relations().clone() if self.world > 1 else None
            if self.store is not None:
                edges += self._train_round_out_of_core(epoch, r, bar, check_every)
            else:
                group = self._group(partition_order.round_buckets(self.rounds, r, self.rank))
                if group is not None:
                    edges += len(group)
                    self._train_edges(epoch, group, bar, check_every)
            self._combine_relations(before)
            self._exchange(r)
            self.round = (r + 1) % len(self.rounds)
            if (self.directory is not None and self.checkpoint_every and self.round
                    and self.round % self.checkpoint_every == 0):
                self.save()
            if after_round is not None:
                after_round(self, r)
        record = self._end_epoch(epoch)
        totals = self.group.all_gather_object(
            (record["loss"] * epoch["batches"], epoch["batches"], record["seconds"]))
        record.update(loss=sum(t[0] for t in totals) / max(1, sum(t[1] for t in totals)),
                      seconds=max(t[2] for t in totals), rounds=len(self.rounds) - first,
                      edges=edges)
        if counts is not None:
            io = self._io()
            record.update({k: v - counts[k] for k, v in self._io_counts().items()},
                          stall_seconds=io.stall_seconds())
        self.log[-1] = record
        if self.directory is not None:
            self.save()
        return record

    def _io_counts(self):
        """Out of core, this rank's partition traffic so far (the one-GPU
        trainer's, and the partitions and bytes received from other ranks
        over NCCL); None in memory."""
        if self.store is None:
            return None
        return {**super()._io_counts(), "received": self._received[0],
                "bytes_received": self._received[1]}

    def describe(self, batch):
        return super().describe(batch) + f" (rank {self.rank})"

    # -- checkpoints ----------------------------------------------------------

    def save(self, path=None):
        """Writes the state at this round boundary under the directory
        (collective; see the module's description); returns its path."""
        if path is not None or self.directory is None:
            raise ValueError("a DistributedTrainer saves into the directory it was made with")
        tag = f"state-{self.epoch}-{self.round}"
        where = self.directory / tag
        store = out_of_core_module.PartitionStore(where, self.ranges, self.fingerprint())
        if self.store is not None:
            # The partitions still loaded to their files first.
            self._io().write_back()
            self.group.barrier()
            for p in self._dealt():
                self.store.copy(p, store)
        else:
            for p, slot in sorted(self.slot_of.items()):
                views = self._slot_arrays(slot, self.sizes[p])
                store.store(p, {n: v.detach().cpu().numpy() for n, v in views.items()})
        ranks = self.group.all_gather_object(
            (self.generator.get_state().numpy(), self.optimizer.steps))
        if self.rank == 0:
            arrays = {t: self.model.tables[t].detach().cpu().numpy()
                      for t in self.relation_tables}
            states, _ = self._optimizer_state(self.relation_tables)
            arrays.update(states)
            for k, (generator, _) in enumerate(ranks):
                arrays[f"generator.{k}"] = generator
            checkpoint.save(where / "model.kge", arrays, "model", self.fingerprint(),
                            {"epoch": self.epoch, "round": self.round, "log": self.log,
                             "steps": [int(steps) for _, steps in ranks]})
        self.group.barrier()
        if self.rank == 0:
            checkpoint.write_bytes(self.directory / "latest.json", json.dumps(
                {"state": tag, "epoch": self.epoch, "round": self.round,
                 "ranks": self.world}).encode())
            for old in self.directory.glob("state-*"):
                if old.name != tag:
                    shutil.rmtree(old, ignore_errors=True)
        self.group.barrier()
        return where

    def _resume(self):
        import torch
        latest = self.directory / "latest.json"
        try:
            latest_state = json.loads(latest.read_text())
            tag, ranks = latest_state["state"], latest_state["ranks"]
        except FileNotFoundError:
            raise checkpoint.CheckpointError(f"{self.directory} holds no checkpoint "
                                             "(no latest.json)") from None
        except (ValueError, KeyError, TypeError):
            raise checkpoint.CheckpointError(f"{latest} is corrupt") from None
        if not isinstance(tag, str) or not re.fullmatch(r"state-\d+-\d+", tag):
            raise checkpoint.CheckpointError(f"{latest} names {tag!r}, not a state directory")
        if ranks != self.world:
            raise checkpoint.CheckpointError(
                f"{latest} is the state of {ranks} ranks; this job has {self.world} (the "
                "partitions and their schedule depend on the number of ranks)")
        where = self.directory / tag
        arrays, meta = checkpoint.load(where / "model.kge", "model", self.fingerprint())
        steps = meta.get("steps", [])
        if len(steps) != self.world or f"generator.{self.rank}" not in arrays:
            raise checkpoint.CheckpointError(f"{where / 'model.kge'} was written by "
                                             f"{len(steps)} ranks, not {self.world}")
        self.epoch, self.round = int(meta["epoch"]), int(meta["round"])
        self.log = list(meta.get("log", []))
        store = out_of_core_module.PartitionStore(where, self.ranges, self.fingerprint())
        self.slot_of.clear()
        if self.store is not None:
            for p in self._dealt():
                store.load(p)  # (checked)
                store.copy(p, self.store)
            self.group.barrier()
        else:
            for slot, p in enumerate(self.rounds[self.round][self.rank]):
                self._copy_in(slot, p, store.load(p))
        with torch.no_grad():
            for t in self.relation_tables:
                self.model.tables[t].copy_(torch.as_tensor(arrays[t]))
        self._load_optimizer_state(arrays, {"steps": steps[self.rank]}, self.relation_tables)
        self.generator.set_state(torch.as_tensor(arrays[f"generator.{self.rank}"]))

    def load(self, path=None):
        """Continues from the latest checkpoint of the directory."""
        if path is not None:
            raise ValueError("a DistributedTrainer resumes from its directory's latest state")
        self._resume()

    # -- the whole model ------------------------------------------------------

    def gather(self, root=0, device=None):
        """The trained model whole on rank `root` (a kge.training.Model, on
        `device`, default the trainer's), None on the other ranks;
        collective."""
        import torch
        if self.store is not None:
            return self._gather_files(root, device)
        holder = {p: g for g, pair in enumerate(self.rounds[self.round]) for p in pair}
        whole = {}
        if self.rank == root:
            whole = {t: torch.empty(self.num_entities, self.dim, device=self.device)
                     for t in self.entity_tables}
        sends, receives = [], []
        for p in range(len(self.ranges) - 1):
            begin, end = int(self.ranges[p]), int(self.ranges[p + 1])
            for t in self.entity_tables:
                if holder[p] == self.rank:
                    slot = self.slot_of[p] * self.rows
                    rows = self.model.tables[t].data[slot:slot + end - begin]
                    if self.rank == root:
                        whole[t][begin:end].copy_(rows)
                    else:
                        sends.append((root, rows))
                elif self.rank == root:
                    receives.append((holder[p], whole[t][begin:end]))
        self.group.exchange(sends, receives)
        if self.rank != root:
            return None
        return self._model(whole, device)

    def _gather_files(self, root, device):
        import torch
        self._io().write_back()
        self.group.barrier()
        if self.rank != root:
            return None
        arrays = self.store.gather()
        return self._model({t: torch.as_tensor(arrays[t]) for t in self.entity_tables}, device)

    def _model(self, whole, device):
        """The model of the entity tables `whole` (rows in the trainer's
        order) and the relation tables, on `device`."""
        import torch
        device = self.device if device is None else torch.device(device)
        if self.entity_rows is not None:
            whole = {t: values[torch.as_tensor(self.entity_rows, device=values.device)]
                     for t, values in whole.items()}
        tables = {}
        for name, table in self.model.tables.items():
            values = whole[name] if name in whole else table.detach()
            tables[name] = torch.nn.Parameter(values.to(device).clone())
        return training.Model(self.model.name, tables, self.model.score, self.model.distance,
                              self.model.operator)


# ---------------------------------------------------------------------------
# Gram matrices
# ---------------------------------------------------------------------------

def snake(count, world, like=None):
    """The rank of each of `count` items dealt in snake order (0 .. w-1,
    w-1 .. 0, ...): NumPy, or a tensor on the device of the tensor `like`.
    Items sorted dearest first, the ranks' totals differ by at most the
    dearest item."""
    if like is not None and not isinstance(like, np.ndarray):
        import torch
        position = torch.arange(count, device=like.device) % (2 * world)
        return torch.minimum(position, 2 * world - 1 - position)
    position = np.arange(count) % (2 * world)
    return np.minimum(position, 2 * world - 1 - position)


def blocks(group=None):
    """A kge.kron `share` (pack_shared, octiles_shared) over the ranks of
    `group`: each rank computes a block of consecutive graphs (rank r the
    r-th of `world` nearly equal ones), all gather the blocks, in order;
    collective."""
    import time
    group = _default_group(group)

    def share(compute, count):
        start, stop = count * group.rank // group.world, count * (group.rank + 1) // group.world
        began = time.perf_counter()
        own = compute(start, stop) if stop > start else None
        computed = time.perf_counter()
        parts = group.all_gather_arrays(own)
        share.seconds["own block"] += computed - began
        share.seconds["gather"] += time.perf_counter() - computed
        return [part for part in parts if part is not None]
    # (Seconds spent on this rank's blocks, and gathering them all.)
    share.seconds = {"own block": 0.0, "gather": 0.0}
    return share


def gram(kernel, X, Y=None, group=None, root=None):
    """kernel(X, Y) (a kge.kron.MarginalizedGraphKernel, not node-wise)
    computed by the ranks of `group` (default: torch.distributed's) together
    and returned on every rank, or with `root` on that rank only (the
    others return None: one copy of the matrix to the host instead of one
    per rank); collective. Each rank solves the pairs
    dealt to it by cost (in snake order down the schedule, which is sorted
    by cost) on its device (the kernel's: NCCL ranks use their
    GPU) and, when normalizing, the self-kernels too (on GPUs, the
    datasets are packed and tiled a block of graphs per rank, and
    gathered); the entries are summed across ranks, each written by exactly one: the matrix is the one-device
    one, bit for bit. Pairs that do not converge are reported as the kernel
    reports them, on every rank that returns the matrix (the others'
    kernel.failed_pairs is None)."""
    import torch
    from . import kron
    group = _default_group(group)
    if root is not None and (isinstance(root, bool) or not isinstance(root, (int, np.integer))
                             or not 0 <= root < group.world):
        raise ValueError(f"root is a rank of the group (0 .. {group.world - 1}), not {root!r}")
    X = [kron.as_labeled_graph(g) for g in X]
    Y = None if Y is None else [kron.as_labeled_graph(g) for g in Y]

    def select(kind, a, b):
        # The schedule is sorted by cost already: dealt by position.
        owned = snake(len(kind), group.world, kind) == group.rank
        needed = owned | (kind != 0) | ((a == b) & (Y is None)) if kernel.normalize else owned
        return owned, needed

    import time
    share = blocks(group)
    k, iterations = kernel.partial(X, Y, select, share)
    start = time.perf_counter()
    values, counts = (a.contiguous() if isinstance(a, torch.Tensor)
                      else torch.as_tensor(np.ascontiguousarray(a)) for a in (k, iterations))
    for part in (values, counts):
        if root is None:
            group.all_reduce_sum(part)
        else:
            group.reduce_sum(part, root)
    summed = time.perf_counter()
    result = None
    if root is None or group.rank == root:
        result = kernel.finish(values, counts)
    else:
        # (The failures are known on the root only.)
        kernel.failed_pairs = None
        if isinstance(values, torch.Tensor) and values.is_cuda:
            torch.cuda.synchronize(values.device)
    # (GPU kernels: the seconds of each step on this rank.)
    if isinstance(getattr(kernel, "timings", None), dict):
        kernel.timings.update(reduce=summed - start, finish=time.perf_counter() - summed,
                              **{f"blocks: {k}": v for k, v in share.seconds.items()})
    return result
