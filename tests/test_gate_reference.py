"""Stored reference values (gate_reference.py) behind `mpibench check --reference FILE` and
`--write-reference FILE`: the format's refusals (file:line, the value, what was expected),
the writer, and the one-sided gate on seeded simulated launches through the real store and
CLI, and on known distributions (the real-run reference check is in test_check_real.py)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mpibench.cli import main as cli_main
from mpibench.stats import simulate as S


def _store(tmp_path, effect: float, seed: int, launches=5):
    rng = np.random.default_rng(seed)
    store, _ = S.build_store(tmp_path / "g.db", rng, launches=launches, sigma_l=0.02,
                             within=0.005, effect=effect, sizes=(0, 8, 64, 1024, 65536),
                             n_samples=(20, 40))
    store.close()
    return str(tmp_path / "g.db")


def test_written_reference_fails_a_slowdown_and_passes_its_own_set(tmp_path, capsys):
    db = _store(tmp_path, math.log(1 / 1.2), 51)        # b 20% slower than a
    ref = tmp_path / "ref.toml"
    assert cli_main(["check", "--db", db, "--variant", "a", "--write-reference",
                     str(ref)]) == 0
    capsys.readouterr()
    from mpibench import gate_reference
    parsed = gate_reference.load(str(ref))
    assert len(parsed.cells) == 5 and all(c.launches == 5 and c.sd_log > 0
                                          for c in parsed.cells)
    assert cli_main(["check", "--db", db, "--variant", "b", "--reference", str(ref)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"REGRESSION: b vs reference {ref}")
    assert cli_main(["check", "--db", db, "--variant", "a", "--reference", str(ref),
                     "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["status"] == "ok" and obj["tested"] == 6 and not obj["notes"]
    assert obj["reference"]["with_spread"] == 5
    # a margin beyond the slowdown lets it pass
    assert cli_main(["check", "--db", db, "--variant", "b", "--reference", str(ref),
                     "--margin", "40%"]) == 0
    capsys.readouterr()
    # a cell's own margin wins over --margin; the overall test stays at --margin
    ref.write_text(ref.read_text().replace("launches = 5\n", 'launches = 5\nmargin = "40%"\n'))
    assert cli_main(["check", "--db", db, "--variant", "b", "--reference", str(ref),
                     "--margin", "1%", "--json"]) == 1
    obj = json.loads(capsys.readouterr().out)
    assert [(f["cell"], f["margin"]) for f in obj["regressions"]] == [("overall", 0.01)]
    assert {f["margin"] for f in obj["findings"] if f["cell"] != "overall"} == {0.4}


def test_reference_without_spread_is_a_one_sample_test_and_says_so(tmp_path, capsys):
    db = _store(tmp_path, math.log(1 / 1.2), 52)
    ref = tmp_path / "ref.toml"
    cli_main(["check", "--db", db, "--variant", "a", "--write-reference", str(ref)])
    capsys.readouterr()
    import re
    bare = re.sub(r"(?m)^(sd_log|launches) = .*\n", "", ref.read_text())
    ref.write_text(bare)
    assert cli_main(["check", "--db", db, "--variant", "b", "--reference", str(ref),
                     "--json"]) == 1
    obj = json.loads(capsys.readouterr().out)
    assert obj["reference"]["without_spread"] == 5
    assert any("taken as exact" in n for n in obj["notes"])
    assert all(f["base_launches"] == 0 for f in obj["findings"])
    assert cli_main(["check", "--db", db, "--variant", "a", "--reference", str(ref)]) == 0
    out = capsys.readouterr().out
    assert "note: reference values without sd_log" in out and "(ref exact)" in out
    # launches without sd_log: still exact (a count says nothing of the spread)
    ref.write_text(ref.read_text().replace('better = "lower"\n', 'better = "lower"\nlaunches = 5\n'))
    assert cli_main(["check", "--db", db, "--variant", "a", "--reference", str(ref)]) == 0
    assert "(ref exact)" in capsys.readouterr().out


def _new_cell(size, values, ids=None, np_=2, params=None):
    """Set n's PingPong cell at `size` (np np_) with these launch medians (report.data's
    ResultCell, as load_cells makes it)."""
    from mpibench.report.data import ResultCell
    ids = ids or [f"r{i}" for i in range(len(values))]
    return ResultCell("n", "PingPong", size, np_, dict(params or {}), "time", "us", "lower",
                      launch_ids=list(ids), launch_values=[float(v) for v in values])


def _fake_cell(values, value_ids=None):
    return _new_cell(8, values, value_ids)


@pytest.mark.parametrize("with_spread", [False, True])
def test_reference_gate_holds_alpha_on_known_distributions(with_spread):
    """Null at the boundary (new launches exactly 1/(1+margin) slower than the reference,
    lognormal launches, 3 of them): the gate rejects in about alpha of the cases (exact
    reference: one-sample t, rejection = alpha; estimated reference from 4 launches with
    its sd_log: the two-component test, at most alpha)."""
    from mpibench import gate_reference as G
    rng = np.random.default_rng(7)
    # the two-component test inverts Cochran-Cox by bisection per trial: fewer trials
    margin, sigma, reps = 0.05, 0.1, (600 if with_spread else 1500)
    rejected = 0
    for _ in range(reps):
        if with_spread:
            base = rng.normal(0.0, sigma, 4)
            cell = G.RefCell("PingPong", 8, None, "time", "us", "lower",
                             math.exp(base.mean()), float(base.std(ddof=1)), 4)
        else:
            cell = G.RefCell("PingPong", 8, None, "time", "us", "lower", 1.0)
        ref = G.Reference("r.toml", cells=[cell])
        new = np.exp(rng.normal(math.log1p(margin), sigma, 3))
        res = G.judge(ref, {"k": {"n": _fake_cell(new)}}, ["n"], margin, 0.05)
        f = next(f for f in res.findings if f.cell == "8")
        rejected += f.p <= 0.05
    rate = rejected / reps
    assert (0.035 <= rate <= 0.065) if not with_spread else (0.02 <= rate <= 0.065), rate


BAD_REFERENCES = [
    ("[reference]\nformat = 2\n[[cell]]\n", ":2:", "format = 2"),
    ("[[cell]]\nbenchmark = \"P\"\nmetric = \"time\"\nunit = \"us\"\nbetter = \"lower\"\n"
     "value = -1\n", ":6:", "value = -1"),
    ("[[cell]]\nbenchmark = \"P\"\nmetric = \"time\"\nunit = \"us\"\nbetter = \"down\"\n"
     "value = 1\n", ":5:", "better = 'down'"),
    ("[[cell]]\nbenchmark = \"P\"\nmetric = \"time\"\nunit = \"us\"\nbetter = \"lower\"\n"
     "value = 1\nsd_log = 0.1\n", ":7:", "sd_log without launches"),
    ("[[cell]]\nbenchmark = \"P\"\nmetric = \"time\"\nunit = \"us\"\nbetter = \"lower\"\n"
     "value = 1\nmargin = \"200%\"\n", ":7:", "margin = '200%'"),
    ("[[cell]]\nbenchmark = \"P\"\nmetric = \"time\"\nunit = \"us\"\nbetter = \"lower\"\n"
     "value = 1\nsize = \"4Q\"\n", ":7:", "size = '4Q'"),
    ("[[cell]]\nbenchmark = \"P\"\nmetric = \"time\"\nunit = \"us\"\nbetter = \"lower\"\n"
     "value = 1\ncolour = 3\n", ":7:", "unknown key 'colour'"),
    ("[[cell]]\nbenchmark = \"P\"\nmetric = \"time\"\nunit = \"us\"\nvalue = 1\n", ":1:",
     "missing key better"),
    ("[[cell]]\nbenchmark = \"P\"\nmetric = \"time\"\nunit = \"us\"\nbetter = \"lower\"\n"
     "value = 1\n\n[[cell]]\nbenchmark = \"P\"\nmetric = \"time\"\nunit = \"us\"\n"
     "better = \"lower\"\nvalue = 2\n", ":9:", "the same cell as cell 1"),
    ("[[cell]]\nbenchmark = \"P\"\nvalue = = 1\n", ":3:", "invalid TOML"),
    ("[reference]\nstatistic = \"mode\"\n", ":2:", "statistic = 'mode'"),
    ("[reference]\nsource = \"x\"\ncore_options = { mode = [1] }\n", ":3:",
     "an inline table of the core's options"),
    # a name with a control character (the fuzzer's find: it was read, then never matched)
    ("[[cell]]\nbenchmark = \"Ping\\nPong\"\nmetric = \"time\"\nunit = \"us\"\n"
     "better = \"lower\"\nvalue = 1\n", ":2:", "no control characters"),
]


@pytest.mark.parametrize("text,line,what", BAD_REFERENCES)
def test_a_bad_reference_file_is_one_line_naming_file_line_and_value(tmp_path, capsys, text,
                                                                     line, what):
    db = _store(tmp_path, 0.0, 53, launches=2)
    ref = tmp_path / "bad.toml"
    ref.write_text(text)
    assert cli_main(["check", "--db", db, "--variant", "a", "--reference", str(ref)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert f"{ref}{line}" in err[0] and what in err[0] and "expected" in err[0], err[0]


def test_reference_unit_or_statistic_unlike_the_new_launches_is_refused(tmp_path, capsys):
    db = _store(tmp_path, 0.0, 54, launches=2)
    ref = tmp_path / "ref.toml"
    cli_main(["check", "--db", db, "--variant", "a", "--write-reference", str(ref)])
    text = ref.read_text()
    ref.write_text(text.replace('unit = "us"', 'unit = "ms"', 1))
    capsys.readouterr()
    assert cli_main(["check", "--db", db, "--variant", "b", "--reference", str(ref)]) == 2
    err = capsys.readouterr().err
    assert f"{ref}:10: unit = 'ms'" in err and "expected the unit" in err
    ref.write_text(text)
    assert cli_main(["check", "--db", db, "--variant", "b", "--reference", str(ref),
                     "--statistic", "mean"]) == 2
    assert f"{ref}:6: statistic = 'median' but --statistic mean" in capsys.readouterr().err
    # writing refuses an ambiguous baseline and writes nothing
    other = tmp_path / "two.toml"
    assert cli_main(["check", "--db", db, "--write-reference", str(other)]) == 2
    assert not other.exists()


def _core_options(db, variant: str, opts: dict) -> None:
    """Give a variant's launches the fingerprint execute.core_fingerprint makes of a core
    header with these options, through the real store."""
    from mpibench.execute import core_fingerprint
    from mpibench.store import Store

    store = Store(db)
    fid = store.add_fingerprint({"stack": "sim", **core_fingerprint({"options": opts})})
    store.db.execute("UPDATE runs SET fingerprint_id=? WHERE variant=?", (fid, variant))
    store.db.commit()
    store.close()


def test_reference_core_options_unlike_the_new_launches_warn_naming_the_keys(tmp_path,
                                                                             capsys):
    """R13: a file written from malloc-era launches, checked against page-aligned ones
    (buffer_align stated), warns in one line and in the JSON; equal options do not; a file
    without core_options (before stop 35) says provenance unknown, and is still read."""
    db = _store(tmp_path, 0.0, 55, launches=3)
    old = {"mode": "adaptive", "iterations": 0, "per_call": False, "sync": "auto",
           "off_cache": False, "window": 64}
    _core_options(db, "a", old)
    _core_options(db, "b", {**old, "buffer_align": 4096})
    ref = tmp_path / "ref.toml"
    assert cli_main(["check", "--db", db, "--variant", "a", "--write-reference",
                     str(ref)]) == 0
    capsys.readouterr()
    text = ref.read_text()
    from mpibench import gate_reference
    # what the core stated and the fingerprint keeps; unset keys (None) are left out
    assert gate_reference.load(str(ref)).core_options == {
        "iterations": 0, "mode": "adaptive", "off_cache": False, "per_call": False,
        "sync": "auto"}
    assert text.split("[[cell]]")[0].count("core_options = {") == 1
    assert cli_main(["check", "--db", db, "--variant", "b", "--reference", str(ref)]) == 0
    warn = [ln for ln in capsys.readouterr().out.splitlines() if "WARNING" in ln]
    assert len(warn) == 1 and "buffer_align: reference unset, new 4096" in warn[0], warn
    assert "mode" not in warn[0] and "5 of 5 cells" in warn[0]
    assert cli_main(["check", "--db", db, "--variant", "b", "--reference", str(ref),
                     "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["reference"]["core_options"]["differ"] == {
        "buffer_align": {"reference": ["unset"], "new": ["4096"]}}
    assert len(obj["warnings"]) == 1
    # the set the file was written from: equal options, no warning
    assert cli_main(["check", "--db", db, "--variant", "a", "--reference", str(ref)]) == 0
    out = capsys.readouterr().out
    assert "WARNING" not in out and "provenance" not in out
    assert cli_main(["check", "--db", db, "--variant", "a", "--reference", str(ref),
                     "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["warnings"] == [] and obj["reference"]["core_options"]["differ"] == {}
    # a file written before stop 35 (no core_options): read, one line, exit unchanged
    ref.write_text("".join(ln for ln in text.splitlines(keepends=True)
                           if not ln.startswith("core_options")))
    assert cli_main(["check", "--db", db, "--variant", "b", "--reference", str(ref)]) == 0
    out = capsys.readouterr().out
    assert "WARNING" not in out
    assert [ln for ln in out.splitlines() if "provenance" in ln] == [
        "  note: provenance unknown (written before stop 35): the file does not say which "
        "core options its launches were measured with (e.g. buffer_align); write it again "
        "with --write-reference to have them compared"]


def test_reference_cells_carry_their_own_core_options(tmp_path, capsys):
    """A [[cell]]'s own core_options win over [reference]'s: only the cells whose options
    differ from the new launches' are counted and named."""
    db = _store(tmp_path, 0.0, 56, launches=3)
    _core_options(db, "a", {"mode": "adaptive"})
    ref = tmp_path / "ref.toml"
    assert cli_main(["check", "--db", db, "--variant", "a", "--write-reference",
                     str(ref)]) == 0
    text = ref.read_text().replace('core_options = { "mode" = "adaptive" }\n', "")
    head, *cells = text.split("[[cell]]")
    cells = [c.rstrip("\n") + '\ncore_options = { "mode" = "adaptive" }\n\n' for c in cells]
    cells[-1] = cells[-1].replace('{ "mode"', '{ "buffer_align" = 4096, "mode"')
    ref.write_text("[[cell]]".join([head, *cells]))
    capsys.readouterr()
    assert cli_main(["check", "--db", db, "--variant", "a", "--reference", str(ref)]) == 0
    warn = [ln for ln in capsys.readouterr().out.splitlines() if "WARNING" in ln]
    assert len(warn) == 1 and "in 1 of 5 cells (buffer_align: reference 4096, new unset)" \
        in warn[0], warn


def test_written_reference_keeps_each_cells_options_where_the_baseline_mixes_them(tmp_path):
    """render: options shared by every cell go in [reference]; else each [[cell]] keeps its
    own, and the file reads back with them."""
    from mpibench import gate_reference
    from mpibench.report.data import load_cells
    from mpibench.store import Store

    db = _store(tmp_path, 0.0, 57, launches=2)
    store = Store(db)
    cells = [by["a"] for by in load_cells(store, {"a": ["a-0", "a-1"]}).values()]
    store.close()
    fid = cells[0].fingerprint_id
    shared = gate_reference.render(cells, statistic="median", source="t",
                                   options={fid: {"mode": "adaptive"}})
    ref = gate_reference.parse(shared)
    assert ref.core_options == {"mode": "adaptive"}
    assert all(c.core_options is None for c in ref.cells)
    cells[-1].fingerprint_id = "other"
    mixed = gate_reference.render(cells, statistic="median", source="t",
                                  options={fid: {"mode": "adaptive"},
                                           "other": {"buffer_align": 4096, "mode": "adaptive"}})
    ref = gate_reference.parse(mixed)
    assert ref.core_options is None
    assert [c.core_options for c in ref.cells] == [{"mode": "adaptive"}] * (len(cells) - 1) + [
        {"buffer_align": 4096, "mode": "adaptive"}]
    # no options given (an older caller): nothing written, provenance unknown
    assert "core_options" not in gate_reference.render(cells, statistic="median", source="t")


def test_reference_file_surface_derandomized():
    """The 'reference files' fuzz surface with a fixed seed: mutated reference files are
    read or refused in one line naming file:line, through the parser and `check`."""
    import random

    from support import surfaces as _surfaces

    surf = next(s for s in _surfaces.SURFACES if s.name == "reference files")
    t = surf.run(random.Random(29), 60)
    assert t.tried == 60 and (t.crashes, t.misparses, t.contract) == (0, 0, 0), t.examples


def test_reference_gate_gives_a_noisy_size_its_own_cell_part():
    """check --reference pools the new launches' spread over a benchmark's sizes as
    compare does, with each size's own (moderated) cell part where the sizes are not
    equally noisy: a noisy size's CI is wider than a quiet one's (it got the pooled cell
    part, so every size had the same too-narrow CI)."""

    from mpibench import gate_reference as G
    from mpibench.stats import launch as L
    rng = np.random.default_rng(5)
    sizes = [1, 8, 64, 512, 4096, 32768]
    sds = [0.001, 0.001, 0.002, 0.002, 0.003, 0.15]
    ids = [f"r{i}" for i in range(6)]
    u = rng.normal(0.0, 0.02, 6)
    cells, refs = {}, []
    for size, sd in zip(sizes, sds, strict=True):
        vals = [float(math.exp(x)) for x in u + rng.normal(0.0, sd, 6)]
        cells[size] = {"n": _new_cell(size, vals, ids)}
        refs.append(G.RefCell("PingPong", size, None, "time", "us", "lower", 1.0))
    res = G.judge(G.Reference("r.toml", cells=refs), cells, ["n"], 0.05, 0.05)
    sp = L.spread({id(c["n"]): c["n"].by_launch for c in cells.values()})
    assert sp.cell_parts is not None                                  # the case
    width = {f.cell: math.log(f.ci_high / f.ci_low) for f in res.findings}
    assert width["32K"] > 2 * width["8"]


def _reference_aa(rng, sizes: int, n_new: int, n_ref: int, sds):
    """One A/A draw of check --reference: a stored reference from n_ref launches (value,
    sd_log, launches per size) and n_new new launches of the same distribution (launch
    effect sd 0.03 shared by the sizes, cell part sd `sds` per size)."""

    from mpibench import gate_reference as G
    ref = rng.normal(0, 0.03, (n_ref, 1)) + rng.normal(0, 1, (n_ref, sizes)) * sds
    new = rng.normal(0, 0.03, (n_new, 1)) + rng.normal(0, 1, (n_new, sizes)) * sds
    ids = [f"r{i}" for i in range(n_new)]
    cells, refs = {}, []
    for s in range(sizes):
        vals = [float(math.exp(x)) for x in new[:, s]]
        cells[s] = {"n": _new_cell(1 << s, vals, ids)}
        refs.append(G.RefCell("PingPong", 1 << s, None, "time", "us", "lower",
                              math.exp(ref[:, s].mean()), float(ref[:, s].std(ddof=1)), n_ref))
    return G.Reference("r.toml", cells=refs), cells


def test_reference_aa_with_one_noisy_size_keeps_alpha_there():
    """A/A against a stored reference, 6 sizes, one 6x noisier (cell part sd 0.3 vs 0.05),
    2 new launches against a 6-launch reference: the new side's gate alone (1 df per size)
    rarely opened, the noisy size took the pooled cell part and failed the gate in 11% of
    these checks (44 of 400; the bound is 35); gated once with the reference's own sd_log per size
    (stats.launch.gated_spreads) it keeps its own part: raw p <= 0.05 there within a
    binomial bound of alpha (17 of 400)."""
    from scipy import stats as sps

    from mpibench import gate_reference as G
    rng = np.random.default_rng(61)
    sds = np.array([0.05] * 5 + [0.3])
    reps, noisy, quiet = 400, 0, 0
    for _ in range(reps):
        ref, cells = _reference_aa(rng, 6, 2, 6, sds)
        res = G.judge(ref, cells, ["n"], 0.0, 0.05)
        ps = [f.p for f in res.findings if f.cell != "overall"]
        noisy += ps[-1] <= 0.05
        quiet += sum(p <= 0.05 for p in ps[:-1])
    assert noisy <= sps.binom.ppf(0.999, reps, 0.05), noisy
    assert quiet <= sps.binom.ppf(0.999, 5 * reps, 0.05), quiet


def _ramp_check(rng, order):
    """One A/A check --reference of an 11-size ramp (new launches' cell part sd 0.03 ->
    0.15 over the sizes, launch effect sd 0.05, 8 launches; exact reference at 1), the
    reference file's cells in `order`: each size's CI width (log) by its label."""

    from mpibench import gate_reference as G
    sds = np.linspace(0.03, 0.15, 11)
    ids = [f"r{i}" for i in range(8)]
    new = rng.normal(0, 0.05, (8, 1)) + rng.normal(0, 1, (8, 11)) * sds
    cells, refs = {}, []
    for s in order:
        vals = [float(math.exp(x)) for x in new[:, s]]
        cells[s] = {"n": _new_cell(1 << s, vals, ids)}
        refs.append(G.RefCell("PingPong", 1 << s, None, "time", "us", "lower", 1.0))
    res = G.judge(G.Reference("r.toml", cells=refs), cells, ["n"], 0.05, 0.05)
    return {f.cell: math.log(f.ci_high / f.ci_low) for f in res.findings}


def test_reference_gate_follows_a_ramp_in_any_file_order():
    """check --reference orders a benchmark's cells by size and gates them as compare
    gates an unpaired block given sizes (stats.launch.gated_spreads ordered): a spread
    that grows with size gets the trend prior. The reference file's cells shuffled: the
    median CI width of the noisiest size over the quietest's, 200 draws, is 2.63 (true
    se ratio 2.72); in the file's order with the flat prior it was 2.24. Shuffled cells
    give the widths sorted ones give."""
    rng = np.random.default_rng(11)
    ratios = []
    for rep in range(200):
        order = [int(i) for i in rng.permutation(11)]
        if rep < 3:
            state = rng.bit_generator.state
            sorted_w = _ramp_check(rng, range(11))
            rng.bit_generator.state = state
        w = _ramp_check(rng, order)
        if rep < 3:
            assert w == pytest.approx(sorted_w, rel=1e-9)
        ratios.append(w["1K"] / w["1"])
    assert np.median(ratios) > 2.45, np.median(ratios)


def test_reference_gate_tests_each_np_in_its_own_block():
    """Two np in one reference file are two blocks, as compare keys them (CellKey.block:
    the cell key without its size): np=2's sizes quiet (cell part sd 0.03), np=4's noisy
    (0.15). Judged with np=4's cells in the file, np=2's CI widths are the ones it has
    alone; grouped by (benchmark, metric), np=4's spread fed np=2's gate and trend (the
    review's 50 draws: median width 0.0675 alone, 0.0805 mixed)."""
    from mpibench import gate_reference as G
    rng = np.random.default_rng(3)
    ids = [f"r{i}" for i in range(8)]
    sizes = [1 << s for s in range(6)]
    quiet = rng.normal(0, 0.03, (8, 6)) + rng.normal(0, 0.02, (8, 1))
    noisy = rng.normal(0, 0.15, (8, 6)) + rng.normal(0, 0.02, (8, 1))
    cells, refs = {}, []
    for np_, logs in ((2, quiet), (4, noisy)):
        for i, size in enumerate(sizes):
            cells[(np_, size)] = {"n": _new_cell(size, np.exp(logs[:, i]), ids, np_)}
            refs.append(G.RefCell("PingPong", size, np_, "time", "us", "lower", 1.0))

    def widths(keep):
        res = G.judge(G.Reference("r.toml", cells=[r for r in refs if r.np in keep]),
                      {k: v for k, v in cells.items() if k[0] in keep}, ["n"], 0.05, 0.05)
        return [math.log(f.ci_high / f.ci_low) for f in res.findings if f.cell != "overall"]

    alone, mixed = widths({2}), widths({2, 4})[:6]
    assert mixed == pytest.approx(alone, rel=1e-9)
