"""Bad invocations of every verb: one line on stderr, exit 2, no traceback, nothing created."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpibench.cli import main as cli_main

OSU = Path(__file__).parent / "data" / "osu" / "osu7.4-mpich4.0.2-np2-osu_latency.txt"

BAD = [
    ["run", "PingPong", "--baseline", "bogus"],
    ["run", "PingPong", "--variant", "a=openmpi", "--variant", "b=mpich", "--baseline", "c"],
    ["run", "PingPong", "--launch-timeout", "nan"],
    ["run", "PingPong", "--launch-timeout", "inf"],
    ["run", "PingPong", "--launch-timeout", "-5"],
    ["run", "PingPong", "--launch-timeout", "0"],
]


@pytest.mark.parametrize("argv", BAD, ids=lambda a: " ".join(a)[:60])
def test_bad_invocation_is_one_line_exit_2_nothing_written(tmp_path, monkeypatch, capsys,
                                                           argv):
    monkeypatch.chdir(tmp_path)
    full = [a.format(tmp=tmp_path, osu=OSU) for a in argv]
    if full[0] not in ("demo", "stacks") and "--db" not in full:
        full += ["--db", str(tmp_path / "s.db")]
    before = sorted(p.name for p in tmp_path.iterdir())
    try:
        rc = cli_main(full)
    except SystemExit as exc:  # argparse's own refusals
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err
    assert err.strip().count("\n") == 0 or err.startswith("usage:"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_campaign_file_not_utf8(tmp_path, capsys):
    p = tmp_path / "c.toml"
    p.write_bytes(b'[campaign]\nname = "\xff\xfe"\n')
    assert cli_main(["campaign", "run", str(p), "--dry-run"]) == 2
    assert "not UTF-8 text (byte 0xff at offset 19)" in capsys.readouterr().err


def test_stacks_file_that_is_a_directory(tmp_path, capsys):
    assert cli_main(["stacks", "--stacks-file", str(tmp_path)]) == 2
    assert "cannot read (Is a directory)" in capsys.readouterr().err


def test_compare_campaign_id_beyond_64_bits(tmp_path, capsys):
    db = tmp_path / "s.db"
    assert cli_main(["import", str(OSU), "--db", str(db)]) == 0
    capsys.readouterr()
    assert cli_main(["compare", "--db", str(db), "--campaign", "1" + "0" * 24]) == 2
    err = capsys.readouterr().err
    assert "no such campaign" in err and "Traceback" not in err


def test_import_onto_a_full_disk_is_one_line(tmp_path, capsys):
    import subprocess

    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(mnt)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root)")
    try:
        big = tmp_path / "big.txt"
        big.write_bytes(OSU.read_bytes() * 200)  # ~600 KB of rows, one file
        rc = cli_main(["import", str(big), "--db", str(mnt / "s.db")])
        err = capsys.readouterr().err
        assert rc == 2 and "Traceback" not in err
        assert "cannot write" in err or "full" in err, err
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


@pytest.mark.parametrize("verb", [["campaign", "run", "{f}", "--dry-run"],
                                  ["campaign", "list", "{f}"], ["campaign", "status", "{f}"],
                                  ["campaign", "resume", "{f}"]])
@pytest.mark.parametrize("target", ["/dev/zero", "{tmp}", "{fifo}", "{big}"])
def test_campaign_file_that_cannot_be_a_campaign(tmp_path, capsys, verb, target):
    """bench_fuzz found `campaign list /dev/zero` reading until MemoryError."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (17 << 20))
    f = target.format(tmp=tmp_path, fifo=fifo, big=big)
    rc = cli_main([a.format(f=f) for a in verb] + ["--db", str(tmp_path / "s.db")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "s.db").exists()


def _verbs(parser) -> set[str]:
    import argparse

    return {name for a in parser._actions if isinstance(a, argparse._SubParsersAction)
            for name in a.choices}


def test_a_verb_builds_only_its_own_parser_and_the_rest_see_every_verb():
    """`mpibench compare` imports the compare verb's module only (not the runner, builder
    and importer: a fresh compare's start-up, issue 24); no verb, an option first or an
    unknown word gets the whole command line, so --help and 'invalid choice' list all."""
    from mpibench.cli import _verb_modules, build_parser

    every = _verbs(build_parser())
    assert {"compare", "report", "import", "push", "run", "campaign"} <= every
    assert every == set(_verb_modules())
    assert _verbs(build_parser("compare")) == {"compare"}
    assert _verbs(build_parser("import")) == {"import"}
    assert _verbs(build_parser("bogus")) == every


def test_unknown_verb_lists_every_verb(capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main(["bogus"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'bogus'" in err and "'compare'" in err and "'run'" in err


def _verb_names() -> list[str]:
    from mpibench.cli import _verb_modules
    return sorted(_verb_modules())


@pytest.mark.parametrize("verb", _verb_names())
def test_every_verb_teaches_by_example(capsys, verb):
    """README: every verb's --help has examples (demo's help says what it runs: it is one)."""
    with pytest.raises(SystemExit) as exc:
        cli_main([verb, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    if verb == "demo":
        assert "Runs real comparisons" in out
        return
    lines = out.split("\nexamples:\n", 1)
    assert len(lines) == 2, f"{verb} --help has no 'examples:' section"
    assert f"mpibench {verb}" in lines[1], lines[1]
    # and every option says what it does (build's --component once had no help text)
    from mpibench.cli import build_parser
    sub = next(a for a in build_parser(verb)._actions if a.dest == "verb")
    silent = [a.option_strings for a in sub.choices[verb]._actions
              if a.option_strings and not a.help]
    assert not silent, f"{verb}: options without help: {silent}"
