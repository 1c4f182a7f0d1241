"""`mpibench campaign list` without FILE: the campaigns of a store. Past PLAIN_TABLE_ROWS
campaigns the terminal table is fixed-width text (rich took ~1 ms a row); whichever writer
prints it, the rows, their order and their fields are those of --json, escaped alike."""

from __future__ import annotations

import json

from mpibench.cli import main as cli_main
from mpibench.commands.campaign import CAMPAIGN_COLUMNS
from mpibench.report.render import PLAIN_TABLE_ROWS
from mpibench.store import Store

N = PLAIN_TABLE_ROWS + 3
STATES = ("done", "failed", "timeout", "running", "pending")


def _store(path):
    """N campaigns written through the Store API: names with markup and a control
    character, two schedulers, runs in every state, batch jobs in flight on some."""
    with Store(path) as store, store.transaction():
        for i in range(N):
            sched = "slurm" if i % 3 == 0 else "local"
            cid = store.add_campaign(f"c-[bold]{i}\x1b[2J" if i % 7 == 0 else f"camp {i}",
                                     {"scheduler": {"name": sched}}, file=f"/x/c{i}.toml")
            store.create_runs({"run_id": f"r{i}-{j}", "campaign_id": cid, "variant": "v",
                               "seq": j} for j in range(i % 6))
            for j in range(i % 6):
                job = f"{1000 + i}" if sched == "slurm" else f"local:{i}"
                store.set_run(f"r{i}-{j}", STATES[(i + j) % 5], job_id=job)
    return path


def _shown(value) -> str:
    return str(value).replace("\x1b", "\ufffd")


def _rich_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in ln.strip("│").split("│")] for ln in text.splitlines()
            if ln.startswith("│")]


def _plain_rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    assert lines[3].startswith(" ---")          # title, blank, header, rule, then rows
    return [[c.strip() for c in ln.strip().split("   ") if c.strip()] for ln in lines[4:]]


def test_every_writer_shows_the_rows_of_json_in_order(tmp_path, capsys):
    db = str(_store(tmp_path / "s.db"))
    assert cli_main(["campaign", "list", "--db", db, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == list(range(1, N + 1))
    assert rows[3]["cells"] == 3 and rows[3]["scheduler"] == "slurm"
    assert sum(r["jobs_in_flight"] for r in rows) > 0
    want = [[_shown(r[c]) for c in CAMPAIGN_COLUMNS] for r in rows]

    assert cli_main(["campaign", "list", "--db", db]) == 0     # every one: plain text
    out = capsys.readouterr()
    assert "\x1b" not in out.out and not out.err
    assert out.out.splitlines()[2].split() == ["id", "name", "file", "scheduler", "cells",
                                               "done", "failed", "timeout", "running",
                                               "pending", "jobs", "in", "flight"]
    assert _plain_rows(out.out) == want

    # a page of a few is a rich table: the same rows, and a line saying what is left
    assert cli_main(["campaign", "list", "--db", db, "--offset", "5", "--limit", "4"]) == 0
    out = capsys.readouterr()
    assert "\x1b" not in out.out
    assert _rich_rows(out.out) == want[5:9]
    assert f"campaigns 6-9 of {N}; {N - 9} more: --offset 9" in out.err


def test_pages_of_campaigns(tmp_path, capsys):
    db = str(_store(tmp_path / "s.db"))
    assert cli_main(["campaign", "list", "--db", db, "--json", "--offset", str(N - 2)]) == 0
    out = capsys.readouterr()
    assert [r["id"] for r in json.loads(out.out)] == [N - 1, N]
    assert f"campaigns {N - 1}-{N} of {N}" in out.err and "more" not in out.err
    assert cli_main(["campaign", "list", "--db", db, "--offset", str(N + 5)]) == 0
    assert f"no campaigns from --offset {N + 5} (the store has {N})" in capsys.readouterr().err


def test_a_page_of_cells_shows_the_rows_of_json_in_order(tmp_path, capsys):
    """`campaign list FILE`: a page past PLAIN_TABLE_ROWS cells is fixed-width text, a
    short one a rich table; both hold the cells of --json, in plan order, escaped alike."""
    from support.synth import app_campaign_store

    path, db = app_campaign_store(tmp_path, ['"[red]v\\u001b[2J"']
                                  + list(range(PLAIN_TABLE_ROWS // 2 + 5)))
    assert cli_main(["campaign", "list", str(path), "--db", str(db), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) > PLAIN_TABLE_ROWS
    want = [[str(r["seq"]), r["id"], r["variant"], r["group"],
             _shown(", ".join(f"{k}={v}" for k, v in r["params"].items())),
             str(r["repeat"] + 1), r["status"]] for r in rows]

    assert cli_main(["campaign", "list", str(path), "--db", str(db)]) == 0
    out = capsys.readouterr()
    assert "\x1b" not in out.out and f"campaign big: {len(rows)} cells" in out.out
    assert _plain_rows(out.out) == want

    assert cli_main(["campaign", "list", str(path), "--db", str(db), "--limit", "3"]) == 0
    out = capsys.readouterr()
    assert "\x1b" not in out.out
    assert [r[:7] for r in _rich_rows(out.out)] == want[:3]
