"""plot_race: a lane per variant ending where it went, the survivors' intervals, a title
that names the best."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

import evalnb


def _race_frame() -> pd.DataFrame:
    nan = math.nan
    return pd.DataFrame(
        {
            "variant": ["v2", "v1", "v3", "v4"],
            "status": ["best", "eliminated", "eliminated", "eliminated"],
            "eliminated_at": [nan, 40.0, 22.0, 9.0],
            "by": ["", "v2", "v2", "v1"],
            "cases": [40, 40, 22, 9],
            "samples": [80, 80, 44, 18],
            "rate": [0.9, 0.7, 0.62, 0.55],
            "diff": [0.0, nan, nan, nan],
            "low": [0.0, nan, nan, nan],
            "high": [0.0, nan, nan, nan],
            "level": [0.9667] * 4,
        }
    )


def test_each_variant_gets_a_lane_as_long_as_the_cases_it_ran():
    ax = evalnb.plot_race(_race_frame())
    widths = [p.get_width() for p in ax.patches]
    assert widths == [40, 40, 22, 9]
    texts = [t.get_text() for t in ax.texts]
    assert "90% best" in texts and "55% out after 9 cases, by v1" in texts
    assert ax.get_title(loc="left") == "v2 is best after 40 cases"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["v2", "v1", "v3", "v4"]


def test_variants_left_carry_their_interval_from_the_leader():
    frame = _race_frame()
    frame.loc[0, "status"] = "leading"
    frame.loc[1, ["status", "eliminated_at", "low", "high"]] = ["left", math.nan, -0.31, 0.02]
    ax = evalnb.plot_race(frame)
    texts = [t.get_text() for t in ax.texts]
    assert "70%; -31 to +2 points from the leader" in texts and "90% leading" in texts
    assert ax.get_title(loc="left") == "2 variants left after 40 cases"


def test_a_frame_that_is_not_a_race_is_refused():
    with pytest.raises(ValueError, match="race"):
        evalnb.plot_race(pd.DataFrame({"variant": ["a"]}))


def test_plot_race_leaves_matplotlibs_settings_as_they_were():
    import matplotlib.pyplot as plt

    before = (dict(matplotlib.rcParams), plt.isinteractive())
    fig, ax = plt.subplots()
    assert evalnb.plot_race(_race_frame(), ax) is ax
    assert (dict(matplotlib.rcParams), plt.isinteractive()) == before
    plt.close(fig)


@pytest.mark.parametrize("count", [4, 8, 16, 25])
def test_every_variant_has_its_own_colour(count):
    names = [f"v{i + 1}" for i in range(count)]
    frame = pd.DataFrame(
        {
            "variant": names,
            "status": ["best"] + ["eliminated"] * (count - 1),
            "eliminated_at": [math.nan] + [float(10 + i) for i in range(count - 1)],
            "by": [""] + ["v1"] * (count - 1),
            "cases": [40] + [10 + i for i in range(count - 1)],
            "rate": [0.9] + [0.6] * (count - 1),
            "diff": [0.0] + [math.nan] * (count - 1),
            "low": [0.0] + [math.nan] * (count - 1),
            "high": [0.0] + [math.nan] * (count - 1),
        }
    )
    ax = evalnb.plot_race(frame)
    colours = {matplotlib.colors.to_hex(p.get_facecolor(), keep_alpha=False) for p in ax.patches}
    assert len(ax.patches) == count and len(colours) == count
