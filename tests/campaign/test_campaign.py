"""Campaign files: validation (each error names file + key path + expected form), matrix
expansion, stable ids, order, template substitution. Pure: nothing is launched."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mpibench.campaign.plan import expand, points
from mpibench.campaign.spec import load, substitute
from mpibench.errors import UsageError
from support.common import TWO_STACK_CAMPAIGN

BASE = TWO_STACK_CAMPAIGN


def write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def spec_of(tmp_path: Path, text: str):
    return load(write(tmp_path, text))


BAD = [
    ("[campaign]\nrepeats = 0\n" + BASE.split("[campaign]\n", 1)[1].split("\n", 2)[2],
     "campaign.repeats", "an integer >= 1"),
    (BASE.replace('name = "t"', 'name = "t"\norder = "sorted"'), "campaign.order",
     '"interleaved" or "random"'),
    (BASE.replace('name = "t"', 'name = "t"\nformat = 2'), "campaign.format", "expected 1"),
    (BASE.replace('name = "t"', 'name = "t"\ntimeout = -1'), "campaign.timeout", "> 0"),
    (BASE + "[bogus]\nx = 1\n", "bogus", "unknown key"),
    (BASE.replace('stack = "mpich"', 'np = 2'), "variants.b.stack", "missing"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nnp = "two"'), "variants.b.np",
     "an integer >= 1"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nenv = "UCX_TLS=tcp"'),
     "variants.b.env", "a table"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\ncolour = "red"'),
     "variants.b.colour", "unknown key"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { np = 4 }'),
     "variants.b.sweep.np", "a non-empty list"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { env = [1] }'),
     "variants.b.sweep.env", "cannot be swept"),
    (BASE.replace('"PingPong"', '"PingPang"'), "benchmarks.pp.benchmarks",
     "unknown benchmark 'PingPang'"),
    (BASE.replace('"0,64"', '"5:2"'), "benchmarks.pp.sizes", "MIN (5) is larger"),
    (BASE + 'options = { max_tme = 1 }\n', "benchmarks.pp.options.max_tme", "unknown key"),
    (BASE + 'options = { iterations = 0.5 }\n', "benchmarks.pp.options.iterations",
     "an integer >= 1"),
    (BASE + 'variants = ["c"]\n', "benchmarks.pp.variants", "unknown variant 'c'"),
    (BASE + 'command = "true"\n', "benchmarks.pp", "exactly one of"),
    (BASE + '[benchmarks.app]\ncommand = "run {stepz}"\nparams = { steps = [1] }\n',
     "benchmarks.app.command", "unknown placeholder {stepz}"),
    (BASE + '[benchmarks.app]\ncommand = "run \'unbalanced"\n', "benchmarks.app.command",
     "balanced quotes"),
    (BASE + '[benchmarks.app]\ncommand = "run {a} {b}"\nparams = { a = [1, 2], b = [1] }\n'
     'zip = { ab = ["a", "b"] }\n', "benchmarks.app.zip.ab", "different lengths"),
    (BASE + '[benchmarks.app]\ncommand = "run {a}"\nparams = { a = [1] }\n'
     'zip = { ab = ["a", "c"] }\n', "benchmarks.app.zip.ab", "unknown parameter 'c'"),
    (BASE + '[benchmarks.app]\ncommand = "run {a}"\nparams = { a = [1] }\n'
     'exclude = [{ z = 1 }]\n', "benchmarks.app.exclude[0].z", "unknown key"),
    (BASE + '[benchmarks.app]\ncommand = "run"\nfom = { name = "x", regex = "y", '
     'unit = "u", better = "higher" }\n', "benchmarks.app.fom.regex", "no capture group"),
    (BASE + '[benchmarks.app]\ncommand = "run"\nfom = { name = "x", regex = "(y", '
     'unit = "u", better = "higher" }\n', "benchmarks.app.fom.regex", "invalid regular"),
    (BASE + '[benchmarks.app]\ncommand = "run"\nfom = { name = "x", regex = "(y)", '
     'unit = "u", better = "up" }\n', "benchmarks.app.fom.better", '"higher" or "lower"'),
    (BASE + '[benchmarks.app]\ncommand = "run"\nfom = { name = "x", regex = "(y)", '
     'better = "up" }\n', "benchmarks.app.fom.unit", "missing"),
    (BASE + '[benchmarks.app]\ncommand = "run"\nfom = { name = "x", regex = "(y)", '
     'unit = "u", better = "lower", source = "../../etc/passwd" }\n',
     "benchmarks.app.fom.source", "a file name inside the run directory"),
    (BASE + '[benchmarks.app]\ncommand = "run"\ninputs = ["nope.tpr"]\n',
     "benchmarks.app.inputs[0]", "does not exist"),
    (BASE + '[benchmarks.app]\ncommand = "run"\nparams = { np = [1] }\n',
     "benchmarks.app.params.np", "bad parameter name"),
    (BASE + '[scheduler]\nname = "lsf"\n', "scheduler.name", "unknown scheduler 'lsf'"),
    (BASE + '[scheduler]\nname = "local"\ntime_limit = "ten"\n', "scheduler.time_limit",
     "HH:MM:SS"),
    (BASE + '[scheduler]\nname = "local"\nmax_jobs_in_flight = 0\n',
     "scheduler.max_jobs_in_flight", "an integer >= 1"),
    # the loader is what refuses another backend's key (Scheduler.validate_options only
    # checks the values of the keys a backend accepts)
    (BASE + '[scheduler]\nname = "local"\nqos = "x"\n', "scheduler.qos", "unknown key"),
    # a swept value is reported as its sweep entry, not as the variant key it sets
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { np = [2, "x"] }'),
     "variants.b.sweep.np[1]", "an integer >= 1"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { "env.X" = [{ a = 1 }] }'),
     "variants.b.sweep.env.X[0]", "a string or number"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nzip = { p = ["np", "ppn"] }'),
     "variants.b.zip", "without a sweep"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { np = [2, 4], ppn = [1] }\n'
                  'zip = { p = ["np", "ppn"] }'),
     "variants.b.zip.p", "equal-length lists"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { np = [2, 4] }\n'
                  'zip = { p = ["np", "bind"] }'),
     "variants.b.zip.p", "unknown sweep key 'bind'"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { np = [2, 4] }\n'
                  'exclude = [{ np = 3 }]'),
     "variants.b.exclude[0].np", "3 matches no value of variants.b.sweep.np; expected one "
                                 "of 2, 4"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { np = [2, 4] }\n'
                  'exclude = [{ np = 2 }, { np = 4 }]'),
     "variants.b.exclude", "excludes every combination"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { np = [2, 4] }\n'
                  'exclude = [{ ppn = 2 }]'),
     "variants.b.exclude[0].ppn", "unknown key"),
    (BASE.replace("[variants.a]", '[defaults]\nsweep = { np = [2] }\n[variants.a]'),
     "defaults.sweep", "unknown key"),
    # exclusion values must exist in the group, so a typo cannot silently exclude nothing
    (BASE + '[benchmarks.app]\ncommand = "run {a}"\nparams = { a = [1, 2] }\n'
     'exclude = [{ a = 3 }]\n', "benchmarks.app.exclude[0].a",
     "3 matches no value of benchmarks.app.params.a; expected one of 1, 2"),
    (BASE + '[benchmarks.app]\ncommand = "run {a}"\nparams = { a = [1, 2] }\n'
     'exclude = [{ a = "1" }]\n', "benchmarks.app.exclude[0].a", "expected one of 1, 2"),
    (BASE + 'exclude = [{ np = 4 }]\n', "benchmarks.pp.exclude[0].np",
     "4 matches no np of this group's variants; expected one of 2"),
    (BASE + 'exclude = [{ variant = "c" }]\n', "benchmarks.pp.exclude[0].variant",
     "'c' matches no variant of this group"),
    (BASE + 'variants = ["a"]\nexclude = [{ stack = "mpich" }]\n',
     "benchmarks.pp.exclude[0].stack", "expected one of 'openmpi'"),
    (BASE.replace('name = "t"', 'name = ""'), "campaign.name", "a non-empty string"),
    (BASE.replace('name = "t"', 'name = "t"\nverify_transport = "yes"'),
     "campaign.verify_transport", "true or false"),
    (BASE.replace('name = "t"', 'name = "t"\nseed = -1'), "campaign.seed", "an integer >= 0"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nlauncher_args = "--x"'),
     "variants.b.launcher_args", "a list of strings"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nhosts = "n1,n2"'),
     "variants.b.hosts", "a list of strings"),
    (BASE.replace("[variants.b]", '[variants."b c"]'), "variants.b c", "no spaces"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { np = [2, 2] }'),
     "variants.b.sweep.np[1]", "distinct sweep values"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nnp = 8\nnodes = 2\nppn = 2'),
     "variants.b.np", "np <= nodes * ppn"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { np = [2, 4] }\n'
                  'zip = { p = ["np"] }'), "variants.b.zip.p", "at least two sweep key"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { np = [2, 4] }\n'
                  'exclude = { np = 2 }'), "variants.b.exclude", "a list of tables"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nsweep = { np = [2, 4] }\n'
                  'exclude = [{}]'), "variants.b.exclude[0]", "at least one sweep key"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\nenv = { X = [1] }'),
     "variants.b.env.X", "a string or number"),
    (BASE.split("[variants.a]")[0] + "[variants]\n[benchmarks.pp]\nbenchmarks = ['Barrier']\n",
     "variants", "at least one [variants.NAME] table"),
    (BASE.split("[benchmarks.pp]")[0] + "[benchmarks]\n", "benchmarks",
     "at least one [benchmarks.NAME] table"),
    (BASE.replace("[benchmarks.pp]", '[benchmarks."p p"]'), "benchmarks.p p",
     "letters, digits"),
    (BASE + 'timeout = "1h"\n', "benchmarks.pp.timeout", "a number > 0"),
    (BASE + 'repeats = 0\n', "benchmarks.pp.repeats", "an integer >= 1"),
    (BASE + 'options = { no_validate = 1 }\n', "benchmarks.pp.options.no_validate",
     "true or false"),
    (BASE + 'exclude = { np = 2 }\n', "benchmarks.pp.exclude", "a list of tables"),
    (BASE + 'exclude = [{}]\n', "benchmarks.pp.exclude[0]", "at least one key"),
    (BASE + '[benchmarks.app]\ncommand = "run {a}"\nparams = { a = [[1, 2]] }\n',
     "benchmarks.app.params.a[0]", "a string or number"),
    (BASE + '[benchmarks.app]\ncommand = "run {a}"\nparams = { a = [] }\n',
     "benchmarks.app.params.a", "a non-empty list"),
    (BASE + '[benchmarks.app]\ncommand = "run {a} {b} {c}"\n'
     'params = { a = [1, 2], b = [1, 2], c = [1, 2] }\n'
     'zip = { ab = ["a", "b"], bc = ["b", "c"] }\n', "benchmarks.app.zip.bc",
     "'b' is already in another zip"),
    (BASE + '[benchmarks.app]\ncommand = "run"\nsetup = 3\n', "benchmarks.app.setup",
     "a command line or a list of them"),
    (BASE + '[benchmarks.app]\ncommand = "run"\nsetup = ["ok", "un\'balanced"]\n',
     "benchmarks.app.setup[1]", "balanced quotes"),
    (BASE + '[benchmarks.app]\ncommand = "run"\nenv = { A = { b = 1 } }\n',
     "benchmarks.app.env.A", "a string or number"),
    (BASE + '[benchmarks.app]\ncommand = "run"\nfom = [3]\n',
     "benchmarks.app.fom[0]", "a table {name, regex, unit, better}"),
    (BASE + '[benchmarks.app]\ncommand = "run"\nfom = 3\n',
     "benchmarks.app.fom", "a table {name, regex, unit, better} (or a list of them)"),
    (BASE + '[scheduler]\nname = "slurm"\nextra_directives = ["--job-name=mine"]\n',
     "scheduler.extra_directives[0]", "leaves the job name"),
    (BASE + '[scheduler]\nname = "slurm"\nextra_directives = ["#SBATCH -J mine"]\n',
     "scheduler.extra_directives[0]", "leaves the job name"),
    (BASE + '[scheduler]\nname = "pbs"\nextra_directives = ["-N mine"]\n',
     "scheduler.extra_directives[0]", "leaves the job name"),
    (BASE.replace('stack = "mpich"', 'stack = "mpich"\ncpus_per_task = 0'),
     "variants.b.cpus_per_task", "an integer >= 1"),
    (BASE + '[benchmarks.app]\ncommand = "run"\nfom = { name = "wall_time", regex = "(y)", '
     'unit = "s", better = "lower" }\n', "benchmarks.app.fom.name", "another name"),
    (BASE + '[benchmarks.app]\ncommand = "run"\nfom = [{ name = "x", regex = "(y)", '
     'unit = "s", better = "lower" }, { name = "x", regex = "(z)", unit = "s", '
     'better = "lower" }]\n', "benchmarks.app.fom", "unique names"),
    (BASE + '[scheduler]\nname = "slurm"\nnodes = 0\n', "scheduler.nodes",
     "an integer >= 1"),
    (BASE + '[scheduler]\nname = "slurm"\nmodules = "gcc"\n', "scheduler.modules",
     "a list of strings"),
    ("[campaign]\nname = 't'\n", "variants", "missing"),
    (BASE.split("[benchmarks.pp]")[0], "benchmarks", "missing"),
    ("[campaign\nname = 1", "invalid TOML", ""),
]


@pytest.mark.parametrize("text, key, expected", BAD)
def test_each_validation_error_names_file_key_and_form(tmp_path, text, key, expected):
    path = write(tmp_path, text)
    with pytest.raises(UsageError) as err:
        load(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: "), msg
    assert key in msg and expected in msg, msg
    assert "\n" not in msg


def test_missing_file_is_usage_error(tmp_path):
    with pytest.raises(UsageError, match="not found"):
        load(tmp_path / "nope.toml")


def test_cli_bad_file_exits_2_before_anything_runs(tmp_path):
    path = write(tmp_path, BASE.replace('"0,64"', '"5:2"'))
    res = subprocess.run([sys.executable, "-m", "mpibench", "campaign", "run", str(path)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "benchmarks.pp.sizes" in res.stderr and str(path) in res.stderr
    assert not (tmp_path / "mpibench.db").exists() and not (tmp_path / "runs").exists()


@pytest.mark.system
def test_unknown_stack_is_checked_before_any_launch(tmp_path, found_stacks):
    from mpibench.campaign.runner import CampaignRunner
    from mpibench.store import Store

    spec = spec_of(tmp_path, BASE.replace('stack = "mpich"', 'stack = "nompi"'))
    with Store(tmp_path / "x.db") as store:
        with pytest.raises(UsageError, match=r"variants\.b\.stack: unknown stack 'nompi'"):
            CampaignRunner(spec, store, found_stacks).run()
        assert store.runs() == []
    spec = spec_of(tmp_path, BASE.replace('stack = "mpich"', 'stack = "mpich"\n'
                                          'transport = "ofi"'))
    with Store(tmp_path / "y.db") as store:
        with pytest.raises(UsageError, match=r"variants\.b\.transport: .*'ofi'"):
            CampaignRunner(spec, store, found_stacks).run()
    for extra, pattern in [
            ('mca = { btl = "self" }', r"variants\.b\.mca: MCA parameters are Open MPI "
                                      r"settings .*; expected env instead")]:
        spec = spec_of(tmp_path, BASE.replace('stack = "mpich"', f'stack = "mpich"\n{extra}'))
        with pytest.raises(UsageError, match=rf"^{re.escape(str(spec.path))}: {pattern}"):
            CampaignRunner(spec, None, found_stacks).check()
    # a launcher name is checked against the registry when the file is loaded
    with pytest.raises(UsageError, match=r"variants\.b\.launcher: unknown launcher 'qrun'"):
        spec_of(tmp_path, BASE.replace('stack = "mpich"', 'stack = "mpich"\nlauncher = "qrun"'))


def test_random_order_is_reproducible_from_its_seed(tmp_path):
    text = BASE.replace('name = "t"', 'name = "t"\norder = "random"\nrepeats = 20') \
        .replace("repeats = 3\n", "")
    spec = spec_of(tmp_path, text)
    one = [c.id for c in expand(spec, seed=7)]
    assert one == [c.id for c in expand(spec, seed=7)]
    assert one != [c.id for c in expand(spec, seed=8)]
    assert sorted(one) == sorted(c.id for c in expand(spec_of(tmp_path, BASE.replace(
        "repeats = 3", "repeats = 20"))))  # same cells, other order


def test_cell_ids_are_stable_and_survive_adding_variants(tmp_path):
    ids = {c.id for c in expand(spec_of(tmp_path, BASE))}
    assert len(ids) == 6
    assert ids == {c.id for c in expand(spec_of(tmp_path, BASE))}
    more = BASE.replace("[benchmarks.pp]", '[variants.c]\nstack = "openmpi"\n'
                        'transport = "tcp"\n[benchmarks.pp]')
    more_ids = {c.id for c in expand(spec_of(tmp_path, more))}
    assert ids < more_ids and len(more_ids) == 9
    changed = {c.id for c in expand(spec_of(tmp_path, BASE.replace('"0,64"', '"0,128"')))}
    assert not ids & changed  # a different measurement is a different cell


APP = BASE + """
[benchmarks.md]
command = "gmx_mpi mdrun -deffnm run -nsteps {steps} -title '{title} x'"
params = { steps = [100, 200, 300], title = ["a b", "c", "d"], ntomp = [1, 2] }
zip = { st = ["steps", "title"] }
exclude = [{ steps = 300, variant = "b" }, { ntomp = 2, stack = "mpich" }]
"""


def test_sweeps_zips_and_exclusions(tmp_path):
    spec = spec_of(tmp_path, APP)
    group = spec.groups[1]
    pts = points(group)
    assert len(pts) == 6
    assert {(p["steps"], p["title"]) for p in pts} == {(100, "a b"), (200, "c"), (300, "d")}
    cells = [c for c in expand(spec) if c.group.name == "md"]
    per_rep = [c for c in cells if c.repeat == 0]
    # a: 6 points; b (mpich): ntomp=2 excluded (3 left), steps=300 excluded (2 left)
    assert sum(c.variant.name == "a" for c in per_rep) == 6
    assert sorted((c.params["steps"], c.params["ntomp"]) for c in per_rep
                  if c.variant.name == "b") == [(100, 1), (200, 1)]
    assert len(cells) == 3 * 8


def test_variant_sweep_expands_named_variants(tmp_path):
    spec = spec_of(tmp_path, BASE.replace(
        'stack = "mpich"', 'stack = "mpich"\nsweep = { np = [2, 4], "env.UCX_TLS" = '
        '["sm", "tcp"] }'))
    names = [v.name for v in spec.variants]
    assert names == ["a", "b[np=2,env.UCX_TLS=sm]", "b[np=2,env.UCX_TLS=tcp]",
                     "b[np=4,env.UCX_TLS=sm]", "b[np=4,env.UCX_TLS=tcp]"]
    v = spec.variants[4]
    assert v.np == 4 and v.env == {"UCX_TLS": "tcp"} and v.stack == "mpich"


def test_variant_sweep_zips_and_exclusions(tmp_path):
    spec = spec_of(tmp_path, BASE.replace(
        'stack = "mpich"', 'stack = "mpich"\nsweep = { np = [2, 4, 8], ppn = [1, 2, 4], '
        'bind = ["core", "none"] }\nzip = { placement = ["np", "ppn"] }\n'
        'exclude = [{ np = 8, bind = "none" }]'))
    got = [(v.np, v.ppn, v.bind) for v in spec.variants if v.stack == "mpich"]
    # np and ppn advance together (3 points, not 9), crossed with bind, minus one exclusion
    assert got == [(2, 1, "core"), (2, 1, "none"), (4, 2, "core"), (4, 2, "none"),
                   (8, 4, "core")]
    assert spec.variants[1].name == "b[np=2,ppn=1,bind=core]"
    # the base name still selects every variant of the sweep
    assert {spec.variant_base[v.name] for v in spec.variants} == {"a", "b"}


def test_group_exclusion_by_variant_setting_drops_matching_cells(tmp_path):
    spec = spec_of(tmp_path, BASE.replace('stack = "mpich"', 'stack = "mpich"\n'
                                          'sweep = { np = [2, 4] }')
                   + 'exclude = [{ stack = "mpich", np = 4 }, { variant = "a" }]\n')
    assert {c.variant.name for c in expand(spec)} == {"b[np=2]"}


def test_template_is_split_before_substitution(tmp_path):
    spec = spec_of(tmp_path, APP)
    argv = spec.groups[1].command
    assert argv == ["gmx_mpi", "mdrun", "-deffnm", "run", "-nsteps", "{steps}", "-title",
                    "{title} x"]
    hostile = "$(rm -rf /); `x` 'q' \"z\" {np}"
    out = substitute(argv, {"steps": hostile, "title": "a b"})
    assert out[5] == hostile  # one argv element, untouched: never reaches a shell
    assert out[7] == "a b x"
    assert substitute(["{{literal}}", "{a}{a}"], {"a": 1}) == ["{literal}", "11"]


def test_planning_is_fast_enough_for_big_matrices(tmp_path):
    # correctness of a large expansion (timing is measured in bench/, never asserted here)
    p = ",".join(map(str, range(50)))
    q = ",".join(map(str, range(20)))
    text = BASE + f'[benchmarks.grid]\ncommand = "x {{p}} {{q}}"\nparams = {{ p = [{p}], q = [{q}] }}\n'
    cells = expand(spec_of(tmp_path, text))
    assert len(cells) == 3 * (2 + 2 * 1000)
    assert len({c.id for c in cells}) == len(cells)


@pytest.mark.system
def test_cli_unknown_stack_exits_2_without_touching_the_store(tmp_path):
    path = write(tmp_path, BASE.replace('stack = "mpich"', 'stack = "nompi"'))
    res = subprocess.run([sys.executable, "-m", "mpibench", "campaign", "run", str(path)],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert f"{path.resolve()}: variants.b.stack: unknown stack 'nompi'" in res.stderr
    assert not (tmp_path / "mpibench.db").exists() and not (tmp_path / "runs").exists()


def test_fingerprint_keeps_every_transport_family_and_nothing_else():
    from mpibench.fingerprint import collect

    env = {"UCX_TLS": "sm", "FI_PROVIDER": "tcp", "OMPI_MCA_btl": "self,tcp",
           "MV2_USE_SHM": "1", "MPICH_ASYNC_PROGRESS": "1", "I_MPI_FABRICS": "shm",
           "MPIR_CVAR_CH4_NETMOD": "ucx", "HOME": "/root", "PATH": "/bin", "TMPDIR": "/x",
           "OMPI_ALLOW_RUN_AS_ROOT": "1"}
    fp = collect(stack={"name": "s", "version": "1"}, launcher_argv=["mpirun", "<program>"],
                 env=env, hosts=["b", "a"], ranks_per_host={"b": 1, "a": 1})
    assert list(fp["transport_env"]) == sorted(
        ["UCX_TLS", "FI_PROVIDER", "OMPI_MCA_btl", "MV2_USE_SHM", "MPICH_ASYNC_PROGRESS",
         "I_MPI_FABRICS", "MPIR_CVAR_CH4_NETMOD"])
    assert fp["hosts"] == ["a", "b"]
    one = collect(stack={}, launcher_argv=[], env={"UCX_TLS": "sm"})
    two = collect(stack={}, launcher_argv=[], env={"UCX_TLS": "tcp"})
    from mpibench.store import fingerprint_id

    assert fingerprint_id(one) != fingerprint_id(two)
    assert fingerprint_id(one) == fingerprint_id(
        collect(stack={}, launcher_argv=[], env={"UCX_TLS": "sm", "HOME": "/elsewhere"}))


def test_app_placement_from_what_the_launch_knows():
    import socket

    from mpibench.campaign.cells import app_placement
    from mpibench.execute import Variant

    host = socket.gethostname()
    assert app_placement(Variant("v", "s", np=3), False, None) == ([host], {host: 3})
    assert app_placement(Variant("v", "s", np=4, hosts=["n2", "n1"], ppn=2), False, None) \
        == (["n1", "n2"], {"n1": 2, "n2": 2})
    assert app_placement(Variant("v", "s", np=4, hostfile="h"), False, None) == ([], {})
    assert app_placement(Variant("v", "s", np=4), True, "node1") == (["node1"], {"node1": 4})
    assert app_placement(Variant("v", "s", np=4, nodes=2), True, "node[1-2]") == \
        (["node[1-2]"], {})


def test_random_seed_is_drawn_once_recorded_and_reused(tmp_path):
    import json

    from mpibench.campaign import status as st
    from mpibench.campaign.runner import CampaignRunner
    from mpibench.store import Store

    path = write(tmp_path, BASE.replace('name = "t"', 'name = "t"\norder = "random"')
                 .replace("repeats = 3", "repeats = 10"))
    spec = load(path)
    with Store(tmp_path / "s.db") as store:
        _, cells, seed = CampaignRunner(spec, store, []).sync()
        assert seed is not None
        recorded = json.loads(store.db.execute("SELECT spec_json FROM campaigns")
                              .fetchone()[0])["seed"]
        assert recorded == seed
        # the order run is the order this seed gives, and a later sync (a resume) keeps it
        assert [c.id for c in cells] == [c.id for c in expand(spec, seed=seed)]
        _, again, seed2 = CampaignRunner(load(path), store, []).sync()
        assert seed2 == seed and [c.id for c in again] == [c.id for c in cells]
        seqs = dict(store.db.execute("SELECT id, seq FROM runs").fetchall())
        assert [seqs[c.id] for c in cells] == list(range(20))
        assert st.status(store, spec)["seed"] == seed
    # interleaving is gone: some repeat k+1 of a variant runs before its repeat k of another
    order = [(c.variant.name, c.repeat) for c in cells]
    assert order != sorted(order, key=lambda x: (x[1], x[0] != "a"))
    res = subprocess.run([sys.executable, "-m", "mpibench", "campaign", "run", str(path),
                          "--dry-run", "--db", str(tmp_path / "s.db")],
                         capture_output=True, text=True, timeout=60)
    assert f"order random, seed {seed} (recorded in the store)" in res.stdout
    lines = [ln.split()[1] for ln in res.stdout.splitlines()[1:] if ln.strip()]
    assert lines == [c.id for c in cells]


@pytest.mark.system
def test_a_second_harness_on_the_same_campaign_is_refused(tmp_path, found_stacks):
    from mpibench.campaign.runner import CampaignRunner

    path = write(tmp_path, BASE.split("[benchmarks.pp]")[0]
                 + '[benchmarks.app]\ncommand = "true"\n')
    first = CampaignRunner(load(path), None, found_stacks)
    first.lock()
    try:
        res = subprocess.run([sys.executable, "-m", "mpibench", "campaign", "run", str(path),
                              "--no-progress"], capture_output=True, text=True, timeout=120)
    finally:
        first.unlock()
    assert res.returncode == 2, res.stderr
    assert f"campaign 't' is being run by pid {os.getpid()}" in res.stderr
    from mpibench.store import Store

    with Store(tmp_path / "mpibench.db") as store:  # nothing was started
        assert store.runs() == []


def test_every_example_campaign_is_valid(tmp_path):
    examples = sorted((Path(__file__).parents[2] / "examples").glob("*.toml"))
    assert len(examples) >= 3
    for path in examples:
        cells = expand(load(path))
        assert cells and len({c.id for c in cells}) == len(cells), path
    # the comparisons the issue names
    imb = load(examples[0].parent / "stacks-imb.toml")
    assert {v.stack for v in imb.variants} == {"openmpi", "mpich"}
    assert {b for g in imb.groups for b in g.benchmarks} >= {"PingPong", "Allreduce"}
    tr = load(examples[0].parent / "openmpi-transports.toml")
    assert {v.stack for v in tr.variants} == {"openmpi"}
    assert {v.transport for v in tr.variants} == {"shm", "tcp", "ucx", "ofi"}
    gmx = load(examples[0].parent / "gromacs-grid.toml")
    (g,) = gmx.groups
    assert g.kind == "app" and len(points(g)) > 1
    assert (g.foms[0].name, g.foms[0].unit, g.foms[0].better) == ("ns/day", "ns/day", "higher")


@pytest.mark.system
def test_hostfile_is_relative_to_the_campaign_file_and_must_exist(tmp_path, found_stacks):
    from mpibench.campaign.runner import CampaignRunner

    sub = tmp_path / "c"
    sub.mkdir()
    text = BASE.replace('transport = "shm"', 'transport = "shm"\nhostfile = "hosts.txt"')
    spec = load(write(sub, text))
    assert spec.variants[0].hostfile == str(sub / "hosts.txt")  # not the run dir's
    with pytest.raises(UsageError, match=r"c\.toml: variants\.a\.hostfile: .*hosts\.txt does "
                                         r"not exist; expected a host file"):
        CampaignRunner(spec, None, found_stacks).check()


def test_variant_env_and_mca_merge_over_defaults(tmp_path):
    spec = spec_of(tmp_path, BASE.replace("[variants.a]", """[defaults]
env = { UCX_LOG_LEVEL = "warn", A = "1" }
mca = { btl_vader_single_copy_mechanism = "none" }
[variants.a]
env = { A = "2", B = "3" }
mca = { pml = "ob1" }"""))
    a = next(v for v in spec.variants if v.name == "a")
    b = next(v for v in spec.variants if v.name == "b")
    assert a.env == {"UCX_LOG_LEVEL": "warn", "A": "2", "B": "3"}
    assert a.mca == {"btl_vader_single_copy_mechanism": "none", "pml": "ob1"}
    assert b.env == {"UCX_LOG_LEVEL": "warn", "A": "1"}


def test_wall_time_may_be_named_among_the_figures_of_merit(tmp_path):
    spec = spec_of(tmp_path, BASE + """[benchmarks.app]
command = "run"
fom = ["wall_time", { name = "ns/day", regex = 'P: ([0-9.]+)', unit = "ns/day", better = "higher" }]
""")
    g = next(g for g in spec.groups if g.name == "app")
    assert [f.name for f in g.foms] == ["ns/day"]      # wall_time is recorded for every cell


def test_cpus_per_task_reaches_every_launcher_and_scheduler(tmp_path):
    from mpibench.launchers import LaunchSpec, get_launcher
    from mpibench.schedulers import JobRequest, SchedulerSettings, scheduler_class

    spec = spec_of(tmp_path, BASE.replace('stack = "mpich"',
                                          'stack = "mpich"\ncpus_per_task = 2\nppn = 1'))
    b = next(v for v in spec.variants if v.name == "b")
    assert b.cpus_per_task == 2 and b.to_dict()["cpus_per_task"] == 2
    a = next(v for v in spec.variants if v.name == "a")
    assert "cpus_per_task" not in a.to_dict()     # unset: cell ids stay as they were
    ls = LaunchSpec(np=2, program=["x"], ppn=1, cpus_per_task=2)
    assert get_launcher("mpirun-openmpi").argv("mpirun", ls)[3:5] == ["--map-by",
                                                                      "ppr:1:node:PE=2"]
    assert "core:2" in get_launcher("mpiexec-hydra").argv("mpiexec", ls)
    srun = get_launcher("srun").argv("srun", ls)
    assert srun[srun.index("--cpus-per-task") + 1] == "2"
    req = JobRequest(name="mpibench-c-1", steps=[], run_dir=tmp_path, nodes=2,
                     tasks_per_node=1, settings=SchedulerSettings(name="slurm"),
                     cpus_per_task=2)
    assert "#SBATCH --cpus-per-task=2" in scheduler_class("slurm")().directives(req)
    req.settings = SchedulerSettings(name="pbs")
    assert "-l select=2:ncpus=2:mpiprocs=1:ompthreads=2" in " ".join(
        scheduler_class("pbs")().directives(req))


def test_openmpi_map_by_is_kept_beside_ppn():
    from mpibench.launchers import LaunchSpec
    from mpibench.launchers.openmpi import map_args

    # ppn places the ranks; a plain map_by orders them instead of vanishing
    assert map_args(LaunchSpec(np=4, program=[], ppn=2, map_by="node")) == [
        "--map-by", "ppr:2:node", "--rank-by", "node"]
    # a full mapping is the user's and wins over ppn
    assert map_args(LaunchSpec(np=4, program=[], ppn=2, map_by="ppr:1:socket")) == [
        "--map-by", "ppr:1:socket"]
    assert map_args(LaunchSpec(np=4, program=[], map_by="socket")) == ["--map-by", "socket"]
    assert map_args(LaunchSpec(np=4, program=[])) == []


TWO_GROUPS = """
[campaign]
name = "twins"
repeats = 1
[variants.a]
stack = "openmpi"
[benchmarks.first]
command = "echo {x}"
params = { x = [1, 2] }
[benchmarks.second]
command = "echo {x}"
params = { x = [1, 2] }
"""


def test_cell_ids_include_group_name_timeout_and_foms(tmp_path):
    cells = expand(spec_of(tmp_path, TWO_GROUPS))
    assert len({c.id for c in cells}) == len(cells) == 4
    timed = expand(spec_of(tmp_path, TWO_GROUPS.replace(
        '[benchmarks.second]', '[benchmarks.second]\ntimeout = 5')))
    assert {c.id for c in timed if c.group.name == "second"}.isdisjoint(
        c.id for c in cells)
    fom = expand(spec_of(tmp_path, TWO_GROUPS + 'fom = { name = "v", regex = "([0-9]+)", '
                                   'unit = "u", better = "higher" }\n'))
    assert {c.id for c in fom if c.group.name == "second"}.isdisjoint(c.id for c in cells)
    # the first group's ids are untouched by edits to the second
    assert {c.id for c in fom if c.group.name == "first"} == \
        {c.id for c in cells if c.group.name == "first"}


@pytest.mark.parametrize("text, key", [
    ('params = { x = [1, 1] }', "benchmarks.app.params.x[1]"),
    ('params = { x = ["a", "b", "a"] }', "benchmarks.app.params.x[2]"),
    ('params = { x = [1, 1], y = [3, 3] }\nzip = { p = ["x", "y"] }', "zip p"),
])
def test_duplicate_parameter_values_are_errors(tmp_path, text, key):
    body = BASE + f'[benchmarks.app]\ncommand = "echo {{x}}"\n{text}\n'
    with pytest.raises(UsageError, match=re.escape(key)):
        spec_of(tmp_path, body)


def test_zip_may_repeat_a_value_in_distinct_tuples(tmp_path):
    body = BASE + ('[benchmarks.app]\ncommand = "echo {x} {y}"\n'
                   'params = { x = [1, 1], y = [2, 3] }\nzip = { p = ["x", "y"] }\n')
    cells = expand(spec_of(tmp_path, body))
    assert len({c.id for c in cells}) == len(cells)


def test_group_variant_list_without_duplicates(tmp_path):
    body = BASE.replace('sizes = "0,64"', 'sizes = "0,64"\nvariants = ["a", "a"]')
    with pytest.raises(UsageError, match=r"variants\[1\].*listed twice"):
        spec_of(tmp_path, body)


def test_runs_stored_under_earlier_ids_are_renamed_not_rerun(tmp_path):
    """A campaign run by an mpibench whose ids left out the group name keeps its results:
    the next sync renames the runs instead of adding pending cells beside them."""
    from mpibench.campaign.plan import legacy_ids
    from mpibench.campaign.runner import CampaignRunner
    from mpibench.store import Store

    spec = spec_of(tmp_path, TWO_GROUPS)
    old = expand(spec, seed=0, legacy=True)
    assert len({c.id for c in old}) == 2  # the collision: two groups, one id per point
    with Store(tmp_path / "s.db") as store:
        cid = store.add_campaign(spec.name, spec.to_dict(), file=str(spec.path))
        seen = set()
        for c in old:
            if c.id in seen:
                continue
            seen.add(c.id)
            store.create_run(c.id, cid, c.variant.name, grp=c.group.name, params=c.params)
            store.add_results(c.id, [{"benchmark": "app", "metric": "v", "median": 1.0}])
            store.set_run(c.id, "done")
        runner = CampaignRunner(spec, store, [])
        _, cells, _ = runner.sync()
        ids = {r["id"]: r["status"] for r in store.runs(cid)}
        assert set(ids) == {c.id for c in cells}
        firsts = {new for new in legacy_ids(spec)}
        assert {i for i, s in ids.items() if s == "done"} == firsts
        assert {r["run_id"] for r in store.results()} == firsts


@pytest.mark.parametrize("where", ["campaign", "group", "time_limit", "poll_interval",
                                   "poll_max_interval"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0", "1e30"])
def test_durations_must_be_finite_and_positive(tmp_path, where, value):
    body = {
        "campaign": BASE.replace('name = "t"', f'name = "t"\ntimeout = {value}'),
        "group": BASE.replace('sizes = "0,64"', f'sizes = "0,64"\ntimeout = {value}'),
    }.get(where) or BASE + f'[scheduler]\nname = "slurm"\n{where} = {value}\n'
    with pytest.raises(UsageError, match=r"(a number > 0|seconds)"):
        spec_of(tmp_path, body)


def test_cell_count_is_capped_with_an_override(tmp_path):
    huge = BASE.replace("repeats = 3", "repeats = 100000000")
    with pytest.raises(UsageError, match=r"200,000,000 cells.*max_cells"):
        spec_of(tmp_path, huge)
    few = BASE.replace("repeats = 3", "repeats = 3\nmax_cells = 5")
    with pytest.raises(UsageError, match="more than the cap of 5"):
        spec_of(tmp_path, few)
    spec = spec_of(tmp_path, BASE.replace("repeats = 3", "repeats = 3\nmax_cells = 6"))
    assert len(expand(spec)) == 6


def test_cli_dry_run_of_a_huge_campaign_is_refused_quickly(tmp_path, capsys):
    from mpibench.cli import main as cli_main

    path = write(tmp_path, BASE.replace("repeats = 3", "repeats = 100000000"))
    assert cli_main(["campaign", "run", str(path), "--dry-run"]) == 2
    assert "max_cells" in capsys.readouterr().err


def test_campaign_name_length_and_control_characters(tmp_path):
    with pytest.raises(UsageError, match="at most 200 characters"):
        spec_of(tmp_path, BASE.replace('name = "t"', f'name = "{"x" * 5000}"'))
    with pytest.raises(UsageError, match="printable name"):
        spec_of(tmp_path, BASE.replace('name = "t"', 'name = "a\\u001b[31mb"'))


@pytest.mark.parametrize("text, key", [
    ('launcher = "template"\nlauncher_args = ["mympirun", "-n", "{nprocs}", "{program}"]',
     "variants.b.launcher_args"),
    ('launcher = "template"\nlauncher_args = ["mympirun \'-n"]', "variants.b.launcher_args"),
    ('launcher = "template"\nlauncher_args = []', "variants.b.launcher_args"),
])
def test_bad_template_launcher_is_refused_at_load(tmp_path, text, key):
    with pytest.raises(UsageError, match=re.escape(key)):
        spec_of(tmp_path, BASE.replace('stack = "mpich"', f'stack = "mpich"\n{text}'))


@pytest.mark.parametrize("line, key", [
    ('partition = "debug\\n#SBATCH --uid=0"', "scheduler.partition"),
    ('extra_directives = ["--exclusive", "--x\\r"]', "scheduler.extra_directives[1]"),
    ('account = "a\\u0000b"', "account"),
    ('modules = ["gcc\\nrm -rf x"]', "scheduler.modules[0]"),
])
def test_scheduler_values_are_single_lines_at_load(tmp_path, line, key):
    from mpibench.cli import main as cli_main

    path = write(tmp_path, BASE + f'[scheduler]\nname = "slurm"\n{line}\n')
    with pytest.raises(UsageError, match=re.escape(key)):
        load(path)
    assert cli_main(["campaign", "run", str(path), "--dry-run"]) == 2


def test_campaign_list_pages_a_big_campaign(tmp_path, capsys):
    """A 100k-cell campaign took 161 s and 721 MB to list as one table: the terminal shows a
    page (1000 cells), --offset/--limit move through them, --json streams every cell."""
    import json

    from mpibench.cli import main as cli_main
    from support.synth import app_campaign_store

    path, db = app_campaign_store(tmp_path, list(range(1200)))
    assert cli_main(["campaign", "list", str(path), "--db", str(db)]) == 0
    out = capsys.readouterr()
    assert len([ln for ln in out.out.splitlines() if " c-" in ln]) == 1000
    assert "cells 1-1000 of 2400; next page: --offset 1000" in out.err
    assert cli_main(["campaign", "list", str(path), "--db", str(db), "--offset", "2390"]) == 0
    out = capsys.readouterr()
    seqs = [int(ln.split("│")[1].strip()) for ln in out.out.splitlines() if " c-" in ln]
    assert seqs == list(range(2390, 2400)) and "cells 2391-2400 of 2400" in out.err
    assert cli_main(["campaign", "list", str(path), "--db", str(db), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["seq"] for r in rows] == list(range(2400))
    assert cli_main(["campaign", "list", str(path), "--db", str(db), "--json", "--offset", "5",
                     "--limit", "3"]) == 0
    assert [r["seq"] for r in json.loads(capsys.readouterr().out)] == [5, 6, 7]


@pytest.mark.parametrize("extra, key", [('launcher = "bogus"', "variants.b.launcher"),
                                        ('transport = "nosuch"', "variants.b.transport"),
                                        ('sweep = { transport = ["shm", "sm"] }',
                                         "variants.b.sweep.transport[1]")])
def test_registry_names_are_checked_at_load_and_dry_run(tmp_path, extra, key, capsys):
    from mpibench.cli import main as cli_main

    path = write(tmp_path, BASE.replace('stack = "mpich"', f'stack = "mpich"\n{extra}'))
    with pytest.raises(UsageError, match=re.escape(key)):
        load(path)
    assert cli_main(["campaign", "run", str(path), "--dry-run"]) == 2
    assert key in capsys.readouterr().err


def test_group_kinds_are_registered_classes_and_nothing_else_tests_their_names():
    """core, app and peer are GroupKind classes in campaign/group_kinds/ (one file each);
    the campaign file, the runner and the cells ask the class, so no module outside that
    package compares a group's kind with a kind's name."""
    import re

    from mpibench.campaign.group_kinds import get_group_kind, group_kinds, select_kind

    kinds = {k.name: k for k in group_kinds()}
    assert set(kinds) == {"core", "app", "peer"}
    for k in kinds.values():
        assert k.marker in k.keys and type(get_group_kind(k.name)) is type(k)
    assert select_kind({"benchmarks": []}).name == "core"
    assert select_kind({"command": "x"}).name == "app"
    assert select_kind({"suite": "imb", "benchmarks": [], "command": "x"}).name == "peer"
    assert select_kind({"benchmarks": [], "command": "x"}) is None
    assert select_kind({}) is None
    src = Path(__file__).resolve().parents[1] / "src" / "mpibench"
    check = re.compile(r"""\bkind\s*(==|!=|\bin\b|\bnot in\b)\s*[(\[{]?\s*["'](core|app|peer)["']""")
    found = [f"{p.relative_to(src)}:{i}" for p in src.rglob("*.py")
             if "group_kinds" not in p.parts
             for i, line in enumerate(p.read_text().splitlines(), 1) if check.search(line)]
    assert not found, found
