"""Select: pick runs (campaign, variant, label, run ids, time window) and group them into
result sets (display name -> run ids), by variant, label or tool.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC

from mpibench.errors import UsageError
from mpibench.report.data import (
    split_variant,
)
from mpibench.store import Store
from mpibench.store.report_queries import runs_with_results, variants_with_results


def _parse_when(v: str | float | None, flag: str) -> float | None:
    if v is None or isinstance(v, int | float):
        return v
    s = str(v).strip()
    try:
        return float(s)
    except ValueError:
        pass
    from datetime import datetime
    try:
        dt = datetime.fromisoformat(s)
    except ValueError as exc:
        raise UsageError(f"{flag} {s!r}: expected an ISO date/time (2026-05-01 or "
                         "2026-05-01T12:00) or a Unix timestamp") from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def _match_variants(store: Store, rows: list, wanted: list[str]) -> list:
    """Keep runs whose variant is one of `wanted`: the exact name, its set name (the scale
    axes of a sweep removed, see split_variant), or the base name of a sweep ('ompi' selects
    ompi[np=1], ompi[np=2], ...). A name that selects nothing is an error, not an empty
    table."""
    def hits(variant: str, w: str) -> bool:
        return variant == w or split_variant(variant)[0] == w or variant.startswith(w + "[")

    for w in wanted:
        if not any(hits(r["variant"], w) for r in rows):
            known = variants_with_results(store)
            shown = ", ".join(known[:20]) + (" ..." if len(known) > 20 else "")
            raise UsageError(f"--variant {w!r}: no results for this variant in the selection "
                             f"(variants with results: {shown or 'none'})")
    return [r for r in rows if any(hits(r["variant"], w) for w in wanted)]


def select_groups(store: Store, *, variants: Iterable[str] | None = None,
                  campaign: str | int | Iterable[str | int] | None = None,
                  run_ids: Iterable[str] | None = None, labels: Iterable[str] | None = None,
                  since: str | float | None = None, until: str | float | None = None,
                  by: str | None = None) -> dict[str, list[str]]:
    """Pick runs and group them into result sets (display name -> run ids, insertion order).

    Sets are by variant, or by label when `labels` is given (or by="label"), or by
    variant and tool (by="tool": 'ompi/core', 'ompi/imb', 'ompi/osu'). With several
    campaigns and variant names that occur in more than one, names become 'campaign/variant'
    (comparing one variant across campaigns, e.g. before/after a system update), unless
    by="variant" is given explicitly, which merges a variant's runs across campaigns (the
    fingerprint rule still keeps different setups apart).
    Expansions of a campaign sweep over np, nodes or ppn ('ompi[np=2]') belong to one set
    named without those axes ('ompi'); their cells differ by np or by the nodes/ppn
    parameter, so grids and scaling see them side by side (see data.split_variant).
    A variant selector matches the exact name, that set name, or a sweep's base name.
    since/until filter on the run's start time (ISO date/time, UTC if no zone, or epoch).
    Runs without results (pending/running) are skipped.
    """
    camp_ids: list[int] | None = None
    rids: list[str] | None = None
    if campaign is not None:
        camps = [campaign] if isinstance(campaign, str | int) else list(campaign)
        ids = []
        for name in camps:
            row = store.campaign(name)
            if row is None:
                known = ", ".join(r["name"] for r in store.campaigns()) or "none"
                raise UsageError(f"--campaign {name!r}: no such campaign in {store.path} "
                                 f"(known: {known})")
            # every campaign of that name (ad-hoc runs may share a name across files)
            if isinstance(name, str) and not name.isdigit():
                ids += [r["id"] for r in store.campaigns() if r["name"] == name]
            else:
                ids.append(row["id"])
        camp_ids = ids
    if run_ids is not None:
        rids = list(run_ids)
        unknown = [r for r in rids if store.run(r) is None]
        if unknown:
            raise UsageError(f"--run {unknown[0]!r}: no such run in {store.path}")
    vs = list(variants) if variants is not None else None
    label_list = list(labels) if labels is not None else None
    t0, t1 = _parse_when(since, "--since"), _parse_when(until, "--until")
    rows = runs_with_results(store, campaign_ids=camp_ids, run_ids=rids, labels=label_list,
                             since=t0, until=t1, variants=vs)
    if vs is not None:
        rows = _match_variants(store, rows, vs)
    split_campaigns = by is None
    by = by or ("label" if label_list is not None else "variant")
    set_name = {r["variant"]: split_variant(r["variant"])[0] for r in rows}
    camps_of_variant: dict[str, set[int]] = {}
    for r in rows:
        camps_of_variant.setdefault(set_name[r["variant"]], set()).add(r["campaign_id"])
    sets: dict[str, list[str]] = {}
    order_hint = label_list if by == "label" else (
        [split_variant(v)[0] for v in vs] if vs else None)
    for r in rows:
        v = set_name[r["variant"]]
        if by == "label":
            name = r["label"] or v
        elif by == "tool":
            # one variant measured by the core, IMB and OSU: one set per tool
            name = f"{v}/{r['tool']}"
        elif split_campaigns and len(camps_of_variant[v]) > 1:
            name = f"{r['campaign']}/{v}"
        else:
            name = v
        sets.setdefault(name, []).append(r["id"])
    if order_hint:
        ranked = {n: i for i, n in enumerate(order_hint)}
        sets = dict(sorted(sets.items(), key=lambda kv: ranked.get(kv[0], len(ranked))))
    return sets
