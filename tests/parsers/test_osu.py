"""OSU parser against real captured OSU 7.4 outputs (tests/data/osu) and constructed 5.x/6.x
layouts (header before the Datatype line, old 'Latency (us)' header, one-sided, -c Fail)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpibench.parsers.detect import parse_bytes
from mpibench.parsers.osu import benchmark_name, parse_osu

DATA = Path(__file__).parents[1] / "data" / "osu"


def load(name: str):
    res = parse_bytes((DATA / name).read_bytes())
    assert res.format == "osu" and res.tool == "OSU" and res.version == "7.4"
    return res


def at(res, size):
    (r,) = [r for r in res.records if r["size"] == size]
    return r


@pytest.mark.parametrize("name, bench, size, value", [
    ("osu7.4-openmpi4.1.4-np2-osu_latency.txt", "osu_latency", 65536, 10.54),
    ("osu7.4-mpich4.0.2-np2-osu_latency.txt", "osu_latency", 16384, 5.51),
    ("osu7.4-openmpi4.1.4-np3-osu_allreduce.txt", "osu_allreduce", 4096, 30.63),
    ("osu7.4-mpich4.0.2-np3-osu_alltoall.txt", "osu_alltoall", 65536, 10099.87),
    ("osu7.4-openmpi4.1.4-np3-osu_bcast.txt", "osu_bcast", 1, 4.44),
    ("osu7.4-mpich4.0.2-np3-osu_bcast.txt", "osu_bcast", 16384, 3561.74),
])
def test_latency_tables(name, bench, size, value):
    res = load(name)
    assert len(res.records) == 17 and res.problems == []
    r = at(res, size)
    assert (r["benchmark"], r["mean"], r["statistic"], r["metric"], r["n"]) == (
        bench, value, "mean", "time", None)
    assert r["extra"]["datatype"] == "MPI_CHAR"


def test_latency_np_and_derived_bandwidth():
    res = load("osu7.4-openmpi4.1.4-np2-osu_latency.txt")
    r = at(res, 65536)
    assert r["np"] == 2
    assert r["bandwidth_mbps"] == pytest.approx(65536 / 10.54)
    assert r["extra"]["bandwidth_derived"] == "size / latency"
    assert at(load("osu7.4-openmpi4.1.4-np3-osu_allreduce.txt"), 1)["np"] is None


@pytest.mark.parametrize("name, bench, size, value", [
    ("osu7.4-openmpi4.1.4-np2-osu_bw.txt", "osu_bw", 65536, 8167.06),
    ("osu7.4-mpich4.0.2-np2-osu_bw.txt", "osu_bw", 8192, 1447.68),
    ("osu7.4-openmpi4.1.4-np2-osu_bibw.txt", "osu_bibw", 1024, 4564.17),
    ("osu7.4-mpich4.0.2-np2-osu_bibw.txt", "osu_bibw", 65536, 9249.12),
])
def test_bandwidth_tables(name, bench, size, value):
    res = load(name)
    r = at(res, size)
    assert (r["benchmark"], r["metric"], r["unit"], r["better"]) == (bench, "bandwidth", "MB/s",
                                                                    "higher")
    assert r["mean"] == r["bandwidth_mbps"] == value and r["np"] == 2


def test_mbw_mr_message_rate_and_pairs():
    res = load("osu7.4-openmpi4.1.4-np2-osu_mbw_mr.txt")
    r = at(res, 4096)
    assert (r["bandwidth_mbps"], r["msg_rate"], r["np"]) == (1514.57, 369767.02, 2)
    assert (r["extra"]["pairs"], r["extra"]["window_size"]) == (1, 64)


def test_validation_and_percentiles_and_full_stats():
    r = at(load("osu7.4-mpich4.0.2-np2-osu_latency-c.txt"), 16)
    assert (r["mean"], r["extra"]["validation"], r["status"]) == (0.74, "Pass", "ok")
    r = at(load("osu7.4-openmpi4.1.4-np2-osu_latency-z.txt"), 65536)
    assert (r["mean"], r["extra"]["p50_us"], r["extra"]["p90_us"], r["extra"]["p99_us"]) == (
        14.04, 11.59, 13.14, 56.24)
    r = at(load("osu7.4-openmpi4.1.4-np3-osu_allreduce-f.txt"), 16384)
    assert (r["mean"], r["extra"]["t_min_us"], r["extra"]["t_max_us"],
            r["extra"]["iterations"]) == (85.83, 84.41, 87.92, 100)
    r = at(load("osu7.4-mpich4.0.2-np3-osu_allreduce-f-z.txt"), 32768)
    assert (r["mean"], r["extra"]["iterations"], r["extra"]["p99_us"]) == (6611.51, 50, 18695.38)


def test_barrier_has_no_size():
    res = load("osu7.4-openmpi4.1.4-np3-osu_barrier.txt")
    (r,) = res.records
    assert (r["benchmark"], r["size"], r["mean"], r["extra"]["sizeless"]) == (
        "osu_barrier", 0, 6.56, True)
    assert load("osu7.4-mpich4.0.2-np3-osu_barrier.txt").records[0]["mean"] == 8479.08


def test_nonblocking_overlap_columns():
    res = load("osu7.4-mpich4.0.2-np3-osu_iallreduce.txt")
    r = at(res, 4096)
    assert (r["benchmark"], r["mean"], r["statistic"]) == ("osu_iallreduce", 5963.29,
                                                          "pure_comm")
    assert (r["extra"]["overall_us"], r["extra"]["compute_us"], r["extra"]["overlap_pct"]) == (
        12540.25, 7538.90, 16.13)


def test_killed_run_keeps_rows_and_reports():
    res = load("osu7.4-mpich4.0.2-np3-osu_allreduce.txt")
    assert res.truncated and len(res.records) == 9
    assert res.records[-1]["size"] == 256 and res.records[-1]["mean"] == 5945.23
    (p,) = res.problem_lines("f")
    assert p.startswith("f:16: the run was killed") and "up to size 256" in p


def test_old_layouts_header_before_datatype_and_one_sided():
    text = ("# OSU MPI Latency Test v5.6.3\n# Size          Latency (us)\n"
            "# Datatype: MPI_CHAR.\n0                       0.21\n8                       0.25\n")
    res = parse_osu(text)
    assert res.version == "5.6.3" and res.problems == []
    assert [(r["size"], r["mean"]) for r in res.records] == [(0, 0.21), (8, 0.25)]
    text = ("# OSU MPI_Put Latency Test v5.9\n# Window creation: MPI_Win_allocate\n"
            "# Synchronization: MPI_Win_flush\n# Size          Latency (us)\n1     1.50\n")
    res = parse_osu(text)
    r = res.records[0]
    assert (r["benchmark"], r["np"], r["extra"]["window_creation"],
            r["extra"]["synchronization"]) == ("osu_put_latency", 2, "MPI_Win_allocate",
                                               "MPI_Win_flush")


def test_validation_fail_is_a_failed_row():
    text = ("# OSU MPI Latency Test v7.1\n# Datatype: MPI_CHAR.\n"
            "# Size       Avg Latency(us)        Validation\n1   0.62   Pass\n2   0.65   Fail\n")
    res = parse_osu(text)
    assert [r["status"] for r in res.records] == ["ok", "validation-failed"]


@pytest.mark.parametrize("title, name", [
    ("MPI Latency", "osu_latency"), ("MPI-CUDA Bi-Directional Bandwidth", "osu_bibw"),
    ("MPI Multiple Bandwidth / Message Rate", "osu_mbw_mr"),
    ("MPI All-to-All Personalized Exchange Latency", "osu_alltoall"),
    ("MPI Non-blocking Allreduce Latency", "osu_iallreduce"),
    ("MPI Reduce_scatter Latency", "osu_reduce_scatter"), ("MPI Broadcast Latency", "osu_bcast"),
    ("MPI_Get Bandwidth", "osu_get_bw"), ("MPI_Fetch_and_op latency", "osu_fop_latency"),
    ("MPI Something New", "osu_something_new"),
])
def test_benchmark_names(title, name):
    assert benchmark_name(title)[0] == name


def test_rows_with_wrong_shape_are_reported():
    text = ("# OSU MPI Bandwidth Test v7.4\n# Datatype: MPI_CHAR.\n# Size      Bandwidth (MB/s)\n"
            "1    5.07\n2    10.90   3\nfour   1.0\n8    nan\n16   61.25\n")
    res = parse_osu(text)
    assert [r["size"] for r in res.records] == [1, 16]
    assert [p.line for p in res.problems] == [5, 6, 7]
    assert "expected a row of 2 values (Size, Bandwidth (MB/s))" in res.problems[0].message


def test_several_datatypes_in_one_run_are_named_apart():
    """OSU 7 `-T mpi_char,mpi_int`: one '# Datatype:' section per type under one title,
    each with its header again; sizes below the type's size are skipped."""
    text = (DATA / "osu7.4-openmpi4.1.4-np3-osu_allreduce.txt").read_text()
    text += ("# Datatype: MPI_INT.\n# Size       Avg Latency(us)\n"
             "4                      11.50\n8                       6.20\n"
             "65536                 99.00\n")
    res = parse_osu(text)
    assert res.problems == [] and len(res.records) == 17 + 3
    names = {r["benchmark"] for r in res.records}
    assert names == {"osu_allreduce:MPI_CHAR", "osu_allreduce:MPI_INT"}
    (r,) = [r for r in res.records if r["benchmark"] == "osu_allreduce:MPI_INT"
            and r["size"] == 8]
    assert (r["mean"], r["extra"]["datatype"], r["extra"]["line"]) == (6.20, "MPI_INT", 25)
    (r,) = [r for r in res.records if r["benchmark"] == "osu_allreduce:MPI_CHAR"
            and r["size"] == 8]
    assert r["mean"] == 6.14
    assert res.meta["datatype"] == "MPI_CHAR,MPI_INT"


def test_repeated_datatype_line_does_not_hide_duplicate_sizes():
    text = ("# OSU MPI Latency Test v7.4\n# Datatype: MPI_CHAR.\n# Size  Avg Latency(us)\n"
            "1   0.50\n2   0.60\n# Datatype: MPI_CHAR.\n2   0.70\n")
    res = parse_osu(text)
    assert [(r["size"], r["mean"]) for r in res.records] == [(1, 0.50), (2, 0.60)]
    assert "size 2 already given at line 5" in res.problems[0].message


def test_validation_error_stop_is_reported_as_truncation():
    text = ("# OSU MPI Allreduce Latency Test v7.4\n# Datatype: MPI_CHAR.\n"
            "# Size       Avg Latency(us)        Validation\n"
            "1                       6.05              Pass\n"
            "2                       5.98              Fail\n"
            "DATA VALIDATION ERROR: ./osu_allreduce exited with status 1 on message size 2.\n")
    res = parse_osu(text)
    assert [r["status"] for r in res.records] == ["ok", "validation-failed"]
    assert res.truncated
    (p,) = res.problem_lines("v.txt")
    assert p.startswith("v.txt:6: OSU stopped after a validation error at size 2")


# Real runs with MPICH's MPIR_CVAR_DEBUG_SUMMARY=1: MPI_Init prints its settings between
# '====' rules before OSU's title (4.0.2 over UCX; 5.0.2 over libfabric, with its provider
# list); the third file is two such runs appended to one file (osu_latency np2, then
# osu_allreduce np3), as a job script's `>>` leaves them.
@pytest.mark.parametrize("name, tables, rows", [
    ("osu7.4-mpich4.0.2-np2-osu_latency-debug-summary.txt", ["osu_latency"], 13),
    ("osu7.4-mpich5.0.2-ofi-np2-osu_latency-debug-summary.txt", ["osu_latency"], 7),
    ("osu7.4-mpich4.0.2-osu_latency+allreduce-debug-summary-appended.txt",
     ["osu_latency", "osu_allreduce"], 13 + 9),
])
def test_mpich_debug_summary_is_not_a_killed_run(name, tables, rows):
    res = load(name)
    assert not res.truncated and res.problems == []
    assert sorted({r["benchmark"] for r in res.records}) == sorted(tables)
    assert len(res.records) == rows and res.ok_rows == rows


def test_hydra_kill_banner_still_ends_the_run_mid_table():
    text = ("# OSU MPI Latency Test v7.4\n# Datatype: MPI_CHAR.\n# Size       Avg Latency(us)\n"
            "1                       0.25\n" + "=" * 83 + "\n"
            "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n" + "=" * 83 + "\n")
    res = parse_osu(text)
    assert res.truncated and len(res.records) == 1
    (p,) = res.problem_lines("f")
    assert p.startswith("f:6: the run was killed")
