"""Parsed source files for the tests that scan src/mpibench (tests/test_layers.py,
tests/test_function_length.py, tests/test_files_boundary.py, tests/store/test_boundary.py):
each file is parsed once per test process instead of once per scan (parsing the ~150 files
of src/mpibench takes ~1.6 s, and five scans ran it five times). Keyed by path,
modification time and size, so a file a test writes or rewrites is parsed afresh. The trees
are shared between the scans: read them, never change them."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


def parse(path: Path) -> ast.Module:
    """ast.parse of the file's text (its path as the filename in a SyntaxError)."""
    st = path.stat()
    return _parse(str(path), st.st_mtime_ns, st.st_size)


@functools.cache
def _parse(path: str, _mtime_ns: int, _size: int) -> ast.Module:
    return ast.parse(Path(path).read_text(), filename=path)
