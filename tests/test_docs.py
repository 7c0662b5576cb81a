"""The docs stay honest where it is cheap to check: the README's command table against the command line's
parser, every link between the README and docs/ (files and #anchors), and every benchmark command the
performance page's targets table names against its script. Files and parsers only: no process, no JVM."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

from harness.commands.cli import parser
from harness.core.config import PROJECT_DIR

PAGES = [PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").glob("*.md"))]
OPTION = re.compile(r"(?<![\w-])(--?[a-z][a-z0-9-]*)")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text outside fenced code blocks (a link or heading inside one is an example, not the page's)."""
    return "".join(part for i, part in enumerate(re.split(r"(?m)^ *```.*$", text)) if i % 2 == 0)


def _section(text: str, heading: str) -> str:
    """The lines under a `## heading`, up to the next heading of that level."""
    body = text.split(f"\n## {heading}\n", 1)[1]
    return body.split("\n## ", 1)[0]


def _table_rows(text: str) -> list[list[str]]:
    """The cells of a markdown table's body rows (the header and the rule left out)."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[2:]]


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for heading in re.findall(r"(?m)^#{1,6} (.+)$", _prose(path.read_text())):
        slug, n = anchor(heading), 1
        while slug in found:  # a heading repeated gets -1, -2, ...
            slug, n = f"{anchor(heading)}-{n}", n + 1
        found.add(slug)
    return found


def _subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(
        (dict(a.choices) for a in p._actions if isinstance(a, argparse._SubParsersAction)),
        {},
    )


def _options(p: argparse.ArgumentParser) -> set[str]:
    return {option for action in p._actions for option in action.option_strings}


def _command_table() -> list[tuple[str, str]]:
    """(the command cell, the whole row) of each row of the README's command table."""
    rows = _table_rows(_section((PROJECT_DIR / "README.md").read_text(), "Commands"))
    return [(row[0].strip("`"), " ".join(row)) for row in rows]


def test_every_command_in_the_readme_table_exists_with_its_options() -> None:
    # GIVEN the README's command table and the command line's parser
    top = parser()
    problems = []
    for command, row in _command_table():
        # WHEN each row's command is walked down the parser's subcommands
        words, current, path = command.split(), top, []
        while words and words[0] in _subcommands(current):
            path.append(words[0])
            current = _subcommands(current)[words.pop(0)]
        if not path:
            problems.append(f"{command}: no such command")
            continue
        # THEN every option the row names is one of that command's (or the global ones)
        named = set(OPTION.findall(" ".join(re.findall(r"`([^`]+)`", row))))
        unknown = named - _options(current) - _options(top)
        if unknown:
            problems.append(f"{' '.join(path)}: {', '.join(sorted(unknown))} not in its parser")
        if "[" in command and not any(not a.option_strings for a in current._actions if a.dest != "help"):
            problems.append(f"{command}: the parser takes no positional argument")
    assert problems == []


def test_every_command_of_the_parser_has_a_row_in_the_readme_table() -> None:
    # GIVEN the parser's commands WHEN the README's table is read THEN each has a row of its own
    listed = {command.split()[0] for command, _ in _command_table()}
    assert sorted(set(_subcommands(parser())) - listed) == []


def test_every_relative_link_between_the_docs_resolves() -> None:
    # GIVEN the README and every page of docs/ WHEN each relative link is followed
    broken = []
    for page in PAGES:
        for target in LINK.findall(_prose(page.read_text())):
            if re.match(r"[a-z]+:", target):
                continue  # a web address: not checked here
            file_part, _, fragment = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            # THEN the file exists, and the anchor is one of its headings
            if not linked.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                broken.append(f"{page.name}: {target} (no such heading in {linked.name})")
    assert broken == []


def _script_options(script: Path) -> set[str]:
    """The options a bench script's argparse parser declares, read from its source without running it."""
    found = set()
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            found.update(a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("-"))
    return found


def test_every_benchmark_command_of_the_targets_table_exists_with_its_options() -> None:
    # GIVEN the benchmark commands named in docs/performance.md's targets table
    table = _section((PROJECT_DIR / "docs" / "performance.md").read_text(), "The targets")
    commands = re.findall(r"`(bench/[^`]+)`", table)
    assert commands, "the targets table names no bench/ command"
    problems = []
    for command in commands:
        script, *arguments = command.split()
        path = PROJECT_DIR / script
        # WHEN each is looked up THEN its script exists, and declares every option the command gives
        if not path.is_file():
            problems.append(f"{command}: no file {script}")
            continue
        unknown = {a for a in arguments if a.startswith("--")} - _script_options(path)
        if unknown:
            problems.append(f"{command}: {', '.join(sorted(unknown))} not in {script}'s parser")
    assert problems == []


def test_the_anchor_of_a_heading_is_githubs() -> None:
    assert anchor("When the state folder's disk fills") == "when-the-state-folders-disk-fills"
    assert anchor("Reading the range in a job: harness.consume") == "reading-the-range-in-a-job-harnessconsume"
    assert anchor("Retention: `keep_batches`") == "retention-keep_batches"
