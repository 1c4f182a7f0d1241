"""Mutation fuzzing of the parsers and the CLI verbs: the cases and the oracle.

Shared by tests/parsers/test_properties.py and tests/test_cli_fuzz.py (hypothesis drives a
random.Random, short runs in the suite) and bench/bench_fuzz.py (seeded, long runs). Pure
Python; the CLI part never launches anything: mpibench.process.run_command, the one seam every
external command goes through, is replaced by a function that refuses and records the call.

A parser case is a real captured output (tests/data) with a few mutations applied; each
mutated line remembers which original line it came from and whether its content was
corrupted in a way a careful reader could notice (a byte that cannot belong to a number or a
word of the format, a number replaced by a huge, negative, non-finite or non-ASCII one, a
cut mid-line, a line of garbage). The oracle (`check_parse`) then says, per record:

  crash            the parser raised
  invalid          a record with the wrong types, a negative or non-finite number
  invented         a value that does not appear in the line (or document) it came from
  silent           a record from a corrupted line that differs from what the original line
                   gave, without a problem reported at that line
  changed          a record from an untouched line whose values differ from the original
                   file's (the mutation elsewhere changed how it is read) and no problem was
                   reported anywhere

Cases where a mutation cannot be noticed are not generated: a digit flipped into another digit,
two numbers swapped within a row (both still numbers) are checked for invented values only.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import re
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURES = sorted(p for d in ("imb", "osu", "nccl", "netpipe", "core")
                  for p in (DATA / d).iterdir() if p.suffix in (".txt", ".out", ".json", ".jsonl"))

# Replacements for a number: each is unreadable as a number of the formats, or outside the
# physical bounds the parsers flag (docs/import.md "Bad input").
HOSTILE_NUMBERS = ["1e30", "9" * 30, "1e400", "-1", "-0.5", "-7", "nan", "NaN", "inf",
                   "-inf", "Infinity", "\u0663", "\u00b2", "\uff13", "1\u0663", "\u0663.5",
                   "0x10", "1,5", "18446744073709551616", "1e20", "9" * 19 + ".5",
                   "1" + "0" * 400, "\u00bd", "\u2167"]
# Bytes a corruption may put in place of one byte: none can be part of a number or of the
# whitespace between columns, so a row holding one cannot be read as a different valid row.
FLIP_BYTES = (b"!\"$%&'()*/;<=>?@[\\]^_`{|}~xyzqXYZQ\x00\x01\x07\x7f\x80\x9f\xc3\xe2\xff"
              b"\xa0\xd9")
NUM_TOKEN = re.compile(rb"(?<![\w.+-])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")
ASCII_NUM = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$", re.ASCII)
JSON_NUM = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", re.ASCII)


@dataclass
class ParseCase:
    name: str
    lines: list[bytes]                         # mutated file, split on \n
    origin: list[int | None]                   # per line: original line number (1-based)
    corrupt: set[int] = field(default_factory=set)   # 1-based mutated line numbers
    ops: list[str] = field(default_factory=list)
    trailing_newline: bool = True

    @property
    def data(self) -> bytes:
        blob = b"\n".join(self.lines)
        return blob + b"\n" if self.trailing_newline and self.lines else blob

    def describe(self) -> str:
        return f"{self.name} [{', '.join(self.ops)}]"


def _split(data: bytes) -> tuple[list[bytes], bool]:
    trailing = data.endswith(b"\n")
    lines = data.split(b"\n")
    if trailing:
        lines.pop()
    return lines, trailing


def mutate(rng: random.Random, name: str, data: bytes, n_ops: int | None = None) -> ParseCase:
    lines, trailing = _split(data)
    case = ParseCase(name, list(lines), list(range(1, len(lines) + 1)), set(), [], trailing)
    cut = False
    for _ in range(n_ops if n_ops is not None else rng.randint(1, 4)):
        if not case.lines:
            break
        cut = _one_op(rng, case, cut_later=True) or cut
    if cut and case.lines:
        # last, so that the line cut mid-way stays the last line, as in a killed run
        _one_op(rng, case, kind="cut")
    return case


def _shift_corrupt(case: ParseCase, at: int, by: int) -> None:
    """Line numbers >= at (1-based) move by `by`."""
    case.corrupt = {c + by if c >= at else c for c in case.corrupt if not (by < 0 and c == at)}


def _one_op(rng: random.Random, case: ParseCase, kind: str | None = None,
            cut_later: bool = False) -> bool:
    """Apply one mutation; True when it is a cut left for the end (cut_later)."""
    kinds = ["number", "number", "number", "flip", "flip", "unicode", "cut", "dup", "drop",
             "swap_lines", "swap_tokens", "garbage_line", "dup_section", "move_section",
             "tabs", "blank"]
    kind = kind or rng.choice(kinds)
    if kind == "cut" and cut_later:
        return True
    n = len(case.lines)
    i = rng.randrange(n)
    line = case.lines[i]
    if kind == "number":
        toks = list(NUM_TOKEN.finditer(line))
        if not toks:
            return
        m = rng.choice(toks)
        new = rng.choice(HOSTILE_NUMBERS).encode()
        case.lines[i] = line[:m.start()] + new + line[m.end():]
        case.corrupt.add(i + 1)
        case.ops.append(f"number@{i + 1}:{m.group().decode()}->{new.decode()}")
    elif kind == "unicode":
        digits = [k for k, b in enumerate(line) if 48 <= b <= 57]
        if not digits:
            return
        k = rng.choice(digits)
        u = rng.choice(["\u0663", "\uff13", "\u00b2", "\u0969", "\U0001d7d1"]).encode()
        case.lines[i] = line[:k] + u + line[k + 1:]
        case.corrupt.add(i + 1)
        case.ops.append(f"unicode@{i + 1}")
    elif kind == "flip":
        if not line:
            return
        k = rng.randrange(len(line))
        b = FLIP_BYTES[rng.randrange(len(FLIP_BYTES))]
        if line[k] == b:
            return
        case.lines[i] = line[:k] + bytes([b]) + line[k + 1:]
        case.corrupt.add(i + 1)
        case.ops.append(f"flip@{i + 1}:{k}")
    elif kind == "cut":
        blob = case.data
        pos = rng.randrange(len(blob) + 1)
        cut = blob[:pos]
        lines, trailing = _split(cut)
        case.lines, case.trailing_newline = lines, trailing
        case.origin = case.origin[:len(lines)]
        case.corrupt = {c for c in case.corrupt if c <= len(lines)}
        if lines and not trailing:
            case.corrupt.add(len(lines))          # cut mid-line
        case.ops.append(f"cut@{pos}")
    elif kind == "dup":
        case.lines.insert(i, line)
        case.origin.insert(i, case.origin[i])
        was = (i + 1) in case.corrupt
        _shift_corrupt(case, i + 1, 1)
        if was:
            case.corrupt.add(i + 1)
        case.ops.append(f"dup@{i + 1}")
    elif kind == "drop":
        del case.lines[i]
        del case.origin[i]
        _shift_corrupt(case, i + 1, -1)
        case.ops.append(f"drop@{i + 1}")
    elif kind == "blank":
        case.lines.insert(i, b"")
        case.origin.insert(i, None)
        _shift_corrupt(case, i + 1, 1)
        case.ops.append(f"blank@{i + 1}")
    elif kind == "swap_lines":
        if n < 2:
            return
        j = min(i + 1, n - 1) if i < n - 1 else i - 1
        a, b = sorted((i, j))
        case.lines[a], case.lines[b] = case.lines[b], case.lines[a]
        case.origin[a], case.origin[b] = case.origin[b], case.origin[a]
        ca, cb = (a + 1) in case.corrupt, (b + 1) in case.corrupt
        case.corrupt.discard(a + 1)
        case.corrupt.discard(b + 1)
        if ca:
            case.corrupt.add(b + 1)
        if cb:
            case.corrupt.add(a + 1)
        case.ops.append(f"swap_lines@{a + 1}")
    elif kind == "swap_tokens":
        # two columns exchanged: cannot always be noticed, so not marked corrupt; the oracle
        # still requires every stored value to be one the line holds
        toks = line.split()
        if len(toks) < 2 or line.lstrip().startswith(b"#"):
            # a header with two figure columns swapped (IMB t_ovrl/t_CPU, OSU P50/P90) reads
            # as a valid header of another column order: not detectable, not generated
            return
        a, b = rng.randrange(len(toks)), rng.randrange(len(toks))
        toks[a], toks[b] = toks[b], toks[a]
        case.lines[i] = b"   ".join(toks)
        case.origin[i] = None if toks != line.split() else case.origin[i]
        if case.origin[i] is None:
            case.ops.append(f"swap_tokens@{i + 1}")
    elif kind == "garbage_line":
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))).replace(b"\n", b"")
        case.lines.insert(i, junk)
        case.origin.insert(i, None)
        _shift_corrupt(case, i + 1, 1)
        case.corrupt.add(i + 1)
        case.ops.append(f"garbage_line@{i + 1}")
    elif kind in ("dup_section", "move_section"):
        if n < 3:
            return
        a = rng.randrange(n - 1)
        b = min(n, a + rng.randint(2, 40))
        block, borig = case.lines[a:b], case.origin[a:b]
        bcorrupt = {c - a for c in case.corrupt if a < c <= b}     # 1-based inside block
        if kind == "move_section":
            del case.lines[a:b]
            del case.origin[a:b]
            case.corrupt = {c if c <= a else c - (b - a) for c in case.corrupt
                            if not a < c <= b}
        at = rng.randrange(len(case.lines) + 1)
        case.lines[at:at] = block
        case.origin[at:at] = borig
        case.corrupt = {c if c <= at else c + len(block) for c in case.corrupt}
        case.corrupt |= {at + c for c in bcorrupt}
        case.ops.append(f"{kind}@{a + 1}-{b}->{at + 1}")
    elif kind == "tabs":
        if b" " not in line:
            return
        case.lines[i] = re.sub(rb" +", b"\t", line)
        case.ops.append(f"tabs@{i + 1}")
    return False


# -- the oracle ------------------------------------------------------------------------------
_ORIG_CACHE: dict[str, Any] = {}
VALUE_KEYS = ("mean", "bandwidth_mbps", "busbw_mbps", "msg_rate")
STORE_KEYS = ("size", "status", "mean", "bandwidth_mbps", "busbw_mbps", "msg_rate", "median",
              "min", "max")


def fixture_bytes(name: str) -> bytes:
    return next(p for p in FIXTURES if p.name == name).read_bytes()


def is_core(name: str) -> bool:
    return name.endswith(".jsonl")


def parse_any(name: str, data: bytes):
    """(result, records, problems as (line, message)) for either parser family."""
    if is_core(name):
        from mpibench.parsers.core_jsonl import parse_core_jsonl
        out = parse_core_jsonl(data.decode("utf-8", errors="replace"), source="f")
        probs = []
        for p in out.problems:
            m = re.match(r"^f:(\d+):", p)
            probs.append((int(m.group(1)) if m else None, p))
        return out, out.records, probs
    from mpibench.parsers.detect import parse_bytes
    res = parse_bytes(data)
    return res, res.records, [(p.line, p.message) for p in res.problems]


def _original(name: str) -> dict[tuple, dict]:
    if not any(p.name == name for p in FIXTURES):
        return {}
    if name not in _ORIG_CACHE:
        _, records, _ = parse_any(name, fixture_bytes(name))
        _ORIG_CACHE[name] = {_rec_key(r): r for r in records}
    return _ORIG_CACHE[name]


def _rec_key(r: dict, line: int | None = None) -> tuple:
    x = r.get("extra") or {}
    return (line if line is not None else x.get("line", r.get("_line")),
            x.get("placement"), x.get("group"), r.get("benchmark") if line is None else None)


def _comparable(r: dict) -> dict:
    """The figures of a record (words such as a datatype name can change undetectably)."""
    out = {k: r.get(k) for k in STORE_KEYS}
    out["extra"] = {k: v for k, v in (r.get("extra") or {}).items()
                    if k not in ("line", "np_from") and isinstance(v, int | float)}
    return out


def _nums(text: str) -> list[float]:
    out = []
    for t in text.split():
        if ASCII_NUM.match(t):
            try:
                out.append(float(t))
            except ValueError:
                pass
    return out


def _close(v: float, nums: list[float]) -> bool:
    return any(math.isclose(v, x, rel_tol=1e-9, abs_tol=0.0) for x in nums)


@dataclass
class Finding:
    kind: str            # crash | invalid | invented | silent | changed
    case: str
    detail: str


def check_parse(case: ParseCase, call: Callable | None = None) -> tuple[list[Finding], int, int]:
    """Findings for one case; also (records, problems) counts."""
    data = case.data
    try:
        res, records, probs = (call or parse_any)(case.name, data)
    except Exception:  # noqa: BLE001 - a crash is what we count
        return [Finding("crash", case.describe(), traceback.format_exc(limit=-3))], 0, 0
    found: list[Finding] = []
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    warned = {ln for ln, _ in probs if ln is not None}
    any_problem = bool(probs)
    orig = _original(case.name)
    core = is_core(case.name)
    json_nums = None
    for r in records:
        try:
            bad = _invalid(r, core)
        except (OverflowError, TypeError, ValueError) as exc:
            bad = f"unreadable record ({exc})"
        if bad:
            found.append(Finding("invalid", case.describe(), f"{bad}: {_short(r)}"))
            continue
        x = r.get("extra") or {}
        ln = x.get("line")
        if core or ln is None:
            # JSON: every value must be a number of the document
            if json_nums is None:
                json_nums = [float(t) for t in JSON_NUM.findall(text)]
            for k in ("mean", "median") if core else ("mean",):
                v = r.get(k)
                if v is not None and not _close(float(v), json_nums):
                    found.append(Finding("invented", case.describe(),
                                         f"{k}={v!r} not in the document: {_short(r)}"))
            continue
        if not 1 <= ln <= len(lines):
            found.append(Finding("invented", case.describe(), f"line {ln} out of range"))
            continue
        src = lines[ln - 1]
        nums = _nums(src)
        toks = src.split()
        if not x.get("sizeless") and str(r["size"]) not in toks:
            found.append(Finding("invented", case.describe(),
                                 f"size {r['size']} not a token of line {ln} {src[:80]!r}"))
            continue
        shown = _shown_values(r)
        missing = [f"{k}={v!r}" for k, v in shown if v is not None and not _close(v, nums)]
        if missing:
            found.append(Finding("invented", case.describe(),
                                 f"{', '.join(missing)} not in line {ln} {src[:80]!r}"))
            continue
        # from a corrupted line: must equal what the original line gave, or be reported
        origin = case.origin[ln - 1] if ln - 1 < len(case.origin) else None
        ref = orig.get(_rec_key(r, origin)) if origin is not None else None
        if ref is None and origin is not None:
            ref = next((o for k, o in orig.items() if k[0] == origin
                        and k[1] == x.get("placement") and k[2] == x.get("group")), None)
        same = ref is not None and _comparable(ref) == _comparable(r)
        if ln in case.corrupt:
            if not same and ln not in warned:
                found.append(Finding("silent", case.describe(),
                                     f"line {ln} {src[:90]!r} -> {_short(r)} (original: "
                                     f"{_short(ref) if ref else 'no row'}), no warning at "
                                     "that line"))
        elif ref is not None and not same and not any_problem:
            found.append(Finding("changed", case.describe(),
                                 f"line {ln} {src[:90]!r} -> {_short(r)}, original "
                                 f"{_short(ref)}, no warning at all"))
    return found, len(records), len(probs)


def _shown_values(r: dict) -> list[tuple[str, float | None]]:
    """The figures of a record that the tool printed (before any unit conversion)."""
    x = r.get("extra") or {}
    if "mbps_printed" in x:                                  # NetPIPE
        return [("mbps_printed", x["mbps_printed"])]
    if "algbw_gbps" in x:                                    # nccl-tests
        return [("mean", r.get("mean")), ("algbw_gbps", x.get("algbw_gbps")),
                ("busbw_gbps", x.get("busbw_gbps"))]
    if r.get("metric") == "bandwidth" and "mbytes_per_sec_printed" in x:
        return [("mbytes_per_sec_printed", x["mbytes_per_sec_printed"])]
    out = [("mean", r.get("mean"))]
    if r.get("msg_rate") is not None:
        out.append(("msg_rate", r["msg_rate"]))
    for k in ("t_min_us", "t_max_us"):
        if k in x:
            out.append((k, x[k]))
    return out


def _invalid(r: dict, core: bool) -> str | None:
    if not isinstance(r.get("benchmark"), str) or not r["benchmark"]:
        return "benchmark not a non-empty string"
    size = r.get("size")
    if not (isinstance(size, int) and not isinstance(size, bool) and 0 <= size < 1 << 63):
        return f"size {size!r}"
    np_ = r.get("np")
    if np_ is not None and not (isinstance(np_, int) and not isinstance(np_, bool)
                                and 1 <= np_ < 1 << 63):
        return f"np {np_!r}"
    if not isinstance(r.get("status"), str):
        return "status"
    for k in ("mean", "median", "min", "max", "ci_low", "ci_high", "bandwidth_mbps",
              "busbw_mbps", "msg_rate", "first", "std", "p5", "p95", "p99"):
        v = r.get(k)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or v < 0 \
                or (isinstance(v, int) and v >= 1 << 63) or not math.isfinite(v):
            return f"{k}={str(v)[:40]}"
    for k in ("n", "batch", "warmup"):
        v = r.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            return f"{k}={v!r}"
    s = r.get("samples")
    if s is not None and not (isinstance(s, list) and all(
            isinstance(v, float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
            for v in s)):
        return "samples"
    try:
        json.dumps(r.get("extra") or {}, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"extra not storable ({exc})"
    return None


def _short(r: dict | None) -> str:
    if r is None:
        return "None"
    x = r.get("extra") or {}
    return (f"{r.get('benchmark')} size={r.get('size')} np={r.get('np')} "
            f"status={r.get('status')} mean={r.get('mean')} bw={r.get('bandwidth_mbps')} "
            f"busbw={r.get('busbw_mbps')} line={x.get('line')}")


# -- CLI -------------------------------------------------------------------------------------
class LaunchRefused(Exception):
    """What the fuzzer's stand-in for process.run_command raises."""


HOSTILE_INT = ["0", "-1", "nan", "inf", "1e400", "\u0663", "\u00b2", "\uff13", "", " ",
               "1" + "0" * 40, "0x10", "2.5", "\x00", "1_000_000_000_000_000"]
HOSTILE_FLOAT = ["nan", "inf", "-inf", "-1", "0", "1e400", "\u0663", "\u00b2", "", "1e999",
                 "-0", "NaN", "Infinity"]
# Paths that cannot be written: under a regular file of the case directory, under /proc or
# /dev/null, a NUL byte, a name longer than NAME_MAX. Nothing the fuzzer passes may lead
# outside its temporary directory to a path that could be created.
HOSTILE_PATH_OUT = ["FILE/x.out", "/proc/self/status/x", "/dev/null/x", "\x00", "a" * 5000]
HOSTILE_TEXT = ["", "\x00", "a\nb", "\x1b[31mred"]
# Paths to read that are not what was asked for: missing, a directory, a device, not UTF-8,
# another program's SQLite file, not SQLite
HOSTILE_PATH_IN = ["MISSING.db", "DIR", "/dev/zero", "NOTUTF8", "FOREIGN", "NOTDB", "\x00",
                   "a" * 5000]
HOSTILE_SIZES = ["99:2", "0:\u0663", "\u00b2:3", "0 :3", "1e35", "0:" + "9" * 35,
                 ",".join(["1"] * 2000), "-1", "nan", "", "0:64", "1K:1", "abc", "0:3:x"]


def cli_cases(rng: random.Random, n: int) -> list[tuple[str, list[str]]]:
    """(what, argv) pairs, each with exactly one hostile value in an otherwise valid call
    that does not launch anything (dry runs, missing stores)."""
    out = []
    for _ in range(n):
        verb, builder = rng.choice(CLI_BUILDERS)
        argv = builder(rng)
        out.append((verb, argv))
    return out


def _camp(dirpath: str = "CAMP") -> str:
    return f"{dirpath}/c.toml"


def _b_run(rng):
    opt, vals = rng.choice([("--np", HOSTILE_INT), ("--repeats", HOSTILE_INT),
                            ("--sizes", HOSTILE_SIZES), ("--target", HOSTILE_FLOAT),
                            ("--max-time", HOSTILE_FLOAT), ("--iterations", HOSTILE_INT),
                            ("--timeout", HOSTILE_FLOAT), ("--launch-timeout", HOSTILE_FLOAT),
                            ("--mem-limit", HOSTILE_SIZES[:6] + ["-5", "nan"]),
                            ("--iterations-volume", ["-5", "nan", "\u0663", "1e400", ""]),
                            ("--markdown", HOSTILE_PATH_OUT), ("--thread-level",
                                                               ["bogus", "", "\x00"]),
                            ("--baseline", ["bogus"]), ("--env", ["NOEQUALS", "=v", "A B=1",
                                                                  "--x=1", "A\x00=1"])])
    return ["run", "PingPong", opt, rng.choice(vals), "--out", "OUT"]


def _b_demo(rng):
    opt, vals = rng.choice([("--sizes", HOSTILE_SIZES), ("--aa-sizes", HOSTILE_SIZES),
                            ("--max-time", HOSTILE_FLOAT),
                            ("--repeats", HOSTILE_INT), ("--aa-max", HOSTILE_INT + ["2"]),
                            ("--out", ["FILE", "FILE/x", "/dev/null/x", "/proc/self/status/x"])])
    return ["demo", opt, rng.choice(vals)]


def _b_campaign(rng):
    sub = rng.choice(["run", "status", "list", "resume"])
    kind = rng.choice(["file", "db"])
    if kind == "file":
        f = rng.choice(["MISSING.toml", "/dev/zero", "/etc", "\x00", "a" * 5000,
                        "BADTOML", "NOTUTF8"])
        argv = ["campaign", sub, f]
    else:
        argv = ["campaign", sub, "GOOD", "--db", rng.choice(
            ["FILE/x.db", "FOREIGN", "DIR", "\x00", "NOTDB"])]
    if sub == "run":
        argv.append("--dry-run")
    if sub == "run" and kind == "db":
        # a dry run opens no store (a hostile --db is not met); the hostile value is the
        # size list, or a list none of the valid campaign's group sizes (0,8) is in
        argv = ["campaign", sub, "GOOD", "--dry-run", "--only-sizes",
                rng.choice(HOSTILE_SIZES + ["16", "1M"])]
    return argv


def _b_compare(rng):
    opt, vals = rng.choice([("--alpha", HOSTILE_FLOAT + ["1", "2"]),
                            ("--size", ["abc", "-1", "\u0663", "1e400", "nan", ""]),
                            ("--line-rate", ["1e400Gb/s", "nan", "-1Gb/s", "0", "abc", ""]),
                            ("--since", ["yesterday-ish", "", "2024-13-45"]),
                            ("--detect", HOSTILE_FLOAT + ["abc"]),
                            ("--campaign", ["10" * 12 + "0" * 3, "nosuch", "-1"]),
                            ("--label", ["nosuch"]), ("--variant", ["nosuch"]),
                            ("--run", ["nosuch"]), ("--baseline", ["nosuch"]),
                            ("--until", ["2024-02-30", "tomorrow", ""]),
                            ("--grid", ["nosuch"]),
                            ("--cost-per-node-hour", [v for v in HOSTILE_FLOAT
                                                      if v not in ("0", "-0")]),
                            ("--db", ["FILE/x.db", "FOREIGN", "NOTDB", "DIR"]),
                            ("-o", ["FILE/x.md", "/dev/null/x", "DIR"])])
    val = rng.choice(vals)
    argv = ["compare", "--db", "STORE", "--label", "tcp", "--label", "vader", opt, val]
    if opt == "--grid":
        argv.append("np")                       # ROW COL: an unknown row parameter
    if opt == "--db":
        argv = ["compare", opt, argv[-1]]
    return argv


def _b_report(rng):
    opt, vals = rng.choice([("-o", ["FILE/r.html", "/dev/null/x", "DIR"]),
                            ("--markdown", ["FILE/r.md", "DIR"]),
                            ("--label", ["nosuch"]), ("--baseline", ["nosuch"]),
                            ("--db", ["FILE/x.db", "FOREIGN", "NOTDB", "DIR"])])
    argv = ["report", "--db", "STORE", "--label", "tcp", "--label", "vader", opt,
            rng.choice(vals)]
    if opt == "--db":
        argv = ["report", opt, argv[-1], "-o", "r.html"]
    return argv


def _b_import(rng):
    opt, vals = rng.choice([("--np", HOSTILE_INT), ("--label", HOSTILE_TEXT[:2]),
                            ("--line-rate", ["1e400Gb/s", "nan", "-1Gb/s", "0", "abc", "",
                                             "\u0663Gb/s", "1e999", "inf"]),
                            ("FILE", ["/dev/zero", "MISSING", "/etc", "\x00"])])
    if opt == "FILE":
        return ["import", rng.choice(vals), "--db", "NEW.db"]
    return ["import", "GOODFILE", "--db", "NEW.db", opt, rng.choice(vals)]


def _b_profile(rng):
    opt, vals = rng.choice([("--timeout", HOSTILE_FLOAT), ("--top", HOSTILE_INT),
                            ("--out", ["FILE", "FILE/x", "/dev/null/x"]), ("--show", ["nope"])])
    if opt == "--show":
        return ["profile", "--show", "nope", "--db", "NEW.db"]
    return ["profile", "--db", "NEW.db", opt, rng.choice(vals), "--", "true"]


def _b_stacks(rng):
    opt, vals = rng.choice([("--stacks-file", ["MISSING.toml", "/etc", "/dev/zero",
                                               "BADTOML", "NOTUTF8", "\x00"])])
    return ["stacks", opt, rng.choice(vals)]


def _b_build(rng):
    # (a --stack name is checked against the stacks discovery found, which probes compilers:
    # not a path that can stay unit-tier)
    opt, vals = rng.choice([("--stacks-file", ["MISSING.toml", "/etc", "BADTOML",
                                               "NOTUTF8", "\x00", "/dev/zero"])])
    return ["build", opt, rng.choice(vals)]


# `mpibench push`: archive URLs, site names and the local store. Every URL points at
# 127.0.0.1 port 1 (nothing listens there) or is malformed, so no case waits on a network.
HOSTILE_URLS = ["postgresql://u:secret@127.0.0.1:1/x", "postgresql://[::1",
                "postgresql://127.0.0.1:99999/x", "postgresql://127.0.0.1:1/x?sslmode=bogus",
                "postgresql://%zz@127.0.0.1:1/x", "postgres://u\x00@127.0.0.1:1/x",
                "postgresql://127.0.0.1:1/" + "x" * 5000, "mysql://127.0.0.1/x", "",
                "postgresql://u:p@127.0.0.1:1/x?password=q&connect_timeout=-1",
                "postgresql://127.0.0.1:1/x?options=-c%20a%3D\x1b[31m", "postgresql://",
                "postgresql://\u0663\u0663@127.0.0.1:1/x", "postgresql:/127.0.0.1/x"]


def _b_push(rng):
    opt, vals = rng.choice([("URL", HOSTILE_URLS),
                            ("--site", ["", "-x", "a b", "x" * 65, "a;rm -rf", "\x00", "\u00e9",
                                        "a\nb", "\x1b[31mred"]),
                            ("--db-from", ["MISSING.db", "NOTDB", "FOREIGN", "DIR", "/dev/zero",
                                           "\x00", "FILE"])])
    if opt == "URL":
        return ["push", rng.choice(vals), "--db-from", "STORE", "--site", "s"]
    if opt == "--site":
        return ["push", "postgresql://127.0.0.1:1/x", "--db-from", "STORE",
                f"--site={rng.choice(vals)}"]
    return ["push", "postgresql://127.0.0.1:1/x", "--db-from", rng.choice(vals)]


def _b_archive(rng):
    """Read verbs given a hostile archive URL (--db postgresql://...)."""
    verb = rng.choice([["compare"], ["report", "-o", "r.html"], ["campaign", "list"],
                       ["campaign", "status", "CAMP/c.toml"], ["compare", "--site", "x"]])
    return [*verb, "--db", rng.choice([u for u in HOSTILE_URLS if u.startswith("postgres")])]


def _b_check(rng):
    opt, vals = rng.choice([("--margin", HOSTILE_FLOAT + ["101", "-5%", "2%%"]),
                            ("--alpha", HOSTILE_FLOAT),
                            # as compare's --size: a filter (1,1,... selects size 1: valid)
                            ("--size", ["abc", "-1", "\u0663", "1e400", "nan", "", "99:2"]),
                            ("--since", ["yesterday", "2026-13-45", "\x00", ""]),
                            ("--db", HOSTILE_PATH_IN), ("--baseline", ["bogus", ""]),
                            ("--reference", HOSTILE_PATH_IN + ["BADTOML", "FILE", "GOOD"]),
                            ("--write-reference", HOSTILE_PATH_OUT)])
    return ["check", "--db", "STORE", opt, rng.choice(vals)]


def _b_equivalence(rng):
    return ["compare", "--db", "STORE", "--label", "tcp", "--label", "vader",
            "--equivalence", rng.choice(HOSTILE_FLOAT + ["-2%", "200%", "%", "2%%"])]


# A verb (or a new flag with its own grammar) joins here to be fuzzed by the suite's
# property test and bench/bench_fuzz.py ("CLI flags" in tests/support/surfaces.py).
CLI_BUILDERS = [("run", _b_run), ("demo", _b_demo), ("campaign", _b_campaign),
                ("compare", _b_compare), ("report", _b_report), ("import", _b_import),
                ("profile", _b_profile), ("stacks", _b_stacks), ("build", _b_build),
                ("push", _b_push), ("archive", _b_archive), ("check", _b_check),
                ("compare --equivalence", _b_equivalence)]

# a valid campaign (checked by tests/test_cli_fuzz.py), so a hostile flag beside it is what
# the CLI meets, not the file
GOOD_CAMPAIGN = """\
[campaign]
name = "fz"

[defaults]
stack = "openmpi"
np = 2

[variants.a]

[benchmarks.core]
benchmarks = ["PingPong"]
sizes = "0,8"
"""


def _prepare(tmp: Path) -> dict[str, str]:
    """Files the argv placeholders stand for."""
    (tmp / "CAMP").mkdir()
    (tmp / "CAMP" / "c.toml").write_text(GOOD_CAMPAIGN)
    (tmp / "BADTOML").write_text("name = [unclosed\n")
    (tmp / "NOTUTF8").write_bytes(b"name = \"\xff\xfe\"\n")
    (tmp / "NOTDB").write_bytes(b"this is not sqlite\n" * 100)
    import sqlite3
    con = sqlite3.connect(tmp / "FOREIGN")
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    (tmp / "DIR").mkdir()
    (tmp / "FILE").write_text("a regular file\n")
    fx = next(p for p in FIXTURES if p.name.endswith("btl-tcp.txt"))
    (tmp / "GOODFILE").write_bytes(fx.read_bytes())
    # a real store with two imported sets, so compare and report get past opening it
    from mpibench.importer import import_files
    from mpibench.store import Store
    with Store(tmp / "STORE") as store:
        for label, end in (("tcp", "btl-tcp.txt"), ("vader", "btl-vader.txt")):
            import_files(store, [next(p for p in FIXTURES if p.name.endswith(end))],
                         label=label)
    return {"GOOD": str(tmp / "CAMP" / "c.toml"), "GOODFILE": str(tmp / "GOODFILE")}


def _snapshot(tmp: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for p in tmp.rglob("*"):
        try:
            st = p.lstat()
        except OSError:
            continue
        out[str(p.relative_to(tmp))] = (st.st_size, int(st.st_mtime_ns))
    return out


@dataclass
class CliOutcome:
    argv: list[str]
    rc: int | None
    stderr: str
    crash: str | None = None
    launched: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)

    def problems(self, ok_rcs: tuple[int, ...] = (2,)) -> list[str]:
        """Why this outcome breaks 'exit 2, one line, nothing written, nothing launched'
        (ok_rcs: the exit statuses accepted, e.g. 0 too for a dry run of a campaign file
        that is still valid after its mutation)."""
        out = []
        if self.crash:
            out.append("traceback: " + self.crash.strip().splitlines()[-1])
        if self.launched:
            out.append(f"started an external command: {self.launched[0][:120]}")
        if self.rc not in ok_rcs and not self.crash:
            out.append(f"exit {self.rc} (expected {' or '.join(map(str, ok_rcs))})")
        err = [ln for ln in self.stderr.splitlines() if ln.strip()]
        if "Traceback (most recent call last)" in self.stderr:
            out.append("traceback on stderr")
        if self.rc == 2 and not self.crash:
            msg = [ln for ln in err if not ln.startswith(("usage:", " "))]
            if len(msg) != 1 or "error" not in msg[0]:
                out.append(f"expected one error line, got {len(msg)}: {msg[:3]!r}")
        if self.written:
            out.append(f"wrote {self.written[:3]}")
        return out


class CaseTimeout(BaseException):
    """A CLI case ran longer than its alarm."""


@contextlib.contextmanager
def _limits(mem_mb: int, seconds: int):
    """A soft address-space limit (a verb that reads /dev/zero gets MemoryError instead of
    the machine's OOM killer) and an alarm, both restored afterwards."""
    import resource
    import signal
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    # on top of what the process already maps (numpy and friends map a lot of address space)
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    want = mapped + (mem_mb << 20)
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_AS, (want, hard))

    def ring(*_):
        raise CaseTimeout(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def run_cli(argv: list[str], tmp: Path, mem_mb: int = 1024, seconds: int = 30) -> CliOutcome:
    """One invocation in process, cwd = tmp, with run_command refused, memory and time
    bounded."""
    from mpibench import cli, process
    launched: list[str] = []

    def refuse(cmd, *a, **k):
        launched.append(" ".join(map(str, cmd)) if isinstance(cmd, list | tuple) else str(cmd))
        raise LaunchRefused("the fuzzer does not run external commands")

    before = _snapshot(tmp)
    err, out = io.StringIO(), io.StringIO()
    old_cwd = os.getcwd()
    saved = process.run_command
    patched = _patch_run_command(refuse)
    rc: int | None = None
    crash = None
    try:
        os.chdir(tmp)
        with _limits(mem_mb, seconds), contextlib.redirect_stderr(err), \
                contextlib.redirect_stdout(out):
            try:
                rc = cli.main(argv)
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except LaunchRefused:
        crash = None
    except BaseException:  # noqa: BLE001 - a crash is what we count
        crash = traceback.format_exc(limit=-4)
    finally:
        os.chdir(old_cwd)
        for mod, name, orig in patched:
            setattr(mod, name, orig)
        # modules first imported during the call took the stand-in from process: restore too
        for mod in list(sys.modules.values()):
            if getattr(mod, "run_command", None) is refuse:
                mod.run_command = saved
    after = _snapshot(tmp)
    # SQLite's WAL sidecars (<db>-wal, <db>-shm) appear when any connection opens a WAL
    # store, a reader included: not data mpibench wrote
    written = sorted(k for k, v in after.items() if before.get(k) != v
                     and not k.endswith(("-wal", "-shm")))
    return CliOutcome(argv, rc, err.getvalue(), crash, launched, written)


def _patch_run_command(fn) -> list[tuple[Any, str, Any]]:
    """Replace run_command in mpibench.process and in every loaded module that imported it."""
    from mpibench import process
    orig = process.run_command
    patched = [(process, "run_command", orig)]
    process.run_command = fn
    for name, mod in list(sys.modules.items()):
        if name.startswith("mpibench.") and getattr(mod, "run_command", None) is orig:
            patched.append((mod, "run_command", orig))
            mod.run_command = fn
    return patched


# -- campaign files ------------------------------------------------------------------------
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CAMPAIGN_FILES = sorted(p for p in EXAMPLES.glob("*.toml") if "stacks" not in p.name
                        or "[[" in p.read_text())
HOSTILE_STRINGS = ['""', '"\\u0000x"', '"a\\nb"', '"' + "n" * 5000 + '"', '"--split-string"',
                   '"\\u001b[31m"', '" "', '"../../etc/passwd"', '"$(touch /tmp/x)"']


def mutate_campaign(rng: random.Random, path: Path) -> bytes:
    """A campaign file with 1-3 values made hostile (numbers huge, negative, nan, non-ASCII;
    strings empty, with NUL or newline escapes, 5000 long, option-like) or lines dropped or
    duplicated."""
    lines = path.read_bytes().split(b"\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        line = lines[i]
        kind = rng.choice(["number", "string", "drop", "dup", "flip"])
        if kind == "number":
            toks = list(NUM_TOKEN.finditer(line))
            if toks:
                m = rng.choice(toks)
                new = rng.choice(HOSTILE_NUMBERS + ["1e308", "0", "-0", "inf", "nan"])
                lines[i] = line[:m.start()] + new.encode() + line[m.end():]
        elif kind == "string":
            strs = list(re.finditer(rb'"[^"\n]*"', line))
            if strs:
                m = rng.choice(strs)
                lines[i] = line[:m.start()] + rng.choice(HOSTILE_STRINGS).encode() \
                    + line[m.end():]
        elif kind == "drop":
            del lines[i]
        elif kind == "dup":
            lines.insert(i, line)
        elif kind == "flip" and line:
            k = rng.randrange(len(line))
            lines[i] = line[:k] + bytes([FLIP_BYTES[rng.randrange(len(FLIP_BYTES))]]) \
                + line[k + 1:]
    return b"\n".join(lines)


def run_campaign_case(data: bytes, name: str = "c.toml") -> CliOutcome:
    """`campaign run FILE --dry-run` on a (mutated) campaign file copied into a fresh
    directory with the example's inputs beside it: valid (exit 0) or refused (exit 2, one
    line), never a traceback, nothing written, nothing started."""
    td, tmp, _ = cli_workdir()
    with td:
        for sub in ("gromacs", "studies"):
            if (EXAMPLES / sub).is_dir():
                import shutil
                shutil.copytree(EXAMPLES / sub, tmp / sub)
        f = tmp / name
        f.write_bytes(data)
        return run_cli(["campaign", "run", str(f), "--dry-run"], tmp)


# -- reports on hostile data ----------------------------------------------------------------
def run_report_case(rng: random.Random) -> list[tuple[list[str], CliOutcome]]:
    """Two mutated outputs of one tool imported as sets a and b, then compare (terminal,
    gain table, JSON, CSV) and report on them: whatever the files held, the verbs end with
    a status (0, 1, or 2 with one line) and no traceback. (An import of a file with nothing
    usable lists every problem, one per line, and exits 2: only tracebacks count there.)"""
    td, tmp, _ = cli_workdir()
    out = []
    with td:
        fam = rng.choice(["imb", "osu", "nccl", "netpipe"])
        names = [p.name for p in FIXTURES if p.parent.name == fam]
        for label in ("a", "b"):
            name = rng.choice(names)
            case = mutate(random.Random(rng.getrandbits(64)), name, fixture_bytes(name))
            (tmp / f"{label}.txt").write_bytes(case.data)
            argv = ["import", str(tmp / f"{label}.txt"), "--label", label, "--db", "s.db",
                    "--np", "2"]
            out.append((argv, run_cli(argv, tmp)))
        for argv in (["compare", "--db", "s.db", "--label", "a", "--label", "b"],
                     ["compare", "--db", "s.db", "--label", "a", "--label", "b",
                      "--gain-table", "--format", "json"],
                     ["compare", "--db", "s.db", "--label", "a", "--label", "b",
                      "--line-rate", "100Gb/s", "--format", "csv"],
                     ["report", "--db", "s.db", "--label", "a", "--label", "b", "-o", "r.html",
                      "--no-plots"]):
            before = _snapshot(tmp)
            o = run_cli(argv, tmp)
            o.written = [w for w in o.written if w not in before and not w.startswith("r.html")
                         and not w.startswith("s.db") and not w.startswith(".r.html")]
            out.append((argv, o))
    return out


def substitute(argv: list[str], names: dict[str, str]) -> list[str]:
    return [names.get(a, a) for a in argv]


def cli_workdir() -> tuple[tempfile.TemporaryDirectory, Path, dict[str, str]]:
    td = tempfile.TemporaryDirectory(prefix="mpibench-fuzz-")
    tmp = Path(td.name)
    return td, tmp, _prepare(tmp)


# -- damaged stores on every read verb -------------------------------------------------------
# Every verb that reads a store, with the store's path as S. A byte-flipped store is refused
# in one line (exit 2) or, where the damage is in no value read, answered (exit 0/1); never a
# traceback. The report's own output file is what it is asked to write.
STORE_READ_VERBS: list[list[str]] = [
    ["compare", "--db", "S"],
    ["compare", "--db", "S", "--label", "tcp", "--label", "vader", "--format", "json"],
    ["compare", "--db", "S", "--label", "tcp", "--label", "vader", "--format", "csv"],
    ["compare", "--db", "S", "--label", "tcp", "--label", "vader", "--gain-table"],
    ["report", "--db", "S", "-o", "r.html"],
    ["campaign", "list", "--db", "S"],
    ["campaign", "list", "--db", "S", "--json"],
    ["campaign", "status", "CAMPFILE", "--db", "S", "--json"],
    ["campaign", "list", "CAMPFILE", "--db", "S"],
]
STORE_API_CALLS = ["load_results", "load_samples", "compare_frame"]
_CLEAN_STORE: dict[str, bytes] = {}
# the campaign the clean store holds, as a file (campaign status / list FILE read it)
STORE_CAMPAIGN = """
[campaign]
name = "fz"
repeats = 2
verify_transport = false
[variants.a]
stack = "openmpi"
np = 1
[benchmarks.app]
command = "sh -c 'echo rate 1'"
fom = { name = "r", regex = 'rate ([0-9.]+)', unit = "u", better = "higher" }
"""


def clean_store_bytes() -> bytes:
    """A real store (built once per process): two imported sets (IMB PingPong over tcp and
    vader) and a campaign's runs with results, through the same code the verbs use."""
    if "s" not in _CLEAN_STORE:
        from mpibench.campaign.plan import expand
        from mpibench.campaign.spec import load
        from mpibench.importer import import_files
        from mpibench.store import Store
        with tempfile.TemporaryDirectory(prefix="mpibench-fuzz-store-") as td:
            db = Path(td) / "s.db"
            camp = _store_campaign_file()
            with Store(db) as store:
                for label, end in (("tcp", "btl-tcp.txt"), ("vader", "btl-vader.txt")):
                    import_files(store, [next(p for p in FIXTURES if p.name.endswith(end))],
                                 label=label)
                spec = load(camp)
                cid = store.add_campaign(spec.name, spec.to_dict(), file=str(camp))
                for c in expand(spec, seed=0):
                    store.create_run(c.id, cid, c.variant.name, grp=c.group.name,
                                     params=c.params, repeat=c.repeat)
                    store.set_run(c.id, "done", started=1.0, finished=2.0, elapsed=1.0)
                    store.add_results(c.id, [{
                        "benchmark": "app", "size": None, "np": 1, "metric": "r", "unit": "u",
                        "better": "higher", "statistic": "value", "n": 1,
                        "median": 1.0 + c.repeat, "samples": [1.0 + c.repeat]}])
            _CLEAN_STORE["s"] = db.read_bytes()
    return _CLEAN_STORE["s"]


def _store_campaign_file() -> Path:
    """The campaign file the clean store names (one fixed path: find_campaign matches the
    store's campaign by name and file)."""
    from mpibench.files import write_file

    p = Path(tempfile.gettempdir()) / "mpibench-fuzz-store-campaign" / "fz.toml"
    p.parent.mkdir(exist_ok=True)
    if not p.exists() or p.read_text() != STORE_CAMPAIGN:
        # several pytest-xdist workers (and bench_fuzz.py) share this path: a plain write_text
        # truncates first, so another process could read it empty; write_file renames
        write_file(p, STORE_CAMPAIGN)
    return p


def flip_store(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """1-4 bytes of a store changed (anywhere past SQLite's 100-byte header, which opening
    checks; sometimes inside it), or the file cut short."""
    b = bytearray(data)
    kind = rng.choice(["flip"] * 4 + ["header", "truncate"] + ["text"] * 3 + ["json"] * 2
                      + ["real"] * 2)
    if kind in ("text", "json", "real"):
        # inside a stored value: text turned into bad UTF-8 or a broken JSON document, or a
        # float's exponent bytes (an IEEE double's top bytes: huge, inf or nan)
        if kind == "real":
            spots = [m.start() + 7 for m in re.finditer(rb"[\x3f\x40\x41\xbf\xc0]", data)]
        else:
            pat = rb'\{"[^\x00]{3,}' if kind == "json" else rb"[ -~]{6,}"
            spots = [m.start() + rng.randrange(len(m.group())) for m in re.finditer(pat, data)
                     if m.start() > 100]
        if spots:
            where = [rng.choice(spots) for _ in range(rng.randint(1, 2))]
            for k in where:
                k = min(k, len(b) - 1)
                b[k] = rng.choice([0xff, 0x80, 0x7f, 0x22, 0x7b, 0x00]) if kind != "real" \
                    else rng.choice([0x7f, 0xff, 0x7e])
            return bytes(b), f"{kind} value at bytes {where}"
        kind = "flip"
    if kind == "truncate":
        k = rng.randrange(100, len(b))
        return bytes(b[:k]), f"cut at byte {k}"
    where = []
    for _ in range(rng.randint(1, 4)):
        k = rng.randrange(16, 100) if kind == "header" else rng.randrange(100, len(b))
        b[k] ^= 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)
        where.append(k)
    return bytes(b), f"{kind} at bytes {where}"


def run_store_case(rng: random.Random) -> list[tuple[list[str], CliOutcome, str]]:
    """One damaged copy of the clean store through every read verb and the Python API."""
    data, how = flip_store(rng, clean_store_bytes())
    out = []
    with tempfile.TemporaryDirectory(prefix="mpibench-fuzz-dmg-") as td:
        tmp = Path(td)
        camp = str(_store_campaign_file())
        for argv in STORE_READ_VERBS:
            (tmp / "s.db").write_bytes(data)
            for side in ("s.db-wal", "s.db-shm", "r.html"):
                (tmp / side).unlink(missing_ok=True)
            real = [{"S": "s.db", "CAMPFILE": camp}.get(a, a) for a in argv]
            o = run_cli(real, tmp)
            o.written = [w for w in o.written if w not in ("r.html", "s.db")]
            out.append((argv, o, how))
        for call in STORE_API_CALLS:
            (tmp / "s.db").write_bytes(data)
            out.append((["api", call], _api_call(call, tmp / "s.db"), how))
    return out


def _api_call(call: str, db: Path) -> CliOutcome:
    """mpibench.api on a damaged store: a UsageError (one line) is its refusal."""
    from mpibench import api
    from mpibench.errors import UsageError
    try:
        getattr(api, call)(db)
        return CliOutcome(["api", call], 0, "")
    except UsageError as exc:
        msg = str(exc)
        return CliOutcome(["api", call], 2, f"mpibench: error: {msg}\n" if "\n" not in msg
                          else msg)
    except BaseException:  # noqa: BLE001 - a crash is what we count
        return CliOutcome(["api", call], None, "", traceback.format_exc(limit=-4))
