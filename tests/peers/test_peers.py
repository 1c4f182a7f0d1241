"""Third-party suites inside campaigns (suite = "imb" | "osu"): validation, command lines, and
real IMB 2021.11 and OSU 7.4 builds from ../shared/peers run next to the core in one store."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from mpibench.campaign.plan import expand
from mpibench.campaign.spec import load
from mpibench.cli import main as cli_main
from mpibench.errors import UsageError
from mpibench.peers import PeerSpec, build_peer, parse_output, program_args
from mpibench.stacks import discover, find_stack

# beside the repository (../shared/peers), or $MPIBENCH_PEERS; never an absolute path
PEERS = Path(os.environ.get("MPIBENCH_PEERS")
             or Path(__file__).resolve().parents[2].parent / "shared" / "peers")
IMB_TGZ = PEERS / "imb-2021.11.tar.gz"
OSU_TGZ = PEERS / "osu-micro-benchmarks-7.4.tar.gz"

# no test here reads the machine-state probe (campaign/machine_probe.py): "off" spares
# each bound np-2 launch its two probes
HEAD = """
[campaign]
name = "peers"
repeats = 2
timeout = 120
machine_probe = "off"
[defaults]
np = 2
[variants.ompi]
stack = "openmpi"
transport = "shm"
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "peers.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("group, key, expected", [
    ('suite = "hpl"\nbinary = "x"\nbenchmarks = ["PingPong"]', "benchmarks.p.suite",
     '"imb" or "netpipe" or "osu"'),
    ('suite = "imb"\nbinary = "x"\nsource = "y"\nbenchmarks = ["PingPong"]', "benchmarks.p",
     "exactly one of 'binary'"),
    ('suite = "imb"\nbinary = "x"', "benchmarks.p.benchmarks", "IMB names"),
    ('suite = "imb"\nbinary = "x"\nbenchmarks = ["PingPongg"]', "benchmarks.p.benchmarks",
     "PingPongg"),
    ('suite = "osu"\nbinary = "x"\nbenchmarks = ["latency"]', "benchmarks.p.benchmarks[0]",
     "an OSU program name"),
    ('suite = "netpipe"\nbinary = "x"\nbenchmarks = ["a"]', "benchmarks.p.benchmarks",
     "no benchmarks key"),
    ('suite = "imb"\nbinary = "x"\nbenchmarks = ["PingPong"]\ncommand = "y"', "benchmarks.p.command",
     "unknown key"),
    # as core and application groups (it passed here before the group kinds shared the check)
    ('suite = "imb"\nbinary = "x"\nbenchmarks = ["PingPong"]\nvariants = ["ompi", "ompi"]',
     "benchmarks.p.variants[1]", "'ompi' is listed twice"),
])
def test_peer_group_errors_name_the_key(tmp_path, group, key, expected):
    with pytest.raises(UsageError) as exc:
        load(_write(tmp_path, HEAD + f"[benchmarks.p]\n{group}\n"))
    assert f": {key}:" in str(exc.value) and expected in str(exc.value), str(exc.value)


def test_osu_group_is_one_group_per_program_and_ids_are_stable(tmp_path):
    text = HEAD + """[benchmarks.osu]
suite = "osu"
binary = "/opt/osu/libexec"
benchmarks = ["osu_latency", "osu_allreduce"]
sizes = "0:10"
"""
    spec = load(_write(tmp_path, text))
    assert [g.name for g in spec.groups] == ["osu.osu_latency", "osu.osu_allreduce"]
    assert [g.peer.benchmarks for g in spec.groups] == [("osu_latency",), ("osu_allreduce",)]
    ids = [c.id for c in expand(spec)]
    assert len(ids) == 4 and ids == [c.id for c in expand(load(_write(tmp_path, text)))]
    # another argument list is another measurement: new cells
    other = load(_write(tmp_path, text.replace('sizes = "0:10"',
                                               'sizes = "0:10"\nargs = ["-i", "10"]')))
    assert not set(ids) & {c.id for c in expand(other)}


def test_program_args_translate_sizes_per_suite(tmp_path):
    imb = PeerSpec("imb", ("PingPong", "Allreduce"), "0:4", ("-iter", "10"), "x", None)
    assert program_args(imb, tmp_path) == ["PingPong", "Allreduce", "-msglog", "0:4",
                                           "-iter", "10"]
    imb_list = PeerSpec("imb", ("PingPong",), "0,8,1K", (), "x", None)
    assert program_args(imb_list, tmp_path) == ["PingPong", "-msglen", "msglen.txt"]
    assert (tmp_path / "msglen.txt").read_text() == "0\n8\n1024\n"
    osu = PeerSpec("osu", ("osu_latency",), "3:10", (), "x", None)
    assert program_args(osu, tmp_path) == ["-m", "8:1024"]


def test_osu_rows_line_up_with_imb_names(tmp_path):
    text = ("# OSU MPI Allreduce Latency Test v7.4\n# Datatype: MPI_CHAR.\n"
            "# Size       Avg Latency(us)\n4                       0.36\n8   0.40\n")
    rows, meta = parse_output(PeerSpec("osu", ("osu_allreduce",), None, (), "x", None),
                              text, 4)
    assert meta["version"] == "7.4"
    assert [(r["benchmark"], r["size"], r["np"]) for r in rows] == [("Allreduce", 4, 4),
                                                                    ("Allreduce", 8, 4)]
    assert rows[0]["extra"]["tool_benchmark"] == "osu_allreduce"
    assert rows[0]["extra"]["np_from"] == "variant"


@pytest.mark.skipif(not OSU_TGZ.exists(), reason="the OSU tarball (../shared/peers) is not here")
def test_osu_program_is_made_in_the_directory_whose_makefile_am_lists_it(tmp_path):
    """OSU 7.4's configure and make built ~60 programs (60 s) for a group that runs one: a
    program is made in the directory whose Makefile.am lists it, in a tree configured once
    per stack and source; a name no Makefile.am lists gets the whole make, as before
    (find_binary then looks for it)."""
    import tarfile

    from mpibench.peers import get_suite
    from mpibench.peers.osu import program_dir

    with tarfile.open(OSU_TGZ) as tf:
        tf.extractall(tmp_path, members=[m for m in tf if m.name.endswith("Makefile.am")],
                      filter="data")
    (tree,) = tmp_path.iterdir()
    assert program_dir(tree, "osu_latency") == tree / "c/mpi/pt2pt/standard"
    assert program_dir(tree, "osu_allreduce") == tree / "c/mpi/collective/blocking"
    assert program_dir(tree, "osu_latency_persistent") == tree / "c/mpi/pt2pt/persistent"
    # listed under `if MPI2_LIBRARY`: found (make's own "No rule" falls back to the whole make)
    assert program_dir(tree, "osu_latency_mt") == tree / "c/mpi/pt2pt/standard"
    osu = get_suite("osu")
    assert osu.configure_steps(tree, "mpicc.x", "mpicxx.x") == [
        ["./configure", "CC=mpicc.x", "CXX=mpicxx.x"]]
    (make,) = osu.program_steps(tree, "osu_iallreduce")
    assert make[0] == "make" and make[-3:] == ["-C", "c/mpi/collective/non_blocking",
                                               "osu_iallreduce"]   # relative: the tree moves
    assert program_dir(tree, "osu_nonesuch") is None
    assert osu.program_steps(tree, "osu_nonesuch") == osu.full_steps(tree)
    assert "-C" not in osu.full_steps(tree)[0]


_FAKE_CONFIGURE = """#!/bin/sh
echo run >> configure.runs
"""


@pytest.mark.system
def test_osu_tree_is_configured_once_and_each_program_made_into_it(tmp_path, monkeypatch):
    """Two programs of one source and stack share one configured tree (configure ran once);
    a program whose directory's make has no rule for it (an automake conditional configure
    turned off) gets the whole make; a name nothing makes is one line naming it."""
    from mpibench.errors import BuildError
    from mpibench.peers import build_peer, find_binary
    from mpibench.stacks import Stack

    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "osu"
    (src / "sub").mkdir(parents=True)
    (src / "configure").write_text(_FAKE_CONFIGURE)
    (src / "configure").chmod(0o755)
    (src / "sub" / "Makefile.am").write_text(
        "sub_PROGRAMS = osu_a osu_b \\\n  osu_c\nif NEVER\nsub_PROGRAMS += osu_cond\nendif\n")
    rule = "{0}:\n\tprintf '#!/bin/sh\\n' > {0} && chmod +x {0}\n"
    (src / "sub" / "Makefile").write_text(rule.format("osu_a") + rule.format("osu_b"))
    (src / "Makefile").write_text("all: sub/osu_cond\n\t$(MAKE) -C sub osu_a osu_b\n"
                                  + rule.format("sub/osu_cond"))
    stack = Stack(name="fake", kind="openmpi", mpicc="cc", library_version="x")
    root = build_peer(stack, "osu", src, benchmark="osu_a")
    assert build_peer(stack, "osu", src, benchmark="osu_b") == root
    (tree,) = (p for p in root.iterdir() if p.is_dir())
    assert (tree / "configure.runs").read_text() == "run\n"
    assert find_binary(root, "osu", "osu_b") == tree / "sub" / "osu_b"
    assert not (tree / "sub" / "osu_cond").exists()
    assert build_peer(stack, "osu", src, benchmark="osu_cond") == root
    assert find_binary(root, "osu", "osu_cond") == tree / "sub" / "osu_cond"
    assert (tree / "configure.runs").read_text() == "run\n"
    assert {p.name for p in (tmp_path / "cache" / "build").iterdir()
            if not p.name.startswith(".")} == {root.name}
    # listed, but neither its directory's make nor the whole make has it: one line
    with pytest.raises(BuildError) as exc:
        build_peer(stack, "osu", src, benchmark="osu_c")
    assert "make has no rule for osu_c" in str(exc.value) and "\n" not in str(exc.value)
    assert not (root / ".built-osu_c").exists()


_BUILD_ONE = """
import pathlib, sys
from mpibench.peers import build_peer
from mpibench.stacks import Stack
s = Stack(name="fake", kind="openmpi", mpicc="cc", library_version="x")
pathlib.Path(sys.argv[3], "started-" + sys.argv[2]).touch()
print(build_peer(s, "osu", sys.argv[1], benchmark=sys.argv[2]))
"""


@pytest.mark.system
def test_two_campaigns_making_osu_programs_at_once_share_one_configure(tmp_path):
    """Two processes (two campaigns) building two programs of one source and stack at the
    same moment: the entry's lock makes them take turns, so configure runs once and each
    program is made once into the one tree."""
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from mpibench.process import run_command

    src = tmp_path / "osu"
    (src / "sub").mkdir(parents=True)
    # counted outside the tree (a second configure would replace the tree). configure
    # waits until both builders have started (each marks it just before build_peer), so
    # the other one reaches the entry while this configure runs: without the lock it
    # would configure too. The wait is bounded, so a lost builder fails, not hangs.
    runs = tmp_path / "configure.runs"
    (src / "configure").write_text(
        f"#!/bin/sh\necho run >> '{runs}'\n"
        f"i=0; while [ ! -e '{tmp_path}/started-osu_a' ] || [ ! -e '{tmp_path}/started-osu_b' ]"
        f"; do i=$((i+1)); [ $i -gt 600 ] && exit 1; sleep 0.1; done\nsleep 0.5\n")
    (src / "configure").chmod(0o755)
    (src / "sub" / "Makefile.am").write_text("sub_PROGRAMS = osu_a osu_b\n")
    rule = "{0}:\n\techo {0} >> ../made && printf '#!/bin/sh\\n' > {0} && chmod +x {0}\n"
    (src / "sub" / "Makefile").write_text(rule.format("osu_a") + rule.format("osu_b"))
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda prog: run_command(
            [sys.executable, "-c", _BUILD_ONE, str(src), prog, str(tmp_path)],
            env={"MPIBENCH_CACHE": str(tmp_path / "cache")}, timeout=300), ("osu_a", "osu_b")))
    assert [d.returncode for d in done] == [0, 0], [d.stderr[-300:] for d in done]
    roots = {d.stdout.strip() for d in done}
    assert len(roots) == 1
    (tree,) = (p for p in Path(roots.pop()).iterdir() if p.is_dir())
    assert runs.read_text() == "run\n"
    assert sorted((tree / "made").read_text().split()) == ["osu_a", "osu_b"]

CAMPAIGN = HEAD + f"""
[benchmarks.core]
benchmarks = ["PingPong", "Allreduce"]
sizes = "0,8,1K"
options = {{ iterations = 50 }}

[benchmarks.imb]
suite = "imb"
source = "{IMB_TGZ}"
benchmarks = ["PingPong", "Allreduce", "Barrier"]
sizes = "0,8,1K"
args = ["-iter", "50", "-time", "1"]

[benchmarks.osu]
suite = "osu"
source = "{OSU_TGZ}"
benchmarks = ["osu_latency"]
sizes = "0:10"
args = ["-i", "50", "-x", "5"]
"""


@pytest.mark.mpi
@pytest.mark.skipif(not (IMB_TGZ.exists() and OSU_TGZ.exists()),
                    reason="the peer tarballs (../shared/peers) are not on this machine")
def test_real_imb_and_osu_built_per_stack_run_beside_the_core(tmp_path, capsys):
    camp = _write(tmp_path, CAMPAIGN)
    assert cli_main(["campaign", "run", "--no-progress", str(camp)]) == 0
    con = sqlite3.connect(tmp_path / "mpibench.db")
    con.row_factory = sqlite3.Row
    runs = {r["id"]: dict(r) for r in con.execute("SELECT * FROM runs")}
    assert {r["status"] for r in runs.values()} == {"done"} and len(runs) == 6
    rows = con.execute("SELECT u.grp, r.benchmark, r.size, r.np, r.statistic, r.mean, "
                       "r.extra_json FROM results r JOIN runs u ON u.id = r.run_id").fetchall()
    imb = {(b, s) for g, b, s, *_ in rows if g == "imb"}
    assert imb == {("PingPong", 0), ("PingPong", 8), ("PingPong", 1024), ("Allreduce", 0),
                   ("Allreduce", 8), ("Allreduce", 1024), ("Barrier", 0)}
    osu = [r for r in rows if r[0] == "osu"]
    assert {r[2] for r in osu} == {1 << e for e in range(11)}       # 0:10 -> 1 B .. 1 KiB
    assert all(r[1] == "PingPong" and r[3] == 2 and r[5] > 0 for r in osu)
    assert json.loads(osu[0][6])["tool_benchmark"] == "osu_latency"
    # only the programs campaigns asked for were made, each in the one tree configured for
    # this stack and source: a second program reuses it (configure did not run again)
    (osu_prog,) = {json.loads(f[0])["peer"]["program"] for f in con.execute(
        "SELECT f.json FROM fingerprints f JOIN runs u ON u.fingerprint_id = f.id "
        "WHERE u.grp = 'osu'")}
    stack = find_stack("openmpi", discover())
    root = build_peer(stack, "osu", OSU_TGZ, benchmark="osu_latency")
    assert Path(osu_prog).is_relative_to(root)

    def made() -> set[str]:
        return {p.name for p in root.rglob("osu_*")
                if p.is_file() and os.access(p, os.X_OK) and p.read_bytes()[:4] == b"\x7fELF"}

    def marks() -> set[str]:
        return {p.name.removeprefix(".built-") for p in root.glob(".built-*")}

    assert "osu_latency" in made() and made() == marks()
    (config_log,) = root.glob("*/config.log")
    configured = config_log.stat().st_mtime_ns
    assert build_peer(stack, "osu", OSU_TGZ, benchmark="osu_bw") == root
    assert {"osu_latency", "osu_bw"} <= made() and made() == marks()
    assert config_log.stat().st_mtime_ns == configured
    fps = [json.loads(f[0]) for f in con.execute(
        "SELECT f.json FROM fingerprints f JOIN runs u ON u.fingerprint_id = f.id "
        "WHERE u.grp = 'imb'")]
    assert fps[0]["peer"]["suite"] == "imb" and fps[0]["peer"]["version"].startswith("2021")
    assert fps[0]["peer"]["program"].endswith("IMB-MPI1")
    program = fps[0]["peer"]["program"]
    con.close()

    # one variant, three tools: compared side by side, each launch one replicate
    capsys.readouterr()
    assert cli_main(["compare", "--db", str(tmp_path / "mpibench.db"), "--by", "tool",
                     "--baseline", "ompi/core", "--statistic", "mean", "--benchmark",
                     "PingPong", "--format", "json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    obj = obj.get("comparison", obj)
    assert obj["groups"] == ["ompi/core", "ompi/imb", "ompi/osu"]
    pp8 = {r["candidate"]: r for r in obj["rows"]
           if r["benchmark"] == "PingPong" and r["size"] == 8}
    assert pp8["ompi/imb"]["gain"] > 0 and pp8["ompi/osu"]["gain"] > 0
    assert pp8["ompi/imb"]["cand_launches"] == 2

    # a given binary instead of a source tree: the same suite, no build
    given = tmp_path / "given"
    given.mkdir()
    _write(given, HEAD.replace("repeats = 2", "repeats = 1") + f"""
[benchmarks.imb]
suite = "imb"
binary = "{program}"
benchmarks = ["PingPong"]
sizes = "0:3"
""")
    assert cli_main(["campaign", "run", "--no-progress", str(given / "peers.toml")]) == 0
    con = sqlite3.connect(given / "mpibench.db")
    sizes = sorted(s for (s,) in con.execute("SELECT size FROM results"))
    con.close()
    assert sizes == [0, 1, 2, 4, 8]


@pytest.mark.mpi
@pytest.mark.skipif(not Path("/usr/bin/NPopenmpi").exists(),
                    reason="Debian's netpipe-openmpi (NPopenmpi) is not installed")
def test_real_netpipe_binary_rows_come_from_its_np_out(tmp_path):
    # NetPIPE prints its table to stderr (stdout has only '0: host' lines) and writes np.out;
    # -n 50: a fixed number of round trips per size (NetPIPE otherwise runs each size for a
    # set time, about 1 s, whatever the machine; the rows are what this test reads)
    _write(tmp_path, HEAD.replace("repeats = 2", "repeats = 1") + """
[benchmarks.np]
suite = "netpipe"
binary = "/usr/bin/NPopenmpi"
sizes = "0:10"
args = ["-p", "0", "-n", "50"]
""")
    assert cli_main(["campaign", "run", "--no-progress", str(tmp_path / "peers.toml")]) == 0
    con = sqlite3.connect(tmp_path / "mpibench.db")
    rows = con.execute("SELECT benchmark, size, statistic, mean, bandwidth_mbps "
                       "FROM results").fetchall()
    fp = json.loads(con.execute("SELECT json FROM fingerprints").fetchone()[0])
    con.close()
    assert {r[0] for r in rows} == {"NetPIPE"} and {r[2] for r in rows} == {"min"}
    assert max(r[1] for r in rows) == 1024 and all(r[3] > 0 for r in rows)
    assert fp["peer"]["suite"] == "netpipe"


def test_cxx_wrapper_beside_each_kind_of_c_wrapper(tmp_path):
    from mpibench.peers import cxx_wrapper
    from mpibench.stacks import Stack

    for cc, cxx in (("mpicc.openmpi", "mpicxx.openmpi"), ("mpiicc", "mpiicpc")):
        (tmp_path / cc).write_text("")
        (tmp_path / cxx).write_text("")
        assert cxx_wrapper(Stack(name="s", mpicc=str(tmp_path / cc))) == str(tmp_path / cxx)
    # a module's bare wrapper: its sibling's name, found once the module is loaded
    assert cxx_wrapper(Stack(name="m", mpicc="mpicc", modules=["openmpi/4.1.6"])) == "mpicxx"


def test_peer_fuzz_surface_derandomized():
    """The 'peer tarballs and source trees' fuzz surface (tests/support/surfaces.py) with a
    fixed seed: hostile tarballs and trees, and OSU's program_dir on unpacked trees whose
    Makefile.am is non-UTF-8, huge or a symlink, refuse in one line or pass: no crash."""
    import random

    from support import surfaces as _surfaces

    surf = next(s for s in _surfaces.SURFACES if s.name == "peer tarballs and source trees")
    t = surf.run(random.Random(5), 40)
    assert (t.crashes, t.misparses, t.contract) == (0, 0, 0), t.examples
