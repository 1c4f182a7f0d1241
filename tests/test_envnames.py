"""Environment names and NUL bytes: refused when the campaign or the command line is read, and
never able to reach GNU env, a launcher or a job script as an option."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mpibench.campaign.spec import load
from mpibench.cli import main as cli_main
from mpibench.errors import UsageError
from mpibench.launchers import LaunchSpec, get_launcher, launcher_names
from mpibench.schedulers import JobRequest, JobStep, get_scheduler

BASE = """
[campaign]
name = "inj"
[variants.a]
stack = "openmpi"
{variant}
[benchmarks.pp]
benchmarks = ["PingPong"]
sizes = "0"
{group}
"""

PAYLOAD_NAMES = ["--split-string", "-S", "-i", "A B", "A=B", "1ABC", "A;touch x", "", "A\nB",
                 "$(touch x)", "-u", "A-B"]


def campaign(tmp_path: Path, variant: str = "", group: str = "") -> Path:
    p = tmp_path / "c.toml"
    p.write_text(BASE.format(variant=variant, group=group))
    return p


@pytest.mark.parametrize("name", PAYLOAD_NAMES)
@pytest.mark.parametrize("where", ["variant", "group", "sweep"])
def test_env_name_must_be_an_identifier(tmp_path, name, where):
    key = '"' + name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    entry = f'env = {{ {key} = "sh -c \'touch /tmp/x\' x" }}'
    if where == "sweep":
        path = campaign(tmp_path, variant=f'sweep = {{ "env.{name}" = ["1"] }}'
                        if name.isprintable() and "." not in name and '"' not in name
                        else entry)
    else:
        path = campaign(tmp_path, **{where: entry if where == "variant" else
                                     f'[benchmarks.app]\ncommand = "true"\n{entry}'})
    with pytest.raises(UsageError, match="not an identifier") as exc:
        load(path)
    assert str(path) in str(exc.value) and "\n" not in str(exc.value).replace("\\n", "")


def test_split_string_payload_from_the_issue_is_refused_before_anything(tmp_path, capsys):
    marker = tmp_path / "pwned"
    path = campaign(tmp_path, variant=f'env = {{ "--split-string" = "sh -c \'touch {marker}\' x" }}')
    db = tmp_path / "s.db"
    for verb in (["campaign", "run", str(path), "--dry-run"], ["campaign", "run", str(path)]):
        assert cli_main([*verb, "--db", str(db)]) == 2
    assert "not an identifier" in capsys.readouterr().err
    assert not marker.exists() and not db.exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("text", ['env = { A = "x\\u0000y" }', 'mca = { btl = "\\u0000" }',
                                  'launcher_args = ["a\\u0000"]', 'hosts = ["n\\u0000"]'])
def test_nul_anywhere_in_a_variant_is_refused_at_load(tmp_path, text):
    with pytest.raises(UsageError, match="NUL byte"):
        load(campaign(tmp_path, variant=text))


def test_nul_in_a_command_is_refused_at_load(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text(BASE.format(variant="", group="") +
                 '[benchmarks.app]\ncommand = "echo a\\u0000b"\n')
    with pytest.raises(UsageError, match=r"benchmarks\.app\.command: contains a NUL byte"):
        load(p)


@pytest.mark.parametrize("name", ["--foo", "a.b", "a b", "-x"])
def test_mca_names_are_checked(tmp_path, name):
    with pytest.raises(UsageError, match="MCA parameter name"):
        load(campaign(tmp_path, variant=f'mca = {{ "{name}" = "1" }}'))


def test_values_may_hold_equals_and_shell_text(tmp_path):
    spec = load(campaign(tmp_path, variant='env = { UCX_TLS = "a=b;$(x)" }'))
    assert spec.variants[0].env == {"UCX_TLS": "a=b;$(x)"}


@pytest.mark.parametrize("argv", [["--env", "--split-string=sh -c x"], ["--env", "A B=1"],
                                  ["--env", "A=\x00"], ["--mca", "--x", "1"]])
def test_run_flags_refuse_bad_names(tmp_path, argv, capsys):
    with pytest.raises(SystemExit) as exc:
        rc = cli_main(["run", "PingPong", *argv, "--db", str(tmp_path / "s.db")])
        raise SystemExit(rc)
    assert exc.value.code == 2
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("launcher", launcher_names())
def test_no_launcher_accepts_an_option_like_env_name(launcher):
    with pytest.raises(UsageError, match="not an identifier"):
        get_launcher(launcher).argv("core", LaunchSpec(np=2, program=["core"],
                                                       env={"--split-string": "x"}))


@pytest.mark.parametrize("sched", ["local", "slurm", "pbs"])
def test_job_scripts_end_env_options_and_refuse_bad_names(tmp_path, sched):
    step = JobStep("c1", tmp_path, ["true"], {"A": "1"}, tmp_path / "o", tmp_path / "e")
    req = JobRequest(name="j", steps=[step], run_dir=tmp_path)
    script = get_scheduler(sched).render_script(req)
    assert "env -- A=1 true" in script
    step.env = {"--split-string": f"sh -c 'touch {tmp_path}/pwned' x"}
    with pytest.raises(ValueError, match="not an identifier"):
        get_scheduler(sched).render_script(req)


def test_env_after_double_dash_never_runs_a_name_as_an_option(tmp_path):
    """What `--` buys even if a name slipped through: GNU env takes it as an assignment."""
    marker = tmp_path / "pwned"
    out = subprocess.run(["env", "--", f"--split-string=sh -c 'touch {marker}' x", "true"],
                         capture_output=True)
    assert out.returncode == 0 and not marker.exists()
