#!/usr/bin/env bash
# Checks the example alert rules the way Prometheus reads them: valid YAML, one group list,
# every rule an alert with an expression and a summary. (promtool, which would also parse the
# PromQL, is not packaged with the build's dependencies.)
set -euo pipefail
python3 - "$1" <<'PY'
import sys
import yaml

with open(sys.argv[1]) as f:
    doc = yaml.safe_load(f)
groups = doc["groups"]
assert isinstance(groups, list) and groups, "no groups"
names = set()
for group in groups:
    assert group.get("name"), "a group without a name"
    for rule in group["rules"]:
        name = rule.get("alert")
        assert name, f"not an alert rule: {rule}"
        assert name not in names, f"alert {name} twice"
        names.add(name)
        assert isinstance(rule.get("expr"), str) and rule["expr"].strip(), f"{name}: no expr"
        assert rule["expr"].count("(") == rule["expr"].count(")"), f"{name}: unbalanced expr"
        assert rule.get("annotations", {}).get("summary"), f"{name}: no summary"
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, name
print(f"{len(names)} alerts: {', '.join(sorted(names))}")
PY
