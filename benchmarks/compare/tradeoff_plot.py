"""The retention-versus-cost plot: one panel per window, x the tokens sent over the replayed
sessions, y the share of the removed parts' paths and request first lines still present;
synopsis's targets joined by a line and labelled, each of its strategies one hollow point, each
peer one point.

``make bench`` draws it after the replay-retention part when matplotlib is importable (it is
in the development environment through the ``report`` extra). Without it, draw it afterwards
from the results: ``.venv/bin/python -m benchmarks.compare.tradeoff_plot [compare.json]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.compare.replay_retention import retained

FILENAME = "retention-tradeoff.png"
_MARKERS = ("^", "v", "D", "P")
"""synopsis's strategies: hollow, in its colour, one shape each."""
RESULTS = Path(__file__).resolve().parents[1] / "results"


def points(block: dict[str, Any]) -> tuple[list[tuple[float, float, float]], list[Any]]:
    """``(synopsis's (target, tokens sent, retained %) by target, [(name, label, tokens, %)]
    of the peers)`` for one window; a system that never compacted removed nothing: 100%."""
    ours, peers = [], []
    for v in block["variants"].values():
        value = retained(v["totals"])
        sent, pct = float(v["totals"]["tokens_sent"]), 100 * (1.0 if value is None else value)
        if v.get("strategy"):
            continue
        if v["system"] == "synopsis":
            ours.append((float(v["target"]), sent, pct))
        else:
            peers.append((v["system"], v["label"], sent, pct))
    return sorted(ours), peers


def strategy_points(block: dict[str, Any]) -> list[tuple[str, float, float]]:
    """``(strategy, tokens sent, retained %)`` of each of synopsis's strategies at one window,
    in the order they ran."""
    out = []
    for v in block["variants"].values():
        if v.get("strategy"):
            value = retained(v["totals"])
            pct = 100 * (1.0 if value is None else value)
            out.append((str(v["strategy"]), float(v["totals"]["tokens_sent"]), pct))
    return out


def target_labels(ours: list[tuple[float, float, float]], default: float) -> dict[Any, str]:
    """One label per distinct synopsis point: targets that land on the same point share it."""
    out: dict[Any, list[str]] = {}
    for target, sent, pct in ours:
        text = f"{target:g}" + (" (default)" if target == default else "")
        out.setdefault((sent, pct), []).append(text)
    return {point: ", ".join(texts) for point, texts in out.items()}


def _beside(labels: list[Any], n: int, spread: float) -> dict[str, Any]:
    """Where label ``n`` of the synopsis line goes: off the line on its lower-right side
    (the normal of the line through its neighbours, x scaled by ``spread`` thousand tokens
    and y by 100%), every other one twice as far, since neighbouring targets often land
    close together (a thin line joins each label to its point)."""
    (x0, y0), _ = labels[max(0, n - 1)]
    (x1, y1), _ = labels[min(len(labels) - 1, n + 1)]
    dx, dy = (x1 - x0) / 1e3 / spread, (y1 - y0) / 100
    norm = (dx * dx + dy * dy) ** 0.5
    nx, ny = (dy / norm, -dx / norm) if norm else (1.0, 0.0)
    far = 12 if n % 2 == 0 else 30
    return {
        "xytext": (far * nx, far * ny),
        "ha": "center" if abs(nx) < 0.4 else ("left" if nx > 0 else "right"),
        "va": "center" if abs(ny) < 0.4 else ("top" if ny < 0 else "bottom"),
    }


def draw(results: dict[str, Any], path: Path) -> Path:
    """Write the plot of ``results["replay_retention"]`` to ``path`` (ImportError without
    matplotlib)."""
    import matplotlib  # noqa: PLC0415 - optional: the report extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    r = results["replay_retention"]
    windows = list(r["by_window"])
    fig, axes = plt.subplots(1, len(windows), figsize=(6.5 * len(windows), 5.6), squeeze=False)
    for ax, window in zip(axes[0], windows, strict=True):
        ours, peers = points(r["by_window"][window])
        if ours:
            ax.plot(
                [p[1] / 1e3 for p in ours],
                [p[2] for p in ours],
                "o-",
                color="tab:blue",
                label="synopsis, by target_ratio",
            )
            xs = [p[1] / 1e3 for p in ours + [(0, q[2], q[3]) for q in peers]]
            spread = (max(xs) - min(xs)) or 1.0
            labels = list(target_labels(ours, r["default_target"]).items())
            for n, ((sent, pct), text) in enumerate(labels):
                ax.annotate(
                    text,
                    (sent / 1e3, pct),
                    textcoords="offset points",
                    fontsize=8,
                    fontweight="bold" if "default" in text else "normal",
                    arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "0.4"},
                    **_beside(labels, n, spread),
                )
        for n, (strategy, sent, pct) in enumerate(strategy_points(r["by_window"][window])):
            ax.scatter(
                [sent / 1e3],
                [pct],
                marker=_MARKERS[n % len(_MARKERS)],
                s=60,
                facecolors="none",
                edgecolors="tab:blue",
                label=f"synopsis, strategy {strategy}",
                zorder=4,
            )
            ax.annotate(
                strategy, (sent / 1e3, pct), textcoords="offset points", xytext=(6, 6), fontsize=8
            )
        for n, (name, label, sent, pct) in enumerate(peers):
            ax.scatter([sent / 1e3], [pct], marker="s", color=f"C{n + 1}", label=label, zorder=3)
            ax.annotate(
                name, (sent / 1e3, pct), textcoords="offset points", xytext=(6, -10), fontsize=8
            )
        count = len(r["by_window"][window]["sessions"])
        ax.set_title(f"{int(window):,}-token window, {count} session{'s' * (count != 1)}")
        ax.set_xlabel("tokens sent over the sessions (thousands)")
        ax.set_ylabel("removed paths + request first lines still present (%)")
        ax.set_ylim(-3, 105)
        ax.grid(alpha=0.3)
    handles, names = axes[0][0].get_legend_handles_labels()
    # under the panels, whatever its height: the tight bounding box takes it in
    fig.legend(handles, names, fontsize=8, loc="upper center", ncol=3, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle("Retention against cost over the replayed sessions")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS / "compare.json"
    results = json.loads(source.read_text(encoding="utf-8"))
    if "replay_retention" not in results:
        raise SystemExit(f"{source} has no replay-retention results; run that part first")
    print(draw(results, source.parent / FILENAME))


if __name__ == "__main__":
    main()
