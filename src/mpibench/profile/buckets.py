"""Which profiled calls are messages, and message-size buckets of a profile document.

    buckets = size_buckets(doc)                 # share of messages and bytes per size bucket
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from mpibench.errors import UsageError
from mpibench.units import byte_count, fmt_bytes, fmt_pow2, fmt_seconds

# ---- which calls are messages ------------------------------------------------------------
# A "message" is one call of a function that moves data, on the rank that made it: a Send and
# its matching Recv count once each, an Allreduce once per rank. The size of a call is what
# the profiler bins it by (profiler/mpib_internal.h): the bytes the rank sent or contributed,
# else received, else the receive buffer posted when the received size stayed unknown.
_MESSAGE_CLASSES = {"pt2pt.send", "pt2pt.recv", "pt2pt.sendrecv", "coll.blocking",
                    "coll.nonblocking", "coll.neighbor", "rma", "io"}
# Calls of those classes that carry no payload: barriers synchronise, window and file
# management calls set up. A split collective file access is one message: a read at its
# *_end (the status has the size), a write at its *_begin (the buffer). Persistent requests
# (Send_init, Allreduce_init, ...) are left out too: their size is known at *_init, which is
# not a transfer, and Start* carries none. Apart from the persistent *_init calls, the result
# is the set of functions with a byte rule (profiler/gen_wrappers.py; a test checks it against
# the mpib_funcs.txt of both stacks' builds).
_NO_PAYLOAD = re.compile(r"^MPI_(I?barrier|Barrier|Win_|File_(?!i?(read|write))"
                         r"|File_read\w*_begin$|File_write\w*_end$)")


def is_message_function(name: str, cls: str | None) -> bool:
    """True for functions whose calls are messages (see _MESSAGE_CLASSES)."""
    return cls in _MESSAGE_CLASSES and not _NO_PAYLOAD.match(name)


# ---- size buckets -----------------------------------------------------------------------
# Lower bounds of the default buckets after "0 B": factors of 16 around 1 KiB, so that the
# table reads like "most messages are 1-16 KiB" (the log2 bins are one --buckets log2 away).
COARSE_EDGES = (1, 64, 1 << 10, 16 << 10, 256 << 10, 4 << 20, 64 << 20)


def parse_buckets(spec: str | Sequence[int] | None) -> tuple[int, ...] | None:
    """Bucket edges from --buckets: "coarse" (default), "log2" (None: every log2 bin is its
    own bucket), or a comma list of powers of two, e.g. "64,1K,16K,256K" (K/M/G = 1024^n).
    The profiler bins sizes by powers of two, so only those can be bucket edges."""
    if spec is None or spec == "coarse":
        return COARSE_EDGES
    if spec == "log2":
        return None
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    edges = []
    for item in items:
        text = str(item).strip()
        v = byte_count(text)                 # the one byte-count grammar (units.py)
        if v is None:
            raise UsageError(f"--buckets {spec!r}: {text!r} is not a size; expected 'coarse', "
                             "'log2' or sizes like 64,1K,16K,256K")
        if v < 1 or v & (v - 1):
            raise UsageError(f"--buckets {spec!r}: {text!r} is not a power of two; the "
                             "profiler bins message sizes by powers of two")
        edges.append(v)
    if edges != sorted(set(edges)):
        raise UsageError(f"--buckets {spec!r}: expected increasing sizes")
    if edges[0] != 1:
        edges.insert(0, 1)
    return tuple(edges)


def bucket_label(lo: int, hi: int | None) -> str:
    """'0 B', '1 KiB - <16 KiB', '>= 64 MiB'."""
    if lo == 0:
        return "0 B"
    if hi is None:
        return f">= {fmt_pow2(lo)}"
    if hi == 2 * lo and lo == 1:
        return "1 B"
    return f"{fmt_pow2(lo)} - <{fmt_pow2(hi)}"


def _bucket_of(lo: int, edges: tuple[int, ...] | None) -> tuple[int, int | None]:
    """The (lower, upper) bounds of the bucket holding log2 bin [lo, 2 lo)."""
    if lo == 0:
        return 0, 1
    if edges is None:
        return lo, 2 * lo
    below = [e for e in edges if e <= lo]
    start = below[-1]
    above = [e for e in edges if e > lo]
    return start, (above[0] if above else None)


def _bin_bytes(entry: Sequence[Any]) -> tuple[int, bool]:
    """Bytes of one histogram bin and whether they were counted (4th element, written by the
    library since it counts them) or estimated (older profiles: 1.5 x the lower bound per
    call, the middle of [lo, 2 lo); exact for 0 and 1 byte)."""
    if len(entry) > 3:
        return int(entry[3]), True
    lo, calls = int(entry[0]), int(entry[1])
    return (calls * lo if lo <= 1 else int(round(calls * 1.5 * lo))), False


def size_buckets(doc: Mapping[str, Any], edges: tuple[int, ...] | None = COARSE_EDGES
                 ) -> dict[str, Any]:
    """Messages and bytes by size bucket, summed over every function that moves data and
    every rank of one profile. edges: lower bounds (COARSE_EDGES, None = log2 bins).

    Returns {"buckets": [{lo, hi, bucket, messages, message_share, bytes, byte_share,
    time_s, time_share, top_function}], "messages", "bytes", "time_s", "bytes_exact",
    "functions" (the message functions counted), "other_calls" (calls of functions that move
    no data: waits, tests, barriers, communicator calls), "most_messages", "most_bytes"}.
    With coarse edges every bucket is listed (zeros included, a fixed shape for tables and
    data frames); with log2 bins only the non-empty ones."""
    acc: dict[tuple[int, int | None], list] = {}
    if edges is not None:
        acc[(0, 1)] = [0, 0, 0.0, {}]
        for i, e in enumerate(edges):
            acc[(e, edges[i + 1] if i + 1 < len(edges) else None)] = [0, 0, 0.0, {}]
    exact = True
    counted: list[str] = []
    other = 0
    for name, f in (doc.get("functions") or {}).items():
        if not is_message_function(name, f.get("class")):
            other += int(f.get("calls") or 0)
            continue
        counted.append(name)
        for entry in f.get("hist") or []:
            key = _bucket_of(int(entry[0]), edges)
            a = acc.setdefault(key, [0, 0, 0.0, {}])
            nbytes, ok = _bin_bytes(entry)
            exact = exact and ok
            a[0] += int(entry[1])
            a[1] += nbytes
            a[2] += float(entry[2])
            a[3][name] = a[3].get(name, 0) + int(entry[1])
    msgs = sum(a[0] for a in acc.values())
    nbytes = sum(a[1] for a in acc.values())
    tsec = sum(a[2] for a in acc.values())
    rows = []
    for (lo, hi), (m, b, t, per_fn) in sorted(acc.items()):
        rows.append({"lo": lo, "hi": hi, "bucket": bucket_label(lo, hi), "messages": m,
                     "message_share": m / msgs if msgs else 0.0, "bytes": b,
                     "byte_share": b / nbytes if nbytes else 0.0, "time_s": t,
                     "time_share": t / tsec if tsec else 0.0,
                     "top_function": max(per_fn, key=per_fn.get) if per_fn else None})
    top_m = max(rows, key=lambda r: r["messages"]) if msgs else None
    top_b = max(rows, key=lambda r: r["bytes"]) if nbytes else None
    return {"edges": list(edges) if edges is not None else "log2", "buckets": rows,
            "messages": msgs, "bytes": nbytes, "time_s": tsec, "bytes_exact": exact,
            "functions": sorted(counted), "other_calls": other,
            "most_messages": top_m and {"bucket": top_m["bucket"],
                                        "share": top_m["message_share"]},
            "most_bytes": top_b and {"bucket": top_b["bucket"], "share": top_b["byte_share"]}}


def bucket_headline(b: Mapping[str, Any]) -> str:
    """'most messages are 1 KiB - <16 KiB (62%), most bytes 16 KiB - <256 KiB (80%)'."""
    if not b.get("messages"):
        return "no messages (no calls of functions that move data)"
    mm, mb = b["most_messages"], b["most_bytes"]
    text = f"most messages are {mm['bucket']} ({100 * mm['share']:.0f}%)"
    if mb:
        text += f", most bytes {mb['bucket']} ({100 * mb['share']:.0f}%)"
    return text


def render_buckets(doc: Mapping[str, Any], console, edges: tuple[int, ...] | None = COARSE_EDGES
                   ) -> None:
    """The size-bucket table of one profile (terminal)."""
    from rich.table import Table

    b = size_buckets(doc, edges)
    rows = _trim(b["buckets"])
    t = Table(title="Messages by size, all functions that move data (per call on each rank; "
                    f"{bucket_headline(b)})", title_justify="left")
    for c in ("size", "messages", "% messages", "bytes", "% bytes", "time", "% time",
              "most calls"):
        t.add_column(c, justify="left" if c in ("size", "most calls") else "right")
    for r in rows:
        t.add_row(r["bucket"], str(r["messages"]), f"{100 * r['message_share']:.1f}",
                  fmt_bytes(r["bytes"]), f"{100 * r['byte_share']:.1f}",
                  fmt_seconds(r["time_s"]), f"{100 * r['time_share']:.1f}",
                  r["top_function"] or "")
    console.print(t)
    notes = [f"{len(b['functions'])} functions counted; {b['other_calls']} calls of functions "
             "that move no data (waits, tests, barriers, communicator calls) are not messages"]
    if not b["bytes_exact"]:
        notes.append("bytes estimated from the log2 bins (1.5 x the lower bound per call): "
                     "this profile predates per-bin byte counts")
    console.print("; ".join(notes))


def _trim(rows: list[dict]) -> list[dict]:
    """Without the empty buckets at both ends (the shape in between stays)."""
    idx = [i for i, r in enumerate(rows) if r["messages"]]
    return rows[idx[0]:idx[-1] + 1] if idx else []


def bucket_records(doc: Mapping[str, Any], edges: tuple[int, ...] | None = COARSE_EDGES
                   ) -> list[dict[str, Any]]:
    """size_buckets' rows, for CSV."""
    return [{k: r[k] for k in ("bucket", "lo", "hi", "messages", "message_share", "bytes",
                               "byte_share", "time_s", "time_share", "top_function")}
            for r in size_buckets(doc, edges)["buckets"]]


def function_records(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One record per function (sums over ranks), for CSV."""
    total = (doc.get("mpi_time_s") or {}).get("total") or 0.0
    out = []
    for name, f in sorted((doc.get("functions") or {}).items(), key=lambda kv: -kv[1]["time_s"]):
        out.append({"function": name, "class": f["class"], "calls": f["calls"],
                    "time_s": f["time_s"], "share_of_mpi": f["time_s"] / total if total else 0.0,
                    "mean_call_s": f.get("mean_call_s"), "bytes_sent": f["bytes_sent"],
                    "bytes_recv": f["bytes_recv"], "recv_unknown": f["recv_unknown"],
                    "ranks_calling": f.get("ranks_calling"),
                    "message_function": is_message_function(name, f["class"])})
    return out
