"""Knowledge graphs for the benchmarks.

- FB15k-like: synthetic, with FB15k's sizes (14,951 entities, 1,345
  relations, 592,213 triples), Zipf-skewed relations (exponent 1.1) and
  power-law entity degrees: heads and tails are drawn with probability
  proportional to rank^-0.7, so that the most frequent entity is an
  endpoint of about 2 % of the triples (in FB15k, /m/09c7w0, the United
  States, is one of the few entities with thousands of triples) and the
  median entity of a few dozen.
- BioKG-like: synthetic, with ogbl-biokg's sizes (93,773 entities, 51
  relations, 5,088,434 triples; its entity tables at D = 512 are 192 MB,
  larger than the L2 cache) and the same skews.
- WikiKG2-like: synthetic, with ogbl-wikikg2's sizes (2,500,604 entities,
  535 relations, 17,137,181 triples; its entity table and Adagrad state
  at D = 128 are 2.6 GB, the out-of-core benchmark's graph), power-law
  heads, Zipf relations, and structure to learn: entities fall into 5,000
  communities and relation r sends community c to community pi_r(c); the
  tail is drawn in that community with a power law of its own.
- WN18-like: built from WordNet 3.0 (Debian's wordnet-base): synsets are
  entities and pointers of WN18's 18 relation types are edges; like WN18,
  only well-connected synsets are kept (at least 5 edges), which gives
  about 38,000 entities and 149,000 triples (WN18: 40,943 and 151,442).
  Its skew is WordNet's own.

Entity ids are shuffled: popular entities are not the first rows.

    python3 bench/datasets.py --out wn18like.npz     # on a machine with WordNet
"""

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from kge import graph  # noqa: E402
from kge.graph import power_law_endpoints, zipf_probabilities  # noqa: E402,F401

FB15K_ENTITIES, FB15K_RELATIONS, FB15K_TRIPLES = 14951, 1345, 592213
BIOKG_ENTITIES, BIOKG_RELATIONS, BIOKG_TRIPLES = 93773, 51, 5088434
WIKIKG2_ENTITIES, WIKIKG2_RELATIONS, WIKIKG2_TRIPLES = 2500604, 535, 17137181
ENTITY_EXPONENT, RELATION_EXPONENT = 0.7, 1.1

# WordNet pointer symbols of WN18's 18 relations.
WN18_RELATIONS = {
    "@": "hypernym", "~": "hyponym", "@i": "instance_hypernym",
    "~i": "instance_hyponym", "#m": "member_holonym", "%m": "member_meronym",
    "#p": "part_holonym", "%p": "part_meronym", ";c": "synset_domain_topic_of",
    "-c": "member_of_domain_topic", ";r": "synset_domain_region_of",
    "-r": "member_of_domain_region", ";u": "synset_domain_usage_of",
    "-u": "member_of_domain_usage", "+": "derivationally_related_form",
    "^": "also_see", "&": "similar_to", "$": "verb_group",
}


def skewed_graph(entities, relations, triples, seed, entity_exponent=ENTITY_EXPONENT,
                 relation_exponent=RELATION_EXPONENT):
    """(triples [n, 3] int64: head, relation, tail), entities, relations:
    relations and entity endpoints drawn from Zipf distributions, entity ids
    shuffled."""
    rng = np.random.default_rng(seed)
    rel = rng.choice(relations, triples, p=zipf_probabilities(relations, relation_exponent))
    heads, tails = power_law_endpoints(rng, entities, triples, entity_exponent)
    return np.stack([heads, rel, tails], 1), entities, relations


def fb15k_like(seed=0):
    """FB15k's sizes, skewed relations and entities."""
    return skewed_graph(FB15K_ENTITIES, FB15K_RELATIONS, FB15K_TRIPLES, seed)


def biokg_like(seed=0):
    """ogbl-biokg's sizes, skewed relations and entities."""
    return skewed_graph(BIOKG_ENTITIES, BIOKG_RELATIONS, BIOKG_TRIPLES, seed)


def wikikg2_like(seed=0, scale=1.0, communities=5000):
    """ogbl-wikikg2's sizes (entities and triples times `scale`), power-law
    heads, Zipf relations, tails in the community the relation sends the
    head's community to (power law within it)."""
    entities = int(round(WIKIKG2_ENTITIES * scale))
    count = int(round(WIKIKG2_TRIPLES * scale))
    rng = np.random.default_rng(seed)
    community = rng.integers(0, communities, entities)
    by_community = np.argsort(community, kind="stable")
    starts = np.searchsorted(community[by_community], np.arange(communities + 1))
    target = np.stack([rng.permutation(communities) for _ in range(WIKIKG2_RELATIONS)])
    rel = rng.choice(WIKIKG2_RELATIONS, count,
                     p=zipf_probabilities(WIKIKG2_RELATIONS, RELATION_EXPONENT))
    heads, _ = power_law_endpoints(rng, entities, count, ENTITY_EXPONENT)
    to = target[rel, community[heads]]
    sizes = starts[to + 1] - starts[to]
    # Rank within the community: P(rank < x) = (x / size)^(1/3), popular
    # members first; communities left empty send the edge to its head's.
    rank = np.minimum((sizes * rng.random(count) ** 3).astype(np.int64), np.maximum(sizes - 1, 0))
    tails = np.where(sizes > 0, by_community[np.minimum(starts[to] + rank, entities - 1)], heads)
    triples = np.unique(np.stack([heads, rel, tails], 1), axis=0)
    return triples[rng.permutation(len(triples))], entities, WIKIKG2_RELATIONS


def skew_summary(triples, entities):
    """How skewed the entity endpoints are: the share of the most frequent
    entity, the median degree and the fraction of entities never used."""
    degree = np.bincount(triples[:, [0, 2]].ravel(), minlength=entities)
    return {"top_share": float(degree.max() / degree.sum()),
            "median_degree": float(np.median(degree)),
            "unused": float(np.mean(degree == 0))}


def wn18_like(wordnet=pathlib.Path("/usr/share/wordnet"), min_degree=5):
    """Triples of WordNet 3.0 pointers of WN18's relation types between
    synsets with at least `min_degree` such edges."""
    g = graph.wordnet(wordnet, relations=set(WN18_RELATIONS))
    # Relations numbered in WN18_RELATIONS' order.
    order = np.array([list(WN18_RELATIONS).index(s) for s in g.edge_type_names])
    triples = np.stack([g.src.astype(np.int64), order[g.etype], g.dst.astype(np.int64)], 1)
    degree = np.bincount(triples[:, [0, 2]].ravel(), minlength=g.num_nodes)
    triples = triples[(degree[triples[:, 0]] >= min_degree) &
                      (degree[triples[:, 2]] >= min_degree)]
    kept, dense = np.unique(triples[:, [0, 2]], return_inverse=True)
    triples[:, [0, 2]] = dense.reshape(-1, 2)
    return triples, len(kept), len(WN18_RELATIONS)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args()
    triples, entities, relations = wn18_like()
    np.savez_compressed(args.out, triples=triples, entities=entities, relations=relations)
    counts = np.bincount(triples[:, 1], minlength=relations)
    print(f"WN18-like: {entities} entities, {relations} relations, {len(triples)} triples;"
          f" triples per relation {sorted(counts.tolist(), reverse=True)};"
          f" entity skew {skew_summary(triples, entities)}")


if __name__ == "__main__":
    main()
