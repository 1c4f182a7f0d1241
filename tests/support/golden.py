"""Golden files: compare generated text/argv against tests/golden/, regenerate on demand.

    MPIBENCH_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/launchers/test_launchers.py ...

rewrites the golden files; review the diff before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

GOLDEN = Path(__file__).parents[1] / "golden"


def check_golden(name: str, actual) -> None:
    path = GOLDEN / name
    text = actual if isinstance(actual, str) else json.dumps(actual, indent=1) + "\n"
    if os.environ.get("MPIBENCH_UPDATE_GOLDEN") or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if not os.environ.get("MPIBENCH_UPDATE_GOLDEN"):
            raise AssertionError(f"golden file {path} was missing and has been written; "
                                 "review it and re-run")
        return
    expected = path.read_text()
    assert text == expected, (f"{name} differs from tests/golden/{name} (set "
                              "MPIBENCH_UPDATE_GOLDEN=1 to regenerate, then review the diff)")
