"""Recognise a benchmark output by its content (never its file name) and parse it.

`parse_bytes(data)` is the importer's entry point: it rejects binary data and unknown formats
with a clear problem instead of an exception, decompresses gzip, decodes text (invalid bytes
become U+FFFD, so the lines holding them fail to parse and are reported, the rest is kept),
detects the tool and hands the text to that tool's parser.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable, Iterator

from mpibench.parsers import imb, nccl, netpipe, osu
from mpibench.parsers.base import ParseResult, clip

MAX_BYTES = 512 << 20        # a benchmark output is kilobytes; refuse to read a disk image
# Formats parsed whole hold the text, its lines and every record at once (~40x the file):
# past this size only OSU output, whose tables stand alone, is read (streamed) in segments.
WHOLE_MAX = 16 << 20
SEGMENT_BYTES = 1 << 20
_HEAD_BYTES = 400_000

PARSERS: dict[str, Callable[[str], ParseResult]] = {
    "imb": imb.parse_imb,
    "osu": osu.parse_osu,
    "nccl": nccl.parse_nccl_text,
    "nccl-json": nccl.parse_nccl_json,
    "netpipe": netpipe.parse_netpipe,
}

_TEXT_CTRL = set(b"\t\n\r\f\v\x1b")
_CTRL_BYTES = bytes(b for b in range(32) if b not in _TEXT_CTRL)
_NETPIPE_ROW = re.compile(r"^\s*\d+\s+\d+(?:\.\d+)?\s+\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\s*$")


def decode(data: bytes) -> tuple[str | None, str | None]:
    """(text, None) or (None, why it is not text)."""
    head = data[:65536]
    if not head:
        return None, "empty file: expected IMB, OSU, nccl-tests or NetPIPE output"
    bad = len(head) - len(head.translate(None, _CTRL_BYTES))
    text = data.decode("utf-8", errors="replace")
    invalid = text[:65536].count("\ufffd")
    if (bad + invalid) > 0.10 * len(head) or head.count(0) > 0.01 * len(head) + 8:
        where = next((k for k, b in enumerate(head) if b < 32 and b not in _TEXT_CTRL), 0)
        return None, (f"binary data (non-text byte 0x{head[where]:02x} at offset {where}): "
                      "expected a text output of IMB, OSU, nccl-tests or NetPIPE")
    # Stray control bytes inside a text file: keep the text, make those lines unparseable.
    if bad or b"\x7f" in data or len(data) > len(head):
        text = re.sub(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]", "\ufffd", text)
    return text, None


def detect(text: str) -> str | None:
    """Format key of PARSERS, or None."""
    head = text[:400_000]
    if head.lstrip()[:1] == "{" and '"results"' in head and (
            '"nccl_version"' in head or '"alg_bw"' in head or '"config"' in head):
        return "nccl-json"
    if imb.TITLE_RE.search(head) or ("# Benchmarking " in head and "#repetitions" in head):
        return "imb"
    if re.search(r"^#\s*OSU\s+.*?[Tt]est\s+v\d", head, re.M):
        return "osu"
    if "nccl-tests version" in head or (
            "algbw" in head and "busbw" in head and ("# nThread" in head or "redop" in head)):
        return "nccl"
    lines = [ln for ln in head.splitlines()[:2000] if ln.strip()]
    if any(netpipe.STDOUT_RE.match(ln) for ln in lines[:400]):
        return "netpipe"
    if len(lines) >= 2:
        rows = sum(1 for ln in lines if _NETPIPE_ROW.match(ln))
        if rows >= 0.8 * len(lines):
            return "netpipe"
    return None


def describe_unknown(text: str) -> str:
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if text.lstrip()[:1] in "{[" and '"record"' in text[:4000]:
        return ("mpibench-core JSON Lines: native results are stored by 'mpibench run', "
                "not imported")
    return ("unrecognised format: expected IMB ('Intel(R) MPI Benchmarks' title or "
            "'# Benchmarking' tables), OSU ('# OSU MPI ... Test vX'), nccl-tests (text with "
            "algbw/busbw columns, or its JSON) or NetPIPE ('bytes Mbps seconds' rows); "
            f"first line: {clip(first)!r}")


def parse_text(text: str) -> ParseResult:
    fmt = detect(text)
    if fmt is None:
        res = ParseResult()
        res.problem(1, describe_unknown(text))
        return res
    return PARSERS[fmt](text)


def parse_bytes(data: bytes) -> ParseResult:
    compressed = False
    if data[:2] == b"\x1f\x8b":
        try:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = d.decompress(data, MAX_BYTES)
            if d.unconsumed_tail:
                res = ParseResult()
                res.problem(None, f"gzip content larger than {MAX_BYTES >> 20} MiB; "
                                  "expected a benchmark output")
                return res
            compressed = True
        except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
            res = ParseResult()
            res.problem(None, f"gzip data that does not decompress ({exc})")
            return res
    text, why = decode(data)
    if text is None:
        res = ParseResult()
        res.problem(None, why or "not text")
        return res
    res = parse_text(text)
    if compressed:
        res.meta["compressed"] = "gzip"
    return res


class TooLarge(Exception):
    """The content is past a cap (MAX_BYTES, or WHOLE_MAX for a format parsed whole)."""


def _bounded(fh, limit: int) -> Iterator[bytes]:
    """Lines of a binary stream, stopping with TooLarge past `limit` bytes (a file that
    grows while read, or gzip content that inflates, is still bounded)."""
    total = 0
    for line in fh:
        total += len(line)
        if total > limit:
            raise TooLarge(f"content larger than {limit >> 20} MiB; expected a benchmark "
                           "output")
        yield line


def _clean(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    return re.sub(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]", "\ufffd", text)


def _shift(res: ParseResult, offset: int) -> ParseResult:
    """A segment's line numbers as the file's."""
    if offset:
        for p in res.problems:
            if p.line is not None:
                p.line += offset
        if res.truncated_at is not None:
            res.truncated_at += offset
        for r in res.records:
            extra = r.get("extra")
            if extra and isinstance(extra.get("line"), int):
                extra["line"] += offset
    return res


def parse_stream(fh, segment_bytes: int = SEGMENT_BYTES) -> Iterator[ParseResult]:
    """Parse a binary stream (a file, or gzip.open of one) in bounded memory: yields one
    ParseResult per segment, line numbers counted in the whole file. OSU output is cut
    before a title line once a segment holds `segment_bytes` (each OSU table stands alone,
    so the records equal a whole-file parse); the other formats are parsed whole and
    refused (TooLarge) past WHOLE_MAX. The first result carries the file's format, tool,
    version and meta. Raises TooLarge past MAX_BYTES."""
    lines = _bounded(fh, MAX_BYTES)
    head: list[bytes] = []
    size = 0
    for line in lines:
        head.append(line)
        size += len(line)
        if size >= _HEAD_BYTES:
            break
    data = b"".join(head)
    text, why = decode(data)
    if text is None:
        res = ParseResult()
        res.problem(None, why or "not text")
        yield res
        return
    fmt = detect(text)
    if fmt != "osu":
        try:
            rest = b"".join(_bounded(iter(lines), WHOLE_MAX - len(data)))
        except TooLarge:
            raise TooLarge(f"{fmt or 'this'} output larger than {WHOLE_MAX >> 20} MiB: only "
                           "OSU output is read in segments, other formats are parsed whole "
                           "and this one would not fit in memory; split the file") from None
        if rest:
            text, _ = decode(data + rest)
        yield parse_text(text or "")
        return
    first: ParseResult | None = None
    chunk: list[bytes] = []
    chunk_bytes = 0
    start = 0  # lines before this segment

    def flush() -> ParseResult:
        res = _shift(osu.parse_osu(_clean(b"".join(chunk))), start)
        if first is not None:
            if res.version and first.version and res.version != first.version:
                res.problem(start + 1, f"OSU version {res.version} differs from "
                                       f"{first.version} above")
            res.meta = {}
        return res

    titled = False  # the segment holds a title: text before the first one stays with it
    for line in _chain(head, lines):
        # a cut before a title; a table bigger than 8 MiB (no real OSU table is: its
        # sizes are distinct) is cut anyway, its rest then reported as rows without a title
        is_title = line.lstrip()[:1] == b"#" and osu.TITLE_RE.match(
            line.strip().decode("utf-8", errors="replace")) is not None
        if chunk_bytes >= segment_bytes and (chunk_bytes >= 8 * SEGMENT_BYTES or
                                             (is_title and titled)):
            res = flush()
            first = first or res
            yield res
            start += len(chunk)
            chunk, chunk_bytes, titled = [], 0, False
        titled = titled or is_title
        chunk.append(line)
        chunk_bytes += len(line)
    if chunk or first is None:
        yield flush()


def _chain(head: list[bytes], rest: Iterator[bytes]) -> Iterator[bytes]:
    yield from head
    yield from rest
