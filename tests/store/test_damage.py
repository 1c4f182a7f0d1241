"""Damaged stores on every read verb: compare, report, campaign list/status and mpibench.api
run the integrity check import runs (SQLite's quick check, then the values: JSON parses,
samples are whole float64s, numbers are finite) and refuse a byte-flipped store in one line,
exit 2, no traceback. The stores are real (imports and a campaign's runs written by the
store's own code) with real bytes changed in the file."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest

from support import fuzz as _fuzz
from support.damage import damaged as _damaged

VERBS = _fuzz.STORE_READ_VERBS


def _run_all(data: bytes) -> list[tuple[list[str], _fuzz.CliOutcome]]:
    out = []
    with tempfile.TemporaryDirectory(prefix="mpibench-dmg-") as td:
        tmp = Path(td)
        camp = str(_fuzz._store_campaign_file())
        for argv in VERBS:
            (tmp / "s.db").write_bytes(data)
            for side in ("s.db-wal", "s.db-shm", "r.html"):
                (tmp / side).unlink(missing_ok=True)
            o = _fuzz.run_cli([{"S": "s.db", "CAMPFILE": camp}.get(a, a) for a in argv], tmp)
            out.append((argv, o))
        for call in _fuzz.STORE_API_CALLS:
            (tmp / "s.db").write_bytes(data)
            out.append((["api", call], _fuzz._api_call(call, tmp / "s.db")))
    return out


def test_the_clean_store_is_read_by_every_verb():
    for argv, o in _run_all(_fuzz.clean_store_bytes()):
        assert o.rc == 0 and not o.crash, (argv, o.stderr, o.crash)


@pytest.mark.parametrize("kind, said", [
    ("real-inf", "is not a finite number"),        # was numpy warnings and a StopIteration
    ("text-utf8", "Could not decode to UTF-8"),    # was an OperationalError traceback
    ("json", "is not valid JSON"),                 # was a JSONDecodeError traceback
    ("page", "damaged"),
    ("schema", "has no column mpi_init_us"),
    ("schema-utf8", "damaged"),
])
def test_a_byte_flipped_store_is_refused_in_one_line_by_every_read_verb(kind, said):
    for argv, o in _run_all(_damaged(kind)):
        assert o.rc == 2 and not o.crash and not o.problems(ok_rcs=(2,))[1:], \
            (kind, argv, o.problems(ok_rcs=(2,)), o.stderr[-500:], o.crash)
        lines = [ln for ln in o.stderr.splitlines() if ln.strip()]
        assert lines[-1].startswith("mpibench: error: ") and said in lines[-1], (argv, lines)


def test_random_damage_on_every_read_verb():
    """Fixed seeds (the same cases every run; bench/bench_fuzz.py explores): whatever the
    damage, an answer (0/1) or one line (2), never a traceback."""
    rng = random.Random(22)
    for _ in range(6):
        for argv, o, how in _fuzz.run_store_case(random.Random(rng.getrandbits(64))):
            assert not o.problems(ok_rcs=(0, 1, 2)), (argv, how, o.problems(ok_rcs=(0, 1, 2)))
