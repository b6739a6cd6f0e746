#!/usr/bin/env python3
"""Every relative link of README.md and docs/*.md resolves: to a file or directory of the
project, and a link with a #fragment into a markdown file to one of its headings."""

import glob
import os
import re
import sys
from urllib.parse import unquote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_support  # noqa: E402

_CODE_SPAN = re.compile(r"`+[^`]*`+")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def links(text):
    """Yields (line number, target) of every link outside code."""
    for number, line in docs_support.prose_lines(text):
        for target in _LINK.findall(_CODE_SPAN.sub("", line)):
            yield number, target


def check(tree, document, anchors_of):
    """Returns what is wrong with the links of `document` (a path relative to `tree`)."""
    problems = []
    text = docs_support.read(os.path.join(tree, document))
    for number, target in links(text):
        if _EXTERNAL.match(target):
            continue
        where = f"{document}:{number}: {target}"
        path, _, fragment = target.partition("#")
        resolved = (os.path.normpath(os.path.join(os.path.dirname(document), unquote(path)))
                    if path else document)
        if resolved.startswith(".."):
            problems.append(f"{where} leaves the project")
            continue
        full = os.path.join(tree, resolved)
        if not os.path.exists(full):
            problems.append(f"{where}: no such file or directory {resolved}")
            continue
        if not fragment:
            continue
        if not resolved.endswith(".md"):
            problems.append(f"{where}: a #fragment into {resolved}, which is not markdown")
        elif fragment not in anchors_of(full):
            problems.append(f"{where}: {resolved} has no heading #{fragment}")
    return problems


def main():
    tree = docs_support.source_tree()
    documents = ["README.md"] + sorted(
        os.path.relpath(p, tree) for p in glob.glob(os.path.join(tree, "docs", "*.md")))
    cache = {}

    def anchors_of(path):
        if path not in cache:
            cache[path] = docs_support.anchors(docs_support.read(path))
        return cache[path]

    problems = []
    count = 0
    for document in documents:
        count += sum(1 for _ in links(docs_support.read(os.path.join(tree, document))))
        problems += check(tree, document, anchors_of)
    docs_support.fail(problems, f"{count} links in {len(documents)} documents resolve")


if __name__ == "__main__":
    main()
