"""nccl-tests output: the text table and the JSON file (-J/--output_file, JSON version 2).

Each size line holds an out-of-place and an in-place measurement (time in us, algbw and busbw
in GB/s = 10^9 bytes/s, #wrong elements). They become two rows: benchmark
"nccl_<op>" (out-of-place) and "nccl_<op>_inplace", where <op> is the test program without
"_perf" (all_reduce, all_gather, broadcast, ...). time -> mean (statistic "mean": nccl-tests
averages over iterations and ranks), algbw -> bandwidth_mbps, busbw -> busbw_mbps (x1000),
#wrong -> extra wrong; #wrong > 0 makes the row status "validation-failed". np is the number
of ranks (GPUs) the "Using devices" list (or the JSON 'devices') shows.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from mpibench.parsers.base import (
    ABORT_PATTERNS,
    ParseResult,
    as_float,
    as_int,
    clip,
    finite,
    flag_out_of_bounds,
    split_lines,
)

VERSION_RE = re.compile(r"nccl-tests version\s+(\S+)(?:\s+nccl-headers=(\d+))?"
                        r"(?:\s+nccl-library=(\d+))?")
START_RE = re.compile(r"Collective test starting:\s*(\S+)")
CONFIG_RE = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)"
                       r"\s.*?warmup iters:\s*(\d+)\s+iters:\s*(\d+)(?=\s|$)", re.ASCII)
RANK_RE = re.compile(r"^#\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+"
                     r"device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$", re.ASCII)
AVG_BUSBW_RE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_SIGNED_NUM = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")
OOB_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(\w*)")

# Name a table after the program; without it (older versions print no name) the ratio of
# busbw to algbw and the redop/root columns narrow it down only partly.
_PROGRAMS = ("all_reduce", "all_gather", "broadcast", "reduce_scatter", "reduce", "alltoall",
             "sendrecv", "scatter", "gather", "hypercube")


# per-iteration statistics (nccl-tests -I): text columns and JSON "<side>_per_iter" keys
_PER_ITER_TEXT = {"i_min": "t_min_us", "i_max": "t_max_us", "i_p99": "p99_us",
                  "i_cv%": "cv_pct"}
_PER_ITER_JSON = {"min_us": "t_min_us", "max_us": "t_max_us", "avg_us": "iter_avg_us",
                  "p50_us": "p50_us", "p95_us": "p95_us", "p99_us": "p99_us",
                  "stdev_us": "stdev_us", "cv_pct": "cv_pct"}


# what nccl-tests prints in its type and redop columns (a newer version may add some: such
# rows are kept, with a warning)
_TYPES = {"int8", "char", "uint8", "int32", "int", "uint32", "int64", "uint64", "half",
          "float16", "float", "float32", "double", "float64", "bfloat16", "f8e4m3", "f8e5m2",
          "fp8_e4m3", "fp8_e5m2"}
_COLUMNS = {"size", "count", "type", "redop", "root", "time", "cputime", "algbw", "busbw",
            "#wrong", "error", "timestamp", *_PER_ITER_TEXT}
_REDOPS = {"sum", "prod", "max", "min", "avg", "mulsum", "premulsum", "none", "all"}


def op_name(program: str | None) -> str | None:
    if not program:
        return None
    base = re.sub(r"^.*/", "", program)
    base = re.sub(r"(_perf(_mpi)?)$", "", base)
    return base if re.fullmatch(r"[a-z][a-z0-9_]*", base) else None


def _number(tok: str) -> float | None:
    """nccl-tests prints %g / %e forms ('0', '0e+00', '1.2e+03'); N/A means not checked."""
    v = as_float(tok)
    if v is None:
        # float() would also take '٣', '1_0', ' 1' and 'infinity': only ASCII %e/%g forms
        if not _SIGNED_NUM.match(tok):
            return None
        v = float(tok)
        if not math.isfinite(v) or v < 0:
            return None
    return v


def _records(op: str, size: int, count: int | None, dtype: str, redop: str, root: str,
             side: str, time_us: float | None, algbw: float | None, busbw: float | None,
             wrong: float | None, np_: int | None, lineno: int | None,
             iters: int | None) -> dict[str, Any]:
    name = f"nccl_{op}" + ("_inplace" if side == "in-place" else "")
    extra: dict[str, Any] = {"placement": side, "count": count, "type": dtype, "redop": redop,
                             "root": root, "algbw_gbps": algbw, "busbw_gbps": busbw}
    if lineno is not None:
        extra["line"] = lineno
    if iters is not None:
        extra["iterations"] = iters
    if wrong is not None:
        extra["wrong"] = wrong
    rec = {"benchmark": name, "size": size, "np": np_, "status": "ok", "metric": "time",
           "unit": "us", "better": "lower", "statistic": "mean", "n": None, "mean": time_us,
           "bandwidth_mbps": None if algbw is None else algbw * 1000.0,
           "busbw_mbps": None if busbw is None else busbw * 1000.0,
           "extra": {k: v for k, v in extra.items() if v is not None}}
    if wrong:
        rec["status"] = "validation-failed"
        rec["reason"] = f"nccl-tests found {wrong:g} wrong elements ({side})"
    return rec


def _distinguish(res: ParseResult) -> None:
    """nccl-tests -d all / -o all repeat every size per data type and reduction: name such
    rows nccl_<op>:<type>:<redop> so they are not pooled together. Then drop exact repeats."""
    combos = {(r["extra"].get("type"), r["extra"].get("redop")) for r in res.records}
    roots = {r["extra"].get("root") for r in res.records}
    if len(combos) > 1 or len(roots) > 1:
        for r in res.records:
            x = r["extra"]
            parts = [x.get("type", ""), x.get("redop", "")]
            if len(roots) > 1:
                parts.append(f"root{x.get('root', '')}")
            base, inplace = (r["benchmark"][:-8], "_inplace") \
                if r["benchmark"].endswith("_inplace") else (r["benchmark"], "")
            r["benchmark"] = base + inplace + ":" + ":".join(parts)
    seen: dict[tuple, int | None] = {}
    kept = []
    for r in res.records:
        if not finite(r):
            res.problem(r["extra"].get("line"), f"{r['benchmark']} size {r['size']}: a number "
                                                "too large to store; skipped")
            continue
        key = (r["benchmark"], r["size"])
        if key in seen:
            where = r["extra"].get("line")
            res.problem(where, f"{r['benchmark']} size {r['size']} given twice"
                               + (f" (first at line {seen[key]})" if seen[key] else "")
                               + "; second row skipped")
            continue
        seen[key] = r["extra"].get("line")
        kept.append(r)
    res.records = kept
    flag_out_of_bounds(res)


class _TextScan:
    """What parse_nccl_text knows between lines."""

    def __init__(self) -> None:
        self.program: str | None = None
        self.ranks: dict[int, dict[str, Any]] = {}
        self.cols: list[str] | None = None
        self.header_line = 0
        self.footer = False
        self.abort_lines: list[int] = []
        self.iters: int | None = None
        self.last_content = 0
        self.last_size: int | None = None


def parse_nccl_text(text: str) -> ParseResult:
    res = ParseResult(format="nccl", tool="nccl-tests")
    lines = split_lines(text)
    partial_last = bool(lines) and not text.endswith(("\n", "\r"))
    st = _TextScan()
    for i, raw in enumerate(lines, 1):
        s = raw.strip()
        if not s:
            continue
        st.last_content = i
        if _text_preamble(st, s, i, res):
            continue
        if s.startswith("#"):
            _text_comment(st, s, i, res)
            continue
        if ABORT_PATTERNS.search(s):
            st.abort_lines.append(i)
            continue
        _text_data_line(st, s, i, res, cut=partial_last and i == len(lines))
    _text_finish(st, res, lines)
    _distinguish(res)
    return res


def _text_preamble(st: _TextScan, s: str, i: int, res: ParseResult) -> bool:
    """The version, test program, settings and rank lines; True if s was one of them (or
    a damaged settings or rank line, reported)."""
    m = VERSION_RE.search(s)
    if m and s.startswith("#"):
        res.version = m.group(1)
        if m.group(3):
            res.meta["nccl_library"] = int(m.group(3))
        if m.group(2):
            res.meta["nccl_headers"] = int(m.group(2))
        return True
    m = START_RE.search(s)
    if m and s.startswith("#"):
        st.program = m.group(1)
        return True
    m = CONFIG_RE.match(s)
    if m:
        res.meta.update(nthread=int(m.group(1)), ngpus=int(m.group(2)),
                        min_bytes=int(m.group(3)), max_bytes=int(m.group(4)),
                        warmup_iters=int(m.group(5)), iters=int(m.group(6)))
        st.iters = int(m.group(6))
        return True
    if s.startswith("#") and re.search(r"nThread|minBytes|warmup iters", s):
        res.problem(i, f"expected the settings line '# nThread N nGpus N minBytes N "
                       f"maxBytes N ... warmup iters: N iters: N', got {clip(s)!r}; "
                       "iteration counts unknown")
        return True
    m = RANK_RE.match(s)
    if m:
        st.ranks[int(m.group(1))] = {"host": m.group(4), "device": int(m.group(5)),
                                     "gpu": m.group(7).strip()}
        return True
    if s.startswith("#") and re.match(r"^#\s*Rank\b", s):
        res.problem(i, f"expected '#  Rank N Group N Pid N on HOST device N [BUS] GPU', "
                       f"got {clip(s)!r}; this rank is not counted in np")
        return True
    return False


def _text_comment(st: _TextScan, s: str, i: int, res: ParseResult) -> None:
    """Another '#' line: the column header, or the footer (average bus bandwidth, out of
    bounds values); anything else is ignored."""
    body = s.lstrip("#").split()
    if "size" in body and "algbw" in body and "busbw" in body:
        st.cols = body
        st.header_line = i
        res.blocks += 1
        unknown = [c for c in body if c not in _COLUMNS]
        if unknown:
            res.problem(i, f"column(s) {', '.join(unknown)} not ones nccl-tests "
                           "prints (damaged header?); their values are not stored")
        return
    m = AVG_BUSBW_RE.match(s)
    if m:
        st.footer = True
        v = as_float(m.group(1))
        if v is not None:
            res.meta["avg_busbw_gbps"] = v
        return
    m = OOB_RE.match(s)
    if m:
        res.meta["out_of_bounds"] = int(m.group(1))
        st.footer = True


def _text_data_line(st: _TextScan, s: str, i: int, res: ParseResult, cut: bool) -> None:
    """A line that is not a comment: a row under the column header (one record per side),
    or why it is not one."""
    tokens = s.split()
    cols = st.cols
    if cols is None:
        if tokens and as_int(tokens[0]) is not None and len(tokens) >= 8:
            res.problem(i, "row before the column header line ('#  size  count  type ...'); "
                           "line skipped")
        return
    if cut:
        res.problem(i, f"last line is incomplete (no newline at the end of the file): "
                       f"{clip(s)!r} not imported")
        return
    recs = _text_row(cols, tokens, st.program, len(st.ranks) or None, i, st.iters)
    if recs is None:
        res.problem(i, f"expected a row of {len(cols)} values ({' '.join(cols)}), got "
                       f"{clip(s)!r}; line skipped")
        return
    res.records.extend(recs)
    st.last_size = recs[0]["size"]
    x = recs[0]["extra"]
    odd = [f"{what} {v!r}" for what, v, known in (("data type", x.get("type"), _TYPES),
                                                 ("reduction", x.get("redop"), _REDOPS))
           if v and v not in known]
    if odd:
        res.problem(i, f"{' and '.join(odd)} not one nccl-tests prints (damaged line?); "
                       "row kept")


def _text_finish(st: _TextScan, res: ParseResult, lines: list[str]) -> None:
    """The whole file read: iterations, ranks and the program's name onto the rows, and
    what the file lacked (settings, header, program, ranks, the footer of a finished run)."""
    op = op_name(st.program)
    res.meta["program"] = st.program
    if st.iters is None and res.records:
        res.problem(None, "no settings line ('# nThread N nGpus N ... iters: N'): iteration "
                          "count unknown")
    if st.iters is not None:
        # the settings line holds for the whole run, wherever it stands in the file
        for r in res.records:
            r["extra"].setdefault("iterations", st.iters)
    ranks = st.ranks
    if ranks:
        res.meta["ranks"] = len(ranks)
        res.meta["hosts"] = sorted({r["host"] for r in ranks.values()})
        res.meta["gpus"] = sorted({r["gpu"] for r in ranks.values()})
    if res.blocks == 0:
        res.problem(None, "no nccl-tests column header ('#  size  count  type  redop  root  "
                          "time  algbw  busbw  #wrong ...'): expected nccl-tests output")
    elif op is None and res.records:
        res.problem(st.header_line, "the file does not name the test program (no '# "
                                    "Collective test starting: <name>' line, printed by "
                                    "nccl-tests 2.13+); rows stored as nccl_unknown")
    if not ranks and res.records:
        res.problem(None, "no '#  Rank N ... device' lines: np unknown")
    if res.records and not st.footer:
        res.truncated = True
        res.truncated_at = st.last_content
        killed = ""
        if st.abort_lines:
            ab = next((n for n in st.abort_lines if re.search(r"[A-Za-z]", lines[n - 1])),
                      st.abort_lines[0])
            killed = f"; line {ab}: {clip(lines[ab - 1])!r}"
        res.problem(st.last_content, "output ends without the '# Avg bus bandwidth' footer: "
                                     f"the run did not finish{killed}; rows up to size "
                                     f"{st.last_size} kept")
    for r in res.records:
        if op:
            r["benchmark"] = r["benchmark"].replace("nccl_?", f"nccl_{op}")
        else:
            r["benchmark"] = r["benchmark"].replace("nccl_?", "nccl_unknown")


def _text_row(cols: list[str], tokens: list[str], program: str | None, np_: int | None,
              lineno: int, iters: int | None) -> list[dict[str, Any]] | None:
    ncols = len(cols)
    if "timestamp" in cols:
        # a trailing "YYYY-mm-dd HH:MM:SS" is two tokens under one header word
        if len(tokens) == ncols + 1:
            tokens = tokens[:-2]
            cols = cols[:-1]
        else:
            return None
        ncols = len(cols)
    if len(tokens) != ncols:
        return None
    try:
        i_size, i_count, i_type = cols.index("size"), cols.index("count"), cols.index("type")
    except ValueError:
        return None
    i_redop = cols.index("redop") if "redop" in cols else None
    i_root = cols.index("root") if "root" in cols else None
    size, count = as_int(tokens[i_size]), as_int(tokens[i_count])
    if size is None or count is None:
        return None
    dtype = tokens[i_type]
    if not re.fullmatch(r"[A-Za-z_]\w*", dtype, re.ASCII):
        return None
    redop = tokens[i_redop] if i_redop is not None else ""
    root = tokens[i_root] if i_root is not None else ""
    # -1 is "no root"; otherwise a rank number (ASCII: re's \d also matches '٣')
    if root and not (root == "-1" or as_int(root) is not None):
        return None
    if redop and not re.fullmatch(r"[A-Za-z_]\w*", redop, re.ASCII):
        return None
    times = [k for k, c in enumerate(cols) if c in ("time", "cputime")]
    if len(times) != 2:
        return None
    out = []
    for side, start in zip(("out-of-place", "in-place"), times, strict=True):
        seg = cols[start:start + 4]
        if seg[1:3] != ["algbw", "busbw"]:
            return None
        t, a, b = (_number(tokens[start + k]) for k in range(3))
        if t is None or a is None or b is None:
            return None
        wrong: float | None = None
        if len(seg) == 4 and seg[3] in ("#wrong", "error"):
            w = tokens[start + 3]
            if w != "N/A":
                wrong = _number(w)
                if wrong is None:
                    return None
        rec = _records("?", size, count, dtype, redop, root, side, t, a, b, wrong, np_,
                       lineno, iters)
        # nccl-tests -I (per-iteration timing) adds i_min i_max i_p99 i_cv% to each side
        k = start + 3
        while k < len(cols) and cols[k] not in ("time", "cputime"):
            name = _PER_ITER_TEXT.get(cols[k])
            if name is not None:
                v = _number(tokens[k])
                if v is None:
                    return None
                rec["extra"][name] = v
            k += 1
        out.append(rec)
    return out


def parse_nccl_json(text: str) -> ParseResult:
    """nccl-tests JSON (version 2). A file cut short (the writer died before closing the
    document) keeps every complete entry of its "results" list."""
    res = ParseResult(format="nccl-json", tool="nccl-tests")
    doc: dict[str, Any] | None = None
    try:
        loaded = json.loads(text)
        doc = loaded if isinstance(loaded, dict) else None
        if doc is None:
            res.problem(1, "expected a JSON object with a 'results' list (nccl-tests -J)")
            return res
    except RecursionError:
        res.problem(1, "JSON nested too deeply; expected nccl-tests JSON output")
        return res
    except ValueError as exc:
        doc = _salvage(text, res, exc)
        if doc is None:
            return res
    program, np_, iters = _json_meta(doc, res)
    op = op_name(program)
    if op is None:
        res.problem(None, "'args' does not name the test program; rows stored as nccl_unknown")
        op = "unknown"
    results = doc.get("results")
    if not isinstance(results, list):
        res.problem(None, "no 'results' list: expected nccl-tests JSON output")
        return res
    res.blocks = 1
    for idx, entry in enumerate(results):
        _json_entry(f"results[{idx}]", entry, op, np_, iters, res)
    _distinguish(res)
    if not res.records:
        res.problem(None, "no usable entries in 'results'")
    if "end_time" not in doc and not res.truncated:
        res.problem(None, "no 'end_time': the run may not have finished")
    return res


def _json_meta(doc: dict[str, Any], res: ParseResult
               ) -> tuple[str | None, int | None, int | None]:
    """What the document says about the run, into res.meta; returns (program, np,
    iterations)."""
    version = doc.get("version")
    if version not in (None, 1, 2):
        res.problem(1, f"nccl-tests JSON version {version!r}; expected 2 (read anyway)")
    res.meta["json_version"] = version
    for k in ("start_time", "end_time"):
        if isinstance(doc.get(k), str):
            res.meta[k] = doc[k]
    if isinstance(doc.get("nccl_version"), int):
        res.meta["nccl_library"] = doc["nccl_version"]
    args = doc.get("args") if isinstance(doc.get("args"), list) else []
    program = args[0] if args and isinstance(args[0], str) else None
    res.meta["program"] = program
    if args:
        res.meta["argv"] = " ".join(str(a) for a in args)
    env = doc.get("env") if isinstance(doc.get("env"), list) else []
    transport = sorted(e for e in env if isinstance(e, str)
                       and re.match(r"(NCCL_|UCX_|FI_|OMPI_MCA_|CUDA_VISIBLE)", e))
    if transport:
        res.meta["env"] = transport
    config = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    devices = config.get("devices") if isinstance(config.get("devices"), list) else []
    np_ = len(devices) or None
    if devices:
        res.meta["ranks"] = len(devices)
        res.meta["hosts"] = sorted({str(d.get("hostname")) for d in devices if isinstance(d, dict)})
        res.meta["gpus"] = sorted({str(d.get("device_info")) for d in devices
                                   if isinstance(d, dict)})
    iters = config.get("iterations") if isinstance(config.get("iterations"), int) else None
    for k in ("nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "warmup_iters",
              "iterations"):
        if isinstance(config.get(k), int):
            res.meta[k] = config[k]
    return program, np_, iters


def _json_entry(where: str, entry: Any, op: str, np_: int | None, iters: int | None,
                res: ParseResult) -> None:
    """One entry of 'results': a record per side (out-of-place, in-place), or why not."""
    if not isinstance(entry, dict):
        res.problem(None, f"{where}: expected an object; skipped")
        return
    size, count = entry.get("size"), entry.get("count")
    if not (isinstance(size, int) and 0 <= size <= (1 << 63) - 1
            and not isinstance(size, bool)):
        res.problem(None, f"{where}: 'size' {size!r} is not a byte count; skipped")
        return
    count = count if isinstance(count, int) and not isinstance(count, bool) else None
    for side, key in (("out-of-place", "out_of_place"), ("in-place", "in_place")):
        m = entry.get(key)
        if m is None:
            continue
        if not isinstance(m, dict):
            res.problem(None, f"{where}.{key}: expected an object; skipped")
            continue
        t = m.get("time", m.get("cpu_time"))
        vals = [t, m.get("alg_bw"), m.get("bus_bw")]
        if not all(_ok_num(v) for v in vals):
            res.problem(None, f"{where}.{key}: time/alg_bw/bus_bw {vals!r} are not finite "
                              "non-negative numbers; skipped")
            continue
        wrong = m.get("nwrong")
        if wrong is not None and not _ok_num(wrong):
            res.problem(None, f"{where}.{key}: nwrong {wrong!r} is not a count; skipped")
            continue
        rec = _records(
            op, size, count, str(entry.get("type", "")), str(entry.get("redop", "")),
            str(entry.get("root", "")).strip(), side, float(t), float(vals[1]),
            float(vals[2]), None if wrong is None else float(wrong), np_, None,
            entry.get("actual_iterations") if isinstance(entry.get("actual_iterations"),
                                                         int) else iters)
        per_iter = entry.get(f"{key}_per_iter")
        if isinstance(per_iter, dict):
            # summaries only: the raw per-iteration times are not imported as samples
            for jk, name in _PER_ITER_JSON.items():
                if _ok_num(per_iter.get(jk)):
                    rec["extra"][name] = float(per_iter[jk])
        res.records.append(rec)


def _ok_num(v: Any) -> bool:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    if isinstance(v, int):
        return 0 <= v <= 1 << 63        # a JSON integer of 400 digits has no float
    return math.isfinite(v) and v >= 0


def _salvage(text: str, res: ParseResult, exc: ValueError) -> dict[str, Any] | None:
    """Keep the complete entries of a JSON document cut off inside its 'results' list."""
    line = getattr(exc, "lineno", None)
    k = text.find('"results"')
    if k < 0 or text.lstrip()[:1] != "{":
        res.problem(line, f"not valid JSON ({exc}); expected nccl-tests JSON output")
        return None
    head = text[:k].rstrip().rstrip(",") + "}"
    try:
        doc = json.loads(head)
    except ValueError:
        res.problem(line, f"not valid JSON ({exc}) and the part before 'results' is not "
                          "complete either; nothing imported")
        return None
    if not isinstance(doc, dict):
        return None
    dec = json.JSONDecoder()
    pos = text.find("[", k)
    if pos < 0:
        res.problem(line, f"not valid JSON ({exc}); 'results' has no list")
        return None
    pos += 1
    items: list[Any] = []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            item, pos = dec.raw_decode(text, pos)
        except ValueError:
            break
        items.append(item)
    doc["results"] = items
    res.truncated = True
    res.truncated_at = text.count("\n", 0, pos) + 1
    res.problem(res.truncated_at, f"JSON ends early ({exc}): kept the {len(items)} complete "
                                  "'results' entries before this point")
    return doc
