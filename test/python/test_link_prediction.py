"""Link prediction data and evaluation (kge.link_prediction): the
WN18-like graph from Debian's WordNet 3.0 with its fixed split, and the
filtered ranking protocol (MRR, Hits@k) against ranks worked by hand."""

import numpy as np
import pytest

from kge import link_prediction as lp


@pytest.fixture(scope="module")
def wn18():
    return lp.wn18_like()


def test_wn18_like_graph_and_its_fixed_split(wn18):
    assert wn18.num_relations == 18 and set(wn18.relations) == set(lp.WN18_RELATIONS)
    assert (wn18.num_entities, len(wn18.train)) == (64319, 241650)
    assert len(wn18.valid) == len(wn18.test) == 5000
    train_entities = set(wn18.train[:, [0, 2]].ravel().tolist())
    for held in (wn18.valid, wn18.test):
        assert set(held[:, [0, 2]].ravel().tolist()) <= train_entities
        assert set(held[:, 1].tolist()) <= set(wn18.train[:, 1].tolist())
    everything = {tuple(t) for t in wn18.all_triples().tolist()}
    assert len(everything) == len(wn18.train) + 10000  # no triple twice
    again = lp.wn18_like()
    np.testing.assert_array_equal(again.test, wn18.test)
    other = lp.wn18_like(seed=1)
    assert not np.array_equal(other.test, wn18.test)


def table_scorer(table):
    return lambda h, r, t: table[h, r, t]


def test_filtered_ranks_by_hand():
    # Four entities, one relation; scores of (h, 0, t) in row h.
    table = np.array([[[0.0], [3.0], [2.0], [2.0]],
                      [[1.0], [0.0], [5.0], [4.0]],
                      [[9.0], [1.0], [0.0], [1.0]],
                      [[2.0], [2.0], [2.0], [2.0]]]).transpose(0, 2, 1)  # [h, r, t]
    known = np.array([[0, 0, 1], [0, 0, 2], [1, 0, 3]])
    ranks = lp.filtered_ranks(table_scorer(table), np.array([[0, 0, 2], [1, 0, 3]]), known, 4, 1)
    # (0, 0, 2): tails of 0 score [0, 3, 2, 2]; 1 is a known tail (filtered),
    # 3 ties with 2: rank 1 + 0 + 1/2. Heads of 2 score [2, 5, 0, 2]: 1
    # is better, 3 ties: 2.5.
    # (1, 0, 3): tails of 1 score [1, 0, 5, 4]: 2 better: 2. Heads of 3
    # score [2, 4, 1, 2]: none better than 4: 1.
    np.testing.assert_array_equal(ranks, [[1.5, 2.5], [2.0, 1.0]])
    metrics = lp.ranking_metrics([1, 2, 4, 20])
    assert metrics == pytest.approx({"mrr": (1 + 0.5 + 0.25 + 0.05) / 4, "hits@1": 0.25,
                                     "hits@3": 0.5, "hits@10": 0.75})


def test_a_perfect_scorer_ranks_every_held_out_triple_first(wn18):
    known = {tuple(t) for t in wn18.all_triples().tolist()}

    def oracle(h, r, t):
        return np.array([1.0 if (a, b, c) in known else 0.0 for a, b, c in zip(h, r, t)])
    ranks = lp.filtered_ranks(oracle, wn18.test[:3], wn18.all_triples(), wn18.num_entities,
                              wn18.num_relations)
    np.testing.assert_array_equal(ranks, 1.0)


def test_bad_triples_are_refused():
    score = table_scorer(np.zeros((3, 1, 3)))
    with pytest.raises(ValueError, match=r"triples\[1\] has tail 7 outside \[0, 3\)"):
        lp.filtered_ranks(score, np.array([[0, 0, 1], [0, 0, 7]]), np.zeros((0, 3)), 3, 1)
    with pytest.raises(ValueError, match=r"must be \[N, 3\]"):
        lp.filtered_ranks(score, np.array([0, 0, 1]), np.zeros((0, 3)), 3, 1)
    with pytest.raises(ValueError, match="scores nan"):
        lp.filtered_ranks(lambda h, r, t: np.full(len(h), np.nan), np.array([[0, 0, 1]]),
                          np.zeros((0, 3)), 3, 1)
    with pytest.raises(ValueError, match="can be held out"):
        lp.split(np.array([[0, 0, 1], [1, 0, 2]]), 1, 1)
