"""Kinds of benchmark group in a campaign file: `core` (the mpibench core's benchmarks),
`app` (an application command line) and `peer` (a third-party suite: IMB, OSU, NetPIPE).

A kind is one file in this package: a GroupKind subclass registered with
`@register_group_kind("name")` that says which table selects it (`marker`) and which keys it
accepts, how to validate its `[benchmarks.NAME]` table into Group objects (`parse`), what
of a group is measured (`definition`, hashed into cell ids), what it needs before the first
launch (`check`: the core built, a suite's program found), how a cell becomes a launch
(`prepare`) and how a launch's output becomes rows (`ingest`). The campaign file, the runner
and the cells reach a kind only through this registry; no code outside this package tests
a kind's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mpibench.registry import Registry

if TYPE_CHECKING:
    from mpibench.campaign.cells import CellSteps
    from mpibench.campaign.plan import Cell
    from mpibench.campaign.spec import Group, _Ctx
    from mpibench.execute import CellCommand, CellOutcome, Variant
    from mpibench.schedulers import JobStep, StepResult


@dataclass
class Prepared:
    """A cell ready to launch: its command and the scheduler's step for it."""

    cell: Cell
    cmd: CellCommand
    step: JobStep


class GroupKind:
    """One kind of benchmark group. Instances hold no state; the runner passes itself."""

    name = ""
    marker = ""          # the key whose presence in a group's table selects this kind
    marker_help = ""     # the marker in the "needs exactly one of" message
    keys: tuple[str, ...] = ()  # every key its table accepts
    precedence = 0       # of several markers in one table, the highest decides
    mpi = True           # an MPI program: refused on a variant with stack = "none"
    # a failed launch's reason is its exit status and last words (the core writes its own
    # reason into its JSON Lines instead)
    reason_from_exit = True
    core_options = False  # takes the core's options (budget = "auto" may set --target)

    def parse(self, c: _Ctx, key: str, name: str, gdef: dict[str, Any], path: Path,
              variants: list[Variant], vbase: dict[str, str]) -> list[Group]:
        """The validated groups of one `[benchmarks.NAME]` table (OSU: one per program)."""
        raise NotImplementedError

    def definition(self, g: Group) -> dict[str, Any]:
        """What is measured (hashed into cell ids; ids before schema 2 hashed only this)."""
        raise NotImplementedError

    def check(self, runner: CellSteps, g: Group) -> None:
        """What a group needs before its first launch, for each of its variants' stacks."""

    def prepare(self, runner: CellSteps, cell: Cell, run_dir: Path, *, local: bool,
                options: dict[str, Any] | None) -> Prepared:
        raise NotImplementedError

    def ingest(self, runner: CellSteps, p: Prepared, sr: StepResult, outcome: CellOutcome,
               nodelist: str | None) -> None:
        """Turn what the launch left (sr: how the step ended) into outcome.records and
        fingerprint entries; the core's rows are already there (execute.ingest_core)."""


REGISTRY: Registry = Registry("group kind", "mpibench.campaign.group_kinds")
register_group_kind = REGISTRY.register


def get_group_kind(name: str) -> GroupKind:
    return REGISTRY.get(name)()


def group_kinds() -> list[GroupKind]:
    return [cls() for cls in REGISTRY.classes()]


def select_kind(gdef: dict[str, Any]) -> GroupKind | None:
    """The kind a group's table is, from its marker keys: of the kinds whose marker it has,
    the one of highest precedence (a `suite` makes a peer group whatever else the table
    holds; its other keys are then checked as the peer's); None unless exactly one."""
    found = [k for k in group_kinds() if k.marker in gdef]
    top = max((k.precedence for k in found), default=0)
    found = [k for k in found if k.precedence == top]
    return found[0] if len(found) == 1 else None
