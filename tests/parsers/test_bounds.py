"""Values outside physical bounds (parsers/base.py: out_of_bounds) and damaged lines that used
to be read silently, each on a real captured output with one line changed.

A finite but absurd figure (a latency of 1e30 us, a bus bandwidth of 1e20 GB/s, a time of 0)
is kept as the file has it, with status "out-of-bounds", the reason, extra "out_of_bounds"
and a warning at its line; comparisons leave such rows out like any row that is not "ok".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.parsers.base import MAX_BANDWIDTH_MBPS, MAX_COUNT, MAX_TIME_US, out_of_bounds
from mpibench.parsers.core_jsonl import parse_core_jsonl
from mpibench.parsers.detect import parse_bytes

DATA = Path(__file__).parents[1] / "data"
IMB_TCP = DATA / "imb" / "imb2021.11-openmpi4.1.4-np2-pingpong-btl-tcp.txt"
OSU_BW = DATA / "osu" / "osu7.4-openmpi4.1.4-np2-osu_bw.txt"
OSU_IALL = DATA / "osu" / "osu7.4-openmpi4.1.4-np3-osu_iallreduce.txt"
OSU_MBW = DATA / "osu" / "osu7.4-openmpi4.1.4-np2-osu_mbw_mr.txt"
OSU_LAT = DATA / "osu" / "osu7.4-mpich4.0.2-np2-osu_latency.txt"
NCCL = DATA / "nccl" / "nccl-tests2.13.10-all_reduce_perf-8gpu.txt"
NCCL_JSON = DATA / "nccl" / "nccl-tests-json2-all_reduce_perf-8gpu.json"
NP_OUT = DATA / "netpipe" / "netpipe3.7.2-openmpi4.1.4-np2.out"
NP_STDOUT = DATA / "netpipe" / "netpipe3.7.2-openmpi4.1.4-np2.stdout.txt"
CORE = DATA / "core" / "mpich-np2-ok.jsonl"


def _edit(path: Path, old: str, new: str) -> bytes:
    text = path.read_text()
    assert text.count(old) == 1, old
    return text.replace(old, new).encode()


def _at(res, line):
    return [r for r in res.records if r["extra"].get("line") == line]


def _warned(res, line, *words):
    msgs = [p.message for p in res.problems if p.line == line]
    assert msgs and all(any(w in m for m in msgs) for w in words), res.problem_lines("f")
    return msgs


def test_imb_latency_1e30_is_kept_flagged_and_warned():
    res = parse_bytes(_edit(IMB_TCP, "1024         1000        69.79        14.67",
                            "1024         1000        1e30        14.67"))
    (r,) = _at(res, 46)
    assert r["mean"] == 1e30 and r["status"] == "out-of-bounds"
    assert "time 1e+30 us > 3.6e+09 us" in r["reason"] and r["extra"]["out_of_bounds"]
    _warned(res, 46, "out-of-bounds", "PingPong size 1024")
    assert res.ok_rows == len(res.records) - 1        # the rest of the table is untouched


def test_imb_time_of_zero_is_flagged():
    res = parse_bytes(_edit(IMB_TCP, "1024         1000        69.79        14.67",
                            "1024         1000         0.00        14.67"))
    (r,) = _at(res, 46)
    assert r["status"] == "out-of-bounds" and "0 us" in r["reason"]


def test_imb_unicode_digits_are_not_numbers():
    # int('1٣00') is 1300 and float('٣.5') 3.5 in Python: the row must not be read
    for bad in ("1024         1\u066300        69.79        14.67",
                "1024         1000        6\uff19.79        14.67",
                "1024         1000        69.79        1\u00b2.67"):
        res = parse_bytes(_edit(IMB_TCP, "1024         1000        69.79        14.67", bad))
        assert not _at(res, 46)
        _warned(res, 46, "line skipped")


def test_imb_damaged_version_is_not_read_as_an_old_one():
    # 'V2x21.11' once matched as version 2 (< 2018) and converted every Mbytes/sec by 2^20/10^6
    res = parse_bytes(_edit(IMB_TCP, "Intel(R) MPI Benchmarks 2021.11, MPI-1 part",
                            "Intel(R) MPI Benchmarks 2x21.11, MPI-1 part"))
    (r,) = _at(res, 46)
    assert r["bandwidth_mbps"] == 14.67 and "mbytes_per_sec_printed" not in r["extra"]
    assert any("is not a version number" in p.message for p in res.problems)


def test_osu_bandwidth_1e20_is_flagged():
    res = parse_bytes(_edit(OSU_BW, "1024                 1675.96", "1024                 1e20"))
    (r,) = _at(res, 15)
    assert r["bandwidth_mbps"] == 1e20 and r["status"] == "out-of-bounds"
    assert f"> {MAX_BANDWIDTH_MBPS:.6g} MB/s" in r["reason"]
    _warned(res, 15, "out-of-bounds")


def test_osu_overlap_and_window_and_title_damage_is_reported():
    row = "1024                   26.47             10.54              9.39              0.00"
    res = parse_bytes(_edit(OSU_IALL, row, row[:-4] + "1e20"))
    (r,) = _at(res, 17)
    assert r["status"] == "out-of-bounds" and "overlap" in r["reason"]
    # 'window size: 1e400' was read as a window of 1
    res = parse_bytes(_edit(OSU_MBW, "window size: 64", "window size: 1e400"))
    assert all("window_size" not in r["extra"] for r in res.records)
    _warned(res, 2, "window size '1e400'")
    # without its pairs line osu_mbw_mr has no np: said, not left to guess
    res = parse_bytes(_edit(OSU_MBW, "# [ pairs: 1 ] [ window size: 64 ]\n", ""))
    assert all(r["np"] is None for r in res.records)
    _warned(res, 1, "pairs")
    # a damaged title gives a name nobody asked for: said at the title line
    res = parse_bytes(_edit(OSU_LAT, "# OSU MPI Latency Test", "# OSU MPI Lat!ncy Test"))
    _warned(res, 2, "not one this version knows")


def test_nccl_busbw_wrong_count_root_and_settings_line():
    row = ("        1024           256     float     sum      -1    11.85    0.09    0.15       0"
           "    11.36    0.09    0.16       0")
    res = parse_bytes(_edit(NCCL, row, row.replace("0.15", "1e20")))
    r = next(r for r in _at(res, 25) if r["extra"]["placement"] == "out-of-place")
    assert r["busbw_mbps"] == 1e23 and r["status"] == "out-of-bounds"
    _warned(res, 25, "bus bandwidth")
    # more wrong elements than the count: not a validation result, a damaged number
    res = parse_bytes(_edit(NCCL, row, row[:-1] + "99999"))
    r = next(r for r in _at(res, 25) if r["extra"]["placement"] == "in-place")
    assert "wrong elements out of 256" in r["reason"]
    # '३' (Devanagari 3) is not a count of wrong elements, '٣' not a root
    for bad in (row[:-1] + "\u0969", row.replace("-1", "\u0663")):
        res = parse_bytes(_edit(NCCL, row, bad))
        assert not _at(res, 25)
        _warned(res, 25, "line skipped")
    res = parse_bytes(_edit(NCCL, "# nThread 1 nGpus", "# nThrea! 1 nGpus"))
    _warned(res, 3, "settings line")


def test_nccl_json_huge_integer_is_not_a_crash():
    doc = json.loads(NCCL_JSON.read_text())
    doc["results"][0]["out_of_place"]["time"] = 10 ** 400
    doc["results"][1]["out_of_place"]["time"] = 1e30
    res = parse_bytes(json.dumps(doc).encode())
    assert any("not finite non-negative numbers" in p.message for p in res.problems)
    flagged = [r for r in res.records if r["status"] == "out-of-bounds"]
    assert [r["mean"] for r in flagged] == [1e30]


def test_netpipe_seconds_out_of_bounds_and_corrupted_index():
    res = parse_bytes(_edit(NP_OUT, "    1024 37148.290795   0.00000021",
                            "    1024 37148.290795   9999999.5"))
    (r,) = _at(res, 45)
    assert r["mean"] == 9999999.5e6 and r["status"] == "out-of-bounds"
    _warned(res, 45, "out-of-bounds")
    # a row whose index is damaged used to vanish without a word
    for bad in ("  7x:", "  \u0663:", "  ?:"):
        res = parse_bytes(_edit(NP_STDOUT, "  7:      13 bytes", bad + "      13 bytes"))
        assert 13 not in [r["size"] for r in res.records] and len(res.records) == 81
        _warned(res, 13, "row index", "line skipped")


def test_core_jsonl_bad_numbers_are_reported_not_raised():
    lines = CORE.read_text().splitlines()
    rec = json.loads(lines[2])
    assert rec["benchmark"] == "PingPong" and rec["size"] == 1024
    cases = {
        "huge int sample": dict(rec, samples_us=[10 ** 400]),
        "nan median": dict(rec, median_us=float("nan")),
        "string size": dict(rec, size="1024"),
        "negative np": dict(rec, np=-2),
        "list benchmark": dict(rec, benchmark=["PingPong"]),
        "samples not a list": dict(rec, samples_us="0.5"),
    }
    for what, bad in cases.items():
        text = "\n".join(lines[:2] + [json.dumps(bad)] + lines[3:]) + "\n"
        out = parse_core_jsonl(text, source="c.jsonl")
        assert [r for r in out.records if r["size"] == 1024 and r["benchmark"] == "PingPong"] \
            == [], what
        assert any(p.startswith("c.jsonl:3: result record skipped") for p in out.problems), what
    # a finite but absurd median is kept and flagged; a NaN in a new optional field is dropped
    text = "\n".join(lines[:2] + [json.dumps(dict(rec, median_us=1e30, lag1=float("nan")))]
                     + lines[3:]) + "\n"
    out = parse_core_jsonl(text, source="c.jsonl")
    (r,) = [r for r in out.records if r["size"] == 1024 and r["benchmark"] == "PingPong"]
    assert r["status"] == "out-of-bounds" and r["median"] == 1e30 and "lag1" not in r["extra"]
    assert any("c.jsonl:3:" in p and "lag1" in p for p in out.problems)
    # new optional fields of the core (lag-1 autocorrelation, per-call mode) are kept
    text = "\n".join(lines[:2] + [json.dumps(dict(rec, lag1_autocorr=-0.31,
                                                    per_call_mode="batched"))]
                     + lines[3:]) + "\n"
    out = parse_core_jsonl(text, source="c.jsonl")
    (r,) = [r for r in out.records if r["size"] == 1024 and r["benchmark"] == "PingPong"]
    assert r["status"] == "ok" and r["lag1"] == -0.31
    assert r["extra"]["per_call_mode"] == "batched"
    text = "\n".join(lines[:2] + [json.dumps(dict(rec, lag1_autocorr=7))] + lines[3:]) + "\n"
    assert any("lag1_autocorr" in p for p in parse_core_jsonl(text, source="c").problems)


@pytest.mark.parametrize("rec,expect", [
    ({"metric": "time", "mean": MAX_TIME_US}, []),
    ({"metric": "time", "mean": MAX_TIME_US * 1.01}, ["time"]),
    ({"metric": "bandwidth", "mean": 1.1e7, "bandwidth_mbps": 1.1e7}, ["bandwidth"]),
    ({"metric": "time", "mean": 3.0, "msg_rate": 2e10}, ["message rate"]),
    ({"metric": "time", "mean": 3.0, "size": 1 << 43}, ["size"]),
    ({"metric": "time", "mean": 3.0, "extra": {"repetitions": 10 ** 13}}, ["repetitions"]),
    ({"metric": "time", "mean": 3.0, "extra": {"t_max_us": 1e12}}, ["t_max_us"]),
    ({"metric": "time", "mean": 3.0, "extra": {"t_min_us": 0.0}}, []),
    ({"metric": "bandwidth", "mean": 0.0, "bandwidth_mbps": 0.0, "size": 0}, []),
])
def test_bounds(rec, expect):
    why = out_of_bounds(rec)
    assert len(why) == len(expect) and all(w.startswith(e) or e in w
                                           for w, e in zip(why, expect, strict=True)), why


def test_import_stores_the_flagged_row_and_compare_leaves_it_out(tmp_path, capsys):
    from mpibench.cli import main
    from mpibench.store import Store
    f = tmp_path / "pp.txt"
    f.write_bytes(_edit(IMB_TCP, "1024         1000        69.79        14.67",
                        "1024         1000        1e30        14.67"))
    db = tmp_path / "s.db"
    assert main(["import", str(f), "--db", str(db), "--label", "x"]) == 0
    err = capsys.readouterr().err
    assert f"{f}:46:" in err and "out-of-bounds" in err
    with Store(db) as store:
        rows = store.db.execute("SELECT status, mean, reason FROM results WHERE size=1024 "
                                "AND benchmark='PingPong'").fetchall()
    assert [tuple(r)[:2] for r in rows] == [("out-of-bounds", 1e30)]
    assert "outside physical bounds" in rows[0][2]


def test_imb_header_with_columns_out_of_order_is_not_a_header():
    # found by the fuzzer: '#bytes' and 'Msg/sec' swapped in Biband's header made every
    # message rate a size, without a word
    path = DATA / "imb" / "imb2021.11-openmpi4.1.4-np2-uniband-biband.txt"
    text = path.read_text()
    hdr = next(ln for ln in text.splitlines() if "Msg/sec" in ln)
    bad = hdr.replace("#bytes", "@@").replace("Msg/sec", "#bytes").replace("@@", "Msg/sec")
    res = parse_bytes(text.replace(hdr, bad, 1).encode())
    full = parse_bytes(path.read_bytes())
    assert len(res.records) < len(full.records)
    assert {r["size"] for r in res.records} <= {r["size"] for r in full.records}
    assert any("numbers outside a table" in p.message for p in res.problems)


def test_damaged_header_words_are_reported():
    """More cases the fuzzer found: a damaged word in a header changed what rows meant
    without a warning."""
    # OSU: re's \d took 'P5٣' as a percentile column named p5٣_us
    z = DATA / "osu" / "osu7.4-openmpi4.1.4-np3-osu_allreduce-f-z.txt"
    res = parse_bytes(_edit(z, "P50 Tail Lat(us)", "P5\u0663 Tail Lat(us)"))
    assert not any(k.startswith("p5\u0663") for r in res.records for k in r["extra"])
    assert res.problems
    # OSU: a damaged window item, and the pairs line after the rows
    res = parse_bytes(_edit(OSU_MBW, "window size: 64", "wiZdow size: 64"))
    _warned(res, 2, "pairs: N ] [ window size")
    text = OSU_MBW.read_text().replace("# [ pairs: 1 ] [ window size: 64 ]\n", "")
    res = parse_bytes((text + "# [ pairs: 1 ] [ window size: 64 ]\n").encode())
    assert any("np is unknown" in p.message for p in res.problems)
    # nccl-tests: '#!rong' is no column nccl-tests prints; 'Yfloat' no type; a damaged rank
    # line no longer silently counts one rank less; 'iters: 2²' is not 2 iterations
    res = parse_bytes(_edit(NCCL, "busbw  #wrong     time", "busbw  #!rong     time"))
    _warned(res, 16, "#!rong")
    row = ("        1024           256     float     sum      -1    11.85    0.09    0.15       0"
           "    11.36    0.09    0.16       0")
    res = parse_bytes(_edit(NCCL, row, row.replace("float", "Yfloat")))
    _warned(res, 25, "data type 'Yfloat'")
    rank = next(ln for ln in NCCL.read_text().splitlines() if "Rank  3" in ln)
    res = parse_bytes(_edit(NCCL, rank, rank.replace("device", "devi!e")))
    assert res.meta["ranks"] == 7 and any("not counted in np" in p.message
                                          for p in res.problems)
    res = parse_bytes(_edit(NCCL, "iters: 20 agg", "iters: 2\u00b2 agg"))
    assert all("iterations" not in r["extra"] for r in res.records)
    assert any("settings line" in p.message for p in res.problems)
    # IMB: '#processes = 2²' is not 2 processes
    res = parse_bytes(_edit(IMB_TCP, "# #processes = 2 ", "# #processes = 2\u00b2 "))
    assert all(r["np"] is None for r in res.records)
    assert any("np of these rows is unknown" in p.message for p in res.problems)


def test_osu_title_with_tabs_is_the_same_test():
    res = parse_bytes(_edit(OSU_LAT, "# OSU MPI Latency Test", "# OSU\tMPI\tLatency Test"))
    assert {r["benchmark"] for r in res.records} == {"osu_latency"}
    assert not any("not one this version knows" in p.message for p in res.problems)


_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10 ** 14),
    st.sampled_from([0.0, -0.0, 1e-9, MAX_TIME_US, MAX_TIME_US * 1.0000001,
                     MAX_BANDWIDTH_MBPS, MAX_BANDWIDTH_MBPS * 1.0000001,
                     int(MAX_TIME_US), int(MAX_TIME_US) + 1, MAX_COUNT, MAX_COUNT + 1]),
    st.none(), st.text(max_size=3), st.booleans())
_KEYS = ("mean", "median", "min", "max", "p5", "p95", "p99", "ci_low", "ci_high", "first",
         "std", "bandwidth_mbps", "busbw_mbps", "msg_rate", "size")
_EXTRA_KEYS = ("t_us", "x_mbps", "mbps_printed", "y_gbps", "repetitions", "iterations",
               "overlap_pct", "wrong", "count", "line", "tool")


# 600 derandomized examples in make test (33 s at load 5 with 3000); explore with
# MPIBENCH_HYPOTHESIS_PROFILE=explore and a larger max_examples by hand
@settings(max_examples=600, deadline=None)
@given(st.dictionaries(st.sampled_from(_KEYS), _NUMBERS),
       st.dictionaries(st.sampled_from(_EXTRA_KEYS), _NUMBERS),
       st.sampled_from([("time", "us"), ("bandwidth", "MB/s"), ("time", "s"), (None, None)]))
def test_the_fast_path_never_passes_a_record_the_full_check_flags(rec, extra, metric_unit):
    from mpibench.parsers.base import bounds_problems, plainly_in_bounds

    metric, unit = metric_unit
    if metric is not None:
        rec = {**rec, "metric": metric, "unit": unit}
    if extra:
        rec = {**rec, "extra": extra}
    if plainly_in_bounds(rec):
        assert bounds_problems(rec) == [], rec


def test_the_fast_path_takes_the_common_row():
    # else it saves nothing: a plain OSU latency row and a core row go the short way
    from mpibench.parsers.base import plainly_in_bounds

    assert plainly_in_bounds({"size": 8, "metric": "time", "unit": "us", "mean": 0.25,
                              "median": 0.25, "extra": {"line": 12}})
    assert plainly_in_bounds({"size": 1024, "mean": 1.5, "min": 0.0, "bandwidth_mbps": 680.0})
    assert not plainly_in_bounds({"size": 8, "mean": 0.0})


@pytest.mark.parametrize("capture", ["ttd/openmpi-np2-pingpong.jsonl", "mpich-np2-ok.jsonl"])
def test_every_row_of_a_real_core_output_takes_the_fast_path(capture):
    """The core's rows carry `iterations` (a count) and `batch_floor_us` (an int): the fast
    path sent every one of them the long way, so the check cost twice what it should on
    every launch. Real captured outputs: each row is plainly in bounds, and the full check
    agrees that nothing is out of them."""
    from mpibench.parsers.base import bounds_problems, plainly_in_bounds

    text = (Path(__file__).parents[1] / "data" / "core" / capture).read_text()
    rows = parse_core_jsonl(text).records
    assert rows and all(bounds_problems(r) == [] for r in rows)
    assert all(plainly_in_bounds(r) for r in rows), \
        [sorted((r.get("extra") or {}).items()) for r in rows if not plainly_in_bounds(r)][:1]
