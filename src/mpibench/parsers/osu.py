"""OSU Micro-Benchmarks text output (5.x to 7.x).

The title line ("# OSU MPI Allreduce Latency Test v7.4") names the benchmark, stored with the
executable's name (osu_allreduce, osu_latency, osu_bw, osu_iallreduce, osu_put_latency...).
Columns come from the header line, which OSU prints before or after the "# Datatype:" line
depending on the version; every column set is read by name:
  Latency / Avg Latency(us)          -> mean (statistic "mean": average over iterations)
  Min/Max Latency(us), Iterations    -> extra t_min_us, t_max_us, iterations (-f)
  P50/P90/P99 Tail Lat(us)           -> extra p50_us, p90_us, p99_us (-z)
  Bandwidth (MB/s), MB/s             -> metric "bandwidth" (mean and bandwidth_mbps)
  Messages/s                         -> msg_rate
  Validation                         -> extra validation; "Fail" makes the row
                                        status "validation-failed" (-c)
  Overall/Compute/Pure Comm./Overlap -> non-blocking collectives: mean = Pure Comm. time
                                        (statistic "pure_comm"), the rest in extra
OSU's MB/s is 10^6 bytes/s. OSU prints no rank count: np is 2 for the two-rank tests,
2 x pairs for osu_mbw_mr, and unknown (None) for the rest unless the caller supplies it.
"""

from __future__ import annotations

import re
from typing import Any

from mpibench.parsers.base import (
    ABORT_PATTERNS,
    RULE_LINE,
    ParseResult,
    as_float,
    as_int,
    bandwidth_record,
    clip,
    finite,
    flag_out_of_bounds,
    split_lines,
    time_record,
)

TITLE_RE = re.compile(r"^#\s*OSU\s+(.*?)\s+[Tt]est\s+v(\d[\w.]*)")
# the number must end there: "window size: 1e400" is not a window of 1
PAIRS_RE = re.compile(r"pairs:\s*(\S*)")
WINDOW_RE = re.compile(r"window\s+size:\s*(\S*)")
DATATYPE_RE = re.compile(r"^#\s*Datatype:\s*(\S+?)\.?\s*$")
VALIDATION_STOP_RE = re.compile(r"DATA VALIDATION ERROR:.*?on\s+message size\s+(\d+)(?![^\s.,;])",
                                re.ASCII)

_COLLECTIVES = {
    "allreduce": "allreduce", "allgather": "allgather", "allgatherv": "allgatherv",
    "all-to-all personalized exchange": "alltoall", "all-to-all": "alltoall",
    "all-to-allv personalized exchange": "alltoallv", "all-to-allv": "alltoallv",
    "all-to-allw personalized exchange": "alltoallw", "alltoall": "alltoall",
    "alltoallv": "alltoallv", "barrier": "barrier", "broadcast": "bcast", "bcast": "bcast",
    "gather": "gather", "gatherv": "gatherv", "reduce": "reduce",
    "reduce_scatter": "reduce_scatter", "reduce scatter": "reduce_scatter",
    "reduce_scatter_block": "reduce_scatter_block", "scatter": "scatter",
    "scatterv": "scatterv",
}
_PT2PT = {
    "latency": "osu_latency", "bandwidth": "osu_bw", "bi-directional bandwidth": "osu_bibw",
    "multiple bandwidth / message rate": "osu_mbw_mr", "multi latency": "osu_multi_lat",
    "multi-threaded latency": "osu_latency_mt", "multi-threaded bandwidth": "osu_bw_mt",
    "multi-threaded bi-directional bandwidth": "osu_bibw_mt",
    "persistent latency": "osu_latency_persistent",
    "persistent bandwidth": "osu_bw_persistent",
}
_ONE_SIDED = {"put": "put", "get": "get", "accumulate": "acc", "get_accumulate": "get_acc",
              "fetch_and_op": "fop", "compare_and_swap": "cas"}
_TWO_RANK = {"osu_latency", "osu_bw", "osu_bibw", "osu_latency_mt", "osu_bw_mt",
             "osu_bibw_mt", "osu_latency_persistent", "osu_bw_persistent"}


def benchmark_name(title: str) -> tuple[str, str | None]:
    """'MPI Non-blocking Allreduce Latency' -> ('osu_iallreduce', None);
    'MPI-CUDA Bandwidth' -> ('osu_bw', 'CUDA'). Unknown titles get a slug."""
    t = " ".join(title.split())         # a tab or two spaces between words: same title
    accel = None
    m = re.match(r"^MPI-(CUDA|ROCM|OPENACC|SYCL|HIP)\b\s*", t, re.I)
    if m:
        accel = m.group(1).upper()
        t = t[m.end():]
    low = t.lower()
    m = re.match(r"^mpi_(\w+)\s+(.*)$", low)                # one-sided: "MPI_Put Latency"
    if m:
        op = _ONE_SIDED.get(m.group(1), m.group(1))
        rest = m.group(2)
        kind = ("bibw" if "bi-directional" in rest else "bw" if "bandwidth" in rest
                else "latency")
        return f"osu_{op}_{kind}", accel
    low = re.sub(r"^mpi\s+", "", low)
    if low in _PT2PT:
        return _PT2PT[low], accel
    nb = re.match(r"^non-?blocking\s+(.*)$", low)
    core = nb.group(1) if nb else low
    core = re.sub(r"\s+latency$", "", core)
    if core in _COLLECTIVES:
        return "osu_" + ("i" if nb else "") + _COLLECTIVES[core], accel
    slug = re.sub(r"[^a-z0-9]+", "_", low).strip("_")
    return "osu_" + (slug or "unknown"), accel


def known_benchmark(name: str) -> bool:
    """A name benchmark_name gives for a title it knows (not a slug of an unknown one)."""
    if name in _PT2PT.values():
        return True
    m = re.fullmatch(r"osu_(\w+?)_(latency|bw|bibw)", name)
    if m and m.group(1) in _ONE_SIDED.values():
        return True
    base = name[4:]
    return base in _COLLECTIVES.values() or (base[:1] == "i" and base[1:] in
                                               _COLLECTIVES.values())


def _column(name: str) -> str:
    """Canonical key for an OSU column header."""
    k = re.sub(r"\s+", "", name.lower())
    if not k.isascii():        # re's \d would take "P5٣" as a percentile
        return ""
    if k == "size":
        return "size"
    if k in ("avglatency(us)", "latency(us)", "latency", "avglatency"):
        return "latency"
    if k in ("bandwidth(mb/s)", "mb/s", "bandwidth", "avgbandwidth(mb/s)", "bw(mb/s)"):
        return "bandwidth"
    if k in ("messages/s", "messagerate", "msg/s"):
        return "msg_rate"
    m = re.match(r"^(min|max)latency\(us\)$", k)
    if m:
        return f"t_{m.group(1)}_us"
    m = re.match(r"^p(\d+)taillat\(us\)$", k)
    if m:
        return f"p{m.group(1)}_us"
    m = re.match(r"^p(\d+)tailbw\(mb/s\)$", k)
    if m:
        return f"p{m.group(1)}_mbps"
    table = {"iterations": "iterations", "validation": "validation",
             "overall(us)": "overall_us", "compute(us)": "compute_us",
             "purecomm.(us)": "pure_comm_us", "purecomm(us)": "pure_comm_us",
             "overlap(%)": "overlap_pct", "coll.init(us)": "init_us",
             "init(us)": "init_us", "mpi_test(us)": "test_us", "test(us)": "test_us",
             "mpi_wait(us)": "wait_us", "wait(us)": "wait_us"}
    return table.get(k, "")


def _header(line: str) -> list[str] | None:
    body = line.lstrip("#").strip()
    if not body:
        return None
    names = re.split(r"\s{2,}|\t+", body)
    keys = [_column(n) for n in names]
    if not all(keys):
        return None
    if keys[0] == "size" or (len(keys) >= 1 and keys[0] in ("latency", "bandwidth")):
        if len(set(keys)) != len(keys):
            return None
        return keys
    return None


class _Table:
    def __init__(self, title: str, version: str, line: int):
        self.name, self.accel = benchmark_name(title)
        self.title = title
        self.version = version
        self.line = line
        self.cols: list[str] | None = None
        self.names: list[str] = []
        self.ended = False
        self.rows = 0
        self.sec_rows = 0                  # rows of the current datatype section
        self.seen: dict[int, int] = {}
        self.meta: dict[str, Any] = {}
        self.datatypes: list[str] = []     # OSU 7 -T prints one section per datatype
        self.records: list[dict[str, Any]] = []
        self.constants: tuple[Any, int | None, dict[str, Any]] | None = None


def parse_osu(text: str) -> ParseResult:
    res = ParseResult(format="osu", tool="OSU")
    lines = split_lines(text)
    partial_last = bool(lines) and not text.endswith(("\n", "\r"))
    table: _Table | None = None
    titles: list[_Table] = []
    abort_lines: list[int] = []
    validation_stop: tuple[int, int | None] | None = None
    last_content = 0

    for i, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if stripped:
            last_content = i
        else:
            if table is not None and table.sec_rows:
                table.ended = True
            continue
        m = TITLE_RE.match(stripped)
        if m:
            table = _title(m, i, res)
            titles.append(table)
            continue
        if stripped.startswith("#"):
            if table is not None:
                _comment(table, stripped, i, res)
            continue
        vm = VALIDATION_STOP_RE.search(stripped)
        if vm:
            # OSU -c stops at the first size that fails validation and says so at the end
            validation_stop = (i, as_int(vm.group(1)))
            if table is not None:
                table.ended = True
            continue
        if RULE_LINE.match(stripped):
            # the MPI library's own summary (or Hydra's banner) starts: the table is over
            if table is not None and table.sec_rows:
                table.ended = True
            continue
        if ABORT_PATTERNS.search(stripped):
            abort_lines.append(i)
            if table is not None:
                table.ended = True
            continue
        tokens = stripped.split()
        if table is None or table.cols is None:
            if tokens and all(as_float(t) is not None for t in tokens):
                res.problem(i, "numbers before any OSU title and column header line "
                               "('# OSU MPI ... Test vX' then '# Size ...'); line skipped")
            continue
        _table_line(table, stripped, tokens, i, res, cut=partial_last and i == len(lines))

    _check_tables(res, titles)
    _how_it_ended(res, lines, titles, abort_lines, validation_stop, last_content)
    if titles:
        _file_meta(res, titles[0])
    flag_out_of_bounds(res)
    return res


def _title(m: re.Match, i: int, res: ParseResult) -> _Table:
    """A '# OSU MPI ... Test vX' line starts a table (one version per file)."""
    table = _Table(m.group(1), m.group(2), i)
    if not known_benchmark(table.name):
        res.problem(i, f"OSU test {m.group(1)!r} is not one this version knows: rows "
                       f"stored as {table.name}, np unknown")
    res.blocks += 1
    if res.version is None:
        res.version = m.group(2)
    elif res.version != m.group(2):
        res.problem(i, f"OSU version {m.group(2)} differs from {res.version} above")
    return table


def _comment(table: _Table, stripped: str, i: int, res: ParseResult) -> None:
    """A '#' line after a title: the column header, a datatype section, the pairs and
    window size, or another 'key: value' the table's rows carry."""
    hdr = _header(stripped)
    if hdr is not None:
        if table.cols is not None and table.sec_rows:
            res.problem(i, "a second column header in one OSU table; rows after it skipped")
            table.ended = True
            return
        table.cols = hdr
        table.names = re.split(r"\s{2,}|\t+", stripped.lstrip("#").strip())
        return
    dm = DATATYPE_RE.match(stripped)
    if dm:
        if table.sec_rows and dm.group(1) != table.meta.get("datatype"):
            # the next datatype's section (osu_* -T): same sizes again, its own rows
            table.seen, table.sec_rows, table.ended = {}, 0, False
        table.meta["datatype"] = dm.group(1)
        if dm.group(1) not in table.datatypes:
            table.datatypes.append(dm.group(1))
        return
    pm, wm = PAIRS_RE.search(stripped), WINDOW_RE.search(stripped)
    items = re.findall(r"\[([^\]]*)\]", stripped)
    if (re.search(r"pairs|window", stripped, re.I) and not (pm or wm)) or any(
            not re.match(r"^\s*(pairs|window\s+size):", it) for it in items):
        res.problem(i, f"expected '# [ pairs: N ] [ window size: N ]', got "
                       f"{clip(stripped)!r}; what it does not say is unknown")
    for km, key in ((pm, "pairs"), (wm, "window_size")):
        if km:
            v = as_int(km.group(1).rstrip("],;"))
            table.meta[key] = v
            if v is None:
                res.problem(i, f"{key.replace('_', ' ')} {km.group(1)!r} is not a "
                               "count; stored as unknown")
    kv = re.match(r"^#\s*([A-Za-z][\w .-]*?)\s*:\s*(.+?)\s*$", stripped)
    if kv and not (pm or wm):
        key = re.sub(r"[^a-z0-9]+", "_", kv.group(1).lower()).strip("_")
        if key not in ("pairs", "window_size", "datatype"):
            table.meta.setdefault(key, kv.group(2))


def _table_line(table: _Table, stripped: str, tokens: list[str], i: int, res: ParseResult,
                cut: bool) -> None:
    """A line under a table's column header: a row, kept once per size, or why not."""
    if table.ended:
        if tokens and all(as_float(t) is not None for t in tokens):
            res.problem(i, f"row after the {table.name} table ended; line skipped")
        return
    if cut:
        res.problem(i, f"last line is incomplete (no newline at the end of the file): "
                       f"{clip(stripped)!r} not imported")
        return
    rec = _row(table, tokens, i)
    if isinstance(rec, str):
        res.problem(i, f"{table.name} row {clip(stripped)!r}: {rec}; line skipped")
        return
    if rec is None:
        res.problem(i, f"expected a row of {len(table.cols or ())} values "
                       f"({', '.join(table.names)}), got {clip(stripped)!r}; line skipped")
        return
    if not finite(rec):
        res.problem(i, f"{table.name}: a number too large to store; line skipped")
        return
    first = table.seen.get(rec["size"])
    if first is not None:
        res.problem(i, f"{table.name}: size {rec['size']} already given at line {first}; "
                       "second row skipped")
        return
    table.seen[rec["size"]] = i
    table.rows += 1
    table.sec_rows += 1
    table.records.append(rec)
    res.records.append(rec)


def _check_tables(res: ParseResult, titles: list[_Table]) -> None:
    """Each table once read: datatype sections named apart, and what it lacked."""
    for t in titles:
        if len(t.datatypes) > 1:
            # several datatypes in one table: name the rows apart so they are never pooled
            for r in t.records:
                r["benchmark"] = f"{t.name}:{r['extra'].get('datatype', '')}"
        if t.cols is None:
            res.problem(t.line, f"{t.name}: no column header line ('# Size ...') after the "
                                "title; expected a results table")
        elif t.rows == 0:
            res.problem(t.line, f"{t.name}: column header but no rows")
        elif t.name == "osu_mbw_mr" and any(r["np"] is None for r in t.records):
            res.problem(t.line, "osu_mbw_mr rows without a '# [ pairs: N ] [ window size: N ]' "
                                "line before them: their np is unknown")
    if not titles:
        res.problem(None, "no '# OSU MPI ... Test vX.Y' title line: expected OSU output")


def _how_it_ended(res: ParseResult, lines: list[str], titles: list[_Table],
                  abort_lines: list[int], validation_stop: tuple[int, int | None] | None,
                  last_content: int) -> None:
    """A run killed by its launcher, or stopped by OSU's validation: truncated, and where."""
    if abort_lines:
        ab = next((n for n in abort_lines if re.search(r"[A-Za-z]", lines[n - 1])),
                  abort_lines[0])
        res.truncated = True
        res.truncated_at = last_content
        last = titles[-1] if titles else None
        sizes = [r["size"] for r in res.records if r["benchmark"] == (last.name if last else "")]
        res.problem(ab, f"the run was killed ({clip(lines[ab - 1])!r}): rows"
                        + (f" up to size {max(sizes)}" if sizes else "")
                        + " kept; larger sizes are missing")
    if validation_stop is not None:
        vline, vsize = validation_stop
        res.truncated = True
        res.truncated_at = last_content
        res.problem(vline, "OSU stopped after a validation error"
                           + (f" at size {vsize}" if vsize is not None else "")
                           + f" ({clip(lines[vline - 1])!r}): rows before it kept, that size "
                             "stored as validation-failed if its row was printed; larger "
                             "sizes were not run")


def _file_meta(res: ParseResult, first: _Table) -> None:
    """What the file says about the run, from its first table."""
    res.meta.update({k: v for k, v in first.meta.items() if v is not None})
    res.meta["benchmark"] = first.name
    if len(first.datatypes) > 1:
        res.meta["datatype"] = ",".join(first.datatypes)
    res.meta["title"] = "OSU " + first.title + " Test"
    if first.accel:
        res.meta["accelerator"] = first.accel


def _table_constants(table: _Table) -> tuple[int | None, dict[str, Any]]:
    """np and the extra keys every row of the table shares, from what the table said so far
    (recomputed when its meta changes: a '# Datatype' line can come between sections)."""
    key = tuple(table.meta.items())
    cached = table.constants
    if cached is not None and cached[0] == key:
        return cached[1], cached[2]
    np_ = 2 if table.name in _TWO_RANK or table.name.startswith(("osu_put", "osu_get",
                                                                 "osu_acc", "osu_fop",
                                                                 "osu_cas")) else None
    pairs = table.meta.get("pairs")
    if table.name == "osu_mbw_mr" and isinstance(pairs, int) and pairs > 0:
        np_ = 2 * pairs
    base: dict[str, Any] = {}
    for k in ("datatype", "pairs", "window_size", "window_creation", "synchronization"):
        if table.meta.get(k) is not None:
            base[k] = table.meta[k]
    if table.accel:
        base["accelerator"] = table.accel
    table.constants = (key, np_, base)
    return np_, base


def _row(table: _Table, tokens: list[str], lineno: int) -> dict[str, Any] | str | None:
    """The row's record; None if it is not a row of this table; a reason if its numbers
    cannot be right."""
    cols = table.cols or []
    if len(tokens) != len(cols):
        return None
    vals: dict[str, Any] = {}
    for c, t in zip(cols, tokens, strict=True):
        if c == "validation":
            if t.lower() not in ("pass", "fail", "passed", "failed"):
                return None
            vals[c] = t
        elif c in ("size", "iterations"):
            v = as_int(t)
            if v is None:
                return None
            vals[c] = v
        else:
            v = as_float(t)
            if v is None:
                return None
            vals[c] = v
    if "latency" in vals and not (vals.get("t_min_us", 0) <= vals["latency"]
                                  <= vals.get("t_max_us", float("inf"))):
        return "Min <= Avg <= Max latency does not hold (columns out of place?)"
    if vals.get("iterations", 1) < 1:
        return "Iterations must be at least 1"
    size = vals.get("size", 0)
    np_, base = _table_constants(table)
    extra: dict[str, Any] = {"line": lineno, **base}
    if "size" not in vals:
        extra["sizeless"] = True
    for k, v in vals.items():
        if k not in ("size", "latency", "bandwidth", "msg_rate", "pure_comm_us"):
            extra[k] = v
    if "pure_comm_us" in vals:
        rec = time_record(table.name, size, np_, vals["pure_comm_us"], "pure_comm", extra)
    elif "latency" in vals:
        rec = time_record(table.name, size, np_, vals["latency"], "mean", extra)
        if size and vals["latency"] > 0 and table.name in ("osu_latency", "osu_multi_lat",
                                                           "osu_latency_mt",
                                                           "osu_latency_persistent"):
            # one-way latency: the same bytes / time bandwidth IMB prints for PingPong
            rec["bandwidth_mbps"] = size / vals["latency"]
            rec["extra"]["bandwidth_derived"] = "size / latency"
    elif "bandwidth" in vals:
        rec = bandwidth_record(table.name, size, np_, vals["bandwidth"], "mean", extra)
    else:
        return None
    if "msg_rate" in vals:
        rec["msg_rate"] = vals["msg_rate"]
    if str(vals.get("validation", "pass")).lower().startswith("fail"):
        rec["status"] = "validation-failed"
        rec["reason"] = "OSU -c validation reported Fail"
    return rec
