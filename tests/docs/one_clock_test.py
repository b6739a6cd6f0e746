#!/usr/bin/env python3
"""Time is read in one place: the project's code reads a Clock (common/clock.h), which tests
replace with a fake; only common/clock.cc reads the system's clocks (absl::Now(),
std::chrono::*_clock::now()). Tests, their support, fuzz targets and benchmarks may read them.

What is not a Clock's time reads none either: a gRPC deadline is relative, gRPC adds it to its
own clock (common/grpc_deadline.h); a bounded wait is a timeout (CondVar::Await,
common/mutex.h)."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_support  # noqa: E402

_READ = re.compile(r"\babsl::Now\(\)|\b\w+_clock::now\(\)")
_SKIPPED_DIRS = {"tests", "bench", "third_party", "node_modules", ".git"}
_SKIPPED_NAME = re.compile(r"(_test|_test_support|_fuzzer|_benchmark|^fake_\w+)\.(cc|h)$")

# The clock's own home.
_CLOCK = "common/clock.cc"


def reads(tree):
    """Yields (path relative to `tree`, count) of every C++ file that reads a system clock."""
    for directory, subdirectories, files in os.walk(tree):
        subdirectories[:] = sorted(
            d for d in subdirectories
            if d not in _SKIPPED_DIRS and not d.startswith("bazel-"))
        for name in sorted(files):
            if not name.endswith((".cc", ".h")) or _SKIPPED_NAME.search(name):
                continue
            path = os.path.join(directory, name)
            count = len(_READ.findall(docs_support.read(path)))
            if count:
                yield os.path.relpath(path, tree), count


def main():
    tree = docs_support.source_tree()
    problems = []
    for path, count in reads(tree):
        if path == _CLOCK:
            continue
        problems.append(
            f"{path}: reads the system's clock {count} times; read the injected Clock "
            "(common/clock.h) instead, so that tests can fake it; for a gRPC deadline use "
            "GrpcDeadlineIn (common/grpc_deadline.h), for a bounded wait CondVar::Await "
            "(common/mutex.h)")
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"no system clock read outside {_CLOCK}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
