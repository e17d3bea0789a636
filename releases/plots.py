"""Small matplotlib plots rendered to byte-stable PNGs (Agg canvas, default style, no metadata).

No global backend switch: figures are built on an Agg canvas directly, so importing this module
never changes the caller's matplotlib state.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

_STYLE = {"font.family": "DejaVu Sans", "svg.hashsalt": "bargein", "path.simplify": True}


def _figure(width: float = 6.4, height: float = 3.6):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig) -> bytes:
    """PNG bytes without the Software/creation metadata that would vary between versions/runs."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()


def bar_png(labels: Sequence[str], values: Sequence[float], *, title: str, ylabel: str,
            errors: Sequence[tuple[float, float]] | None = None, ylim: tuple[float, float] | None = None,
            hline: float | None = None, color: str = "#4C72B0") -> bytes:
    """A bar chart; ``errors`` are (low, high) absolute interval ends per bar."""
    import matplotlib
    import matplotlib.style

    with matplotlib.style.context("default"), matplotlib.rc_context(_STYLE):
        fig = _figure()
        ax = fig.add_subplot(1, 1, 1)
        xs = list(range(len(labels)))
        yerr = None
        if errors is not None:
            yerr = [[max(0.0, v - lo) for v, (lo, _) in zip(values, errors)],
                    [max(0.0, hi - v) for v, (_, hi) in zip(values, errors)]]
        ax.bar(xs, values, color=color, yerr=yerr, capsize=4 if yerr else 0)
        ax.set_xticks(xs, list(labels), rotation=20, ha="right")
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        if ylim is not None:
            ax.set_ylim(*ylim)
        if hline is not None:
            ax.axhline(hline, color="#888888", linestyle="--", linewidth=1)
        tops = [hi for _, hi in errors] if errors is not None else list(values)
        for x, v, top in zip(xs, values, tops):
            ax.annotate(f"{v:g}" if isinstance(v, int) else f"{v:.2f}", (x, max(v, top)),
                        ha="center", va="bottom", fontsize=8, xytext=(0, 2),
                        textcoords="offset points")
        fig.tight_layout()
        return png_bytes(fig)


def curve_png(points_x: Sequence[float], points_y: Sequence[float], curve_x: Sequence[float],
              curve_y: Sequence[float], *, title: str, xlabel: str, ylabel: str,
              labels: Sequence[str] | None = None) -> bytes:
    """Binned rates as points plus a fitted curve (e.g. TF win rate by depth + logistic fit)."""
    import matplotlib
    import matplotlib.style

    with matplotlib.style.context("default"), matplotlib.rc_context(_STYLE):
        fig = _figure()
        ax = fig.add_subplot(1, 1, 1)
        ax.plot(list(curve_x), list(curve_y), color="#C44E52", linewidth=1.5, label="logistic fit")
        ax.scatter(list(points_x), list(points_y), color="#4C72B0", zorder=3, label="binned")
        if labels:
            for x, y, lab in zip(points_x, points_y, labels):
                ax.annotate(lab, (x, y), fontsize=8, xytext=(3, 3), textcoords="offset points")
        ax.set_ylim(-0.02, 1.02)
        ax.axhline(0.5, color="#888888", linestyle="--", linewidth=1)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(loc="lower left", fontsize=8)
        fig.tight_layout()
        return png_bytes(fig)
