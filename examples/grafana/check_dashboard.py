#!/usr/bin/env python3
"""Checks the shape of a Grafana dashboard's JSON model: what Grafana needs to load it on any
pool's Prometheus, and what the dashboard promises (its rows).

Usage: check_dashboard.py DASHBOARD.json

No Grafana runs in the tests (it is not packaged in Debian), so this checks the documented
schema's fields the dashboard relies on; tests/observability runs every panel's query against
a live Prometheus.
"""

import json
import re
import sys

# Grafana 10.0's schema version; older Grafana migrates the JSON differently.
MIN_SCHEMA_VERSION = 38
DATASOURCE_VARIABLE = "datasource"
DATASOURCE_UID = "${datasource}"
ROWS = ("The fleet", "The nodes", "The sidecars", "breakerd")
# Variables Grafana itself defines for a query.
BUILTIN_VARIABLES = {
    "__interval", "__interval_ms", "__rate_interval", "__range", "__range_s", "__range_ms",
    "__from", "__to", "__dashboard", "__org", "__user", "__name",
}

_STRING_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"' "|" r"'((?:[^'\\]|\\.)*)'")
_HOST_PORT = re.compile(r"[A-Za-z0-9_.\-\[\]]+:\d{1,5}\b")
_INSTANCE_MATCHER = re.compile(r'\b(instance|job)\s*(=~|!~|!=|=)\s*"([^"]*)"')
_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)(?::\w+)?\]\]|\$(\w+)")
_LABEL_VALUES = re.compile(r"^\s*label_values\(.*\)\s*$", re.S)


def _where(panel):
    return f"panel '{panel.get('title', '')}' (id {panel.get('id')})"


def _all_panels(dashboard):
    """Every panel, rows' nested panels (those of a collapsed row) included."""
    for panel in dashboard.get("panels", []):
        yield panel
        for nested in panel.get("panels", []) or []:
            yield nested


def _variables(dashboard):
    templating = dashboard.get("templating", {})
    variables = templating.get("list", []) if isinstance(templating, dict) else []
    return [v for v in variables if isinstance(v, dict)]


def _expr_problems(where, expr, defined):
    problems = []
    for match in _STRING_LITERAL.finditer(expr):
        literal = match.group(1) if match.group(1) is not None else match.group(2)
        if _HOST_PORT.search(literal):
            problems.append(f"{where}: the expression names the address '{literal}': select "
                            "instances with a variable ($instance, $sidecar) instead")
    for match in _INSTANCE_MATCHER.finditer(expr):
        if "$" not in match.group(3):
            problems.append(f"{where}: the expression fixes {match.group(1)} to "
                            f"'{match.group(3)}': use the dashboard's variable for it")
    for match in _VARIABLE.finditer(expr):
        name = next(g for g in match.groups() if g is not None)
        if name not in defined and name not in BUILTIN_VARIABLES:
            problems.append(f"{where}: the expression uses ${name}, which templating.list does "
                            "not define: add the variable or use a defined one")
    return problems


def _datasource_uid(datasource):
    return datasource.get("uid") if isinstance(datasource, dict) else datasource


def problems(dashboard):
    """Returns what is wrong with the dashboard, each saying how to fix it; empty if nothing."""
    if not isinstance(dashboard, dict):
        return ["the JSON is no dashboard (an object with panels and templating)"]
    found = []
    schema = dashboard.get("schemaVersion")
    if not isinstance(schema, int) or schema < MIN_SCHEMA_VERSION:
        found.append(f"schemaVersion is {schema!r}: export the dashboard from Grafana 10 or "
                     f"later (schemaVersion >= {MIN_SCHEMA_VERSION})")

    variables = _variables(dashboard)
    defined = {v.get("name") for v in variables}
    datasource = [v for v in variables if v.get("name") == DATASOURCE_VARIABLE]
    if not datasource or datasource[0].get("type") != "datasource" or \
            datasource[0].get("query") != "prometheus":
        found.append(f"templating.list has no variable '{DATASOURCE_VARIABLE}' of type "
                     "datasource for Prometheus (query 'prometheus'): add one, so that each "
                     "pool picks its own Prometheus")
    for variable in variables:
        if variable.get("type") != "query":
            continue
        where = f"variable '{variable.get('name')}'"
        if _datasource_uid(variable.get("datasource")) != DATASOURCE_UID:
            found.append(f"{where}: its datasource is not {DATASOURCE_UID}: set it so")
        query = variable.get("query")
        query = query.get("query") if isinstance(query, dict) else query
        if not isinstance(query, str) or not _LABEL_VALUES.match(query):
            found.append(f"{where}: its query {query!r} is not label_values(...): list the "
                         "values from the series")
        else:
            found.extend(_expr_problems(where, query, defined))

    ids = {}
    rows = set()
    panels = list(_all_panels(dashboard))
    if not panels:
        found.append("the dashboard has no panels")
    for panel in panels:
        if not isinstance(panel, dict):
            found.append("an entry of panels is no object")
            continue
        where = _where(panel)
        panel_id = panel.get("id")
        if not isinstance(panel_id, int):
            found.append(f"{where}: no integer id: give it one")
        elif panel_id in ids:
            found.append(f"{where}: its id is also {ids[panel_id]}'s: give each panel its own")
        else:
            ids[panel_id] = where
        if panel.get("type") == "row":
            rows.add(panel.get("title"))
            continue
        if _datasource_uid(panel.get("datasource")) != DATASOURCE_UID:
            found.append(f"{where}: its datasource is {panel.get('datasource')!r}, not "
                         f"{DATASOURCE_UID}: set it to the dashboard's variable")
        targets = [t for t in panel.get("targets", []) or [] if isinstance(t, dict)]
        exprs = [t.get("expr") for t in targets]
        if not any(isinstance(e, str) and e.strip() for e in exprs):
            found.append(f"{where}: no target with an expr: give it a PromQL query")
        for target in targets:
            target_where = f"{where} target {target.get('refId')}"
            if "datasource" in target and \
                    _datasource_uid(target["datasource"]) != DATASOURCE_UID:
                found.append(f"{target_where}: its datasource is not {DATASOURCE_UID}")
            if isinstance(target.get("expr"), str):
                found.extend(_expr_problems(target_where, target["expr"], defined))
    for row in ROWS:
        if row not in rows:
            found.append(f"no row titled '{row}': the dashboard's rows are {sorted(rows)}")
    return found


def main(argv):
    if len(argv) != 2:
        print("usage: check_dashboard.py DASHBOARD.json", file=sys.stderr)
        return 2
    path = argv[1]
    try:
        with open(path, encoding="utf-8") as f:
            dashboard = json.load(f)
    except OSError as error:
        print(f"{path}: cannot read it: {error.strerror}", file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"{path}: not valid JSON: {error}", file=sys.stderr)
        return 1
    found = problems(dashboard)
    for problem in found:
        print(f"{path}: {problem}", file=sys.stderr)
    if found:
        return 1
    panels = [p for p in _all_panels(dashboard) if p.get("type") != "row"]
    print(f"{path}: schemaVersion {dashboard['schemaVersion']}, {len(panels)} panels in "
          f"rows {', '.join(ROWS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
