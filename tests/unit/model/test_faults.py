"""The fault registry: every fault the code can emit has its row, and each row is whole and read everywhere."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

from fabricdoc.analysis.actions import action_for
from fabricdoc.errors import ConfigError
from fabricdoc.model.faults import KINDS, SHORT_CHARS, fault, registry, registry_from_toml
from fabricdoc.model.findings import Finding
from fabricdoc.model.severity import SEVERITIES

ROOT = Path(__file__).resolve().parents[3]
SOURCES = [p for d in ("fabricdoc", "probes") for p in (ROOT / d).rglob("*.py")]


def _emitted_in_code() -> dict[str, str]:
    """Fault names the code writes: a ``Finding(...)``'s fault (4th argument or ``fault=``), a value
    assigned to ``fault`` or to a ``*_FAULT`` constant, and the faults of ``*_FAULTS`` tables; each with
    where it was seen."""
    out: dict[str, str] = {}
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                     and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                     for t in n.targets if isinstance(t, ast.Name)}

        def note(node: ast.AST, path: Path = path, constants: dict[str, str] = constants) -> None:
            if isinstance(node, ast.IfExp):
                note(node.body)
                note(node.orelse)
            elif isinstance(node, ast.Name) and node.id in constants:
                out.setdefault(constants[node.id], f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.setdefault(node.value, f"{path.relative_to(ROOT)}:{node.lineno}")

        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Finding":
                if len(node.args) >= 4:
                    note(node.args[3])
                for kw in node.keywords:
                    if kw.arg == "fault":
                        note(kw.value)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    pairs = (zip(target.elts, node.value.elts, strict=False) if isinstance(target, ast.Tuple)
                             and isinstance(node.value, ast.Tuple) else [(target, node.value)])
                    for t, value in pairs:
                        name = getattr(t, "id", getattr(t, "attr", ""))
                        if name == "fault" or name.endswith("_FAULT"):
                            note(value)
                        if name.endswith("_FAULTS") and isinstance(value, ast.Dict):
                            for v in value.values:
                                note(v.elts[0] if isinstance(v, ast.Tuple) else v)
    return out


def _emitted_by_rules() -> set[str]:
    """Fault names the packaged counter rules give."""
    text = (ROOT / "fabricdoc" / "analysis" / "counter_rules.toml").read_text(encoding="utf-8")
    return set(re.findall(r'^fault = "([a-z_]+)"', text, re.M))


def test_every_fault_the_analysis_or_a_counter_rule_emits_has_its_row():
    emitted = _emitted_in_code()
    rules = _emitted_by_rules()
    # The scan must see the code's faults, or this test would pass on nothing.
    assert {"degraded_bandwidth", "hung", "load_collapse", "incast_collapse", "gpu_error", "nic_firmware",
            "nccl_error", "slow_unexplained", "flapping", "data_corruption"} <= set(emitted)
    assert {"symbol_errors", "congestion", "pause_storm"} <= rules
    missing = {f: where for f, where in emitted.items() if f not in registry().rows}
    assert not missing, f"faults without a row in fabricdoc/model/faults.toml: {missing}"
    assert rules <= set(registry().rows)


def test_every_row_says_what_it_means_and_has_a_short_name_its_own_that_fits_the_reason_column():
    rows = registry().rows.values()
    assert all(r.words and len(r.short) <= SHORT_CHARS for r in rows)
    assert len({r.short for r in rows}) == len(rows)


def test_every_fault_and_kind_gets_its_most_specific_rule_and_no_two_rules_tie():
    rules = registry().action_rules()
    for name, kind, ends, sev in itertools.product([*registry().rows, "a_user_rule_fault"], KINDS,
                                                   ("switches", "host", None), SEVERITIES):
        f = Finding("", kind, "x", name, sev, 0.9, [], None, [])
        matching = [r for r in rules if r.matches(f, ends)]
        assert matching, (name, kind, ends, sev)  # the "*" fallback catches the rest
        top = max(r.specificity for r in matching)
        best = [r for r in matching if r.specificity == top]
        assert len(best) == 1, (name, kind, ends, sev, best)
        if ends is None:
            assert action_for(f) == best[0].action


def test_a_switch_gets_the_switch_rule_unless_its_fault_has_one_for_switches():
    flapping = Finding("", "switch", "spine01", "flapping", "error", 0.9, [], None, ["spine01"])
    dead = Finding("", "switch", "spine01", "dead", "critical", 0.9, [], None, ["spine01"])
    assert "line card" in action_for(flapping).do
    assert "power" in action_for(dead).do


def test_the_rules_read_from_the_registry():
    reg = registry()
    assert reg.names(retest=True) == {"degraded_bandwidth", "hung"}
    assert reg.names(trained_low=True) == {"width_degraded", "speed_degraded"}
    assert {"congestion", "pause_storm", "incast_collapse"} <= reg.names(isolate=False)
    assert fault("down").capacity == "down" and fault("hung").capacity == "untested"
    assert reg.naming_order()[:2] == ("dead", "down")
    classes = [c.fault for c in reg.classes()]
    assert classes.index("congestion") < classes.index("pause_storm")  # the order they apply in


def test_an_undeclared_fault_gets_defaults_and_a_derived_short_name():
    info = fault("a_user_rule_fault_name")
    assert info.short.startswith("a_user_") and len(info.short) == SHORT_CHARS
    assert info.capacity == "rate" and info.isolate and not info.retest
    assert fault("tiny").short == "tiny"


def test_the_readme_lists_every_fault_with_its_short_name():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for r in registry().rows.values():
        assert f"| `{r.name}` | `{r.short}` |" in readme, r.name


GOOD = 'words = "w"\n[[x.action]]\ndo = "y"\nwho = "network"\nurgency = "now"\n'


@pytest.mark.parametrize(("text", "message"), [
    ('[x]\n' + GOOD.replace('who = "network"', 'who = "the intern"'), "who 'the intern'"),
    ('[x]\n' + GOOD.replace('urgency = "now"', 'urgency = "soon"'), "urgency 'soon'"),
    ('[x]\n' + GOOD.replace('do = "y"\n', ''), "missing key 'do'"),
    ('[x]\n' + GOOD + 'colour = "red"\n', "unknown key 'colour'"),
    ('[x]\n' + GOOD + 'kind = ["cable"]\n', "unknown kind 'cable'"),
    ('[x]\n' + GOOD + 'ends = "both"\n', "ends 'both'"),
    ('[x]\ncolour = "red"\n' + GOOD, "[x]: unknown key 'colour'"),
    ('[x]\nshort = "s"\n', "missing key 'words'"),
    ('[a_long_fault_name]\nwords = "w"\n', "needs a 'short'"),
    ('[x]\nwords = "w"\ncapacity = "half"\n', "capacity 'half'"),
    ('[x]\nwords = "w"\nretest = "yes"\n', "'retest' must be true or false"),
    ('[x]\nwords = "w"\nabsorbs = ["nothing_declared"]\n', "no row for fault 'nothing_declared'"),
    ('[x]\nwords = "w"\nabsorbs = []\nabsorbed_severity = "min"\n', "absorbed_severity 'min'"),
    ('[x]\nwords = "w"\nunless = ["x"]\n', "need 'absorbs'"),
    ('[x]\nwords = "w"\nshort = "s"\n[y]\nwords = "v"\nshort = "s"\n', "share the short name 's'"),
    ('[x]\nwords = "w"\norder = 0\n', "'order' must be a positive integer"),
])
def test_an_invalid_registry_names_the_file_the_fault_and_the_key(text, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as err:
        registry_from_toml(text, "my.toml")
    assert str(err.value).startswith("my.toml")
