"""Campaign file (TOML): load and validate everything before anything runs.

Errors are UsageError with one line: "<file>: <key path>: <problem>; expected <form>".
The complete reference is docs/campaigns.md.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpibench.envnames import ENV_NAME, env_name_problem, mca_name_problem
from mpibench.errors import UsageError
from mpibench.execute import Variant
from mpibench.schedulers import SchedulerSettings

FORMAT_VERSION = 1
ORDERS = ("interleaved", "random")
# Placeholders every application template may use besides its own parameters.
BUILTIN_PLACEHOLDERS = ("np", "nodes", "ppn", "variant", "stack", "repeat", "run_dir",
                        "campaign_dir")
VARIANT_KEYS = ("stack", "transport", "env", "mca", "launcher", "launcher_args", "np", "ppn",
                "nodes", "hosts", "hostfile", "bind", "map_by", "profile", "line_rate", "sweep",
                "cpus_per_task", "interface",
                "zip", "exclude")
# How results are judged, not what is measured: stored with the campaign and its runs for
# the reports (line-rate and cost tables), never part of a cell id.
MAX_SECONDS = 366 * 86400  # timeouts, time limits, poll intervals: finite, at most a year
# A plan is held in memory and stored row by row: past this many cells (before exclusions) a
# file is refused unless [campaign] max_cells raises the cap (repeats = 100000000 made a
# dry run that never ended).
MAX_CELLS = 1_000_000
# [campaign] machine_probe (campaign/machine_probe.py)
MACHINE_PROBE_MODES = ("record", "gate", "off")
MAX_NAME = 200  # a campaign name is part of file names (the lock) and ids
COST_KEYS = ("price_per_node_hour", "power_per_node_w", "price_per_kwh", "jobs_per_year")
LINE_RATE_FORM = 'a link speed such as "100Gb/s", "25GbE" or "12.5GB/s"'

SWEEP_KEYS = ("sweep", "zip", "exclude")  # per variant, not in [defaults]
SWEEPABLE = ("transport", "np", "ppn", "nodes", "bind", "map_by", "launcher", "stack",
             "cpus_per_task", "interface")
# placeholders a prepare command may use when prepared once per variant
PREPARE_VARIANT_PLACEHOLDERS = ("variant", "stack", "np", "nodes", "ppn")
SCHEDULER_KEYS = ("name", "partition", "queue", "account", "time_limit", "nodes",
                  "tasks_per_node", "exclusive", "extra_directives", "job_name_prefix",
                  "max_jobs_in_flight", "group_cells", "poll_interval", "poll_max_interval",
                  "modules")
FOM_SOURCES = ("output", "stdout", "stderr")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


@dataclass
class Fom:
    name: str  # metric name, e.g. "ns/day"; "wall_time" for the wall clock
    regex: re.Pattern | None  # None: wall time
    unit: str
    better: str  # higher | lower
    source: str = "output"  # output (stdout then stderr), stdout, stderr, or a file in run_dir

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "regex": self.regex.pattern if self.regex else None,
                "unit": self.unit, "better": self.better, "source": self.source}


@dataclass
class Group:
    name: str
    kind: str  # a registered group kind (campaign/group_kinds/): core, app, peer
    benchmarks: list[str] = field(default_factory=list)
    sizes: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)  # shlex-split template
    command_text: str = ""
    setup: list[list[str]] = field(default_factory=list)
    inputs: list[Path] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    params: dict[str, list[Any]] = field(default_factory=dict)
    zips: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[dict[str, Any]] = field(default_factory=list)
    foms: list[Fom] = field(default_factory=list)
    timeout: float | None = None
    variants: list[str] | None = None
    repeats: int | None = None
    peer: Any = None  # peers.PeerSpec of a third-party suite's group
    # application preparation run once and reused (per campaign, or per variant and/or
    # per value of the parameters named in prepare_per), before setup; never timed
    prepare: list[list[str]] = field(default_factory=list)
    prepare_per: list[str] = field(default_factory=list)
    derived: list[Any] = field(default_factory=list)  # derived.Derived figures of merit

    @property
    def kind_class(self) -> Any:
        """Its GroupKind (campaign/group_kinds/): what the runner and the cells ask."""
        from mpibench.campaign.group_kinds import get_group_kind

        return get_group_kind(self.kind)

    def identity(self) -> dict[str, Any]:
        """What the cell id hashes: what is measured, and what makes this group's cells
        distinct from another group's with the same definition (its name, its own timeout,
        its figures of merit). The campaign-wide timeout is a bound, not part of it."""
        ident = self.definition()
        ident.update(group=self.name, timeout=self.timeout,
                     foms=[f.to_dict() for f in self.foms])
        if self.derived:  # only when used: existing ids stay
            ident["derived"] = [d.to_dict() for d in self.derived]
        return ident

    def definition(self) -> dict[str, Any]:
        """What is measured (ids before schema 2 hashed only this; see plan.legacy_ids)."""
        return self.kind_class.definition(self)

    def to_dict(self) -> dict[str, Any]:
        d = self.definition()
        d.update(name=self.name, params=self.params, zips=self.zips, exclude=self.exclude,
                 foms=[f.to_dict() for f in self.foms], timeout=self.timeout,
                 variants=self.variants, repeats=self.repeats)
        if self.derived:
            d["derived"] = [x.to_dict() for x in self.derived]
        return d


@dataclass
class CampaignSpec:
    path: Path
    name: str
    repeats: int
    order: str
    seed: int | None
    timeout: float
    verify_transport: bool
    variants: list[Variant]
    variant_keys: dict[str, str]  # expanded variant name -> key path in the file
    variant_base: dict[str, str]  # expanded variant name -> [variants.NAME] it came from
    groups: list[Group]
    scheduler: SchedulerSettings
    description: str = ""
    raw: dict[str, Any] = field(default_factory=dict)
    price_per_node_hour: int | float | None = None
    power_per_node_w: int | float | None = None
    price_per_kwh: int | float | None = None     # electricity, for the yearly projection
    jobs_per_year: int | float | None = None     # the workload of the yearly projection
    # expanded variant name -> (line rate as written, bits per second)
    line_rates: dict[str, tuple[str, float]] = field(default_factory=dict)
    # set by `mpibench run` (campaign/adhoc.py): one invocation's launches are its own cells
    instance: str = ""
    # repeats = "auto" (campaign/auto_repeats.py): repeats is then its maximum
    auto: Any = None
    max_cells: int = MAX_CELLS  # refused above this (check_cell_count)
    # equivalence margin (0.02 = ±2%): compare and check test equivalence (TOST) with it
    equivalence: float | None = None
    # budget = "auto" (stats/budget.py): the core's --target for launches after the first
    # two rounds, from the group's measured variance components (local scheduler)
    budget: bool = False
    # budget = { launches = N }: "auto", planned for N launches per variant (default: the
    # campaign's repeats, or the maximum of repeats "auto"/"decide")
    budget_launches: int | None = None
    # machine_probe (campaign/machine_probe.py): "record" (the default) probes the two CPUs'
    # cache-line round trip around each local launch of two bound ranks and stores it;
    # "gate" also sets aside a launch off the campaign's reference state; "off"
    machine_probe: str = "record"

    @property
    def directory(self) -> Path:
        return self.path.parent

    def to_dict(self) -> dict[str, Any]:
        """The campaign's stored spec. The reports read price_per_node_hour and
        power_per_node_w at its top level (report.specs._spec_value)."""
        return {"format": FORMAT_VERSION, "name": self.name, "repeats": self.repeats,
                **({"repeats_auto": self.auto.to_dict()} if self.auto else {}),
                "order": self.order, "seed": self.seed, "timeout": self.timeout,
                "verify_transport": self.verify_transport,
                **({"instance": self.instance} if self.instance else {}),
                "price_per_node_hour": self.price_per_node_hour,
                "power_per_node_w": self.power_per_node_w,
                **({"price_per_kwh": self.price_per_kwh} if self.price_per_kwh is not None
                   else {}),
                **({"jobs_per_year": self.jobs_per_year} if self.jobs_per_year is not None
                   else {}),
                **({"equivalence": self.equivalence} if self.equivalence is not None
                   else {}),
                **({"budget": "auto"} if self.budget else {}),
                **({"budget_launches": self.budget_launches} if self.budget_launches else {}),
                **({"machine_probe": self.machine_probe} if self.machine_probe != "record"
                   else {}),
                "variants": [{**v.to_dict(), **self.judging(v.name)} for v in self.variants],
                "groups": [g.to_dict() for g in self.groups],
                "scheduler": self.scheduler.__dict__}

    def variants_of(self, g: Group) -> list[Variant]:
        """The variants group g runs (all, or those its `variants` list names)."""
        return group_variants(g, self.variants, self.variant_base)

    def judging(self, variant: str) -> dict[str, Any]:
        """Keys a run of this variant carries for the reports (at the top of its stored
        spec, where the line-rate table looks first): the variant's line rate as written
        and in bits per second, as `mpibench import --line-rate` stores them."""
        if variant not in self.line_rates:
            return {}
        text, bps = self.line_rates[variant]
        return {"line_rate": text, "line_rate_bps": bps}


class UnknownPlaceholder(UsageError):
    """A command names a {placeholder} its context does not define (split_template)."""


class _Ctx:
    """Error helper: every message starts with the file and the key path."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, problem: str, expected: str | None = None,
             error: type[UsageError] = UsageError):
        msg = f"{self.path}: {key}: {problem}"
        if expected:
            msg += f"; expected {expected}"
        raise error(msg)

    def table(self, value: Any, key: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(key, f"got {_show(value)}", "a table")
        return value

    def known(self, table: dict, key: str, allowed: tuple[str, ...] | list[str]) -> None:
        unknown = [k for k in table if k not in allowed]
        if unknown:
            self.fail(f"{key}.{unknown[0]}" if key else unknown[0], "unknown key",
                      "one of " + ", ".join(allowed))

    def string(self, value: Any, key: str, *, nonempty: bool = True) -> str:
        if not isinstance(value, str) or (nonempty and not value.strip()):
            self.fail(key, f"got {_show(value)}", "a non-empty string")
        return value

    def integer(self, value: Any, key: str, minimum: int = 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(key, f"got {_show(value)}", f"an integer >= {minimum}")
        return value

    def number(self, value: Any, key: str) -> float:
        # TOML has nan and inf: a timeout of nan or inf crashed after the launch began
        if isinstance(value, bool) or not isinstance(value, int | float) or \
                not 0 < value < MAX_SECONDS:
            self.fail(key, f"got {_show(value)}", "a number > 0, finite (seconds: at most "
                      "one year)")
        return float(value)

    def non_negative(self, value: Any, key: str) -> int | float:
        """A number >= 0, kept as written (2 stays 2, for captions)."""
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value \
                or value == float("inf"):
            self.fail(key, f"got {_show(value)}", "a number >= 0")
        return value

    def boolean(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            self.fail(key, f"got {_show(value)}", "true or false")
        return value

    def str_list(self, value: Any, key: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            self.fail(key, f"got {_show(value)}", "a list of strings")
        return list(value)

    def str_map(self, value: Any, key: str, names: str | None = None) -> dict[str, str]:
        """A table of strings; names="env" or "mca" also checks each key is a valid name
        (an env name reaches `env`, `mpirun -x`, `-genv` as an argument)."""
        t = self.table(value, key)
        out = {}
        for k, v in t.items():
            problem = (env_name_problem(k) if names == "env" else
                       mca_name_problem(k) if names == "mca" else None)
            if problem:
                self.fail(f"{key}.{k}" if ENV_NAME.match(str(k)) else f"{key}.{k!r}", problem)
            if isinstance(v, bool):
                v = "1" if v else "0"
            if not isinstance(v, str | int | float):
                self.fail(f"{key}.{k}", f"got {_show(v)}", "a string or number")
            out[str(k)] = str(v)
        return out


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


MAX_CAMPAIGN_FILE = 16 << 20     # a campaign file is kilobytes


def load(path: str | Path) -> CampaignSpec:
    path = Path(path)
    try:
        # a device (/dev/zero) or a huge file would be read until memory runs out
        if path.exists() and not path.is_dir() and not path.is_file():
            raise UsageError(f"campaign file {path}: not a regular file; expected a TOML file")
        with path.open("rb") as f:
            raw = f.read(MAX_CAMPAIGN_FILE + 1)
        if len(raw) > MAX_CAMPAIGN_FILE:
            raise UsageError(f"campaign file {path}: larger than {MAX_CAMPAIGN_FILE >> 20} MiB; "
                             "expected a TOML campaign file")
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"campaign file {path}: not found") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"campaign file {path}: not UTF-8 text (byte "
                         f"0x{exc.object[exc.start]:02x} at offset {exc.start}); expected a "
                         "TOML file") from None
    except OSError as exc:
        raise UsageError(f"campaign file {path}: cannot read ({exc.strerror})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML ({exc})") from None
    return parse(data, path)


def _no_nul(c: _Ctx, value: Any, key: str) -> None:
    """No string anywhere in the file may hold a NUL byte (TOML allows \\u0000): it cannot
    be passed to a process, and would be cut short or refused after launches began."""
    if isinstance(value, str):
        if "\x00" in value:
            c.fail(key or "(top level)", "contains a NUL byte", "text without \\u0000")
    elif isinstance(value, dict):
        for k, v in value.items():
            sub = f"{key}.{k}" if key else str(k)
            if "\x00" in str(k):
                c.fail(repr(sub), "key contains a NUL byte", "text without \\u0000")
            _no_nul(c, v, sub)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _no_nul(c, v, f"{key}[{i}]")


def parse(data: dict[str, Any], path: Path) -> CampaignSpec:
    c = _Ctx(path)
    _no_nul(c, data, "")
    c.known(data, "", ("campaign", "defaults", "variants", "benchmarks", "scheduler"))
    settings = _campaign_settings(c, data, path)
    variants, vkeys, vbase, line_rates = _variants_tables(c, data)
    groups = _benchmark_tables(c, data, path, variants, vbase)
    scheduler = _scheduler(c, c.table(data.get("scheduler", {}), "scheduler"))
    spec = CampaignSpec(path=path.resolve(), variants=variants, variant_keys=vkeys,
                        variant_base=vbase, groups=groups, scheduler=scheduler, raw=data,
                        line_rates=line_rates, **settings)
    check_cell_count(spec)
    return spec


def _campaign_settings(c: _Ctx, data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The [campaign] table, validated: CampaignSpec's keyword arguments for it."""
    camp = c.table(data.get("campaign", {}), "campaign")
    c.known(camp, "campaign", ("name", "format", "description", "repeats", "order", "seed",
                               "timeout", "verify_transport", "max_cells", "equivalence",
                               "budget", "machine_probe")
            + COST_KEYS)
    fmt = camp.get("format", FORMAT_VERSION)
    if fmt != FORMAT_VERSION:
        c.fail("campaign.format", f"got {_show(fmt)}",
               f"{FORMAT_VERSION} (the only format this mpibench reads)")
    name = c.string(camp.get("name", path.stem), "campaign.name")
    if len(name) > MAX_NAME or not name.isprintable():
        c.fail("campaign.name", f"{len(name)} characters" if len(name) > MAX_NAME else
               f"got {_show(name)}", f"a printable name of at most {MAX_NAME} characters")
    max_cells = c.integer(camp.get("max_cells", MAX_CELLS), "campaign.max_cells")
    auto = None
    if isinstance(camp.get("repeats"), str | dict):
        from mpibench.campaign.auto_repeats import parse as parse_auto
        auto = parse_auto(camp["repeats"], lambda want: c.fail(
            "campaign.repeats", f"got {_show(camp['repeats'])}", want))
        repeats = auto.max              # the plan holds every launch the rule may run
    else:
        repeats = c.integer(camp.get("repeats", 3), "campaign.repeats")
    order = camp.get("order", "interleaved")
    if order not in ORDERS:
        c.fail("campaign.order", f"got {_show(order)}", " or ".join(f'"{o}"' for o in ORDERS))
    seed = camp.get("seed")
    if seed is not None:
        seed = c.integer(seed, "campaign.seed", minimum=0)
    timeout = c.number(camp.get("timeout", 600), "campaign.timeout")
    verify = c.boolean(camp.get("verify_transport", True), "campaign.verify_transport")
    description = c.string(camp.get("description", ""), "campaign.description", nonempty=False)
    cost = {k: c.non_negative(camp[k], f"campaign.{k}") for k in COST_KEYS if k in camp}
    equivalence = None
    if "equivalence" in camp:
        from mpibench.stats.launch import parse_margin
        equivalence = parse_margin(camp["equivalence"])
        if equivalence is None:
            c.fail("campaign.equivalence", f"got {_show(camp['equivalence'])}",
                   'a margin such as "2%" (compare reports "equivalent within ±2%")')
    budget = camp.get("budget", "fixed")
    budget_launches = None
    if isinstance(budget, dict) and set(budget) == {"launches"}:
        budget_launches = c.integer(budget["launches"], "campaign.budget.launches", 2)
        budget = "auto"
    if budget not in ("auto", "fixed"):
        c.fail("campaign.budget", f"got {_show(budget)}",
               '"auto" (the core\'s --target from the measured variance components), '
               '{ launches = N } ("auto" planned for N launches per variant) or "fixed"')
    machine_probe = camp.get("machine_probe", "record")
    if machine_probe not in MACHINE_PROBE_MODES:
        c.fail("campaign.machine_probe", f"got {_show(machine_probe)}",
               '"record" (the default: probe the machine state around each launch of two '
               'bound ranks and store it), "gate" (also set aside a launch off the '
               'campaign\'s reference state) or "off"')
    return dict(name=name, repeats=repeats, auto=auto, order=order, seed=seed,
                timeout=timeout, verify_transport=verify, description=description,
                max_cells=max_cells, equivalence=equivalence, budget=budget == "auto",
                budget_launches=budget_launches, machine_probe=machine_probe, **cost)


def _variants_tables(c: _Ctx, data: dict[str, Any]
                     ) -> tuple[list[Variant], dict[str, str], dict[str, str],
                                dict[str, tuple[str, float]]]:
    """[defaults] and the [variants.NAME] tables, each expanded by its sweep keys: the
    variants, and per variant its table's key, its base name and its line rate."""
    defaults = c.table(data.get("defaults", {}), "defaults")
    _no_cost_keys(c, defaults, "defaults")
    c.known(defaults, "defaults", [k for k in VARIANT_KEYS if k not in SWEEP_KEYS])
    vtable = c.table(data.get("variants"), "variants") if "variants" in data else \
        c.fail("variants", "missing", "at least one [variants.NAME] table")
    if not vtable:
        c.fail("variants", "empty", "at least one [variants.NAME] table")
    variants: list[Variant] = []
    vkeys: dict[str, str] = {}
    vbase: dict[str, str] = {}
    line_rates: dict[str, tuple[str, float]] = {}
    for vname, vdef in vtable.items():
        key = f"variants.{vname}"
        if not _NAME.match(vname):
            c.fail(key, f"bad variant name {vname!r}",
                   "letters, digits and _ . + - (no spaces)")
        vdef = c.table(vdef, key)
        _no_cost_keys(c, vdef, key)
        c.known(vdef, key, VARIANT_KEYS)
        rate = None
        if "line_rate" in vdef or "line_rate" in defaults:
            rkey = f"{key}.line_rate" if "line_rate" in vdef else "defaults.line_rate"
            rate = _line_rate(c, {**defaults, **vdef}["line_rate"], rkey)
        for v in _variants(c, key, vname, _with_defaults(defaults, vdef)):
            if v.name in vkeys:
                c.fail(key, f"variant name {v.name!r} is produced twice", "unique names")
            vkeys[v.name] = key
            vbase[v.name] = vname
            variants.append(v)
            if rate is not None:
                line_rates[v.name] = rate
    return variants, vkeys, vbase, line_rates


def _benchmark_tables(c: _Ctx, data: dict[str, Any], path: Path, variants: list[Variant],
                      vbase: dict[str, str]) -> list[Group]:
    """The [benchmarks.NAME] tables: their groups, each name once."""
    gtable = c.table(data.get("benchmarks"), "benchmarks") if "benchmarks" in data else \
        c.fail("benchmarks", "missing", "at least one [benchmarks.NAME] table")
    if not gtable:
        c.fail("benchmarks", "empty", "at least one [benchmarks.NAME] table")
    groups = [grp for g, gdef in gtable.items()
              for grp in _groups(c, f"benchmarks.{g}", g, gdef, path, variants, vbase)]
    seen: dict[str, str] = {}
    for grp in groups:
        if grp.name in seen:
            c.fail(f"benchmarks.{grp.name}", f"group name {grp.name!r} is produced twice "
                   f"(also by {seen[grp.name]})", "unique group names")
        seen[grp.name] = grp.name
    return groups


def cell_bound(spec: CampaignSpec) -> int:
    """Cells the plan has at most (before exclusions), computed without expanding it."""
    total = 0
    for g in spec.groups:
        zipped = {m for members in g.zips.values() for m in members}
        points = 1
        for members in g.zips.values():
            points *= len(g.params[members[0]])
        for name, values in g.params.items():
            if name not in zipped:
                points *= len(values)
        total += points * len(group_variants(g, spec.variants, spec.variant_base)) * \
            (g.repeats or spec.repeats)
    return total


def check_cell_count(spec: CampaignSpec) -> None:
    n = cell_bound(spec)
    if n > spec.max_cells:
        where = f"{spec.path}: " if spec.instance == "" else ""
        raise UsageError(f"{where}the plan has {n:,} cells (variants x groups x parameter "
                         f"points x repeats), more than the cap of {spec.max_cells:,}; "
                         "expected fewer repeats or values, or raise the cap with "
                         "max_cells = N in [campaign] (docs/campaigns.md)")


def _with_defaults(defaults: dict[str, Any], vdef: dict[str, Any]) -> dict[str, Any]:
    """A variant over [defaults]: its env and mca tables merge key by key over the
    defaults' (a variant adding UCX_TLS keeps the site-wide UCX_LOG_LEVEL); every other key
    replaces the default. Non-tables are left for the checks to name."""
    out = {**defaults, **vdef}
    for table in ("env", "mca"):
        if isinstance(defaults.get(table), dict) and isinstance(vdef.get(table), dict):
            out[table] = {**defaults[table], **vdef[table]}
    return out


def _no_cost_keys(c: _Ctx, table: dict[str, Any], key: str) -> None:
    """Price and power are one per campaign: the cost table prices every variant alike."""
    for k in COST_KEYS:
        if k in table:
            c.fail(f"{key}.{k}", "a campaign setting (the cost table uses one price and one "
                   "power for all variants)", f"{k} in [campaign]")


def _line_rate(c: _Ctx, value: Any, key: str) -> tuple[str, float]:
    """A link speed with its unit (a bare number would leave bits vs bytes and the prefix
    to guesswork), checked by the same parser as `--line-rate`."""
    from mpibench.importer import parse_line_rate  # not at import: planning stays light

    if not isinstance(value, str):
        c.fail(key, f"got {_show(value)}", LINE_RATE_FORM)
    try:
        bps = parse_line_rate(value)
    except UsageError:
        c.fail(key, f"got {_show(value)}", LINE_RATE_FORM)
    return value, bps


def grid(params: dict[str, list[Any]], zips: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Cross product of the axes in `params`, where each zip is one axis whose members advance
    together; each point keeps the order of `params`."""
    if not params:
        return [{}]
    axes: list[list[dict[str, Any]]] = []
    zipped = {m for members in zips.values() for m in members}
    for members in zips.values():
        axes.append([dict(zip(members, vals, strict=True))
                     for vals in zip(*(params[m] for m in members), strict=True)])
    for name, values in params.items():
        if name not in zipped:
            axes.append([{name: v} for v in values])
    out = []
    for combo in itertools.product(*axes):
        point: dict[str, Any] = {}
        for part in combo:
            point.update(part)
        out.append({k: point[k] for k in params})
    return out


def _distinct(c: _Ctx, key: str, params: dict[str, list[Any]], zips: dict[str, list[str]],
              what: str) -> None:
    """Repeated values would give two cells one id (one would be stored, the launch run
    twice): a value repeated on an axis, or a tuple repeated in a zip, is an error."""
    zipped = {m for members in zips.values() for m in members}
    for name, values in params.items():
        if name in zipped:
            continue
        seen: dict[str, int] = {}
        for i, v in enumerate(values):
            k = json.dumps(v, sort_keys=True, default=str)
            if k in seen:
                c.fail(f"{key}.{name}[{i}]", f"{_show(v)} repeats {key}.{name}[{seen[k]}]",
                       f"distinct {what} values (raise repeats to measure a point again)")
            seen[k] = i
    for zname, members in zips.items():
        seen_t: dict[str, int] = {}
        for i, vals in enumerate(zip(*(params[m] for m in members), strict=True)):
            k = json.dumps(vals, sort_keys=True, default=str)
            if k in seen_t:
                c.fail(f"{key}: zip {zname}", f"entry {i} {_show(vals)} repeats entry "
                       f"{seen_t[k]}", "distinct combinations")
            seen_t[k] = i


def _zips(c: _Ctx, key: str, value: Any, axes: dict[str, list[Any]], what: str
          ) -> dict[str, list[str]]:
    """Named zips: {name = [axis, axis, ...]}; the axes advance together (equal lengths)."""
    zips = c.table(value, key)
    out: dict[str, list[str]] = {}
    zipped: set[str] = set()
    for zk, members in zips.items():
        zkey = f"{key}.{zk}"
        members = c.str_list(members, zkey)
        if len(members) < 2:
            c.fail(zkey, f"got {_show(members)}", f"a list of at least two {what} names")
        for m in members:
            if m not in axes:
                c.fail(zkey, f"unknown {what} {m!r}", "one of " + (", ".join(axes) or "none"))
            if m in zipped:
                c.fail(zkey, f"{what} {m!r} is already in another zip", "each once")
            zipped.add(m)
        lengths = {m: len(axes[m]) for m in members}
        if len(set(lengths.values())) != 1:
            c.fail(zkey, f"zipped {what}s have different lengths "
                   + ", ".join(f"{m}={n}" for m, n in lengths.items()), "equal-length lists")
        out[zk] = members
    return out


def _same(a: Any, b: Any) -> bool:
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _check_values(c: _Ctx, key: str, want: Any, have: list[Any], where: str) -> None:
    """An exclusion value that matches nothing is a typo: say which values exist."""
    if not any(_same(want, h) for h in have):
        c.fail(key, f"{_show(want)} matches no {where}",
               "one of " + ", ".join("(not set)" if h is None else _show(h)
                                     for h in dict.fromkeys(have)))


def _variants(c: _Ctx, key: str, name: str, d: dict[str, Any]) -> list[Variant]:
    if "stack" not in d:
        c.fail(f"{key}.stack", "missing", "the name of an MPI stack (see `mpibench stacks`)")
    sweep = c.table(d.get("sweep", {}), f"{key}.sweep")
    axes: dict[str, list[Any]] = {}
    for sk, values in sweep.items():
        skey = f"{key}.sweep.{sk}"
        field_name = sk.split(".", 1)[0]
        if field_name not in SWEEPABLE + ("env", "mca") or (field_name in ("env", "mca")
                                                             and "." not in sk):
            c.fail(skey, "cannot be swept",
                   "one of " + ", ".join(SWEEPABLE) + ', "env.NAME" or "mca.NAME"')
        if not isinstance(values, list) or not values:
            c.fail(skey, f"got {_show(values)}", "a non-empty list of values")
        axes[sk] = values
    for extra in ("zip", "exclude"):
        if extra in d and not axes:
            c.fail(f"{key}.{extra}", "given without a sweep",
                   f"a sweep table whose keys the {extra} names")
    zips = _zips(c, f"{key}.zip", d.get("zip", {}), axes, "sweep key")
    _distinct(c, f"{key}.sweep", axes, zips, "sweep")
    rules = d.get("exclude", [])
    if not isinstance(rules, list):
        c.fail(f"{key}.exclude", f"got {_show(rules)}",
               'a list of tables such as [{ np = 4, "env.UCX_TLS" = "tcp" }]')
    for i, rule in enumerate(rules):
        ekey = f"{key}.exclude[{i}]"
        rule = c.table(rule, ekey)
        if not rule:
            c.fail(ekey, "empty (would exclude every variant)", "at least one sweep key")
        c.known(rule, ekey, list(axes))
        for rk, want in rule.items():
            _check_values(c, f"{ekey}.{rk}", want, axes[rk], f"value of {key}.sweep.{rk}")
    combos = [p for p in grid(axes, zips)
              if not any(all(p[k] == v for k, v in r.items()) for r in rules)]
    if not combos:
        c.fail(f"{key}.exclude", "excludes every combination of the sweep",
               "rules that leave at least one variant")
    out = []
    for combo in combos:
        d2 = {k: v for k, v in d.items() if k not in ("sweep", "zip", "exclude")}
        d2["env"] = dict(d.get("env", {})) if isinstance(d.get("env", {}), dict) else d.get("env")
        d2["mca"] = dict(d.get("mca", {})) if isinstance(d.get("mca", {}), dict) else d.get("mca")
        label = []
        sources: dict[str, str] = {}
        for sk, value in combo.items():
            # an error in a swept value names the sweep entry it came from
            skey = f"{key}.sweep.{sk}[{axes[sk].index(value)}]"
            if "." in sk:
                table, sub = sk.split(".", 1)
                if not isinstance(d2[table], dict):
                    c.fail(f"{key}.{table}", f"got {_show(d2[table])}", "a table")
                d2[table][sub] = value
                sources[f"{key}.{table}.{sub}"] = skey
            else:
                d2[sk] = value
                sources[f"{key}.{sk}"] = skey
            label.append(f"{sk}={value}")
        vname = f"{name}[{','.join(label)}]" if label else name
        out.append(_variant(_SweepCtx(c, sources), key, vname, d2))
    return out


class _SweepCtx(_Ctx):
    """Like the file's context, but a key set by a sweep is reported as its sweep entry."""

    def __init__(self, parent: _Ctx, sources: dict[str, str]):
        super().__init__(parent.path)
        self.sources = sources

    def fail(self, key: str, problem: str, expected: str | None = None,
             error: type[UsageError] = UsageError):
        super().fail(self.sources.get(key, key), problem, expected, error)


def _variant(c: _Ctx, key: str, name: str, d: dict[str, Any]) -> Variant:
    v = Variant(name=name, stack=c.string(d["stack"], f"{key}.stack"))
    if d.get("transport") is not None:
        v.transport = c.string(d["transport"], f"{key}.transport")
    if d.get("interface") is not None:
        from mpibench.transports import interface_problem

        v.interface = c.string(d["interface"], f"{key}.interface")
        problem = interface_problem(v.interface)
        if problem:
            c.fail(f"{key}.interface", problem,
                   'a network interface name such as "eth-fast" or "ib0"')
    if "env" in d:
        v.env = c.str_map(d["env"], f"{key}.env", names="env")
    if "mca" in d:
        v.mca = c.str_map(d["mca"], f"{key}.mca", names="mca")
    if "launcher" in d:
        v.launcher = c.string(d["launcher"], f"{key}.launcher")
    if "launcher_args" in d:
        v.launcher_args = c.str_list(d["launcher_args"], f"{key}.launcher_args")
    _known_names(c, key, v)
    if v.launcher == "template":
        from mpibench.launchers.template import check_template

        try:  # a bad template used to fail every launch; it is text, checkable now
            check_template(v.launcher_args)
        except UsageError as exc:
            c.fail(f"{key}.launcher_args", str(exc))
    if "np" in d:
        v.np = c.integer(d["np"], f"{key}.np")
    for k in ("ppn", "nodes", "cpus_per_task"):
        if d.get(k) is not None:
            setattr(v, k, c.integer(d[k], f"{key}.{k}"))
    if v.nodes and v.ppn:
        # a node-count sweep with ranks per node: np follows unless given
        if "np" not in d:
            v.np = v.nodes * v.ppn
        elif v.np > v.nodes * v.ppn:
            c.fail(f"{key}.np", f"{name}: {v.np} ranks do not fit {v.nodes} node(s) x ppn {v.ppn}",
                   "np <= nodes * ppn (or leave np out: it is then nodes * ppn)")
    if "hosts" in d:
        v.hosts = c.str_list(d["hosts"], f"{key}.hosts")
    for k in ("hostfile", "bind", "map_by"):
        if d.get(k) is not None:
            setattr(v, k, c.string(d[k], f"{key}.{k}"))
    if v.hostfile and not Path(v.hostfile).is_absolute():
        # launches run in the cell's run directory: a relative host file means the campaign's
        v.hostfile = str(c.path.resolve().parent / v.hostfile)
    if "profile" in d:
        v.profile = c.boolean(d["profile"], f"{key}.profile")
    if v.stack == "none":
        # an application over its own network layer: MPI settings would be silently ignored
        for k, on in (("transport", v.transport), ("mca", v.mca), ("interface", v.interface),
                      ("profile", v.profile)):
            if on:
                c.fail(f"{key}.{k}", f"{name} has stack = \"none\" (an application with no "
                                     "MPI), which has no MPI transport, MCA or PMPI profile",
                       "env and a launcher (launcher = \"template\") only")
    return v


def split_template(c: _Ctx, text: Any, key: str, names: set[str]) -> list[str]:
    """shlex-split FIRST, then check placeholders per argv element (substitution happens per
    element later, so a value with spaces stays one argument and nothing reaches a shell)."""
    text = c.string(text, key)
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        c.fail(key, f"cannot split {_show(text)} into arguments ({exc})",
               "a command line with balanced quotes")
    if not argv:
        c.fail(key, "empty command", "a command line")
    for arg in argv:
        for m in _PLACEHOLDER.finditer(arg.replace("{{", "").replace("}}", "")):
            if m.group(1) not in names:
                c.fail(key, f"unknown placeholder {{{m.group(1)}}}",
                       "one of " + ", ".join("{" + n + "}" for n in sorted(names)),
                       UnknownPlaceholder)
    return argv


def substitute(argv: list[str], values: dict[str, Any]) -> list[str]:
    """Replace {name} in each argv element; {{ and }} are literal braces. No eval, no shell."""
    out = []
    for arg in argv:
        parts = re.split(r"(\{\{|\}\})", arg)
        text = []
        for p in parts:
            if p == "{{":
                text.append("{")
            elif p == "}}":
                text.append("}")
            else:
                text.append(_PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), p))
        out.append("".join(text))
    return out


def _scalar(c: _Ctx, value: Any, key: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        c.fail(key, f"got {_show(value)}", "a string or number")
    return value


def _groups(c: _Ctx, key: str, name: str, gdef: Any, path: Path, variants: list[Variant],
            vbase: dict[str, str]) -> list[Group]:
    """One [benchmarks.NAME] table: its kind (campaign/group_kinds/) from its marker key,
    then the kind's own validation."""
    from mpibench.campaign.group_kinds import group_kinds, select_kind

    if not _NAME.match(name):
        c.fail(key, f"bad benchmark group name {name!r}", "letters, digits and _ . + -")
    gdef = c.table(gdef, key)
    kind = select_kind(gdef)
    if kind is None:
        kinds = [k.marker_help for k in group_kinds()]
        c.fail(key, "needs exactly one of " + ", ".join(kinds[:-1]) + " or " + kinds[-1],
               'benchmarks = ["PingPong", ...], command = "..." or suite = "imb"')
    c.known(gdef, key, kind.keys)
    return kind.parse(c, key, name, gdef, path, variants, vbase)


def group_common(c: _Ctx, key: str, gdef: dict[str, Any], g: Group,
                 vbase: dict[str, str]) -> None:
    """The keys every kind of group has: timeout, repeats and the variants it runs."""
    variant_names = set(vbase.values()) | set(vbase)
    if "timeout" in gdef:
        g.timeout = c.number(gdef["timeout"], f"{key}.timeout")
    if "repeats" in gdef:
        g.repeats = c.integer(gdef["repeats"], f"{key}.repeats")
    if "variants" in gdef:
        g.variants = c.str_list(gdef["variants"], f"{key}.variants")
        for i, vn in enumerate(g.variants):
            if vn in g.variants[:i]:
                c.fail(f"{key}.variants[{i}]", f"{vn!r} is listed twice", "distinct names")
        for vn in g.variants:
            if vn not in variant_names:
                c.fail(f"{key}.variants", f"unknown variant {vn!r}",
                       "names of [variants.NAME] tables: " + ", ".join(sorted(variant_names)))


def _prepare(c: _Ctx, key: str, gdef: dict[str, Any], g: Group) -> None:
    """prepare = commands run once (per campaign, or per prepare_per: "variant" and/or
    parameter names) in a shared directory whose files every cell then starts from."""
    if "prepare_per" in gdef and "prepare" not in gdef:
        c.fail(f"{key}.prepare_per", "given without prepare", "a prepare command list")
    if "prepare" not in gdef:
        return
    per = c.str_list(gdef.get("prepare_per", []), f"{key}.prepare_per")
    for i, p in enumerate(per):
        if p != "variant" and p not in g.params:
            c.fail(f"{key}.prepare_per[{i}]", f"got {p!r}",
                   '"variant" or a parameter of this group: '
                   + ", ".join(["variant", *g.params]))
    g.prepare_per = per
    names = {"campaign_dir"} | {p for p in per if p != "variant"}
    if "variant" in per:
        names |= set(PREPARE_VARIANT_PLACEHOLDERS)
    cmds = gdef["prepare"]
    if isinstance(cmds, str):
        cmds = [cmds]
    if not isinstance(cmds, list) or not cmds:
        c.fail(f"{key}.prepare", f"got {_show(cmds)}", "a command line or a list of them")
    try:
        g.prepare = [split_template(c, s, f"{key}.prepare[{i}]", names)
                     for i, s in enumerate(cmds)]
    except UnknownPlaceholder as exc:
        raise UsageError(f"{exc} (prepare runs once per campaign"
                         + (f" and per {', '.join(per)}" if per else "")
                         + ": name what it depends on in prepare_per)") from None


def _derived(c: _Ctx, key: str, value: Any, foms: list[Fom]) -> list[Any]:
    """derived = [{ name, expr, unit, better }]: figures computed from the cell's own."""
    from mpibench.derived import Derived, compile_expr, ident

    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        c.fail(key, f"got {_show(value)}", "a list of tables {name, expr, unit, better}")
    known: dict[str, str] = {"wall_time": "wall_time"}   # identifier -> metric name
    for f in foms if value else []:
        other = known.setdefault(ident(f.name), f.name)
        if other != f.name:
            # x/y and x.y are both x_y, U+FB01 folds to fi: an expression could not say which
            c.fail(f"{key.rsplit('.', 1)[0]}.fom",
                   f"metrics {other!r} and {f.name!r} are both written {ident(f.name)} in a "
                   "derived expression", "names that differ in letters or digits")
    out = []
    for i, d in enumerate(value):
        dkey = f"{key}[{i}]"
        d = c.table(d, dkey)
        c.known(d, dkey, ("name", "expr", "unit", "better"))
        for req in ("name", "expr", "unit", "better"):
            if req not in d:
                c.fail(f"{dkey}.{req}", "missing",
                       {"name": '"jobs/day"', "expr": '"86400 / wall_time"',
                        "unit": '"jobs/day"', "better": '"higher" or "lower"'}[req])
        name = c.string(d["name"], f"{dkey}.name")
        if ident(name) in known:
            other = known[ident(name)]
            c.fail(f"{dkey}.name", f"{name!r} is already a metric of this group"
                   if other == name else f"{name!r} and the metric {other!r} are both written "
                   f"{ident(name)} in a derived expression", "a new name")
        expr = c.string(d["expr"], f"{dkey}.expr")
        try:
            tree = compile_expr(expr)
        except ValueError as exc:
            c.fail(f"{dkey}.expr", str(exc))
        if d["better"] not in ("higher", "lower"):
            c.fail(f"{dkey}.better", f"got {_show(d['better'])}", '"higher" or "lower"')
        der = Derived(name, expr, c.string(d["unit"], f"{dkey}.unit"), d["better"], tree)
        unknown = sorted(der.names() - known.keys())
        if unknown:
            c.fail(f"{dkey}.expr", f"unknown metric {unknown[0]!r}",
                   "one of " + ", ".join(sorted(known))
                   + " (metric names as identifiers: ns/day -> ns_day)")
        known[ident(name)] = name
        out.append(der)
    return out


def group_variants(g: Group, variants: list[Variant], vbase: dict[str, str]) -> list[Variant]:
    """The variants a group runs (all, or those its `variants` list names)."""
    return [v for v in variants if g.variants is None or v.name in g.variants
            or vbase[v.name] in g.variants]


EXCLUDE_VARIANT_KEYS = ("variant", "np", "nodes", "ppn", "stack", "transport")


def _exclude(c: _Ctx, key: str, value: Any, params: dict[str, list[Any]],
             variants: list[Variant], vbase: dict[str, str]) -> list[dict[str, Any]]:
    """Exclusion rules: a cell is dropped when it matches every key of one rule. Each value
    must occur in the group (a parameter's values, or its variants' settings), so a typo is
    an error instead of a rule that silently excludes nothing."""
    if not isinstance(value, list):
        c.fail(f"{key}.exclude", f"got {_show(value)}",
               "a list of tables such as [{steps = 2000, variant = \"mpich\"}]")
    allowed = list(params) + list(EXCLUDE_VARIANT_KEYS)
    out = []
    for i, ex in enumerate(value):
        ekey = f"{key}.exclude[{i}]"
        ex = c.table(ex, ekey)
        if not ex:
            c.fail(ekey, "empty (would exclude every cell)", "at least one key")
        c.known(ex, ekey, allowed)
        for k, want in ex.items():
            if k in params:
                have, where = params[k], f"value of {key}.params.{k}"
            elif k == "variant":
                have = [n for v in variants for n in (v.name, vbase[v.name])]
                where = "variant of this group"
            else:
                have = [getattr(v, k) for v in variants]
                where = f"{k} of this group's variants"
            _check_values(c, f"{ekey}.{k}", want, have, where)
        out.append(dict(ex))
    return out


def _foms(c: _Ctx, key: str, value: Any) -> list[Fom]:
    if value == "wall_time":
        return [Fom("wall_time", None, "s", "lower")]
    items = value if isinstance(value, list) else [value]
    out = []
    for i, f in enumerate(items):
        fkey = key if not isinstance(value, list) else f"{key}[{i}]"
        if f == "wall_time" and isinstance(value, list):
            # every application cell records its wall time anyway; naming it beside the
            # regex figures is harmless, so it is accepted rather than refused
            continue
        if not isinstance(f, dict):
            c.fail(fkey, f"got {_show(f)}", '"wall_time" or a table {name, regex, unit, better}'
                   + (" (or a list of them)" if not isinstance(value, list) else ""))
        c.known(f, fkey, ("name", "regex", "unit", "better", "source"))
        for req in ("name", "regex", "unit", "better"):
            if req not in f:
                c.fail(f"{fkey}.{req}", "missing",
                       {"name": 'a metric name such as "ns/day"',
                        "regex": "a regular expression with one capture group",
                        "unit": 'a unit such as "ns/day"',
                        "better": '"higher" or "lower"'}[req])
        fname = c.string(f["name"], f"{fkey}.name")
        if fname == "wall_time":
            c.fail(f"{fkey}.name", "wall_time is recorded for every cell", "another name")
        try:
            rx = re.compile(c.string(f["regex"], f"{fkey}.regex"), re.MULTILINE)
        except re.error as exc:
            c.fail(f"{fkey}.regex", f"invalid regular expression ({exc})",
                   "a Python regular expression")
        if rx.groups < 1:
            c.fail(f"{fkey}.regex", "has no capture group",
                   "one group capturing the number, e.g. 'Performance:\\s+([0-9.]+)'")
        better = f["better"]
        if better not in ("higher", "lower"):
            c.fail(f"{fkey}.better", f"got {_show(better)}", '"higher" or "lower"')
        source = c.string(f.get("source", "output"), f"{fkey}.source")
        if source not in FOM_SOURCES and (Path(source).is_absolute()
                                          or ".." in Path(source).parts):
            c.fail(f"{fkey}.source", f"got {_show(source)}",
                   '"output", "stdout", "stderr" or a file name inside the run directory')
        out.append(Fom(fname, rx, c.string(f["unit"], f"{fkey}.unit"), better, source))
    names = [f.name for f in out]
    if len(set(names)) != len(names):
        c.fail(key, "figure-of-merit names repeat", "unique names")
    return out


def _scheduler(c: _Ctx, t: dict[str, Any]) -> SchedulerSettings:
    from mpibench.schedulers import scheduler_class

    name = c.string(t.get("name", "local"), "scheduler.name")
    try:
        cls = scheduler_class(name)
    except UsageError as exc:
        c.fail("scheduler.name", str(exc))
    c.known(t, "scheduler", SCHEDULER_KEYS + tuple(cls.settings_keys))
    _single_lines(c, t, "scheduler")
    s = SchedulerSettings(name=name)
    for k in ("partition", "queue", "account"):
        if k in t:
            setattr(s, k, c.string(t[k], f"scheduler.{k}"))
    if "job_name_prefix" in t:
        s.job_name_prefix = c.string(t["job_name_prefix"], "scheduler.job_name_prefix")
    if "time_limit" in t:
        s.time_limit_s = _duration(c, t["time_limit"], "scheduler.time_limit")
    for k in ("nodes", "tasks_per_node"):
        if k in t:
            setattr(s, k, c.integer(t[k], f"scheduler.{k}"))
    if "max_jobs_in_flight" in t:
        s.max_jobs_in_flight = c.integer(t["max_jobs_in_flight"], "scheduler.max_jobs_in_flight")
    if "group_cells" in t:
        gc = t["group_cells"]
        s.group_cells = (1 if gc is False else 0 if gc is True
                         else c.integer(gc, "scheduler.group_cells", minimum=0))
    if "exclusive" in t:
        s.exclusive = c.boolean(t["exclusive"], "scheduler.exclusive")
    if "extra_directives" in t:
        s.extra_directives = c.str_list(t["extra_directives"], "scheduler.extra_directives")
        for i, line in enumerate(s.extra_directives):
            why = cls.check_directive(line)
            if why:
                c.fail(f"scheduler.extra_directives[{i}]", f"{line!r} {why}",
                       "a directive that leaves the job name, output and directory to mpibench")
    if "modules" in t:
        s.modules = c.str_list(t["modules"], "scheduler.modules")
    if "poll_interval" in t:
        s.poll_interval_s = c.number(t["poll_interval"], "scheduler.poll_interval")
    if "poll_max_interval" in t:
        s.poll_max_interval_s = c.number(t["poll_max_interval"], "scheduler.poll_max_interval")
    s.options = {k: t[k] for k in cls.settings_keys if k in t}
    try:
        cls.validate_options(s.options)  # backend keys (qos, ncpus, query_retries ...)
    except UsageError as exc:
        raise UsageError(f"{c.path}: {exc}") from None
    return s


def _known_names(c: _Ctx, key: str, v: Variant) -> None:
    """Launcher and transport names come from registries this file can be checked against
    without the machine: a typo is refused at load (dry runs included), not after the store
    was written. Whether the stack found here has the transport is checked before launches."""
    from mpibench.launchers import get_launcher
    from mpibench.stacks.kinds import all_transport_names

    if v.launcher:
        try:
            get_launcher(v.launcher)
        except UsageError as exc:
            c.fail(f"{key}.launcher", str(exc))
    if v.transport:
        names = all_transport_names()
        if v.transport not in names:
            c.fail(f"{key}.transport", f"unknown transport {v.transport!r}",
                   "one of " + ", ".join(names) + " (see `mpibench stacks`)")


def _single_lines(c: _Ctx, value: Any, key: str) -> None:
    """[scheduler] values become #SBATCH/#PBS directive lines: a newline (or another control
    character) in a partition or an extra directive would start a line of its own. Refused
    here, at load, not when the first job script is written after cells were stored."""
    if isinstance(value, str):
        bad = next((ch for ch in value if ord(ch) < 32 and ch != "\t" or ord(ch) == 127),
                   None)
        if bad is not None:
            c.fail(key, f"{_show(value)} contains a control character ({bad!r})",
                   "a single-line value")
    elif isinstance(value, dict):
        for k, v in value.items():
            _single_lines(c, v, f"{key}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _single_lines(c, v, f"{key}[{i}]")


def _duration(c: _Ctx, value: Any, key: str) -> float:
    """Seconds as a number, or "HH:MM:SS" / "MM:SS" / "D-HH:MM:SS" as schedulers write it."""
    if isinstance(value, int | float) and not isinstance(value, bool) and \
            0 < value < MAX_SECONDS:
        return float(value)
    if isinstance(value, str):
        m = re.match(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$", value.strip())
        if m:
            d, h, mi, s = (int(x) if x else 0 for x in m.groups())
            total = ((d * 24 + h) * 60 + mi) * 60 + s
            if 0 < total < MAX_SECONDS:
                return float(total)
    c.fail(key, f"got {_show(value)}", 'seconds (a number > 0) or "HH:MM:SS"')
    raise AssertionError  # unreachable
