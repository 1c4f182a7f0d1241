"""The per-stack build cache, with a small real C component compiled by the real wrappers."""

from __future__ import annotations

import os
import shutil

import pytest

from mpibench.build import build_component
from mpibench.errors import BuildError

MAKEFILE = """\
MPICC ?= mpicc
BUILD ?= .
$(BUILD)/mpibench-core: main.c
\t$(MPICC) -std=c11 -Wall -Werror -o $@ main.c
"""
GOOD = '#include <mpi.h>\nint main(void){ return MPI_VERSION > 0 ? 0 : 1; }\n'


@pytest.fixture
def src_root(tmp_path, monkeypatch):
    root = tmp_path / "src"
    (root / "core").mkdir(parents=True)
    (root / "core" / "Makefile").write_text(MAKEFILE)
    (root / "core" / "main.c").write_text(GOOD)
    monkeypatch.setenv("MPIBENCH_SOURCE_ROOT", str(root))
    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    return root


@pytest.mark.system
def test_cached_until_source_changes(src_root, openmpi):
    first = build_component(openmpi, "core")
    assert first.exists()
    mtime = first.stat().st_mtime_ns
    again = build_component(openmpi, "core")
    assert again == first and again.stat().st_mtime_ns == mtime  # no rebuild
    (src_root / "core" / "main.c").write_text(GOOD + "/* edited */\n")
    rebuilt = build_component(openmpi, "core")
    assert rebuilt != first and rebuilt.exists()


@pytest.mark.system
def test_each_stack_gets_its_own_build(src_root, openmpi, mpich):
    a = build_component(openmpi, "core")
    b = build_component(mpich, "core")
    assert a != b and a.exists() and b.exists()


@pytest.mark.system
def test_compiler_errors_are_shown(src_root, openmpi, tmp_path):
    (src_root / "core" / "main.c").write_text("int main(void) { return undeclared_thing; }\n")
    with pytest.raises(BuildError) as info:
        build_component(openmpi, "core")
    assert "openmpi" in str(info.value)
    assert "undeclared_thing" in info.value.log and "error" in info.value.log
    # nothing half-built is left where a later call would take it for a good build
    assert not list((tmp_path / "cache" / "build").glob("core-openmpi-*/mpibench-core"))


def test_cache_key_of_a_bare_wrapper_name_does_not_depend_on_the_directory(tmp_path,
                                                                            monkeypatch):
    """A stack whose wrapper is a bare name ('mpicc') once got one cache key per working
    directory (realpath of the name), so every directory rebuilt the core."""
    from mpibench.stacks import Stack, wrapper_key

    s = Stack(name="x", mpicc="mpicc-does-not-exist", library_version="v", kind="mpich")
    keys = set()
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        monkeypatch.chdir(tmp_path / d)
        keys.add(s.identity())
    assert len(keys) == 1
    # a bare name found on PATH is the program it runs, wherever mpibench is started
    assert wrapper_key("sh") == os.path.realpath(shutil.which("sh"))
    assert wrapper_key("sh", ["openmpi/4"]) == "sh"  # a module provides it: not looked up
