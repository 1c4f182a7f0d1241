#!/usr/bin/env python3
"""Injection sweep: hostile names and values through campaign loading and generated job
scripts, for every scheduler backend (prints counts, asserts nothing).

Names: each payload as an env name in a variant, an application group and a variant sweep,
and as an MCA name; it must be refused when the campaign file is loaded. Values: each payload
as an env value, a setup argument, a program argument, a module name and (where the backend
writes them as directives) partition/account/job name; the job script each backend writes is
run under bash (no scheduler needed: programs are stand-ins that record what they got) and a
marker file must never appear. Counted: cases tried, refused at load, scripts run, injections
executed (marker created or a stand-in got a different argument), tracebacks.

Usage: .venv/bin/python bench/bench_injection.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from mpibench.campaign.spec import load
from mpibench.errors import UsageError
from mpibench.schedulers import JobRequest, JobStep, SchedulerSettings, get_scheduler

NAME_PAYLOADS = ["--split-string", "-S", "-i", "-u", "--unset=PATH", "--chdir=/", "A B",
                 "A=B", "1ABC", "A;touch {m}", "$(touch {m})", "`touch {m}`", "A\nB", "A\tB",
                 "", "-", "--", "A-B", "A.B", "A/B", "A'B", 'A"B', "\u0410BC", "A\u00a0B",
                 "--split-string=sh -c 'touch {m}' x", "-S sh -c 'touch {m}'"]
VALUE_PAYLOADS = ["$(touch {m})", "`touch {m}`", "; touch {m}", "| touch {m}", "&& touch {m}",
                  "' ; touch {m} ; '", '" ; touch {m} ; "', "\\'; touch {m}", "$((1+1))",
                  "${{IFS}}touch${{IFS}}{m}", "a\nb", "-S sh -c 'touch {m}'", "--help",
                  "=", "A=B", "%s%n", "{m}\\", "'$(touch {m})'", "*", "~root", "$HOME",
                  "!!", "\\x41", "x" * 5000, "\u202etouch {m}"]
DUMP = ("import json, os, sys; json.dump({'argv': sys.argv[1:], 'env': os.environ.get('EVIL')},"
        " open('dump.json', 'w'))")

CAMPAIGN = """[campaign]
name = "inj"
[variants.a]
stack = "openmpi"
{variant}
[benchmarks.pp]
benchmarks = ["PingPong"]
{group}
"""


def toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string


def names(tmp: Path, marker: Path, counts: dict) -> None:
    for raw in NAME_PAYLOADS:
        name = raw.format(m=marker)
        cases = {
            "variant env": CAMPAIGN.format(variant=f"env = {{ {toml_str(name)} = \"1\" }}",
                                           group=""),
            "group env": CAMPAIGN.format(variant="", group=(
                f"[benchmarks.app]\ncommand = \"true\"\nenv = {{ {toml_str(name)} = \"1\" }}")),
            "sweep": CAMPAIGN.format(variant=f"sweep = {{ {toml_str('env.' + name)} = "
                                             "[\"1\"] }", group=""),
            "mca": CAMPAIGN.format(variant=f"mca = {{ {toml_str(name)} = \"1\" }}", group=""),
        }
        for where, text in cases.items():
            counts["tried"] += 1
            p = tmp / "c.toml"
            p.write_text(text)
            try:
                load(p)
            except UsageError:
                counts["refused at load"] += 1
                continue
            except Exception:  # noqa: BLE001 - counting, not stopping
                counts["tracebacks"] += 1
                traceback.print_exc()
                continue
            if where != "sweep" or "." not in name:
                counts["accepted names"] += 1
                print(f"ACCEPTED name {name!r} in {where}")


def values(tmp: Path, marker: Path, counts: dict, backends: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PBS_"))}
    for raw in VALUE_PAYLOADS:
        value = raw.format(m=marker)
        for backend in backends:
            counts["tried"] += 1
            base = tmp / f"{backend}-{counts['tried']}"
            base.mkdir()
            step = JobStep(cell_id="c-0", run_dir=base,
                           argv=[sys.executable, "-c", DUMP, value], env={"EVIL": value},
                           stdout=base / "o", stderr=base / "e", timeout_s=60,
                           setup=[[sys.executable, "-c", "pass", value]],
                           setup_env={"EVIL": value})
            one_line = "\n" not in value
            settings = SchedulerSettings(name=backend, modules=[],
                                         **({"partition": value, "account": value}
                                            if one_line else {}))
            req = JobRequest(name="c-0", steps=[step], run_dir=base, nodes=1,
                             tasks_per_node=1, time_limit_s=60, settings=settings,
                             modules=[value] if one_line else [])
            try:
                script = get_scheduler(backend, settings).render_script(req)
            except UsageError:
                counts["refused at load"] += 1
                continue
            except Exception:  # noqa: BLE001
                counts["tracebacks"] += 1
                traceback.print_exc()
                continue
            script = script.replace("#!/bin/bash\n", "#!/bin/bash\nmodule() { :; }\n", 1)
            subprocess.run(["bash", "-c", script], cwd=base, env=env, capture_output=True,
                           timeout=120)
            counts["scripts run"] += 1
            got = json.loads((base / "dump.json").read_text()) if (
                base / "dump.json").exists() else None
            if marker.exists() or got is None or got["argv"] != [value] or \
                    got["env"] != value:
                counts["injections executed"] += 1
                print(f"INJECTED/ALTERED {backend}: {value[:60]!r} -> {str(got)[:120]}")
                marker.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the local backend only")
    args = ap.parse_args(argv)
    backends = ["local"] if args.quick else ["local", "slurm", "pbs"]
    counts = {k: 0 for k in ("tried", "refused at load", "accepted names", "scripts run",
                             "injections executed", "tracebacks")}
    with tempfile.TemporaryDirectory(prefix="mpibench-inj-") as tmp:
        t = Path(tmp)
        marker = t / "pwned"
        names(t, marker, counts)
        values(t, marker, counts, backends)
    for k, v in counts.items():
        print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
