"""Small knowledge graphs for the training tests."""

import numpy as np


def clustered(seed=0, entities=900, relations=6, clusters=30, edges=20000, held_out=500):
    """A graph with structure to learn: entities in clusters, relation r
    maps cluster c to cluster c + 3r + 1; heads drawn with power-law
    popularity. Returns (train, test, all) triples, `held_out` of them in
    test. (Also the GPU tests' graph: test/gpu/test_out_of_core.py.)"""
    rng = np.random.default_rng(seed)
    cluster = rng.integers(0, clusters, entities)
    members = [np.flatnonzero(cluster == c) for c in range(clusters)]
    weights = 1.0 / np.arange(1, entities + 1) ** 0.7
    heads = rng.choice(entities, edges, p=weights / weights.sum())
    rels = rng.integers(0, relations, edges)
    tails = np.array([rng.choice(members[(cluster[h] + 3 * r + 1) % clusters])
                      for h, r in zip(heads, rels)])
    triples = np.unique(np.stack([heads, rels, tails], 1), axis=0)
    rng.shuffle(triples)
    return triples[held_out:], triples[:held_out], triples
