#!/usr/bin/env python3
"""Generate PMPI wrappers from a stack's own preprocessed mpi.h.

    gen_wrappers.py --mpicc mpicc.mpich --out BUILD_DIR

Runs `<mpicc> -E -dD` on a file that includes mpi.h, finds every `int MPI_X(...)` prototype
that has a matching `PMPI_X` (MPI-4 `_c` large-count calls included where the header has
them), classifies each function by family and emits:

  BUILD/mpib_funcs.h     function ids (enum) and the function count
  BUILD/mpib_wrappers.c  name and class tables, one wrapper per function
  BUILD/mpib_funcs.txt   one line per wrapped function: name, class, byte rule (for review)

Byte rules name positional arguments of the MPI standard's signatures; every position is
checked against the parameter's declared type, so a header that disagrees gets a warning and
a calls-and-time-only wrapper instead of wrong byte counts. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

# Written by hand in mpib_runtime.c: they set up, tear down or dump the profile.
HANDWRITTEN = {"MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Abort", "MPI_Pcontrol"}

COMM_CREATE = {
    "Comm_create", "Comm_create_group", "Comm_create_from_group", "Comm_dup",
    "Comm_dup_with_info", "Comm_idup", "Comm_idup_with_info", "Comm_split", "Comm_split_type",
    "Comm_free", "Comm_disconnect", "Intercomm_create", "Intercomm_create_from_groups",
    "Intercomm_merge", "Cart_create", "Cart_sub", "Graph_create", "Dist_graph_create",
    "Dist_graph_create_adjacent", "Comm_spawn", "Comm_spawn_multiple", "Comm_accept",
    "Comm_connect", "Comm_join",
}

# base name (without MPI_ and _c) -> (class, helper, argument spec)
# Argument spec items: an int = that positional argument; "N64:i" = 1 if argument i is a
# 64-bit count array (MPI_Count) else 0. Type checks: see CHECKS.
SEND = ("send", [1, 2])
P2P = {
    "Send": ("pt2pt.send", *SEND), "Bsend": ("pt2pt.send", *SEND),
    "Ssend": ("pt2pt.send", *SEND), "Rsend": ("pt2pt.send", *SEND),
    "Isend": ("pt2pt.send", *SEND), "Ibsend": ("pt2pt.send", *SEND),
    "Issend": ("pt2pt.send", *SEND), "Irsend": ("pt2pt.send", *SEND),
    "Send_init": ("pt2pt.persistent", *SEND), "Bsend_init": ("pt2pt.persistent", *SEND),
    "Ssend_init": ("pt2pt.persistent", *SEND), "Rsend_init": ("pt2pt.persistent", *SEND),
    "Recv_init": ("pt2pt.persistent", "posted", [1, 2]),
    "Psend_init": ("pt2pt.persistent", "psend", [1, 2, 3]),
    "Precv_init": ("pt2pt.persistent", "precv", [1, 2, 3]),
    "Recv": ("pt2pt.recv", "status", [6]),
    "Irecv": ("pt2pt.recv", "posted", [1, 2]),
    "Mrecv": ("pt2pt.recv", "status", [4]),
    "Imrecv": ("pt2pt.recv", "posted", [1, 2]),
    "Sendrecv": ("pt2pt.sendrecv", "sendrecv", [1, 2, 11]),
    "Sendrecv_replace": ("pt2pt.sendrecv", "sendrecv", [1, 2, 8]),
    "Isendrecv": ("pt2pt.sendrecv", "isendrecv", [1, 2, 6, 7]),
    "Isendrecv_replace": ("pt2pt.sendrecv", "isendrecv", [1, 2, 1, 2]),
}
for _n in ("Probe", "Iprobe", "Mprobe", "Improbe"):
    P2P[_n] = ("pt2pt.probe", None, [])
for _n in ("Test", "Testall", "Testany", "Testsome", "Test_cancelled", "Request_get_status"):
    P2P[_n] = ("pt2pt.test", None, [])
for _n in ("Wait", "Waitall", "Waitany", "Waitsome"):
    P2P[_n] = ("pt2pt.wait", None, [])
for _n in ("Start", "Startall", "Pready", "Pready_range", "Pready_list", "Parrived"):
    P2P[_n] = ("pt2pt.persistent", None, [])
for _n in ("Cancel", "Request_free"):
    P2P[_n] = ("pt2pt.request", None, [])

COLL = {
    "Barrier": (None, []),
    "Bcast": ("bcast", [1, 2, 3, 4]),
    "Reduce": ("reduce", [2, 3, 5, 6]),
    "Allreduce": ("allreduce", [2, 3]),
    "Scan": ("allreduce", [2, 3]),
    "Exscan": ("allreduce", [2, 3]),
    "Reduce_scatter_block": ("reduce_scatter_block", [2, 3, 5]),
    "Reduce_scatter": ("reduce_scatter", [2, "N64:2", 3, 5]),
    "Allgather": ("allgather", [0, 1, 2, 4, 5, 6]),
    "Allgatherv": ("allgatherv", [0, 1, 2, 4, "N64:4", 6, 7]),
    "Gather": ("gather", [0, 1, 2, 4, 5, 6, 7]),
    "Gatherv": ("gatherv", [0, 1, 2, 4, "N64:4", 6, 7, 8]),
    "Scatter": ("scatter", [1, 2, 3, 4, 5, 6, 7]),
    "Scatterv": ("scatterv", [1, "N64:1", 3, 4, 5, 6, 7, 8]),
    "Alltoall": ("alltoall", [0, 1, 2, 4, 5, 6]),
    "Alltoallv": ("alltoallv", [0, 1, "N64:1", 3, 5, "N64:5", 7, 8]),
    "Alltoallw": ("alltoallw", [0, 1, "N64:1", 3, 5, "N64:5", 7, 8]),
}
# Peers from the communicator's topology (mpib_bytes.c); no MPI_IN_PLACE for these.
NEIGHBOR = {
    "Neighbor_allgather": ("nb_allgather", [1, 2, 4, 5, 6]),
    "Neighbor_allgatherv": ("nb_allgatherv", [1, 2, 4, "N64:4", 6, 7]),
    "Neighbor_alltoall": ("nb_alltoall", [1, 2, 4, 5, 6]),
    "Neighbor_alltoallv": ("nb_alltoallv", [1, "N64:1", 3, 5, "N64:5", 7, 8]),
    "Neighbor_alltoallw": ("nb_alltoallw", [1, "N64:1", 3, 5, "N64:5", 7, 8]),
}

RMA = {
    "Put": ("put", [1, 2]), "Rput": ("put", [1, 2]),
    "Get": ("get", [1, 2]), "Rget": ("get", [1, 2]),
    "Accumulate": ("put", [1, 2]), "Raccumulate": ("put", [1, 2]),
    "Get_accumulate": ("get_accumulate", [1, 2, 4, 5]),
    "Rget_accumulate": ("get_accumulate", [1, 2, 4, 5]),
    "Fetch_and_op": ("fetch_and_op", [2]),
    "Compare_and_swap": ("fetch_and_op", [3]),
}

# helper -> expected type fragment of each non-"N64" argument, in order.
CHECKS = {
    "send": ["count", "MPI_Datatype"],
    "posted": ["count", "MPI_Datatype"],
    "psend": ["int", "count", "MPI_Datatype"],
    "precv": ["int", "count", "MPI_Datatype"],
    "status": ["MPI_Status"],
    "sendrecv": ["count", "MPI_Datatype", "MPI_Status"],
    "isendrecv": ["count", "MPI_Datatype", "count", "MPI_Datatype"],
    "bcast": ["count", "MPI_Datatype", "int", "MPI_Comm"],
    "reduce": ["count", "MPI_Datatype", "int", "MPI_Comm"],
    "allreduce": ["count", "MPI_Datatype"],
    "reduce_scatter_block": ["count", "MPI_Datatype", "MPI_Comm"],
    "reduce_scatter": ["counts", "MPI_Datatype", "MPI_Comm"],
    "allgather": ["void", "count", "MPI_Datatype", "count", "MPI_Datatype", "MPI_Comm"],
    "allgatherv": ["void", "count", "MPI_Datatype", "counts", "MPI_Datatype", "MPI_Comm"],
    "gather": ["void", "count", "MPI_Datatype", "count", "MPI_Datatype", "int", "MPI_Comm"],
    "gatherv": ["void", "count", "MPI_Datatype", "counts", "MPI_Datatype", "int", "MPI_Comm"],
    "scatter": ["count", "MPI_Datatype", "void", "count", "MPI_Datatype", "int", "MPI_Comm"],
    "scatterv": ["counts", "MPI_Datatype", "void", "count", "MPI_Datatype", "int", "MPI_Comm"],
    "alltoall": ["void", "count", "MPI_Datatype", "count", "MPI_Datatype", "MPI_Comm"],
    "alltoallv": ["void", "counts", "MPI_Datatype", "counts", "MPI_Datatype", "MPI_Comm"],
    "alltoallw": ["void", "counts", "MPI_Datatype", "counts", "MPI_Datatype", "MPI_Comm"],
    "nb_allgather": ["count", "MPI_Datatype", "count", "MPI_Datatype", "MPI_Comm"],
    "nb_allgatherv": ["count", "MPI_Datatype", "counts", "MPI_Datatype", "MPI_Comm"],
    "nb_alltoall": ["count", "MPI_Datatype", "count", "MPI_Datatype", "MPI_Comm"],
    "nb_alltoallv": ["counts", "MPI_Datatype", "counts", "MPI_Datatype", "MPI_Comm"],
    "nb_alltoallw": ["counts", "MPI_Datatype", "counts", "MPI_Datatype", "MPI_Comm"],
    "put": ["count", "MPI_Datatype"],
    "get": ["count", "MPI_Datatype"],
    "get_accumulate": ["count", "MPI_Datatype", "count", "MPI_Datatype"],
    "fetch_and_op": ["MPI_Datatype"],
    "io_write": ["count", "MPI_Datatype"],
    "io_posted": ["count", "MPI_Datatype"],
}
# Non-blocking receives whose request is followed to completion: base -> request argument.
TRACK_POST = {"Irecv": 6, "Imrecv": 4}
# Completion calls: base -> (count, requests, status(es), "single"|"array", mode, index,
# outcount, indices); ints are argument positions, "*i" dereferences argument i.
WAITS = {
    "Wait": ("1", 0, 1, "single", "MPIB_TRK_ALL", "0", "0", "NULL"),
    "Test": ("1", 0, 2, "single", "MPIB_TRK_ALL", "0", "0", "NULL"),
    "Waitall": (0, 1, 2, "array", "MPIB_TRK_ALL", "0", "0", "NULL"),
    "Testall": (0, 1, 3, "array", "MPIB_TRK_ALL", "0", "0", "NULL"),
    "Waitany": (0, 1, 3, "single", "MPIB_TRK_ANY", "*2", "0", "NULL"),
    "Testany": (0, 1, 4, "single", "MPIB_TRK_ANY", "*2", "0", "NULL"),
    "Waitsome": (0, 1, 4, "array", "MPIB_TRK_SOME", "0", "*2", 3),
    "Testsome": (0, 1, 4, "array", "MPIB_TRK_SOME", "0", "*2", 3),
}
# Helpers that read the completed status after the call (the wrapper substitutes its own
# status when the caller passed MPI_STATUS_IGNORE, so received bytes are always known).
STATUS_HELPERS = {"status": 0, "sendrecv": 2}


class Param:
    def __init__(self, decl: str, index: int):
        self.decl = decl.strip()
        m = re.search(r"([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)$", self.decl)
        words = re.findall(r"[A-Za-z_]\w*", self.decl)
        type_words = {"const", "int", "char", "void", "long", "unsigned", "short", "double",
                      "float", "struct", "volatile"}
        if m and len(words) >= 2 and m.group(1) not in type_words \
                and not m.group(1).startswith("MPI_") and "(" not in self.decl:
            self.name = m.group(1)
            self.type = self.decl[: m.start(1)] + "__NAME__" + m.group(2)
        elif "(" in self.decl:  # function pointer parameter: name inside (*name)
            fm = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", self.decl)
            if not fm:
                raise ValueError(f"cannot parse parameter {decl!r}")
            self.name = fm.group(1)
            self.type = self.decl[: fm.start(1)] + "__NAME__" + self.decl[fm.end(1):]
        else:  # unnamed parameter: name it
            self.name = f"mpib_a{index}"
            self.type = self.decl + " __NAME__"
        self.name = "mpib_p_" + self.name  # never collides with our locals or macros

    @property
    def bare_type(self) -> str:
        return self.type.replace("__NAME__", "").strip()

    def declaration(self) -> str:
        return self.type.replace("__NAME__", self.name)

    def is_array(self) -> bool:
        return "[" in self.type or self.bare_type.endswith("*")


class Func:
    def __init__(self, ret: str, name: str, params: list[Param], variadic: bool):
        self.ret, self.name, self.params, self.variadic = ret, name, params, variadic

    @property
    def base(self) -> str:
        b = self.name[len("MPI_"):]
        return b[:-2] if b.endswith("_c") else b


def strip_attributes(text: str) -> str:
    out, i = [], 0
    while True:
        j = text.find("__attribute__", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k = text.find("(", j)
        depth, p = 0, k
        while p < len(text):
            if text[p] == "(":
                depth += 1
            elif text[p] == ")":
                depth -= 1
                if depth == 0:
                    break
            p += 1
        i = p + 1


def strip_braces(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        if ch == "{":
            if depth == 0:
                out.append(";")
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def split_top(s: str, sep: str = ",") -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


PROTO = re.compile(r"^(?:extern\s+)?([A-Za-z_][\w\s\*]*?)\s*\b((?:P)?MPI_\w+)\s*\((.*)\)\s*$", re.S)


def parse_header(text: str) -> tuple[list[Func], set[str], dict[str, str]]:
    macros = {}
    body = []
    for line in text.splitlines():
        if line.startswith("#"):
            m = re.match(r"#define\s+(MPI_VERSION|MPI_SUBVERSION)\s+(\S+)", line)
            if m:
                macros[m.group(1)] = m.group(2)
            continue
        body.append(line)
    text = strip_braces(strip_attributes("\n".join(body)))
    funcs, pmpi = [], set()
    for stmt in text.split(";"):
        stmt = " ".join(stmt.split())
        m = PROTO.match(stmt)
        if not m:
            continue
        ret, name, args = m.group(1).strip(), m.group(2), m.group(3).strip()
        if "typedef" in ret:
            continue
        if name.startswith("PMPI_"):
            pmpi.add(name[1:])
            continue
        variadic = False
        params: list[Param] = []
        if args and args != "void":
            raw = [a.strip() for a in split_top(args)]
            if raw and raw[-1] == "...":
                variadic = True
                raw = raw[:-1]
            params = [Param(a, i) for i, a in enumerate(raw)]
        funcs.append(Func(ret, name, params, variadic))
    return funcs, pmpi, macros


def _type_ok(param: Param, want: str) -> bool:
    t = param.bare_type + ("[]" if "[" in param.type else "")
    if want == "count":
        return not param.is_array() and ("MPI_Count" in t or re.search(r"\bint\b", t) is not None)
    if want == "counts":
        return param.is_array() and ("MPI_Count" in t or re.search(r"\bint\b", t) is not None)
    if want == "void":
        return "void" in t
    if want == "int":
        return re.search(r"\bint\b", t) is not None and not param.is_array()
    if want == "MPI_Datatype":
        return "MPI_Datatype" in t  # scalar or array (alltoallw)
    return want in t


def byte_rule(fn: Func) -> tuple[str, str | None, list]:
    """(class, helper, argument spec) for a function."""
    base = fn.base
    if base in P2P:
        return P2P[base]
    blocking = base
    prefix = "coll.blocking"
    if base.endswith("_init") and base[:-5] in COLL:
        blocking, prefix = base[:-5], "coll.persistent"
    elif base.startswith("I") and base[1:].capitalize() in COLL:
        blocking, prefix = base[1:].capitalize(), "coll.nonblocking"
    if blocking in COLL:
        helper, spec = COLL[blocking]
        return (prefix, helper, spec)
    for nb, (helper, spec) in NEIGHBOR.items():
        if base in (nb, "I" + nb.lower(), nb + "_init"):
            return ("coll.neighbor", helper, spec)
    if base in RMA:
        return ("rma", *RMA[base])
    if base.startswith("Win_"):
        return ("rma", None, [])
    if base.startswith("File_"):
        return io_rule(fn)
    if base in COMM_CREATE:
        return ("comm", None, [])
    return ("other", None, [])


def io_rule(fn: Func) -> tuple[str, str | None, list]:
    base = fn.base
    types = [i for i, p in enumerate(fn.params) if "MPI_Datatype" in p.bare_type]
    status = [i for i, p in enumerate(fn.params) if "MPI_Status" in p.bare_type]
    if "read" in base.lower() and status:
        return ("io", "status", [status[0]])
    if "read" in base.lower() and len(types) == 1:
        return ("io", "io_posted", [types[0] - 1, types[0]])
    if "write" in base.lower() and len(types) == 1:
        return ("io", "io_write", [types[0] - 1, types[0]])
    return ("io", None, [])


def resolve(fn: Func, helper: str | None, spec: list, warn) -> tuple[str | None, list]:
    if helper is None:
        return None, []
    checks = iter(CHECKS.get(helper, []))
    args = []
    for item in spec:
        if isinstance(item, str) and item.startswith("N64:"):
            idx = int(item[4:])
            if idx >= len(fn.params):
                warn(f"{fn.name}: argument {idx} missing; bytes not counted")
                return None, []
            args.append("1" if "MPI_Count" in fn.params[idx].bare_type else "0")
            continue
        if item >= len(fn.params):
            warn(f"{fn.name}: argument {item} missing; bytes not counted")
            return None, []
        want = next(checks, None)
        if want and not _type_ok(fn.params[item], want):
            warn(f"{fn.name}: argument {item} is {fn.params[item].decl!r}, expected {want}; "
                 "bytes not counted")
            return None, []
        args.append(item)
    return helper, args


def _arg(fn: Func, spec) -> str:
    if isinstance(spec, int):
        return fn.params[spec].name
    if spec.startswith("*") and spec[1:].isdigit():
        return "*" + fn.params[int(spec[1:])].name
    return spec


def _waits_ok(fn: Func) -> bool:
    count, reqs, st, kind, _, index, outcount, indices = WAITS[fn.base]
    try:
        ok = "MPI_Request" in fn.params[reqs].bare_type and \
            "MPI_Status" in fn.params[st].bare_type
        for spec in (count, index, outcount, indices):
            if isinstance(spec, str) and spec.startswith("*"):
                spec = int(spec[1:])
            if isinstance(spec, int):
                ok = ok and "int" in fn.params[spec].bare_type
        return ok
    except IndexError:
        return False


def emit_wrapper(fn: Func, fid: str, helper: str | None, args: list, warn=None) -> str:
    decl = ", ".join(p.declaration() for p in fn.params) or "void"
    names = [p.name for p in fn.params]
    call_names = list(names)
    lines = [f"int {fn.name}({decl})", "{"]
    pre, post = [], []
    waits = fn.base in WAITS and not fn.name.endswith("_c")
    if waits and not _waits_ok(fn):
        if warn:
            warn(f"{fn.name}: unexpected signature; completed receives not followed")
        waits = False
    if waits:
        count, reqs, st, kind, mode, index, outcount, indices = WAITS[fn.base]
        sname = names[st]
        pre.append(f"    int mpib_tr = mpib_track_on ? mpib_track_pre({_arg(fn, count)}, "
                   f"{names[reqs]}) : 0;")
        if kind == "single":
            pre.append(f"    MPI_Status mpib_st1, *mpib_sp = {sname};")
            pre.append(f"    if (mpib_tr && {sname} == MPI_STATUS_IGNORE) mpib_sp = &mpib_st1;")
        else:
            pre.append(f"    MPI_Status *mpib_sp = {sname};")
            pre.append(f"    if (mpib_tr && {sname} == MPI_STATUSES_IGNORE) "
                       "mpib_sp = mpib_track_statuses();")
        call_names[st] = "mpib_sp"
        post.append(f"    if (mpib_tr) mpib_track_done({_arg(fn, count)}, {names[reqs]}, mpib_sp, "
                    f"{mode}, {_arg(fn, index)}, {_arg(fn, outcount)}, {_arg(fn, indices)}, "
                    "mpib_rc);")
    if fn.base == "Request_free" and fn.params and "MPI_Request" in fn.params[0].bare_type:
        pre.append(f"    if (mpib_track_on) mpib_track_forget(*{names[0]});")
    if helper in STATUS_HELPERS:
        si = args[STATUS_HELPERS[helper]]
        sname = names[si]
        pre.append(f"    MPI_Status mpib_st_local, *mpib_sp = ({sname} == MPI_STATUS_IGNORE) "
                   f"? &mpib_st_local : {sname};")
        call_names[si] = "mpib_sp"
    call = f"PMPI_{fn.name[4:]}({', '.join(call_names)})"
    lines.append(f"    if (MPIB_SKIP()) return PMPI_{fn.name[4:]}({', '.join(names)});")
    lines += pre
    lines.append("    mpib_bytes_t mpib_b = {0, 0, 0, 0};")
    lines.append("    MPIB_ENTER();")
    lines.append(f"    int mpib_rc = {call};")
    lines.append("    MPIB_LEAVE();")
    if helper:
        cargs = []
        for j, a in enumerate(args):
            if isinstance(a, str):
                cargs.append(a)
            elif helper in STATUS_HELPERS and j == STATUS_HELPERS[helper]:
                cargs.append("mpib_sp")
            else:
                p = fn.params[a]
                if _type_ok(p, "count"):
                    cargs.append(f"(int64_t){p.name}")
                else:
                    cargs.append(p.name)
        post.append(f"    if (mpib_rc == MPI_SUCCESS) mpib_b_{helper}(&mpib_b, {', '.join(cargs)});")
    lines += post
    lines.append(f"    MPIB_RECORD({fid}, &mpib_b);")
    ri = TRACK_POST.get(fn.base)
    if ri is not None and ri < len(fn.params) and "MPI_Request" in fn.params[ri].bare_type:
        lines.append(f"    if (mpib_rc == MPI_SUCCESS && mpib_track_on) mpib_track_post({fid}, "
                     f"*{names[ri]}, &mpib_b, mpib_t1 - mpib_t0);")
    lines.append("    return mpib_rc;")
    lines.append("}")
    return "\n".join(lines)


def preprocess(mpicc: str) -> str:
    with tempfile.TemporaryDirectory(prefix="mpib-gen-") as tmp:
        src = os.path.join(tmp, "inc.c")
        with open(src, "w") as f:
            f.write("#include <mpi.h>\n")
        argv = shlex.split(mpicc) + ["-E", "-dD", src]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            sys.exit(f"gen_wrappers: {' '.join(argv)} failed:\n{res.stderr}")
        return res.stdout


def generate(text: str, out: str, quiet: bool = False) -> dict:
    funcs, pmpi, macros = parse_header(text)
    warnings: list[str] = []
    seen, chosen = set(), []
    for fn in funcs:
        if fn.name in seen or fn.name in HANDWRITTEN or fn.ret != "int" or fn.variadic:
            continue
        if fn.name not in pmpi:  # no profiling entry point: cannot wrap
            continue
        seen.add(fn.name)
        chosen.append(fn)
    chosen.sort(key=lambda f: f.name)
    missing = [n for n in HANDWRITTEN if n not in pmpi]
    if missing:
        sys.exit(f"gen_wrappers: header lacks PMPI entry points {sorted(missing)}")

    ids, wrappers, table = [], [], []
    for fn in chosen:
        cls, helper, spec = byte_rule(fn)
        helper, args = resolve(fn, helper, spec, warnings.append)
        fid = "MPIB_F_" + fn.name
        ids.append(fid)
        wrappers.append(emit_wrapper(fn, fid, helper, args, warnings.append))
        table.append((fn.name, cls, helper or "-"))
    # Handwritten functions still get ids so the runtime can record them.
    extra = ["MPI_Abort", "MPI_Pcontrol"]
    for name in extra:
        ids.append("MPIB_F_" + name)
        table.append((name, "other", "-"))

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "mpib_funcs.h"), "w") as f:
        f.write("/* Generated by profiler/gen_wrappers.py from this stack's mpi.h. */\n")
        f.write("#ifndef MPIB_FUNCS_H\n#define MPIB_FUNCS_H\n")
        f.write("enum mpib_fid {\n")
        for fid in ids:
            f.write(f"    {fid},\n")
        f.write("    MPIB_NFUNCS\n};\n")
        f.write(f"#define MPIB_HEADER_MPI_VERSION \"{macros.get('MPI_VERSION', '?')}."
                f"{macros.get('MPI_SUBVERSION', '?')}\"\n")
        f.write("extern const char *const mpib_fn_name[MPIB_NFUNCS];\n")
        f.write("extern const char *const mpib_fn_class[MPIB_NFUNCS];\n")
        f.write("#endif\n")
    with open(os.path.join(out, "mpib_wrappers.c"), "w") as f:
        f.write("/* Generated by profiler/gen_wrappers.py from this stack's mpi.h. */\n")
        f.write('#include "mpib_internal.h"\n\n')
        f.write("const char *const mpib_fn_name[MPIB_NFUNCS] = {\n")
        for name, _, _ in table:
            f.write(f'    "{name}",\n')
        f.write("};\n")
        f.write("const char *const mpib_fn_class[MPIB_NFUNCS] = {\n")
        for _, cls, _ in table:
            f.write(f'    "{cls}",\n')
        f.write("};\n\n")
        f.write("\n\n".join(wrappers))
        f.write("\n")
    with open(os.path.join(out, "mpib_funcs.txt"), "w") as f:
        for name, cls, helper in table:
            f.write(f"{name}\t{cls}\t{helper}\n")
    for w in warnings:
        print(f"gen_wrappers: warning: {w}", file=sys.stderr)
    if not quiet:
        large = sum(1 for fn in chosen if fn.name.endswith("_c"))
        print(f"gen_wrappers: {len(chosen)} wrappers ({large} large-count _c), "
              f"MPI {macros.get('MPI_VERSION', '?')}.{macros.get('MPI_SUBVERSION', '?')} header")
    return {"wrapped": len(chosen), "warnings": warnings}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpicc", help="compiler wrapper whose mpi.h is used")
    ap.add_argument("--preprocessed", help="use this already preprocessed header instead")
    ap.add_argument("--out", required=True, help="directory for the generated files")
    a = ap.parse_args(argv)
    if not (a.mpicc or a.preprocessed):
        ap.error("give --mpicc or --preprocessed")
    if a.preprocessed:
        with open(a.preprocessed) as f:
            text = f.read()
    else:
        text = preprocess(a.mpicc)
    generate(text, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
