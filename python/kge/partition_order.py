"""Partition orders for training embeddings beyond GPU memory.

The node embeddings (with their optimizer states) are split into `n`
partitions and the edges into `n x n` buckets by (source partition,
destination partition). A GPU buffer holds `capacity` partitions; a bucket
can be trained while both its partitions are in the buffer. An order is a
sequence of buffer states, each from the one before by one swap (one
partition written back, one loaded), such that every bucket is covered;
its I/O count is the number of partition loads (`capacity` for the first
state, one per swap).

- `legend_order(n)`: Legend's prefetch-friendly order (Section 4 of its
  paper, Algorithm 1; capacity 3): columns of buckets covered one after
  the other, the column's partition kept in the buffer, each swap loading
  the partition that covers the most buckets not yet covered and never
  evicting the partition the swap before loaded (Theorem 1's property
  (1)), so that the next partition can be loaded while the buffer still
  has buckets to train.
- `legend_buckets(states, n)`: Algorithm 2, the buckets each state
  trains, those of the partition the next swap evicts first.
- `beta_order(n, capacity)`: Marius's BETA order (the buffer's last slot
  sweeps the partitions on disk, then the other slots are replaced).
- `pbg_order(n)`: PyTorch-BigGraph's inside-out bucket order with the two
  partitions of the current bucket in memory (capacity 2), and its loads.
- `first_cover(states, n)`: each bucket assigned to the first state that
  holds both its partitions.
- `prefetch_failures(states, buckets)`, `is_prefetching_supported`:
  Legend's Definition 1 (the paper's order, which keeps Theorem 1's
  property (1) but not (2), misses it on a few swaps: 4 of 36 at n = 12;
  this one on 4 of 37, BETA on 20 of 36).
- `circle_rounds(world)`: the rounds of distributed training on `world`
  GPUs (kge.distributed): 2 * world partitions, each GPU holding two per
  round, every pair of partitions held together by one GPU once in
  2 * world - 1 rounds (the circle method of round-robin tournaments);
  between rounds each GPU passes at most two partitions to its
  neighbours. `round_buckets(rounds, r, g)`: the buckets GPU g trains in
  round r.
- `round_labels(rounds, split, states)` and `handover(last, first,
  capacity)`: out of core on several GPUs, how each GPU walks an order
  over its pair's partitions in each round, chosen so that a round starts
  from what the GPUs end the round before with, and how the partitions
  move between two rounds (kept in place, passed over NCCL, written back).
- `io_count(states)` and `lower_bound(n, capacity)` (the Schoenheim bound
  on the covering design C(n, capacity, 2): every state after the first
  adds one block).
"""

import math

import numpy as np


def check_order(states, n, capacity):
    """Raises ValueError unless `states` is an order of `n` partitions with
    a buffer of `capacity`: states of `capacity` distinct partitions, each
    from the one before by one swap, covering every bucket."""
    if n < capacity:
        raise ValueError(f"{n} partitions fit a buffer of {capacity}: no order needed")
    covered = np.zeros((n, n), bool)
    for k, state in enumerate(states):
        if len(set(state)) != capacity or not all(0 <= p < n for p in state):
            raise ValueError(f"buffer state {k} {sorted(state)} is not {capacity} distinct "
                             f"partitions of {n}")
        if k and len(set(state) - set(states[k - 1])) != 1:
            raise ValueError(f"buffer state {k} {sorted(state)} is not one swap from "
                             f"{sorted(states[k - 1])}")
        members = list(state)
        covered[np.ix_(members, members)] = True
    if not covered.all():
        missing = np.argwhere(~covered)[:4].tolist()
        raise ValueError(f"the order leaves buckets uncovered, e.g. {missing}")


def io_count(states):
    """Partition loads of an order: the first state's, then one per swap."""
    return len(states[0]) + len(states) - 1


def lower_bound(n, capacity=3):
    """The fewest loads any order with one swap per state can make: the
    states are blocks of a covering design C(n, capacity, 2), at least the
    Schoenheim bound ceil(n / c * ceil((n - 1) / (c - 1))) of them."""
    blocks = math.ceil(n / capacity * math.ceil((n - 1) / (capacity - 1)))
    return capacity + blocks - 1


def _swap(state, out, into):
    return tuple(sorted((set(state) - {out}) | {into}))


def legend_order(n):
    """Legend's partition loading order for a buffer of 3 (Algorithm 1):
    buffer states, each a sorted tuple."""
    if n < 4:
        raise ValueError(f"Legend's order swaps partitions: it needs at least 4, got {n}")
    covered = np.zeros((n, n), bool)
    states = [(0, 1, 2)]
    loaded = [2]  # the partition each state's swap loaded

    def cover(state):
        covered[np.ix_(state, state)] = True

    cover(states[0])
    # Column 0: partition 0 stays while the others stream through it.
    for i in range(3, n):
        states.append(_swap(states[-1], i - 2, i))
        loaded.append(i)
        cover(states[-1])
    column = 0
    while not covered.all():
        buffer = states[-1]
        if covered[column].all():
            # The next column with buckets left: its partition stays from
            # now on.
            column = next(c for c in range(column + 1, n) if not covered[c].all())
            if column in buffer:
                continue
            evict = [p for p in buffer if p != loaded[-1]]
            # Evict the partition with the fewest buckets left (ties: the
            # larger id).
            out = max(evict, key=lambda p: (-int((~covered[p]).sum()), p))
            into = column
        else:
            stay = [p for p in buffer if p == column or p == loaded[-1]]
            candidates = [p for p in buffer if p not in stay]
            out = max(candidates, key=lambda p: (-int((~covered[p]).sum()), p))
            keep = [p for p in buffer if p != out]
            outside = [p for p in range(n) if p not in buffer]
            # The partition that covers the most buckets left with the two
            # that stay; ties: the first after the buffer's largest id,
            # cyclically (the paper's scan from the maximal id).
            start = max(buffer) + 1
            into = max(outside, key=lambda p: (
                int(sum((~covered[p, q]) for q in keep)) + int(not covered[p, p]),
                -((p - start) % n)))
        states.append(_swap(buffer, out, into))
        loaded.append(into)
        cover(states[-1])
    return states


def first_cover(states, n):
    """Each bucket in the first state holding both its partitions: the
    buckets each state trains (diagonal, then pairs by partition id)."""
    done = np.zeros((n, n), bool)
    out = []
    for state in states:
        trained = []
        for a in state:
            for b in state:
                if not done[a, b]:
                    done[a, b] = True
                    trained.append((a, b))
        out.append(trained)
    return out


def legend_buckets(states, n):
    """Algorithm 2: the buckets each state trains, those of the partition
    the next swap evicts first (while they train, nothing can be loaded;
    the others then cover the load of the next partition)."""
    done = np.zeros((n, n), bool)
    out = []
    for k, state in enumerate(states):
        evicted = set(state) - set(states[k + 1]) if k + 1 < len(states) else set()
        order = sorted(state, key=lambda p: (p not in evicted, p))
        trained = []
        for a in order:
            for b in state:
                for bucket in ((a, b), (b, a)):
                    if not done[bucket]:
                        done[bucket] = True
                        trained.append(bucket)
        out.append(trained)
    return out


def prefetch_failures(states, buckets):
    """The swaps that Legend's Definition 1 does not hold for: state k
    (followed by swap k) trains no bucket without the partition it evicts,
    so the next partition cannot load while a bucket trains. `buckets[k]`:
    the buckets state k trains."""
    failures = []
    for k in range(len(states) - 1):
        (evicted,) = set(states[k]) - set(states[k + 1])
        if not any(evicted not in bucket for bucket in buckets[k]):
            failures.append(k)
    return failures


def is_prefetching_supported(states, buckets):
    """Legend's Definition 1 for every swap of the order."""
    return not prefetch_failures(states, buckets)


def beta_order(n, capacity=3):
    """Marius's BETA order: the buffer starts with partitions 0 .. c - 1;
    while partitions remain on disk, the buffer's last slot sweeps through
    them (one swap each), then its other c - 1 slots are replaced by the
    first c - 1 partitions on disk (one swap each); those that leave have
    met every partition."""
    if n <= capacity:
        raise ValueError(f"{n} partitions fit a buffer of {capacity}: no order needed")
    buffer = list(range(capacity))
    disk = list(range(capacity, n))
    states = [tuple(sorted(buffer))]
    while disk:
        for i in range(len(disk)):
            disk[i], buffer[-1] = buffer[-1], disk[i]
            states.append(tuple(sorted(buffer)))
        replaced = 0
        for i in range(min(capacity - 1, len(disk))):
            buffer[i] = disk[i]
            replaced += 1
            states.append(tuple(sorted(buffer)))
        disk = disk[replaced:]
    return states


def pbg_order(n):
    """PyTorch-BigGraph's inside-out bucket order (layers from the last
    partition to the first: (k, k), then (k, j) and (j, k) for j > k),
    each bucket trained with its two partitions in memory (capacity 2,
    the least recently used partition written back): the bucket sequence
    and its partition loads."""
    if n < 2:
        raise ValueError(f"PBG's order needs at least 2 partitions, got {n}")
    sequence = []
    for k in range(n - 1, -1, -1):
        sequence.append((k, k))
        for j in range(k + 1, n):
            sequence += [(k, j), (j, k)]
    memory, loads = [], 0
    for bucket in sequence:
        for p in bucket:
            if p in memory:
                memory.remove(p)
            else:
                loads += 1
                if len(memory) == 2:
                    memory.pop(0)
            memory.append(p)
    return sequence, loads


def circle_rounds(world):
    """rounds[r][g] = (a, b): the two partitions of 2 * world that GPU g
    holds in round r of 2 * world - 1. The circle method: partition 0
    stays at position 0, the others at positions 1 .. 2w - 1 move one
    position down after each round (the one at position 1 to the last);
    GPU g holds positions g and 2w - 1 - g. Every unordered pair of
    partitions is held by one GPU in exactly one round, every partition by
    one GPU in every round, and from one round to the next (the last to
    the first too) a GPU sends at most two partitions and receives at most
    two, all to and from its neighbours g - 1 and g + 1 (round_moves)."""
    if not isinstance(world, int) or isinstance(world, bool) or world < 1:
        raise ValueError(f"a distributed order needs a positive number of GPUs, got {world!r}")
    n = 2 * world
    m = n - 1
    rounds = []
    for r in range(m):
        position = [0] + [1 + (i - 1 + r) % m for i in range(1, n)]
        rounds.append([(position[g], position[n - 1 - g]) for g in range(world)])
    return rounds


def round_buckets(rounds, r, g):
    """The buckets GPU g trains in round r of `rounds` (circle_rounds): the
    two of its pair, (a, b) and (b, a), and the r-th of len(rounds) equal
    chunks of each partition's own bucket, (a, a, r, m) and (b, b, r, m) —
    so every GPU trains about as many edges in every round."""
    a, b = rounds[r][g]
    m = len(rounds)
    return [(a, b), (b, a), (a, a, r, m), (b, b, r, m)]


def round_moves(rounds, r):
    """The partitions that change GPU between round r and the next (the
    last round's next is the first): [(partition, from GPU, to GPU)]."""
    holder = {p: g for g, pair in enumerate(rounds[r]) for p in pair}
    following = rounds[(r + 1) % len(rounds)]
    return sorted((p, holder[p], g) for g, pair in enumerate(following) for p in pair
                  if holder[p] != g)


def _labelings(states, n, limit=None, rng=None):
    """The relabelings round_labels tries for `states`, an order over n
    partitions: only which partitions its first and last states hold
    matters, so one relabeling per pair of sets — the parts at the
    positions both states hold, those only the first holds, those only
    the last holds (the other positions in increasing order) — walked
    forwards and backwards (360 for Legend's order over 6, 3,360 over 8,
    against 1,440 and 80,640 permutations and directions). Where there are
    more than `limit` a direction, `limit` of them drawn by `rng`. Each is
    ((perm, backwards), the parts the walk's first state holds, those its
    last state holds)."""
    import itertools
    labels = []
    for backwards in (False, True):
        first, last = (states[-1], states[0]) if backwards else (states[0], states[-1])
        both = [i for i in first if i in last]
        only_first = [i for i in first if i not in last]
        only_last = [i for i in last if i not in first]
        others = [i for i in range(n) if i not in first and i not in last]

        def label(shared, starting, ending):
            perm = [0] * n
            left = [p for p in range(n) if p not in shared and p not in starting]
            unused = [p for p in left if p not in ending]
            for positions, parts in ((both, shared), (only_first, starting),
                                     (only_last, ending), (others, unused)):
                for i, p in zip(positions, parts):
                    perm[i] = p
            return ((tuple(perm), backwards), [perm[i] for i in first], [perm[i] for i in last])

        count = (math.comb(n, len(both)) * math.comb(n - len(both), len(only_first))
                 * math.comb(n - len(both) - len(only_first), len(only_last)))
        if limit is not None and count > limit:
            for _ in range(limit):
                drawn = rng.sample(range(n), len(both) + len(only_first) + len(only_last))
                a, b = len(both), len(both) + len(only_first)
                labels.append(label(sorted(drawn[:a]), sorted(drawn[a:b]), sorted(drawn[b:])))
            continue
        for shared in itertools.combinations(range(n), len(both)):
            rest = [p for p in range(n) if p not in shared]
            for starting in itertools.combinations(rest, len(only_first)):
                left = [p for p in rest if p not in starting]
                for ending in itertools.combinations(left, len(only_last)):
                    labels.append(label(shared, starting, ending))
    return labels


def round_labels(rounds, split, states, passes=2, steps=200000, seed=0, candidates=2048):
    """Out of core on several GPUs: how each GPU walks `states` (an order's
    buffer states over 2 x `split` partitions, positions 0 .. 2 x split - 1)
    in each round of `rounds` (circle_rounds). In round r GPU g holds the
    partitions (a, b) of rounds[r][g], each cut into `split`: the positions
    are a's `split` parts then b's. labels[r][g] = (perm, backwards): the
    order's position i is part perm[i] of that list, walked from its last
    state to its first if backwards.

    Chosen so that a round's first state holds what the GPUs end the round
    before with — kept in place or passed over NCCL (handover()) — and
    loads as few partitions as possible from files. First greedily: rounds
    in turn, `passes` times over the epoch (the first round follows the
    last round of the epoch before), each GPU's labelling the one whose
    first state loads the fewest given the round before's last states
    (ties: more kept in place, then a last state holding more of the GPU's
    next pair). Then, while partitions are still loaded, a local search
    over all the labels (simulated annealing, at most `steps` steps from a
    fixed `seed`) that keeps the best seen: greedy leaves 7 first-state
    loads an epoch on 4 GPUs with partitions cut in 2, the search none.
    Where an order has more than `candidates` labelings a direction
    (_labelings; many partitions per round), that many drawn from `seed`
    are weighed. Deterministic: every GPU computes every GPU's labels
    (DistributedTrainer checks that they agree)."""
    import random
    n = 2 * split
    if sorted(set(p for state in states for p in state)) != list(range(n)):
        raise ValueError(f"the states are not an order over {n} partitions")
    m, world = len(rounds), len(rounds[0])
    rng = random.Random(seed)
    candidates = _labelings(states, n, candidates, rng)

    def parts(pair):
        return [p * split + k for p in pair for k in range(split)]

    ids = [[parts(rounds[r][g]) for g in range(world)] for r in range(m)]

    def ends(r, g, c):
        """(first state, last state) of GPU g in round r under candidate c."""
        _, first, last = candidates[c]
        return {ids[r][g][i] for i in first}, {ids[r][g][i] for i in last}

    chosen = [[0] * world for _ in range(m)]
    walks = [[ends(r, g, 0) for g in range(world)] for r in range(m)]
    for _ in range(passes):
        for r in range(m):
            before = walks[(r - 1) % m]
            for g in range(world):
                own = before[g][1]
                others = set().union(*(before[q][1] for q in range(world) if q != g))
                following = set(parts(rounds[(r + 1) % m][g]))
                best = None
                for c in range(len(candidates)):
                    start, end = ends(r, g, c)
                    kept = len(start & own)
                    score = (-(len(start) - kept - len(start & others)), kept,
                             len(end & following))
                    if best is None or score > best[0]:
                        best = (score, c)
                chosen[r][g] = best[1]
                walks[r][g] = ends(r, g, best[1])

    def loads(r):
        held = set().union(*(walks[(r - 1) % m][q][1] for q in range(world)))
        return sum(len(walks[r][g][0] - held) for g in range(world))

    per_round = [loads(r) for r in range(m)]
    total = best_total = sum(per_round)
    best = [row[:] for row in chosen]
    temperature = 2.0
    for _ in range(steps if m > 1 else 0):
        if best_total == 0:
            break
        r, g, c = rng.randrange(m), rng.randrange(world), rng.randrange(len(candidates))
        previous = chosen[r][g], walks[r][g]
        chosen[r][g], walks[r][g] = c, ends(r, g, c)
        following = (r + 1) % m
        changed = {r: loads(r), following: loads(following)}
        delta = sum(changed[k] - per_round[k] for k in changed)
        if delta <= 0 or rng.random() < math.exp(-delta / temperature):
            for k, v in changed.items():
                per_round[k] = v
            total += delta
            if total < best_total:
                best_total, best = total, [row[:] for row in chosen]
        else:
            chosen[r][g], walks[r][g] = previous
        temperature = max(0.05, temperature * 0.9999)
    return [[candidates[c][0] for c in row] for row in best]


def handover(last, first, capacity):
    """Between two rounds: what GPU g's buffer holds at the end of one
    (last[g]: its last state's partitions) becomes what the next round's
    first state needs (first[g]). Partitions in both stay; a partition of
    last[g] in another GPU's first state is passed to it over NCCL; the rest
    of last[g] is written back to its file. Returns (writes, phases):
    writes[g], the partitions g writes back first (freeing their slots);
    phases, lists of moves (partition, from, to, into). A move with `into`
    None is received into a slot free before its phase (a slot sent in a
    phase is free after it). Where every receiver of the pending moves is
    full, the moves form cycles of GPUs each sending a partition and
    receiving one: a phase of disjoint cycles, each move received into the
    slot of the partition its receiver sends in it (`into`), piece by piece
    through a small buffer."""
    world = len(last)
    last = [set(s) for s in last]
    first = [set(s) for s in first]
    holder = {}
    for g, state in enumerate(first):
        for p in state:
            if p in holder:
                raise ValueError(f"partition {p} is in the first states of GPUs {holder[p]} "
                                 f"and {g}")
            holder[p] = g
    writes = [[] for _ in range(world)]
    pending = []
    free = [capacity - len(s) for s in last]
    for g in range(world):
        if len(last[g]) > capacity or len(first[g]) > capacity:
            raise ValueError(f"GPU {g}'s states {sorted(last[g])}, {sorted(first[g])} do not "
                             f"fit a buffer of {capacity}")
        for p in sorted(last[g] - first[g]):
            if p in holder:
                pending.append((p, g, holder[p]))
            else:
                writes[g].append(p)
                free[g] += 1
    phases = []
    while pending:
        room, phase = list(free), []
        for move in pending:
            if room[move[2]] > 0:
                room[move[2]] -= 1
                phase.append(move + (None,))
        if not phase:
            # Every receiver is full, so each sends a pending move (its
            # first state could not hold what it receives otherwise):
            # following receivers to their first pending send reaches a
            # GPU again. Every such cycle of GPUs not in one already joins
            # the phase (at least the first: pending[0]'s).
            sends = {}
            for move in pending:
                sends.setdefault(move[1], move)
            used = set()
            for start in [move[1] for move in pending]:
                path, g = [], start
                while g in sends and g not in used and g not in [m[1] for m in path]:
                    path.append(sends[g])
                    g = sends[g][2]
                if g in used or g not in sends:
                    continue
                cycle = path[[move[1] for move in path].index(g):]
                sent_by = {move[1]: move[0] for move in cycle}
                phase += [move + (sent_by[move[2]],) for move in cycle]
                used |= set(sent_by)
        for p, g, q, into in phase:
            if into is None:
                free[q] -= 1
                free[g] += 1
        done = {move[:3] for move in phase}
        pending = [move for move in pending if move not in done]
        phases.append(sorted(phase))
    return writes, phases
