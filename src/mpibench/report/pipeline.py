"""One report pipeline, shared by `mpibench compare`, `mpibench report` (HTML/Markdown) and
the pandas API (`mpibench.api.compare_frame`); a regression gate is one more caller.

    select  -> result sets: display name -> run ids (select.select_groups, the CLI's flags)
    load    -> cells (data.load_cells under the row rule), filtered by benchmark and size;
               a filter that matches nothing is refused in one line
    judge   -> the Comparison (judge.compare_groups under the comparability rule) when
               there are two or more sets, and the transport warnings either way
    sections-> every table after the comparison, from the one list in sections.SECTIONS
    render  -> the caller's: terminal/Markdown/CSV/JSON (compare), HTML/Markdown (report),
               DataFrames (api)

Each phase is a function taking the previous phase's result, so a caller runs the phases
it needs and never repeats one (the cells are read once).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mpibench.errors import UsageError
from mpibench.report.data import ResultCell, fmt_size, load_cells
from mpibench.report.judge import compare_groups, transport_lines
from mpibench.report.model import Comparison
from mpibench.report.rules import CellKey
from mpibench.report.sections import Context, Options
from mpibench.store import Store

Cells = dict[CellKey, dict[str, ResultCell]]


@dataclass
class Request:
    """What was asked: the flags of compare/report, the API's arguments."""
    baseline: str | None = None
    alpha: float = 0.05
    statistic: str = "median"
    benchmarks: list[str] | None = None
    sizes: list[int] | None = None
    title: str = ""
    relative: bool = False
    equivalence: float | None = None    # TOST margin (0.02 = ±2%), None: no equivalence test
    filter_sizes: bool = True           # False: --size only picks the gain table's size
    options: Options = field(default_factory=Options)


@dataclass
class Loaded:
    """The load phase: the selected cells, and every size of the selected benchmarks (the
    line-rate table searches the whole bandwidth curve, not only --size)."""
    sets: Mapping[str, list[str]]
    cells: Cells
    curve_cells: Cells


@dataclass
class Judged:
    loaded: Loaded
    baseline: str
    cmp: Comparison | None              # None with a single set
    warnings: list[str]                 # transport warnings (the comparison's, else the sets')


def check_filters(cells: Mapping[CellKey, Any], benchmarks: list[str] | None,
                  sizes: list[int] | None) -> None:
    """--benchmark/--size values that match nothing are typos, not empty tables."""
    known = sorted({k.benchmark for k in cells})
    lower = {b.lower() for b in known}
    for b in benchmarks or []:
        if b.lower() not in lower:
            raise UsageError(f"--benchmark {b!r}: not in the selected results (benchmarks: "
                             f"{', '.join(known) or 'none'})")
    wanted = {b.lower() for b in benchmarks or []}
    have = {k.size for k in cells if k.size is not None
            and (not wanted or k.benchmark.lower() in wanted)}
    for size in sizes or []:
        if size not in have:
            raise UsageError(f"--size {fmt_size(size) or size}: no selected result has this "
                             "message size (sizes: "
                             f"{', '.join(fmt_size(x) for x in sorted(have)) or 'none'})")


def load(store: Store, sets: Mapping[str, list[str]], request: Request, *,
         cells: Cells | None = None) -> Loaded:
    """Read the cells once (or take `cells` already read), check and apply the benchmark
    and size filters."""
    cells = cells if cells is not None else load_cells(store, sets,
                                                       statistic=request.statistic)
    curve = cells
    if request.benchmarks or request.sizes:
        check_filters(cells, request.benchmarks, request.sizes)
        wanted = {b.lower() for b in request.benchmarks or []}
        curve = {k: v for k, v in cells.items()
                 if not wanted or k.benchmark.lower() in wanted}
        sizes = request.sizes if request.filter_sizes else None
        cells = {k: v for k, v in curve.items()
                 if sizes is None or k.size in sizes or k.size is None}
    return Loaded(sets=sets, cells=cells, curve_cells=curve)


def judge(store: Store, loaded: Loaded, request: Request) -> Judged:
    """The comparison against the baseline (two or more sets) and the transport warnings."""
    sets = loaded.sets
    baseline = request.baseline or next(iter(sets))
    if len(sets) < 2:
        # one set: no comparison to footnote, but a transport that did not take effect
        # must still be said beside its results
        return Judged(loaded, baseline, None, transport_lines(store, sets))
    cmp = compare_groups(store, sets, baseline, alpha=request.alpha, cells=loaded.cells,
                         statistic=request.statistic, title=request.title,
                         equivalence=request.equivalence)
    cmp.relative = request.relative
    return Judged(loaded, baseline, cmp, cmp.warning_lines)


def context(store: Store, judged: Judged, request: Request, *,
            for_report: bool = False) -> Context:
    """What the section builders read (sections.SECTIONS)."""
    loaded = judged.loaded
    return Context(store=store, sets=loaded.sets, baseline=judged.baseline,
                   cells=loaded.cells,
                   curve_cells=loaded.cells if for_report else loaded.curve_cells,
                   cmp=judged.cmp, warnings=judged.warnings, alpha=request.alpha,
                   statistic=request.statistic, opts=request.options, for_report=for_report)


def run(store: Store, sets: Mapping[str, list[str]], request: Request, *,
        cells: Cells | None = None) -> Judged:
    """load and judge in one call (the API and a gate need no sections)."""
    return judge(store, load(store, sets, request, cells=cells), request)


__all__ = ["Request", "Loaded", "Judged", "check_filters", "load", "judge", "context", "run"]
