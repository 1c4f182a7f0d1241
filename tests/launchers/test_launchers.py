"""Golden argv of every registered launcher, for the placements campaigns use."""

from __future__ import annotations

import pytest

from mpibench.errors import UsageError
from mpibench.launchers import LaunchSpec, get_launcher, launcher_names
from support.golden import check_golden

PROGRAM = ["/opt/bench/mpibench-core", "--sizes", "0:4", "--jsonl", "out file.jsonl",
           "PingPong"]
EXE = {"mpirun-openmpi": "/usr/bin/mpirun.openmpi", "mpiexec-hydra": "/usr/bin/mpiexec.hydra",
       "srun": "/usr/bin/mpirun.openmpi", "mpirun_rsh": "/opt/mvapich2/bin/mpirun_rsh",
       "template": "/usr/bin/mpiexec.hydra"}
TEMPLATE = ["mympirun --np {np} --per-node {ppn} -f {hostfile} --cmd={program} -- {program}"]

CASES = {
    "local-2": LaunchSpec(np=2, program=PROGRAM),
    "oversubscribed-env-mca": LaunchSpec(
        np=4, program=PROGRAM, env={"UCX_TLS": "shm,self", "WEIRD": "a b;$c'd"},
        mca={"pml": "ob1", "btl": "self,vader"}, oversubscribe=True),
    "two-nodes-ppn": LaunchSpec(np=4, program=PROGRAM, ppn=2, hosts=["n1", "n2"],
                                bind="core", map_by="core"),
    "hostfile": LaunchSpec(np=8, program=PROGRAM, hostfile="/run/job/hostfile", ppn=4,
                           env={"MV2_ENABLE_AFFINITY": "0"}),
    "extra-args": LaunchSpec(np=2, program=PROGRAM, extra=["--verbose"],
                             mpi_plugin="pmi2"),
    # values pass through as single elements; the job script quotes them (test_slurm_scripts)
    "hostile": LaunchSpec(np=2, program=[*PROGRAM, "a'b\"c$(touch /tmp/pwned)"],
                          env={"EVIL": "a'b\"c$(touch /tmp/pwned)"},
                          mca={"btl_tcp_if_include": "a'b\"c$(touch /tmp/pwned)"},
                          hostfile="/run/a'b\"c$(touch /tmp/pwned)/hostfile"),
}


def _argv(name: str, spec: LaunchSpec) -> list[str]:
    if name == "template":
        spec = LaunchSpec(**{**spec.__dict__, "extra": TEMPLATE})
    return get_launcher(name).argv(EXE[name], spec)


def test_every_launcher_is_registered():
    assert {"mpirun-openmpi", "mpiexec-hydra", "srun", "mpirun_rsh",
            "template"} <= set(launcher_names())


@pytest.mark.parametrize("name", sorted(EXE))
def test_launcher_argv_golden(name):
    got = {case: _argv(name, spec) for case, spec in CASES.items()}
    check_golden(f"launcher-{name}.json", got)


def test_argv_is_a_list_of_strings_and_values_stay_single_arguments():
    for name in EXE:
        for spec in CASES.values():
            argv = _argv(name, spec)
            assert all(isinstance(a, str) for a in argv)
            assert "out file.jsonl" in argv  # never split, never quoted


def test_srun_plugin_follows_the_stack():
    spec = LaunchSpec(np=2, program=["a"])
    srun = get_launcher("srun")
    assert "--mpi=pmix" in srun.argv("/usr/bin/mpirun.openmpi", spec)
    assert "--mpi=pmi2" in srun.argv("/usr/bin/mpiexec.hydra", spec)
    assert "--mpi=pmi2" in srun.argv("/usr/bin/mpirun.openmpi",
                                     LaunchSpec(np=2, program=["a"], mpi_plugin="pmi2"))
    own = srun.argv("/usr/bin/mpiexec.hydra", LaunchSpec(np=2, program=["a"],
                                                         extra=["--mpi=cray_shasta"]))
    assert [a for a in own if a.startswith("--mpi")] == ["--mpi=cray_shasta"]


def test_srun_passes_mca_as_environment():
    env = get_launcher("srun").launcher_env(
        LaunchSpec(np=2, program=["a"], env={"X": "1"}, mca={"btl": "self,tcp"}))
    assert env == {"OMPI_MCA_btl": "self,tcp", "X": "1"}


def test_mpirun_rsh_env_goes_on_the_command_line_before_the_program():
    argv = get_launcher("mpirun_rsh").argv("mpirun_rsh", LaunchSpec(
        np=2, program=["./p", "B=2"], env={"MV2_X": "1 2"}))
    assert argv == ["mpirun_rsh", "-np", "2", "-hostfile", "hostfile", "MV2_X=1 2", "./p",
                    "B=2"]


def test_template_substitutes_per_element_never_through_a_shell():
    argv = get_launcher("template").argv("x", LaunchSpec(
        np=3, program=["prog", "a; rm -rf /"], extra=["run", "-n", "{np}", "{program}"]))
    assert argv == ["run", "-n", "3", "prog", "a; rm -rf /"]
    # literal braces, program appended when the template does not place it
    argv = get_launcher("template").argv("x", LaunchSpec(
        np=1, program=["p"], extra=["go", '--json={{"n": {np}}}']))
    assert argv == ["go", '--json={"n": 1}', "p"]


@pytest.mark.parametrize("extra, message", [
    ([], "launcher_args is empty"),
    (["run {nodez}"], "unknown placeholder {nodez}"),
    (["run 'unbalanced"], "balanced quotes"),
])
def test_template_errors_name_the_problem(extra, message):
    with pytest.raises(UsageError, match=message.replace("{", r"\{").replace("}", r"\}")):
        get_launcher("template").argv("x", LaunchSpec(np=1, program=["p"], extra=extra))


def test_template_passes_mca_as_environment_and_knows_the_node_count():
    """A template launcher dropped the variant's MCA settings (a transport preset of an
    Open MPI stack never reached the ranks), and {nodes} was 1 for a 2-node variant without
    ppn."""
    t = get_launcher("template")
    spec = LaunchSpec(np=4, program=["a"], env={"X": "1"}, mca={"btl": "self,tcp"},
                      nodes=2, extra=["run -N {nodes} -n {np}"])
    assert t.launcher_env(spec) == {"OMPI_MCA_btl": "self,tcp", "X": "1"}
    assert t.argv("x", spec) == ["run", "-N", "2", "-n", "4", "a"]
    assert t.argv("x", LaunchSpec(np=4, program=["a"], ppn=2, extra=["r {nodes}"])) == \
        ["r", "2", "a"]
