"""budget = "auto": the core's --target and --max-time for a core group's launches after
its first two rounds, from the group's measured variance components (stats/budget.py).
Used by both policies (campaign/local.py, campaign/batch.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    accept_approximate where the plan allows it (stats.budget.approximate_ok). One look
    per group; a group that sets `target` or `max_time` itself keeps its options (and one
    that sets accept_approximate keeps that). The
    first two rounds run at the group's options; until a group has two finished launches
    per variant (a batch campaign whose rounds are all submitted at once), its launches
    keep the group's options."""

    PILOT = 2

    def __init__(self, runner, campaign_id: int):
        self.runner, self.cid = runner, campaign_id
        self.chosen: dict[str, dict | None] = {}
        self.said: set[str] = set()

    def options(self, cell: Cell) -> dict | None:
        g = cell.group
        own = g.options or {}
        if not g.kind_class.core_options or cell.repeat < self.PILOT or "target" in own \
                or "max_time" in own:
            return None
        if self.chosen.get(g.name) is None:
            self.chosen[g.name] = self._plan(g.name)
        t = self.chosen[g.name]
        # the group's own accept_approximate (or any option it sets) stands
        return None if t is None else {**t, **own}

    @staticmethod
    def cap(spec) -> int:
        """Launches per variant the plan may count on: `budget = { launches = N }`, else
        the campaign's repeats (fixed, or the maximum of "auto"/"decide")."""
        return spec.budget_launches or spec.repeats

    @staticmethod
    def rounds(spec) -> int:
        """Rounds per variant the campaign runs for certain: a fixed `repeats` all of
        them, "auto"/"decide" their `min` (the stage rule may stop there)."""
        return spec.auto.min if spec.auto else spec.repeats

    @classmethod
    def plan_rows(cls, spec, rows):
        """stats.budget's plan for a group's finished launches' rows (launch_cost_rows):
        equivalence within the campaign's margin (else 5%), at most cap() launches per
        variant; in an interleaved campaign paired by round where compare will pair the
        launches (stats.launch.pair_rounds), counting towards the pairs the rounds the
        campaign runs for certain (rounds()): after the 2-round pilot, 3 pairs need one
        more; a size short of 3 pairs even with them is planned unpaired."""
        from mpibench.stats import budget

        return budget.plan_from_rows(rows, [v.name for v in spec.variants],
                                     spec.equivalence or 0.05, cls.cap(spec),
                                     interleaved=getattr(spec, "order", None) == "interleaved",
                                     rounds=cls.rounds(spec))

    def _plan(self, group: str) -> dict | None:
        from mpibench.store.report_queries import done_runs_of_group, launch_cost_rows

        runs = done_runs_of_group(self.runner.store, self.cid, group)
        rows = launch_cost_rows(self.runner.store, [r["id"] for r in runs])
        p = self.plan_rows(self.runner.spec, rows)
        if p is None:
            if group not in self.said:
                self.said.add(group)
                self.runner.log(f"budget = auto: group {group}: not yet two variants with "
                                "two finished launches each; the group's own options stay")
            return None
        self.runner.log(f"budget = auto: group {group}: {p.describe()}")
        return p.best.options()
