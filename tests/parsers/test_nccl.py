"""nccl-tests parser (text and JSON). The samples in tests/data/nccl are CONSTRUCTED from the
documented output format (see tests/data/nccl/README.md): no GPU was available to capture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpibench.parsers.detect import parse_bytes
from mpibench.parsers.nccl import parse_nccl_json, parse_nccl_text

DATA = Path(__file__).parents[1] / "data" / "nccl"
TEXT = "nccl-tests2.13.10-all_reduce_perf-8gpu.txt"
JSON = "nccl-tests-json2-all_reduce_perf-8gpu.json"
OLD = "nccl-tests2.x-old-layout-all_reduce_perf-2gpu.txt"


def get(res, bench, size):
    (r,) = [r for r in res.records if r["benchmark"] == bench and r["size"] == size]
    return r


def test_text_out_of_place_and_in_place():
    res = parse_bytes((DATA / TEXT).read_bytes())
    assert (res.format, res.tool, res.version) == ("nccl", "nccl-tests", "2.13.10")
    assert res.problems == [] and not res.truncated and len(res.records) == 50
    assert res.meta["ranks"] == 8 and res.meta["program"] == "all_reduce_perf"
    r = get(res, "nccl_all_reduce", 134217728)
    assert (r["mean"], r["bandwidth_mbps"], r["busbw_mbps"], r["np"]) == (
        1158.45, 115860.0, 202750.0, 8)
    assert r["extra"]["count"] == 33554432 and r["extra"]["wrong"] == 0
    assert r["extra"]["placement"] == "out-of-place" and r["statistic"] == "mean"
    r = get(res, "nccl_all_reduce_inplace", 4194304)
    assert (r["mean"], r["extra"]["algbw_gbps"], r["extra"]["busbw_gbps"]) == (48.58, 86.34,
                                                                               151.09)


def test_json_matches_text():
    res = parse_bytes((DATA / JSON).read_bytes())
    assert res.format == "nccl-json" and res.problems == [] and len(res.records) == 50
    text = parse_bytes((DATA / TEXT).read_bytes())
    for a, b in zip(res.records, text.records, strict=True):
        assert (a["benchmark"], a["size"], a["mean"], a["bandwidth_mbps"], a["busbw_mbps"]) == (
            b["benchmark"], b["size"], b["mean"], b["bandwidth_mbps"], b["busbw_mbps"])
    assert res.meta["nccl_library"] == 21903 and res.meta["ranks"] == 8


def test_old_layout_without_program_name():
    res = parse_bytes((DATA / OLD).read_bytes())
    assert res.format == "nccl" and len(res.records) == 36
    r = get(res, "nccl_unknown", 1048576)
    assert r["np"] == 2 and r["extra"]["wrong"] == 0.0
    assert any("does not name the test program" in p.message for p in res.problems)


def test_wrong_elements_fail_the_row_and_truncation_is_reported():
    lines = (DATA / TEXT).read_text().splitlines(keepends=True)
    i = next(k for k, ln in enumerate(lines) if ln.lstrip().startswith("1024 "))
    lines[i] = lines[i].rstrip("\n")[:-1] + "7\n"          # in-place #wrong 0 -> 7
    cut = next(k for k, ln in enumerate(lines) if ln.lstrip().startswith("2048 "))
    res = parse_nccl_text("".join(lines[:cut + 1]))
    bad = get(res, "nccl_all_reduce_inplace", 1024)
    assert bad["status"] == "validation-failed" and bad["extra"]["wrong"] == 7
    assert get(res, "nccl_all_reduce", 1024)["status"] == "ok"
    assert res.truncated and "Avg bus bandwidth" in res.problems[-1].message
    assert max(r["size"] for r in res.records) == 2048


def test_truncated_json_keeps_complete_entries():
    text = (DATA / JSON).read_text()
    k = text.index('{"size":4096')
    res = parse_nccl_json(text[:k + 30])
    assert res.truncated
    assert max(r["size"] for r in res.records) == 2048 and len(res.records) == 2 * 9
    assert "kept the 9 complete 'results' entries" in res.problems[0].message


def test_json_bad_values_are_skipped_with_a_problem():
    doc = json.loads((DATA / JSON).read_text())
    doc["results"][0]["out_of_place"]["time"] = "nan"
    doc["results"][1]["size"] = -5
    res = parse_nccl_json(json.dumps(doc))
    assert len(res.records) == 50 - 1 - 2
    assert any("results[0].out_of_place" in p.message for p in res.problems)
    assert any("results[1]: 'size' -5" in p.message for p in res.problems)


@pytest.mark.parametrize("text", ["{}", "[1, 2]", '{"results": 5}', "{not json"])
def test_json_shapes_never_crash(text):
    res = parse_nccl_json(text)
    assert res.records == [] and res.problems


def test_several_types_and_ops_are_named_apart_and_repeats_skipped():
    text = (DATA / TEXT).read_text()
    rows = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")][:3]
    extra = [ln.replace("   float     sum", "    half     max") for ln in rows]
    head, _, tail = text.partition(rows[0])
    doc = head + "\n".join(extra) + "\n" + rows[0] + tail
    doc = doc.replace(rows[2], rows[2] + "\n" + rows[2], 1)
    res = parse_nccl_text(doc)
    names = {r["benchmark"] for r in res.records}
    assert {"nccl_all_reduce:float:sum", "nccl_all_reduce:half:max",
            "nccl_all_reduce_inplace:half:max"} <= names
    assert len(res.records) == 50 + 6
    assert any("given twice" in p.message for p in res.problems)


def test_per_iteration_columns_text_and_json():
    """nccl-tests -I adds i_min i_max i_p99 i_cv% after each side's #wrong (util.cu
    writeResultHeader / writePerIterReport); they go to extra, the row stays the mean."""
    lines = (DATA / TEXT).read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.startswith("#") and "algbw" in ln)
    names = ("time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%")
    lines[k] = (f"# {'size':>10}  {'count':>12}  {'type':>8}  {'redop':>6}  {'root':>6}"
                + "".join(f"  {c:>7}" for c in names * 2))
    row = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("1024 "))
    toks = lines[row].split()
    per = ["11.00", "13.00", "12.90", "3.10"]
    lines[row] = "  ".join(toks[:9] + per + toks[9:] + ["11.10", "13.50", "13.20", "4.00"])
    for i, ln in enumerate(lines):                   # the other rows get the columns too
        if i != row and ln.strip() and not ln.startswith("#"):
            t = ln.split()
            lines[i] = "  ".join(t[:9] + per + t[9:] + per)
    res = parse_nccl_text("\n".join(lines) + "\n")
    assert res.problems == [] and len(res.records) == 50
    r = get(res, "nccl_all_reduce_inplace", 1024)
    assert (r["mean"], r["extra"]["t_min_us"], r["extra"]["t_max_us"], r["extra"]["p99_us"],
            r["extra"]["cv_pct"]) == (11.36, 11.10, 13.50, 13.20, 4.00)
    assert get(res, "nccl_all_reduce", 1024)["extra"]["t_min_us"] == 11.00

    doc = json.loads((DATA / JSON).read_text())
    doc["results"][0]["out_of_place_per_iter"] = {
        "min_us": 11.0, "max_us": 14.0, "avg_us": 11.5, "p50_us": 11.4, "p95_us": 12.0,
        "p99_us": 13.5, "stdev_us": 0.4, "cv_pct": 3.5, "times_us": [11.0, 14.0]}
    doc["results"][0]["in_place_per_iter"] = {"min_us": "nan", "p99_us": -1}
    res = parse_nccl_json(json.dumps(doc))
    size = doc["results"][0]["size"]
    x = get(res, "nccl_all_reduce", size)["extra"]
    assert (x["t_min_us"], x["p50_us"], x["p99_us"], x["stdev_us"]) == (11.0, 11.4, 13.5, 0.4)
    assert "times_us" not in x and get(res, "nccl_all_reduce", size)["n"] is None
    y = get(res, "nccl_all_reduce_inplace", size)["extra"]
    assert "t_min_us" not in y and "p99_us" not in y


def test_garbage_in_type_or_redop_gives_no_row():
    lines = (DATA / TEXT).read_text().splitlines(keepends=True)
    i = next(k for k, ln in enumerate(lines) if ln.lstrip().startswith("1024 "))
    j = next(k for k, ln in enumerate(lines) if ln.lstrip().startswith("2048 "))
    lines[i] = lines[i].replace(" sum ", " s\ufffdm ")
    lines[j] = lines[j].replace(" float ", " flo\u00e4t ")
    res = parse_nccl_text("".join(lines))
    assert {r["size"] for r in res.records}.isdisjoint({1024, 2048})
    assert [p.line for p in res.problems] == [i + 1, j + 1]


def test_cputime_and_timestamp_columns():
    """nccl-tests -C prints 'cputime' for both sides, -S a trailing 'timestamp' column
    (util.cu writeResultHeader / writeTimestamp: one 'YYYY-mm-dd HH:MM:SS' per row)."""
    lines = (DATA / TEXT).read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.startswith("#") and "algbw" in ln)
    lines[k] = lines[k].replace(" time ", " cputime ").rstrip() + "  timestamp"
    for i, ln in enumerate(lines):
        if ln.strip() and not ln.startswith("#"):
            lines[i] = ln.rstrip() + "  2025-06-02 14:03:12"
    res = parse_nccl_text("\n".join(lines) + "\n")
    assert res.problems == [] and len(res.records) == 50
    r = get(res, "nccl_all_reduce_inplace", 4194304)
    assert (r["mean"], r["busbw_mbps"]) == (48.58, 151090.0)
