"""mpibench-core as parts: the benchmark names agree everywhere, adding a benchmark is one
descriptor entry, and a deterministic clock pins every result bit for bit (so a change in what
the core measures shows up as a reviewed golden diff, and a reorganisation shows none)."""

from __future__ import annotations

import json
import shutil

import pytest

from mpibench import benchmarks
from mpibench.execute import CORE_OPTION_TABLE
from mpibench.process import run_command
from support.coreutil import (
    CORE,
    SCHEMA,
    STACKS,
    available,
    built_or_skip,
    check_schema,
    fakeclock_shim,
    launch,
)
from support.golden import check_golden

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    return built_or_skip(tmp_path_factory)


def _list(exe) -> list[tuple[str, str]]:
    res = run_command([str(exe), "--list"], timeout=30)
    assert res.ok, res.stderr
    return [tuple(line.split("\t")) for line in res.stdout.splitlines()]


def test_names_agree_core_list_schema_and_python(core):
    """One list of names: the core's descriptor tables (--list), the JSON schema's enum and
    mpibench.benchmarks, in the same order and with the same families."""
    for exe in core.values():
        listed = _list(exe)
        assert [n for n, _ in listed] == benchmarks.ALL
        assert [n for n, f in listed if f == "pt2pt"] == benchmarks.PT2PT
        assert [n for n, f in listed if f == "collective"] == benchmarks.COLLECTIVES
    result = next(o for o in SCHEMA["oneOf"]
                  if o["properties"]["record"].get("const") == "result")
    assert result["properties"]["benchmark"]["enum"] == benchmarks.ALL


def test_usage_and_errors_name_the_benchmarks_from_the_tables(core):
    exe = next(iter(core.values()))
    res = run_command([str(exe), "--help"], timeout=30)
    assert all(name in res.stdout for name in benchmarks.ALL)
    res = run_command([str(exe), "Pingpng"], timeout=30)
    assert res.returncode == 2
    assert res.stderr.strip() == ("mpibench-core: unknown benchmark 'Pingpng'; expected IMB "
                                  f"names: {' '.join(benchmarks.ALL)} (or all)")


def test_list_options_is_the_python_option_table(core):
    """The core's one option table (core/args.c) and mpibench.execute.CORE_OPTION_TABLE agree
    on every option the Python side passes on: name, type, bounds, choices and default; and
    --help prints every option of the table."""
    for exe in core.values():
        res = run_command([str(exe), "--list-options"], timeout=30)
        assert res.ok, res.stderr
        listed = {o["name"]: o for o in map(json.loads, res.stdout.splitlines())}
        assert len(listed) == len(res.stdout.splitlines())
        for opt in CORE_OPTION_TABLE:
            c = listed[opt.name.replace("_", "-")]
            assert (c["type"], c.get("min"), c.get("max"), c["default"],
                    tuple(c.get("choices", ()))) == \
                (opt.type, opt.min, opt.max, opt.default, opt.choices), opt.name
        usage = run_command([str(exe), "--help"], timeout=30).stdout
        for name, o in listed.items():
            assert f"--{name}" in usage and o["help"].split()[0] in usage, name
        # one table drives parsing too: its bounds are what the core refuses
        res = run_command([str(exe), "--target", "9e-7", "PingPong"], timeout=30)
        assert res.returncode == 2 and res.stderr.strip() == (
            "mpibench-core: bad value '9e-7' for --target: expected a number in [1e-06, 1000]")


def test_adding_a_benchmark_is_one_descriptor_entry(tmp_path):
    """A copy of core/ with one more entry in coll.c's table (an Allreduce under another name)
    builds, lists, documents and runs it with validation: no other core file changes."""
    stack = "openmpi" if available("openmpi") else "mpich"
    if not available(stack):
        pytest.skip("no MPI stack installed")
    src = tmp_path / "core"
    shutil.copytree(CORE, src)
    coll = (src / "coll.c").read_text()
    entry = ('    {.name = "Allreduce_twin", COLL, .bufsize = buf_allreduce, .run = run_allreduce,\n'
             '     .bytes = bytes_floats, .busbw = bus_allreduce, .fill = fill_fpat,\n'
             '     .check = chk_allreduce, .elem_bytes = 4},\n')
    assert coll.count("    {.name = NULL},") == 1
    (src / "coll.c").write_text(coll.replace("    {.name = NULL},", entry + "    {.name = NULL},"))
    out = tmp_path / "build"
    res = run_command(["make", "-C", str(src), f"MPICC={STACKS[stack]['mpicc']}",
                       f"BUILD={out}"], timeout=300)
    assert res.ok, res.stderr
    exe = out / "mpibench-core"
    assert _list(exe)[-1] == ("Allreduce_twin", "collective")
    assert "Allreduce_twin" in run_command([str(exe), "--help"], timeout=30).stdout
    run = launch(stack, exe, 2, ["allreduce_twin", "--sizes", "0,64", "--max-time", "0.02",
                                 "--quiet"], tmp_path / "twin.jsonl", timeout=60)
    assert run.res.ok, run.res.stderr
    assert [(r["benchmark"], r["status"], r["validation"]["ok"]) for r in run.results] == [
        ("Allreduce_twin", "ok", True), ("Allreduce_twin", "ok", True)]


# ---- bit for bit under a deterministic clock ----

# --no-settle keeps these as they were before settling (their goldens gained only its keys);
# "settled" is the default path, settling included (the shim reports no page faults).
# The fake clock counts calls, not seconds: a config's --max-time is a number of real MPI
# calls (~0.6 us of fake time per PingPong), so every config must stop on something else
# long before it (samples, iterations, the target, futility).  "futility" at --max-time 0.2
# stopped futile at 0.05 s (1553 samples) until the fake clock's samples grew steadier (one
# barrier per round, c0080b6); it then ran all 0.2 s to max_time, ~283,000 real MPICH
# round trips: 15 s at load 10 and past the 60 s watchdog under ../shared/tools/under-load.
# At 0.04 it stops futile at its first look (0.011 s, 327 samples).
_FAKE_CONFIGS = {
    "adaptive": ["PingPong", "Allreduce", "Barrier", "--sizes", "0,1K", "--max-time", "0.1",
                 "--max-samples", "300", "--no-settle"],
    "fixed": ["PingPong", "Allreduce", "--sizes", "0,64K", "--iterations", "1000",
              "--iterations-volume", "40M", "--no-settle"],
    "futility": ["PingPong", "--sizes", "4K", "--max-time", "0.04", "--futility", "--target",
                 "0.1", "--no-settle"],
    # 5 samples: the CI is approximate (fewer than 20), within 100%: stop and say so
    "approximate": ["PingPong", "--sizes", "0,1K", "--min-samples", "5", "--target", "100",
                    "--accept-approximate", "--no-settle"],
    "settled": ["PingPong", "Allreduce", "--sizes", "0,1K", "--max-time", "0.1",
                "--max-samples", "300"],
}
# what depends on the machine rather than on the core's arithmetic
_MACHINE_KEYS = {"hosts", "ranks_per_host", "mpi_library_version", "mpi_library_version_full",
                 "argv", "start_utc", "mpi_init_us", "machine_state", "start_monotonic_s"}
# per result: the stages' wall time is CLOCK_MONOTONIC, not the fake MPI_Wtime
_MACHINE_RESULT_KEYS = {"phases_s"}


@pytest.mark.parametrize("stack", ["openmpi", "mpich"])
def test_results_bit_for_bit_under_a_deterministic_clock(core, stack, tmp_path):
    """tests/data/core/fakeclock.c replaces MPI_Wtime by a clock driven only by the core's own
    calls, so batch sizes, samples, stop reasons and every statistic are a pure function of the
    code.  The golden files change only when what the core measures or decides changes."""
    if stack not in core:
        pytest.skip(f"{stack} is not installed")
    so = fakeclock_shim(stack, tmp_path)
    out = {}
    for name, args in _FAKE_CONFIGS.items():
        run = launch(stack, core[stack], 2, [*args, "--quiet"], tmp_path / f"{name}.jsonl",
                     preload=so)
        assert run.res.ok, run.res.stderr
        recs = run.records
        check_schema(recs)
        header = {k: v for k, v in recs[0].items() if k not in _MACHINE_KEYS}
        header["options"] = {k: v for k, v in header["options"].items()
                             if k not in ("llc_bytes",)}
        out[name] = [header] + [{k: v for k, v in r.items() if k not in _MACHINE_RESULT_KEYS}
                                for r in recs if r["record"] == "result"]
    assert [(r["stop_reason"], r["n"], r["ci_exact"]) for r in out["approximate"][1:]] == \
        [("approximate", 5, False)] * 2
    # futility, not the budget, ends it: the budget here is real calls (see _FAKE_CONFIGS)
    assert [r["stop_reason"] for r in out["futility"][1:]] == ["futile"]
    check_golden(f"core-fakeclock-{stack}.json", out)
