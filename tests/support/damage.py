"""Stores damaged in known ways: the clean fuzz store (support.fuzz.clean_store_bytes) with
real bytes changed where a value, a schema name or a b-tree page header sits. Used by
tests/store/test_damage.py (every read verb refuses them) and tests/store/test_local.py
(a store recorded as verified and damaged afterwards is still refused)."""

from __future__ import annotations

import sqlite3
import struct
import tempfile
from pathlib import Path

from support import fuzz

# every kind damaged() makes (each is refused when the store is opened read-only)
KINDS = ("real-inf", "text-utf8", "json", "schema", "schema-utf8", "page")


def value_offset(data: bytes, sql: str, encode) -> int:
    """Where a value the clean store holds sits in its bytes (SQLite keeps a REAL as 8
    big-endian bytes and TEXT as its UTF-8 bytes)."""
    with tempfile.TemporaryDirectory() as td:
        p = Path(td) / "s.db"
        p.write_bytes(data)
        con = sqlite3.connect(p)
        value = con.execute(sql).fetchone()[0]
        con.close()
    needle = encode(value)
    k = data.find(needle)
    assert k > 0 and data.count(needle) >= 1, (value, needle)
    return k


def damaged(kind: str) -> bytes:
    data = bytearray(fuzz.clean_store_bytes())
    if kind == "real-inf":
        # an imported mean's bytes: the double becomes inf
        k = value_offset(bytes(data), "SELECT mean FROM results WHERE mean != "
                          "CAST(mean AS INTEGER) LIMIT 1", lambda v: struct.pack(">d", v))
        data[k:k + 8] = struct.pack(">d", float("inf"))
    elif kind == "text-utf8":
        k = value_offset(bytes(data), "SELECT statistic FROM results LIMIT 1",
                          lambda v: v.encode())
        data[k + 1] = 0xff                         # 'mean' -> 'm\xffan'
    elif kind == "json":
        k = value_offset(bytes(data), "SELECT extra_json FROM results WHERE extra_json "
                          "LIKE '{%' LIMIT 1", lambda v: v.encode())
        data[k] = ord("[")                         # '{...}' -> '[...}'
    elif kind == "schema":
        # a column name in the schema text: SQLite's quick check accepts it, and report
        # printed its notice, then "no such column: mpi_init_us" (bench_fuzz, seed 12)
        k = bytes(data).find(b"mpi_init_us")
        assert k > 0
        data[k + 10] = ord("z")
    elif kind == "schema-utf8":
        # a byte of an index name in the schema: SQLite's error message quoted it and
        # Python could not decode the message (UnicodeDecodeError; bench_fuzz seed 7)
        k = bytes(data).find(b"results_run")
        assert k > 0
        data[k + 3] = 0x80
    elif kind == "page":
        for k in range(4096 + 8, 4096 + 40):       # a b-tree page header
            data[k] ^= 0x55
    return bytes(data)
