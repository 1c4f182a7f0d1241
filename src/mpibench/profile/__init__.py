"""Profiled launches, by job:

- run.py: build the PMPI profiler per stack and run a command under it
- document.py: the profile document: collect and merge what the ranks wrote, store it, load
  it, print it
- buckets.py: which calls are messages, and message-size buckets of a document
- diff.py: profiled launches in the store and the launch-level diff of two variants

The C library is in profiler/; the document's schema in docs/profiler.md.
"""

from mpibench.profile import buckets, diff, document, run  # noqa: F401 - profile.<job>.name
