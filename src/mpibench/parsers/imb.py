"""Intel MPI Benchmarks text output (IMB-MPI1, IMB-NBC, IMB-RMA, IMB-EXT; 3.x, 4.x, 2018-2021.x).

Columns are read from each table's header line, never by position, so every column set
IMB prints is handled: t[usec] + Mbytes/sec (PingPong, PingPing, Multi- pt2pt), t_min/t_max/
t_avg (+ Mbytes/sec for Sendrecv/Exchange), Mbytes/sec + Msg/sec (Uniband/Biband),
t_ovrl/t_pure/t_CPU/overlap[%] (IMB-NBC), t_pure/t_ovrl (IMB-RMA passive), the leading Group
column of `-multi 1` and the trailing defects column of `-check` builds. Several
`#processes` blocks per benchmark (-npmin) give one np each. Failure rows ("out-of-mem.",
"int-overflow.", "time-out.") become rows with that status and IMB's message as reason.

Which figure a row stores in `mean` (and names in `statistic`):
  t[usec]  -> statistic "mean": average time per repetition (PingPong: half the round trip)
  t_avg    -> statistic "t_avg": per-rank average over repetitions, averaged over ranks;
              t_min/t_max (min/max over ranks) go to extra t_min_us / t_max_us
  t_pure   -> statistic "t_pure": IMB-NBC/RMA time of the communication alone; the overlapped
              time, CPU time and overlap % go to extra
  no time  -> metric "bandwidth" (Uniband, Biband): Mbytes/sec, better "higher"
Mbytes/sec becomes bandwidth_mbps in 10^6 bytes/s: IMB 2018 and later print that already;
older versions (3.x, 4.x, 2017) print 2^20 bytes/s, converted here (printed value kept).
"""

from __future__ import annotations

import math
import re
from typing import Any

from mpibench.parsers.base import (
    ABORT_PATTERNS,
    MAX_INT,
    RULE_LINE,
    ParseResult,
    as_float,
    as_int,
    bandwidth_record,
    clip,
    failure_record,
    flag_out_of_bounds,
    split_lines,
    time_record,
)

TITLE_RE = re.compile(
    r"Intel\s*\(R\)\s*MPI\s+Benchmarks?(?:\s+Suite)?\s+V?(\d[\w.]*(?:\s+Update\s+\d+)?)"
    r"\s*,\s*(\S+)\s+part", re.I)
# what IMB prints as its version: 3.2.4, 4.1, 2017, 2019 Update 6, 2021.11
VERSION_RE = re.compile(r"([0-9]+)(?:\.[0-9]+)*(?:\s+Update\s+[0-9]+)?", re.I)
BENCH_RE = re.compile(r"^#\s*Benchmarking\s+(Multi-)?(\S+)")
# a number ends at a space or punctuation: "#processes = 2²" is not 2 processes
PROCS_RE = re.compile(r"#processes\s*=\s*(\d+)(?![^\s;,)])", re.ASCII)
GROUPS_RE = re.compile(r"\(\s*(\d+)\s+groups?\s+of\s+(\d+)\s+process", re.ASCII)
MODE_RE = re.compile(r"MODE:\s*(NON-AGGREGATE|AGGREGATE)", re.I)
INFO_RE = re.compile(r"^#\s*(Date|Machine|System|Release|Version|MPI Version|"
                     r"MPI Thread Environment)\s*:\s*(.*?)\s*$")
FAIL_RE = re.compile(r"^\s*((?:\d+\s+){1,2})(time-out|out-of-mem|int-overflow)\.?;?\s*(.*?)\s*$",
                     re.ASCII)
FINALIZE = "# All processes entering MPI_Finalize"

PARTS = {"MPI-1": "IMB-MPI1", "MPI-2": "IMB-EXT", "MPI-EXT": "IMB-EXT", "EXT": "IMB-EXT",
         "MPI-NBC": "IMB-NBC", "NBC": "IMB-NBC", "MPI-RMA": "IMB-RMA", "RMA": "IMB-RMA",
         "MPI-IO": "IMB-IO", "IO": "IMB-IO"}

INT_COLS = {"Group", "#bytes", "#repetitions"}
FLOAT_COLS = {"t[usec]", "Mbytes/sec", "Msg/sec", "t_min[usec]", "t_max[usec]",
              "t_avg[usec]", "t_ovrl[usec]", "t_pure[usec]", "t_CPU[usec]", "overlap[%]",
              "defects"}
KNOWN_COLS = INT_COLS | FLOAT_COLS
_INT_PAT = r"(\d+)"
_FLOAT_PAT = r"(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
_EXTRA_NAME = {"t_min[usec]": "t_min_us", "t_max[usec]": "t_max_us", "t_ovrl[usec]": "t_ovrl_us",
               "t_CPU[usec]": "t_cpu_us", "overlap[%]": "overlap_pct", "defects": "defects"}


def mbytes_factor(version: str | None) -> tuple[float, str]:
    """Multiplier from the printed Mbytes/sec to 10^6 bytes/s, and the unit as printed."""
    m = VERSION_RE.fullmatch(version or "")
    if m and int(m.group(1)) < 2018:
        return (1 << 20) / 1e6, "2^20 bytes/s"
    return 1.0, "10^6 bytes/s"


def _is_header(tokens: list[str]) -> bool:
    """IMB prints [Group] [#bytes] #repetitions, then the figures, each column once: a line
    with these columns in another order is a damaged header, and reading rows under it
    would put sizes and counts in the wrong place."""
    if len(tokens) < 2 or not all(t in KNOWN_COLS for t in tokens) \
            or len(set(tokens)) != len(tokens):
        return False
    lead = tokens[:tokens.index("#repetitions") + 1] if "#repetitions" in tokens else []
    return lead in (["#repetitions"], ["#bytes", "#repetitions"],
                    ["Group", "#bytes", "#repetitions"], ["Group", "#repetitions"])


class _Block:
    def __init__(self, name: str, multi: bool, line: int):
        self.name = name
        self.multi = multi
        self.line = line
        self.np: int | None = None
        self.n_groups: int | None = None
        self.mode: str | None = None
        self.cols: list[str] | None = None
        self.row_re: re.Pattern | None = None
        self.plan: _Plan | None = None
        self.header_line = 0
        self.rows = 0
        self.seen: dict[tuple, int] = {}
        self.last_size: int | None = None
        self.done = False            # its table has ended; IMB prints one table per block

    @property
    def benchmark(self) -> str:
        name = ("Multi-" if self.multi else "") + self.name
        return f"{name}:{self.mode}" if self.mode else name

    def describe(self) -> str:
        return f"{self.benchmark} table (#processes = {self.np if self.np else '?'})"


def parse_imb(text: str) -> ParseResult:
    res = ParseResult(format="imb", tool="IMB")
    lines = split_lines(text)
    # A last line without its newline may be cut mid-number: never trust it as a row.
    scan = _Scan(res, lines, bool(lines) and not text.endswith(("\n", "\r")))
    for i, raw in enumerate(lines, 1):
        scan.line(i, raw.rstrip())
    scan.finish()
    res.meta = {k: v for k, v in res.meta.items() if v}
    flag_out_of_bounds(res)
    return res


class _Scan:
    """parse_imb's state between lines, and one method per kind of line: the file header
    (title, info lines, the list of benchmarks), a block's header (# Benchmarking, #processes,
    groups, mode), a line outside a table (its column header, stray numbers), a table's
    line, and how the file ended."""

    def __init__(self, res: ParseResult, lines: list[str], partial_last: bool):
        self.res = res
        self.lines = lines
        self.partial_last = partial_last
        self.titles: list[int] = []
        self.listed: list[str] = []
        self.in_list = False
        self.argv_next = False
        self.block: _Block | None = None
        self.seen_names: list[str] = []
        self.finalized = False
        self.abort_lines: list[int] = []
        self.factor, self.unit_printed = 1.0, "10^6 bytes/s"
        self.last_content = 0

    def end_table(self, blank: bool = False) -> None:
        block = self.block
        if block is not None and block.cols is not None:
            if blank and block.cols[0] == "Group":
                return          # -multi prints an empty line before each size's group rows
            block.done = True
            block.cols = None

    def line(self, i: int, line: str) -> None:
        stripped = line.strip()
        if not stripped:
            self.in_list = self.in_list and not self.listed  # blank lines before the list
            self.end_table(blank=True)                         # entries are fine
            return
        self.last_content = i
        block = self.block
        # Fast path: a row of the current table (most lines of a file).
        if (block is not None and block.cols is not None and stripped[0] != "#"
                and not (self.partial_last and i == len(self.lines))):
            rec = _row(block, stripped, i, self.factor, self.unit_printed, self.res)
            if isinstance(rec, dict):
                _add(block, rec, i, self.res)
                return
        if self.file_header(i, line, stripped):
            return
        if stripped.startswith(FINALIZE):
            self.finalized = True
            self.end_table()
            return
        if self.block_header(i, stripped):
            return
        if self.block is None or self.block.cols is None:
            self.outside_table(i, stripped)
        else:
            self.table_line(i, stripped)

    def file_header(self, i: int, line: str, stripped: str) -> bool:
        """The title, the '# Key : value' lines, the calling sequence and the list of
        benchmarks before the first block; True if the line was one of them."""
        res = self.res
        m = TITLE_RE.search(line) if "Benchmark" in line else None
        if m:
            self.titles.append(i)
            if len(self.titles) == 1:
                res.version = m.group(1).strip()
                part = m.group(2).strip()
                res.tool = PARTS.get(part, "IMB-" + part)
                res.meta["part"] = part
                self.factor, self.unit_printed = mbytes_factor(res.version)
                if not VERSION_RE.fullmatch(res.version):
                    res.problem(i, f"IMB version {res.version!r} is not a version number "
                                   "(such as 2021.11 or 4.1): Mbytes/sec taken as 10^6 "
                                   "bytes/s (IMB 2018+)")
            return True
        if not stripped.startswith("#") or self.block is not None:
            return False
        im = INFO_RE.match(stripped)
        if im:
            res.meta.setdefault(im.group(1).lower().replace(" ", "_"), im.group(2))
            return True
        if "Calling sequence was" in stripped:
            self.argv_next = True
            return True
        if self.argv_next and stripped != "#":
            res.meta.setdefault("argv", stripped.lstrip("#").strip())
            self.argv_next = False
            return True
        if "List of Benchmarks to run" in stripped:
            self.in_list = True
            return True
        if self.in_list:
            lm = re.match(r"^#\s+([A-Za-z][\w-]*)\s*$", stripped)
            if lm:
                self.listed.append(lm.group(1))
                return True
            self.in_list = False
        return False

    def block_header(self, i: int, stripped: str) -> bool:
        """'# Benchmarking NAME' starts a block; its '#processes', groups and mode lines
        before the table. True if the line was one of them."""
        bm = BENCH_RE.match(stripped)
        if bm:
            self.end_table()
            block = self.block
            if block is not None and block.rows == 0 and not block.done:
                self.res.problem(block.line, f"{block.describe()}: no table follows; "
                                             "expected a column header line and rows")
            self.block = _Block(bm.group(2), bool(bm.group(1)), i)
            self.seen_names.append(bm.group(2))
            self.res.blocks += 1
            return True
        block = self.block
        if not stripped.startswith("#") or block is None or block.cols is not None \
                or block.done:
            return False
        pm = PROCS_RE.search(stripped)
        if pm:
            block.np = as_int(pm.group(1)) or None     # 0 ranks is no rank count
            return True
        gm = GROUPS_RE.search(stripped)
        if gm:
            block.n_groups = as_int(gm.group(1)) or None
            block.np = as_int(gm.group(2)) or None
            return True
        mm = MODE_RE.search(stripped)
        if mm:
            block.mode = mm.group(1).lower()
            return True
        return False

    def outside_table(self, i: int, stripped: str) -> None:
        """A table's column header, or a line between tables (comments, a launcher's abort
        banner, numbers or failure notes that belong to no table)."""
        res, block = self.res, self.block
        tokens = stripped.split()
        if _is_header(tokens):
            if block is None or block.done:
                res.problem(i, "column header without a '# Benchmarking <name>' line "
                               "before it; table skipped")
                self.block = None
                return
            block.cols = tokens
            block.plan = None
            # ASCII digits only: int() and float() also read '٣' or '３' as 3
            block.row_re = re.compile(r"^\s*" + r"\s+".join(
                _INT_PAT if c in INT_COLS else _FLOAT_PAT for c in tokens) + r"\s*$",
                re.ASCII)
            block.header_line = i
            if block.np is None:
                res.problem(block.line, f"{block.benchmark}: no '# #processes = N' line; "
                                        "np of these rows is unknown")
            return
        if stripped.startswith("#"):
            return
        if ABORT_PATTERNS.search(stripped):
            self.abort_lines.append(i)
            return
        if tokens and all(as_float(t) is not None for t in tokens):
            res.problem(i, "numbers outside a table: expected a '# Benchmarking' block "
                           "and a column header line before rows; line skipped")
        elif tokens and as_int(tokens[0]) is not None and FAIL_RE.match(stripped):
            res.problem(i, "failure note outside a table; line skipped")

    def table_line(self, i: int, stripped: str) -> None:
        """A line inside a table that the fast path did not take: its end, an abort
        banner, a cut last line, a damaged row or an IMB failure note."""
        res, block = self.res, self.block
        assert block is not None and block.cols is not None
        if stripped.startswith("#") or RULE_LINE.match(stripped):
            self.end_table()
            return
        if ABORT_PATTERNS.search(stripped):
            self.abort_lines.append(i)
            self.end_table()
            return
        if self.partial_last and i == len(self.lines):
            res.problem(i, f"last line is incomplete (no newline at the end of the file): "
                           f"{clip(stripped)!r} not imported")
            return
        rec = _row(block, stripped, i, self.factor, self.unit_printed, res)
        if isinstance(rec, str):
            res.problem(i, f"{block.benchmark} row {clip(stripped)!r}: {rec}; line skipped")
            return
        if rec is None:
            # a failure note with undecodable bytes in it is not trusted either
            fm = FAIL_RE.match(stripped) if "\ufffd" not in stripped else None
            if fm:
                rec = _failure(block, fm, i)
            if rec is None:
                res.problem(i, f"expected a row of {len(block.cols)} numbers "
                               f"({' '.join(block.cols)}) or an IMB failure note, got "
                               f"{clip(stripped)!r}; line skipped")
                return
        _add(block, rec, i, res)

    def finish(self) -> None:
        """How did the file end? A second run, no title, no block, or cut short (where,
        killed by whom, which listed benchmarks never started)."""
        res, block, lines = self.res, self.block, self.lines
        titles = self.titles
        if len(titles) > 1:
            res.problem(titles[1], f"a second IMB run starts here (titles at lines "
                                   f"{', '.join(map(str, titles))}); rows of all runs kept")
        if not titles and res.blocks:
            res.problem(None, "no 'Intel(R) MPI Benchmarks <version>, <part> part' title "
                              "line: version unknown, Mbytes/sec taken as 10^6 bytes/s "
                              "(IMB 2018+)")
        if res.blocks and not self.finalized:
            res.truncated = True
            res.truncated_at = self.last_content
            where = ""
            if block is not None and block.cols is not None:
                where = (f" inside the {block.describe()} after {block.rows} rows"
                         + (f" (last size {block.last_size})"
                            if block.last_size is not None else ""))
            elif block is not None:
                where = f" after the {block.describe()}"
            killed = ""
            if self.abort_lines:
                # the most telling line of a launcher's banner is one with words in it
                ab = next((n for n in self.abort_lines
                           if re.search(r"[A-Za-z]", lines[n - 1])), self.abort_lines[0])
                killed = f"; line {ab} shows the run was killed: {clip(lines[ab - 1])!r}"
            missing = [b for b in self.listed if b not in self.seen_names]
            not_run = f"; never started: {', '.join(missing)}" if missing else ""
            res.problem(self.last_content, f"output ends{where}: expected more rows or "
                                           f"'{FINALIZE}' (run did not finish{killed})"
                                           f"{not_run}; complete rows kept")
        elif res.blocks == 0:
            res.problem(None, "no '# Benchmarking <name>' block: expected IMB result tables")


def _add(block: _Block, rec: dict[str, Any], lineno: int, res: ParseResult) -> None:
    # after the 2^20/10^6 conversion a huge but finite figure can become infinite
    bw = rec.get("bandwidth_mbps")
    if bw is not None and not math.isfinite(bw):
        res.problem(lineno, f"{block.benchmark}: a number too large to store; line skipped")
        return
    key = (rec["size"], rec["extra"].get("group"))
    first = block.seen.get(key)
    if first is not None:
        res.problem(lineno, f"{block.benchmark}: size {rec['size']} already given at line "
                            f"{first} of this table; second row skipped")
        return
    block.seen[key] = lineno
    block.rows += 1
    block.last_size = rec["size"]
    res.records.append(rec)


class _Plan:
    """How the rows of one table become records, worked out once from its column header
    (a full IMB-MPI1 file has ~300 rows and ~20 headers)."""

    def __init__(self, block: _Block, factor: float, unit_printed: str):
        cols = block.cols or []
        self.convert = [(c, int if c in INT_COLS else float) for c in cols]
        self.floats = [c for c in cols if c not in INT_COLS]
        self.has_size = "#bytes" in cols
        self.has_group = "Group" in cols
        self.check_order = "t_avg[usec]" in cols
        pure = "t_pure[usec]" in cols
        self.extra_cols = [(c, name) for c, name in _EXTRA_NAME.items() if c in cols
                           and not (c in ("t_ovrl[usec]", "t_CPU[usec]") and not pure)]
        self.main, self.statistic = next(
            ((c, st) for c, st in (("t_avg[usec]", "t_avg"), ("t_pure[usec]", "t_pure"),
                                   ("t[usec]", "mean"), ("t_ovrl[usec]", "t_ovrl"),
                                   ("Mbytes/sec", "mean")) if c in cols), (None, None))
        self.bandwidth = "Mbytes/sec" in cols
        self.msg_rate = "Msg/sec" in cols
        self.defects = "defects" in cols
        self.factor = factor
        self.unit_printed = unit_printed
        self.const_extra: dict[str, Any] = {}
        if block.n_groups:
            self.const_extra["n_groups"] = block.n_groups
        if block.mode:
            self.const_extra["mode"] = block.mode
        if self.main == "Mbytes/sec":
            self.base = bandwidth_record(block.benchmark, 0, block.np, None)
        else:
            self.base = time_record(block.benchmark, 0, block.np, None, self.statistic or "")
        del self.base["extra"]


def _row(block: _Block, line: str, lineno: int, factor: float, unit_printed: str,
         res: ParseResult) -> dict[str, Any] | str | None:
    """The row's record; None if it is not a row of this table; a reason if its numbers
    cannot be right."""
    m = block.row_re.match(line) if block.row_re is not None else None
    if m is None:
        return None
    plan = block.plan
    if plan is None or plan.factor != factor:
        plan = block.plan = _Plan(block, factor, unit_printed)
    if plan.main is None:
        return None
    vals = {c: conv(t) for (c, conv), t in zip(plan.convert, m.groups(), strict=True)}
    for c in plan.floats:
        if not math.isfinite(vals[c]):
            return None
    size = vals.get("#bytes", 0)
    reps = vals["#repetitions"]
    if size > MAX_INT or reps > MAX_INT or vals.get("Group", 0) > MAX_INT:
        return None
    if reps < 1:
        return "#repetitions must be at least 1"
    # IMB's min <= avg <= max over ranks survives its 2-decimal rounding; a row breaking it
    # has columns out of place, whatever its numbers look like.
    if plan.check_order and not (vals.get("t_min[usec]", 0) <= vals["t_avg[usec]"]
                                 <= vals.get("t_max[usec]", math.inf)):
        return "t_min <= t_avg <= t_max does not hold (columns out of place?)"
    extra: dict[str, Any] = {"repetitions": reps, "line": lineno}
    if not plan.has_size:
        extra["sizeless"] = True
    if plan.has_group:
        extra["group"] = vals["Group"]
    if plan.const_extra:
        extra.update(plan.const_extra)
    for c, name in plan.extra_cols:
        extra[name] = vals[c]
    rec = dict(plan.base)
    rec["size"] = size
    rec["extra"] = extra
    if plan.bandwidth:
        printed = vals["Mbytes/sec"]
        rec["bandwidth_mbps"] = printed * factor
        if factor != 1.0:
            extra["mbytes_per_sec_printed"] = printed
            extra["mbytes_unit_printed"] = unit_printed
    rec["mean"] = rec["bandwidth_mbps"] if plan.main == "Mbytes/sec" else vals[plan.main]
    if plan.msg_rate:
        rec["msg_rate"] = vals["Msg/sec"]
    if plan.defects and vals["defects"] > 0:
        rec["status"] = "validation-failed"
        rec["reason"] = f"IMB -check reported defects = {vals['defects']:g}"
    return rec


def _failure(block: _Block, fm: re.Match, lineno: int) -> dict[str, Any] | None:
    nums = fm.group(1).split()
    want = 2 if block.cols and block.cols[0] == "Group" else 1
    # IMB prints the size even in tables without a #bytes column (Barrier, Ibarrier)
    if len(nums) != want:
        return None
    size = as_int(nums[-1])
    if size is None:
        return None
    status = fm.group(2)
    template = time_record(block.benchmark, size, block.np, None,
                           _statistic_of(block.cols or []), {"line": lineno})
    if "t_avg[usec]" not in (block.cols or []) and "t[usec]" not in (block.cols or []) \
            and "t_pure[usec]" not in (block.cols or []):
        template.update(metric="bandwidth", unit="MB/s", better="higher", statistic="mean")
    if "#bytes" not in (block.cols or []):
        template["extra"]["sizeless"] = True
    if want == 2:
        template["extra"]["group"] = as_int(nums[0])
    if block.n_groups:
        template["extra"]["n_groups"] = block.n_groups
    if block.mode:
        template["extra"]["mode"] = block.mode
    reason = f"{status}. {fm.group(3)}".strip() if fm.group(3) else status
    return failure_record(template, size, status, reason)


def _statistic_of(cols: list[str]) -> str:
    if "t_avg[usec]" in cols:
        return "t_avg"
    if "t_pure[usec]" in cols:
        return "t_pure"
    return "mean"
