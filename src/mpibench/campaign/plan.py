"""Expand a campaign into cells: variant x benchmark group x parameter point x repeat.

Pure: no store, no processes. Each cell has a stable id, a hash of what it measures (the
campaign name, the variant's settings, the group's definition, the parameter values) and its
repeat index, so editing a campaign (adding a variant, raising repeats) keeps the ids, and the
results, of every cell that did not change.

Order: `interleaved` runs repeat 0 of every (group, point, variant), then repeat 1, ...; the
variants of one point follow each other, so drifts of the machine hit all variants alike.
`random` shuffles all cells with a seed that is recorded with the campaign.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from typing import Any

from mpibench.campaign.spec import (
    CampaignSpec,
    Group,
    check_cell_count,
    grid,
    group_variants,
)
from mpibench.errors import UsageError
from mpibench.execute import Variant


@dataclass(slots=True)
class Cell:
    id: str
    seq: int
    variant: Variant
    group: Group
    params: dict[str, Any]
    repeat: int

    @property
    def label(self) -> str:
        p = ",".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.variant.name} / {self.group.name}" + (f" [{p}]" if p else "") + \
            f" #{self.repeat + 1}"


def points(group: Group) -> list[dict[str, Any]]:
    """Parameter points of a group: cross product of the axes, where a zip is one axis whose
    members advance together."""
    return grid(group.params, group.zips)


def _excluded(rules: list[dict[str, Any]], variant: Variant, base: str,
              point: dict[str, Any]) -> bool:
    for rule in rules:
        hit = True
        for k, want in rule.items():
            if k == "variant":
                ok = want in (variant.name, base)
            elif k in point:
                ok = point[k] == want
            else:
                ok = getattr(variant, k, None) == want
            if not ok:
                hit = False
                break
        if hit:
            return True
    return False


def _canon(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode()


def expand(spec: CampaignSpec, seed: int | None = None, *, legacy: bool = False
           ) -> list[Cell]:
    """All cells in run order, seq = position. seed overrides spec.seed for random order.
    legacy=True gives the ids mpibench gave before they included the group's name, timeout
    and figures of merit (see legacy_ids); such ids may collide."""
    check_cell_count(spec)  # before building a plan that would not fit in memory
    blocks: list[tuple[int, list[tuple[Variant, Group, dict[str, Any], Any]]]] = []
    prefix = _canon(spec.name) + b"\0"
    if spec.instance:  # an ad-hoc run's invocation (campaign/adhoc.py); files have none
        prefix += _canon(spec.instance) + b"\0"
    for group in spec.groups:
        repeats = group.repeats or spec.repeats
        gdef = _canon(group.definition() if legacy else group.identity())
        variants = group_variants(group, spec.variants, spec.variant_base)
        vhash = {v.name: hashlib.sha256(prefix + _canon(v.to_dict()) + b"\0" + gdef + b"\0")
                 for v in variants}
        entries = []
        for point in points(group):
            pbytes = _canon(point) + b"\0"
            for v in variants:
                if group.exclude and _excluded(group.exclude, v, spec.variant_base[v.name],
                                               point):
                    continue
                h = vhash[v.name].copy()
                h.update(pbytes)
                entries.append((v, group, point, h))
        blocks.append((repeats, entries))
    cells: list[Cell] = []
    max_rep = max((r for r, _ in blocks), default=0)
    for rep in range(max_rep):
        rb = str(rep).encode()
        for repeats, entries in blocks:
            if rep >= repeats:
                continue
            for v, group, point, h in entries:
                h2 = h.copy()
                h2.update(rb)
                cells.append(Cell("c-" + h2.hexdigest()[:16], 0, v, group, point, rep))
    if not legacy and len({c.id for c in cells}) != len(cells):
        _duplicate(cells)
    if spec.order == "random":
        rng = random.Random(seed if seed is not None else spec.seed)
        rng.shuffle(cells)
    for i, cell in enumerate(cells):
        cell.seq = i
    return cells


def _duplicate(cells: list[Cell]) -> None:
    """Two cells with one id would be stored once and launched twice: a campaign that
    loading let through with two identical cells is refused here, naming both."""
    seen: dict[str, Cell] = {}
    for c in cells:
        if c.id in seen:
            raise UsageError(f"campaign cells {seen[c.id].label!r} and {c.label!r} are "
                             "identical (same variant, group and parameters); make them "
                             "differ or remove one")
        seen[c.id] = c


def legacy_ids(spec: CampaignSpec) -> dict[str, str]:
    """{id: id an earlier mpibench gave the same cell}, for cells whose id changed when ids
    came to include the group's name, timeout and figures of merit. A legacy id shared by
    several cells (the collision that change fixed) goes to the first of them in plan
    order: that is the cell whose results the store kept."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for new, old in zip(expand(spec, seed=0), expand(spec, seed=0, legacy=True), strict=True):
        if new.id != old.id and old.id not in taken:
            out[new.id] = old.id
            taken.add(old.id)
    return out
