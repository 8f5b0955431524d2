"""PNG plots of the peer benchmark's JSON report (``bench_peers.py --json``).

What: throughput (events/s, log scale) of every engine in the report, one figure per question the
benchmark asks: how it scales with the window (``peers_window.png``), with the sequence length
(``peers_length.png``), with the number of results (``peers_results.png``), and how it compares
on seed 001's queries Q1..Q7 (``peers_headline.png``, the README's figure, with each peer's
time / cerql's time above its bar).

Why a separate script: the benchmark takes long and needs the peers installed; plotting from its
JSON lets the figures be redrawn, restyled or checked without running it again. Each engine keeps
one colour and marker in every figure, so they can be read side by side. A figure whose families
have no cases in the report is skipped with a note on stdout.

Drawn with matplotlib's Agg canvas directly (no pyplot, no display needed).

    .venv/bin/python benchmarks/peers/plots.py /tmp/peers.json                 # into docs/img
    .venv/bin/python benchmarks/peers/plots.py /tmp/peers.json --out /tmp/plots
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "docs" / "img"
DPI = 150

# Okabe-Ito colours (readable by colour-blind readers and in greyscale by marker).
STYLE = {
    "run": ("#0072B2", "o"),
    "local": ("#56B4E9", "P"),
    "spark": ("#E69F00", "s"),
    "core": ("#009E73", "^"),
    "flink": ("#CC79A7", "D"),
}
SPARE = [("#D55E00", "v"), ("#F0E442", "X"), ("#000000", "*")]


# --- report access -----------------------------------------------------------------------------

def cases_of(report: dict, family: str) -> list[dict]:
    """The cases of one family that some engine has a figure for, in the report's order (the
    order of the bars; lines are sorted by x). A family whose runs all failed draws nothing."""
    return [c for c in report.get("cases", [])
            if c.get("family") == family and any(eps(c, e) for e in c.get("runs", {}))]


def eps(case: dict, engine: str) -> float | None:
    """Events/s of one engine on one case, or None when it did not run (or gave no figure)."""
    value = case.get("runs", {}).get(engine, {}).get("events_per_s")
    return value if value and value > 0 else None


def baseline(report: dict) -> str:
    """The engine every ratio is against: cerql.run's ("run"); "local" in reports before it ran."""
    return report.get("baseline", "local")


def ratio(case: dict, engine: str, base: str = "local") -> float | None:
    """The engine's seconds / the baseline's; recomputed when the producer left "ratio" out."""
    runs = case.get("runs", {})
    if engine not in runs or engine == base:
        return None
    if runs[engine].get("ratio") is not None:
        return runs[engine]["ratio"]
    mine, base_s = runs[engine].get("seconds"), runs.get(base, {}).get("seconds")
    return mine / base_s if mine and base_s else None


def engines_in(report: dict, cases: list[dict]) -> list[str]:
    """Engines with at least one figure in ``cases``, in the report's engine order.

    Engines that ran nothing here are left out of the legend rather than shown empty.
    """
    order = list(report.get("engines", {}))
    seen = {e for c in cases for e in c.get("runs", {}) if eps(c, e)}
    order += sorted(seen - set(order))
    return [e for e in order if e in seen]


def style(report: dict, engine: str) -> tuple[str, str]:
    """(colour, marker) of an engine: fixed for the known four, so every figure agrees."""
    if engine in STYLE:
        return STYLE[engine]
    extra = [e for e in report.get("engines", {}) if e not in STYLE]
    index = extra.index(engine) if engine in extra else len(extra)
    return SPARE[index % len(SPARE)]


def label(report: dict, engine: str) -> str:
    return report.get("engines", {}).get(engine, {}).get("label", engine)


def subtitle(report: dict, domain: str = "stock") -> str:
    """'1,000,000 stock events, 2 cores': what every figure was measured on."""
    rows = report.get("rows", {}).get(domain)
    nproc = report.get("machine", {}).get("nproc")
    parts = [f"{rows:,} {domain} events" if rows else f"{domain} events"]
    if nproc:
        parts.append(f"{nproc} core{'s' if nproc != 1 else ''}")
    return ", ".join(parts)


# --- drawing helpers ---------------------------------------------------------------------------

def _si(value: float, _pos=None) -> str:
    """10000 -> '10k': shorter than 10^4 and readable without knowing the notation."""
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= factor:
            return f"{value / factor:g}{suffix}"
    return f"{value:g}"


def _si_minor(value: float, _pos=None) -> str:
    """Label only the 2x and 5x ticks between powers of ten."""
    mantissa = value / 10 ** math.floor(math.log10(value))
    return _si(value) if round(mantissa, 6) in (2, 5) else ""


def log_axis(axis) -> None:
    """Log scale labelled at every power of ten, in k/M/G; at 2x and 5x too when the data span
    under two decades (else a flat line would have one label or none). Call after drawing."""
    axis.set_major_locator(LogLocator(base=10))
    axis.set_major_formatter(FuncFormatter(_si))
    lo, hi = axis.get_view_interval()
    narrow = lo > 0 and hi / lo < 100
    axis.set_minor_formatter(FuncFormatter(_si_minor) if narrow else NullFormatter())
    axis.set_tick_params(which="minor", labelsize=8)


def new_figure(ncols: int = 1, width: float = 7.5, height: float = 4.6, **grid) -> tuple[Figure, list]:
    """A Figure bound to an Agg canvas (no pyplot state to leak between plots)."""
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, sharey=True, squeeze=False, **grid)[0]
    for ax in axes:
        ax.grid(True, which="major", color="#dddddd", linewidth=0.7)
        ax.set_axisbelow(True)
        ax.spines[["top", "right"]].set_visible(False)
    return fig, list(axes)


def engine_handles(report: dict, engines: list[str], line: bool = True) -> list:
    """Legend entries for the engines, drawn as in the plot (line+marker or a bar swatch)."""
    handles = []
    for e in engines:
        colour, marker = style(report, e)
        if line:
            handles.append(Line2D([], [], color=colour, marker=marker, label=label(report, e)))
        else:
            handles.append(Line2D([], [], color=colour, marker="s", linestyle="", markersize=9,
                                  label=label(report, e)))
    return handles


def draw_lines(ax, report: dict, cases: list[dict], engines: list[str], x_of, linestyle: str = "-") -> None:
    """One line per engine through its (x_of(case), events/s) points; gaps where it did not run."""
    for e in engines:
        points = sorted((x_of(c), eps(c, e)) for c in cases if eps(c, e) and x_of(c))
        if not points:
            continue
        colour, marker = style(report, e)
        xs, ys = zip(*points)
        ax.plot(xs, ys, color=colour, marker=marker, linestyle=linestyle, linewidth=1.8, markersize=6,
                markerfacecolor=colour if linestyle == "-" else "white")


def in_two_rows(handles: list) -> list:
    """Pad to an even count: a 2-row legend fills by column, so engines and line styles then
    never share a column."""
    return handles + [Line2D([], [], linestyle="", label=" ")] * (len(handles) % 2)


def bottom_legend(fig: Figure, handles: list, ncols: int | None = None, title: str | None = None) -> None:
    """Legend under the axes, so it never hides a point (lines go anywhere in these plots)."""
    fig.legend(handles=handles, loc="outside lower center", ncols=ncols or len(handles), fontsize=8,
               frameon=False, title=title, title_fontsize=8)


def save(fig: Figure, out_dir: Path, name: str) -> Path:
    path = out_dir / name
    fig.savefig(path, dpi=DPI)
    print(f"# wrote {path}")
    return path


def skip(name: str, families: str) -> None:
    print(f"# skipped {name}: no {families} cases in the report")


# --- the figures -------------------------------------------------------------------------------

def plot_window(report: dict, out_dir: Path) -> Path | None:
    """Events/s vs window size: S3 with output (solid) and seed 001's S3' without (dashed)."""
    name, with_out, no_out = "peers_window.png", cases_of(report, "window"), cases_of(report, "noout")
    if not with_out and not no_out:
        return skip(name, "'window' or 'noout'")
    engines = engines_in(report, with_out + no_out)
    fig, (ax,) = new_figure()
    draw_lines(ax, report, with_out, engines, case_x, "-")
    draw_lines(ax, report, no_out, engines, case_x, "--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    log_axis(ax.xaxis)
    log_axis(ax.yaxis)
    ax.set_xlabel("window size (events)")
    ax.set_ylabel("events/s (higher is better)")
    ax.set_title(f"Throughput vs window size\n{subtitle(report)}")
    kinds = [Line2D([], [], color="grey", linestyle="-", marker="o", label="S3, with output"),
             Line2D([], [], color="grey", linestyle="--", marker="o", markerfacecolor="white",
                    label="S3', no output")]
    kinds = [k for k, cs in zip(kinds, (with_out, no_out)) if cs]
    bottom_legend(fig, in_two_rows(engine_handles(report, engines)) + in_two_rows(kinds),
                  ncols=(len(engines) + 1) // 2 + 1)
    return save(fig, out_dir, name)


def plot_length(report: dict, out_dir: Path) -> Path | None:
    """Events/s vs sequence length, skip-till-any (`;`) and contiguous (`:`) side by side."""
    name = "peers_length.png"
    titles = (("length", "skip-till-any  (A ; B ; C ...)"), ("length_contig", "contiguous  (A : B : C ...)"))
    panels = [(f, t, cases_of(report, f)) for f, t in titles]
    panels = [p for p in panels if p[2]]
    if not panels:
        return skip(name, "'length' or 'length_contig'")
    engines = engines_in(report, [c for p in panels for c in p[2]])
    fig, axes = new_figure(len(panels), width=7.5 if len(panels) == 1 else 13)
    for ax, (_, title, cases) in zip(axes, panels):
        draw_lines(ax, report, cases, engines, case_x)
        ax.set_yscale("log")
        log_axis(ax.yaxis)
        ax.set_xticks(sorted({c["x"] for c in cases if c.get("x") is not None}))
        ax.set_xlabel("sequence length (events)")
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("events/s (higher is better)")
    fig.suptitle(f"Throughput vs sequence length — {subtitle(report)}")
    bottom_legend(fig, engine_handles(report, engines))
    return save(fig, out_dir, name)


def plot_results(report: dict, out_dir: Path) -> Path | None:
    """Events/s vs the actual number of results (local's count), S3 at one window."""
    name, cases = "peers_results.png", cases_of(report, "results")
    if not cases:
        return skip(name, "'results'")
    engines = engines_in(report, cases)
    fig, (ax,) = new_figure()
    draw_lines(ax, report, cases, engines, result_count)
    ax.set_xscale("log")
    ax.set_yscale("log")
    log_axis(ax.xaxis)
    log_axis(ax.yaxis)
    ax.set_xlabel("number of results (S3)")
    ax.set_ylabel("events/s (higher is better)")
    ax.set_title(f"Throughput vs number of results\n{subtitle(report)}")
    bottom_legend(fig, engine_handles(report, engines))
    return save(fig, out_dir, name)


def case_x(case: dict):
    return case.get("x")


def result_count(case: dict) -> int | None:
    """x of a 'results' case: the results cerql found (the target x only if local did not run)."""
    count = case.get("runs", {}).get("local", {}).get("count")
    value = count if count is not None else case.get("x")
    return value if value and value > 0 else None  # a log axis has no 0


def _ratio_text(r: float) -> str:
    return f"{r:.0f}×" if r >= 9.95 else f"{r:.1f}×"


def draw_bars(ax, report: dict, cases: list[dict], engines: list[str]) -> None:
    """Grouped bars, one slot per engine in a fixed order (a gap where an engine did not run),
    with each peer's time / cerql's time written small above its bar."""
    width = 0.8 / len(engines)
    for i, e in enumerate(engines):
        colour, _ = style(report, e)
        offset = (i - (len(engines) - 1) / 2) * width
        for j, case in enumerate(cases):
            value = eps(case, e)
            if not value:
                continue
            ax.bar(j + offset, value, width * 0.92, color=colour)
            r = ratio(case, e, baseline(report))
            if r is not None:
                ax.annotate(_ratio_text(r), (j + offset, value), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=6.5, color="#333333")
    ax.set_xticks(range(len(cases)), [c.get("name", "?") for c in cases])
    ax.set_xlim(-0.5, len(cases) - 0.5)
    ax.grid(False, axis="x")
    ax.tick_params(axis="x", length=0)


def plot_headline(report: dict, out_dir: Path) -> Path | None:
    """Events/s per engine on seed 001's Q1..Q7, skip-till-any and contiguous, as grouped bars."""
    name = "peers_headline.png"
    panels = [(t, cases_of(report, f)) for f, t in
              (("ops", "seed 001 queries, skip-till-any (;)"), ("ops_contig", "contiguous variants (:)"))]
    panels = [p for p in panels if p[1]]
    if not panels:
        return skip(name, "'ops' or 'ops_contig'")
    engines = engines_in(report, [c for p in panels for c in p[1]])
    fig, axes = new_figure(len(panels), width=10, height=4.8,
                           width_ratios=[len(cs) + 1 for _, cs in panels])
    values = []
    for ax, (title, cases) in zip(axes, panels):
        draw_bars(ax, report, cases, engines_in(report, cases))  # no empty slot for an absent engine
        ax.set_title(title, fontsize=10)
        values += [eps(c, e) for c in cases for e in engines if eps(c, e)]
    axes[0].set_yscale("log")
    log_axis(axes[0].yaxis)
    axes[0].set_ylim(min(values) / 3, max(values) * 3)  # room below the smallest bar, above the labels
    axes[0].set_ylabel("events/s (higher is better)")
    for ax in axes[1:]:
        ax.tick_params(axis="y", left=False)
    fig.suptitle(f"cerql and its peers — {subtitle(report)}")
    bottom_legend(fig, engine_handles(report, engines, line=False),
                  title=f"above a bar: its time ÷ the time of {label(report, baseline(report))}")
    return save(fig, out_dir, name)


PLOTS = (plot_window, plot_length, plot_results, plot_headline)


def write_plots(report: dict, out_dir: Path) -> list[Path]:
    """Write every figure the report has cases for into ``out_dir``; return the files written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [p for p in (plot(report, out_dir) for plot in PLOTS) if p is not None]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, help="JSON written by bench_peers.py --json")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    args = ap.parse_args(argv)
    write_plots(json.loads(args.report.read_text()), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
