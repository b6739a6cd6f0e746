#!/usr/bin/env python3
"""check_dashboard.py passes the example dashboard and names each fault put into a copy of it.

Usage: check_dashboard_test.py DASHBOARD.json
"""

import copy
import json
import os
import sys
import unittest

# The checker is imported from beside this file; no bytecode is left there.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_dashboard  # noqa: E402

DASHBOARD_PATH = None


def _first_panel(dashboard):
    return next(p for p in dashboard["panels"] if p["type"] != "row")


class CheckDashboardTest(unittest.TestCase):

    def setUp(self):
        with open(DASHBOARD_PATH, encoding="utf-8") as f:
            self.dashboard = json.load(f)

    def assertProblem(self, dashboard, words):
        found = check_dashboard.problems(dashboard)
        self.assertTrue(any(words in problem for problem in found),
                        f"no problem mentions {words!r}: {found}")

    def test_example_dashboard_passes(self):
        self.assertEqual(check_dashboard.problems(self.dashboard), [])

    def test_old_schema_version(self):
        self.dashboard["schemaVersion"] = 37
        self.assertProblem(self.dashboard, "schemaVersion is 37")

    def test_no_datasource_variable(self):
        self.dashboard["templating"]["list"] = [
            v for v in self.dashboard["templating"]["list"] if v["type"] != "datasource"]
        self.assertProblem(self.dashboard, "no variable 'datasource'")

    def test_panel_on_a_fixed_datasource(self):
        _first_panel(self.dashboard)["datasource"] = {"type": "prometheus", "uid": "P1809F7CD"}
        self.assertProblem(self.dashboard, "'P1809F7CD'")

    def test_panel_without_expr(self):
        panel = _first_panel(self.dashboard)
        for target in panel["targets"]:
            target["expr"] = " "
        self.assertProblem(self.dashboard, "no target with an expr")

    def test_literal_host_port(self):
        panel = _first_panel(self.dashboard)
        panel["targets"][0]["expr"] = 'breakerd_mode{instance="10.0.0.11:9464"}'
        self.assertProblem(self.dashboard, "names the address '10.0.0.11:9464'")

    def test_fixed_job(self):
        panel = _first_panel(self.dashboard)
        panel["targets"][0]["expr"] = 'breakerd_mode{job="breakerd"}'
        self.assertProblem(self.dashboard, "fixes job to 'breakerd'")

    def test_undefined_variable(self):
        panel = _first_panel(self.dashboard)
        panel["targets"][0]["expr"] = 'rate(breakerd_refused_total{pool=~"$pool"}[$__rate_interval])'
        found = check_dashboard.problems(self.dashboard)
        self.assertTrue(any("$pool" in p for p in found), found)
        self.assertFalse(any("$__rate_interval" in p for p in found), found)

    def test_duplicate_panel_id(self):
        panels = [p for p in self.dashboard["panels"] if p["type"] != "row"]
        panels[1]["id"] = panels[0]["id"]
        self.assertProblem(self.dashboard, "its id is also")

    def test_missing_row(self):
        self.dashboard["panels"] = [
            p for p in self.dashboard["panels"]
            if not (p["type"] == "row" and p["title"] == "The sidecars")]
        self.assertProblem(self.dashboard, "no row titled 'The sidecars'")

    def test_collapsed_row_panels_are_checked(self):
        row = copy.deepcopy(next(p for p in self.dashboard["panels"] if p["type"] == "row"))
        nested = copy.deepcopy(_first_panel(self.dashboard))
        nested["id"] = 10_000
        nested["datasource"] = "Prometheus"
        row.update(id=10_001, title="collapsed", collapsed=True, panels=[nested])
        self.dashboard["panels"].append(row)
        self.assertProblem(self.dashboard, "panel 'Mode' (id 10000): its datasource")

    def test_variable_query_not_label_values(self):
        variable = next(v for v in self.dashboard["templating"]["list"] if v["type"] == "query")
        variable["query"] = "up"
        self.assertProblem(self.dashboard, "is not label_values")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: check_dashboard_test.py DASHBOARD.json", file=sys.stderr)
        sys.exit(2)
    DASHBOARD_PATH = sys.argv.pop()
    unittest.main()
