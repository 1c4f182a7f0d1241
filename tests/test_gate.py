"""The test suite is a deterministic gate: property tests draw the same cases on every run."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

_DRAWN: list[int] = []


def test_hypothesis_profile_is_derandomized():
    if os.environ.get("MPIBENCH_HYPOTHESIS_PROFILE", "gate") != "gate":
        return
    assert settings.default.derandomize is True
    assert settings.default.database is None


@settings(max_examples=20)
@given(st.integers())
def _draw(x):
    _DRAWN.append(x)


def test_two_runs_of_a_property_draw_the_same_cases():
    # a property test decorated with its own @settings inherits the profile: two runs draw
    # the same values (with random draws, 20 integers agree only by accident)
    if os.environ.get("MPIBENCH_HYPOTHESIS_PROFILE", "gate") != "gate":
        return
    _draw()
    first = list(_DRAWN)
    _DRAWN.clear()
    _draw()
    assert first == _DRAWN and len(set(first)) > 3


def test_no_absolute_work_paths_in_code():
    """The peers (and everything else) are found relative to the repository (peers:
    ../shared/peers or $MPIBENCH_PEERS): a fresh clone elsewhere must run the same."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    bad = []
    for sub in ("src", "tests", "bench", "scripts"):
        for p in (repo / sub).rglob("*"):
            if p.suffix not in (".py", ".sh") or not p.is_file():
                continue
            for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
                if re.search(r"""["'(=\s]/work/""", line) and "noqa: abs-path" not in line:
                    bad.append(f"{p.relative_to(repo)}:{i}: {line.strip()[:80]}")
    assert not bad, "\n".join(bad)


def test_every_input_surface_is_listed_in_the_docs_and_fuzzed():
    """bench/bench_fuzz.py iterates tests/support/surfaces.py SURFACES; docs/fuzzing.md lists the
    same names, so a new surface is documented and fuzzed, or this fails."""
    import re
    from pathlib import Path

    from support import surfaces as _surfaces

    doc = (Path(__file__).resolve().parents[1] / "docs" / "fuzzing.md").read_text()
    table = doc.split("## The list", 1)[1].split("##", 1)[0]
    listed = [m.group(1).strip() for m in re.finditer(r"^\| ([^|]+?) \|", table, re.M)
              if m.group(1).strip() not in ("surface", "---")]
    assert listed == _surfaces.names()
