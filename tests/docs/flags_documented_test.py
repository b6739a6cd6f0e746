#!/usr/bin/env python3
"""Every flag that a program's --help prints is in a table of docs/configuration.md, in that
program's section; and every flag in the first column of that section's tables is one the
program has.

breakerd, breaker-sidecar and example_node print Abseil's help (a flag per line, indented four
spaces, its text in parentheses); breakerctl prints its own, global flags and each command's
(`breakerctl help COMMAND`), a flag per line indented two spaces.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_support  # noqa: E402

_ABSL_FLAG = re.compile(r"^    --([a-z0-9_]+) \(", re.MULTILINE)
_CTL_FLAG = re.compile(r"^  --([a-z0-9_]+)[= ]", re.MULTILINE)
_CTL_COMMAND = re.compile(r"^  ([a-z][a-z-]*) {2,}\S", re.MULTILINE)
# A flag in the first cell of a table row: "| `--a`, `--b` | ...".
_TABLE_FLAGS = re.compile(r"^\|([^|]*)\|", re.MULTILINE)


def help_text(program, *args):
    result = subprocess.run([docs_support.runfile(program), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=30)
    return result.stdout


def absl_flags(program):
    return set(_ABSL_FLAG.findall(help_text(program, "--help")))


def breakerctl_flags():
    program = "ctl/breakerctl"
    overview = help_text(program, "--help")
    commands = set(_CTL_COMMAND.findall(overview.split("Commands:", 1)[1].split("\n\n", 1)[0]))
    flags = set(_CTL_FLAG.findall(overview))
    for command in sorted(commands):
        flags |= set(_CTL_FLAG.findall(help_text(program, "help", command)))
    return flags, commands


def section(text, title):
    """Returns the part of `text` under the heading `## title`, up to the next `## `."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    return m.group(1) if m else None


def table_rows(text):
    return [line for line in text.split("\n") if line.startswith("|")]


def in_table(text, flag):
    """Whether a table row of `text` names `--flag` in code (`--flag` or `--flag=VALUE`)."""
    pattern = re.compile(rf"`--{re.escape(flag)}[`=]")
    return any(pattern.search(row) for row in table_rows(text))


def tabled_flags(text):
    flags = set()
    for cell in _TABLE_FLAGS.findall(text):
        flags |= set(re.findall(r"`--([a-z0-9_]+)`", cell))
    return flags


def main():
    doc = docs_support.read(docs_support.runfile("docs/configuration.md"))
    ctl_flags, ctl_commands = breakerctl_flags()
    programs = {
        "breakerd": absl_flags("service/breakerd"),
        "breakerctl": ctl_flags,
        "breaker-sidecar": absl_flags("sidecar/breaker-sidecar"),
        "example_node": absl_flags("examples/example_node"),
    }
    problems = []
    for name, flags in programs.items():
        text = section(doc, name)
        if text is None:
            problems.append(f"docs/configuration.md has no section '## {name}'")
            continue
        if not flags:
            problems.append(f"{name} --help printed no flags this test can read")
        for flag in sorted(flags):
            if not in_table(text, flag):
                problems.append(f"{name}'s --{flag} is in no table of docs/configuration.md, "
                                f"section '## {name}'")
        for flag in sorted(tabled_flags(text) - flags):
            problems.append(f"docs/configuration.md, section '## {name}', lists --{flag}, "
                            f"which {name} --help does not print")
    for command in sorted(ctl_commands):
        if not re.search(rf"`{re.escape(command)}[` ]", section(doc, "breakerctl") or ""):
            problems.append(f"breakerctl's command {command} is not in docs/configuration.md")
    total = sum(len(f) for f in programs.values())
    docs_support.fail(problems, f"{total} flags of {len(programs)} programs and "
                                f"{len(ctl_commands)} breakerctl commands are documented")


if __name__ == "__main__":
    main()
