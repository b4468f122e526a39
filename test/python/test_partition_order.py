"""Partition orders for training beyond GPU memory (kge.partition_order):
Legend's prefetch-friendly order against Marius's BETA, PyTorch-BigGraph's
inside-out order and the covering-design lower bound."""

import itertools

import pytest

from kge import partition_order as po


@pytest.mark.parametrize("n", range(4, 41))
def test_legend_order_covers_every_bucket_and_keeps_the_loaded_partition(n):
    states = po.legend_order(n)
    po.check_order(states, n, 3)
    # Theorem 1's property (1): the partition a swap loads is not the one
    # the next swap evicts.
    for k in range(len(states) - 2):
        loaded = set(states[k + 1]) - set(states[k])
        evicted = set(states[k + 1]) - set(states[k + 2])
        assert not loaded & evicted, (k, states[k:k + 3])
    assert po.lower_bound(n) <= po.io_count(states)


@pytest.mark.parametrize("n", [8, 12, 16, 24, 32])
def test_legend_order_prefetches_where_beta_cannot_at_comparable_io(n):
    legend, beta = po.legend_order(n), po.beta_order(n)
    po.check_order(beta, n, 3)
    legend_failures = po.prefetch_failures(legend, po.legend_buckets(legend, n))
    beta_failures = po.prefetch_failures(beta, po.legend_buckets(beta, n))
    # (At n = 12: 4 of 37 swaps, the paper's 4 of 36; BETA 20 of 36.)
    assert len(legend_failures) <= 0.16 * (len(legend) - 1)
    assert len(beta_failures) >= 2.5 * len(legend_failures)
    assert po.io_count(legend) <= 1.1 * po.io_count(beta)
    assert po.io_count(beta) < po.pbg_order(n)[1]


def test_bucket_orders_train_every_bucket_once_evicted_partition_first():
    n = 9
    states = po.legend_order(n)
    for assign in (po.legend_buckets, po.first_cover):
        buckets = assign(states, n)
        trained = [b for state in buckets for b in state]
        assert sorted(trained) == sorted(itertools.product(range(n), repeat=2))
        for state, part in zip(states, buckets):
            assert all(a in state and b in state for a, b in part)
    buckets = po.legend_buckets(states, n)
    for k in range(len(states) - 1):
        (evicted,) = set(states[k]) - set(states[k + 1])
        involved = [evicted in b for b in buckets[k]]
        # Algorithm 2: the evicted partition's buckets before the others.
        assert involved == sorted(involved, reverse=True)
    assert po.is_prefetching_supported(po.legend_order(4), po.legend_buckets(po.legend_order(4), 4))


def test_small_cases_by_hand():
    # Four partitions: the bound's three blocks, five loads, and Legend's
    # order meets it.
    assert po.lower_bound(4) == 5
    assert po.io_count(po.legend_order(4)) == 5
    # BETA on five partitions: {0,1,2} then the last slot sweeps 3 and 4,
    # then two slots are replaced.
    assert po.beta_order(5)[:3] == [(0, 1, 2), (0, 1, 3), (0, 1, 4)]
    # PBG, two partitions: (1,1) loads 1, (0,0) loads 0, then both stay.
    sequence, loads = po.pbg_order(2)
    assert sequence == [(1, 1), (0, 0), (0, 1), (1, 0)] and loads == 2


def test_bad_orders_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="not one swap"):
        po.check_order([(0, 1, 2), (0, 3, 4)], 5, 3)
    with pytest.raises(ValueError, match="uncovered"):
        po.check_order([(0, 1, 2), (0, 1, 3)], 4, 3)
    with pytest.raises(ValueError, match="not 3 distinct partitions"):
        po.check_order([(0, 1, 1)], 4, 3)
    with pytest.raises(ValueError, match="at least 4"):
        po.legend_order(3)
    with pytest.raises(ValueError, match="fit a buffer"):
        po.beta_order(3)
