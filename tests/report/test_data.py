"""report/data.py: what the report's stop column says about a launch's stationarity check."""

from __future__ import annotations

import json
from pathlib import Path

from mpibench.report.data import _stop_with_stationarity


def _row(stop: str, stationarity: str | None) -> dict:
    extra = {"stationarity": stationarity} if stationarity else {}
    return {"stop_reason": stop, "extra_json": json.dumps(extra)}


def test_stop_column_names_a_moved_or_unsettled_series():
    """The core's CI is approximate when its series moved or the check had not settled when
    the budget ended: the stop column says which; 'ok' and 'untested' add nothing."""
    assert _stop_with_stationarity(_row("max_time", "drift")) == "max_time, drift"
    assert _stop_with_stationarity(_row("max_time", "level_shift")) == "max_time, level shift"
    assert _stop_with_stationarity(_row("max_samples", "unsettled")) == "max_samples, unsettled"
    # the core stopped on the check itself: said once
    assert _stop_with_stationarity(_row("unsettled", "unsettled")) == "unsettled"
    assert _stop_with_stationarity(_row("target", "ok")) == "target"
    assert _stop_with_stationarity(_row("max_time", "untested")) == "max_time"
    assert _stop_with_stationarity(_row("max_time", None)) == "max_time"


def _captured_approximate_rows(stationarity: str | None = None) -> list[dict]:
    """The result records of a real core run under --accept-approximate (the fake-clock
    golden, tests/golden/core-fakeclock-mpich.json, captured from mpibench-core), parsed as
    a launch's are and given the extra_json the store keeps; `stationarity` replaces the
    check's finding in the record, as a launch whose series moved would write it."""
    from mpibench.parsers.core_jsonl import parse_core_jsonl

    golden = Path(__file__).parents[1] / "golden" / "core-fakeclock-mpich.json"
    records = json.loads(golden.read_text())["approximate"]
    if stationarity:
        records = [{**r, "stationarity": stationarity} if r.get("record") == "result" else r
                   for r in records]
    parsed = parse_core_jsonl("\n".join(json.dumps(r) for r in records))
    # the golden keeps the header and results, not the footer (its times vary)
    assert all("no footer record" in p for p in parsed.problems), parsed.problems
    return [{"stop_reason": row["stop_reason"], "extra_json": json.dumps(row["extra"])}
            for row in parsed.records]


def test_stop_column_says_approximate_and_why_the_ci_is_approximate():
    """A size stopped under --accept-approximate says 'approximate'; where its series also
    moved or the check had not settled, the finding follows, as for any other stop."""
    rows = _captured_approximate_rows()
    assert len(rows) == 2
    assert [_stop_with_stationarity(r) for r in rows] == ["approximate"] * 2   # untested
    for found, said in (("drift", "approximate, drift"),
                        ("level_shift", "approximate, level shift"),
                        ("unsettled", "approximate, unsettled"), ("ok", "approximate")):
        assert {_stop_with_stationarity(r) for r in _captured_approximate_rows(found)} == \
            {said}, found


def test_preempted_counts_add_up_over_launches_and_say_what_was_excluded():
    """The core's `preempted` per launch (a sample during or next to which a rank was
    descheduled) summed over a cell's launches, separately for launches that left them out
    of their statistic and launches that kept them, with the launches that carry no count
    (a core before the flag, or null: no RUSAGE_THREAD) counted, never read as 0. The
    fake-clock golden's records (no switch: 0) parse to nothing flagged."""
    from mpibench.report.data import Preempted, preempted_note, preempted_of

    rows = _captured_approximate_rows()
    assert preempted_of(rows) == Preempted(0, 0, 0) and preempted_note(preempted_of(rows)) == ""
    kept = [{"extra_json": json.dumps({"preempted": n, "preempted_excluded": False})}
            for n in (3, 0, 9)]
    assert preempted_of(kept) == Preempted(0, 12, 0)
    assert preempted_note(preempted_of(kept)) == "12 preempted kept"
    out = [{"extra": {"preempted": 4, "preempted_excluded": True}}]
    assert preempted_note(preempted_of(out)) == "4 preempted excluded"
    old = [{"extra_json": json.dumps({"stationarity": "ok"})},
           {"extra_json": json.dumps({"preempted": None})}, {"extra_json": None}]
    assert preempted_of(old) == Preempted(0, 0, 3) and preempted_note(preempted_of(old)) == ""
    mixed = preempted_of([*out, *kept, *old])
    assert mixed == Preempted(4, 12, 3)
    assert preempted_note(mixed) == "4 preempted excluded, 12 kept; 3 launches without the flag"


def test_load_cells_parses_each_rows_extra_once_and_reads_the_same(tmp_path, monkeypatch):
    """report.data reads a row's extra fields (stationarity for the stop column, the
    preempted counts, the launch's machine_probe record, the cell's extra) from ONE parse of
    its extra_json; before, the stop column, the preempted counts and the probe each parsed
    it (2.2 parses a row: bench/bench_compare_report.py --core-extra --verbs load). What
    they read is unchanged: per set the drift launches in the stop column, the excluded
    counts summed, each launch's probe record."""
    import numpy as np

    from mpibench.report import data
    from mpibench.store import Store
    from support.synth import add_variant_runs, core_record

    rng = np.random.default_rng(3)

    def make(rep):
        extra = {"stationarity": "drift" if rep % 2 else "ok", "preempted": rep,
                 "preempted_excluded": True, "machine_probe": {"before_ns": 80.0 + rep}}
        return [{**core_record("PingPong", s, rng.normal(10, 0.1, 30)), "extra": extra}
                for s in (8, 64)]

    with Store(tmp_path / "x.db") as store:
        cid = store.add_campaign("x")
        sets = {v: add_variant_runs(store, cid, v, repeats=4, make=make) for v in "ab"}
        real, texts = json.loads, []

        def counted(s, *a, **k):
            if isinstance(s, str) and '"stationarity"' in s:
                texts.append(s)
            return real(s, *a, **k)

        monkeypatch.setattr(data.json, "loads", counted)
        cells = data.load_cells(store, sets)
    assert len(texts) == 16                    # 2 sets x 2 sizes x 4 launches, once each
    for by in cells.values():
        for v, c in by.items():
            assert c.stop_reasons == {"target": 2, "target, drift": 2}
            assert c.preempted == data.Preempted(0 + 1 + 2 + 3, 0, 0)
            assert {p["before_ns"] for p in c.machine_probes.values()} == {80, 81, 82, 83}
            assert c.extra["stationarity"] == "ok" and set(c.machine_probes) == set(sets[v])
