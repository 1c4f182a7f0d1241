"""The library's own account of its settings (mpibench.libsettings) on real captured
start-up output: Open MPI's MCA parameter dump, MPICH's debug summary, Intel MPI's
I_MPI_DEBUG lines."""

from __future__ import annotations

from pathlib import Path

from mpibench.libsettings import library_settings

DATA = Path(__file__).parent / "data"


def _read(rel: str) -> str:
    return (DATA / rel).read_text()


def test_open_mpi_mca_dump_with_where_each_value_came_from():
    s = library_settings(_read("stacks/openmpi-4.1.4-show-mca-params.txt"))["openmpi_mca"]
    # Debian's own file turns pml ucx off: a setting nobody wrote into the campaign
    assert s["pml"] == "^ucx (file (/etc/openmpi/openmpi-mca-params.conf:69))"
    assert s["btl"] == "self,vader (environment)"
    # per-launch values would make every fingerprint unique; the probe's own switch is noise
    assert not any(k in s for k in ("orte_ess_jobid", "orte_ess_vpid", "orte_tmpdir_base",
                                    "orte_top_session_dir", "mpi_show_mca_params"))
    s5 = library_settings(_read("stacks/openmpi-5.0.11-show-mca-params.txt"))["openmpi_mca"]
    assert s5 == {"btl": "self,sm (environment)"}


def test_mpich_debug_summary_sections():
    ofi = library_settings(_read("stacks/mpich-5.0.2-ofi-tcp-nolocal.txt"))
    s = ofi["mpich_debug_summary"]
    assert s["Capability set configuration: libfabric provider"].startswith("tcp")
    assert s["Capability set configuration: MPIDI_OFI_ENABLE_TAGGED"] == "1"
    assert s["collective selection: MPIR_CVAR_DEVICE_COLLECTIVES"] == "percoll"
    assert s["libfabric: FI_VERSION"] == "20005"
    assert not any(k.startswith("provider") for k in s)   # the candidate list is not a setting
    ucx = library_settings(_read("osu/osu7.4-mpich4.0.2-np2-osu_latency-debug-summary.txt"))
    u = ucx["mpich_debug_summary"]
    assert u["UCX netmod Capability: tag_bits"] == "31"
    assert u["data structure summary: sizeof(MPIR_Comm)"] == "872"
    assert not any("Latency" in k or k.startswith("#") for k in u)   # OSU's own lines


def test_intel_mpi_debug_settings():
    s = library_settings(_read("stacks/impi-2021.18.1-ofi-tcp.txt"))["intel_mpi"]
    assert s["I_MPI_FABRICS"] == "ofi" and s["libfabric provider"] == "tcp"
    assert s["libfabric version"] == "2.4.0-impi" and "I_MPI_DEBUG" not in s


def test_nothing_found_is_empty():
    assert library_settings("hello\nrank 0\n") == {}


def test_ucx_info_lines_under_open_mpi_and_mpich():
    o = library_settings(_read("stacks/openmpi-5.0.11-pml-ucx-ucx-1.20.txt"))["ucx"]
    assert o == {"version": "1.20.1", "endpoint intra-node": "tag(sysv/memory cma/memory)"}
    m = library_settings(_read("stacks/mpich-5.0.2-ucx-tcp-nolocal.txt"))["ucx"]
    assert m["version"] == "1.20.1" and m["UCX_TLS"] == "self,tcp"
    assert "UCX_LOG_LEVEL" not in m            # the probe's own switch


def test_library_settings_surface_derandomized():
    """The 'library settings output' fuzz surface (tests/support/surfaces.py) with a fixed seed:
    real captures mutated never crash the parser, and every value kept is in the text."""
    import random

    from support import surfaces as _surfaces

    surf = next(s for s in _surfaces.SURFACES if s.name == "library settings output")
    t = surf.run(random.Random(23), 300)
    assert t.tried == 300 and (t.crashes, t.misparses, t.contract) == (0, 0, 0), t.examples
