"""`suite = "imb" | "osu" | "netpipe"`: a third-party suite's program launched under the
variant's launcher, its output parsed into result rows with the parsers `mpibench import`
uses. The suites themselves are registered in mpibench.peers (one file each)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from mpibench.benchmarks import parse_sizes
from mpibench.campaign.cells import app_placement
from mpibench.campaign.group_kinds import GroupKind, Prepared, register_group_kind
from mpibench.campaign.spec import Group, _Ctx, _exclude, _show, group_common, group_variants
from mpibench.errors import UsageError
from mpibench.execute import prepare_cell
from mpibench.peers import (
    PeerSpec,
    build_peer,
    find_binary,
    get_suite,
    parse_output,
    program_args,
    suite_names,
)
from mpibench.schedulers import JobStep


@register_group_kind("peer")
class PeerKind(GroupKind):
    marker = "suite"
    precedence = 1  # a peer group has `benchmarks` too: `suite` decides
    keys = ("suite", "benchmarks", "sizes", "binary", "source", "args", "timeout",
            "variants", "repeats", "exclude", "env")

    @property
    def marker_help(self) -> str:
        return "'suite' (a peer suite: " + ", ".join(suite_names()) + ")"

    def parse(self, c: _Ctx, key, name, gdef, path, variants, vbase) -> list[Group]:
        """OSU runs one program per benchmark, so an OSU group becomes one group per
        program, NAME.osu_latency ..."""
        suite = gdef["suite"]
        names = suite_names()
        if not isinstance(suite, str) or suite not in names:
            c.fail(f"{key}.suite", f"got {_show(suite)}",
                   " or ".join(f'"{s}"' for s in names))
        suite_cls = get_suite(suite)
        if ("binary" in gdef) == ("source" in gdef):
            c.fail(key, "needs exactly one of 'binary' (a built program) or 'source' (a "
                   "tarball or source tree, built per stack)",
                   'binary = "/path/IMB-MPI1" or source = "/path/imb-2021.11.tar.gz"')
        where = {}
        for k in ("binary", "source"):
            if k in gdef:
                text = c.string(gdef[k], f"{key}.{k}")
                p = Path(text)
                # a relative path is the campaign file's; the binary may only exist on the
                # cluster, so it is checked when the campaign runs, not when it loads
                where[k] = str(p if p.is_absolute() else (path.parent / p).resolve())

        def fail(problem: str, expected: str = "", index: int | None = None) -> None:
            c.fail(f"{key}.benchmarks" + (f"[{index}]" if index is not None else ""),
                   problem, expected)

        # the suite checks its own benchmarks key (IMB names, OSU programs, none for NetPIPE)
        benches = suite_cls.check_benchmarks(
            c.str_list(gdef["benchmarks"], f"{key}.benchmarks") if "benchmarks" in gdef
            else None, fail)
        sizes = None
        if "sizes" in gdef:
            sizes = c.string(gdef["sizes"], f"{key}.sizes")
            try:
                parse_sizes(sizes)
            except UsageError as exc:
                c.fail(f"{key}.sizes", str(exc))
        args = tuple(c.str_list(gdef.get("args", []), f"{key}.args"))
        out = []
        for bench in (benches if suite_cls.one_program_per_benchmark else [None]):
            g = Group(name=f"{name}.{bench}" if bench and len(benches) > 1 else name,
                      kind=self.name)
            g.peer = PeerSpec(suite=suite, benchmarks=(bench,) if bench else tuple(benches),
                              sizes=sizes, args=args, binary=where.get("binary"),
                              source=where.get("source"))
            g.benchmarks = list(g.peer.benchmarks)
            g.sizes = sizes
            group_common(c, key, gdef, g, vbase)
            if "env" in gdef:
                g.env = c.str_map(gdef["env"], f"{key}.env", names="env")
            g.exclude = _exclude(c, key, gdef.get("exclude", []), {},
                                 group_variants(g, variants, vbase), vbase)
            out.append(g)
        return out

    def definition(self, g: Group) -> dict[str, Any]:
        return {"kind": "peer", **g.peer.to_dict(), "env": g.env}

    def check(self, runner, g: Group) -> None:
        """The suite's program per stack: the given binary, or built from the source with
        each stack's wrappers (cached like the core); a dry run builds nothing and shows a
        placeholder for a program still to be built."""
        key = f"{runner.spec.path}: benchmarks.{g.name}"
        peer = g.peer
        for v in runner._variants_of(g):
            if (g.name, v.stack) in runner.peer_programs:
                continue
            if runner.dry:
                runner.peer_programs[(g.name, v.stack)] = Path(peer.binary) if peer.binary \
                    else Path(f"<{peer.suite} built for {v.stack} at the first run>")
                continue
            first = peer.benchmarks[0] if peer.benchmarks else None
            try:
                if peer.binary:
                    if not Path(peer.binary).exists() and not runner.scheduler.batch:
                        raise UsageError(f"{peer.binary} does not exist")
                    root = Path(peer.binary)
                    prog = find_binary(root, peer.suite, first) if root.exists() else root
                else:
                    root = build_peer(runner.stacks[v.stack], peer.suite, peer.source,
                                      benchmark=first, log=runner.log)
                    prog = find_binary(root, peer.suite, first)
            except UsageError as exc:
                raise UsageError(f"{key}.{'binary' if peer.binary else 'source'}: {exc}") \
                    from None
            runner.peer_programs[(g.name, v.stack)] = prog

    def prepare(self, runner, cell, run_dir: Path, *, local: bool, options=None):
        g = cell.group
        program = [str(runner.peer_programs[(g.name, cell.variant.stack)]),
                   *program_args(g.peer, run_dir)]
        variant = replace(cell.variant, env={**cell.variant.env, **g.env}) if g.env \
            else cell.variant
        cmd = prepare_cell(runner.stacks[cell.variant.stack], variant, program, run_dir,
                           jsonl=None, local=local, create=not runner.dry)
        runner._profile(cell, cmd)
        step = JobStep(cell.id, run_dir, cmd.argv, cmd.env, cmd.stdout, cmd.stderr,
                       timeout_s=g.timeout or runner.spec.timeout, cell=cmd)
        return Prepared(cell, cmd, step)

    def ingest(self, runner, p, sr, outcome, nodelist) -> None:
        """IMB/OSU/NetPIPE output -> rows with the parsers `mpibench import` uses; the
        fingerprint names the suite, its version and the program."""
        g, v = p.cell.group, p.cell.variant
        out = p.cmd.stdout.read_text(errors="replace") if p.cmd.stdout.exists() else ""
        # the suite says where its table is (NetPIPE: np.out, with more digits)
        out = get_suite(g.peer.suite).output_text(out, p.cmd.stderr, p.step.run_dir)
        rows, meta = parse_output(g.peer, out, v.np)
        outcome.fingerprint["peer"] = {
            "suite": g.peer.suite, "tool": meta["tool"], "version": meta["version"],
            "program": str(runner.peer_programs.get((g.name, v.stack), "")),
            "args": list(g.peer.args)}
        if not outcome.fingerprint.get("hosts"):
            hosts, per_host = app_placement(v, runner.scheduler.batch, nodelist)
            outcome.fingerprint["hosts"] = hosts
            outcome.fingerprint["ranks_per_host"] = per_host
        outcome.records = rows
        if outcome.status != "done":
            return
        if not any(r.get("status", "ok") == "ok" for r in rows):
            outcome.status = "failed"
            outcome.reason = (f"{g.peer.suite} output has no results"
                              + (f" ({'; '.join(meta['problems'][:3])})"
                                 if meta["problems"] else ""))
            outcome.records = []
        elif meta["truncated"]:
            outcome.status, outcome.reason = "failed", f"{g.peer.suite} output is truncated"
        elif meta["problems"]:
            outcome.reason = "; ".join(meta["problems"][:3])
