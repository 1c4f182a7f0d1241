"""Campaign and `mpibench run` settings beyond the matrix: the core options both pass on
(validated up front, part of the cell id and, where they change a sample, of the
fingerprint), the line rate / price / power keys the reports read, the bulk run insert of
the first sync, and the watchdog reason. Pure: nothing is launched."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mpibench.campaign.plan import expand
from mpibench.campaign.runner import CampaignRunner
from mpibench.campaign.spec import load
from mpibench.errors import UsageError
from mpibench.execute import (
    BOOL_CORE_OPTIONS,
    CORE_OPTIONS,
    CellCommand,
    Variant,
    check_core_options,
    core_args,
    core_fingerprint,
    ingest_core,
    parse_bytes,
)
from mpibench.parsers.core_jsonl import parse_core_jsonl
from mpibench.stacks import Stack
from mpibench.store import Store

DATA = Path(__file__).parents[1] / "data" / "core"

BASE = """
[campaign]
name = "t"
repeats = 2
[variants.a]
stack = "openmpi"
[variants.b]
stack = "mpich"
sweep = { np = [2, 3] }
[benchmarks.pp]
benchmarks = ["PingPong", "Reduce"]
sizes = "0,64"
"""


def load_text(tmp_path: Path, text: str):
    p = tmp_path / "c.toml"
    p.write_text(text)
    return load(p)


def with_options(opts: str) -> str:
    return BASE + f"options = {{ {opts} }}\n"


BAD = [
    # core options
    (with_options("root_shift = 1"), "benchmarks.pp.options.root_shift", "true or false"),
    (with_options("off_cache = \"yes\""), "benchmarks.pp.options.off_cache", "true or false"),
    (with_options("futility = 0"), "benchmarks.pp.options.futility", "true or false"),
    (with_options('mem_limit = "12Q"'), "benchmarks.pp.options.mem_limit",
     "bytes per rank such as 512M"),
    (with_options("mem_limit = 0"), "benchmarks.pp.options.mem_limit", "bytes per rank"),
    (with_options("mem_limit = 1.5"), "benchmarks.pp.options.mem_limit", "bytes per rank"),
    (with_options('thread_level = "many"'), "benchmarks.pp.options.thread_level",
     "one of single, funneled, serialized, multiple"),
    (with_options('sync = "never"'), "benchmarks.pp.options.sync",
     "one of auto, barrier, window"),
    (with_options('iterations_volume = "40M"'), "benchmarks.pp.options.iterations_volume",
     "needs iterations"),
    (with_options('iterations = 10, iterations_volume = "-1"'),
     "benchmarks.pp.options.iterations_volume", "bytes such as 40M"),
    (with_options("timeout = 0.04"), "benchmarks.pp.options.timeout",
     "timeout > max_time, with a margin"),
    (with_options("max_time = 100"), "benchmarks.pp.options.max_time",
     "60 s, the core's default"),
    (with_options("max_time = 5, timeout = 5"), "benchmarks.pp.options.timeout",
     "not longer than max_time (5 s)"),
    (with_options("target = 0"), "benchmarks.pp.options.target", "a number >= 1e-06"),
    # below the core's bound (core/args.c): passed here before, then the launch died of exit 2
    (with_options("target = 1e-7"), "benchmarks.pp.options.target", "a number >= 1e-06"),
    (with_options("max_time = -0.5"), "benchmarks.pp.options.max_time", "a number >= 0"),
    (with_options("target = 5000"), "benchmarks.pp.options.target", "<= 1000"),
    (with_options("iterations = 2000000000000"), "benchmarks.pp.options.iterations",
     "<= 2^40"),
    (with_options("timeout = 0.0001, iterations = 5"), "benchmarks.pp.options.timeout",
     ">= 0.001"),
    (with_options("threads = 2"), "benchmarks.pp.options.threads", "unknown key"),
    # exclude_preempted may sample a size up to its cap (10 x max_time by default): the
    # watchdog must outlast it, and the cap is not below max_time (the core's exit 2)
    (with_options("exclude_preempted = true, timeout = 0.4"), "benchmarks.pp.options.timeout",
     "timeout > 0.5"),
    (with_options("exclude_preempted = true, preempted_max_time = 0.01"),
     "benchmarks.pp.options.preempted_max_time", "preempted_max_time >= max_time"),
    (with_options("exclude_preempted = 1"), "benchmarks.pp.options.exclude_preempted",
     "true or false"),
    # line rate, price, power
    (BASE.replace('stack = "openmpi"', 'stack = "openmpi"\nline_rate = 100'),
     "variants.a.line_rate", 'a link speed such as "100Gb/s"'),
    (BASE.replace('stack = "openmpi"', 'stack = "openmpi"\nline_rate = "100 furlongs"'),
     "variants.a.line_rate", "got '100 furlongs'"),
    (BASE.replace('stack = "openmpi"', 'stack = "openmpi"\nline_rate = "0Gb/s"'),
     "variants.a.line_rate", "a link speed"),
    (BASE.replace("[variants.a]", '[defaults]\nline_rate = "fast"\n[variants.a]'),
     "defaults.line_rate", "a link speed"),
    (BASE.replace('stack = "openmpi"', 'stack = "openmpi"\nsweep = { line_rate = ["1G"] }'),
     "variants.a.sweep.line_rate", "cannot be swept"),
    (BASE.replace('repeats = 2', 'repeats = 2\nprice_per_node_hour = -1'),
     "campaign.price_per_node_hour", "a number >= 0"),
    (BASE.replace('repeats = 2', 'repeats = 2\nprice_per_node_hour = "2 EUR"'),
     "campaign.price_per_node_hour", "a number >= 0"),
    (BASE.replace('repeats = 2', 'repeats = 2\npower_per_node_w = nan'),
     "campaign.power_per_node_w", "a number >= 0"),
    (BASE.replace('repeats = 2', 'repeats = 2\npower_per_node_w = inf'),
     "campaign.power_per_node_w", "a number >= 0"),
    (BASE.replace('stack = "openmpi"', 'stack = "openmpi"\nprice_per_node_hour = 3'),
     "variants.a.price_per_node_hour", "price_per_node_hour in [campaign]"),
    (BASE.replace("[variants.a]", "[defaults]\npower_per_node_w = 300\n[variants.a]"),
     "defaults.power_per_node_w", "power_per_node_w in [campaign]"),
]


@pytest.mark.parametrize("text, key, expected", BAD)
def test_each_error_names_file_key_and_form(tmp_path, text, key, expected):
    with pytest.raises(UsageError) as err:
        load_text(tmp_path, text)
    msg = str(err.value)
    assert msg.startswith(f"{tmp_path / 'c.toml'}: {key}: "), msg
    assert expected in msg and "\n" not in msg, msg


def test_every_core_option_reaches_the_core_argv(tmp_path):
    spec = load_text(tmp_path, with_options(
        'root_shift = true, off_cache = true, futility = true, mem_limit = "1G", '
        'thread_level = "funneled", iterations = 100, iterations_volume = "40M", '
        "timeout = 30, no_validate = true, target = 2, max_time = 0.5, per_call = true, "
        'accept_approximate = true, sync = "barrier", exclude_preempted = true, '
        "preempted_max_time = 5"))
    opts = spec.groups[0].options
    assert opts["mem_limit"] == 1 << 30 and opts["iterations_volume"] == 40 << 20
    argv = core_args(["PingPong"], "0,64", Path("/x/core.jsonl"), opts)
    for flag in ("--root-shift", "--off-cache", "--futility", "--no-validate", "--per-call",
                 "--accept-approximate", "--exclude-preempted"):
        assert flag in argv
    pairs = {argv[i]: argv[i + 1] for i in range(len(argv) - 1)}
    assert pairs["--mem-limit"] == str(1 << 30)
    assert pairs["--thread-level"] == "funneled"
    assert pairs["--sync"] == "barrier"    # the sampling runs stored before --sync auto used
    assert pairs["--iterations-volume"] == str(40 << 20)
    assert pairs["--iterations"] == "100" and pairs["--timeout"] == "30.0"
    assert pairs["--preempted-max-time"] == "5.0"
    # every option the campaign accepts is one the core knows (docs/core-output.md)
    doc = (Path(__file__).parents[2] / "docs" / "core-output.md").read_text()
    for name in CORE_OPTIONS:
        assert f"`--{name.replace('_', '-')}" in doc, name


def test_on_off_options_are_booleans_in_a_file_and_flags_on_the_command_line(tmp_path):
    """BOOL_CORE_OPTIONS: exactly the options asked for as "true or false"; a campaign file
    refuses anything but a boolean for them, and `mpibench run` has each as a bare flag that
    sets True (and leaves the option out when absent)."""
    import argparse

    from mpibench.commands.run import core_options_from_args

    assert set(BOOL_CORE_OPTIONS) == {k for k, v in CORE_OPTIONS.items()
                                      if v == "true or false"}

    def fail(name, problem, expected):
        raise UsageError(f"{name}: {problem}; expected {expected}")

    for name in BOOL_CORE_OPTIONS:
        assert check_core_options({name: True}, fail) == {name: True}
        with pytest.raises(UsageError, match=f"{name}: got 1; expected true or false"):
            check_core_options({name: 1}, fail)
    on = core_options_from_args(argparse.Namespace(**{k: True for k in BOOL_CORE_OPTIONS}))
    assert on == {k: True for k in BOOL_CORE_OPTIONS}
    assert core_options_from_args(argparse.Namespace(
        **{k: False for k in BOOL_CORE_OPTIONS})) == {}


def test_core_bounds_are_the_cores_own(tmp_path):
    """The core accepts max_time = 0 (one round of at least 5 samples, then stop) and target down to 1e-6
    (core/args.c); this side refused the first and passed 0 < target < 1e-6, which the core
    then refused with exit 2 in the middle of a campaign."""
    spec = load_text(tmp_path, with_options("max_time = 0, target = 1e-6"))
    assert spec.groups[0].options == {"max_time": 0.0, "target": 1e-6}


def test_false_options_pass_nothing(tmp_path):
    spec = load_text(tmp_path, with_options("root_shift = false, off_cache = false"))
    argv = core_args(["PingPong"], None, Path("/x/c.jsonl"), spec.groups[0].options)
    assert "--root-shift" not in argv and "--off-cache" not in argv


@pytest.mark.parametrize("opts", [
    "root_shift = true", "off_cache = true", "futility = true", 'mem_limit = "1G"',
    'thread_level = "multiple"', 'iterations = 1000, iterations_volume = "40M"',
    'sync = "barrier"',
])
def test_each_option_makes_a_new_cell_and_equal_bytes_the_same_one(tmp_path, opts):
    plain = {c.id for c in expand(load_text(tmp_path, BASE))}
    changed = {c.id for c in expand(load_text(tmp_path, with_options(opts)))}
    assert len(changed) == len(plain) and not plain & changed
    if "iterations_volume" in opts:
        other = 'iterations = 1000, iterations_volume = "41943040"'
        base = {c.id for c in expand(load_text(tmp_path, with_options(
            'iterations = 1000, iterations_volume = "20M"')))}
        assert not base & changed
    elif "mem_limit" in opts:
        other = "mem_limit = 1073741824"
    else:
        return
    assert {c.id for c in expand(load_text(tmp_path, with_options(other)))} == changed


def test_line_rate_price_and_power_never_change_cell_ids(tmp_path):
    plain = [c.id for c in expand(load_text(tmp_path, BASE))]
    judged = BASE.replace("repeats = 2", "repeats = 2\nprice_per_node_hour = 2.5\n"
                          "power_per_node_w = 350").replace(
        'stack = "openmpi"', 'stack = "openmpi"\nline_rate = "100Gb/s"').replace(
        "[variants.a]", '[defaults]\nline_rate = "25GbE"\n[variants.a]')
    spec = load_text(tmp_path, judged)
    assert [c.id for c in expand(spec)] == plain
    assert spec.line_rates == {"a": ("100Gb/s", 100e9), "b[np=2]": ("25GbE", 25e9),
                               "b[np=3]": ("25GbE", 25e9)}
    d = spec.to_dict()
    assert d["price_per_node_hour"] == 2.5 and d["power_per_node_w"] == 350
    assert isinstance(d["power_per_node_w"], int)       # as written: "350 W" in captions
    assert [v.get("line_rate") for v in d["variants"]] == ["100Gb/s", "25GbE", "25GbE"]


def _runs(store: Store) -> dict[str, dict]:
    return {r["variant"] + "#" + str(r["repeat"]): json.loads(r["spec_json"])
            for r in store.db.execute("SELECT variant, repeat, spec_json FROM runs")}


def test_sync_stores_the_keys_where_the_reports_read_them_and_follows_edits(tmp_path):
    from mpibench.report.specs import _spec_value

    text = BASE.replace("repeats = 2", "repeats = 2\nprice_per_node_hour = 2.5\n"
                        "power_per_node_w = 350").replace(
        'stack = "openmpi"', 'stack = "openmpi"\nline_rate = "100Gb/s"')
    with Store(tmp_path / "s.db") as store:
        cid, cells, _ = CampaignRunner(load_text(tmp_path, text), store, []).sync()
        ids = {v: [c.id for c in cells if c.variant.name == v] for v in ("a", "b[np=2]")}
        assert _spec_value(store, ids["a"], ("line_rate_bps", "line_rate")) == 100e9
        assert _spec_value(store, ids["b[np=2]"], ("line_rate_bps", "line_rate")) is None
        every = ids["a"] + ids["b[np=2]"]
        assert _spec_value(store, every, ("price_per_node_hour",)) == 2.5
        assert _spec_value(store, every, ("power_per_node_w",)) == 350
        # the file changes after cells ran: same cells, the runs follow the file
        edited = text.replace('line_rate = "100Gb/s"', 'line_rate = "200Gb/s"').replace(
            '[variants.b]\nstack = "mpich"', '[variants.b]\nstack = "mpich"\nline_rate = "10GbE"'
        ).replace("price_per_node_hour = 2.5", "price_per_node_hour = 3")
        _, again, _ = CampaignRunner(load_text(tmp_path, edited), store, []).sync()
        assert [c.id for c in again] == [c.id for c in cells]
        assert _spec_value(store, ids["a"], ("line_rate_bps",)) == 200e9
        assert _spec_value(store, ids["b[np=2]"], ("line_rate_bps",)) == 10e9
        assert _spec_value(store, every, ("price_per_node_hour",)) == 3
        runs = _runs(store)
        assert runs["a#0"]["line_rate"] == "200Gb/s" and runs["a#0"]["group"] == "pp"
        # removed from the file: removed from the runs
        _, _, _ = CampaignRunner(load_text(tmp_path, BASE), store, []).sync()
        assert all("line_rate" not in s and "line_rate_bps" not in s
                   for s in _runs(store).values())
        assert _spec_value(store, every, ("price_per_node_hour",)) is None
        assert store.db.execute("SELECT count(*) FROM runs").fetchone()[0] == len(cells)


def test_create_runs_matches_create_run_row_for_row(tmp_path):
    spec = load_text(tmp_path, BASE)
    rows = [dict(run_id=f"r{i}", variant="v", grp="g", params={"a": i, "b": [1, 2]},
                 repeat=i % 2, spec={"x": {"z": 1, "y": i}}, seq=i, label=f"l{i}",
                 transport_requested=None if i % 2 else "shm", run_dir=f"/d/{i}")
            for i in range(5)]
    with Store(tmp_path / "one.db") as one, Store(tmp_path / "bulk.db") as bulk:
        cid1 = one.add_campaign(spec.name, {})
        cid2 = bulk.add_campaign(spec.name, {})
        assert cid1 == cid2
        with one.transaction():
            for r in rows:
                one.create_run(r["run_id"], cid1, r["variant"], grp=r["grp"],
                               params=r["params"], repeat=r["repeat"], spec=r["spec"],
                               seq=r["seq"], label=r["label"],
                               transport_requested=r["transport_requested"],
                               run_dir=r["run_dir"])
        # outside a transaction it opens its own; rows with other columns go in too
        assert bulk.create_runs([{**r, "campaign_id": cid2} for r in rows[:3]]
                                + [{"run_id": "short", "campaign_id": cid2,
                                    "variant": "w"}]) == 4
        assert not bulk.db.in_transaction
        with bulk.transaction():       # inside the caller's transaction; existing ids kept
            n = bulk.create_runs({**r, "campaign_id": cid2, "label": "changed"}
                                 for r in rows)
        assert n == 2
        q = "SELECT * FROM runs WHERE id != 'short' ORDER BY id"
        got = [dict(r) for r in bulk.db.execute(q)]
        assert [r.pop("label") for r in got] == ["l0", "l1", "l2", "changed", "changed"]
        want = [dict(r) for r in one.db.execute(q)]
        for r in want:
            del r["label"]
        assert got == want
        short = bulk.run("short")
        assert short["grp"] == "" and short["params_json"] == "{}" and short["seq"] == 0


def test_create_runs_takes_spec_json_text_as_is_and_never_as_an_extra_column(tmp_path):
    with Store(tmp_path / "s.db") as store:
        cid = store.add_campaign("c", {})
        text = '{"b": 1, "a": 2}'  # the caller's serialisation, kept byte for byte
        assert store.create_runs([
            {"run_id": "t", "campaign_id": cid, "variant": "v", "spec_json": text},
            {"run_id": "d", "campaign_id": cid, "variant": "v", "spec_json": {"b": 1, "a": 2}},
            {"run_id": "s", "campaign_id": cid, "variant": "v", "spec": {"b": 1, "a": 2},
             "seq": 3}]) == 3
        got = dict(store.db.execute("SELECT id, spec_json FROM runs").fetchall())
        assert got == {"t": text, "d": '{"a": 2, "b": 1}', "s": '{"a": 2, "b": 1}'}
        assert store.run("s")["seq"] == 3


def test_create_runs_is_all_or_nothing(tmp_path):
    with Store(tmp_path / "s.db") as store:
        cid = store.add_campaign("c", {})
        good = {"run_id": "ok", "campaign_id": cid, "variant": "v"}
        with pytest.raises(ValueError):
            store.create_runs([good, {**good, "run_id": "x", "colour": "red"}])
        with pytest.raises(sqlite3.IntegrityError):  # foreign key: no such campaign
            store.create_runs([good, {**good, "run_id": "y", "campaign_id": cid + 99}])
        assert not store.db.in_transaction
        assert store.db.execute("SELECT count(*) FROM runs").fetchone()[0] == 0


def test_parse_bytes_reads_what_the_core_reads():
    assert parse_bytes("512") == 512 and parse_bytes(64) == 64
    assert parse_bytes("4K") == 4096 and parse_bytes("2GiB") == 2 << 30
    assert parse_bytes("40m") == 40 << 20 and parse_bytes("1T") == 1 << 40
    assert parse_bytes("8B") == 8
    for bad in ("", "K", "-1", "1.5G", "1Q", 0, True, 2**63, "9" * 30, None, 1.0):
        assert parse_bytes(bad) is None, bad


def test_check_core_options_spells_flags_for_the_command_line():
    def fail(name, problem, expected):
        raise UsageError(f"{name}|{problem}|{expected}")

    flag = lambda n: "--" + n.replace("_", "-")          # noqa: E731
    with pytest.raises(UsageError, match=r"needs --iterations .*--iterations-volume 40M"):
        check_core_options({"iterations_volume": "1M"}, fail, spell=flag)
    assert check_core_options({"target": None, "root_shift": True}, fail) == \
        {"root_shift": True}
    # fixed-count mode: max_time does not apply, so no watchdog cross-check
    assert check_core_options({"iterations": 5, "max_time": 100}, fail)["max_time"] == 100


def _cmd(tmp_path: Path, jsonl: Path) -> CellCommand:
    stack = Stack(name="mpich", kind="mpich", version="4.0.2")
    return CellCommand(argv=["mpiexec", "x"], env={}, run_dir=tmp_path,
                       stdout=tmp_path / "stdout.txt", stderr=tmp_path / "stderr.txt",
                       jsonl=jsonl, fingerprint_argv=["mpiexec", "<program>"],
                       variant=Variant(name="m", stack="mpich"), stack=stack)


def test_watchdog_reason_is_said_once_with_benchmark_and_size(tmp_path):
    # a real capture: --debug-stall 1K --timeout 2 on MPICH (hydra exits 9 after the kill)
    out = ingest_core(_cmd(tmp_path, DATA / "mpich-np2-stall.jsonl"), None, exit_code=9)
    assert out.status == "timeout"
    assert out.reason == ("watchdog: PingPong size 1024 did not finish within --timeout 2 s "
                          "(stage: calibrate)")
    assert out.reason.count("watchdog") == 1


def test_a_launch_killed_after_the_core_finished_says_so_and_keeps_its_rows(tmp_path):
    """MPICH 4.0.2 can hang in MPI_Finalize after the footer (docs/schedulers.md): still a
    timeout, but the reason tells the user every size was measured; a stall does not."""
    done = ingest_core(_cmd(tmp_path, DATA / "mpich-np2-ok.jsonl"), None, exit_code=124,
                       timed_out=True)
    assert done.status == "timeout" and done.records
    assert "after the core had written all its results" in done.reason
    stalled = ingest_core(_cmd(tmp_path, DATA / "mpich-np2-stall.jsonl"), None,
                          exit_code=124, timed_out=True)
    assert stalled.status == "timeout"
    assert "written all its results" not in stalled.reason


def test_a_launcher_stopped_after_the_footer_is_judged_by_the_footer(tmp_path):
    """The completion rule stopped a launcher that had not exited after the core's footer
    (its exit status is the stop's, 143 or mpirun's 1): the cell is what the footer says
    (ok: done; failed: the validation failure; timeout: the watchdog's), with a note. The
    launcher's own exit status is kept. Without a footer nothing changes (it cannot be
    stopped without one; if it were, its exit status would stand)."""
    ok = ingest_core(_cmd(tmp_path, DATA / "mpich-np2-ok.jsonl"), None, exit_code=143,
                     stopped_after=10.3)
    assert ok.status == "done" and ok.records and ok.exit_code == 143
    assert ok.reason == ("launcher stopped 10 s after the core's output was complete (its "
                         "footer written): it had not exited, hung in MPI_Finalize or its "
                         "teardown; the results are whole")
    bad = ingest_core(_cmd(tmp_path, DATA / "openmpi-np2-corrupt-unsupported.jsonl"), None,
                      exit_code=1, stopped_after=10.0)
    assert bad.status == "failed" and bad.reason.startswith("validation failed: ")
    assert bad.reason.endswith("the results are whole")
    stall = ingest_core(_cmd(tmp_path, DATA / "mpich-np2-stall.jsonl"), None, exit_code=143,
                        stopped_after=10.0)
    assert stall.status == "timeout" and stall.reason.startswith("watchdog: PingPong")
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join((DATA / "mpich-np2-ok.jsonl").read_text().splitlines(True)[:-1]))
    assert ingest_core(_cmd(tmp_path, cut), None, exit_code=143,
                       stopped_after=10.0).status == "failed"
    # the step's own timeout came first: a timeout as before
    late = ingest_core(_cmd(tmp_path, DATA / "mpich-np2-ok.jsonl"), None, exit_code=124,
                       timed_out=True, stopped_after=None)
    assert late.status == "timeout"


def test_fingerprint_carries_the_options_that_change_a_sample(tmp_path):
    plain = ingest_core(_cmd(tmp_path, DATA / "mpich-np2-ok.jsonl"), None, exit_code=0)
    shifted = ingest_core(_cmd(tmp_path, DATA / "openmpi-np3-rootshift-offcache.jsonl"),
                          None, exit_code=0)
    a, b = plain.fingerprint["core_options"], shifted.fingerprint["core_options"]
    assert a["root_shift"] is False and a["off_cache"] is False
    assert b["root_shift"] is True and b["off_cache"] is True
    assert a["thread_level"] == "single" and a["mode"] == "adaptive"
    # stop-rule options are not in it: runs that differ only there still pool
    header = parse_core_jsonl((DATA / "mpich-np2-ok.jsonl").read_text()).header
    h2 = json.loads(json.dumps(header))
    h2["options"].update(target_pct=5, max_time_s=9, futility=True, mem_limit=1 << 20,
                         timeout_s=99, validate=False)
    assert core_fingerprint(h2) == core_fingerprint(header)
    # samples kept out of the statistic make another launch statistic; off as before
    h2["options"]["exclude_preempted"] = False
    assert core_fingerprint(h2) == core_fingerprint(header)
    h2["options"]["exclude_preempted"] = True
    assert core_fingerprint(h2) != core_fingerprint(header)
    h2["options"]["exclude_preempted"] = False
    # page-aligned buffers (a header that states buffer_align) measure another sample than
    # the malloc'd buffers of the cores before (no key): never the same fingerprint
    assert "buffer_align" not in header["options"]
    h2["options"]["buffer_align"] = 4096
    assert core_fingerprint(h2) != core_fingerprint(header)
    assert core_fingerprint(h2)["core_options"]["buffer_align"] == 4096
    del h2["options"]["buffer_align"]
    assert core_fingerprint(h2) == core_fingerprint(header)
    h2["options"]["thread_level"] = "multiple"
    assert core_fingerprint(h2) != core_fingerprint(header)
    assert core_fingerprint({}) == {}          # no core header (applications): nothing


def test_an_adhoc_runs_launches_carry_their_invocation(tmp_path):
    """`mpibench run --name X` given twice numbers both invocations' launches from repeat
    0: each run's spec says which invocation it belongs to, so the report pairs a
    repeat's launches only within the invocation that ran them back-to-back."""
    from mpibench.campaign.adhoc import adhoc_campaign
    from mpibench.execute import Variant

    vs = [Variant("shm", "openmpi"), Variant("tcp", "openmpi")]
    with Store(tmp_path / "s.db") as store:
        for inst in ("first", "second"):
            spec = adhoc_campaign("x", vs, ["PingPong"], "0", {}, 2, 60.0, tmp_path, inst)
            CampaignRunner(spec, store, []).sync()
        rows = store.runs()
    assert len(rows) == 8
    by = {}
    for r in rows:
        by.setdefault(json.loads(r["spec_json"]).get("instance"), []).append(r["repeat"])
    assert sorted(by) == ["first", "second"]
    assert sorted(by["first"]) == sorted(by["second"]) == [0, 0, 1, 1]


def test_sync_rows_are_what_create_run_would_have_written(tmp_path):
    """Sync serialises each variant x group once and splices the parameter points in: the
    stored text must equal json.dumps of the whole spec, cell by cell."""
    from mpibench.campaign.cells import _cell_spec

    text = BASE.replace('stack = "openmpi"', 'stack = "openmpi"\nline_rate = "100Gb/s"') + (
        '[benchmarks.app]\ncommand = "run {a} {b}"\n'
        'params = { a = [1, 2.5, "x y"], b = ["\\"q\\"", 0] }\nrepeats = 3\n')
    spec = load_text(tmp_path, text)
    with Store(tmp_path / "s.db") as store:
        runner = CampaignRunner(spec, store, [])
        _, cells, _ = runner.sync()
        rows = {r["id"]: r for r in store.runs()}
        assert len(rows) == len(cells) == 3 * 2 + 3 * 6 * 3
        for c in cells:
            r = rows[c.id]
            assert r["spec_json"] == json.dumps(_cell_spec(c, spec.judging(c.variant.name)),
                                                sort_keys=True, default=str)
            assert r["params_json"] == json.dumps(c.params, sort_keys=True, default=str)
            assert r["run_dir"] == str(runner.run_dir(c)) and r["label"] == c.label
            assert (r["variant"], r["grp"], r["repeat"], r["seq"]) == \
                (c.variant.name, c.group.name, c.repeat, c.seq)
            assert json.loads(r["spec_json"])["repeat"] == c.repeat
