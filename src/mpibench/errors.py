"""Exceptions that map to the CLI's exit codes (0 ok, 1 a benchmark failed, 2 bad input)."""

# Everything str.splitlines() breaks a line at: a refusal quotes user text (a path holding a
# newline, a value with U+2028) and must still be one line.
_LINE_BREAKS = {c: c.encode("unicode_escape").decode() for c in
                "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
_LINE_BREAKS_TABLE = str.maketrans(_LINE_BREAKS)


def one_line(text: str) -> str:
    """text with every line break escaped (\\n, \\u2028, ...): an error message stays one
    line whatever user value it quotes."""
    return str(text).translate(_LINE_BREAKS_TABLE)


class MpibenchError(Exception):
    """Base class; exit_code is what the CLI returns."""

    exit_code = 1


class UsageError(MpibenchError):
    """Bad input from the user: a flag, a file, a value. One clear line, exit 2 (line breaks
    in the user text it quotes are escaped here, so it is one line wherever it is shown)."""

    exit_code = 2

    def __init__(self, message: object = "", *args: object):
        super().__init__(one_line(message) if isinstance(message, str) else message, *args)


class StackError(UsageError):
    """A requested MPI stack is missing or broken."""


class BuildError(MpibenchError):
    """Compiling the core (or profiler) with a stack's wrapper failed."""

    exit_code = 2

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class BenchmarkFailure(MpibenchError):
    """A benchmark, validation or launch failed at run time."""

    exit_code = 1
