"""What the documentation tests share: where the project's files are, and markdown's parts."""

import os
import re
import sys

WORKSPACE = "breaker"


def runfile(path):
    """Returns the runfiles path of `path`, a file of the workspace the test depends on."""
    return os.path.join(os.environ["TEST_SRCDIR"], WORKSPACE, path)


def source_tree():
    """Returns the source tree the README's runfile links to.

    A link may name any file of the project, and no test can list them all as data; so the
    link check resolves links in the tree the README itself comes from (the test is tagged
    `external`: it runs again every time instead of being cached on its declared inputs).
    """
    readme = os.path.realpath(runfile("README.md"))
    return os.path.dirname(readme)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


_FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text):
    """Yields (line number, line) of `text` outside fenced and indented code blocks."""
    in_fence = False
    in_indented = False
    previous_blank = True
    for number, line in enumerate(text.split("\n"), start=1):
        blank = line.strip() == ""
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            if line.startswith("    ") and (in_indented or previous_blank):
                in_indented = True
            elif not blank:
                in_indented = False
            if not in_indented:
                yield number, line
        previous_blank = blank


def anchor(heading):
    """Returns GitHub's anchor for a heading's text: lower case, code marks and punctuation
    dropped, spaces turned into hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    """Returns every anchor the headings of markdown `text` define, duplicates numbered as
    GitHub numbers them (`name`, `name-1`, ...)."""
    seen = {}
    result = set()
    for _, line in prose_lines(text):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = anchor(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def fail(failures, what):
    """Prints each failure and exits 1 when there is any; otherwise says what held."""
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        sys.exit(1)
    print("PASS:", what)
