"""Peak bandwidth against a link's line rate, and the size reaching half the peak.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from mpibench.report.data import (
    ResultCell,
    bench_sort_key,
    fmt_num,
    fmt_size,
    load_cells,
    statistic_legend,
)
from mpibench.report.judge import transport_lines
from mpibench.report.render import Table
from mpibench.report.specs import _spec_value
from mpibench.store import Store
from mpibench.units import fmt_line_rate, parse_line_rate


def parse_rate(text: str | float | int) -> float:
    """'100Gb/s', '100Gbps', '25GbE', '200G', 1e11 (bits) or '12.5GB/s' (bytes) -> bits per
    second: units.parse_line_rate, the parser `import` and campaign files use too."""
    return parse_line_rate(text)


def line_rate_table(store: Store, sets: Mapping[str, list[str]],
                    line_rate: str | float | None = None, cells: dict | None = None,
                    warnings: list[str] | None = None) -> Table:
    """Peak measured bandwidth per set, benchmark and np as % of the line rate, and the
    smallest measured size reaching half of that peak. The line rate is the flag's, else each
    set's runs' spec 'line_rate_bps' (or 'line_rate' text), else only the peak is shown.

    Collectives are judged by their bus bandwidth (the usual factors, nccl-tests style):
    that is what the links carry, and the figure that can be held against a link speed;
    point-to-point benchmarks by their MB/s. A bandwidth measured on another transport
    than the one requested is footnoted (`warnings`: the comparison's transport warnings
    when it has them, else looked up)."""
    cells = cells if cells is not None else load_cells(store, sets, with_samples=False)
    wanted = set(sets)
    legend = statistic_legend((c for by in cells.values() for g, c in by.items()
                               if g in wanted and c.size), "time")
    t = Table(title="Bandwidth against line rate", kind="line-rate", rows=[],
              header=["variant", "benchmark", "np", "line rate", "figure", "peak MB/s",
                      "at size", "% of line", "half-peak size"],
              caption=f"MB/s = 10^6 bytes/s from the time ({legend}); figure = MB/s for "
                      "point-to-point, busbw (bus bandwidth) for collectives; line rate "
                      "converted as bits/s / 8 / 10^6; half-peak size = smallest measured "
                      "size whose bandwidth is >= 50% of the peak",
              notes=list(warnings) if warnings is not None else
              transport_lines(store, sets))
    for g, ids in sets.items():
        rate = line_rate
        if rate is None:
            rate = _spec_value(store, ids, ("line_rate_bps", "line_rate"))
        bps = parse_rate(rate) if rate is not None else None
        per_bench: dict[tuple[str, int | None], list[ResultCell]] = defaultdict(list)
        for by_set in cells.values():
            c = by_set.get(g)
            if c and c.status == "ok" and c.size and (c.busbw_mbps or c.bandwidth_mbps):
                per_bench[(c.key.title, c.np)].append(c)
        for bench, np_ in sorted(per_bench, key=lambda k: (bench_sort_key(k[0]),
                                                           -1 if k[1] is None else k[1])):
            cs = sorted(per_bench[(bench, np_)], key=lambda c: c.size)
            use_bus = any(c.busbw_mbps for c in cs)

            def bw(c: ResultCell, use_bus: bool = use_bus) -> float:
                return (c.busbw_mbps if use_bus else c.bandwidth_mbps) or 0.0

            peak = max(cs, key=bw)
            half = next(c for c in cs if bw(c) >= bw(peak) / 2)
            line_mbps = bps / 8 / 1e6 if bps else None
            pct = 100 * bw(peak) / line_mbps if line_mbps else None
            shown_pct = "" if pct is None else f"{pct:.1f}%"
            if pct is not None and pct > 100:
                # faster than the wire: the traffic did not cross that link (shared memory,
                # a loopback), or the line rate is wrong; never a result to quote
                shown_pct += " (!)"
                t.notes.append(
                    f"{g} {bench}" + (f" np={np_}" if np_ is not None else "")
                    + f": {pct:.0f}% of the {_fmt_rate(bps)} line rate is above 100%: the "
                    "traffic did not cross that link (shared memory or loopback?) or the "
                    "line rate is wrong")
            t.rows.append([g, bench, "" if np_ is None else str(np_), _fmt_rate(bps),
                           "busbw" if use_bus else "MB/s", fmt_num(bw(peak)),
                           fmt_size(peak.size), shown_pct, fmt_size(half.size)])
            t.records.append({"variant": g, "benchmark": bench, "np": np_,
                              "line_rate_bps": bps, "figure": "busbw" if use_bus else "mbps",
                              "peak_mbps": bw(peak), "peak_size": peak.size,
                              "percent_of_line_rate": pct, "half_peak_size": half.size,
                              "above_line_rate": pct is not None and pct > 100})
    if not t.rows:
        t.notes.append("no bandwidth results in the selection (point-to-point benchmarks such "
                       "as PingPong or Uniband report MB/s)")
    return t


def _fmt_rate(bps: float | None) -> str:
    return fmt_line_rate(bps)
