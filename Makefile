# The front door: make demo, make test, make bench, make lint. Each runs setup first.
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup setup-intel demo test test-unit test-system bench lint clean

setup:
	@bash scripts/setup.sh

# Intel MPI 2021.18.1 from PyPI (impi-rt + impi-devel, ~300 MB, Intel's licence) beside the rest
setup-intel:
	@MPIBENCH_INTEL=1 bash scripts/setup.sh

demo: setup
	$(VENV)/bin/mpibench demo

# Both tiers. test-unit: no MPI, Slurm, PBS, compiler, GROMACS or browser (tests/conftest.py
# fails a unit test that starts one); test-system: the rest.
test: setup
	$(PY) -m pytest -q tests

test-unit: setup
	$(PY) -m pytest -q -m "not system" tests

test-system: setup
	$(PY) -m pytest -q -m system tests

bench: setup
	$(PY) bench/run_all.py

lint: setup
	$(VENV)/bin/ruff check src tests bench

clean:
	rm -rf .mpibench-cache demo-results build
