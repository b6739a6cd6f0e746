#!/usr/bin/env python3
"""What the README and the guides quote from the project's files is still in those files.

- A fenced block after `<!-- excerpt of PATH -->` is a run of consecutive lines of PATH
  (relative to the project), trailing spaces aside.
- Every alert the guides name (`BreakerdX`, `BreakerSidecarX`, `BreakerClientX` in code) is a
  rule of examples/prometheus/alerts.yml.
"""

import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_support  # noqa: E402

_EXCERPT = re.compile(r"^<!-- excerpt of (\S+) -->$")
_ALERT_NAME = re.compile(r"`(Breaker(?:d|Sidecar|Client)[A-Z][A-Za-z]+)`")
_ALERT_RULE = re.compile(r"^\s*- alert:\s*(\S+)", re.MULTILINE)
ALERTS = "examples/prometheus/alerts.yml"


def excerpts(text):
    """Yields (line number, quoted path, the block's lines) of every marked excerpt."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = _EXCERPT.match(line.strip())
        if not m:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            yield i + 1, m.group(1), None
            continue
        end = lines.index("```", i + 2)
        yield i + 1, m.group(1), [l.rstrip() for l in lines[i + 2:end]]


def contains_run(haystack, needle):
    return any(haystack[i:i + len(needle)] == needle
               for i in range(len(haystack) - len(needle) + 1))


def main():
    tree = docs_support.source_tree()
    documents = ["README.md"] + sorted(
        os.path.relpath(p, tree) for p in glob.glob(os.path.join(tree, "docs", "*.md")))
    rules = set(_ALERT_RULE.findall(docs_support.read(os.path.join(tree, ALERTS))))
    problems = []
    quoted = 0
    named = set()
    for document in documents:
        text = docs_support.read(os.path.join(tree, document))
        for number, path, block in excerpts(text):
            where = f"{document}:{number}"
            source = os.path.join(tree, path)
            if block is None:
                problems.append(f"{where}: an excerpt marker must precede a fenced block")
            elif not os.path.isfile(source):
                problems.append(f"{where}: quotes {path}, which does not exist")
            elif not contains_run([l.rstrip() for l in docs_support.read(source).split("\n")],
                                  block):
                problems.append(f"{where}: the block is no longer in {path}: quote it again")
            else:
                quoted += 1
        for _, line in docs_support.prose_lines(text):
            for name in _ALERT_NAME.findall(line):
                named.add(name)
                if name not in rules:
                    problems.append(f"{document}: names the alert {name}, which {ALERTS} "
                                    f"does not define")
    docs_support.fail(problems, f"{quoted} excerpts still in their files, {len(named)} alerts "
                                f"named are rules of {ALERTS}")


if __name__ == "__main__":
    main()
