"""Bad input never crashes a parser and never turns into silent garbage.

Hypothesis mutates the real fixtures (dropped, duplicated and truncated lines, swapped
columns, garbage bytes, huge and non-finite numbers) and checks that parse_bytes only ever
returns a ParseResult, that every record has consistent types and finite non-negative
numbers, and that every record of a text format comes from a line that really holds its
values (a mutated line that no longer reads as a row gives no record).
"""

from __future__ import annotations

import gzip
import json
import math
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpibench.parsers.base import MAX_INT, ParseResult
from mpibench.parsers.detect import detect, parse_bytes

DATA = Path(__file__).parents[1] / "data"
FIXTURES = sorted(p for d in ("imb", "osu", "nccl", "netpipe") for p in (DATA / d).iterdir()
                  if p.suffix in (".txt", ".out", ".json"))
TEXTS = {p.name: p.read_bytes() for p in FIXTURES}
ROW_COLUMNS = ("benchmark", "size", "np", "status", "metric", "unit", "better", "statistic",
               "n", "mean")


def check_invariants(res: ParseResult, data: bytes) -> None:
    assert isinstance(res, ParseResult)
    for p in res.problems:
        assert isinstance(p.message, str) and p.message
        assert p.line is None or (isinstance(p.line, int) and p.line >= 1)
    lines = data.decode("utf-8", errors="replace").split("\n")
    for r in res.records:
        for k in ROW_COLUMNS:
            assert k in r, (k, r)
        assert isinstance(r["benchmark"], str) and r["benchmark"]
        assert isinstance(r["size"], int) and 0 <= r["size"] <= MAX_INT
        assert r["np"] is None or (isinstance(r["np"], int) and 1 <= r["np"] <= MAX_INT)
        assert r["n"] is None and "samples" not in r
        assert r["metric"] in ("time", "bandwidth") and r["better"] in ("lower", "higher")
        assert isinstance(r["statistic"], str) and isinstance(r["status"], str)
        if r["status"] == "ok" or r["status"] == "validation-failed":
            assert isinstance(r["mean"], float | int)
        for k in ("mean", "bandwidth_mbps", "busbw_mbps", "msg_rate"):
            v = r.get(k)
            assert v is None or (isinstance(v, float | int) and math.isfinite(v) and v >= 0), \
                (k, v)
        json.dumps(r["extra"])                     # storable as extra_json
        for v in r["extra"].values():
            if isinstance(v, float):
                assert math.isfinite(v)
        ln = r["extra"].get("line")
        if ln is None:
            continue
        # the record comes from a line that holds its values
        assert 1 <= ln <= len(lines)
        src = lines[ln - 1]
        assert "\ufffd" not in src and "\x00" not in src
        toks = src.split()
        if not r["extra"].get("sizeless"):
            assert str(r["size"]) in toks, (r, src)
        shown = [r["extra"].get("mbps_printed")] if res.format == "netpipe" else [r["mean"]]
        for v in shown:
            if v is None:
                continue
            nums = []
            for t in toks:
                try:
                    nums.append(float(t))
                except ValueError:
                    pass
            assert any(math.isclose(v, x, rel_tol=1e-12) for x in nums), (v, src)


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_every_fixture_satisfies_the_invariants(name):
    res = parse_bytes(TEXTS[name])
    assert res.records, res.problem_lines(name)
    check_invariants(res, TEXTS[name])


GARBAGE = st.binary(min_size=1, max_size=12)
HUGE = st.sampled_from(["9" * 30, "1" + "0" * 400, "1e400", "inf", "nan", "-1", "-0.5",
                        "18446744073709551616", "9223372036854775808", "1e308", "0x10"])


@st.composite
def mutated(draw):
    name = draw(st.sampled_from(sorted(TEXTS)))
    data = TEXTS[name]
    lines = data.split(b"\n")
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["drop", "dup", "swap", "garbage", "huge", "cut",
                                     "blank"]))
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        if kind == "drop":
            del lines[i]
        elif kind == "dup":
            lines.insert(i, lines[i])
        elif kind == "blank":
            lines.insert(i, b"")
        elif kind == "swap":
            toks = lines[i].split()
            if len(toks) >= 2:
                a = draw(st.integers(0, len(toks) - 1))
                b = draw(st.integers(0, len(toks) - 1))
                toks[a], toks[b] = toks[b], toks[a]
                lines[i] = b"   ".join(toks)
        elif kind == "garbage":
            pos = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:pos] + draw(GARBAGE) + lines[i][pos:]
        elif kind == "huge":
            toks = lines[i].split()
            if toks:
                k = draw(st.integers(0, len(toks) - 1))
                toks[k] = draw(HUGE).encode()
                lines[i] = b"   ".join(toks)
        elif kind == "cut":
            blob = b"\n".join(lines)
            lines = blob[:draw(st.integers(0, len(blob)))].split(b"\n")
    return name, b"\n".join(lines)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_fixtures_never_crash_nor_give_garbage(case):
    name, data = case
    res = parse_bytes(data)
    check_invariants(res, data)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=3000))
def test_random_bytes(data):
    check_invariants(parse_bytes(data), data)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=2000))
def test_random_text(text):
    data = text.encode()
    check_invariants(parse_bytes(data), data)


def test_swapped_size_and_time_columns_give_no_record():
    data = TEXTS["imb2021.11-openmpi4.1.4-np2-pingpong-btl-tcp.txt"].decode()
    bad = data.replace("           32         1000        61.17         0.52",
                       "        61.17         1000           32         0.52")
    res = parse_bytes(bad.encode())
    assert 32 not in [r["size"] for r in res.records] and len(res.records) == 23
    assert any(p.line == 41 for p in res.problems)


def test_swapped_min_max_columns_give_no_record():
    data = TEXTS["imb2021.11-openmpi4.1.4-np2-all.txt"].decode()
    bad = data.replace("         8192         1000        14.72        19.51        17.11",
                       "         8192         1000        19.51        14.72        17.11")
    res = parse_bytes(bad.encode())
    assert not [r for r in res.records if r["benchmark"] == "Allreduce" and r["size"] == 8192]
    assert any("t_min <= t_avg <= t_max" in p.message for p in res.problems)


def test_huge_numbers_are_rejected_not_stored():
    data = TEXTS["osu7.4-openmpi4.1.4-np2-osu_bw.txt"].decode()
    bad = data.replace("65536                8167.06", "99999999999999999999999  8167.06")
    bad = bad.replace("32768                6161.37", "32768  1e400")
    res = parse_bytes(bad.encode())
    assert [r["size"] for r in res.records][-2:] == [8192, 16384]
    assert len(res.problems) == 2


def test_binary_unknown_empty_and_gzip():
    assert parse_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 40).problems[0].message \
        .startswith("binary data")
    res = parse_bytes(b"hello world\nthis is not a benchmark\n")
    assert res.records == [] and "unrecognised format" in res.problems[0].message
    assert "empty file" in parse_bytes(b"").problems[0].message
    gz = gzip.compress(TEXTS["imb2021.11-mpich4.0.2-np2-pingpong.txt"])
    res = parse_bytes(gz)
    assert res.format == "imb" and len(res.records) == 24 and res.meta["compressed"] == "gzip"


def test_detection_uses_content_not_names():
    for name, data in TEXTS.items():
        fmt = detect(data.decode())
        expected = {"imb": "imb", "osu": "osu", "netpipe": "netpipe"}.get(
            re.split(r"[\d.]", name, maxsplit=1)[0])
        if name.endswith(".json"):
            expected = "nccl-json"
        elif name.startswith("nccl"):
            expected = "nccl"
        assert fmt == expected, name


def _key(r):
    return (r["benchmark"], r["size"], r["np"], r["extra"].get("line"))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(TEXTS)), st.floats(0.0, 1.0))
def test_a_file_cut_anywhere_keeps_exactly_its_complete_rows(name, frac):
    """A run killed mid-write: every row kept is the row the full file has at that line,
    with the same values; a row cut mid-number is never stored."""
    data = TEXTS[name]
    full = {_key(r): r for r in parse_bytes(data).records}
    cut = data[:int(len(data) * frac)]
    res = parse_bytes(cut)
    check_invariants(res, cut)
    for r in res.records:
        ref = full.get(_key(r))
        assert ref is not None, (name, len(cut), r)
        for k in ("mean", "bandwidth_mbps", "busbw_mbps", "msg_rate", "status"):
            assert r.get(k) == ref.get(k), (name, len(cut), k, r, ref)
    if res.records and len(cut) < len(data) and not name.endswith(".json"):
        # what it kept is every complete row before the cut (nothing silently dropped)
        complete = cut.count(b"\n")
        expected = {k for k, r in full.items() if k[3] is not None and k[3] <= complete}
        assert {_key(r) for r in res.records} == expected, name


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_importer_on_mutated_files_never_raises_and_exit_code_matches(case):
    from mpibench.importer import import_files
    from mpibench.store import Store
    name, data = case
    with tempfile.TemporaryDirectory(prefix="mpibench-prop-") as tmp:
        p = Path(tmp) / "case.txt"
        p.write_bytes(data)
        with Store(Path(tmp) / "s.db") as store:
            rep = import_files(store, [p], np=3)
            (f,) = rep.files
            stored = store.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
            assert stored == f.rows
            assert (rep.exit_code == 0) == (f.status == "imported") == (stored > 0)
            if f.status != "imported":
                assert f.problems and all(ln.startswith(str(p)) for ln in f.problems)


# -- the fuzzer's oracle (tests/support/fuzz.py, also bench/bench_fuzz.py) --------------------------
# Per parser, hypothesis picks a captured output and 1-4 mutations (hostile numbers such as
# '1e30', '-1', 'nan', '٣', '²'; bytes no number can hold; cuts; garbage lines; dropped,
# duplicated, swapped or moved lines and sections): the parser returns only values its
# input holds, a record from a corrupted line either equals the original's or is warned
# about at that line, and it never raises.
import random as _random  # noqa: E402

from support import fuzz as _fuzz  # noqa: E402

FUZZ_FAMILIES = {
    "imb": [p.name for p in _fuzz.FIXTURES if p.parent.name == "imb"],
    "osu": [p.name for p in _fuzz.FIXTURES if p.parent.name == "osu"],
    "nccl": [p.name for p in _fuzz.FIXTURES if p.parent.name == "nccl"],
    "netpipe": [p.name for p in _fuzz.FIXTURES if p.parent.name == "netpipe"],
    "core_jsonl": [p.name for p in _fuzz.FIXTURES if p.parent.name == "core"],
}


@pytest.mark.parametrize("family", sorted(FUZZ_FAMILIES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_oracle_per_parser(family, data):
    name = data.draw(st.sampled_from(FUZZ_FAMILIES[family]))
    rng = data.draw(st.randoms(use_true_random=False))
    case = _fuzz.mutate(rng, name, _fuzz.fixture_bytes(name))
    found, _, _ = _fuzz.check_parse(case)
    assert not found, [f"{f.kind}: {f.case}: {f.detail}" for f in found[:3]]


def test_fuzz_oracle_seeded_regressions():
    """Cases the fuzzer once found, replayed: unicode digits read as numbers (IMB rows,
    nccl #wrong), 'window size: 1e400' read as 1, a damaged IMB version read as IMB 2,
    a core JSON integer of 400 digits (OverflowError)."""
    for seed in range(40):
        for name in ("imb2021.11-openmpi4.1.4-np2-all.txt", "osu7.4-openmpi4.1.4-np2-osu_mbw_mr.txt",
                     "nccl-tests2.13.10-all_reduce_perf-8gpu.txt", "mpich-np2-stall.jsonl",
                     "netpipe3.7.2-openmpi4.1.4-np2.stdout.txt"):
            case = _fuzz.mutate(_random.Random(seed), name, _fuzz.fixture_bytes(name), 3)
            found, _, _ = _fuzz.check_parse(case)
            assert not found, [f"{f.kind}: {f.case}: {f.detail}" for f in found[:3]]
