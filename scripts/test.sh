#!/usr/bin/env bash
# Install everything the test suite needs (Debian packages, the Python package with
# its test and torch extras) and run the whole suite. Needs root for apt, network
# namespaces and ibsim.
#
#   bash scripts/test.sh                  ruff, then the unit tests on every core (pytest-xdist),
#                                         then the integration tests serially; fails if either fails
#   bash scripts/test.sh [pytest args...] ruff, then one serial pytest with exactly these args
#                                         (e.g. tests/unit/report, -m ibsim, -k drain)
#
# FABRICDOC_TEST_WORKERS sets the unit run's workers (default: auto, one per core; 0 runs it serially).
# The integration tests stay serial: they share namespace names, ports and ibsim's client cap.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(ibsim-utils opensm infiniband-diags iproute2 ethtool nftables tcpdump slurm-wlm munge tmux prometheus)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The tests start their own Prometheus on a free loopback port: the packaged service this
  # install may have started (on :9090) is not needed, so the one we just installed is stopped.
  if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null \
      && systemctl is-active --quiet prometheus 2>/dev/null; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
fi

PY=${PYTHON:-python3}
echo "== installing fabricdoc with its test and torch extras"
# The CPU build of torch is installed by exact version first: a bare range would pull a CUDA build.
extras="test"
if "$PY" -m pip install -q --disable-pip-version-check "torch==2.13.0"; then
  extras="test,torch"
else
  echo "   (torch 2.13.0 CPU build not available: gloo tests will be skipped)"
fi
"$PY" -m pip install -q --disable-pip-version-check -e ".[$extras]"

echo "== install took $SECONDS s"

echo "== ruff"
ruff_start=$SECONDS
"$PY" -m ruff check .
echo "== ruff took $((SECONDS - ruff_start)) s"

if [ "$#" -gt 0 ]; then
  echo "== pytest $*"
  exec "$PY" -m pytest "$@"
fi

phase() {  # phase NAME pytest-args...: run one pytest, print its wall time, return its exit status
  local name=$1 start=$SECONDS rc=0
  shift
  echo "== pytest: $name"
  "$PY" -m pytest "$@" || rc=$?
  echo "== pytest: $name took $((SECONDS - start)) s (exit $rc)"
  return "$rc"
}
unit_rc=0 integration_rc=0
# --durations lists each run's slowest tests, so a test that starts costing minutes shows up in CI's log.
# worksteal: an idle worker takes queued tests from a busy one (the unit tests' times vary 1000-fold).
phase "unit tests (${FABRICDOC_TEST_WORKERS:-auto} workers)" -n "${FABRICDOC_TEST_WORKERS:-auto}" --dist worksteal \
  --durations=15 tests/unit || unit_rc=$?
phase "integration tests (serial)" --durations=15 tests/integration || integration_rc=$?
if [ "$unit_rc" -ne 0 ] || [ "$integration_rc" -ne 0 ]; then
  echo "== FAILED: unit exit $unit_rc, integration exit $integration_rc"
  exit 1
fi
