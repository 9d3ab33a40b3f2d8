"""Plots (dpbandits.harness.plots): analytic bands equal mean ± 1.96·SE, labels carry the
privacy level, the random floor is marked, log axes survive zero regret, seaborn stays out of
the default path."""

from __future__ import annotations

import subprocess
import sys

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from dpbandits.harness import plots
from dpbandits.harness.plots import (
    Z95,
    curve_statistics,
    plot_final_regret_distribution,
    plot_panel_a,
    plot_panel_c,
    plot_regret_curves,
    privacy_label,
)


def _frame(n_reps=4, horizon=20, seed=0):
    """Two agents with random per-round regret; cum_regret starts at 0 for agent 'good'."""
    rng = np.random.default_rng(seed)
    rows = []
    for agent, scale in (("good", 0.1), ("uniform random", 1.0)):
        for rep in range(n_reps):
            regret = rng.exponential(scale, horizon)
            regret[0] = 0.0 if agent == "good" else regret[0]
            cum = np.cumsum(regret)
            rows.append(pd.DataFrame({"agent": agent, "rep": rep, "t": np.arange(1, horizon + 1),
                                      "regret": regret, "cum_regret": cum}))
    return pd.concat(rows, ignore_index=True)


def test_curve_statistics_are_the_normal_interval_over_replications():
    frame = _frame()
    stats = curve_statistics(frame)
    cum = frame[frame["agent"] == "good"].pivot(index="rep", columns="t", values="cum_regret")
    mean = cum.mean(axis=0).to_numpy()
    se = cum.std(axis=0, ddof=1).to_numpy() / np.sqrt(4)
    got = stats[stats["agent"] == "good"].sort_values("t")
    np.testing.assert_allclose(got["mean"], mean)
    np.testing.assert_allclose(got["low"], mean - 1.959963984540054 * se)
    np.testing.assert_allclose(got["high"], mean + Z95 * se)
    assert (got["n"] == 4).all()


def test_single_replication_has_a_zero_width_band_not_nan():
    stats = curve_statistics(_frame(n_reps=1))
    assert np.isfinite(stats[["low", "high"]].to_numpy()).all()
    np.testing.assert_array_equal(stats["low"], stats["mean"])


def test_band_polygons_span_the_analytic_interval_and_floor_is_grey_dashed():
    frame = _frame()
    fig, ax = plt.subplots()
    plot_regret_curves(frame, ax=ax, labels={"good": "good — non-private"},
                       floor="uniform random")
    stats = curve_statistics(frame)
    assert len(ax.collections) == 2  # one band per agent
    for band, agent in zip(ax.collections, ["good", "uniform random"], strict=True):
        ys = band.get_paths()[0].vertices[:, 1]
        s = stats[stats["agent"] == agent]
        assert ys.max() == pytest.approx(s["high"].max())
        assert ys.min() == pytest.approx(s["low"].min())
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"good — non-private", "uniform random (reference)"}
    floor = lines["uniform random (reference)"]
    assert floor.get_linestyle() == "--" and floor.get_color() == plots._FLOOR_COLOUR
    assert lines["good — non-private"].get_color() != plots._FLOOR_COLOUR
    assert "95% CI" in ax.get_title() and "4 replications" in ax.get_title()
    plt.close(fig)


def test_agents_get_distinct_line_styles():
    frame = pd.concat([_frame().assign(agent=lambda f, i=i: f["agent"] + str(i))
                       for i in range(3)], ignore_index=True)
    fig, ax = plt.subplots()
    plot_regret_curves(frame, ax=ax, band="none")
    assert not ax.collections
    styles = {(line.get_color(), line.get_linestyle()) for line in ax.get_lines()}
    assert len(styles) == 6
    plt.close(fig)


def test_log_axes_mask_zero_regret(tmp_path):
    frame = _frame()
    assert (frame["cum_regret"] == 0).any()
    paths = plot_regret_curves(frame, tmp_path / "r", log=True, svg=True)
    assert [p.suffix for p in paths] == [".png", ".svg"] and all(p.stat().st_size for p in paths)
    fig, ax = plt.subplots()
    plot_regret_curves(frame, ax=ax, log=True)
    assert ax.get_yscale() == "log" and ax.get_ylim()[0] > 0
    plt.close(fig)


def test_unknown_band_is_refused():
    with pytest.raises(ValueError, match="band must be one of .*'se'.*got 'ci'"):
        plot_regret_curves(_frame(), "unused", band="ci")


@pytest.mark.integration
def test_default_plot_does_not_import_seaborn(tmp_path):
    code = ("import sys, numpy as np, pandas as pd\n"
            "from dpbandits.harness.plots import plot_regret_curves\n"
            "f = pd.DataFrame({'agent': ['a'] * 4, 'rep': [0, 0, 1, 1], 't': [1, 2, 1, 2],"
            " 'cum_regret': [0.0, 1.0, 0.5, 2.0]})\n"
            f"plot_regret_curves(f, {str(tmp_path / 'p')!r})\n"
            "print('seaborn' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_bootstrap_band_is_still_available(tmp_path):
    fig, ax = plt.subplots()
    plot_regret_curves(_frame(), ax=ax, band="bootstrap")
    assert len(ax.collections) >= 2  # seaborn's bootstrap bands
    plt.close(fig)


def test_privacy_labels():
    assert privacy_label(None, None) == "non-private"
    claim = {"epsilon": 1.0, "delta": 1e-4, "notion": "JDP", "certified": True}
    assert privacy_label(claim, {"epsilon": 0.97}) == "JDP ε=1, δ=1e-04, certified"
    assert privacy_label(claim, {"epsilon": 1.5}).startswith("claimed JDP ε=1")
    assert privacy_label(claim, None).endswith("NOT certified")
    assert privacy_label({**claim, "certified": False}, {"epsilon": 0.5}).endswith(
        "NOT certified")
    assert privacy_label({"epsilon": float("inf"), "delta": 0.0, "notion": "none"},
                         None) == "non-private"


def test_final_distribution_labels_every_agent(tmp_path):
    labels = {"good": "good — JDP ε=1", "uniform random": "random — non-private"}
    fig_paths = plot_final_regret_distribution(_frame(), tmp_path / "f", labels=labels)
    assert fig_paths[0].exists()


def test_panel_plots_write_files(tmp_path):
    frame = pd.concat([_frame().assign(contexts=c) for c in ("l1", "linf")], ignore_index=True)
    assert plot_panel_a(frame, tmp_path / "a")[0].stat().st_size > 0
    table = pd.DataFrame({"agent": ["DP-HDB"] * 2, "agent.epsilon": [0.1, 1.0],
                          "mean": [5.0, 2.0], "std": [1.0, 0.5], "count": [10, 10],
                          "relative_to_random": [0.9, 0.4], "horizon": [100, 100]})
    assert plot_panel_c(table, tmp_path / "c", svg=True)[1].suffix == ".svg"


def test_thinning_keeps_first_last_and_exact_statistics():
    frame = _frame(horizon=1000)
    thin = plots.thin_rounds(frame, max_points=50)
    kept = np.unique(thin["t"])
    assert kept.size <= 50 and kept[0] == 1 and kept[-1] == 1000
    full, part = curve_statistics(frame), curve_statistics(thin)
    merged = part.merge(full, on=["agent", "t"], suffixes=("", "_full"))
    assert len(merged) == len(part)
    np.testing.assert_allclose(merged["high"], merged["high_full"])
    log_kept = np.unique(plots.thin_rounds(frame, log=True, max_points=50)["t"])
    assert (log_kept < 10).sum() > (kept < 10).sum()  # geometric spacing keeps early rounds


def test_the_legend_sits_outside_the_axes_and_inside_the_saved_image(tmp_path):
    from matplotlib.transforms import Bbox

    fig, ax = plt.subplots(figsize=(7.2, 4.6))
    long = {a: f"{a} — claimed ε=1, δ=1e-04, NOT certified, a long privacy label"
            for a in ("good", "uniform random")}
    plot_regret_curves(_frame(), ax=ax, labels=long, normalize="uniform random")
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert not Bbox.intersection(legend, ax.get_window_extent())  # covers no curve
    assert not Bbox.intersection(legend, ax.xaxis.label.get_window_extent())
    plt.close(fig)


def test_the_random_reference_is_drawn_above_every_band_and_curve():
    fig, ax = plt.subplots()
    plot_regret_curves(_frame(), ax=ax, floor="uniform random")
    lines = {line.get_label(): line for line in ax.get_lines()}
    reference = lines.pop("uniform random (reference)")
    assert all(reference.get_zorder() > c.get_zorder() for c in ax.collections)
    assert all(reference.get_zorder() > line.get_zorder() for line in lines.values())
    assert not any("floor" in label for label in lines)
    plt.close(fig)


def _inside(fig, artist) -> bool:
    box = artist.get_window_extent(fig.canvas.get_renderer())
    image = fig.bbox
    return (box.x0 >= image.x0 - 0.5 and box.y0 >= image.y0 - 0.5
            and box.x1 <= image.x1 + 0.5 and box.y1 <= image.y1 + 0.5)


@pytest.mark.parametrize("draw", ["regret", "reward", "two axes"])
def test_legend_lies_inside_an_image_saved_with_plain_savefig(tmp_path, draw):
    # the gallery's way: the user's figure and axes, saved by savefig without bbox_inches
    from matplotlib.image import imread

    long = {a: f"{a} — claimed ε=1, δ=1e-04, NOT certified" for a in ("good", "uniform random")}
    frame = _frame()
    ncols = 2 if draw == "two axes" else 1
    fig, axes = plt.subplots(1, ncols, figsize=(4.0 * ncols + 4, 4.0), squeeze=False)
    for ax in axes[0]:
        if draw == "reward":
            replay = frame.rename(columns={"cum_regret": "cum_reward"}).assign(log_events=40)
            plots.plot_reward_curves(replay, ax=ax, labels=long, reference=0.5)
        else:
            plot_regret_curves(frame, ax=ax, labels=long, floor="uniform random")
    path = tmp_path / "plain.png"
    fig.savefig(path, dpi=80)
    height, width = imread(path).shape[:2]
    assert (width, height) == (round(fig.get_figwidth() * 80), round(fig.get_figheight() * 80))
    fig.set_dpi(80)
    for ax in axes[0]:
        assert _inside(fig, ax.get_legend()), ax.get_legend().get_window_extent()
        assert _inside(fig, ax.xaxis.label)
    plt.close(fig)


def test_the_package_own_figures_keep_their_legends_without_bbox_inches(tmp_path,
                                                                      monkeypatch):
    saved, close = [], plt.close
    monkeypatch.setattr(plots.plt, "close", lambda fig=None: saved.append(fig))
    seven = pd.concat([_frame().assign(agent=lambda f, i=i: f["agent"] + f" {i}")
                       for i in range(4)], ignore_index=True)
    plot_regret_curves(seven, tmp_path / "r")
    plot_final_regret_distribution(seven, tmp_path / "f")
    frame = pd.concat([_frame().assign(contexts=c) for c in ("l1", "linf")], ignore_index=True)
    plot_panel_a(frame, tmp_path / "a", title="dpbandits/Figure5.1-v0, horizon T = 20")
    for fig in saved:
        fig.canvas.draw()
        for ax in fig.axes:
            assert _inside(fig, ax.get_legend()), ax.get_legend().get_window_extent()
            ax_box = ax.get_window_extent()
            assert ax.get_legend().get_window_extent().y1 <= ax_box.y0  # covers no curve
        close(fig)
    assert "horizon T = 20" in saved[-1].get_suptitle()


def test_run_title_names_environment_horizon_and_replications():
    assert plots.run_title("dpbandits/Figure5.1-v0", 10_000, 10) == (
        "dpbandits/Figure5.1-v0, horizon T = 10,000, 10 replications")
    assert plots.run_title("x", 5, 1).endswith("1 replication")
