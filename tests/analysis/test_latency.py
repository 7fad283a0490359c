"""latency(): order statistics, never interpolated, incomplete samples included."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalnb.analysis import latency, load
from evalnb.analysis._latency import PERCENTILE_METHOD
from tests.builders import write_run


def nearest_rank(values: list[float], q: float) -> float:
    # The textbook nearest-rank percentile: the ceil(q * n)-th smallest value.
    return sorted(values)[math.ceil(q * len(values)) - 1]


@pytest.mark.parametrize("n", [1, 2, 4, 5, 20, 30, 31, 99, 100])
def test_the_numpy_method_is_lower_middle_and_nearest_rank(n: int) -> None:
    values = list(np.random.default_rng(n).permutation(np.arange(1.0, n + 1)))
    median, p95 = np.percentile(values, [50, 95], method=PERCENTILE_METHOD)
    assert median == sorted(values)[(n - 1) // 2]  # lower middle for an even n
    assert p95 == nearest_rank(values, 0.95)


def test_method_lower_would_not_be_nearest_rank() -> None:
    # Why "inverted_cdf": with 30 samples nearest rank is the 29th, "lower" gives the 28th.
    values = np.arange(1.0, 31.0)
    assert np.percentile(values, 95, method="lower") == 28.0
    assert np.percentile(values, 95, method=PERCENTILE_METHOD) == 29.0


def test_latency_per_variant_counts_incomplete_samples(tmp_path: Path) -> None:
    rows = [
        {"case_id": "c", "variant": "base", "repeat": r, "latency_ms": float(ms)}
        for r, ms in enumerate([400, 100, 300, 200])
    ]
    rows += [
        {
            "case_id": "c",
            "variant": "new",
            "repeat": r,
            "latency_ms": float(10 * (r + 1)),
            "status": "timeout" if r == 29 else "completed",
        }
        for r in range(30)
    ]
    out = latency(load(write_run(tmp_path / "lat", rows))).set_index("variant")
    assert out.loc["base", ["n", "median_ms", "p95_ms", "max_ms"]].tolist() == [4, 200, 400, 400]
    assert out.loc["new", ["n", "incomplete"]].tolist() == [30, 1]
    assert out.loc["new", "median_ms"] == 150  # 15th of 30
    assert out.loc["new", "p95_ms"] == 290  # 29th of 30
    assert out.loc["new", "max_ms"] == 300  # the timed-out sample is included


def test_latency_of_a_frame_with_missing_values() -> None:
    frame = pd.DataFrame({"variant": ["a", "a", "a"], "latency_ms": [5.0, None, 7.0]})
    row = latency(frame).iloc[0]
    assert (row["n"], row["missing"], row["median_ms"]) == (2, 1, 5.0)
    with pytest.raises(ValueError, match=r"'data' must have the columns \['model'\]"):
        latency(frame, by="model")
