"""What `pip install .` ships: every subpackage and data file the CLI needs, under fabricdoc only."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory):
    # Build from a clean copy: an in-tree build/ left by an earlier build would hide a missing package.
    src = tmp_path_factory.mktemp("src") / "fabricdoc"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache", "tests", ".hypothesis"))
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
        capture_output=True, text=True, timeout=300,
    )
    if r.returncode != 0 and "No module named" in r.stderr:
        pytest.skip(f"cannot build a wheel here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr
    (wheel,) = out.glob("fabricdoc-*.whl")
    return set(zipfile.ZipFile(wheel).namelist())


def test_every_source_module_is_in_the_wheel(wheel_files):
    mapping = {"fabricdoc": "fabricdoc", "probes": "fabricdoc/probes", "tui": "fabricdoc/tui",
               "topologies": "fabricdoc/topologies"}
    for folder, target in mapping.items():
        for path in (ROOT / folder).rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            shipped = f"{target}/{path.relative_to(ROOT / folder).as_posix()}"
            assert shipped in wheel_files, f"{shipped} is missing from the wheel"


def test_data_files_ship_and_nothing_lands_outside_fabricdoc(wheel_files):
    assert "fabricdoc/topologies/demo.yaml" in wheel_files
    assert "fabricdoc/tui/fabricdoc.tcss" in wheel_files
    assert "fabricdoc/analysis/counter_rules.toml" in wheel_files
    assert "fabricdoc/model/faults.toml" in wheel_files  # the fault registry
    tops = {name.split("/", 1)[0] for name in wheel_files}
    assert {t for t in tops if not t.startswith("fabricdoc")} == set()
