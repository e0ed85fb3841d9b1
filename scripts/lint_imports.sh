#!/usr/bin/env bash
# Check the import contract of the layers ([tool.importlinter] in pyproject.toml) from the repository root.
#
#   bash scripts/lint_imports.sh [lint-imports options...]   e.g. --verbose, --contract ID
#
# probes/ and tui/ are installed as fabricdoc.probes and fabricdoc.tui (the package-dir mapping), so a
# plain `lint-imports` in the checkout finds no such modules. This copies the package in its installed
# layout to a scratch directory, runs import-linter on that copy, and exits with import-linter's status:
# non-zero when a contract is broken (or the check could not run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
if ! "$PY" -c "import importlinter" 2>/dev/null; then
  echo "lint_imports.sh: import-linter is not installed for $PY (pip install -e '.[test]')" >&2
  exit 2
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/fabricdoc-lint-imports.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
site="$scratch/site"
mkdir -p "$site"
cp -R "$root/fabricdoc" "$site/fabricdoc"
for folder in probes tui topologies; do
  cp -R "$root/$folder" "$site/fabricdoc/$folder"
done
find "$site" -name __pycache__ -type d -prune -exec rm -rf {} +
cd "$site"  # the copy, not the checkout, is what `import fabricdoc` finds from here
PYTHONPATH="$site" "$PY" -c 'import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())' \
  "$root/pyproject.toml" --no-cache --no-logo "$@"
