"""Results store: one SQLite file, one writer (the harness), a versioned schema.

Tables
  meta          key/value; 'schema_version'
  campaigns     one per campaign file or ad-hoc `mpibench run`
  fingerprints  what produced a result (content-addressed by a hash of its JSON)
  runs          one per cell (variant x benchmark group x params x repeat), with state
  results       one per run x benchmark x size (or per application figure of merit);
                raw samples kept as a float64 little-endian BLOB beside the summary
  imports       source files already imported (path, sha256), so re-imports do not duplicate
  profiles      one JSON profile document per profiled run

Raw output files stay in the run directory as provenance; the store holds their paths.
The schema is the ordered list of migrations in store/schema.py; opening a store made by an
earlier mpibench migrates it (see Store).
"""

from __future__ import annotations

# The Store and its helpers live in store/local.py (the SQLite store); the team archive in
# store/archive.py registers itself there for postgresql:// URLs. Importing both here keeps
# `from mpibench.store import Store` the one entry point, and Store(url) an ArchiveStore.
from mpibench.store import archive as _archive  # noqa: F401  (registers ArchiveStore)
from mpibench.store.local import (
    RESULT_COLUMNS,
    RUN_FIELDS,
    RUN_STATES,
    SCHEMA_VERSION,
    Store,
    blob_to_samples,
    db_exists,
    default_db_path,
    fingerprint_id,
    is_url,
    mask_url,
    open_db_arg,
    samples_to_blob,
    store_error,
)

__all__ = ["SCHEMA_VERSION", "Store", "RESULT_COLUMNS", "RUN_FIELDS", "RUN_STATES", "is_url",
           "mask_url", "open_db_arg", "store_error", "blob_to_samples", "db_exists",
           "default_db_path", "fingerprint_id", "samples_to_blob"]
