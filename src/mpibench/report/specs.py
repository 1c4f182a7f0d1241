"""Values the tables read from stored specs: a key at the top of a run's spec, in its
'variant' table or its campaign's 'campaign' table (line rate, price, power, nodes).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from mpibench.store import Store
from mpibench.store.report_queries import (
    distinct_specs,
    run_specs,
)


def _lookup(spec: Any, keys: list[str]) -> Any:
    """A key at the top of a spec, or inside its 'variant' table (campaign runs store
    {"variant": {...}, "group": ...}; `mpibench run` stores the variant itself) or its
    'campaign' table (a campaign file's [campaign] keys)."""
    if not isinstance(spec, dict):
        return None
    for where in (spec, spec.get("variant"), spec.get("campaign")):
        if isinstance(where, dict):
            for k in keys:
                if where.get(k) is not None:
                    return where[k]
    return None


def _spec_value(store: Store, run_ids: Iterable[str], keys: Iterable[str]) -> Any:
    """First value of any of `keys` in the runs' spec_json, then their campaigns' spec."""
    keys = list(keys)
    ids = list(run_ids)[:2000]
    if not ids:
        return None
    # DISTINCT: a campaign's runs mostly share their spec text, and its campaign's
    camp_specs = []
    seen_camp: set[str | None] = set()
    for run_spec, camp_spec in distinct_specs(store, ids):
        if camp_spec in seen_camp:
            camp_spec = "{}"
        else:
            seen_camp.add(camp_spec)
        for blob, sink in ((run_spec, None), (camp_spec, camp_specs)):
            try:
                spec = json.loads(blob or "{}")
            except ValueError:
                continue
            if sink is not None:
                sink.append(spec)
                continue
            v = _lookup(spec, keys)
            if v is not None:
                return v
    for spec in camp_specs:
        v = _lookup(spec, keys)
        if v is not None:
            return v
    return None


def _spec_value_per_run(store: Store, run_ids: list[str], keys: Iterable[str]
                        ) -> dict[str, Any]:
    """{run id: _spec_value(store, [run id], keys)} for many runs in a few queries (a
    per-cell query cost 10^4 queries on a large application campaign)."""
    keys = list(keys)
    out: dict[str, Any] = {}
    found: dict[tuple[str | None, str | None], Any] = {}
    for rid, run_spec, camp_spec in run_specs(store, run_ids):
        if (run_spec, camp_spec) not in found:
            v = None
            for blob in (run_spec, camp_spec):
                try:
                    v = _lookup(json.loads(blob or "{}"), keys)
                except ValueError:
                    continue
                if v is not None:
                    break
            found[(run_spec, camp_spec)] = v
        out[rid] = found[(run_spec, camp_spec)]
    return out
