#!/usr/bin/env bash
# Install everything the test suite needs (Debian packages, the Python package with
# its test and torch extras) and run the whole suite. Needs root for apt, network
# namespaces and ibsim. Usage: bash scripts/test.sh [pytest args...]
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

echo "== ruff"
"$PY" -m ruff check .

echo "== pytest"
exec "$PY" -m pytest "$@"
