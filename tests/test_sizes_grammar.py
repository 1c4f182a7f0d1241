"""One size grammar: what Python accepts for --sizes / sizes = is exactly what mpibench-core
accepts (core/args.c), so no launch fails on a size spec that passed the checks."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.benchmarks import parse_sizes
from mpibench.errors import UsageError

REFUSED = ["0:٣", "²:3", "0 :3", " 0:3", "0:3 ", "0:" + "0" * 34 + "3", "1:2:3", ":3", "0:",
           ",".join(["8"] * 1000), "", "1,,2", "1,", "8\u00a0", "\u0668", "1Q", "4KB", "4Ki",
           "2T1", "-1", "+1", "1e3", "1.5K", "2000G", "0x10", "9" * 50, "٣", "1\x00"]
ACCEPTED = {"0:3": [0, 1, 2, 4, 8], "3:3": [8], "0,8,1K": [0, 8, 1024], " 8 , 4k ": [8, 4096],
            "1KiB,2mib,1T": [1024, 2 << 20, 1 << 40], "5b": [5], "0:40": None,
            "0" * 30 + "3:4": [8, 16]}


@pytest.mark.parametrize("spec", REFUSED, ids=repr)
def test_refused(spec):
    with pytest.raises(UsageError):
        parse_sizes(spec)


@pytest.mark.parametrize("spec, sizes", ACCEPTED.items(), ids=repr)
def test_accepted(spec, sizes):
    got = parse_sizes(spec)
    assert sizes is None or got == sizes


ALPHABET = "0123456789:, \tkKmMgGtTbBiI-+.e٣²\u00a0x"


def core_accepts(spec: str) -> bool:
    """core/args.c's parse_sizes, transcribed as a reference for the property test."""
    import re

    if ":" in spec:
        a, _, b = spec.partition(":")
        if not a or len(a) >= 32 or not b or len(b) >= 32:
            return False
        if not (a.isascii() and a.isdigit() and b.isascii() and b.isdigit()):
            return False
        return int(a) <= int(b) <= 40
    if not spec or len(spec.encode()) >= 4096:
        return False
    toks = spec.split(",")
    if len(toks) > 256:
        return False
    for t in toks:
        m = re.fullmatch(r"[ \t\n\v\f\r]*([0-9]+)[ \t\n\v\f\r]*([KMGTkmgt](?:[iI][bB])?|[bB])?"
                         r"[ \t\n\v\f\r]*", t)
        if not m:
            return False
        shift = {"k": 10, "m": 20, "g": 30, "t": 40}.get((m.group(2) or " ")[0].lower(), 0)
        if int(m.group(1)) << shift > 1 << 40:
            return False
    return True


def python_accepts(spec: str) -> bool:
    try:
        parse_sizes(spec)
        return True
    except UsageError:
        return False


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=24))
def test_python_grammar_equals_the_core_reference(spec):
    assert python_accepts(spec) == core_accepts(spec)


@pytest.mark.system
def test_python_grammar_equals_the_real_core(tmp_path_factory):
    """The real mpibench-core's argument parser (it exits before MPI_Init with --list); the
    session's build of the core (support.coreutil.build_all), not one of its own."""
    from mpibench.process import run_command
    from support.coreutil import available, build_all

    stack = "mpich" if available("mpich") else "openmpi"
    if not available(stack):
        pytest.skip("no MPI stack to build the core with")
    exe = build_all(tmp_path_factory)[stack]
    rng = random.Random(12)
    corpus = REFUSED[:-1] + list(ACCEPTED) + ["".join(rng.choice(ALPHABET) for _ in range(
        rng.randint(1, 12))) for _ in range(150)]
    for spec in corpus:
        if "\x00" in spec:
            continue
        res = run_command([str(exe), "--sizes", spec, "--list"], timeout=30)
        assert (res.returncode == 0) == python_accepts(spec), (spec, res.stderr)
