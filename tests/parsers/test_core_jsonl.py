"""parsers/core_jsonl.py against real mpibench-core output captured on this machine
(tests/data/core/), and the schema and docs/core-output.md against the fields it really writes.

Captured with the core built by each stack's wrapper (see the header's argv in each file):
  mpich-np2-ok.jsonl                     adaptive run, pt2pt, streaming and collectives
  openmpi-np2-corrupt-unsupported.jsonl  --debug-corrupt 1K, --mem-limit 1M, 3G on MPI-3.1
  mpich-np2-stall.jsonl                  --debug-stall 1K --timeout 2 (watchdog)
  openmpi-np3-rootshift-offcache.jsonl   --root-shift --off-cache --iterations 8, np=3
  openmpi-np2-autocorr.jsonl             adaptive, with lag1_autocorr / autocorr_time / n_eff
  ttd/openmpi-np2-pingpong.jsonl         a time-to-decision campaign's launch (PingPong 0:22,
                                         its argv; in a folder of its own so that the fuzz's
                                         fixtures stay those above)
"""

from __future__ import annotations

import json
import math
import pickle
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.parsers import core_jsonl
from mpibench.parsers.core_jsonl import parse_core_jsonl
from support import fuzz
from support.coreutil import SCHEMA, check_schema

DATA = Path(__file__).parents[1] / "data" / "core"
DOC = Path(__file__).resolve().parents[2] / "docs" / "core-output.md"
FILES = sorted(p.name for p in DATA.glob("*.jsonl"))


def _text(name: str) -> str:
    return (DATA / name).read_text()


def _records(name: str) -> list[dict]:
    return [json.loads(ln) for ln in _text(name).splitlines() if ln.strip()]


@pytest.mark.parametrize("name", FILES)
def test_captured_output_matches_the_schema(name):
    check_schema(_records(name))


def test_ok_run_rows():
    out = parse_core_jsonl(_text("mpich-np2-ok.jsonl"), source="ok.jsonl")
    assert out.problems == []
    assert out.header["mpi_library_version"].startswith("MPICH Version: 4.")
    assert out.footer["status"] == "ok"
    assert [(r["benchmark"], r["size"]) for r in out.records] == [
        ("PingPong", 0), ("PingPong", 1024), ("Uniband", 0), ("Uniband", 1024),
        ("Allreduce", 0), ("Allreduce", 1024), ("Alltoallv", 0), ("Alltoallv", 1024),
        ("Barrier", 0)]
    raw = {(r["benchmark"], r["size"]): r for r in _records("mpich-np2-ok.jsonl")
           if r["record"] == "result"}
    for row in out.records:
        rec = raw[(row["benchmark"], row["size"])]
        assert row["status"] == "ok" and row["metric"] == "time" and row["unit"] == "us"
        assert row["better"] == "lower" and row["statistic"] == "median"
        assert row["median"] == rec["median_us"] and row["first"] == rec["first_us"]
        assert row["ci_low"] <= row["median"] <= row["ci_high"]
        assert row["samples"] == rec["samples_us"] and len(row["samples"]) == row["n"]
        assert row["stop_reason"] == rec["stop_reason"]
        # everything the store has no column for is kept, not dropped
        assert row["extra"]["validation"] == {"checked": True, "ok": True}
        assert row["extra"]["busbw_factor"] == rec["busbw_factor"]
        assert "samples_us" not in row["extra"] and "median_us" not in row["extra"]
    pp = next(r for r in out.records if (r["benchmark"], r["size"]) == ("PingPong", 1024))
    assert pp["bandwidth_mbps"] == pytest.approx(1024 / pp["median"])


def test_autocorrelation_fields_reach_their_store_columns(tmp_path):
    """lag1_autocorr -> results.lag1 and n_eff -> results.n_eff (store migration 3), the CI
    stays in ci_low/ci_high; autocorr_time and ci_method are kept in extra."""
    from mpibench.store import Store

    recs = [r for r in _records("openmpi-np2-autocorr.jsonl") if r["record"] == "result"]
    rows = parse_core_jsonl(_text("openmpi-np2-autocorr.jsonl")).records
    assert len(rows) == len(recs) == 6
    for rec, row in zip(recs, rows, strict=True):
        assert row["lag1"] == rec["lag1_autocorr"] and row["n_eff"] == rec["n_eff"]
        assert 1 <= row["n_eff"] <= row["n"]
        assert row["extra"]["autocorr_time"] == rec["autocorr_time"] >= 1
        assert row["extra"]["ci_method"] == "order_statistics_n_eff"
        assert "lag1_autocorr" not in row["extra"]
    store = Store(tmp_path / "s.db")
    store.create_run("r1", store.add_campaign("c"), "openmpi")
    store.add_results("r1", rows)
    got = list(store.results(["r1"], with_samples=False))
    assert [(g["lag1"], g["n_eff"]) for g in got] == [(r["lag1"], r["n_eff"]) for r in rows]


def test_failures_are_rows_with_reasons():
    out = parse_core_jsonl(_text("openmpi-np2-corrupt-unsupported.jsonl"))
    assert out.problems == [] and out.footer["status"] == "failed"
    st = {(r["benchmark"], r["size"]): r for r in out.records}
    bad = st[("PingPong", 1024)]
    assert bad["status"] == "validation_failed" and bad["median"] is None
    assert bad["extra"]["validation"]["ok"] is False and bad["extra"]["validation"]["index"] == 0
    assert bad["reason"].startswith("rank 1: element 0 (byte)")
    assert st[("PingPong", 2 << 20)]["status"] == "skipped"
    assert "--mem-limit" in st[("PingPong", 2 << 20)]["reason"]
    un = st[("PingPong", 3 << 30)]
    assert un["status"] == "unsupported" and un["samples"] == []
    assert un["reason"].startswith("not supported by this stack") and "MPI-3.1" in un["reason"]
    assert st[("Allreduce", 3 << 30)]["status"] == "skipped"  # int float count, memory says no
    assert st[("Allgatherv", 3 << 30)]["status"] == "unsupported"  # displacements overflow


def test_watchdog_timeout_run():
    out = parse_core_jsonl(_text("mpich-np2-stall.jsonl"))
    assert out.problems == [] and out.footer["status"] == "timeout"
    assert [r["status"] for r in out.records] == ["ok", "timeout"]
    assert "--timeout 2 s" in out.records[1]["reason"]


def test_truncated_output_keeps_complete_records():
    """A job killed mid-write: every whole line is kept, the torn one and the missing footer
    are reported."""
    text = _text("mpich-np2-ok.jsonl")
    lines = text.splitlines(keepends=True)
    torn = "".join(lines[:4]) + lines[4][: len(lines[4]) // 2]
    out = parse_core_jsonl(torn, source="run/core.jsonl")
    assert len(out.records) == 3 and out.footer is None
    assert any("run/core.jsonl:5: last line is not a complete JSON record" in p
               for p in out.problems)
    assert any("no footer record" in p for p in out.problems)


def test_newer_schema_and_unknown_records_are_reported():
    lines = _text("openmpi-np3-rootshift-offcache.jsonl").splitlines()
    head = json.loads(lines[0])
    head["schema_version"] = 2
    out = parse_core_jsonl("\n".join([json.dumps(head), *lines[1:], '{"record": "mystery"}']))
    assert any("schema_version 2, expected 1" in p for p in out.problems)
    assert any("unknown record type 'mystery'" in p for p in out.problems)
    assert len(out.records) == 6


def test_every_written_key_is_in_the_schema_and_documented():
    """The docs are the user's reference: a key the core writes but the schema or
    docs/core-output.md does not name fails here."""
    doc = re.sub(r"```.*?```", "", DOC.read_text(), flags=re.S)  # fenced blocks: not spans
    documented = {w for span in re.findall(r"`([^`]+)`", doc)
                  for w in re.findall(r"[a-z_0-9]+", span)}
    by_kind = {s["properties"]["record"]["const"]: s for s in SCHEMA["oneOf"]}
    seen: set[tuple[str, str]] = set()
    for name in FILES:
        for rec in _records(name):
            schema = by_kind[rec["record"]]
            for key, val in rec.items():
                seen.add((rec["record"], key))
                assert key in schema["properties"], (name, rec["record"], key)
                assert key in documented, f"{key!r} ({rec['record']}) not in {DOC.name}"
                sub = schema["properties"][key].get("properties")
                if isinstance(val, dict) and sub:
                    for k2 in val:
                        assert k2 in sub, (name, key, k2)
                        assert k2 in documented, f"{key}.{k2} not in {DOC.name}"
    # and the captures exercise the result keys the docs promise
    assert {("result", k) for k in ("large_count", "buffer_copies", "late_samples",
                                    "rebatched", "elapsed_s")} <= seen


# -- the parse's fast field check gives the rows json.dumps's rule gives (stop 40) -------------
TTD = "ttd/openmpi-np2-pingpong.jsonl"


def _same(a, b) -> bool:
    """Equal in every field, bit for bit: repr tells 1 from 1.0 and True from 1 and prints a
    float's shortest round-trip form; pickle holds each float's 8 bytes and every type."""
    return repr(a) == repr(b) and pickle.dumps(a) == pickle.dumps(b)


def _both(text: str, monkeypatch) -> tuple:
    """parse_core_jsonl as it is, and with the field check json.dumps's own (the parse before
    the fast check: bench/bench_campaign_overhead.py times the two)."""
    fast = parse_core_jsonl(text, source="f")
    with monkeypatch.context() as m:
        m.setattr(core_jsonl, "_storable", core_jsonl._storable_json)
        return fast, parse_core_jsonl(text, source="f")


def test_the_campaign_shaped_capture_matches_the_schema():
    check_schema(_records(TTD))
    assert len(parse_core_jsonl(_text(TTD)).records) == 24     # 0, 1, 2, 4 ... 4 MiB


@pytest.mark.parametrize("name", [*FILES, TTD])
def test_fast_field_check_parses_captured_outputs_identically(name, monkeypatch):
    fast, rule = _both(_text(name), monkeypatch)
    assert fast.records and _same(fast, rule)


def test_fast_field_check_parses_damaged_outputs_identically(monkeypatch):
    """The captures damaged as the fuzz damages them (numbers made NaN, 1e400, -1 or huge,
    lines cut, swapped, doubled): 40 seeded cases a file, the same rows and problems."""
    dropped = 0
    for name in FILES:
        for seed in range(40):
            case = fuzz.mutate(random.Random(seed), name, (DATA / name).read_bytes())
            fast, rule = _both(case.data.decode("utf-8", errors="replace"), monkeypatch)
            assert _same(fast, rule), case.describe()
            dropped += sum("not plain JSON values" in p for p in fast.problems)
    assert dropped            # some cases reach the fields the check refuses


_KEYS = st.one_of(st.text(max_size=3), st.integers(), st.floats(), st.none(), st.booleans())
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=2**63),
                     st.floats(), st.sampled_from([math.nan, math.inf, -math.inf]),
                     st.text(max_size=5))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4),
    st.tuples(inner), st.dictionaries(st.text(max_size=3), inner, max_size=4)), max_leaves=8)


@settings(max_examples=60)
@given(_VALUES)
def test_fast_field_check_answers_as_json_dumps(v):
    assert core_jsonl._storable(v) is core_jsonl._storable_json(v)


class _Str(str):
    pass


class _Float(float):
    pass


@pytest.mark.parametrize("v", [
    float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e308, 2**64 - 1, 2**64, -2**64,
    10**5000, True, None, "", _Str("x"), _Float("nan"), _Float(1.0), (1, float("nan")),
    [1, {"a": float("inf")}], {"a": {"b": float("nan")}}, {"a": {"b": [float("nan")]}},
    {1: 2.0}, {float("nan"): 1}, {(1,): 2}, {"a": object()}, [object(), float("nan")],
    [float("nan"), object()], [[[float("inf")]]], {"a": [1.5, -2]}, bytearray(b"x")],
    ids=lambda v: type(v).__name__)
def test_fast_field_check_answers_as_json_dumps_at_the_edges(v):
    """Ints past 20 digits (json refuses past 4300), subclasses, tuples, other keys, deeper
    nesting and objects json cannot encode go to json.dumps itself."""
    assert core_jsonl._storable(v) is core_jsonl._storable_json(v)


def test_fast_field_check_raises_as_json_dumps_on_a_circular_or_deep_value():
    loop: list = [1.0]
    loop.append(loop)
    assert core_jsonl._storable(loop) is core_jsonl._storable_json(loop) is False
    deep: list = [float("nan")]
    for _ in range(100_000):
        deep = [deep]
    for check in (core_jsonl._storable, core_jsonl._storable_json):
        with pytest.raises(RecursionError):
            check({"a": [deep, float("nan")]})
