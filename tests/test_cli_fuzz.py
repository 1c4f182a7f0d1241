"""Hostile argument values for every verb: exit 2, one error line, nothing written, nothing
started (tests/support/fuzz.py builds the calls; mpibench.process.run_command is replaced by one that
refuses and records, so these stay unit-tier). bench/bench_fuzz.py runs the same for longer.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import fuzz as _fuzz

# Values whose fix belongs to another piece of issue 12 still in progress (none left now;
# bench/bench_fuzz.py tries everything).
PENDING: list[tuple[str, ...]] = []


def _pending(argv: list[str]) -> bool:
    for p in PENDING:
        if len(p) == 1 and p[0] in argv and argv[0] == "campaign":
            return True
        if len(p) == 2 and any(argv[k:k + 2] == list(p) for k in range(len(argv) - 1)):
            return True
    return False


def _check(argv: list[str]) -> None:
    td, tmp, names = _fuzz.cli_workdir()
    with td:
        outcome = _fuzz.run_cli(_fuzz.substitute(argv, names), tmp)
    assert not outcome.problems(), (argv, outcome.problems(), outcome.stderr[-2000:],
                                    outcome.crash)


@pytest.mark.parametrize("verb", [v for v, _ in _fuzz.CLI_BUILDERS])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_hostile_values_per_verb(verb, rng):
    builder = dict(_fuzz.CLI_BUILDERS)[verb]
    argv = builder(rng)
    if _pending(argv):
        return
    _check(argv)


@pytest.mark.parametrize("argv", [
    # --only-sizes was parsed only once a real run started: a dry run took any value
    ["campaign", "run", "GOOD", "--dry-run", "--only-sizes", "abc"],
    ["campaign", "run", "GOOD", "--dry-run", "--only-sizes", "16"],
    # int('٣') is 3 and float('٣') 3.0 in Python; '1_000' is 1000; argparse took them all
    ["import", "GOODFILE", "--db", "NEW.db", "--np", "\u0663"],
    ["import", "GOODFILE", "--db", "NEW.db", "--np", "1_000"],
    ["import", "GOODFILE", "--db", "NEW.db", "--np", "1" + "0" * 40],
    ["run", "PingPong", "--np", "\uff13", "--out", "OUT"],
    ["run", "PingPong", "--repeats", "\uff13", "--out", "OUT"],
    ["run", "PingPong", "--target", "\u0663", "--out", "OUT"],
    ["run", "PingPong", "--timeout", "\u0663", "--out", "OUT"],
    ["run", "PingPong", "--iterations", "\u0663", "--out", "OUT"],
    ["demo", "--max-time", "\u0663"],
    ["demo", "--max-time", "nan"],
    ["demo", "--max-time", "100"],          # > the demo's 30 s watchdog: said before any output
    ["demo", "--repeats", "0"],
    ["demo", "--repeats", "1_000_000_000_000_000"],
    ["demo", "--aa-max", "2"],              # the A/A's decide rule looks first at 3 launches
    ["demo", "--aa-max", "\u0663"],
    ["profile", "--db", "NEW.db", "--timeout", "\u0663", "--", "true"],
    ["profile", "--db", "NEW.db", "--top", "1_000_000", "--", "true"],
    ["profile", "--db", "NEW.db", "--out", "FILE", "--", "true"],
    ["profile", "--db", "NEW.db", "--out", "FILE/x", "--", "true"],
    ["compare", "--db", "STORE", "--alpha", "\u0663"],
    # a NUL byte cannot come from a shell; from Python it was an 'embedded null byte' traceback
    ["import", "GOODFILE", "--db", "NEW.db", "--label", "\x00"],
    ["import", "\x00", "--db", "NEW.db"],
    ["campaign", "status", "\x00"],
    ["stacks", "--stacks-file", "\x00"],
    # the stacks file is read before any compiler probe, and a bad one is one line
    ["stacks", "--stacks-file", "NOTUTF8"],
    ["stacks", "--stacks-file", "/etc"],
    ["stacks", "--stacks-file", "/dev/zero"],
    ["build", "--stacks-file", "NOTUTF8"],
    ["build", "--stacks-file", "MISSING.toml"],
    # fixed elsewhere in issue 12 (one size grammar, campaign files read as UTF-8)
    ["run", "PingPong", "--sizes", "0:\u0663", "--out", "OUT"],
    ["demo", "--sizes", "0 :3"],
    # the A/A's own sizes (stop 35): refused before anything is written, as --sizes
    ["demo", "--aa-sizes", "0 :3"],
    ["demo", "--aa-sizes", "0:\u0663"],
    ["campaign", "status", "NOTUTF8"],
    # fixed elsewhere in issue 12: --baseline checked before anything launches
    ["run", "PingPong", "--baseline", "bogus", "--out", "OUT"],
    # a name longer than NAME_MAX: Path.exists() raised 'File name too long'
    ["run", "PingPong", "--markdown", "a" * 5000, "--out", "OUT"],
    # a campaign file that is a device was read until memory ran out
    ["campaign", "run", "/dev/zero", "--dry-run"],
    ["campaign", "status", "/dev/zero"],
    # compare/report: --detect read float('٣'), an empty --size and a --label that selects
    # nothing were silently ignored (exit 0)
    ["compare", "--db", "STORE", "--label", "tcp", "--label", "vader", "--detect", "\u0663"],
    ["compare", "--db", "STORE", "--label", "tcp", "--label", "vader", "--size", ""],
    ["compare", "--db", "STORE", "--label", "tcp", "--label", "vader", "--label", "nosuch"],
    ["report", "--db", "STORE", "--label", "tcp", "--label", "vader", "--label", "nosuch"],
    # an empty --since/--until was falsy: "comparing the latest campaign" came first and the
    # refusal was a second line (check and compare)
    ["check", "--db", "STORE", "--since", ""],
    ["compare", "--db", "STORE", "--until", ""],
    # the "latest campaign" notice came before the --baseline refusal: two lines
    ["check", "--db", "STORE", "--baseline", "bogus"],
    ["compare", "--db", "STORE", "--baseline", "bogus"],
    ["check", "--db", "STORE", "--baseline", ""],          # was silently ignored: exit 0
    # an OSError on a path the user gave (File name too long) was a traceback
    ["push", "postgresql://127.0.0.1:1/none", "--db-from", "a" * 5000],
    # argparse's own refusals: one line too, not the usage block
    ["run", "PingPong", "--np", "two", "--out", "OUT"],
    ["compare", "--format", "pdf"],
], ids=lambda a: " ".join(a).encode("unicode_escape").decode()[:70])
def test_found_by_the_fuzzer(argv):
    _check(argv)


@pytest.mark.parametrize("example", [p.name for p in _fuzz.CAMPAIGN_FILES])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_mutated_campaign_files_dry_run(example, rng):
    """`campaign run FILE --dry-run` on an example with hostile values: still valid (exit 0)
    or refused in one line (exit 2); never a traceback, nothing written or started."""
    path = _fuzz.EXAMPLES / example
    outcome = _fuzz.run_campaign_case(_fuzz.mutate_campaign(rng, path), example)
    assert not outcome.problems(ok_rcs=(0, 2)), (outcome.problems(ok_rcs=(0, 2)),
                                                 outcome.stderr[-1000:])


@pytest.mark.parametrize("value", ["a\\nb", "gromacs/md.mdp\\n", "a\\rb", "\\u2028x",
                                   "\\u0085x"])
def test_refusal_quoting_a_value_with_a_line_break_is_one_line(value):
    # found by hypothesis in make test: inputs = ["a\nb"] gave 'does not exist (looked at
    # .../a' and 'b)' on two lines; every refusal escapes line breaks (errors.one_line)
    text = (_fuzz.EXAMPLES / "gromacs-grid.toml").read_text()
    outcome = _fuzz.run_campaign_case(text.replace('"gromacs/md.mdp"', f'"{value}"').encode(),
                                      "gromacs-grid.toml")
    assert outcome.rc == 2 and not outcome.problems(), (outcome.problems(), outcome.stderr)
    assert "does not exist" in outcome.stderr


def test_argparse_refusal_quoting_a_line_break_is_one_line():
    _check(["run", "PingPong", "--np", "2\nx", "--out", "OUT"])


def test_campaign_input_name_longer_than_name_max():
    # found by the fuzzer: inputs = ["nnn...5000"] was an OSError traceback in Path.exists()
    text = (_fuzz.EXAMPLES / "gromacs-grid.toml").read_text()
    assert '"gromacs/md.mdp"' in text
    outcome = _fuzz.run_campaign_case(text.replace('"gromacs/md.mdp"', '"' + "n" * 5000 + '"')
                                      .encode(), "gromacs-grid.toml")
    assert not outcome.problems(), outcome.problems()
    assert "File name too long" in outcome.stderr


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_compare_and_report_on_mutated_imports(rng):
    """Whatever two imported files held (flagged rows, odd names, truncation), compare and
    report end with a status and never a traceback."""
    for argv, outcome in _fuzz.run_report_case(rng):
        probs = outcome.problems(ok_rcs=(0, 1, 2)) if argv[0] != "import" else \
            ([outcome.crash] if outcome.crash else [])
        assert not probs, (argv, probs, outcome.stderr[-1000:])


def test_gain_table_with_one_set_is_one_line(tmp_path, capsys):
    # found by the fuzzer: set a's file could not be imported; compare printed "only one
    # result set selected" and then the error: two lines for one refusal
    from mpibench.cli import main
    fx = next(p for p in _fuzz.FIXTURES if p.name.endswith("btl-tcp.txt"))
    db = str(tmp_path / "s.db")
    assert main(["import", str(fx), "--label", "b", "--db", db]) == 0
    capsys.readouterr()
    rc = main(["compare", "--db", db, "--label", "a", "--label", "b", "--gain-table"])
    err = capsys.readouterr().err
    assert rc == 2 and err.strip().count("\n") == 0, err
    assert "--label 'a'" in err or "--gain-table needs two" in err, err
    # with only the set that exists, the gain table's own refusal, still one line
    rc = main(["compare", "--db", db, "--label", "b", "--gain-table"])
    err = capsys.readouterr().err
    assert rc == 2 and err.strip().count("\n") == 0 and "--gain-table needs two" in err, err


@pytest.mark.parametrize("extra", [[], ["--only-sizes", "8"]])
def test_the_fuzzers_good_campaign_is_valid(extra):
    # the hostile calls beside it test the flag, not a campaign file that never parsed
    # (GOOD was not a valid campaign until this test, so no call with it got past the file)
    td, tmp, names = _fuzz.cli_workdir()
    with td:
        outcome = _fuzz.run_cli(_fuzz.substitute(
            ["campaign", "run", "GOOD", "--dry-run", *extra], names), tmp)
    assert not outcome.problems(ok_rcs=(0,)), (outcome.problems(ok_rcs=(0,)),
                                               outcome.stderr[-2000:])
