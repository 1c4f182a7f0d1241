"""IMB parser against real captured outputs (tests/data/imb, from ../shared/fixtures) and
against constructed tables for column sets no capture has (IMB 4.x units, -multi, -check,
IMB-RMA, IMB-EXT modes, out-of-mem / int-overflow rows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpibench.parsers.detect import parse_bytes
from mpibench.parsers.imb import parse_imb

DATA = Path(__file__).parents[1] / "data" / "imb"


def load(name: str):
    res = parse_bytes((DATA / name).read_bytes())
    assert res.format == "imb"
    return res


def row(res, bench, size, np_=2):
    hits = [r for r in res.records if r["benchmark"] == bench and r["size"] == size
            and r["np"] == np_]
    assert len(hits) == 1, (bench, size, np_, hits)
    return hits[0]


def test_all_openmpi_every_block_and_spot_values():
    res = load("imb2021.11-openmpi4.1.4-np2-all.txt")
    assert (res.tool, res.version, res.blocks, len(res.records)) == ("IMB-MPI1", "2021.11", 19,
                                                                     315)
    assert res.problems == [] and not res.truncated
    assert res.meta["mpi_version"] == "3.1"
    assert res.meta["argv"] == "./IMB-MPI1 -msglog 0:16 -time 2"
    assert res.meta["release"] == "6.18.44-fc-v657"
    names = list(dict.fromkeys(r["benchmark"] for r in res.records))
    assert names == ["PingPong", "PingPing", "Sendrecv", "Exchange", "Allreduce", "Reduce",
                     "Reduce_local", "Reduce_scatter", "Reduce_scatter_block", "Allgather",
                     "Allgatherv", "Gather", "Gatherv", "Scatter", "Scatterv", "Alltoall",
                     "Alltoallv", "Bcast", "Barrier"]
    r = row(res, "PingPong", 0)
    assert (r["mean"], r["bandwidth_mbps"], r["statistic"], r["n"]) == (0.42, 0.0, "mean", None)
    assert r["extra"] == {"repetitions": 1000, "line": 53}
    r = row(res, "PingPong", 65536)
    assert (r["mean"], r["bandwidth_mbps"], r["extra"]["repetitions"]) == (11.80, 5553.72, 640)
    assert (r["metric"], r["unit"], r["better"], r["status"]) == ("time", "us", "lower", "ok")
    assert row(res, "PingPing", 1024)["mean"] == 1.55
    r = row(res, "Sendrecv", 65536)
    assert (r["mean"], r["statistic"], r["bandwidth_mbps"]) == (18.03, "t_avg", 7270.93)
    r = row(res, "Exchange", 16384)
    assert (r["mean"], r["extra"]["t_min_us"], r["extra"]["t_max_us"]) == (19.30, 19.30, 19.31)
    r = row(res, "Allreduce", 8192)
    assert (r["mean"], r["extra"]["t_min_us"], r["extra"]["t_max_us"]) == (17.11, 14.72, 19.51)
    assert r.get("bandwidth_mbps") is None          # IMB prints none for collectives
    r = row(res, "Barrier", 0)
    assert (r["mean"], r["extra"]["sizeless"], r["extra"]["t_min_us"]) == (0.24, True, 0.23)
    for r in res.records:
        assert r["n"] is None and "samples" not in r and r.get("median") is None


def test_all_mpich_spot_values():
    res = load("imb2021.11-mpich4.0.2-np2-all.txt")
    assert (res.blocks, len(res.records), res.problems) == (19, 315, [])
    assert (row(res, "PingPong", 65536)["mean"], row(res, "PingPong", 65536)["bandwidth_mbps"]) \
        == (15.47, 4235.59)
    assert row(res, "Sendrecv", 65536)["bandwidth_mbps"] == 9987.30
    assert row(res, "Allreduce", 65536)["mean"] == 97.66
    assert row(res, "Reduce", 65536)["extra"]["t_max_us"] == 94.86


@pytest.mark.parametrize("name, t, bw", [
    ("imb2021.11-openmpi4.1.4-np2-pingpong-btl-tcp.txt", 8775.88, 477.94),
    ("imb2021.11-openmpi4.1.4-np2-pingpong-btl-vader.txt", 4859.13, 863.18),
    ("imb2021.11-mpich4.0.2-np2-pingpong.txt", 907.25, 4623.11),
])
def test_pingpong_files(name, t, bw):
    res = load(name)
    assert len(res.records) == 24 and res.problems == []
    r = row(res, "PingPong", 4194304)
    assert (r["mean"], r["bandwidth_mbps"], r["extra"]["repetitions"]) == (t, bw, 10)


def test_npmin_gives_one_block_per_np():
    res = load("imb2021.11-openmpi4.1.4-np4-npmin2-allreduce.txt")
    assert res.blocks == 2 and len(res.records) == 28
    assert sorted({r["np"] for r in res.records}) == [2, 4]
    assert row(res, "Allreduce", 0, 2)["mean"] == 0.09
    assert row(res, "Allreduce", 16384, 4)["mean"] == 83.67
    assert row(res, "Allreduce", 16384, 4)["extra"]["t_min_us"] == 81.86


def test_np3_collectives_openmpi():
    res = load("imb2021.11-openmpi4.1.4-np3-collectives.txt")
    assert res.blocks == 26 and res.problems == []
    assert row(res, "Barrier", 0, 3)["mean"] == 7.50
    assert row(res, "Barrier", 0, 2)["mean"] == 3.27
    assert row(res, "Bcast", 16384, 3)["mean"] == 16.83


def test_truncated_openmpi_keeps_complete_rows_and_says_where():
    res = load("imb2021.11-openmpi4.1.4-np2-all-truncated-timeout3.txt")
    assert res.truncated and res.truncated_at == 135
    assert len(res.records) == 71 and res.blocks == 3
    assert row(res, "PingPong", 4194304)["mean"] == 2763.26
    last = res.records[-1]
    assert (last["benchmark"], last["size"], last["mean"]) == ("Sendrecv", 2097152, 911.94)
    assert last["extra"]["line"] == 135
    (msg,) = res.problem_lines("f.txt")
    assert msg.startswith("f.txt:135: output ends inside the Sendrecv table (#processes = 2)")
    assert "last size 2097152" in msg and "never started: Exchange" in msg


def test_truncated_mpich():
    res = load("imb2021.11-mpich4.0.2-np2-all-truncated-timeout3.txt")
    assert res.truncated and len(res.records) == 137
    last = res.records[-1]
    assert (last["benchmark"], last["size"], last["mean"]) == ("Reduce", 524288, 604.57)
    assert "Reduce table" in res.problems[-1].message


def test_imb_timeouts_and_killed_run():
    res = load("imb2021.11-mpich4.0.2-np3-collectives.txt")
    assert res.truncated and len(res.records) == 73
    outs = [r for r in res.records if r["status"] == "time-out"]
    assert [(r["benchmark"], r["size"], r["np"]) for r in outs] == [
        ("Allreduce", 16, 3), ("Reduce", 16, 3), ("Reduce_scatter", 16, 3)]
    assert outs[0]["mean"] is None and "Time limit" in outs[0]["reason"]
    assert outs[0]["statistic"] == "t_avg" and outs[0]["metric"] == "time"
    assert row(res, "Allreduce", 8, 3)["mean"] == 3988.76
    assert row(res, "Allgather", 2, 3)["mean"] == 6856.49
    assert "BAD TERMINATION" in res.problems[-1].message
    assert "never started: Allgatherv" in res.problems[-1].message


def test_uniband_biband_bandwidth_rows():
    res = load("imb2021.11-openmpi4.1.4-np2-uniband-biband.txt")
    assert not res.truncated and res.problems == []
    r = row(res, "Uniband", 1048576)
    assert (r["metric"], r["unit"], r["better"]) == ("bandwidth", "MB/s", "higher")
    assert (r["mean"], r["bandwidth_mbps"], r["msg_rate"]) == (2238.70, 2238.70, 2135)
    r = row(res, "Biband", 524288)
    assert (r["status"], r["metric"], r["mean"]) == ("time-out", "bandwidth", None)
    res = load("imb2021.11-mpich4.0.2-np2-uniband-biband.txt")
    assert row(res, "Biband", 524288)["bandwidth_mbps"] == 15072.48
    assert row(res, "Biband", 524288)["msg_rate"] == 28748
    assert row(res, "Biband", 1048576)["status"] == "time-out"


def test_nbc_overlap_columns():
    res = load("imb2021.11-openmpi4.1.4-np2-nbc-iallreduce-ibarrier.txt")
    assert res.tool == "IMB-NBC" and res.problems == []
    r = row(res, "Iallreduce", 4)
    assert (r["mean"], r["statistic"]) == (1.75, "t_pure")
    assert r["extra"] == {"repetitions": 1000, "line": 37, "t_ovrl_us": 2.83, "t_cpu_us": 1.63,
                          "overlap_pct": 31.17}
    r = row(res, "Ibarrier", 0)
    assert (r["mean"], r["extra"]["sizeless"], r["extra"]["t_ovrl_us"]) == (0.82, True, 1.52)


# -- constructed tables for column sets without a capture ------------------------------------
def fmt(*vals) -> str:
    return "".join(f"{v:13d}" if isinstance(v, int) else f"{v:13.2f}" for v in vals)


def imb_text(version: str, part: str, body: list[str], finish: bool = True) -> str:
    head = ["#" + "-" * 64, f"#    Intel(R) MPI Benchmarks {version}, {part} part",
            "#" + "-" * 64, "# MPI Version           : 3.1", ""]
    return "\n".join(head + body + (["", "", "# All processes entering MPI_Finalize"]
                                    if finish else [])) + "\n"


def test_imb4_mbytes_are_converted_from_2_20():
    body = ["#" + "-" * 50, "# Benchmarking PingPong ", "# #processes = 2 ", "#" + "-" * 50,
            "       #bytes #repetitions      t[usec]   Mbytes/sec",
            fmt(0, 1000, 0.50, 0.00), fmt(1048576, 40, 100.00, 10000.00)]
    res = parse_imb(imb_text("4.1", "MPI-1", body).replace("Intel(R)", "Intel (R)"))
    assert (res.tool, res.version) == ("IMB-MPI1", "4.1")
    r = res.records[1]
    assert r["bandwidth_mbps"] == pytest.approx(10000.00 * 1048576 / 1e6)
    assert r["extra"]["mbytes_per_sec_printed"] == 10000.00
    res = parse_imb(imb_text("2018 Update 1", "MPI-1", body))
    assert res.version == "2018 Update 1" and res.records[1]["bandwidth_mbps"] == 10000.00


def test_multi_group_column_and_defects_and_failures():
    body = ["#" + "-" * 50, "# Benchmarking Multi-PingPong ",
            "# ( 2 groups of 2 processes each running simultaneous ) ",
            "# Group  0:     0    1 ", "# Group  1:     2    3 ", "#" + "-" * 50,
            "        Group       #bytes #repetitions      t[usec]   Mbytes/sec      defects",
            # in -multi mode IMB prints an empty line before each size's group rows
            "", fmt(0, 0, 1000, 0.60, 0.00, 0.00), fmt(1, 0, 1000, 0.70, 0.00, 0.00),
            "", fmt(0, 1024, 1000, 1.50, 682.67, 0.00), fmt(1, 1024, 1000, 1.60, 640.00, 2.00),
            "", f"{0:13d}{1 << 30:13d} out-of-mem.; needed X=   4.001 GB; use flag \"-mem X\" or "
            "MAX_MEM_USAGE>=X (IMB_mem_info.h)",
            f"{1:13d}{1 << 30:13d} int-overflow.; The production rank*size caused int overflow "
            "for given sample"]
    res = parse_imb(imb_text("2021.3", "MPI-1", body))
    assert res.problems == []
    assert {r["benchmark"] for r in res.records} == {"Multi-PingPong"}
    g1 = [r for r in res.records if r["extra"].get("group") == 1]
    assert [r["size"] for r in g1] == [0, 1024, 1 << 30]
    assert all(r["np"] == 2 and r["extra"]["n_groups"] == 2 for r in res.records)
    bad = g1[1]
    assert bad["status"] == "validation-failed" and bad["extra"]["defects"] == 2.0
    oom = [r for r in res.records if r["status"] == "out-of-mem"][0]
    assert oom["size"] == 1 << 30 and oom["extra"]["group"] == 0 and "needed X" in oom["reason"]
    assert [r for r in res.records if r["status"] == "int-overflow"][0]["extra"]["group"] == 1


def test_rma_and_ext_modes():
    body = ["#" + "-" * 50, "# Benchmarking Truly_passive_put ", "# #processes = 2 ",
            "#" + "-" * 50, "#", "#    MODE: NON-AGGREGATE ", "#",
            "       #bytes #repetitions t_pure[usec] t_ovrl[usec]",
            fmt(8, 100, 5.00, 7.50), "",
            "#" + "-" * 50, "# Benchmarking Unidir_put ", "# #processes = 2 ", "#" + "-" * 50,
            "#", "#    MODE: AGGREGATE ", "#",
            "       #bytes #repetitions      t[usec]   Mbytes/sec", fmt(8, 1000, 0.30, 26.67), "",
            "#" + "-" * 50, "# Benchmarking Unidir_put ", "# #processes = 2 ", "#" + "-" * 50,
            "#", "#    MODE: NON-AGGREGATE ", "#",
            "       #bytes #repetitions      t[usec]   Mbytes/sec", fmt(8, 1000, 0.90, 8.89)]
    res = parse_imb(imb_text("2019 Update 6", "MPI-RMA", body))
    assert res.tool == "IMB-RMA" and res.problems == []
    r = res.records[0]
    assert (r["benchmark"], r["mean"], r["statistic"], r["extra"]["t_ovrl_us"]) == (
        "Truly_passive_put:non-aggregate", 5.00, "t_pure", 7.50)
    assert [(r["benchmark"], r["mean"]) for r in res.records[1:]] == [
        ("Unidir_put:aggregate", 0.30), ("Unidir_put:non-aggregate", 0.90)]


def test_header_without_benchmarking_line_is_not_guessed():
    body = ["#" + "-" * 50, "# Benchmarking PingPong ", "# #processes = 2 ", "#" + "-" * 50,
            "       #bytes #repetitions      t[usec]   Mbytes/sec", fmt(0, 1000, 0.5, 0.0), "",
            "#" + "-" * 50, "# #processes = 2 ", "#" + "-" * 50,
            "       #bytes #repetitions      t[usec]   Mbytes/sec", fmt(0, 1000, 0.6, 0.0)]
    res = parse_imb(imb_text("2021.11", "MPI-1", body))
    assert len(res.records) == 1
    assert any("without a '# Benchmarking" in p.message for p in res.problems)
    assert any("numbers outside a table" in p.message for p in res.problems)


def test_garbage_row_inside_table_is_reported_not_kept():
    body = ["#" + "-" * 50, "# Benchmarking PingPong ", "# #processes = 2 ", "#" + "-" * 50,
            "       #bytes #repetitions      t[usec]   Mbytes/sec", fmt(0, 1000, 0.5, 0.0),
            "[vm:1234] some launcher warning", fmt(1, 1000, 0.5, 2.0),
            "            2         1000         0.5x         4.00"]
    res = parse_imb(imb_text("2021.11", "MPI-1", body))
    assert [r["size"] for r in res.records] == [0, 1]
    lines = res.problem_lines("x")
    assert lines[0].startswith("x:12: expected a row of 4 numbers (#bytes #repetitions t[usec] "
                               "Mbytes/sec)")
    assert lines[1].startswith("x:14: expected a row of 4 numbers")


def test_cut_last_line_is_not_trusted():
    body = ["#" + "-" * 50, "# Benchmarking PingPong ", "# #processes = 2 ", "#" + "-" * 50,
            "       #bytes #repetitions      t[usec]   Mbytes/sec", fmt(0, 1000, 0.5, 0.0),
            fmt(1, 1000, 0.5, 2.0)[:-1]]
    text = imb_text("2021.11", "MPI-1", body, finish=False).rstrip("\n")
    res = parse_imb(text)
    assert [r["size"] for r in res.records] == [0]
    assert res.truncated
    assert "last line is incomplete" in res.problems[0].message


def test_crlf_and_old_title_and_launcher_noise():
    data = (DATA / "imb2021.11-mpich4.0.2-np2-pingpong.txt").read_text()
    res = parse_imb("\ufeff[vm:01] warning: something\r\n" + data.replace("\n", "\r\n"))
    assert len(res.records) == 24 and res.problems == []
    assert res.records[-1]["extra"]["line"] == 59            # one extra line at the top
    old = data.replace("Intel(R) MPI Benchmarks 2021.11, MPI-1 part",
                       "Intel (R) MPI Benchmark Suite V3.2.4, MPI-1 part")
    res = parse_imb(old)
    assert (res.tool, res.version) == ("IMB-MPI1", "3.2.4")
    r = res.records[-1]
    assert r["bandwidth_mbps"] == pytest.approx(4623.11 * 1.048576)
    assert r["extra"]["mbytes_unit_printed"] == "2^20 bytes/s"


def test_multi_0_rank_order_and_a_sizeless_time_out():
    """Layouts of IMB_output.c without a capture: `-multi 0` (Multi- name, groups line, one
    aggregated t_min/t_max/t_avg row per size, no Group column), `-map 2x2` (rank order
    lines after '#processes = 4'), and a failure note in a table without #bytes (IMB prints
    the size anyway)."""
    body = ["#" + "-" * 50, "# Benchmarking Multi-PingPong ",
            "# ( 2 groups of 2 processes each running simultaneous ) ",
            "# Group  0:     0    1 ", "# ", "# Group  1:     2    3 ", "# ", "#" + "-" * 50,
            "       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]   Mbytes/sec",
            fmt(0, 1000, 0.40, 0.60, 0.50, 0.00), fmt(1024, 1000, 1.40, 1.60, 1.50, 640.00),
            "", "#" + "-" * 50, "# Benchmarking Barrier ",
            "# #processes = 4; rank order (rowwise): ", "#     0    1 ", "# ",
            "#     2    3 ", "# ", "#" + "-" * 50,
            " #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]",
            f"{0:13d} time-out.; Time limit (secs_per_sample * msg_sizes_list_len) is over; "
            "use \"-time X\" or SECS_PER_SAMPLE=X (IMB_settings.h) to increase time limit."]
    res = parse_imb(imb_text("2021.6", "MPI-1", body))
    assert res.problems == []
    multi = [r for r in res.records if r["benchmark"] == "Multi-PingPong"]
    assert [(r["size"], r["np"], r["mean"], r["bandwidth_mbps"]) for r in multi] == [
        (0, 2, 0.50, 0.0), (1024, 2, 1.50, 640.00)]
    assert multi[1]["extra"]["n_groups"] == 2 and "group" not in multi[1]["extra"]
    (bar,) = [r for r in res.records if r["benchmark"] == "Barrier"]
    assert (bar["np"], bar["status"], bar["size"], bar["mean"]) == (4, "time-out", 0, None)
    assert bar["extra"]["sizeless"] and bar["statistic"] == "t_avg"


@pytest.mark.parametrize("title, factor", [
    ("Intel (R) MPI Benchmarks 2017 update 2, MPI-1 part", 1.048576),
    ("Intel (R) MPI Benchmarks 2017, MPI-1 part", 1.048576),
    ("Intel (R) MPI Benchmarks 4.0 Update 2, MPI-1 part", 1.048576),
    ("Intel(R) MPI Benchmarks 2018, MPI-1 part", 1.0),
    ("Intel(R) MPI Benchmarks 2019 Update 6, MPI-1 part", 1.0),
])
def test_units_follow_the_version_line(title, factor):
    data = (DATA / "imb2021.11-mpich4.0.2-np2-pingpong.txt").read_text()
    res = parse_imb(data.replace("Intel(R) MPI Benchmarks 2021.11, MPI-1 part", title))
    assert res.tool == "IMB-MPI1" and res.problems == []
    assert res.records[-1]["bandwidth_mbps"] == pytest.approx(4623.11 * factor)


def test_failure_note_with_garbage_bytes_is_not_a_row():
    """Found by hypothesis: 'time-out\\x00.;' was stored as a time-out row."""
    data = (DATA / "imb2021.11-openmpi4.1.4-np2-uniband-biband.txt").read_bytes()
    bad = data.replace(b"524288 time-out.;", b"524288 time-out\x00.;")
    res = parse_bytes(bad)
    assert not [r for r in res.records if r["status"] == "time-out"]
    (p,) = res.problems
    assert p.line == 84 and "or an IMB failure note" in p.message
