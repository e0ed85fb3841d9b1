"""`fabricdoc --help` lists every command without importing them; each command's help is unchanged."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from fabricdoc.cli.main import COMMANDS, build_parser


def _help(parser: argparse.ArgumentParser, argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit):
        parser.parse_args(argv)
    return capsys.readouterr().out


def test_the_listed_help_of_every_command_is_its_modules_own():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert {c.dest: c.help for c in sub._choices_actions} == COMMANDS


@pytest.mark.parametrize("argv", [["--help"], *([name, "--help"] for name in COMMANDS)])
def test_lazy_help_is_the_same_as_the_full_parsers(argv, capsys):
    assert _help(build_parser(lazy=True), argv, capsys) == _help(build_parser(), argv, capsys)


def test_fabricdoc_help_imports_no_command_module():
    code = ("import sys\nfrom fabricdoc.cli.main import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('fabricdoc.cli.'))), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "COMMAND" in done.stdout
    assert done.stderr.split() == ["fabricdoc.cli.args", "fabricdoc.cli.main"]


def test_a_command_parses_the_same_through_the_lazy_parser():
    argv = ["schema", "--validate", "r.json"]
    lazy, full = build_parser(lazy=True).parse_args(argv), build_parser().parse_args(argv)
    assert vars(lazy) == vars(full) and lazy.func.__module__ == "fabricdoc.cli.schema"
