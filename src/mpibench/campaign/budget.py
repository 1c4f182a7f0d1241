"""budget = "auto": the core's --target and --max-time for a core group's launches after
its first two rounds, from the group's measured variance components (stats/budget.py).
Used by both policies (campaign/local.py, campaign/batch.py)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from mpibench.campaign.spec import group_variants
from mpibench.stats import budget
from mpibench.stats.launch import MIN_PAIRS

if TYPE_CHECKING:
    from mpibench.campaign.plan import Cell


class BudgetRule:
    """budget = "auto" (stats/budget.py) for the local and batch policies: once a core group has two
    finished rounds, its launches' variance components (between-launch spread, the core's
    within-launch CI, seconds per sample and per launch) fix the core's --target and
    --max-time for its later launches: the pair that minimises the launch time to decide
    every cell (planned for equivalence within the campaign's margin, else 5%) within the
    campaign's launches per variant (cap()), else the most precise launches at the least
    time (stats.budget.plan); in an interleaved campaign (order = "interleaved", the
    default) on the variance of the round-paired test compare then uses (the first
    variant against each other one, stats.budget.paired_spreads), with
    accept_approximate (the core then stops a cell where the plan's model does). One look
    per group, on the pilot's launches only (the first two rounds: plan_rows), so every
    campaign invocation (a resumed campaign, a raised `repeats`) makes the same plan and
    the budgeted launches' own CIs (approximate, a few samples at the large sizes) never
    feed back into it; a group that sets `target` or `max_time` itself keeps its options
    (and one that sets accept_approximate keeps that). The first two rounds are the pilot:
    PILOT_OPTIONS (--min-samples per cell, CI accepted within 100%, at most 0.002 s a
    cell, the plan's cheapest --max-time: what the plan reads, sigma_L, B = se^2 n and the
    seconds, needs no narrower CI and no more samples). Without a plan (not two
    variants with two finished pilot launches each: a batch campaign with a fixed
    `repeats` submits every round at once) the later launches keep the group's own
    options, and the rule looks again only at a later round (a batch campaign's next
    stage), never cell by cell; a group of one variant has nothing to compare, so neither
    pilot nor plan: its own options in every round."""

    PILOT = 2
    # the pilot's core options (stats.budget.PILOT_TARGET, PILOT_MAX_TIME): every cell stops
    # at --min-samples (20) unless --max-time ends it first (0.002 s, the shortest the plan
    # weighs and the one its later launches have run at: measured, not extrapolated), so
    # the CI, and the B the plan reads off it, rests on 20 samples wherever a sample is
    # shorter than about 0.1 ms; the largest sizes get fewer (5 or more), as in the plan's
    # own launches
    PILOT_OPTIONS = {"target": budget.PILOT_TARGET, "max_time": budget.PILOT_MAX_TIME,
                     "accept_approximate": True}

    def __init__(self, runner, campaign_id: int):
        self.runner, self.cid = runner, campaign_id
        self.spec = runner.spec
        self.chosen: dict[str, dict | None] = {}   # group -> its plan's options, or None
        self.looked: dict[str, int] = {}          # group -> the round of its last look
        self.said: set[str] = set()
        # this invocation's seconds in _plan and whether every plan came from the plan
        # cache (PlanCache): `campaign run --json`'s timing (commands/campaign.py)
        self.plan_s, self.reused = 0.0, None
        # (the done pilot launches' ids, table_rows' count of them): one count per pilot
        self._table: tuple | None = None

    def options(self, cell: Cell) -> dict | None:
        """The core options of a cell's launch; None: the group's own (no pilot, no plan)."""
        g = cell.group
        own = g.options or {}
        if not g.kind_class.core_options or "target" in own or "max_time" in own:
            return None
        if len(group_variants(g, self.spec.variants, self.spec.variant_base)) < 2:
            # one variant: nothing to compare, so no plan can come; the pilot, which only
            # feeds the plan, would just cost its launches precision
            return None
        if cell.repeat < self.PILOT:
            return {**self.PILOT_OPTIONS, **own}
        if g.name not in self.chosen or (self.chosen[g.name] is None
                                         and cell.repeat > self.looked[g.name]):
            # a plan once made stands; no plan (the pilot not finished: a batch campaign
            # submits a stage's rounds at once) is looked for again at a later round only
            # (a later stage), never cell by cell
            self.chosen[g.name] = self._plan(g.name)
            self.looked[g.name] = cell.repeat
        t = self.chosen[g.name]
        # no plan: the group's own options (the pilot's are for the pilot's rounds only);
        # with one, the group's own accept_approximate (or any option it sets) stands
        return None if t is None else {**t, **own}

    @staticmethod
    def cap(spec) -> int:
        """Launches per variant the plan may count on: `budget = { launches = N }`, else
        the campaign's repeats (fixed, or the maximum of "auto"/"decide")."""
        return spec.budget_launches or spec.repeats

    @staticmethod
    def rounds(spec) -> int:
        """Rounds per variant the campaign runs for certain: a fixed `repeats` all of
        them; "auto" the smallest total its two-stage rule stops at
        (stats.two_stage.smallest_total: min + 3, or max when that is smaller), since
        with two variants it never stops below; "decide" its `min` (its first look may
        stop there)."""
        from mpibench.stats import two_stage

        a = spec.auto
        if not a:
            return spec.repeats
        return a.min if a.until == "decided" else two_stage.smallest_total(a.min, a.max)

    @classmethod
    def plan_rows(cls, spec, rows, table: int | None = None):
        """stats.budget's plan for a group's finished launches' rows (launch_cost_rows):
        equivalence within the campaign's margin (else 5%), at most cap() launches per
        variant; in an interleaved campaign paired by round where compare will pair the
        launches (stats.launch.pair_rounds), counting towards the pairs the rounds the
        campaign runs for certain (rounds()): after the 2-round pilot, 3 pairs need one
        more; a size short of 3 pairs even with them is planned unpaired. Only the pilot's
        rows count (repeat < PILOT): the plan is made once, from the pilot. Its line also
        gives the launches per side that decide every cell whatever its true gain at the
        chosen options (stats.budget.plan_from_rows' every_beside; stop 41), at the cell
        level of a table of `table` rows (the campaign's: table_rows; None: these rows'
        cells' own table)."""
        rows = [r for r in rows if r.get("repeat") is not None and r["repeat"] < cls.PILOT]
        # the options are chosen at gain 1; beside them the launches that decide every cell
        # whatever its gain at those options (every_beside), for the line
        return budget.plan_from_rows(rows, [v.name for v in spec.variants],
                                     spec.equivalence or 0.05, cls.cap(spec),
                                     interleaved=getattr(spec, "order", None) == "interleaved",
                                     rounds=cls.rounds(spec), every_beside=True,
                                     table=table)

    def table_rows(self) -> int | None:
        """The rows of the campaign's comparison table the every-cell launches are planned
        for (stats.budget.campaign_table_rows over every group's pilot launches done so
        far: all groups' cells and geomean rows, not the planning group's alone; review
        s41 R4), a cell per benchmark, size, point (params) and ranks, as the table keys
        it (review s42 R3). The interleaved order runs every group's pilot rounds before
        any group's third, so a local campaign's plan sees all of them; in a campaign of
        `order = "random"` (or a batch campaign whose stages finish apart) a group may plan
        before another's pilot is done, and that group is not counted (review s42 R4), nor
        are an application's metrics (no core CI). None: no group has two variants with
        pilot rows. Counted again only when the done pilot launches changed (each group's
        plan asks; the count reads every group's rows)."""
        from mpibench.store.report_queries import done_runs_of_campaign, launch_cost_rows

        runs = [r for r in done_runs_of_campaign(self.runner.store, self.cid)
                if r["repeat"] < self.PILOT]
        where = {r["id"]: (r["grp"], r["params_json"] or "{}") for r in runs}
        if self._table is not None and self._table[0] == frozenset(where):
            return self._table[1]
        by_point: dict[tuple, list[dict]] = {}
        for row in launch_cost_rows(self.runner.store, list(where)):
            g, params = where[row["run_id"]]
            by_point.setdefault((g, (params, row.get("np"))), []).append(row)
        n = budget.campaign_table_rows(by_point, [v.name for v in self.spec.variants]) or None
        self._table = (frozenset(where), n)
        return n

    def _plan(self, group: str) -> dict | None:
        from mpibench.store.report_queries import done_runs_of_group, launch_cost_rows

        t0 = time.monotonic()
        runs = done_runs_of_group(self.runner.store, self.cid, group)
        # the pilot's launches' rows alone: plan_rows reads no other
        rows = launch_cost_rows(self.runner.store, [r["id"] for r in runs
                                                    if r["repeat"] < self.PILOT])
        made, reused = PlanCache.plan(self.runner.spec, rows, self.table_rows())
        self.plan_s += time.monotonic() - t0
        self.reused = reused if self.reused is None else self.reused and reused
        # `campaign run --json`'s timing, at once and for both policies (the batch policy
        # never copied it: null there; an invocation that failed later kept none)
        timing = getattr(self.runner, "timing", None)
        if timing is not None:
            timing.update(budget_plan_s=self.plan_s, budget_plan_reused=self.reused)
        if made is None:
            if group not in self.said:
                self.said.add(group)
                self.runner.log(f"budget = auto: group {group}: not two variants with "
                                "two finished pilot launches each; the group's own "
                                "options stay")
            return None
        options, text = made
        self.runner.log(f"budget = auto: group {group}: {text}"
                        + (" (the plan this pilot had before: mpibench's plan cache)"
                           if reused else ""))
        return options


class PlanCache:
    """budget = "auto"'s plans remembered across campaign invocations. The plan is made
    from the pilot alone (BudgetRule.plan_rows), so every invocation after it (each raised
    `repeats`, each resume) made the same plan again: 3.5-6 s of CPU at the time-to-
    decision bench's 23 sizes (stats.budget's search), before the invocation's first
    launch, where the launch itself takes 0.2 s. A plan is kept under mpibench's cache
    directory (files.cache_root()/budget-plans/), named by a hash of everything it is
    made from (key): the pilot's rows as the store gives them, the campaign's variants,
    margin, launch cap, order and the rounds counted towards pairing (rounds beyond the
    pilot's + stats.launch.MIN_PAIRS pair nothing more: pair_rounds counts them against
    MIN_PAIRS only), the campaign table's row count the line's every-cell launches are
    planned for (BudgetRule.table_rows), this code (the source of mpibench/stats and this
    module) and the numerical libraries' versions. A record is used only when its key and
    its checksum are its own and its options are ones a plan sets (a byte changed is a
    plan made again, never a changed plan); a record that is no small regular file (a
    symlink, a FIFO, a directory, a device), cannot be read or written only means
    planning, as before. The directory holds at most KEEP records: each write removes the ones used
    least recently beyond them (a reuse renews a record's time) and a killed writer's
    temporary files (prune)."""

    DIR = "budget-plans"
    MAX_BYTES = 65536           # a record is ~600 bytes
    # the core options a plan sets (stats.budget.Choice.options): a record's only keys
    OPTIONS = frozenset({"target", "max_time", "accept_approximate"})
    KEEP = 256                  # records kept (~1 MB of 4 KB blocks); more: the oldest go
    TMP_AGE_S = 3600.0          # a writer's temporary file this old is a killed writer's
    NAME = re.compile(r"[0-9a-f]{64}\.json")      # a record's file name (key())
    TMP = re.compile(r"\.[0-9a-f]{64}\.json\..*\.tmp")   # files.write_file's temporary
    _code: list[str] = []

    @classmethod
    def plan(cls, spec, rows: list[dict], table: int | None = None
             ) -> tuple[tuple[dict, str] | None, bool]:
        """((options, describe) of the plan, or None: no plan), whether it was reused.
        table: the campaign table's rows (BudgetRule.table_rows; plan_rows')."""
        key = cls.key(spec, rows, table)
        f = cls.path(key)
        got = cls.read(f, key) if f is not None else None
        if got is not None:
            return got, True
        p = BudgetRule.plan_rows(spec, rows, table)
        if p is None:
            return None, False
        made = (p.best.options(), p.describe())
        if f is not None:
            cls.write(f, key, *made)
        return made, False

    @classmethod
    def key(cls, spec, rows: list[dict], table: int | None = None) -> str:
        pilot = [r for r in rows if r.get("repeat") is not None
                 and r["repeat"] < BudgetRule.PILOT]
        seen = len({r["repeat"] for r in pilot})
        rounds = min(BudgetRule.rounds(spec), seen + MIN_PAIRS)
        blob = json.dumps([cls.code(), [v.name for v in spec.variants],
                           spec.equivalence or 0.05, BudgetRule.cap(spec),
                           getattr(spec, "order", None) == "interleaved", rounds, pilot,
                           table],
                          sort_keys=True, default=repr)
        return hashlib.sha256(blob.encode()).hexdigest()

    @classmethod
    def code(cls) -> str:
        """What makes a plan besides its inputs: the source of mpibench/stats and of this
        module, Python's, numpy's and scipy's versions."""
        if not cls._code:
            from importlib import metadata

            def version(dist: str) -> str:
                try:     # not `import scipy`: 0.3-1 s, which the plan it saves may not need
                    return metadata.version(dist)
                except metadata.PackageNotFoundError:
                    return "?"

            h = hashlib.sha256(f"{sys.version}|{version('numpy')}|{version('scipy')}"
                               .encode())
            for f in cls.sources():
                h.update(f.name.encode() + b"\0" + f.read_bytes())
            cls._code.append(h.hexdigest())
        return cls._code[0]

    @staticmethod
    def sources() -> list[Path]:
        """The source files a plan's key hashes: mpibench/stats, what it imports from the
        rest of mpibench (units: the plan's description prints sizes and percentages with
        it; errors; the store's module), and this module."""
        pkg = Path(budget.__file__).parent
        return sorted(pkg.glob("*.py")) + [pkg.parent / f for f in
                                            ("units.py", "errors.py", "store/__init__.py")] \
            + [Path(__file__)]

    @classmethod
    def path(cls, key: str) -> Path | None:
        from mpibench.files import cache_root

        try:
            return cache_root() / cls.DIR / f"{key}.json"
        except (OSError, RuntimeError):       # no home directory to expand
            return None

    @staticmethod
    def _check(key: str, options: object, text: object) -> str:
        return hashlib.sha256(json.dumps([key, options, text], sort_keys=True)
                              .encode()).hexdigest()

    @classmethod
    def read(cls, f: Path, key: str) -> tuple[dict, str] | None:
        """The record's (options, describe) when it is whole and its own, else None."""
        try:
            # the record itself, never what a symlink points at (O_NOFOLLOW), and only a
            # regular file of a record's size, checked on the open file: a FIFO would
            # block (opened without waiting for a writer), a device or a huge file be
            # read whole; deep nesting is a RecursionError, not a ValueError
            fd = os.open(f, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, ValueError):
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > cls.MAX_BYTES:
                return None
            doc = json.loads(os.read(fd, cls.MAX_BYTES + 1).decode("utf-8"))
            got = cls._valid(doc, key)
            if got is not None:
                try:
                    os.utime(fd)        # used now: prune keeps the records in use
                except OSError:
                    pass
            return got
        except (OSError, ValueError, RecursionError):
            return None
        finally:
            os.close(fd)

    @classmethod
    def _valid(cls, doc: object, key: str) -> tuple[dict, str] | None:
        """(options, describe) of a record read, if it is this key's, its checksum its own
        and its options ones a plan sets: exactly Choice.options' keys, a target and a
        max_time among those plan() chooses from (stats.budget.TARGETS, MAX_TIMES),
        accept_approximate true; else None."""
        if not isinstance(doc, dict):
            return None
        options, text = doc.get("options"), doc.get("describe")
        if (doc.get("key") != key or not isinstance(text, str)
                or not isinstance(options, dict) or set(options) != cls.OPTIONS
                or any(type(options[k]) is not float or options[k] not in values
                       for k, values in (("target", budget.TARGETS),
                                         ("max_time", budget.MAX_TIMES)))
                or options["accept_approximate"] is not True
                or doc.get("check") != cls._check(key, options, text)):
            return None
        return options, text

    @classmethod
    def write(cls, f: Path, key: str, options: dict, text: str) -> None:
        from mpibench.errors import UsageError
        from mpibench.files import write_file

        try:
            f.parent.mkdir(parents=True, exist_ok=True)
            write_file(f, json.dumps({"key": key, "options": options, "describe": text,
                                      "check": cls._check(key, options, text)}))
        except (OSError, UsageError):
            return
        cls.prune(f.parent)

    @classmethod
    def prune(cls, d: Path, now: float | None = None) -> int:
        """Keep at most KEEP records in d, the ones used most recently (a record's time is
        its write or its last reuse), and remove write_file temporaries older than
        TMP_AGE_S (a writer killed before its rename). Only names a record or its
        temporary has are touched (a symlink is removed, never followed); a file gone or
        not removable is passed over: pruning never fails a run. Returns how many it
        removed."""
        now = time.time() if now is None else now
        records, gone = [], 0
        try:
            with os.scandir(d) as it:
                for e in it:
                    try:
                        t = e.stat(follow_symlinks=False).st_mtime
                    except OSError:
                        continue
                    if cls.NAME.fullmatch(e.name):
                        records.append((t, e.name))
                    elif cls.TMP.fullmatch(e.name) and now - t > cls.TMP_AGE_S:
                        gone += cls._remove(d / e.name)
        except OSError:
            return gone
        records.sort(reverse=True)
        for _t, name in records[cls.KEEP:]:
            gone += cls._remove(d / name)
        return gone

    @staticmethod
    def _remove(f: Path) -> int:
        try:
            f.unlink()
            return 1
        except OSError:
            return 0
