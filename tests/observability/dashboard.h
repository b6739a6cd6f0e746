#ifndef TESTS_OBSERVABILITY_DASHBOARD_H_
#define TESTS_OBSERVABILITY_DASHBOARD_H_

// The PromQL queries of a Grafana dashboard (its JSON model), as Grafana would send them to
// Prometheus: every panel's targets, rows' nested panels included, with the dashboard's
// template variables and Grafana's built-in ones ($__interval, $__rate_interval, $__range, ...)
// substituted. A test runs them against a live Prometheus, since no Grafana runs here.

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace breaker::testing {

// One target of one panel.
struct PanelQuery {
  // "<row title> / <panel title>", for messages.
  std::string panel;
  std::string ref_id;
  // The target's expr, every variable substituted.
  std::string expr;
  // Grafana runs it as an instant query (at the range's end) rather than over the range.
  bool instant = false;
};

// What Grafana would know when it draws the dashboard.
struct DashboardContext {
  // The dashboard's time range.
  absl::Time from;
  absl::Time to;
  // The data source's scrape interval: the floor of $__interval, a quarter of $__rate_interval.
  absl::Duration scrape_interval = absl::Seconds(15);
  // The values of `label` across the series `selector` selects ("" for every series): what a
  // query variable's label_values(selector, label) lists.
  std::function<absl::StatusOr<std::vector<std::string>>(absl::string_view selector,
                                                         absl::string_view label)>
      label_values;
};

// Reads the dashboard JSON `json` and returns every PromQL target of its panels, in the
// dashboard's order, hidden targets left out. Query variables take every value
// label_values lists when they are multi-valued or include "All" (as Grafana formats them for
// Prometheus: (a|b), each value regex-escaped), their first value otherwise; custom, constant,
// text box and interval variables their current value.
// Returns INVALID_ARGUMENT, naming the panel or variable, for JSON that is no dashboard, an
// expression that uses a variable the dashboard does not define, or a query variable whose
// query is not label_values(...); NOT_FOUND when a query variable lists no value; and what
// label_values returns.
absl::StatusOr<std::vector<PanelQuery>> DashboardQueries(absl::string_view json,
                                                         const DashboardContext& context);

}  // namespace breaker::testing

#endif  // TESTS_OBSERVABILITY_DASHBOARD_H_
