"""Read-only views of a campaign in the store: per variant x group state counts, fingerprint
mixing, transport verification, and the failed cells with their reasons."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from mpibench.campaign.local import LOCAL_JOB_PREFIX
from mpibench.campaign.plan import expand, legacy_ids
from mpibench.campaign.spec import CampaignSpec
from mpibench.errors import UsageError
from mpibench.store import Store, queries
from mpibench.verify import verdict

STATES = ("done", "failed", "timeout", "running", "pending")
# what `campaign cells` shows of each cell
_CELLS_KEYS = ("id", "seq", "variant", "grp", "params_json", "repeat", "status", "reason",
               "elapsed", "fingerprint_id", "transport_actual", "scheduler", "job_id",
               "nodelist", "sched_state", "run_dir")


def job_info(r) -> dict[str, Any]:
    """A batch cell's job: id, node list and the scheduler's state (final: e.g. `TIMEOUT
    signal=15`); all None for a cell the local backend ran (or that never reached a job)."""
    jid = r["job_id"]
    if not jid or jid.startswith(LOCAL_JOB_PREFIX):
        return {"job_id": None, "nodelist": None, "sched_state": None}
    return {"job_id": jid, "nodelist": r["nodelist"], "sched_state": r["sched_state"]}


def find_campaign(store: Store, spec: CampaignSpec):
    row = queries.campaign_row(store, spec.name, str(spec.path))
    if row is None:
        raise UsageError(f"{spec.path}: campaign {spec.name!r} is not in the store "
                         f"{store.path}; run it first with `mpibench campaign run`")
    return row


def status(store: Store, spec: CampaignSpec) -> dict[str, Any]:
    camp = find_campaign(store, spec)
    current = {c.id for c in expand(spec, seed=0)}  # ids do not depend on the order
    runs = queries.campaign_cells(store, camp["id"])
    # cells of an earlier version of the file stay in the store (their results are real)
    # but are not part of this campaign's progress
    stored = {r["id"] for r in runs}
    if current - stored:
        # a campaign an earlier mpibench ran: its cells' old ids (the next run renames them)
        current |= {old for new, old in legacy_ids(spec).items() if new not in stored}
    obsolete = sum(1 for r in runs if r["id"] not in current)
    runs = [r for r in runs if r["id"] in current]
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    fps: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for r in runs:
        key = (r["variant"], r["grp"])
        g = groups.setdefault(key, {"variant": r["variant"], "group": r["grp"],
                                    **{s: 0 for s in STATES}, "cells": 0,
                                    "transport_requested": r["transport_requested"],
                                    "transport_actual": None, "elapsed_s": 0.0})
        g["cells"] += 1
        g[r["status"]] += 1
        if r["elapsed"]:
            g["elapsed_s"] += r["elapsed"]
        if r["transport_actual"]:
            g["transport_actual"] = r["transport_actual"]
        if r["status"] == "done" and r["fingerprint_id"]:
            fps[(r["variant"], r["grp"], r["params_json"])].add(r["fingerprint_id"])
    variants: dict[str, dict[str, Any]] = {}
    for (vname, gname), g in groups.items():
        point_fps = [v for (vv, gg, _), v in fps.items() if vv == vname and gg == gname]
        g["fingerprints"] = len(set().union(*point_fps)) if point_fps else 0
        g["mixed_fingerprints"] = any(len(s) > 1 for s in point_fps)
        g["transport_verdict"] = verdict(g["transport_requested"], g["transport_actual"])
        v = variants.setdefault(vname, {"variant": vname, "mixed_fingerprints": False,
                                        "transport_requested": g["transport_requested"],
                                        "transport_actual": None, "transport_verdict": None})
        v["mixed_fingerprints"] |= g["mixed_fingerprints"]
        if g["transport_actual"]:
            v["transport_actual"] = g["transport_actual"]
            v["transport_verdict"] = g["transport_verdict"]
    for v in variants.values():
        if v["transport_verdict"] is None:
            v["transport_verdict"] = verdict(v["transport_requested"], None)
    problems = [{"id": r["id"], "label": r["label"], "status": r["status"],
                 "reason": r["reason"], "stderr_tail": r["stderr_tail"], **job_info(r)}
                for r in runs if r["status"] in ("failed", "timeout")]
    # batch jobs the harness follows (or would follow on resume): queued or running
    jobs = [{"id": r["id"], "label": r["label"], **job}
            for r in runs if r["status"] == "running" and (job := job_info(r))["job_id"]]
    totals = {s: sum(1 for r in runs if r["status"] == s) for s in STATES}
    spec_json = json.loads(camp["spec_json"] or "{}")
    return {"campaign": spec.name, "file": str(spec.path), "store": str(store.path),
            "order": spec_json.get("order"), "seed": spec_json.get("seed"),
            "scheduler": spec.scheduler.name,
            "cells": len(runs), "not_in_file": obsolete, "totals": totals,
            "groups": list(groups.values()), "variants": list(variants.values()),
            "problems": problems, "jobs": jobs,
            **({"decisions": decision_status(store, camp["id"], spec.to_dict())}
               if spec.auto is not None and spec.auto.until == "decided" else {})}


def decision_status(store: Store, campaign_id: int, spec: dict) -> dict[str, Any]:
    """repeats = "decide": the looks replayed on the stored launches (campaign/
    auto_repeats.py), per group point: decided, or undecided and why."""
    from mpibench.campaign import auto_repeats as ar

    look, cells = ar.decisions(store, campaign_id, spec)
    return ar.summarize(spec, look, cells)


def cells(store: Store, spec: CampaignSpec, offset: int = 0,
          limit: int | None = None) -> list[dict[str, Any]]:
    """The campaign's cells in plan order (a page of them with offset/limit)."""
    camp = find_campaign(store, spec)
    out = []
    for r in queries.campaign_cells(store, camp["id"], offset, limit):
        d = {k: r[k] for k in _CELLS_KEYS}
        d["params"] = json.loads(d.pop("params_json") or "{}")
        d["group"] = d.pop("grp")
        d.update(job_info(r))
        out.append(d)
    return out


def campaigns(store: Store) -> list[dict[str, Any]]:
    out = []
    # one query for all campaigns: cells per state and, per state, the distinct batch jobs
    # (a local cell's job id is not a scheduler's job)
    every = queries.state_counts_all(store, LOCAL_JOB_PREFIX)
    for c in store.campaigns():
        counts, jobs = every.get(c["id"], ({}, 0))
        sched = (json.loads(c["spec_json"] or "{}").get("scheduler") or {}).get("name")
        out.append({"id": c["id"], "name": c["name"], "file": c["file"],
                    "scheduler": sched or "local", "jobs_in_flight": jobs,
                    "cells": sum(counts.values()), **{s: counts.get(s, 0) for s in STATES}})
    return out
