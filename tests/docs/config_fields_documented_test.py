#!/usr/bin/env python3
"""Every field of breakerd's configuration file, its access file and the sidecar's
configuration file (their messages in proto/breaker/v1/) is named in docs/configuration.md."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_support  # noqa: E402

# The files an operator writes, each a text-format message of one of these .proto files.
PROTOS = [
    "proto/breaker/v1/config.proto",
    "proto/breaker/v1/access.proto",
    "proto/breaker/v1/sidecar.proto",
]
# A field: "[optional|repeated] TYPE name = N;" (an enum value has no type, so never matches).
_FIELD = re.compile(r"^\s*(?:optional\s+|repeated\s+)?[\w.]+\s+(\w+)\s*=\s*\d+\s*;", re.MULTILINE)
_CODE_SPAN = re.compile(r"`([^`]+)`")


def main():
    tree = docs_support.source_tree()
    doc = docs_support.read(os.path.join(tree, "docs", "configuration.md"))
    words = set()
    for span in _CODE_SPAN.findall(doc):
        words |= set(re.findall(r"\w+", span))
    problems = []
    count = 0
    for proto in PROTOS:
        for field in _FIELD.findall(docs_support.read(os.path.join(tree, proto))):
            count += 1
            if field not in words:
                problems.append(f"{proto}'s field {field} is not named in docs/configuration.md")
    if count == 0:
        problems.append(f"no fields read from {PROTOS}")
    docs_support.fail(problems, f"{count} fields of {len(PROTOS)} files are documented")


if __name__ == "__main__":
    main()
