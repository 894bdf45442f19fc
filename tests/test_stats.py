import math

import numpy as np
import pytest

from chunkeval.stats import Interval, mean_se, paired_bootstrap


def test_mean_se_of_a_known_array():
    mean, se = mean_se([1, 2, 3, 4])
    assert mean == 2.5
    assert se == pytest.approx(math.sqrt(5 / 3) / 2)  # sample std sqrt(5/3), n = 4
    assert mean_se([0.7]) == (0.7, 0.0)
    assert mean_se(np.array([True, False])) == (0.5, 0.5)
    with pytest.raises(ValueError, match="no values"):
        mean_se([])


def test_identical_arrays_give_a_zero_interval():
    a = np.random.default_rng(0).random(300)
    iv = paired_bootstrap(a, a.copy())
    assert (iv.diff, iv.low, iv.high) == (0.0, 0.0, 0.0)
    assert not iv.shows_difference


def test_a_clear_shift_excludes_zero():
    rng = np.random.default_rng(1)
    b = rng.random(400)
    a = b + 0.05 + rng.normal(0, 0.05, 400)
    iv = paired_bootstrap(a, b)
    assert iv.shows_difference
    assert 0 < iv.low < iv.diff < iv.high
    assert iv.low < 0.05 < iv.high
    assert paired_bootstrap(b, a).high < 0  # the other way round: below zero


def test_noise_alone_shows_no_difference():
    rng = np.random.default_rng(2)
    a, b = rng.random(400), rng.random(400)
    b = b - b.mean() + a.mean()  # equal means, independent noise
    assert not paired_bootstrap(a, b).shows_difference


def test_bootstrap_is_deterministic_with_its_seed():
    rng = np.random.default_rng(3)
    a, b = rng.random(200), rng.random(200)
    assert paired_bootstrap(a, b, seed=7) == paired_bootstrap(list(a), list(b), seed=7)
    assert paired_bootstrap(a, b, seed=7) != paired_bootstrap(a, b, seed=8)


def test_wider_confidence_gives_a_wider_interval():
    rng = np.random.default_rng(4)
    a, b = rng.random(200), rng.random(200)
    narrow = paired_bootstrap(a, b, confidence=0.8)
    wide = paired_bootstrap(a, b, confidence=0.99)
    assert wide.low < narrow.low and narrow.high < wide.high


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="equal lengths"):
        paired_bootstrap([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="no values"):
        paired_bootstrap([], [])
    with pytest.raises(ValueError, match="confidence"):
        paired_bootstrap([1], [1], confidence=1.5)


def test_interval_contains_zero_at_its_edge():
    assert not Interval(0.1, 0.0, 0.2).shows_difference
    assert Interval(0.1, 0.01, 0.2).shows_difference
    assert Interval(-0.1, -0.2, -0.01).shows_difference


def test_the_bootstrap_equals_its_definition_when_its_indexes_are_reused():
    """The index matrix is drawn once per shape; every call still gives exactly the
    percentile interval of freshly drawn resamples."""
    rng = np.random.default_rng(3)
    for n, seed in [(50, 0), (50, 0), (73, 1), (50, 2)]:
        a, b = rng.random(n), rng.random(n)
        d = a - b
        idx = np.random.default_rng(seed).integers(0, n, size=(500, n))
        tail = (1 - 0.95) / 2
        low, high = np.quantile(d[idx].mean(axis=1), [tail, 1 - tail])
        ci = paired_bootstrap(a, b, resamples=500, seed=seed)
        assert (ci.diff, ci.low, ci.high) == (float(d.mean()), float(low), float(high))
