"""A throw-away PostgreSQL server in one directory, for tests, benchmarks and trying the archive.

It runs Debian's `postgresql` programs (initdb, pg_ctl, postgres from
/usr/lib/postgresql/<version>/bin) as an unprivileged user: the current user, or the
`postgres` system user when running as root (PostgreSQL refuses to run as root). The data
directory, the log and the unix socket all live in the given directory; the server listens on
127.0.0.1 on a free port, with password (SCRAM) authentication over TCP for one role, so the
archive URL carries a real password like a team's would. Stopping sends the postmaster a
fast-shutdown signal by its PID (from postmaster.pid) and waits for it to exit.

    python -m mpibench.store.pg_local start DIR    # prints the archive URL
    python -m mpibench.store.pg_local stop DIR
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mpibench.files import write_file
from mpibench.process import run_command, start_ticks

REQUIRED = ("initdb", "pg_ctl", "postgres")
STATE_FILE = "server.json"


class PostgresStartError(RuntimeError):
    """The local server did not come up; the message shows its log."""


def bindir() -> Path | None:
    """The newest Debian PostgreSQL bin directory with initdb and pg_ctl, else PATH's."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                   key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit() else 0)
    for d in reversed(found):
        if all(os.access(os.path.join(d, p), os.X_OK) for p in REQUIRED):
            return Path(d)
    which = shutil.which("pg_ctl")
    if which and all(shutil.which(p) for p in REQUIRED):
        return Path(which).parent
    return None


def missing_programs() -> list[str]:
    return [] if bindir() is not None else list(REQUIRED)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_as() -> str | None:
    """The unprivileged user to run the server as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresStartError("running as root and there is no `postgres` user to run "
                                 "the server as (Debian's postgresql package creates it)") from None
    return "postgres"


def _alive(pid: int) -> bool:
    """Whether pid still runs. pg_ctl daemonises the postmaster, so its parent is init, which
    in a container may be slow to reap it: a zombie has exited."""
    return start_ticks(pid) is not None


@dataclass
class LocalPostgres:
    root: Path
    port: int = 0
    user: str = "mpibench"
    password: str = ""
    database: str = "archive"
    pid: int | None = None
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str | None = None, *, password: bool = True) -> str:
        cred = f"{self.user}:{self.password}" if password else self.user
        return f"postgresql://{cred}@127.0.0.1:{self.port}/{database or self.database}"

    def _cmd(self, argv: list[str], timeout: float = 120):
        owner = _run_as()
        if owner:
            argv = ["runuser", "-u", owner, "--", *argv]
        return run_command(argv, timeout=timeout, cwd=self.root)

    def start(self, timeout: float = 60.0, *, durable: bool = False) -> None:
        """initdb (first time), start the server and create the database. durable=False
        (tests) turns off fsync: a crash of the machine may lose this throw-away server."""
        bins = bindir()
        if bins is None:
            raise PostgresStartError("PostgreSQL is not installed (no initdb/pg_ctl); "
                                     "`make setup` installs Debian's postgresql package")
        self.root = Path(self.root).absolute()
        self.root.mkdir(parents=True, exist_ok=True)
        owner = _run_as()
        if owner:
            pw = pwd.getpwnam(owner)
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self.root.chmod(0o700)
            # the server must reach its directory through every parent (e.g. /tmp/x)
            closed = [p for p in self.root.parents if not p.stat().st_mode & 0o001]
            if closed:
                raise PostgresStartError(f"{closed[0]} is not searchable by the {owner} "
                                         "user; put the server's directory elsewhere "
                                         "(e.g. under /tmp)")
        self.password = self.password or secrets.token_urlsafe(12)
        if not (self.data / "PG_VERSION").exists():
            pwfile = self.root / "pwfile"
            write_file(pwfile, self.password + "\n", mode=0o600)
            if owner:
                os.chown(pwfile, pw.pw_uid, pw.pw_gid)
            res = self._cmd([str(bins / "initdb"), "-D", str(self.data), "-U", self.user,
                             f"--pwfile={pwfile}", "--auth-local=trust",
                             "--auth-host=scram-sha-256", "-E", "UTF8", "--no-locale"])
            pwfile.unlink()
            if res.returncode != 0:
                raise PostgresStartError(f"initdb failed: {(res.stderr or res.stdout)[-2000:]}")
        self.port = self.port or _free_port()
        opts = {"listen_addresses": "127.0.0.1", "port": str(self.port),
                "unix_socket_directories": str(self.root), "max_connections": "30",
                "shared_buffers": "64MB", **({} if durable else {"fsync": "off",
                                                                  "synchronous_commit": "off"}),
                **self.settings}
        o = " ".join(f"-c {k}={v}" for k, v in opts.items())
        res = self._cmd([str(bins / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
                         "-o", o, "-w", "-t", str(int(timeout)), "start"], timeout=timeout + 10)
        if res.returncode != 0:
            raise PostgresStartError(f"pg_ctl start failed ({res.stderr.strip()[-300:]}); "
                                     f"server log:\n{self._log_tail()}")
        self.pid = int((self.data / "postmaster.pid").read_text().split()[0])
        res = self._cmd([str(bins / "psql"), "-h", str(self.root), "-p", str(self.port),
                         "-U", self.user, "-d", "postgres", "-tAc",
                         f"SELECT 1 FROM pg_database WHERE datname = '{self.database}'"])
        if res.returncode == 0 and not res.stdout.strip():
            res = self._cmd([str(bins / "createdb"), "-h", str(self.root), "-p",
                             str(self.port), "-U", self.user, self.database])
        if res.returncode != 0:
            self.stop()
            raise PostgresStartError(f"creating database {self.database} failed: "
                                     f"{res.stderr.strip()[-500:]}")
        self._save()

    def create_database(self, name: str) -> str:
        """Another empty database on this server; returns its URL."""
        bins = bindir()
        res = self._cmd([str(bins / "createdb"), "-h", str(self.root), "-p", str(self.port),
                         "-U", self.user, name])
        if res.returncode != 0:
            raise PostgresStartError(f"createdb {name} failed: {res.stderr.strip()[-300:]}")
        return self.url(name)

    def _log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return "(no log)"

    def _save(self) -> None:
        write_file(self.root / STATE_FILE, json.dumps(
            {"port": self.port, "pid": self.pid, "user": self.user,
             "password": self.password, "database": self.database}), mode=0o600)

    @classmethod
    def load(cls, root: Path) -> LocalPostgres:
        st = json.loads((Path(root) / STATE_FILE).read_text())
        return cls(Path(root), port=st["port"], user=st["user"], password=st["password"],
                   database=st["database"], pid=st["pid"])

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown of the postmaster we started, by PID; waits until it has exited."""
        if self.pid is None:
            return
        try:
            os.kill(self.pid, signal.SIGINT)
        except ProcessLookupError:
            self.pid = None
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not _alive(self.pid):
                break
            time.sleep(0.05)
        else:
            os.kill(self.pid, signal.SIGQUIT)  # immediate shutdown: it is throw-away
        self.pid = None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in ("start", "stop"):
        print("usage: python -m mpibench.store.pg_local start|stop DIR", file=sys.stderr)
        return 2
    root = Path(args[1])
    if args[0] == "start":
        server = LocalPostgres(root)
        server.start(durable=True)
        print(f"export MPIBENCH_ARCHIVE={server.url()}")
        return 0
    LocalPostgres.load(root).stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
