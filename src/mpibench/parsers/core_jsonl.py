"""Parse mpibench-core JSON Lines (schema in docs/core-output.md) into store result rows.

Pure: text in, records out. A truncated file (job killed mid-write) keeps every complete
record and reports the line where it ended.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from mpibench.parsers.base import MAX_INT, OUT_OF_BOUNDS, out_of_bounds

SUPPORTED_SCHEMA = 1

# core key -> store column
_SUMMARY_KEYS = {
    "median_us": "median", "ci_low_us": "ci_low", "ci_high_us": "ci_high", "min_us": "min",
    "p5_us": "p5", "p95_us": "p95", "p99_us": "p99", "max_us": "max", "mean_us": "mean",
    "std_us": "std", "first_us": "first",
}
_PLAIN_KEYS = ("benchmark", "size", "np", "status", "reason", "n", "batch", "warmup",
               "stop_reason", "bandwidth_mbps", "busbw_mbps", "msg_rate", "statistic",
               "n_eff")
# core key -> store column, for keys whose names differ (lag1_autocorr: lag-1 autocorrelation
# of the log samples; outputs before it was recorded leave the column NULL)
_RENAMED_KEYS = {"lag1_autocorr": "lag1"}
_EXTRA_SKIP = (set(_SUMMARY_KEYS) | set(_PLAIN_KEYS) | set(_RENAMED_KEYS)
               | {"record", "samples_us", "metric", "unit"})
_NUMBER_KEYS = set(_SUMMARY_KEYS) | {"bandwidth_mbps", "busbw_mbps", "msg_rate", "n_eff"}
_COUNT_KEYS = ("n", "batch", "warmup")
_TEXT_KEYS = ("status", "reason", "stop_reason", "statistic", "metric", "unit")


def _number(v: Any) -> bool:
    """A finite, non-negative JSON number (a 400-digit integer has no float)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    if isinstance(v, int):
        return 0 <= v <= MAX_INT
    return math.isfinite(v) and v >= 0


def _storable_json(v: Any) -> bool:
    """The rule: v is a plain JSON value, as json.dumps(allow_nan=False) takes it (no NaN or
    Infinity, no other types). _storable answers the same, faster."""
    try:
        json.dumps(v, allow_nan=False)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


# exact types json.dumps takes every value of (an int is checked for its digits below)
_PLAIN = frozenset({str, bool, type(None)})
_INT_FAST = 1 << 64   # a smaller int has at most 20 digits: json.dumps never refuses it


def _scalar(v: Any) -> bool | None:
    """_storable_json's answer for a scalar, without encoding it: True, False (NaN or an
    infinity), or None when its type is not answered here (then json.dumps is asked)."""
    t = type(v)
    if t in _PLAIN:
        return True
    if t is float:
        return v - v == 0.0           # finite (inf - inf and nan - nan are nan)
    if t is int and -_INT_FAST < v < _INT_FAST:
        return True
    return None


def _nested(v: Any, depth: int) -> bool | None:
    """_storable_json's answer for a list or a str-keyed dict whose values are scalars (or,
    `depth` levels down, such lists and dicts), else None. Every value is looked at before
    answering False: json.dumps stops at the first value it refuses (a ValueError, False
    here), but one it is not asked about here (a deep nesting: RecursionError) might come
    first, so an answer is given only when every value is of a shape answered here."""
    t = type(v)
    if t is list:
        values = v
    elif t is dict:
        for k in v:
            if type(k) is not str:
                return None
        values = v.values()
    else:
        return None
    ok = True
    for x in values:
        got = _scalar(x)
        if got is None:
            got = _nested(x, depth - 1) if depth else None
            if got is None:
                return None
        if not got:
            ok = False
    return ok


def _storable(v: Any) -> bool:
    """_storable_json(v), answered without encoding for what the core writes (scalars, and
    lists and dicts of them: phases_s, validation, buffer_page_offsets); any other value is
    asked of json.dumps itself, so the answer is the same for every value. The parser asks
    this of each field of each result record twice (~2,000 times a launch): json.dumps took
    most of the parse (bench/bench_campaign_overhead.py, `ingest`)."""
    got = _scalar(v)
    if got is None:
        got = _nested(v, 1)
        if got is None:
            return _storable_json(v)
    return got


def check_record(rec: dict[str, Any]) -> str | None:
    """Why a result record cannot be stored as it is (None if it can). New optional fields
    are fine as long as they are plain JSON values."""
    bench = rec.get("benchmark")
    if not isinstance(bench, str) or not bench.strip():
        return f"'benchmark' {bench!r} is not a name"
    size = rec.get("size")
    if not (isinstance(size, int) and not isinstance(size, bool) and 0 <= size <= MAX_INT):
        return f"'size' {size!r} is not a byte count"
    np_ = rec.get("np")
    if np_ is not None and not (isinstance(np_, int) and not isinstance(np_, bool)
                                and 1 <= np_ <= MAX_INT):
        return f"'np' {np_!r} is not a rank count"
    for k in _NUMBER_KEYS:
        if rec.get(k) is not None and not _number(rec[k]):
            return f"{k!r} {rec[k]!r} is not a finite non-negative number"
    for k in _COUNT_KEYS:
        v = rec.get(k)
        if v is not None and not (isinstance(v, int) and not isinstance(v, bool)
                                  and 0 <= v <= MAX_INT):
            return f"{k!r} {v!r} is not a count"
    for k in _TEXT_KEYS:
        if rec.get(k) is not None and not isinstance(rec[k], str):
            return f"{k!r} {rec[k]!r} is not a string"
    lag1 = rec.get("lag1_autocorr")
    if lag1 is not None and not (isinstance(lag1, int | float) and not isinstance(lag1, bool)
                                 and -1.0 <= lag1 <= 1.0):
        return f"'lag1_autocorr' {lag1!r} is not a correlation (-1 to 1)"
    samples = rec.get("samples_us")
    if samples is not None and not (isinstance(samples, list)
                                    and all(_number(x) for x in samples)):
        return "'samples_us' is not a list of finite non-negative numbers"
    return None


@dataclass
class CoreOutput:
    header: dict[str, Any]
    records: list[dict[str, Any]]
    footer: dict[str, Any] | None
    problems: list[str] = field(default_factory=list)


def _extra(rec: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A record's fields the store has no column for, split into the plain JSON values it
    keeps (in the record's order) and the names of those it drops (sorted): each field is
    checked once."""
    extra: dict[str, Any] = {}
    dropped: list[str] = []
    for k, v in rec.items():
        if k not in _EXTRA_SKIP:
            if _storable(v):
                extra[k] = v
            else:
                dropped.append(k)
    return extra, sorted(dropped)


def to_row(rec: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A checked result record as a store row. extra: _extra(rec)'s kept fields, if the
    caller has them already."""
    row: dict[str, Any] = {k: rec.get(k) for k in _PLAIN_KEYS if k in rec}
    for src, dst in (*_SUMMARY_KEYS.items(), *_RENAMED_KEYS.items()):
        if src in rec:
            row[dst] = rec[src]
    row["metric"] = rec.get("metric", "time")
    row["unit"] = rec.get("unit", "us")
    row["better"] = "lower"
    row.setdefault("statistic", "median")
    row.setdefault("status", "ok")
    if rec.get("samples_us") is not None:
        row["samples"] = [float(x) for x in rec["samples_us"]]
    if extra is None:
        extra = _extra(rec)[0]
    if extra:
        row["extra"] = extra
    return row


def _flag(row: dict[str, Any]) -> str | None:
    """Mark a row holding figures outside the physical bounds (parsers/base.py), as the
    importer does: kept, status out-of-bounds (an earlier failure status is kept), reason."""
    why = out_of_bounds(row)
    if not why:
        return None
    text = "; ".join(why)
    row.setdefault("extra", {})["out_of_bounds"] = text
    if row.get("status", "ok") == "ok":
        row["status"], row["reason"] = OUT_OF_BOUNDS, f"outside physical bounds: {text}"
    else:
        row["reason"] = f"{row.get('reason') or row['status']}; outside physical bounds: {text}"
    return text


def parse_core_jsonl(text: str, source: str = "<core output>") -> CoreOutput:
    out = CoreOutput(header={}, records=[], footer=None)
    lines = text.splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):     # RecursionError: '[[[[...' nested deeply
            where = "last line" if lineno == len(lines) else f"line {lineno}"
            out.problems.append(f"{source}:{lineno}: {where} is not a complete JSON record "
                                "(output truncated?)")
            continue
        kind = rec.get("record") if isinstance(rec, dict) else None
        if kind == "header":
            version = rec.get("schema_version")
            if version != SUPPORTED_SCHEMA:
                out.problems.append(f"{source}:{lineno}: schema_version {version!r}, "
                                    f"expected {SUPPORTED_SCHEMA}")
            out.header = rec
        elif kind == "result":
            if "benchmark" not in rec:
                out.problems.append(f"{source}:{lineno}: result record without 'benchmark'")
                continue
            why = check_record(rec)
            if why:
                out.problems.append(f"{source}:{lineno}: result record skipped: {why}")
                continue
            extra, dropped = _extra(rec)
            if dropped:
                out.problems.append(f"{source}:{lineno}: field(s) {', '.join(dropped)} are not "
                                    "plain JSON values (NaN, Infinity?); not stored")
            row = to_row(rec, extra)
            text = _flag(row)
            if text:
                out.problems.append(f"{source}:{lineno}: {row['benchmark']} size {row['size']}: "
                                    f"{text}; row stored with status '{OUT_OF_BOUNDS}'")
            out.records.append(row)
        elif kind == "footer":
            out.footer = rec
        else:
            out.problems.append(f"{source}:{lineno}: unknown record type {kind!r}")
    if out.header and out.footer is None:
        out.problems.append(f"{source}: no footer record: the run ended early")
    return out
