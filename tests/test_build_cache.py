"""The build cache and the peer suites' sources as a hostile user (or several processes at
once) meets them: bad tarballs and special files are one line; a tarball that expands past
the cap is refused before anything is written; the cache key follows symlinked source files;
one entry built by four processes at once: all succeed, one builds, the others wait and use
it; a killed builder leaves nothing running and nothing behind for good. The protocol:
docs/design.md, "Shared files and caches"."""

from __future__ import annotations

import gzip
import io
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from mpibench.build import staged_build
from mpibench.errors import UsageError
from mpibench.peers import MAX_UNPACKED_BYTES, _unpack, check_source_tree, source_digest


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], mode="w:gz") -> Path:
    with tarfile.open(path, mode) as tf:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    i = tarfile.TarInfo(name)
    i.type, i.linkname, i.mode = kind, link, 0o644
    return i


def _good(path: Path) -> Path:
    return _tar(path, [(_info("suite/Makefile"), b"all:\n\ttrue\n"),
                       (_info("suite/src/a.c"), b"int a;\n")])


def _bad_tarballs(tmp: Path) -> dict[str, Path]:
    good = _good(tmp / "good.tgz").read_bytes()
    out = {
        "traversal": _tar(tmp / "trav.tgz", [(_info("suite/../../evil"), b"x")]),
        "absolute": _tar(tmp / "abs.tgz", [(_info("/tmp/mpibench-evil-abs"), b"x")]),
        "absolute symlink": _tar(tmp / "asym.tgz", [(_info("suite/l", tarfile.SYMTYPE,
                                                           "/etc/passwd"), None)]),
        "symlink out": _tar(tmp / "osym.tgz", [(_info("suite/l", tarfile.SYMTYPE,
                                                      "../../../etc"), None)]),
        "hard link out": _tar(tmp / "hard.tgz", [(_info("suite/h", tarfile.LNKTYPE,
                                                        "../../etc/passwd"), None)]),
        "hard link to nothing": _tar(tmp / "hard2.tgz", [(_info("suite/h", tarfile.LNKTYPE,
                                                               "suite/missing"), None)]),
        "device": _tar(tmp / "dev.tgz", [(_info("suite/null", tarfile.CHRTYPE), None)]),
        "fifo": _tar(tmp / "fifo.tgz", [(_info("suite/p", tarfile.FIFOTYPE), None)]),
        "not a tarball": tmp / "text.tgz",
        "empty file": tmp / "empty.tgz",
        "empty tarball": _tar(tmp / "none.tgz", []),
    }
    out["not a tarball"].write_text("this is a README, not a tarball\n")
    out["empty file"].write_bytes(b"")
    (tmp / "trunc.tgz").write_bytes(good[: len(good) // 2])
    out["truncated"] = tmp / "trunc.tgz"
    flipped = bytearray(good)
    for k in range(20, len(flipped) - 8, 7):
        flipped[k] ^= 0x5A
    (tmp / "flip.tgz").write_bytes(bytes(flipped))
    out["flipped bytes"] = tmp / "flip.tgz"
    return out


@pytest.mark.parametrize("kind", ["traversal", "absolute", "absolute symlink", "symlink out",
                                  "hard link out", "hard link to nothing", "device", "fifo",
                                  "not a tarball", "empty file", "empty tarball", "truncated",
                                  "flipped bytes"])
def test_bad_tarballs_are_one_line_and_write_nothing_outside(tmp_path, kind):
    (tmp_path / "in").mkdir()
    src = _bad_tarballs(tmp_path / "in")[kind]
    into = tmp_path / "work" / "stage"
    into.mkdir(parents=True)
    with pytest.raises(UsageError) as exc:
        _unpack(src, into)
    msg = str(exc.value)
    assert msg.startswith(f"peer source {src}:") and "\n" not in msg, msg
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["stage"]
    assert not Path("/tmp/mpibench-evil-abs").exists()


def test_a_good_tarball_unpacks(tmp_path):
    into = tmp_path / "stage"
    into.mkdir()
    tree = _unpack(_good(tmp_path / "g.tgz"), into)
    assert tree.name == "suite" and (tree / "src" / "a.c").read_text() == "int a;\n"


def _bomb(path: Path, size: int) -> Path:
    """A tar.gz of one file of `size` zero bytes, about 1 KB per MiB: gzip members of one
    compressed MiB of zeros, concatenated (valid gzip, made in milliseconds)."""
    head = tarfile.TarInfo("suite/zeros")
    head.size = size
    mib = gzip.compress(b"\0" * (1 << 20), 9)
    with open(path, "wb") as fh:
        fh.write(gzip.compress(head.tobuf(format=tarfile.GNU_FORMAT)))
        for _ in range(size >> 20):
            fh.write(mib)
        fh.write(gzip.compress(b"\0" * 1024))
    return path


def test_a_tarball_that_expands_to_a_gibibyte_is_refused_before_writing(tmp_path):
    bomb = _bomb(tmp_path / "bomb.tgz", 1 << 30)
    assert bomb.stat().st_size < 2 << 20 and MAX_UNPACKED_BYTES < 1 << 30
    into = tmp_path / "stage"
    into.mkdir()
    with pytest.raises(UsageError, match="expands to more than 512 MiB"):
        _unpack(bomb, into)
    assert list(into.iterdir()) == []


def test_a_fifo_in_a_source_tree_is_one_line(tmp_path):
    src = tmp_path / "suite"
    (src / "sub").mkdir(parents=True)
    (src / "Makefile").write_text("all:\n")
    os.mkfifo(src / "sub" / "pipe")
    with pytest.raises(UsageError, match=r"sub/pipe: a FIFO; a source tree holds files"):
        check_source_tree(src)
    into = tmp_path / "stage"
    into.mkdir()
    with pytest.raises(UsageError, match="a FIFO"):      # the copy would block forever
        _unpack(src, into)


def test_the_cache_key_follows_symlinked_source_files(tmp_path):
    outside = tmp_path / "shared.h"
    outside.write_text("#define N 1\n")
    src = tmp_path / "suite"
    src.mkdir()
    (src / "a.c").write_text("int a;\n")
    (src / "n.h").symlink_to(outside)
    (src / "inc").symlink_to(tmp_path / "incdir", target_is_directory=True)
    (tmp_path / "incdir").mkdir()
    (tmp_path / "incdir" / "x.h").write_text("1\n")
    first = source_digest(src)
    outside.write_text("#define N 2\n")          # edited through the link: a new key
    second = source_digest(src)
    (tmp_path / "incdir" / "x.h").write_text("2\n")
    third = source_digest(src)
    assert len({first, second, third}) == 3
    assert source_digest(src) == third           # stable


_BUILDER = """
import sys, time, os
from pathlib import Path
from mpibench.build import staged_build
final = Path(sys.argv[1])
with staged_build(final, lambda d: (d / "done").exists()) as tmp:
    if tmp is None:
        print("used"); sys.exit(0)
    for i in range(50):
        (tmp / f"f{i}").write_text(str(os.getpid()))
    (tmp / "done").write_text(str(os.getpid()))
    print("built")
"""


def test_four_processes_building_one_entry_all_succeed(tmp_path):
    """27 of 80 raised FileNotFoundError or ENOTEMPTY without a protocol; now one builds and
    the others wait for its lock and use the entry."""
    for rnd in range(5):
        final = tmp_path / "build" / f"entry{rnd}"
        procs = [subprocess.Popen([sys.executable, "-c", _BUILDER, str(final)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(4)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, outs
        assert sorted(o.strip() for o, _ in outs) == ["built", "used", "used", "used"], outs
        assert (final / "done").exists() and len(list(final.iterdir())) == 51
    left = [p.name for p in (tmp_path / "build").iterdir() if not p.name.endswith(".lock")]
    assert sorted(left) == [f"entry{r}" for r in range(5)]


def test_a_finished_entry_is_never_replaced_by_another_builder(tmp_path):
    final = tmp_path / "build" / "e"
    with staged_build(final, lambda d: (d / "done").exists()) as tmp:
        (tmp / "done").write_text("1")
    inode = final.stat().st_ino
    with staged_build(final, lambda d: (d / "done").exists()) as tmp:
        assert tmp is None
    assert final.stat().st_ino == inode and (final / "done").read_text() == "1"


def test_a_killed_builders_staging_directory_and_processes_go_on_the_next_build(tmp_path):
    """What a SIGKILLed builder leaves: its staging directory, and a process still working
    in it (`make` in its own session). The next builder of the entry stops it and removes
    the directory, under the entry's lock."""
    final = tmp_path / "build" / "e"
    final.parent.mkdir(parents=True)
    stale = final.parent / ".e.stage-dead1234"
    stale.mkdir()
    (stale / "half.o").write_text("x")
    orphan = subprocess.Popen(["sleep", "600"], cwd=stale, start_new_session=True)
    try:
        with staged_build(final, lambda d: (d / "done").exists()) as tmp:
            (tmp / "done").write_text("1")
        assert orphan.wait(timeout=60) != 0        # stopped (SIGTERM), not left running
    finally:
        if orphan.poll() is None:
            orphan.kill()
    assert not stale.exists() and (final / "done").exists()


_PEER_BUILD = """
import sys
from pathlib import Path
from mpibench.peers import build_peer
from mpibench.stacks import Stack
s = Stack(name="fake", kind="openmpi", mpicc="cc", library_version="x")
build_peer(s, "netpipe", sys.argv[1])
"""


def _makes_in(path: Path) -> list[int]:
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if cwd.startswith(str(path)) and os.path.basename(argv0) in (b"make", b"sleep"):
            out.append(int(pid))
    return out


@pytest.mark.system
def test_sigkill_during_a_peer_build_leaves_no_make_running(tmp_path):
    """The harness SIGKILLed while `make` builds a peer: make (in its own session) got
    nothing and ran on for good, its staging directory stayed in the cache. Now make dies
    with the harness (PR_SET_PDEATHSIG) and the next build removes the directory."""
    src = tmp_path / "suite"
    src.mkdir()
    (src / "Makefile").write_text("mpi:\n\tsleep 600\n")
    env = {**os.environ, "MPIBENCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-c", _PEER_BUILD, str(src)], env=env,
                            start_new_session=True)
    build = tmp_path / "cache" / "build"
    try:
        end = time.monotonic() + 120          # a failure bound: the loop ends on the event
        while time.monotonic() < end and not (build.is_dir() and _makes_in(build)):
            assert proc.poll() is None, "the build ended before make started"
            time.sleep(0.05)
        running = _makes_in(build)
        assert running, "make never started"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        end = time.monotonic() + 120
        while time.monotonic() < end and any(os.path.exists(f"/proc/{p}") and
                                             _state(p) != "Z" for p in running):
            time.sleep(0.05)
        alive = [p for p in running if os.path.exists(f"/proc/{p}") and _state(p) != "Z"]
        assert not alive, f"make/sleep {alive} outlived the killed build"
    finally:
        for p in _makes_in(tmp_path):
            os.kill(p, signal.SIGKILL)
    assert list(build.glob(".peer-*.stage-*"))          # what the kill left ...
    (src / "Makefile").write_text("mpi:\n\ttouch NPmpi\n")
    res = subprocess.run([sys.executable, "-c", _PEER_BUILD, str(src)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert not list(build.glob(".peer-*.stage-*"))      # ... the next build removed


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"

