"""Expand a campaign into cells: variant x benchmark group x parameter point x repeat.

Pure: no store, no processes. Each cell has a stable id, a hash of what it measures (the
campaign name, the variant's settings, the group's definition, the parameter values) and its
repeat index, so editing a campaign (adding a variant, raising repeats) keeps the ids, and the
results, of every cell that did not change.

Order: `interleaved` runs repeat 0 (round 0) of every (group, point, variant), then repeat 1,
...; the variants of one point follow each other, so drifts of the machine hit all variants
alike, and compare pairs the launches of one round. Within a round the variants of a point
are counterbalanced (williams_row): their order changes from round to round so that each
variant runs in each position equally often (2 variants: a b, b a, a b, ...; 3: a b c, b c
a, c a b, then the same three rows reversed) and, over a full cycle, follows each other
variant equally often. With a fixed order (before stop 38) a launch's position in its round
(the one right after another launch: page cache, CPU frequency, shared-memory segment
files) went into every paired gain as a bias that more rounds cannot remove; balanced, it
moves into the spread of the per-round differences, which the paired test sees. In any
prefix of rounds each variant is first in a point's rounds within one of an equal share.
`random` shuffles all cells (from the plain, unbalanced order) with a seed that is recorded
with the campaign. Ids never depend on the order: a campaign started under the fixed order
resumes under this one, its remaining cells renumbered (runner.sync keeps seq in step).
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


def williams_row(k: int, r: int) -> list[int]:
    """The order of k variants in round r of an interleaved point: row r of a Williams
    design (cyclic Latin squares whose first row is 0, 1, k-1, 2, k-2, ...; for odd k
    followed by the same rows reversed, a cycle of 2k rounds; for even k a cycle of k).
    Every k consecutive rounds from a cycle's start put each variant in each position once;
    a full cycle has each variant directly after each other one equally often, and each
    before each other one in half its rounds (its second half reverses its first), so the
    variants a `repeats = "decide"` stage keeps of a point stay balanced too over each
    full cycle (within fewer rounds a pair's order can be off by one round); k = 2
    alternates a b, b a. Row 0 is the plain order 0..k-1."""
    if k <= 1:
        return list(range(k))
    first, lo, hi = [0], 1, k - 1
    while len(first) < k:
        first.append(lo)
        lo += 1
        if len(first) < k:
            first.append(hi)
            hi -= 1
    i = r % (k if k % 2 == 0 else 2 * k)
    # relabel the symbols (symbol first[j] is variant j) so that row 0 is the plain order:
    # a relabelled Williams design is still one
    where = {v: j for j, v in enumerate(first)}
    row = [where[(x + i) % k] for x in first]
    return row[::-1] if i >= k else row


def expand(spec: CampaignSpec, seed: int | None = None, *, legacy: bool = False
           ) -> list[Cell]:
    """All cells in run order, seq = position (interleaved: each round's variants of a
    point in williams_row's order). seed overrides spec.seed for random order.
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
        entries = []  # per point, its variants' (variant, group, point, hash)
        for point in points(group):
            pbytes = _canon(point) + b"\0"
            entries.append([])
            for v in variants:
                if group.exclude and _excluded(group.exclude, v, spec.variant_base[v.name],
                                               point):
                    continue
                h = vhash[v.name].copy()
                h.update(pbytes)
                entries[-1].append((v, group, point, h))
        blocks.append((repeats, entries))
    balance = spec.order == "interleaved"  # random shuffles the plain order (its seed's)
    cells: list[Cell] = []
    max_rep = max((r for r, _ in blocks), default=0)
    for rep in range(max_rep):
        rb = str(rep).encode()
        for repeats, entries in blocks:
            if rep >= repeats:
                continue
            for point_entries in entries:
                order = (williams_row(len(point_entries), rep) if balance
                         else range(len(point_entries)))
                for j in order:
                    v, group, point, h = point_entries[j]
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
