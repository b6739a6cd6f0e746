#!/usr/bin/env python3
"""The container examples agree with the image and the programs.

No compose tool or Kubernetes runs here, so this checks what can go stale: each file parses,
names the image as build_image.sh tags it (packaging/version), passes breakerd and the sidecar
only flags their --help lists, and mounts files where the image and the units keep them. The
install test (tools/install_test.sh) runs the image itself under podman.
"""

import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.join(os.environ.get("TEST_SRCDIR", "."), os.environ.get("TEST_WORKSPACE", "breaker"))


def path(relative):
    return os.path.join(ROOT, relative)


def flags_of(program):
    """The --flags a program's --help names."""
    out = subprocess.run([path(program), "--help"], capture_output=True, text=True).stdout
    out += subprocess.run([path(program), "--help"], capture_output=True, text=True).stderr
    return set(re.findall(r"--([a-z_]+)", out))


def flag_names(args):
    return {re.match(r"--([a-z_]+)", a).group(1) for a in args if a.startswith("--")}


def main():
    problems = []
    version = open(path("packaging/version")).read().strip()
    image = f"localhost/breaker:{version}"
    breakerd_flags = flags_of("service/breakerd")
    sidecar_flags = flags_of("sidecar/breaker-sidecar")
    if "listen" not in breakerd_flags or "config" not in sidecar_flags:
        problems.append("could not read the programs' flags from --help")

    compose = yaml.safe_load(open(path("packaging/container/compose.yaml")))
    for name, service in compose["services"].items():
        if service["image"] != image:
            problems.append(f"compose.yaml: {name} runs {service['image']}, not {image}")
        entrypoint = service.get("entrypoint", ["/usr/bin/breakerd"])
        known = sidecar_flags if entrypoint == ["/usr/bin/breaker-sidecar"] else breakerd_flags
        unknown = flag_names(service.get("command", [])) - known
        if unknown:
            problems.append(f"compose.yaml: {name} passes unknown flags {sorted(unknown)}")

    documents = list(yaml.safe_load_all(open(path("packaging/container/kubernetes.yaml"))))
    kinds = {d["kind"] for d in documents}
    if kinds != {"Service", "ConfigMap", "StatefulSet"}:
        problems.append(f"kubernetes.yaml: kinds {sorted(kinds)}")
    for d in documents:
        if d["kind"] != "StatefulSet":
            continue
        for c in d["spec"]["template"]["spec"]["containers"]:
            if c["image"] != image:
                problems.append(f"kubernetes.yaml: runs {c['image']}, not {image}")
            unknown = flag_names(c["args"]) - breakerd_flags
            if unknown:
                problems.append(f"kubernetes.yaml: unknown breakerd flags {sorted(unknown)}")
            if "--store=etcd" not in c["args"] or d["spec"]["replicas"] < 2:
                problems.append("kubernetes.yaml: the replicas must share an etcd store")

    containerfile = open(path("packaging/container/Containerfile")).read()
    cmd = re.search(r'^CMD \[(.*?)\]', containerfile, re.MULTILINE | re.DOTALL).group(1)
    unknown = flag_names(re.findall(r'"([^"]*)"', cmd)) - breakerd_flags
    if unknown:
        problems.append(f"Containerfile: CMD passes unknown breakerd flags {sorted(unknown)}")
    for mounted in ["/etc/breaker/breakerd.textproto", "/var/lib/breakerd"]:
        if mounted not in containerfile:
            problems.append(f"Containerfile: does not name {mounted}")

    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    if problems:
        return 1
    print("PASS: compose.yaml, kubernetes.yaml and the Containerfile agree with the image and "
          "the programs' flags")
    return 0


if __name__ == "__main__":
    sys.exit(main())
