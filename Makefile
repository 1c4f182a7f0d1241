# The front door: make demo, make test, make bench, make lint. Each runs setup first.
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test bench lint clean

setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/bin/mpibench demo

test: setup
	$(PY) -m pytest -q tests

bench: setup
	$(PY) bench/run_all.py

lint: setup
	$(VENV)/bin/ruff check src tests bench

clean:
	rm -rf .mpibench-cache demo-results build
