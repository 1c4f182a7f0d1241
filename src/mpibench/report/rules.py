"""The two rules every figure keeps, each in one function (docs/design.md, "Which rows a
figure may use"):

- the row rule, `why_unusable(row)`: a stored result row may feed a figure only when its run
  finished (status done) and the row itself is ok. Rows of failed, timed-out or still
  running launches never make a value, whatever their own status says (a peer suite that
  printed 84 rows and then failed is a failed cell, not 84 results).
- the comparability rule, `why_not_comparable(a, b)`: two cells may meet in a ratio (a gain,
  a speedup, a ratio grid, a verdict, a stopping rule) only when both are finished (status
  ok, with a value), show the same statistic (a median never divides a mean), were measured
  by the same tool or by sets that each hold one tool (see `CellKey.tool`), and are the same
  kind of metric (a call count is never a speedup).

A cell is keyed by `CellKey`: (benchmark, size, np, params_key, metric, tool). `tool` is None
where every set measured the cell with one tool: comparing two sets then compares what the
user chose to put side by side (`compare --by tool`, an imported IMB file against the core)
under the same-statistic rule. Where one set measured the cell with several tools (a
campaign with core and IMB groups, read `--by variant`), the tool is part of that cell's
key, so the core's and the suite's rows of one variant are separate cells, never pooled,
and only the same tool's cells meet.

`metric_kind` names what kind of figure a metric is; the tables ask the key or the cell
(`kind`, `at_message_size`, `is_profile`, ...) instead of testing metric names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # pragma: no cover
    from mpibench.report.data import ResultCell

PROFILE_PREFIX = "profile:"
SIZE_HISTOGRAM = "profile:sizes"
# units that count things rather than time them (profile rows)
_COUNT_UNITS = frozenset({"calls", "B", "bytes", "messages"})
_FRACTION_UNITS = frozenset({"ratio", "fraction", "%"})


class MetricKind(StrEnum):
    """What kind of figure a metric is. Ratios (gains, speedups) are only taken between two
    cells of one kind, and speedup/efficiency only for TIME and RATE."""
    TIME = "time"                        # a duration, lower is better (us, s)
    RATE = "rate"                        # a throughput or figure of merit, higher is better
    PROFILE_TIME = "profile:time"        # time inside MPI from a profiled launch
    PROFILE_COUNT = "profile:counts"     # calls, messages, bytes of a profiled launch
    PROFILE_FRACTION = "profile:fraction"  # MPI fraction, message/byte shares
    PROFILE_SIZES = "profile:sizes"      # a message-size histogram bin

    @property
    def scales(self) -> bool:
        """Whether a speedup and a parallel efficiency mean anything for this kind."""
        return self in (MetricKind.TIME, MetricKind.RATE)


def metric_kind(benchmark: str, metric: str, unit: str | None = None,
                better: str | None = None) -> MetricKind:
    """The kind of one (benchmark, metric): profile rows by their histogram, unit or metric,
    everything else by its better-direction (a rate is higher-better)."""
    if benchmark == SIZE_HISTOGRAM:
        return MetricKind.PROFILE_SIZES
    if benchmark.startswith(PROFILE_PREFIX):
        if metric in ("calls", "messages", "bytes") or unit in _COUNT_UNITS:
            return MetricKind.PROFILE_COUNT
        if metric.endswith(("fraction", "share")) or unit in _FRACTION_UNITS:
            return MetricKind.PROFILE_FRACTION
        return MetricKind.PROFILE_TIME
    if better == "higher":
        return MetricKind.RATE
    return MetricKind.TIME


class CellKey(NamedTuple):
    """Which cell a result row belongs to. params_key is the params' canonical JSON
    (data.params_key), so the key is hashable; `params` gives the dict back."""
    benchmark: str
    size: int | None
    np: int | None
    params_key: str
    metric: str
    tool: str | None = None

    # A key without a tool is the same key as its plain 5-tuple (benchmark, size, np,
    # params_key, metric), as cells were keyed before the tool joined the key: code that
    # looks a cell up by the 5-tuple keeps finding it.
    def __eq__(self, other: object) -> bool:
        if isinstance(other, tuple) and len(other) == 5 and not isinstance(other, CellKey):
            return self.tool is None and tuple(self[:5]) == other
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(tuple(self[:5])) if self.tool is None else tuple.__hash__(self)

    @property
    def params(self) -> dict[str, Any]:
        return _params(self.params_key)

    @property
    def block(self) -> CellKey:
        """The block this cell is tested in with its sizes (stats.launch.compare_cells
        pools a block's sizes; report.judge, check --reference): the key without its size,
        np, params, metric and tool kept."""
        return self._replace(size=None)

    @property
    def is_profile(self) -> bool:
        return self.benchmark.startswith(PROFILE_PREFIX)

    @property
    def is_size_histogram(self) -> bool:
        return self.benchmark == SIZE_HISTOGRAM

    @property
    def at_message_size(self) -> bool:
        """A benchmark timed at a message size (not a histogram bin of a profile)."""
        return self.size is not None and not self.is_size_histogram

    @property
    def is_application(self) -> bool:
        """An application cell (no message size), not a profile of one."""
        return self.size is None and not self.is_profile

    @property
    def is_message_time(self) -> bool:
        """A message-size benchmark's time: what latency/bandwidth plots draw."""
        return self.at_message_size and self.metric == "time" and not self.is_profile

    @property
    def title(self) -> str:
        """The benchmark's name as tables show it, with the tool when the key has one."""
        return f"{self.benchmark} ({self.tool})" if self.tool else self.benchmark


_PARAMS_CACHE: dict[str, dict[str, Any]] = {}


def _params(pkey: str) -> dict[str, Any]:
    hit = _PARAMS_CACHE.get(pkey)
    if hit is None:
        hit = json.loads(pkey) if pkey else {}
        if len(_PARAMS_CACHE) < 65536:
            _PARAMS_CACHE[pkey] = hit
    return dict(hit)


FINISHED = "done"


def why_unusable(row: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """The row rule. None when a stored result row may feed a figure; else (status, reason)
    to show in its place. `row` holds the result's status and reason and its run's
    (`run_status`, `run_reason`; rows without run columns, e.g. hand-made ones, are judged by
    their own status)."""
    run_status = row.get("run_status")
    if run_status is not None and run_status != FINISHED:
        status = run_status if run_status in ("failed", "timeout") else "unfinished"
        reason = row.get("run_reason") or (
            "the launch did not finish" if status == "unfinished" else None)
        return status, reason
    if row.get("status", "ok") != "ok":
        return row["status"], row.get("reason")
    return None


def why_not_comparable(a: ResultCell, b: ResultCell) -> str | None:
    """The comparability rule. None when cells a and b may meet in a ratio; else one line
    saying why not (used as the footnote of the missing figure)."""
    for c in (a, b):
        if c.status != "ok":
            return f"{c.set_name}: {c.status}" + (f" ({c.reason})" if c.reason else "")
        if c.value is None:
            return f"{c.set_name}: no value"
    if a.shown_statistic != b.shown_statistic:
        return (f"{a.set_name} shows a {a.shown_statistic}, {b.set_name} a {b.shown_statistic}: a "
                "gain is only computed between the same statistic on both sides (see "
                "--statistic)")
    if a.key.tool != b.key.tool:
        return (f"{a.set_name} was measured by {a.key.tool}, {b.set_name} by {b.key.tool}: the "
                "core's and a peer suite's rows are separate cells")
    if a.kind != b.kind:
        return (f"{a.set_name} is a {a.kind} figure, {b.set_name} a {b.kind}: a ratio needs "
                "one kind of metric on both sides")
    if a.better != b.better:
        return (f"{a.set_name} is {a.better}-is-better, {b.set_name} {b.better}-is-better: a "
                "ratio needs one kind of metric on both sides")
    return None


def comparable(a: ResultCell, b: ResultCell) -> bool:
    return why_not_comparable(a, b) is None


def verdict_tool(tools: Iterable[str | None]) -> str | None:
    """Which tool's rows a candidate's verdict aggregates when a table mixes tools: the
    core's, else the first tool's by name; None when there is one tool (every row). The
    report (judge) and the decide rule's table shape (campaign/auto_repeats) both ask here."""
    distinct = list(dict.fromkeys(tools))
    if len(distinct) <= 1:
        return None
    return "core" if "core" in distinct else sorted(t or "" for t in distinct)[0]


__all__ = ["CellKey", "MetricKind", "metric_kind", "why_unusable", "why_not_comparable",
           "comparable", "verdict_tool", "FINISHED", "SIZE_HISTOGRAM", "PROFILE_PREFIX"]
