#!/usr/bin/env python3
"""Time is read in one place: the project's code reads a Clock (common/clock.h), which tests
replace with a fake; only common/clock.cc reads the system's clocks (absl::Now(),
std::chrono::*_clock::now()). Tests, their support, fuzz targets and benchmarks may read them.

A few places still read the system's clocks directly; each is listed below with how many reads
it has, and none may gain one."""

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

# Reads not yet on a Clock, at most this many per file. A gRPC deadline is a wall-clock time
# point that gRPC itself compares with the system's clock (etcd_state_store.cc's, ctl/'s).
_PENDING = {
    "client/grpc_client.cc": 2,
    "ctl/commands.cc": 2,
    "ctl/unary_call.h": 1,
    "examples/example_node.cc": 6,
    "service/rpc/restore_gate.cc": 2,
    "service/rpc/server.cc": 5,
    "service/storage/etcd_state_store.cc": 1,
    "service/ticker.cc": 1,
}


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
        allowed = _PENDING.get(path, 0)
        if count > allowed:
            problems.append(
                f"{path}: reads the system's clock {count} times (allowed: {allowed}); read "
                "the injected Clock (common/clock.h) instead, so that tests can fake it")
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"no system clock read outside {_CLOCK} but the {len(_PENDING)} pending files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
