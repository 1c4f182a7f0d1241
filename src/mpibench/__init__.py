"""mpibench: benchmark, profile and compare MPI stacks and interconnects."""

__version__ = "0.1.0"
