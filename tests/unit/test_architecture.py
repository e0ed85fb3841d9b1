"""The layers of DESIGN.md hold: the import-linter contract, a headless core, a light probe command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ("model", "fabric", "sources", "bandwidth", "analysis", "impact", "report", "scheduler", "sweep", "cli")


def test_the_import_contract_of_the_layers_is_kept():
    """Through scripts/lint_imports.sh, the one way to run the contract (README): import-linter on the
    package in its installed layout (probes/ and tui/ inside fabricdoc/). It fails, never skips, when the
    contract cannot be checked: import-linter is part of the test extra."""
    import importlib.util

    assert importlib.util.find_spec("importlinter") is not None, (
        "import-linter is not installed: the layer contract cannot be checked (pip install -e '.[test]')")
    r = subprocess.run(["bash", str(ROOT / "scripts" / "lint_imports.sh")], capture_output=True, text=True,
                       timeout=300, env={"PATH": "/usr/bin:/bin:" + str(Path(sys.executable).parent),
                                         "PYTHON": sys.executable})
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


def _loaded(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint(' '.join(sorted(m.split('.')[0] for m in sys.modules)))\n"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return set(r.stdout.split())


def test_the_core_never_loads_textual():
    imports = "\n".join(f"import fabricdoc.{name}" for name in CORE)
    imports += "\nimport pkgutil, importlib, fabricdoc\n"
    imports += ("for m in pkgutil.walk_packages(fabricdoc.__path__, 'fabricdoc.'):\n"
                "    if not m.name.startswith(('fabricdoc.tui', 'fabricdoc.__main__')):\n"
                "        importlib.import_module(m.name)\n")
    assert "textual" not in _loaded(imports)


def test_importing_fabricdoc_loads_nothing_heavy():
    loaded = _loaded("import fabricdoc; fabricdoc.__version__")
    assert not loaded & {"numpy", "scipy", "networkx", "pandas", "yaml", "textual", "rich", "jsonschema"}


def test_the_probe_command_imports_only_what_a_node_needs():
    loaded = _loaded("from fabricdoc.cli.main import build_parser\nbuild_parser()\nimport fabricdoc.sources.host")
    assert not loaded & {"numpy", "scipy", "networkx", "pandas", "textual", "jsonschema", "prometheus_client"}
