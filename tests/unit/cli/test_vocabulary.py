"""One CLI vocabulary: a flag means one thing, with one metavar and one help text, in every subcommand."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import defaultdict

from fabricdoc.cli.main import build_parser


def _parsers(parser: argparse.ArgumentParser, path: str = "fabricdoc"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def _visible(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        yield action


def test_every_option_and_argument_has_help():
    missing = [f"{path}: {a.option_strings or a.dest}" for path, p in _parsers(build_parser())
               for a in _visible(p) if not (a.help or "").strip()]
    assert missing == []


def test_the_same_flag_has_the_same_metavar_and_help_everywhere():
    seen: dict[str, set[tuple[object, object]]] = defaultdict(set)
    where: dict[str, list[str]] = defaultdict(list)
    for path, p in _parsers(build_parser()):
        for a in _visible(p):
            for flag in a.option_strings:
                seen[flag].add((str(a.metavar), a.help))
                where[flag].append(path)
    differing = {flag: sorted(where[flag]) for flag, forms in seen.items() if len(forms) > 1}
    assert differing == {}


def test_shared_concepts_are_spelled_once():
    flags = defaultdict(set)
    for path, p in _parsers(build_parser()):
        for a in _visible(p):
            flags[path].update(a.option_strings)
    # the history store is --history everywhere it appears (never --db or --history-db)
    for path in ("fabricdoc sweep", "fabricdoc impact", "fabricdoc tui", "fabricdoc exporter", "fabricdoc history"):
        assert "--history" in flags[path] and not {"--db", "--history-db"} & flags[path]
    # the report is the positional REPORT wherever a command reads one
    for path in ("fabricdoc impact", "fabricdoc drain", "fabricdoc resume", "fabricdoc gate", "fabricdoc k8s npd",
                 "fabricdoc k8s taints", "fabricdoc tui", "fabricdoc exporter"):
        assert "--report" not in flags[path]


def test_old_spellings_that_scheduler_configs_use_still_parse():
    parse = build_parser().parse_args
    assert parse(["gate", "--report", "r.json", "--job-nodelist", "n[1-2]"]).report_option == "r.json"
    assert parse(["k8s", "npd", "--report", "r.json"]).report_option == "r.json"
    assert parse(["exporter", "--report", "r.json"]).report_option == "r.json"
    assert parse(["impact", "r.json", "--history-db", "h.sqlite"]).history == "h.sqlite"
    assert parse(["history", "--db", "h.sqlite", "sweeps"]).history == "h.sqlite"
    assert parse(["history", "sweeps", "--db", "h.sqlite", "--json"]).json is True
    assert parse(["sweep", "--topology", "f.yaml", "--quiet"]).expected == "f.yaml"
    assert parse(["analyze", "--topology", "f.yaml"]).fabric == "f.yaml"


def test_python_dash_m_fabricdoc_is_the_command():
    r = subprocess.run([sys.executable, "-m", "fabricdoc", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "usage: fabricdoc" in r.stdout and "probe" in r.stdout
