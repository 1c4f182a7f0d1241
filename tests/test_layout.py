"""tests/ mirrors src/mpibench/ (tests/README.md): every folder of tests/ is a package of
src/mpibench/ or one of the few fixed ones, and a test file at the top of tests/ is about a
module-level file of src/mpibench/ or one of the listed cross-cutting topics."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src" / "mpibench"
# not packages of src/mpibench: the C core (core/ at the top), helpers, data, the tier guard
FIXED = {"core", "support", "data", "golden", "_tier", "__pycache__"}
# top-level tests about no single module
TOPICS = {"layers", "layout", "docs_examples", "bench_scripts", "cli_fuzz", "cli_inputs",
          "cli_run", "check_real", "files_boundary", "import_limits", "sizes_grammar",
          "build_cache", "check", "import", "function_length", "bench_replay"}


def _packages() -> set[str]:
    return {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}


def _modules() -> set[str]:
    return {p.stem for p in SRC.glob("*.py") if not p.stem.startswith("_")}


def test_every_folder_is_a_package_or_fixed():
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith(".")}
    stray = sorted(folders - _packages() - FIXED)
    assert not stray, f"tests/ folders that mirror no src/mpibench package: {stray}"


def test_top_level_tests_are_about_top_level_modules():
    known = _modules() | TOPICS
    stray = sorted(p.name for p in TESTS.glob("test_*.py") if p.stem[len("test_"):] not in known)
    assert not stray, (f"{stray}: a test of a package belongs in tests/<package>/; top-level "
                       "tests are for module-level files of src/mpibench/ (or add the topic "
                       "to TOPICS)")


def test_support_has_no_tests_and_folders_have_no_helpers():
    assert not list((TESTS / "support").glob("test_*.py"))
    for d in TESTS.iterdir():
        if d.is_dir() and d.name in _packages() | {"core"}:
            helpers = sorted(p.name for p in d.glob("*.py") if not p.name.startswith("test_"))
            assert not helpers, f"tests/{d.name}: helpers {helpers} belong in tests/support/"
