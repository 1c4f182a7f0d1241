"""Exceptions that map to the CLI's exit codes (0 ok, 1 a benchmark failed, 2 bad input)."""


class MpibenchError(Exception):
    """Base class; exit_code is what the CLI returns."""

    exit_code = 1


class UsageError(MpibenchError):
    """Bad input from the user: a flag, a file, a value. One clear line, exit 2."""

    exit_code = 2


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
