"""A throw-away Slurm cluster on localhost, for tests, benchmarks and trying the backends.

It writes everything (munge key, slurm.conf, state, spool, logs) into one directory, starts
its own munged (own key and socket), slurmctld and two slurmd with node names n1 and n2 on
127.0.0.1 with distinct ports, waits until both nodes are idle, and stops exactly the daemons
it started, by PID. Nothing under /etc is touched: clients find the cluster through
SLURM_CONF (see `env()`).

Daemons are long-lived children started with subprocess.Popen in the foreground (-F / -D),
so their PIDs are ours; short commands (sinfo, scontrol) go through process.run_command.

Without slurmdbd (Debian packages it separately) Slurm has no job accounting here, so sacct
does not work; the slurm backend falls back to squeue, which keeps finished jobs for MinJobAge
seconds (set to 600 here).

    python -m mpibench.slurm_local start DIR     # prints `export SLURM_CONF=...`
    python -m mpibench.slurm_local stop DIR
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mpibench.files import write_file
from mpibench.process import run_command

NODES = ("n1", "n2")
REQUIRED = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo")
STATE_FILE = "cluster.json"


class SlurmStartError(RuntimeError):
    """The local cluster did not come up; the message says which daemon and shows its log."""


def missing_programs() -> list[str]:
    return [p for p in REQUIRED if shutil.which(p) is None
            and not os.path.exists(f"/usr/sbin/{p}")]


def _which(prog: str) -> str:
    return shutil.which(prog) or f"/usr/sbin/{prog}"


EPHEMERAL_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (32768 when it cannot be read)."""
    try:
        return int(EPHEMERAL_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _free_ports(n: int) -> list[int]:
    """n ports free on 127.0.0.1, chosen at random BELOW the ephemeral range.  A port the
    kernel hands out (bind to 0) is an ephemeral one: between choosing it and slurmctld
    binding it, any outgoing connection on this host (an MPI job's TCP, slurmctld's own
    to a slurmd) may take it as its local port, and slurmctld failed with "Address already
    in use" in a full test run.  Below the range only a listener can hold a port.  Where
    the range leaves fewer than 4n ports below it (it starts near 1024), the kernel chooses
    (ephemeral ports, as before); the retry in LocalSlurm.start covers a port taken then."""
    low = _ephemeral_low()
    first = max(1024, low - 16384)
    if low - first < 4 * n:                      # an odd range: let the kernel choose
        candidates = [0] * n
    else:
        candidates = random.SystemRandom().sample(range(first, low), min(low - first, 64 * n))
    socks, ports = [], []
    for port in candidates:
        if len(ports) == n:
            break
        s = socket.socket()
        try:
            s.bind(("", port))           # the daemons listen on every address
        except OSError:
            s.close()
            continue
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    if len(ports) < n:
        raise SlurmStartError(f"found only {len(ports)} of {n} free ports below the "
                              f"ephemeral range (from {low}, {EPHEMERAL_FILE})")
    return ports


def _cpus() -> int:
    return os.cpu_count() or 1


def _node_memory_mb(nodes: int = 2) -> int:
    """RealMemory per node: this host's memory shared by the slurmd daemons. Without it
    Slurm gives every node 1 MB and refuses any `--mem`."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    except (ValueError, OSError, AttributeError):
        return 1
    return max(1, int(total * 0.9) // nodes)


@dataclass
class LocalSlurm:
    root: Path
    cpus_per_node: int = field(default_factory=_cpus)
    partition: str = "debug"
    pids: dict[str, int] = field(default_factory=dict)
    _procs: dict[str, subprocess.Popen] = field(default_factory=dict, repr=False)

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.root / "munge" / "munge.socket"

    def env(self) -> dict[str, str]:
        """What client commands (sbatch, squeue, qsub ...) need to find this cluster."""
        return {"SLURM_CONF": str(self.conf)}

    # -- what a subclass changes (mpibench.testbed runs the daemons in namespaces) -------
    def node_names(self) -> list[str]:
        return list(NODES)

    def controller_lines(self, port: int) -> list[str]:
        return ["SlurmctldHost=localhost(127.0.0.1)", f"SlurmctldPort={port}"]

    def node_lines(self, ports: list[int]) -> list[str]:
        return [f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} "
                f"CPUs={self.cpus_per_node} RealMemory={_node_memory_mb(len(ports))} "
                "State=UNKNOWN" for n, port in zip(self.node_names(), ports, strict=True)]

    def ports(self) -> tuple[int, list[int]]:
        """(slurmctld's port, each slurmd's): free ports of this host's loopback."""
        ports = _free_ports(1 + len(self.node_names()))
        return ports[0], ports[1:]

    def daemon_argv(self, name: str, argv: list[str]) -> list[str]:
        """How daemon `name` (munged, slurmctld, slurmd-NODE) is started."""
        return argv

    # -- configuration ---------------------------------------------------------------
    def write_config(self) -> None:
        r = self.root
        for d in ("etc", "munge", "state", "spool", "log", "jobs",
                  *(f"tmp/{n}" for n in self.node_names())):
            (r / d).mkdir(parents=True, exist_ok=True)
        os.chmod(r, 0o755)
        os.chmod(r / "munge", 0o700)
        key = r / "munge" / "munge.key"
        if not key.exists():
            write_file(key, os.urandom(1024), mode=0o400)
        os.chmod(key, 0o400)
        ctl_port, node_ports = self.ports()
        user = "root" if os.geteuid() == 0 else os.environ.get("USER", "nobody")
        lines = [
            f"# written by {type(self).__module__}: a test cluster",
            "ClusterName=mpibench-test",
            *self.controller_lines(ctl_port),
            f"SlurmUser={user}",
            f"SlurmdUser={user}",
            f"AuthInfo=socket={self.munge_socket}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"StateSaveLocation={r / 'state'}",
            f"SlurmdSpoolDir={r / 'spool' / '%n'}",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}",
            f"SlurmdPidFile={r / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={r / 'log' / 'slurmd-%n.log'}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            # No cgroups in containers: track processes by /proc, no task binding.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            "MpiDefault=none",
            "ReturnToService=2",
            # No slurmdbd: no accounting storage, so sacct cannot answer; squeue keeps
            # finished jobs for MinJobAge seconds and the backend reads them from there.
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={r / 'log' / 'jobcomp.txt'}",
            "MinJobAge=600",
            # Both slurmd share this host's /tmp: per-node TmpFS keeps the PMIx plugin's
            # per-step directories (spmix_appdir_<uid>_<job>.<step>) from colliding.
            f"TmpFS={r / 'tmp' / '%n'}",
            "MaxJobCount=20000",
            # Enforce time limits promptly: no grace, short wait between TERM and KILL.
            "OverTimeLimit=0",
            "KillWait=2",
            "InactiveLimit=0",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "MessageTimeout=20",
            # a queued job starts within a second of the one before ending (with 2 s, the
            # localhost campaigns of tests/schedulers/test_slurm_cluster.py took 48 s under
            # load, 34 s with 1 s: most of their jobs wait for the one before)
            "SchedulerParameters=defer_no,sched_interval=1",
            "SlurmdParameters=config_overrides",
            *self.node_lines(node_ports),
            f"PartitionName={self.partition} Nodes={','.join(self.node_names())} Default=YES "
            "MaxTime=INFINITE State=UP OverSubscribe=NO",
        ]
        write_file(self.conf, "\n".join(lines) + "\n")

    # -- daemons ---------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.console", "ab")
        env = dict(os.environ)
        env.update(self.env())
        proc = subprocess.Popen(self.daemon_argv(name, argv), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, env=env, start_new_session=True,
                                cwd=self.root)
        log.close()
        self._procs[name] = proc
        self.pids[name] = proc.pid
        self._save()

    def _save(self) -> None:
        write_file(self.root / STATE_FILE, json.dumps(
            {"pids": self.pids, "conf": str(self.conf)}, indent=1))

    def start(self, timeout: float = 60.0, attempts: int = 3) -> None:
        """Start munged, slurmctld and each slurmd; wait until every node is idle.  A start
        whose daemon could not bind its port (taken since the ports were chosen: "Address
        already in use" in what this attempt logged, not in older lines of appended logs)
        is stopped and tried again, on other ports where ports() chooses them, up to
        `attempts` starts in all (at least one)."""
        missing = missing_programs()
        if missing:
            raise SlurmStartError("Slurm/munge programs not found: " + ", ".join(missing))
        attempts = max(1, attempts)
        for attempt in range(1, attempts + 1):
            sizes = self._log_sizes()
            try:
                self._start_once(timeout)
                return
            except SlurmStartError as exc:
                if "Address already in use" not in self._logged_since(sizes):
                    raise
                if attempt == attempts:
                    raise SlurmStartError(f"{exc}\n(a daemon's port was taken in each of "
                                          f"{attempts} starts)") from exc

    def _log_sizes(self) -> dict[Path, int]:
        logs = self.root / "log"
        return {p: p.stat().st_size for p in logs.glob("*")} if logs.is_dir() else {}

    def _logged_since(self, sizes: dict[Path, int]) -> str:
        """What the daemons' logs gained since `sizes` (the logs are appended to)."""
        out = []
        for p in sorted((self.root / "log").glob("*")):
            try:
                with open(p, "rb") as f:
                    f.seek(sizes.get(p, 0))
                    out.append(f.read().decode(errors="replace"))
            except OSError:
                continue
        return "\n".join(out)

    def _start_once(self, timeout: float) -> None:
        self.write_config()
        m = self.root / "munge"
        self._spawn("munged", [_which("munged"), "-F", "--force",
                               f"--socket={self.munge_socket}",
                               f"--key-file={m / 'munge.key'}",
                               f"--pid-file={m / 'munged.pid'}",
                               f"--seed-file={m / 'munged.seed'}",
                               f"--log-file={self.root / 'log' / 'munged.log'}"])
        self._wait(lambda: self.munge_socket.exists(), 10, "munged", "munged.log")
        self._spawn("slurmctld", [_which("slurmctld"), "-D", "-i", "-f", str(self.conf)])
        self._wait(self._ctld_up, timeout / 2, "slurmctld", "slurmctld.log")
        for n in self.node_names():
            (self.root / "spool" / n).mkdir(parents=True, exist_ok=True)
            self._spawn(f"slurmd-{n}", [_which("slurmd"), "-D", "-N", n, "-f", str(self.conf)])
        self._wait(self._nodes_idle, timeout, "slurmd",
                   f"slurmd-{self.node_names()[0]}.log")

    def _ctld_up(self) -> bool:
        return run_command(["scontrol", "ping"], env=self.env(), timeout=10).ok

    def node_states(self) -> dict[str, str]:
        res = run_command(["sinfo", "-h", "-N", "-o", "%N %T"], env=self.env(), timeout=10)
        out = {}
        for line in res.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                out[parts[0]] = parts[1]
        return out

    def _nodes_idle(self) -> bool:
        states = self.node_states()
        if all(states.get(n) in ("idle", "mixed", "allocated") for n in self.node_names()):
            return True
        # a node that registered as down/drained after a restart: bring it back
        for n, st in states.items():
            if st.rstrip("*") in ("down", "drained", "drain"):
                run_command(["scontrol", "update", f"NodeName={n}", "State=RESUME"],
                            env=self.env(), timeout=10)
        return False

    def _wait(self, ready, timeout: float, what: str, logname: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self._procs.items():
                if proc.poll() is not None:
                    self.stop()
                    raise SlurmStartError(
                        f"{name} exited with status {proc.returncode} while starting the "
                        f"local Slurm in {self.root}:\n{self._tail(name)}")
            if ready():
                return
            time.sleep(0.3)
        detail = self._tail(what if what != "slurmd" else f"slurmd-{self.node_names()[0]}",
                            logname)
        self.stop()
        raise SlurmStartError(f"{what} not ready after {timeout:.0f} s (local Slurm in "
                              f"{self.root}):\n{detail}")

    def _tail(self, name: str, logname: str | None = None, lines: int = 15) -> str:
        out = []
        for p in (self.root / "log" / f"{name}.console",
                  self.root / "log" / (logname or f"{name}.log")):
            if p.exists():
                text = p.read_text(errors="replace").strip().splitlines()[-lines:]
                if text:
                    out.append(f"--- {p}\n" + "\n".join(text))
        return "\n".join(out) or "(no log output)"

    def _alive(self, name: str) -> bool:
        proc = self._procs.get(name)
        if proc is not None:
            return proc.poll() is None
        try:
            os.kill(self.pids[name], 0)
        except (KeyError, ProcessLookupError, PermissionError):
            return False
        return True

    def drain_jobs(self, timeout: float = 30.0) -> list[str]:
        """Cancel every job on this private cluster and wait until none runs any more:
        stopping slurmd does not stop its jobs (their slurmstepd lives on by design), so a
        test that failed with jobs in flight would otherwise leave them running after the
        daemons are gone. Returns the ids it cancelled."""
        if not self._alive("slurmctld"):
            return []
        env = self.env()
        res = run_command(["squeue", "--noheader", "--format=%i"], env=env, timeout=10)
        ids = res.stdout.split() if res.ok else []
        if not ids:
            return []
        run_command(["scancel", *ids], env=env, timeout=30)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            res = run_command(["squeue", "--noheader", "--format=%i",
                               "--states=PENDING,RUNNING,COMPLETING,CONFIGURING,SUSPENDED"],
                              env=env, timeout=10)
            if res.ok and not res.stdout.split():
                break
            time.sleep(0.5)
        return ids

    def stop(self) -> None:
        """Stop the daemons this object started (by PID): first every job still on the
        cluster is cancelled, then slurmd, slurmctld, and munged last."""
        self.drain_jobs()
        order = [n for n in self.pids if n.startswith("slurmd")] + \
            [n for n in ("slurmctld", "munged") if n in self.pids]
        for name in order:
            proc = self._procs.get(name)
            if proc is not None:
                _terminate(proc)
            else:
                _terminate_pid(self.pids[name])
        self.pids.clear()
        self._procs.clear()
        if (self.root / STATE_FILE).exists():
            self._save()


def _terminate(proc: subprocess.Popen, grace: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def _terminate_pid(pid: int, grace: float = 10.0) -> None:
    """For `stop DIR` from another process: the PIDs recorded by `start`."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: python -m mpibench.slurm_local start|stop DIR", file=sys.stderr)
        return 2
    root = Path(argv[1]).resolve()
    if argv[0] == "start":
        cluster = LocalSlurm(root)
        try:
            cluster.start()
        except SlurmStartError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        # the daemons outlive this process; `stop DIR` reads their PIDs from cluster.json
        print(f"export SLURM_CONF={cluster.conf}")
        return 0
    state = json.loads((root / STATE_FILE).read_text())
    cluster = LocalSlurm(root, pids={k: int(v) for k, v in state["pids"].items()})
    cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
