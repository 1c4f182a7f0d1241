"""The record of verified stores (store/local.py `_Verified`): a read-only open of content
that passed SQLite's quick check and the value check before is not checked again, and
finds every damage the checks find. The damage is made after clean opens recorded the
file's digest, in place, with its size, inode and modification time kept (the stamp that
decides whether to hash), so only the bytes tell."""

from __future__ import annotations

import os
import random

import pytest

from mpibench.errors import UsageError
from mpibench.store import Store, local
from support.damage import KINDS, damaged
from support.fuzz import clean_store_bytes


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """Records kept under tmp_path; the small real store is large enough to be recorded."""
    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(local._Verified, "MIN_BYTES", 0)
    return tmp_path / "cache" / "verified"


def _open(path) -> str:
    try:
        Store(path, readonly=True).close()
    except UsageError as exc:
        return str(exc).replace(str(path), "STORE")
    return "ok"


def _fresh(path, data: bytes, monkeypatch) -> str:
    """What the checks say of data with no record at all (a new file, records off)."""
    path.write_bytes(data)
    with monkeypatch.context() as m:
        m.setattr(local._Verified, "MIN_BYTES", 1 << 62)
        return _open(path)


def _overwrite_in_place(path, data: bytes) -> None:
    st = path.stat()
    with open(path, "r+b") as fh:         # same inode, same size
        fh.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def _record(path) -> None:
    """Open a clean store until its digest is recorded (the first open records its stamp,
    the next one, stamp unchanged, hashes it)."""
    assert _open(path) == "ok" and _open(path) == "ok"


def test_content_that_passed_is_not_checked_again(tmp_path, recorded, monkeypatch):
    calls = []
    real = local._damaged_value
    monkeypatch.setattr(local, "_damaged_value", lambda *a: calls.append(1) or real(*a))
    p = tmp_path / "s.db"
    p.write_bytes(clean_store_bytes())
    assert _open(p) == "ok" and len(calls) == 1          # checked; its stamp recorded
    assert len(list(recorded.iterdir())) == 1
    assert _open(p) == "ok" and len(calls) == 2          # checked and hashed
    assert _open(p) == "ok" and len(calls) == 2          # the same bytes: not checked again
    assert _open(p) == "ok" and len(calls) == 2
    copy = tmp_path / "copy.db"
    copy.write_bytes(clean_store_bytes())
    assert _open(copy) == "ok" and len(calls) == 3       # another path is checked
    with Store(p) as store:                              # a writer changes the bytes
        store.add_campaign("more", {})
    assert _open(p) == "ok" and len(calls) == 4


@pytest.mark.parametrize("kind", KINDS)
def test_damage_after_a_recorded_check_is_found(tmp_path, recorded, monkeypatch, kind):
    p = tmp_path / "s.db"
    clean, bad = clean_store_bytes(), damaged(kind)
    assert len(bad) == len(clean)
    want = _fresh(tmp_path / "fresh.db", bad, monkeypatch)
    assert want != "ok"
    p.write_bytes(clean)
    _record(p)
    _overwrite_in_place(p, bad)
    assert _open(p) == want


def test_random_damage_is_found_alike_with_and_without_the_record(tmp_path, recorded,
                                                                   monkeypatch):
    """Seeded byte changes anywhere in the file: the record changes no answer. Some changes
    are refused (the count shows the test can fail), some are not (a free byte, a sample)."""
    clean = clean_store_bytes()
    rng = random.Random(22)
    p = tmp_path / "s.db"
    p.write_bytes(clean)
    refused = 0
    for _ in range(40):
        data = bytearray(clean)
        k = rng.randrange(100, len(data))
        data[k] ^= rng.randrange(1, 256)
        want = _fresh(tmp_path / "fresh.db", bytes(data), monkeypatch)
        _overwrite_in_place(p, clean)
        _record(p)
        _overwrite_in_place(p, bytes(data))
        assert _open(p) == want, k
        refused += want != "ok"
    assert 0 < refused < 40, refused


def test_an_unusable_cache_only_means_checking(tmp_path, monkeypatch):
    monkeypatch.setattr(local._Verified, "MIN_BYTES", 0)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("MPIBENCH_CACHE", str(blocker))
    p = tmp_path / "s.db"
    p.write_bytes(damaged("json"))
    assert "is not valid JSON" in _open(p)
    p.write_bytes(clean_store_bytes())
    assert _open(p) == "ok" and _open(p) == "ok"
