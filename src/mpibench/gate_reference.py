"""Stored reference values for `mpibench check --reference FILE`: the file format, its
reader (every refusal names the file, the line, the value and what was expected), its
writer (`check --write-reference FILE` from a baseline set, so a CI pipeline keeps the
baseline in git without the store), and the one-sample gate of new launches against it.

The file (TOML):

    [reference]
    format = 1
    statistic = "median"        # each launch's statistic the values are of (median | mean)
    margin = "5%"               # optional default margin (check --margin overrides it)
    source = "..."              # free text: where the values came from
    core_options = { ... }      # the baseline launches' core options (their fingerprint's
                                # core_options; a [[cell]] carries its own where they differ)

    [[cell]]
    benchmark = "PingPong"
    size = 8                    # bytes (an integer or "4K"); omitted for a figure of merit
    np = 2                      # optional: only new launches with this rank count
    metric = "time"
    unit = "us"
    better = "lower"            # lower (times) or higher (rates)
    value = 0.51                # geometric mean of the reference launches' statistics
    sd_log = 0.04               # optional: between-launch sd of their logs ...
    launches = 6                # ... and how many launches it is from (needed with sd_log)
    margin = "10%"              # optional, this cell only
    params = { ... }            # optional: only new launches with these params

The test (gate.py's one-sided test, with one side a stored value): per cell, the log gain
d = mean(new launch logs) - log(value) (oriented so > 0 = the new launches are better),
H0 "gain >= 1/(1+margin)" against "worse by more than the margin". The new side's
standard error is compare's pooled model over the block's cells (one benchmark, np,
params and metric, its sizes: CellKey.block; stats.launch.spread), its sizes gated once
with the reference's own sd_log per size (stats.launch.gated_spreads), in size order as
compare gates an unpaired block (a spread that grows with size: the trend);
a reference with sd_log and launches adds its own component (sd_log^2 / launches, launches
- 1 df): a two-sample test against a summarised baseline. Without them the reference is
taken as exact: the test then says whether the new launches are slower than the stated value
by more than the margin; it cannot account for the reference's own estimation error, so a
reference that was itself a lucky low gives more false alarms than alpha unless the margin
covers that error. Overall per set: each launch's mean over the matched cells of its log
gain, a one-sample test over launches; the reference component there is (mean sd_log)^2 /
min(launches) (as if the cells' reference errors were fully shared: conservative), and only
when every matched cell carries a spread.

Provenance: the new launches' core options (execute.core_fingerprint, e.g. buffer_align of
the page-aligned core) are compared with the file's core_options; where they differ the check
prints one WARNING naming the keys (the store never pools such launches; a file cannot refuse
them, as a pipeline may mean to move on). A file without core_options (written before stop 35)
says "provenance unknown" once.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mpibench.errors import UsageError

FORMAT = 1
MAX_BYTES = 16 << 20
_CELL_KEYS = ("benchmark", "size", "np", "metric", "unit", "better", "value", "sd_log",
              "launches", "margin", "params", "statistic", "core_options")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_REF_KEYS = ("format", "statistic", "margin", "source", "description", "written",
             "core_options")
NO_SPREAD_CAVEAT = ("reference values without sd_log/launches are taken as exact: the test "
                    "says whether the new launches are slower than the stated value by more "
                    "than the margin, not whether they differ from the launches the value "
                    "came from (its own error is not in the test; the margin must cover it)")


@dataclass
class RefCell:
    benchmark: str
    size: int | None
    np: int | None
    metric: str
    unit: str
    better: str
    value: float
    sd_log: float | None = None
    launches: int | None = None
    margin: float | None = None
    params: dict[str, Any] | None = None
    statistic: str | None = None
    core_options: dict[str, Any] | None = None
    line: int = 0

    @property
    def label(self) -> str:
        from mpibench.units import fmt_size

        return fmt_size(self.size) if self.size is not None else self.metric

    def key(self) -> tuple:
        return (self.benchmark, self.size, self.np, self.metric,
                json.dumps(self.params, sort_keys=True, default=str)
                if self.params is not None else None)


@dataclass
class Reference:
    path: str
    statistic: str = "median"
    margin: float | None = None
    source: str = ""
    cells: list[RefCell] = field(default_factory=list)
    statistic_line: int = 0
    core_options: dict[str, Any] | None = None     # None: not in the file (before stop 35)


# -- reading ---------------------------------------------------------------------------------
def _show(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


class _Lines:
    """Line numbers for keys: the [[cell]] headers in order and the `key =` lines under them
    (tomllib keeps none). A key it cannot place gets its table's header line."""

    def __init__(self, text: str):
        self.lines = text.split("\n")
        self.headers: list[int] = []        # line of each [[cell]] (1-based)
        self.reference = 0
        for i, line in enumerate(self.lines, 1):
            s = line.strip()
            if re.match(r"\[\[\s*cell\s*\]\]", s):
                self.headers.append(i)
            elif re.match(r"\[\s*reference\s*\]", s):
                self.reference = i

    def _block(self, start: int) -> range:
        end = len(self.lines)
        for i in range(start, len(self.lines)):
            if self.lines[i].lstrip().startswith("["):
                end = i
                break
        return range(start, end)

    def of(self, cell: int | None, key: str | None = None) -> int:
        if cell is None:
            start = self.reference
        else:
            start = self.headers[cell] if cell < len(self.headers) else 0
        if not start:
            return 1
        if key:
            pat = re.compile(rf"\s*\"?{re.escape(key)}\"?\s*=")
            for i in self._block(start):
                if pat.match(self.lines[i]):
                    return i + 1
        return start


class _Reader:
    def __init__(self, path: str, text: str):
        self.path = path
        self.where = _Lines(text)

    def fail(self, cell: int | None, key: str | None, value: Any, expected: str,
             problem: str | None = None) -> None:
        line = self.where.of(cell, key)
        what = f"cell {cell + 1}" if cell is not None else "[reference]"
        shown = f"{key} = {_show(value)}" if key else _show(value)
        raise UsageError(f"{self.path}:{line}: {what}: {problem or shown}; expected {expected}")

    def text(self, cell, key, v, *, maxlen: int = 200) -> str:
        if not isinstance(v, str) or not v.strip() or len(v) > maxlen or any(
                ord(ch) < 0x20 or ord(ch) == 0x7F for ch in v):
            self.fail(cell, key, v, f"a non-empty string (at most {maxlen} characters, "
                                    "no control characters)")
        return v

    def integer(self, cell, key, v, minimum: int) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum or v > 2 ** 53:
            self.fail(cell, key, v, f"an integer >= {minimum}")
        return v

    def number(self, cell, key, v, *, positive: bool) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
                or (v <= 0 if positive else v < 0) or abs(v) > 1e300:
            self.fail(cell, key, v, "a finite number " + ("> 0" if positive else ">= 0"))
        if positive and float(v) < 1e-300:
            self.fail(cell, key, v, "a finite number > 1e-300")
        return float(v)

    def margin(self, cell, key, v) -> float:
        from mpibench.stats.launch import parse_margin

        m = parse_margin(v) if isinstance(v, str | int | float) else None
        if m is None:
            self.fail(cell, key, v, 'a margin such as "5%" (between 0.01% and 100%)')
        return m

    def statistic(self, cell, key, v) -> str:
        if v not in ("median", "mean"):
            self.fail(cell, key, v, '"median" or "mean"')
        return v

    def options(self, cell, key, v) -> dict[str, Any]:
        def ok(x):
            return isinstance(x, bool | int | float | str) and not (
                isinstance(x, str) and (len(x) > 200 or _CONTROL.search(x)))
        if not isinstance(v, dict) or len(v) > 64 or not all(
                ok(k) and k and ok(x) for k, x in v.items()):
            self.fail(cell, key, v, "an inline table of the core's options with scalar "
                      "values, as check --write-reference writes it")
        return dict(v)


def parse(text: str, path: str = "<reference>") -> Reference:
    """A reference file's text -> Reference; UsageError (one line: file:line, the value,
    what was expected) on anything else."""
    r = _Reader(path, text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise UsageError(f"{path}:{m.group(1) if m else 1}: invalid TOML ({exc}); expected a "
                         "reference file (mpibench check --write-reference writes one)"
                         ) from None
    unknown = [k for k in data if k not in ("reference", "cell")]
    if unknown:
        raise UsageError(f"{path}:1: unknown top-level key {_show(unknown[0])}; expected "
                         "[reference] and [[cell]] tables")
    ref = Reference(path)
    head = data.get("reference", {})
    if not isinstance(head, dict):
        r.fail(None, None, head, "a [reference] table")
    for k in head:
        if k not in _REF_KEYS:
            r.fail(None, k, head[k], "one of the keys " + ", ".join(_REF_KEYS),
                   f"unknown key {_show(k)}")
    if "format" in head and (isinstance(head["format"], bool) or head["format"] != FORMAT):
        r.fail(None, "format", head["format"], f"format = {FORMAT}")
    if "statistic" in head:
        ref.statistic = r.statistic(None, "statistic", head["statistic"])
        ref.statistic_line = r.where.of(None, "statistic")
    if "margin" in head:
        ref.margin = r.margin(None, "margin", head["margin"])
    if "core_options" in head:
        ref.core_options = r.options(None, "core_options", head["core_options"])
    for k in ("source", "description", "written"):
        if k in head:
            s = r.text(None, k, head[k], maxlen=2000)
            if k == "source":
                ref.source = s
    cells = data.get("cell")
    if not isinstance(cells, list) or not cells:
        raise UsageError(f"{path}:1: no [[cell]] entries (got {_show(cells)}); expected at "
                         "least one [[cell]] table with benchmark, metric, unit, better, value")
    seen: dict[tuple, int] = {}
    for i, c in enumerate(cells):
        if not isinstance(c, dict):
            r.fail(i, None, c, "a [[cell]] table")
        ref.cells.append(rc := _cell(r, i, c))
        k = rc.key()
        if k in seen:
            r.fail(i, "benchmark", rc.benchmark, "each cell once",
                   f"the same cell as cell {seen[k] + 1} ({rc.benchmark} {rc.label})")
        seen[k] = i
    return ref


def _cell(r: _Reader, i: int, c: dict) -> RefCell:
    from mpibench.benchmarks import parse_size

    for k in c:
        if k not in _CELL_KEYS:
            r.fail(i, k, c[k], "one of the keys " + ", ".join(_CELL_KEYS),
                   f"unknown key {_show(k)}")
    for k in ("benchmark", "metric", "unit", "better", "value"):
        if k not in c:
            r.fail(i, None, f"[[cell]] without {k}", f"{k} = ... in every [[cell]]",
                   f"missing key {k}")
    size = c.get("size")
    if size is not None:
        if isinstance(size, str):
            try:
                size = parse_size(size)
            except (UsageError, ValueError):
                r.fail(i, "size", c["size"], "a message size in bytes (8, 4K, 1M)")
        size = r.integer(i, "size", size, 0)
    rc = RefCell(
        benchmark=r.text(i, "benchmark", c["benchmark"]),
        size=size,
        np=r.integer(i, "np", c["np"], 1) if "np" in c else None,
        metric=r.text(i, "metric", c["metric"]),
        unit=r.text(i, "unit", c["unit"], maxlen=40),
        better=c["better"],
        value=r.number(i, "value", c["value"], positive=True),
        line=r.where.of(i))
    if rc.better not in ("lower", "higher"):
        r.fail(i, "better", rc.better, '"lower" (times) or "higher" (rates)')
    if "sd_log" in c:
        rc.sd_log = r.number(i, "sd_log", c["sd_log"], positive=False)
        if rc.sd_log > 10:
            r.fail(i, "sd_log", c["sd_log"], "the sd of the logs of launch statistics "
                   "(a number from 0 to 10; 0.05 is a 5% spread)")
        if "launches" not in c:
            r.fail(i, "sd_log", c["sd_log"], "launches = N (N >= 2) beside sd_log",
                   "sd_log without launches")
    if "launches" in c:
        rc.launches = r.integer(i, "launches", c["launches"], 1)
        if rc.sd_log is not None and rc.launches < 2:
            r.fail(i, "launches", c["launches"], "launches >= 2 with sd_log (a spread "
                   "needs two launches)")
    if "margin" in c:
        rc.margin = r.margin(i, "margin", c["margin"])
    if "statistic" in c:
        rc.statistic = r.statistic(i, "statistic", c["statistic"])
    if "core_options" in c:
        rc.core_options = r.options(i, "core_options", c["core_options"])
    if "params" in c:
        p = c["params"]
        if not isinstance(p, dict) or any(
                isinstance(v, dict | list) or (isinstance(v, str) and "\x00" in v)
                for v in p.values()):
            r.fail(i, "params", p, "an inline table of scalar values")
        rc.params = p
    return rc


def load(path: str) -> Reference:
    p = Path(path)
    try:
        if p.is_dir():
            raise UsageError(f"--reference {path}: is a directory; expected a reference "
                             "file (TOML)")
        with p.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"--reference {path}: not found; expected a reference file "
                         "(mpibench check --write-reference writes one)") from None
    except OSError as exc:
        raise UsageError(f"--reference {path}: cannot read ({exc.strerror})") from None
    if len(raw) > MAX_BYTES:
        raise UsageError(f"--reference {path}: larger than {MAX_BYTES >> 20} MiB; expected "
                         "a reference file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise UsageError(f"{path}:{line}: not UTF-8 (byte 0x{raw[exc.start]:02x}); expected "
                         "a TOML reference file") from None
    return parse(text, path)


# -- writing ---------------------------------------------------------------------------------
def _toml_str(s: str) -> str:
    out = []
    for ch in s:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04x}")
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else _toml_str(str(v))
    return _toml_str(str(v))


def _inline_table(key: str, items) -> str:
    """key = { k = v, ... } (TOML inline table; {} when there are no items)."""
    inner = ", ".join(f"{_toml_str(str(k))} = {_toml_value(v)}" for k, v in items)
    return f"{key} = {{ {inner} }}" if inner else f"{key} = {{}}"


def render(cells: list, *, statistic: str, source: str, margin: float | None = None,
           options: dict | None = None) -> str:
    """A reference file from one set's report.data Cells (those with launch values).
    options: fingerprint id -> core options (core_options_of); written in [reference] when
    the cells share them, else in each [[cell]]."""
    cells = [c for c in cells if c.estimate is not None and c.estimate.value is not None]
    per = [options.get(c.fingerprint_id, {}) for c in cells] if options is not None else []
    shared = per[0] if per and all(o == per[0] for o in per) else None
    lines = ["# mpibench reference values (mpibench check --reference FILE); written by",
             "# mpibench check --write-reference. value: geometric mean of the launches'",
             f"# {statistic}s; sd_log: their between-launch sd of the logs (docs/statistics.md)",
             "[reference]", f"format = {FORMAT}", f"statistic = {_toml_str(statistic)}",
             f"source = {_toml_str(_CONTROL.sub('?', source)[:2000])}"]
    if margin:
        lines.append(f'margin = "{100 * margin:g}%"')
    if shared is not None:
        lines.append(_inline_table("core_options", shared.items()))
    for i, c in enumerate(cells):
        est = c.estimate
        lines += ["", "[[cell]]", f"benchmark = {_toml_str(c.benchmark)}"]
        if c.size is not None:
            lines.append(f"size = {int(c.size)}")
        if c.np is not None:
            lines.append(f"np = {int(c.np)}")
        lines += [f"metric = {_toml_str(c.metric)}", f"unit = {_toml_str(c.unit)}",
                  f"better = {_toml_str(c.better)}", f"value = {float(est.value)!r}"]
        if est.sd_log is not None and est.launches >= 2:
            lines.append(f"sd_log = {float(est.sd_log)!r}")
        lines.append(f"launches = {int(est.launches)}")
        if c.shown_statistic != statistic:
            lines.append(f"statistic = {_toml_str(c.shown_statistic)}")
        if c.params:
            lines.append(_inline_table("params", sorted(c.params.items())))
        if per and shared is None:
            lines.append(_inline_table("core_options", per[i].items()))
    return "\n".join(lines) + "\n"


def _plain(opts: Any) -> dict[str, Any]:
    """Core options as a file holds them: no unset keys, scalars (others as their JSON)."""
    if not isinstance(opts, dict):
        return {}
    return {str(k): v if isinstance(v, bool | int | float | str) else json.dumps(v, default=str)
            for k, v in sorted(opts.items()) if v is not None}


def core_options_of(store, cells) -> dict[Any, dict[str, Any]]:
    """Fingerprint id -> the core options its launches were measured with (the
    fingerprint's core_options, execute.core_fingerprint; {} for an application or import)."""
    out: dict[Any, dict[str, Any]] = {}
    for c in cells:
        if c.fingerprint_id not in out:
            fp = store.fingerprint(c.fingerprint_id) or {}
            out[c.fingerprint_id] = _plain(fp.get("core_options"))
    return out


# -- the gate --------------------------------------------------------------------------------
def _matches(rc: RefCell, c) -> bool:
    from mpibench.report.data import params_key

    return (c.benchmark == rc.benchmark and c.size == rc.size and c.metric == rc.metric
            and (rc.np is None or c.np == rc.np)
            and (rc.params is None or params_key(c.params) == params_key(rc.params)))


def _match(ref: Reference, own: list, g: str, res) -> list[tuple[RefCell, Any]]:
    """Each reference cell with the one cell of set g it names (same unit and statistic);
    a reference cell without one is untested, one naming several is refused."""
    matched: list[tuple[RefCell, Any]] = []
    for rc in ref.cells:
        hits = [c for c in own if _matches(rc, c)]
        if len(hits) > 1:
            how = ", ".join(sorted({f"np {c.np} params {json.dumps(c.params)}"[:60]
                                    for c in hits}))
            raise UsageError(f"{ref.path}:{rc.line}: cell {rc.benchmark} {rc.label} "
                             f"matches {len(hits)} cells of {g} ({how}); expected one "
                             "(add np = or params = to the cell)")
        if not hits:
            res.untested.append((g, rc.benchmark, rc.label, "no new launches"))
            continue
        c = hits[0]
        if c.unit != rc.unit:
            raise UsageError(f"{ref.path}:{rc.line}: unit = {rc.unit!r} but {g}'s "
                             f"{rc.benchmark} {rc.label} is in {c.unit!r}; expected the "
                             "unit of the new launches")
        want = rc.statistic or ref.statistic
        if c.shown_statistic != want:
            raise UsageError(f"{ref.path}:{rc.line}: statistic {want!r} but {g}'s "
                             f"{rc.benchmark} {rc.label} has each launch's "
                             f"{c.shown_statistic}; expected the same statistic (check "
                             "--statistic)")
        matched.append((rc, c))
    return matched


def judge(ref: Reference, cells: dict, sets: list[str], margin_flag: float | None,
          alpha: float, options: dict | None = None):
    """The gate of every selected set against the reference: gate.GateResult (findings per
    matched cell and one overall test per set, Holm over all of them). options: the new
    launches' core options by fingerprint id (core_options_of); compared with the file's."""
    from mpibench import stats
    from mpibench.gate import Finding, GateResult
    from mpibench.stats import launch as L

    default = margin_flag if margin_flag is not None else (ref.margin or 0.0)
    res = _result(GateResult(f"reference {ref.path}", list(sets), default, alpha), ref)
    every: list[tuple[RefCell, Any]] = []
    for g in sets:
        own = [by[g] for by in cells.values() if g in by and by[g].launch_values]
        matched = _match(ref, own, g, res)
        every += matched
        res.unmatched += len(own) - len(matched)
        # the new side's spread per block (compare's: the cell key without its size,
        # CellKey.block; its pooled model) gated once with the reference's own per-size
        # spreads (stats.launch.gated_spreads): a size the reference says is noisy keeps
        # its own part where the new side's gate alone stays closed
        spreads: dict[tuple, list] = {}
        known: dict[tuple, list[tuple[float, float]]] = {}
        for rc, c in matched:
            spreads.setdefault(c.key.block, []).append(c)
            if rc.sd_log is not None and rc.launches and rc.launches > 1:
                known.setdefault(c.key.block, []).append((rc.sd_log ** 2, rc.launches - 1))
        spread = {k: _new_spread(L, v, known.get(k, ())) for k, v in spreads.items()}
        per_launch: dict[str, list[float]] = {}
        ref_sds: list[tuple[float, int]] = []
        for rc, c in matched:
            m = rc.margin if rc.margin is not None else default
            sign = -1.0 if rc.better == "lower" else 1.0
            y = np.array([sign * math.log(v) for v in c.launch_values
                          if v is not None and math.isfinite(v) and v > 0])
            r0 = sign * math.log(rc.value)
            for lid, v in zip(c.launch_ids, c.launch_values, strict=True):
                if v is not None and math.isfinite(v) and v > 0:
                    per_launch.setdefault(lid, []).append(sign * math.log(v) - r0)
            if rc.sd_log is not None:
                ref_sds.append((rc.sd_log, rc.launches or 2))
            n = int(y.size)
            if n < 2:
                res.untested.append((g, rc.benchmark, rc.label,
                                     f"{n} new launch(es); a test needs >= 2"))
                continue
            sp = spread[c.key.block]
            # this size's own (moderated) cell part where the sizes differ, as compare
            comps = sp.components(n, id(c)) if sp is not None else [
                (float(y.var(ddof=1)) / n, n - 1)]
            if rc.sd_log is not None:
                comps = comps + [(rc.sd_log ** 2 / rc.launches, rc.launches - 1)]
            f = _finding(Finding, L, g, rc.benchmark, rc.label, float(y.mean()) - r0,
                         comps, m, alpha, (rc.launches if rc.sd_log is not None else 0, n))
            f.margin = m
            res.findings.append(f)
        if len(per_launch) >= 2 and matched:
            d = np.array([float(np.mean(v)) for v in per_launch.values()])
            n = int(d.size)
            comps = [(float(d.var(ddof=1)) / n, n - 1)]
            k = 0
            if ref_sds and len(ref_sds) == len(matched):
                sd = float(np.mean([s for s, _ in ref_sds]))
                k = min(k for _, k in ref_sds)
                comps.append((sd * sd / k, k - 1))
            # the overall test is at the check's margin (--margin, else the file's), not at
            # the cells' own margins
            f = _finding(Finding, L, g, "(all)", "overall", float(d.mean()), comps, default,
                         alpha, (k, n))
            f.margin = default
            res.findings.append(f)
    adj = stats.holm([f.p for f in res.findings])
    for f, pa in zip(res.findings, adj, strict=True):
        f.p_holm = None if np.isnan(pa) else float(pa)
        f.regression = f.p_holm is not None and f.p_holm <= alpha
    if options is not None:
        _provenance(ref, every, options, res)
    return res


def _result(res, ref: Reference):
    """The GateResult's account of the file: its cells, how many carry a spread (a note
    when some do not)."""
    n_spread = sum(rc.sd_log is not None for rc in ref.cells)
    res.reference = {"file": ref.path, "statistic": ref.statistic, "cells": len(ref.cells),
                     "with_spread": n_spread, "without_spread": len(ref.cells) - n_spread}
    if n_spread < len(ref.cells):
        res.notes.append(NO_SPREAD_CAVEAT)
    return res


UNKNOWN_PROVENANCE = ("provenance unknown (written before stop 35): the file does not say "
                      "which core options its launches were measured with (e.g. buffer_align)"
                      "; write it again with --write-reference to have them compared")


def _provenance(ref: Reference, matched: list, options: dict, res) -> None:
    """The file's core options against the new launches' per matched cell: one WARNING
    naming the keys that differ (JSON: reference.core_options), or one note when the file
    has none."""
    differ: dict[str, dict[str, set]] = {}
    unknown = n_differ = 0
    for rc, c in matched:
        want = rc.core_options if rc.core_options is not None else ref.core_options
        if want is None:
            unknown += 1
            continue
        got = options.get(c.fingerprint_id, {})
        keys = sorted(k for k in {*want, *got} if want.get(k) != got.get(k))
        n_differ += bool(keys)
        for k in keys:
            d = differ.setdefault(k, {"reference": set(), "new": set()})
            d["reference"].add("unset" if k not in want else json.dumps(want[k]))
            d["new"].add("unset" if k not in got else json.dumps(got[k]))
    res.reference["core_options"] = {
        "reference": ref.core_options, "unknown_cells": unknown, "differing_cells": n_differ,
        "differ": {k: {s: sorted(v) for s, v in d.items()} for k, d in differ.items()}}
    if unknown:
        res.notes.append(UNKNOWN_PROVENANCE)
    if differ:
        what = "; ".join(f"{k}: reference {'/'.join(sorted(d['reference']))}, new "
                         f"{'/'.join(sorted(d['new']))}" for k, d in sorted(differ.items()))
        res.warnings.append(
            f"core options differ from the reference's launches in {n_differ} of "
            f"{len(matched)} cells ({what}): the gains include what the options change "
            "(the store never pools such launches)")


def _new_spread(L, cells: list, known):
    """The new launches' Spread over one block's matched cells (None for one cell),
    its cells in size order and gated as ordered, as compare_cells orders an unpaired
    block given sizes (stats.launch._size_order): a spread that grows with size opens the
    gate and centres the prior (the trend); in the file's order it kept the flat prior."""
    if len(cells) < 2:
        return None
    order = L._size_order([c.size for c in cells], len(cells))
    return L.gated_spreads([{id(cells[i]): cells[i].by_launch for i in order}], known,
                           ordered=True)[0]


def _finding(Finding, L, g, bench, label, diff, comps, margin, alpha, launches):
    comps = tuple((float(v), float(d)) for v, d in comps)
    se = math.sqrt(sum(v for v, _ in comps))
    bound = -math.log1p(margin)
    if se == 0:
        p = 0.0 if diff < bound else 1.0
        lo = hi = math.exp(diff)
    else:
        p = L.one_sided_p((bound - diff) / se, comps)
        h = L.cochran_cox_crit(comps, alpha) * se
        lo, hi = math.exp(diff - h), math.exp(diff + h)
    return Finding(g, bench, label, math.exp(diff), lo, hi, p, launches=launches)


__all__ = ["FORMAT", "NO_SPREAD_CAVEAT", "UNKNOWN_PROVENANCE", "RefCell", "Reference",
           "core_options_of", "judge", "load", "parse", "render"]
