"""Parse mpibench-core JSON Lines (schema in docs/core-output.md) into store result rows.

Pure: text in, records out. A truncated file (job killed mid-write) keeps every complete
record and reports the line where it ended.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

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


@dataclass
class CoreOutput:
    header: dict[str, Any]
    records: list[dict[str, Any]]
    footer: dict[str, Any] | None
    problems: list[str] = field(default_factory=list)


def to_row(rec: dict[str, Any]) -> dict[str, Any]:
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
    extra = {k: v for k, v in rec.items() if k not in _EXTRA_SKIP}
    if extra:
        row["extra"] = extra
    return row


def parse_core_jsonl(text: str, source: str = "<core output>") -> CoreOutput:
    out = CoreOutput(header={}, records=[], footer=None)
    lines = text.splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
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
            out.records.append(to_row(rec))
        elif kind == "footer":
            out.footer = rec
        else:
            out.problems.append(f"{source}:{lineno}: unknown record type {kind!r}")
    if out.header and out.footer is None:
        out.problems.append(f"{source}: no footer record: the run ended early")
    return out
