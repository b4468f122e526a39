"""Link prediction data and evaluation for training KGE models.

- `wn18_like(...)`: the WN18-like knowledge graph from the real WordNet 3.0
  (Debian's wordnet-base): synsets as entities, WN18's 18 relations (the
  pointer symbols of hypernymy, hyponymy, the holonyms and meronyms,
  instances, derivation, also-see, verb groups, similarity and the domain
  relations), entities kept while they take part in at least `min_degree`
  triples, and a fixed split (validation and test triples whose entities
  and relation all occur in training). With the defaults: 64,319
  entities, 241,650 training triples, 5,000 validation and 5,000 test
  triples (WN18: 40,943 entities, 141,442 / 5,000 / 5,000; WordNet's
  pointers come with their inverses, so degrees step by two: the next
  threshold keeps 15,146 entities).
- `filtered_ranks(score, triples, known)`: the standard filtered ranking
  protocol. For each (h, r, t), the tail t is ranked among all entities
  scored as (h, r, e), every other e with (h, r, e) a known true triple
  left out; the head likewise among (e, r, t). Ties count half (the
  "realistic" rank: 1 + #better + #equal / 2).
- `ranking_metrics(ranks)`: MRR and Hits@1/3/10 of the ranks.
"""

import numpy as np

#: WN18's relations as WordNet pointer symbols (Bordes et al., 2013).
WN18_RELATIONS = (
    "@", "~", "@i", "~i", "#m", "%m", "#p", "%p", "+", "^", "$", "&",
    ";c", "-c", ";r", "-r", ";u", "-u",
)


class Triples:
    """A knowledge graph split for link prediction: `train`, `valid` and
    `test` triples ([N, 3] int64: head, relation, tail), `num_entities`,
    `relations` (their names; relation r is relations[r])."""

    def __init__(self, train, valid, test, num_entities, relations):
        self.train, self.valid, self.test = train, valid, test
        self.num_entities = int(num_entities)
        self.relations = tuple(relations)

    @property
    def num_relations(self):
        return len(self.relations)

    def all_triples(self):
        return np.concatenate([self.train, self.valid, self.test])


def split(triples, valid, test, seed=0):
    """A fixed split of `triples` ([N, 3]): `valid` and `test` triples drawn
    (seeded) among those whose head, tail and relation occur in the triples
    kept for training, the rest for training."""
    triples = np.asarray(triples, np.int64)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(triples))
    held = np.zeros(len(triples), bool)
    entity_count = np.bincount(triples[:, [0, 2]].ravel())
    relation_count = np.bincount(triples[:, 1])
    wanted = valid + test
    taken = 0
    for k in order:
        if taken == wanted:
            break
        h, r, t = triples[k]
        # Held out only where training keeps every part of the triple.
        needed = 2 if h == t else 1
        if entity_count[h] > needed and entity_count[t] > needed and relation_count[r] > 1:
            held[k] = True
            entity_count[h] -= 1
            entity_count[t] -= 1
            relation_count[r] -= 1
            taken += 1
    if taken < wanted:
        raise ValueError(f"only {taken} triples can be held out keeping every entity and "
                         f"relation in training; {wanted} asked")
    held_out = triples[order[held[order]]]
    return triples[~held], held_out[:valid], held_out[valid:]


def wn18_like(root=None, min_degree=4, valid=5000, test=5000, seed=0):
    """The WN18-like graph (see the module's description) as Triples."""
    from . import graph
    g = graph.wordnet(**({} if root is None else {"root": root}), relations=WN18_RELATIONS)
    triples = np.stack([g.src, g.etype, g.dst], 1).astype(np.int64)
    triples = triples[triples[:, 0] != triples[:, 2]]
    # Keep entities of at least min_degree triples (repeatedly: dropping
    # triples lowers other entities' degrees).
    while True:
        degree = np.bincount(triples[:, [0, 2]].ravel(), minlength=g.num_nodes)
        keep = (degree[triples[:, 0]] >= min_degree) & (degree[triples[:, 2]] >= min_degree)
        if keep.all():
            break
        triples = triples[keep]
    entities, dense = np.unique(triples[:, [0, 2]], return_inverse=True)
    triples[:, [0, 2]] = dense.reshape(-1, 2)
    used = np.unique(triples[:, 1])
    relation_index = np.full(g.num_edge_types, -1)
    relation_index[used] = np.arange(len(used))
    triples[:, 1] = relation_index[triples[:, 1]]
    train, valid_triples, test_triples = split(triples, valid, test, seed)
    return Triples(train, valid_triples, test_triples, len(entities),
                   [g.edge_type_names[r] for r in used])


def _check(triples, num_entities, num_relations, what):
    triples = np.asarray(triples)
    if triples.ndim != 2 or triples.shape[1] != 3:
        raise ValueError(f"{what} must be [N, 3] (head, relation, tail), got shape "
                         f"{triples.shape}")
    triples = triples.astype(np.int64)
    for column, name, bound in ((0, "head", num_entities), (1, "relation", num_relations),
                                (2, "tail", num_entities)):
        bad = (triples[:, column] < 0) | (triples[:, column] >= bound)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{what}[{k}] has {name} {int(triples[k, column])} outside "
                             f"[0, {bound})")
    return triples


def filtered_ranks(score, triples, known, num_entities, num_relations, batch=65536):
    """The filtered ranks of each triple's tail and head, [N, 2].
    `score(heads, relations, tails)` scores arrays of equal length (higher
    is more plausible); `known` holds every true triple (train, valid and
    test) that the protocol filters out."""
    triples = _check(triples, num_entities, num_relations, "triples")
    known = _check(known, num_entities, num_relations, "known")
    by_tail, by_head = {}, {}
    for h, r, t in known.tolist():
        by_tail.setdefault((h, r), []).append(t)
        by_head.setdefault((r, t), []).append(h)
    entities = np.arange(num_entities)
    ranks = np.empty((len(triples), 2))
    for k, (h, r, t) in enumerate(triples.tolist()):
        for side, (fixed, truth, filtered) in enumerate(
                ((h, t, by_tail.get((h, r), [])), (t, h, by_head.get((r, t), [])))):
            if side == 0:
                scores = _batched(score, np.full(num_entities, h), np.full(num_entities, r),
                                  entities, batch)
            else:
                scores = _batched(score, entities, np.full(num_entities, r),
                                  np.full(num_entities, t), batch)
            scores = np.asarray(scores, np.float64)
            if not np.isfinite(scores[truth]):
                raise ValueError(f"triple {k} ({h}, {r}, {t}) scores {scores[truth]}")
            others = np.ones(num_entities, bool)
            others[filtered] = False
            others[truth] = False
            better = np.count_nonzero(scores[others] > scores[truth])
            equal = np.count_nonzero(scores[others] == scores[truth])
            ranks[k, side] = 1 + better + equal / 2
    return ranks


def _batched(score, heads, relations, tails, batch):
    return np.concatenate([np.asarray(score(heads[i:i + batch], relations[i:i + batch],
                                            tails[i:i + batch]), np.float64).ravel()
                           for i in range(0, len(heads), batch)])


def ranking_metrics(ranks):
    """MRR and Hits@1, @3, @10 over all ranks (heads and tails)."""
    ranks = np.asarray(ranks, np.float64).ravel()
    return {"mrr": float((1 / ranks).mean()),
            **{f"hits@{k}": float((ranks <= k).mean()) for k in (1, 3, 10)}}
