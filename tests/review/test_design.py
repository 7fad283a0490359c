"""A review's design: its order, the inclusion probability of every prefix, and the
columns each verdict stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalnb import verdicts
from evalnb.analysis._sampling import active_sizes, design_order, read_design
from evalnb.review import ReviewState
from evalnb.review._design import ReviewDesign
from evalnb.store import DESIGN_COLUMNS, VERDICTS_SCHEMA
from tests.builders import T0, write_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """Six cases x v1, v2 x four repeats; the judge fails case c0's repeats 0-1 only."""
    rows = [
        {
            "case_id": f"c{case}",
            "variant": variant,
            "repeat": repeat,
            "checks": {"judge": not (case == 0 and repeat < 2)},
        }
        for case in range(6)
        for variant in ("v1", "v2")
        for repeat in range(4)
    ]
    return write_run(tmp_path / "run", rows)


def walk(state: ReviewState) -> list[tuple[str, str, int]]:
    state.go(0)
    seen = []
    while True:
        current = state.current
        assert current is not None
        seen.append((current["case_id"], current["variant"], current["repeat"]))
        if not state.next():
            return seen


def test_the_default_design_is_a_seeded_random_order(run_dir: Path) -> None:
    first = walk(ReviewState(run_dir, "ana", advance=False))
    again = walk(ReviewState(run_dir, "bo", advance=False))
    other = walk(ReviewState(run_dir, "cy", advance=False, seed=1))
    queue = walk(ReviewState(run_dir, "di", advance=False, design="queue"))
    assert first == again  # the same seed, the same order
    assert sorted(first) == sorted(queue) == queue  # every sample once; queue is sorted
    assert first != queue and first != other
    # a random prefix of 12 of 48 samples reaches more than one case (the queue's reaches 2)
    assert len({c for c, _, _ in first[:12]}) > 2


@pytest.mark.parametrize("design", ["random", "stratified", "active"])
def test_every_prefix_weighs_each_sample_without_bias(design: str) -> None:
    """Over 4000 seeds, a sample's weight 1 / min(1, tau p_i) when it is in the first L
    (0 when it is not) averages 1: the Horvitz-Thompson total of any prefix is unbiased,
    whatever L (Duffield, Lund & Thorup 2007, Theorem 1)."""
    n, strata = 12, np.repeat([0, 1, 2], [6, 4, 2])
    sizes = active_sizes(np.linspace(0.0, 1.0, n), floor=0.2)
    seeds, prefixes = 4000, (1, 3, 6, 11)
    weights = {labels: np.zeros((seeds, n)) for labels in prefixes}
    for seed in range(seeds):
        ordering = design_order(
            n, design, seed=seed, strata=strata, allocation="equal", sizes=sizes
        )
        for labels in prefixes:
            taken = ordering.order[:labels]
            weights[labels][seed, taken] = 1 / ordering.inclusion(labels)[taken]
    for labels in prefixes:
        mean = weights[labels].mean(axis=0)
        error = weights[labels].std(axis=0) / np.sqrt(seeds)
        assert np.all(np.abs(mean - 1) < 4 * error + 0.03), (labels, mean, error)


def test_stratified_prefixes_hold_each_stratum_share() -> None:
    strata = np.repeat([0, 1], [30, 10])
    ordering = design_order(40, "stratified", seed=3, strata=strata, allocation="proportional")
    for labels in range(1, 41):
        taken = strata[ordering.order[:labels]]
        assert abs((taken == 1).sum() - labels * 10 / 40) < 1.0 + 1e-9


def test_active_puts_uncertain_samples_first_and_no_sample_near_zero() -> None:
    uncertainty = np.r_[np.zeros(90), np.ones(10)]
    sizes = active_sizes(uncertainty, floor=0.1)
    assert sizes.min() >= 0.1 / 100 - 1e-12 and sizes.sum() == pytest.approx(1)
    firsts = [design_order(100, "active", seed=s, sizes=sizes).order[:10] for s in range(200)]
    assert np.mean(np.concatenate(firsts) >= 90) > 0.6  # the 10 unsure ones, mostly


def test_each_verdict_stores_its_design_seed_and_inclusion(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", design="active", seed=5, check="judge")
    for verdict in ("pass", "fail", "pass"):
        state.record(verdict)
    saved = verdicts(run_dir).sort_values("rank", ignore_index=True)
    assert saved["design"].tolist() == ["active"] * 3
    assert saved["seed"].tolist() == [5] * 3
    assert saved["rank"].tolist() == [0, 1, 2]
    assert (saved["population"] == 48).all()
    ordering = state.queue.ordering
    stated = ordering.inclusion(3)[ordering.order[:3]]
    # the probability stored with each is that of the prefix ending at it...
    for rank in range(3):
        assert saved["inclusion"][rank] == pytest.approx(
            ordering.inclusion(rank + 1)[ordering.order[rank]]
        )
    # ...and the weights read back are those of the prefix of all three
    read = read_design(saved, population=48)
    assert read.scope == "population" and read.labels == 3
    np.testing.assert_allclose(read.weight, 1 / stated)


def test_queue_order_and_unrecorded_designs_describe_the_reviewed_samples(run_dir: Path) -> None:
    ReviewState(run_dir, "ana", design="queue").record("pass")
    read = read_design(verdicts(run_dir), population=48)
    assert read.scope == "reviewed samples"
    assert "queue order" in read.note and "no interval for the run" in read.note
    narrowed = ReviewState(run_dir, "bo", where="variant == 'v1'")
    narrowed.record("fail")
    read = read_design(verdicts(run_dir, annotator="bo"), population=48)
    assert read.scope == "reviewed samples" and "where=" in read.note


def test_a_gap_in_the_order_ends_the_prefix(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", advance=False)
    state.record("pass")
    state.go(2)  # place 1 is skipped
    state.record("fail")
    read = read_design(verdicts(run_dir), population=48)
    assert read.labels == 1
    assert sorted(read.weight.tolist())[0] == 0  # the verdict after the gap is left out
    assert "left out" in read.note


def test_verdict_parts_saved_before_the_design_columns_still_read(run_dir: Path) -> None:
    old = pa.schema([f for f in VERDICTS_SCHEMA if f.name not in DESIGN_COLUMNS])
    row = {
        "run_id": "run",
        "case_id": "c1",
        "variant": "v1",
        "repeat": 0,
        "annotator": "ana",
        "verdict": "pass",
        "reason": "",
        "created_at": T0,
    }
    (run_dir / "verdicts").mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pylist([row], schema=old), run_dir / "verdicts/part-old.parquet")
    read = verdicts(run_dir)
    assert len(read) == 1 and read["design"].isna().all() and read["inclusion"].isna().all()
    assert read_design(read, population=48).scope == "reviewed samples"


def test_a_side_by_side_review_walks_pairs_in_queue_order(run_dir: Path) -> None:
    assert ReviewState(run_dir, "ana", a="v1", b="v2").design.name == "queue"
    with pytest.raises(ValueError, match="'design' must be 'queue'"):
        ReviewState(run_dir, "ana", a="v1", b="v2", design="random")


def test_bad_designs_are_refused_in_one_line(run_dir: Path) -> None:
    with pytest.raises(ValueError, match="'design' must be one of 'random'"):
        ReviewState(run_dir, "ana", design="greedy")
    with pytest.raises(ValueError, match="'allocation' must be one of"):
        ReviewDesign("stratified", allocation="neyman")
    with pytest.raises(ValueError, match="'floor' must be in"):
        ReviewDesign("active", floor=0)
    with pytest.raises(ValueError, match="'by' must be 'case' or a check"):
        ReviewState(run_dir, "ana", design="stratified", by="nope")
    frame = pd.DataFrame({"design": ["random", "active"], "seed": [0, 0]})
    assert "mix designs" in read_design(frame, population=48).note


def test_the_live_number_follows_each_verdict(run_dir: Path) -> None:
    from evalnb.review import annotate

    panel = annotate(run_dir, "ana")
    assert "no verdict yet" in panel.live.value
    seen = []
    for _ in range(12):
        current = panel.current
        assert current is not None
        judge = not (current["case_id"] == "c0" and current["repeat"] < 2)
        panel.record("pass" if judge else "fail")
        seen.append(panel.live.value)
    assert len(set(seen)) > 1  # redrawn as verdicts come
    live = panel.state.live()
    assert live.method == "PPI" and live.scope == "population" and live.labels == 12
    assert sorted(live.rates["variant"]) == ["v1", "v2"]
    # verdicts that agree with the judge everywhere: PPI gives the judge's rate
    assert live.rates["estimate"].tolist() == pytest.approx([22 / 24, 22 / 24])
    assert "Human pass rate (judge corrected by your verdicts (PPI), 12 labels)" in seen[-1]
    assert "more labels for ±" in seen[-1] or "will not narrow it much" in seen[-1]
    queue = annotate(run_dir, "bo", design="queue")
    queue.record("pass")
    assert "describe the reviewed samples only" in queue.live.value
    assert "[" not in queue.live.value.split("</b>")[1].split("<i>")[0]  # no interval
