"""Transport verification: which transport actually carried the traffic, from the stack's own
diagnostics, compared with what the variant requested.

How (decided for timing's sake): a separate, short *probe launch* per variant, never the
measured run. The probe is a tiny ring exchange (8 B and 64 KiB, so eager and rendezvous paths
are both opened) built with the stack's compiler wrapper, launched exactly like the variant
(same launcher, np, placement, env, MCA) plus diagnostics that only add output at start-up.
Each rank prints its host, so a kind can tell whether all peers shared one host. Which
diagnostics and how to read them is the stack kind's business (mpibench.stacks.kinds):

  Open MPI   --mca pml_base_verbose/btl_base_verbose/mtl_base_verbose, UCX_LOG_LEVEL=info
  MPICH      MPIR_CVAR_DEBUG_SUMMARY=1 (shm module, libfabric provider), UCX_LOG_LEVEL=info
  Intel MPI  I_MPI_DEBUG=5 (fabric, libfabric provider)

The verbose flags change the launcher argv, so putting them into the measured run would also
change its fingerprint and its output; a probe costs one short launch per variant instead.

Result: `transport_actual` = "<class> [<detail>]" (see mpibench.transports);
`verdict(requested, actual)` is ok / MISMATCH / unverified.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from mpibench.execute import CellCommand, Variant, prepare_cell
from mpibench.files import write_file
from mpibench.process import run_command
from mpibench.schedulers import STEP_TIMEOUT_EXIT, JobStep, StepCompletion
from mpibench.stacks import Stack, cache_dir
from mpibench.stacks.kinds import get_kind
from mpibench.transports import (  # noqa: F401
    NETDEV,
    actual_class,
    classify,
    interface_detail,
    ucx_transports,
    verdict,
)

PROBE_SOURCE = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

/* What the ranks' node runs: kernel, CPU, and the MPI/UCX/libfabric libraries actually mapped
   into this process (a module, LD_LIBRARY_PATH or I_MPI_OFI_LIBRARY decides which). */
static void node_facts(void) {
    struct utsname u;
    char line[4096], seen[32][1024];
    int nseen = 0;
    if (uname(&u) == 0) printf("mpibench-probe kernel=%s arch=%s\n", u.release, u.machine);
    printf("mpibench-probe cores=%ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    /* the batch system's name for this node (several slurmd on one test host share a name) */
    const char *node = getenv("SLURMD_NODENAME");
    if (!node) node = getenv("PBS_NODENAME");
    if (node) printf("mpibench-probe scheduler_node=%s\n", node);
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            char *v = strchr(line, ':') + 1;
            while (*v == ' ') v++;
            printf("mpibench-probe cpu=%s", v);
            break;
        }
    }
    if (f) fclose(f);
    f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/');
        if (!path) continue;
        path[strcspn(path, "\n")] = 0;
        const char *base = strrchr(path, '/') + 1;
        if (strncmp(base, "libmpi", 6) && strncmp(base, "libucp", 6) &&
            strncmp(base, "libfabric", 9) && strncmp(base, "libpmix", 7) &&
            strncmp(base, "libopen-pal", 11)) continue;
        int dup = 0;
        for (int i = 0; i < nseen; i++) dup |= !strcmp(seen[i], path);
        if (dup || nseen == 32 || strlen(path) >= 1024) continue;
        strcpy(seen[nseen++], path);
        printf("mpibench-probe lib=%s\n", path);
        void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
        if (!h) continue;
        const char *(*ucp)(void) = (const char *(*)(void))dlsym(h, "ucp_get_version_string");
        if (!strncmp(base, "libucp", 6) && ucp) printf("mpibench-probe ucx=%s\n", ucp());
        unsigned (*fiv)(void) = (unsigned (*)(void))dlsym(h, "fi_version");
        if (!strncmp(base, "libfabric", 9) && fiv)
            printf("mpibench-probe libfabric_api=%u.%u\n", fiv() >> 16, fiv() & 0xffff);
        dlclose(h);
    }
    if (f) fclose(f);
}

/* CPUs in a list such as "0-3,8,10-11" (cpuset.cpus): 7 */
static int cpu_count(const char *list) {
    int n = 0;
    while (*list && *list != '\n') {
        char *end;
        long a = strtol(list, &end, 10), b = a;
        if (end == list) return -1;
        if (*end == '-') b = strtol(end + 1, &end, 10);
        n += (int)(b - a + 1);
        list = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* One node's shape, printed by the first rank on each host: hostname, kernel, CPU model and
   count, the CPUs of its cpuset cgroup (a batch job's or a testbed node's), the size of its
   /dev/shm and its network interfaces with an IPv4 address. Each fact on its own line:
   "mpibench-node host=H key=value". */
static void node_shape(const char *host) {
    struct utsname u;
    char line[4096], path[4200];
    if (uname(&u) == 0) {
        printf("mpibench-node host=%s kernel=%s\n", host, u.release);
        printf("mpibench-node host=%s arch=%s\n", host, u.machine);
    }
    printf("mpibench-node host=%s cores=%ld\n", host, sysconf(_SC_NPROCESSORS_ONLN));
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            char *v = strchr(line, ':') + 1;
            while (*v == ' ') v++;
            printf("mpibench-node host=%s cpu=%s", host, v);
            break;
        }
    }
    if (f) fclose(f);
    f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *p = strstr(line, ":cpuset:");
        line[strcspn(line, "\n")] = 0;
        if (p) snprintf(path, sizeof path, "/sys/fs/cgroup/cpuset%s/cpuset.cpus", p + 8);
        else if (!strncmp(line, "0::", 3))
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpuset.cpus.effective", line + 3);
        else continue;
        FILE *c = fopen(path, "r");
        char cpus[4096];
        if (c && fgets(cpus, sizeof cpus, c) && cpu_count(cpus) > 0)
            printf("mpibench-node host=%s cpuset=%d\n", host, cpu_count(cpus));
        if (c) fclose(c);
        break;
    }
    if (f) fclose(f);
    struct statvfs sv;
    if (statvfs("/dev/shm", &sv) == 0)
        printf("mpibench-node host=%s shm_bytes=%llu\n", host,
               (unsigned long long)sv.f_blocks * (unsigned long long)sv.f_frsize);
    struct ifaddrs *ifs, *i;
    if (getifaddrs(&ifs) == 0) {
        printf("mpibench-node host=%s interfaces=", host);
        int first = 1;
        for (i = ifs; i; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !(i->ifa_flags & IFF_LOOPBACK)) {
                printf("%s%s", first ? "" : ",", i->ifa_name);
                first = 0;
            }
        printf("\n");
        freeifaddrs(ifs);
    }
}

/* This node's byte counters per network interface (/proc/net/dev is the reading process's
   network namespace: the node's own interfaces on a testbed). */
#define MAXIF 64
static int netdev(char names[MAXIF][64], long long rx[MAXIF], long long tx[MAXIF]) {
    char line[512];
    int n = 0;
    FILE *f = fopen("/proc/net/dev", "r");
    while (f && n < MAXIF && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        unsigned long long v[16];
        if (!colon) continue;
        *colon = 0;
        char *name = line;
        while (*name == ' ') name++;
        if (sscanf(colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) != 9) continue;
        snprintf(names[n], 64, "%s", name);
        rx[n] = (long long)v[0];
        tx[n] = (long long)v[8];
        n++;
    }
    if (f) fclose(f);
    return n;
}

#define PAYLOAD (1 << 20)
#define PAYLOAD_REPS 2
static char pay_s[PAYLOAD], pay_r[PAYLOAD];

int main(int argc, char **argv) {
    int rank, size, len = 0;
    static char sbuf[65536], rbuf[65536];
    char host[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    memset(host, 0, sizeof host);
    MPI_Get_processor_name(host, &len);
    printf("mpibench-probe rank=%d host=%s\n", rank, host);
    /* every node's shape, from the first rank on it */
    char *names = malloc((size_t)size * MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME,
                  MPI_CHAR, MPI_COMM_WORLD);
    int first_here = 1;
    for (int r = 0; r < rank; r++)
        if (!strncmp(names + (size_t)r * MPI_MAX_PROCESSOR_NAME, host, MPI_MAX_PROCESSOR_NAME))
            first_here = 0;
    free(names);
    if (first_here) node_shape(host);
    if (rank == 0) {
        MPI_Get_library_version(lib, &len);
        lib[strcspn(lib, "\n")] = 0;
        printf("mpibench-probe library=%s\n", lib);
        node_facts();
    }
    fflush(stdout);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const int lens[2] = {8, 65536};
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < 2; i++)
            MPI_Sendrecv(sbuf, lens[i], MPI_CHAR, next, i, rbuf, lens[i], MPI_CHAR, prev, i,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* which interface carries traffic: the node's counters around a payload exchange */
    static char n0[MAXIF][64], n1[MAXIF][64];
    static long long rx0[MAXIF], tx0[MAXIF], rx1[MAXIF], tx1[MAXIF];
    MPI_Barrier(MPI_COMM_WORLD);
    int c0 = netdev(n0, rx0, tx0);
    for (int rep = 0; rep < PAYLOAD_REPS; rep++)
        MPI_Sendrecv(pay_s, PAYLOAD, MPI_CHAR, next, 7, pay_r, PAYLOAD, MPI_CHAR, prev, 7,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    int c1 = netdev(n1, rx1, tx1);
    if (rank == 0) printf("mpibench-netdev payload=%d\n", PAYLOAD * PAYLOAD_REPS);
    for (int i = 0; i < c1; i++)
        for (int j = 0; j < c0; j++)
            if (!strcmp(n1[i], n0[j]) && (rx1[i] > rx0[j] || tx1[i] > tx0[j]))
                printf("mpibench-netdev rank=%d host=%s if=%s rx=%lld tx=%lld\n", rank, host,
                       n1[i], rx1[i] - rx0[j], tx1[i] - tx0[j]);
    /* every message of this rank went through: what follows (a barrier, MPI_Finalize) carries
       nothing the verdict needs, and a hang there does not void it (see probe_exchanged) */
    printf("mpibench-probe exchanged rank=%d\n", rank);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"""

# what a one-rank probe carried: nothing between ranks (class "none", verdict n/a)
ONE_RANK = "none [one rank: no traffic between ranks to verify]"


@dataclass
class Verification:
    requested: str | None
    actual: str  # "<class> [<detail>]"
    verdict: str  # ok | MISMATCH | unverified | n/a
    evidence: list[str] = field(default_factory=list)  # the diagnostic lines it rests on
    run_dir: Path | None = None
    problem: str | None = None
    # where rank 0 ran: kernel, CPU, cores, hosts, libraries mapped and their versions
    node: dict = field(default_factory=dict)


_FACT = re.compile(r"^mpibench-probe (\w+)=(.*)$", re.MULTILINE)
_NODE = re.compile(r"^mpibench-node host=(\S+) (\w+)=(.*)$", re.MULTILINE)
_NODE_INTS = ("cores", "cpuset", "shm_bytes")
_NODE_KEYS = {"cpu": "cpu_model"}


def node_shapes(text: str) -> dict[str, dict]:
    """{host: its shape} from the probe's `mpibench-node` lines (one set per host, printed
    by the first rank on it): kernel, arch, cpu_model, cores, cpuset (CPUs of its cpuset
    cgroup), shm_bytes (/dev/shm), interfaces (with an IPv4 address, loopback left out).
    Pure."""
    nodes: dict[str, dict] = {}
    for host, key, value in _NODE.findall(text):
        value = value.strip(" \t\r")  # ASCII blanks only: U+2028 is no separator here
        facts = nodes.setdefault(host, {})
        if key in _NODE_INTS:
            if value.isascii() and value.isdigit():
                facts[key] = int(value)
        elif key == "interfaces":
            facts[key] = sorted(set(filter(None, value.split(","))))
        else:
            facts[_NODE_KEYS.get(key, key)] = value
    return dict(sorted(nodes.items()))


def node_facts(text: str) -> dict:
    """What the probe's rank 0 saw on its node (see PROBE_SOURCE). Pure."""
    facts: dict = {}
    libs: list[str] = []
    hosts: set[str] = set()
    for key, value in _FACT.findall(text):
        value = value.strip()
        if key == "lib":
            libs.append(value)
        elif key == "rank":
            hosts.add(value.split(" host=", 1)[-1])
        elif key == "cores":
            facts["cores"] = int(value) if value.isdigit() else value
        elif key == "kernel":
            facts["kernel"], _, arch = value.partition(" arch=")
            facts["arch"] = arch
        elif key == "cpu":
            facts["cpu_model"] = value
        elif key == "scheduler_node":
            facts["scheduler_node"] = value
        elif key in ("ucx", "libfabric_api", "library"):
            facts[key] = value
    if libs:
        facts["libraries"] = sorted(set(libs))
    if hosts:
        facts["hosts"] = sorted(hosts)
    nodes = node_shapes(text)
    if nodes:
        facts["nodes"] = nodes
    return facts


def parse_diagnostics(kind: str, text: str, env: dict[str, str] | None = None
                      ) -> tuple[str, list[str]]:
    """(actual, evidence lines) from a probe's combined output. Pure."""
    return get_kind(kind).parse_diagnostics(text, env or {})


def probe_path(stack: Stack) -> Path:
    """Where the probe built for this stack is (or will be) cached; builds nothing."""
    key = hashlib.sha256(PROBE_SOURCE.encode()).hexdigest()[:8]
    return cache_dir() / "verify" / f"{stack.name}-{stack.identity()}-{key}" / \
        "mpibench-transport-probe"


def probe_binary(stack: Stack, timeout: float = 120) -> Path:
    """The probe built with the stack's wrapper, cached per stack identity."""
    exe = probe_path(stack)
    out_dir = exe.parent
    if exe.exists():
        return exe
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / "probe.c"
    write_file(src, PROBE_SOURCE)
    tmp = out_dir / f".probe.{id(src)}"
    res = run_command(stack.command([stack.mpicc, str(src), "-o", str(tmp), "-ldl"]),
                      env=stack.env, timeout=timeout)
    if not res.ok:
        raise RuntimeError(f"cannot build the transport probe with {stack.mpicc}: "
                           f"{res.stderr_tail(3)}")
    tmp.replace(exe)
    return exe


def diagnostic_variant(stack: Stack, variant: Variant) -> Variant:
    """The variant plus start-up diagnostics; everything that selects transports unchanged."""
    kind = stack.kind_class
    env = dict(variant.env)
    env.update(kind.diag_env)
    mca = dict(variant.mca)
    mca.update(kind.diag_mca)
    # the variant's own ranks and placement, never more: a batch probe runs inside the
    # variant's allocation, and one rank (np = 1, or nodes = 1 at ppn = 1) has one slot;
    # two ranks there fail ("not enough slots", "More processors requested than
    # permitted"). One rank has no peer: judge() says there is nothing to verify.
    return replace(variant, env=env, mca=mca, profile=False)


def prepare_probe(stack: Stack, variant: Variant, run_dir: Path, *, local: bool = True,
                  dry: bool = False) -> CellCommand:
    """dry: build nothing and create no directory (a dry run's job scripts)."""
    exe = probe_path(stack) if dry else probe_binary(stack)
    return prepare_cell(stack, diagnostic_variant(stack, variant), [str(exe)],
                        run_dir, jsonl=None, local=local, create=not dry)


_ANNOUNCED = re.compile(r"^mpibench-probe rank=(\d+) host=", re.M)
_EXCHANGED = re.compile(r"^mpibench-probe exchanged rank=(\d+)$", re.M)
# the same line for the job script's awk (schedulers.StepCompletion): one per rank
EXCHANGED_ERE = "^mpibench-probe exchanged rank=[0-9]+$"
PROBE_STEP_TIMEOUT = 60.0   # a batch probe step's bound (the campaign's timeout if shorter)
PROBE_GRACE_S = 5.0         # after every rank reported, the launcher's time to exit by itself


def probe_completion(np: int) -> StepCompletion:
    """When a probe launch is complete: once each of its np ranks printed its `exchanged`
    line (then its launcher has PROBE_GRACE_S to exit, or is stopped)."""
    return StepCompletion(EXCHANGED_ERE, np, "probe ranks", grace_s=PROBE_GRACE_S)


def probe_exchanged(stdout: str, np: int | None = None) -> bool:
    """Every rank said all its messages went through (the payload exchange and the barrier
    after it): ranks 0 .. np-1 when np is given, else every rank that announced itself.
    MPICH 4.0.2 over UCX 1.13's tcp hangs now and then in the probe's MPI_Finalize (1 launch
    in 3 at np 4 under load here: one rank still closes its UCX endpoints, which needs its
    peers' progress, while they already wait in the PMI barrier): the transport had carried
    the traffic by then."""
    if np is not None:
        return np >= 1 and not unreported_ranks(stdout, np)
    announced = {int(r) for r in _ANNOUNCED.findall(stdout)}
    return bool(announced) and announced <= {int(r) for r in _EXCHANGED.findall(stdout)}


def unreported_ranks(stdout: str, np: int) -> list[int]:
    """The ranks of 0 .. np-1 that never said their exchange went through. Pure."""
    exchanged = {int(r) for r in _EXCHANGED.findall(stdout)}
    return [r for r in range(np) if r not in exchanged]


def probe_launch_problem(exit_code: int | None, timed_out: bool, timeout: float | None,
                         stdout: str, stderr: str, np: int) -> str | None:
    """probe_problem for a launch of np ranks, judged from what it printed: its stdout read
    once for the ranks that reported (the batch probe step and verify_local alike)."""
    unreported = unreported_ranks(stdout, np)
    return probe_problem(exit_code, timed_out, timeout, stderr,
                         exchanged=np >= 1 and not unreported, unreported=unreported)


def probe_step(stack: Stack, variant: Variant, run_dir: Path, campaign_timeout: float, *,
               name: str, dry: bool = False) -> JobStep:
    """A batch job's probe step: the probe launched like the variant, complete once each of
    its np ranks has printed its `exchanged` line (schedulers.StepCompletion: its launcher
    is then stopped if it does not exit by itself, so a hanging MPI_Finalize costs seconds,
    not the step's timeout). dry: nothing built or created (a dry run's scripts)."""
    cmd = prepare_probe(stack, variant, run_dir, local=False, dry=dry)
    return JobStep(name, run_dir, cmd.argv, cmd.env, cmd.stdout, cmd.stderr,
                   timeout_s=min(PROBE_STEP_TIMEOUT, campaign_timeout), cell=cmd,
                   complete=probe_completion(variant.np))


def probe_problem(exit_code: int | None, timed_out: bool, timeout: float | None,
                  stderr: str = "", *, exchanged: bool = False,
                  unreported: list[int] | None = None) -> str | None:
    """Why a finished probe launch cannot vouch for a transport, or None if it ran to the
    end. A probe that hung or was killed printed its start-up diagnostics and then never
    showed that traffic flowed: what it printed proves nothing, unless every rank had
    finished its exchanges (exchanged: probe_exchanged) and only the teardown hung or
    failed. exit_code None: a batch probe step that never recorded its status (the job died
    around it); 124: the job script's `timeout` stopped it. unreported: the ranks that never
    said their exchange went through (unreported_ranks), named in the reason of a launch
    that failed."""
    if exchanged:
        return None
    missing = ""
    if unreported:
        shown = ", ".join(str(r) for r in unreported[:8]) + (", ..." if len(unreported) > 8
                                                             else "")
        many = len(unreported) > 1
        missing = (f"; rank{'s' if many else ''} {shown} never reported "
                   f"{'their' if many else 'its'} exchange")
    if timed_out or exit_code == STEP_TIMEOUT_EXIT:
        return "probe launch timed out" + (f" after {timeout:g} s" if timeout else "") + missing
    if exit_code is None:
        return "the probe step never finished (its job ended first)" + missing
    if exit_code < 0 or 128 < exit_code <= 128 + 64:  # run_command's -N, a shell's 128+N
        return (f"probe launch killed by signal "
                f"{-exit_code if exit_code < 0 else exit_code - 128}" + missing)
    if exit_code != 0:
        last = (stderr.strip().splitlines() or ["no error output"])[-1].strip()
        return f"probe launch failed (exit {exit_code}: {last[:120]})" + missing
    return None


def judge(stack: Stack, variant: Variant, text: str, env: dict[str, str],
          run_dir: Path | None = None, problem: str | None = None) -> Verification:
    """The verdict on a probe's output. With a problem (see probe_problem) it is never ok:
    actual is unknown with the reason, plus what the diagnostics said before it."""
    actual, evidence = parse_diagnostics(stack.kind, text, env)
    if not problem and variant.np == 1:
        # no traffic between ranks: no transport to check (transports.verdict: n/a); the
        # probe still reports its node (kernel, CPU, libraries) for the fingerprint
        actual = ONE_RANK
    # which interface carried the payload: said where it can matter (ranks on several
    # nodes, or an interface pinned); one host's TCP goes over lo, which says nothing new
    iface = interface_detail(text) if (variant.interface or len(
        node_facts(text).get("hosts", [])) > 1) else None
    if iface and not problem and variant.np > 1:
        actual = _with_detail(actual, iface)
        evidence += [m.group(0) for m in NETDEV.finditer(text)][:16]
    if problem:
        cls = actual_class(actual)
        actual = f"unknown [{problem}" + (f"; before that its diagnostics showed {cls}"
                                          if cls and cls != "unknown" else "") + "]"
    requested = variant.transport_request()
    node = node_facts(text)
    # the library's own account of its settings (MCA dump, MPICH debug summary, I_MPI_DEBUG)
    from mpibench.libsettings import library_settings

    settings = library_settings(text)
    if settings:
        node["library_settings"] = settings
    return Verification(requested=requested, actual=actual,
                        verdict=verdict(requested, actual), evidence=evidence,
                        run_dir=run_dir, problem=problem, node=node)


def _with_detail(actual: str, more: str) -> str:
    """"tcp [pml ob1, btl tcp]" + "iface eth0" -> "tcp [pml ob1, btl tcp; iface eth0]"."""
    if actual.endswith("]"):
        return f"{actual[:-1]}; {more}]"
    return f"{actual} [{more}]"


def verify_local(stack: Stack, variant: Variant, run_dir: Path, timeout: float = 60
                 ) -> Verification:
    """Launch the probe now and judge it. Never raises for a failing probe: the verification
    is then 'unverified' with the reason."""
    from mpibench.execute import run_local

    run_dir = Path(run_dir)
    try:
        cmd = prepare_probe(stack, variant, run_dir)
    except RuntimeError as exc:
        return Verification(variant.transport_request(), f"unknown [{exc}]",
                            verdict(variant.transport_request(), None), run_dir=run_dir,
                            problem=str(exc))
    res = run_local(cmd, timeout=timeout,
                    complete=probe_completion(variant.np))
    problem = probe_launch_problem(res.returncode, res.timed_out, timeout, res.stdout,
                                   res.stderr, variant.np)
    v = judge(stack, variant, res.stdout + "\n" + res.stderr, cmd.env, run_dir, problem)
    write_file(run_dir / "verification.txt",
               f"requested: {v.requested}\nactual: {v.actual}\nverdict: {v.verdict}\n"
               + (f"problem: {problem}\n" if problem else "") + "evidence:\n"
               + "\n".join(f"  {line}" for line in v.evidence) + "\n")
    return v


def transport_warnings(store, run_ids: list[str]) -> list[str]:
    """One line per variant among these runs whose requested transport did not take effect
    (verdict MISMATCH), for reports and comparisons to print beside their tables."""
    seen: dict[tuple[str, str, str], int] = {}
    from mpibench.store.queries import transports

    for variant, req, act in transports(store, run_ids):
        if verdict(req, act) == "MISMATCH":
            key = (variant, req, act)
            seen[key] = seen.get(key, 0) + 1
    return [f"variant {v}: requested transport {req} but {act} carried the traffic "
            f"({n} run(s)); its results measure {actual_class(act)}, not {req}"
            for (v, req, act), n in seen.items()]
