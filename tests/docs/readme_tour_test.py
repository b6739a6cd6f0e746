#!/usr/bin/env python3
"""Runs the README's five-minute tour, as written, against the built programs.

Each shell block of the tour is marked by an HTML comment before it:

    <!-- tour listens=PORT[,PORT] expect="TEXT" -->

The blocks run in order, each in its own bash, in a scratch directory whose `bazel-bin/` holds
the programs this test depends on. The tour's ports are replaced by free loopback ports (the
same port wherever the README writes it); nothing else of the text changes. After a block,
every port it `listens` on must accept connections within the deadline; a block with `expect`
must exit 0 with TEXT in its output, and is run again until it does (the fleet's policy
reaches the nodes within a second, not at once), so only blocks that change nothing carry it.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_support  # noqa: E402

# The programs the tour calls, where `bazel build` leaves them.
PROGRAMS = [
    "service/breakerd",
    "ctl/breakerctl",
    "sidecar/breaker-sidecar",
    "examples/example_node",
]
DEADLINE_SECONDS = 30
_MARKER = re.compile(r"^<!-- tour((?:\s+\w+=(?:\"(?:[^\"\\]|\\.)*\"|\S+?))*)\s*-->$")
_ATTRIBUTE = re.compile(r"(\w+)=(\"(?:[^\"\\]|\\.)*\"|\S+)")


class Step:
    def __init__(self, line, script, listens, expect):
        self.line = line
        self.script = script
        self.listens = listens
        self.expect = expect


def parse_tour(text):
    """Returns the tour's steps: each marked ```sh block with its marker's attributes."""
    lines = text.split("\n")
    steps = []
    for i, line in enumerate(lines):
        m = _MARKER.match(line.strip())
        if not m:
            continue
        attributes = {}
        for name, value in _ATTRIBUTE.findall(m.group(1)):
            if value.startswith('"'):
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            attributes[name] = value
        unknown = set(attributes) - {"listens", "expect"}
        if unknown:
            raise ValueError(f"README.md:{i + 1}: unknown tour attributes {sorted(unknown)}")
        if i + 1 >= len(lines) or lines[i + 1].strip() != "```sh":
            raise ValueError(f"README.md:{i + 1}: a tour marker must precede a ```sh block")
        end = lines.index("```", i + 2)
        listens = [int(p) for p in attributes.get("listens", "").split(",") if p]
        steps.append(Step(i + 1, "\n".join(lines[i + 2:end]) + "\n", listens,
                          attributes.get("expect")))
    return steps


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def substitute_ports(text, ports):
    for old, new in ports.items():
        text = re.sub(rf"(?<!\d){old}(?!\d)", str(new), text)
    return text


def accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def make_workdir():
    workdir = os.path.join(os.environ["TEST_TMPDIR"], "tour-run")
    shutil.rmtree(workdir, ignore_errors=True)
    for program in PROGRAMS:
        target = os.path.join(workdir, "bazel-bin", program)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.symlink(docs_support.runfile(program), target)
    os.makedirs(os.path.join(workdir, "tour"))
    return workdir


class Shell:
    """Runs blocks in bash in `workdir`, each in a process group of its own, which `stop`
    ends together with whatever the block left running."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.groups = []
        self.runs = 0

    def run(self, script):
        self.runs += 1
        out_path = os.path.join(self.workdir, f"block-{self.runs}.out")
        with open(out_path, "w") as out:
            process = subprocess.Popen(["bash", "-c", script], cwd=self.workdir, stdout=out,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
            self.groups.append(process.pid)
            code = process.wait(timeout=DEADLINE_SECONDS)
        return code, docs_support.read(out_path)

    def stop(self):
        for group in self.groups:
            try:
                os.killpg(group, signal.SIGTERM)
            except ProcessLookupError:
                pass


def logs(workdir):
    tour = os.path.join(workdir, "tour")
    return "".join(f"--- {name}\n{docs_support.read(os.path.join(tour, name))[-3000:]}\n"
                   for name in sorted(os.listdir(tour)) if name.endswith(".log"))


def run_step(shell, step):
    """Runs one step; returns None when it held, else what went wrong."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        code, output = shell.run(step.script)
        held = code == 0 and (step.expect is None or step.expect in output)
        if held or step.expect is None or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if not held:
        wanted = f" with {step.expect!r} in its output" if step.expect else ""
        return f"exited {code}, wanted 0{wanted}; its output:\n{output}"
    for port in step.listens:
        while not accepts(port):
            if time.monotonic() > deadline:
                return f"nothing listens on port {port} after {DEADLINE_SECONDS} s"
            time.sleep(0.1)
    return None


def main():
    steps = parse_tour(docs_support.read(docs_support.runfile("README.md")))
    tour_text = "".join(step.script for step in steps)
    missing = [p for p in PROGRAMS if "bazel-bin/" + p not in tour_text]
    docs_support.fail([f"the tour never runs bazel-bin/{p}" for p in missing], "the tour is marked")
    ports = {port: free_port() for step in steps for port in step.listens}
    print("ports:", ports)
    workdir = make_workdir()
    shell = Shell(workdir)
    try:
        for step in steps:
            step.script = substitute_ports(step.script, ports)
            if step.expect:
                step.expect = substitute_ports(step.expect, ports)
            step.listens = [ports[port] for port in step.listens]
            print(f"README.md:{step.line}:\n{step.script}", flush=True)
            problem = run_step(shell, step)
            if problem:
                docs_support.fail([f"the tour's block at README.md:{step.line} {problem}\n"
                                   f"{logs(workdir)}"], "")
    finally:
        shell.stop()
    print(f"PASS: the README's tour, {len(steps)} blocks")


if __name__ == "__main__":
    main()
