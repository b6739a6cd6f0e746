#include "tests/observability/dashboard.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;

// Two jobs and three instances, as label_values would list them from a live Prometheus; it
// records the selectors it was asked for.
class DashboardQueriesTest : public ::testing::Test {
 protected:
  DashboardQueriesTest() {
    context_.from = absl::FromUnixSeconds(1000);
    context_.to = absl::FromUnixSeconds(1120);
    context_.scrape_interval = absl::Seconds(1);
    context_.label_values =
        [this](absl::string_view selector,
               absl::string_view label) -> absl::StatusOr<std::vector<std::string>> {
      asked_.push_back(absl::StrCat(selector, "|", label));
      if (label == "job") return std::vector<std::string>{"breakerd", "breaker-sidecar"};
      if (label == "instance") return std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2"};
      return std::vector<std::string>{};
    };
  }

  absl::StatusOr<std::vector<PanelQuery>> Read(const std::string& json) {
    return DashboardQueries(json, context_);
  }

  DashboardContext context_;
  std::vector<std::string> asked_;
};

constexpr char kDashboard[] = R"js({
  "schemaVersion": 39,
  "templating": {"list": [
    {"name": "datasource", "type": "datasource", "query": "prometheus"},
    {"name": "job", "type": "query",
     "query": {"query": "label_values(breakerd_mode, job)", "refId": "A"}},
    {"name": "instance", "type": "query", "multi": true, "includeAll": true,
     "query": "label_values(up{job=\"$job\"}, instance)"}
  ]},
  "panels": [
    {"type": "row", "title": "The fleet", "collapsed": false, "panels": []},
    {"type": "stat", "title": "Mode", "targets": [
      {"refId": "A",
       "expr": "max by (mode) (breakerd_mode{job=\"$job\", instance=~\"${instance}\"})",
       "instant": true},
      {"refId": "B", "expr": "unused", "hide": true}
    ]},
    {"type": "row", "title": "breakerd", "collapsed": true, "panels": [
      {"type": "timeseries", "title": "Journal latency", "targets": [
        {"refId": "A",
         "expr": "rate(breakerd_store_write_seconds_sum[$__rate_interval]) / [[job]]"},
        {"refId": "B", "expr": "increase(breakerd_refused_total[$__range]) + $__interval_ms"}
      ]}
    ]},
    {"type": "text", "title": "Notes"}
  ]
})js";

TEST_F(DashboardQueriesTest, SubstitutesTheVariablesOfEveryVisibleTargetInRowsAndOut) {
  absl::StatusOr<std::vector<PanelQuery>> queries = Read(kDashboard);
  ASSERT_THAT(queries, IsOk());
  ASSERT_EQ(queries->size(), 3u);
  EXPECT_EQ((*queries)[0].panel, "The fleet / Mode");
  EXPECT_TRUE((*queries)[0].instant);
  // A single-valued variable takes its first value; a multi-valued one all, regex-escaped
  // within a PromQL string (the backslash doubled).
  EXPECT_EQ((*queries)[0].expr, R"js(max by (mode) (breakerd_mode{job="breakerd", )js"
                                R"js(instance=~"(127\\.0\\.0\\.1:1|127\\.0\\.0\\.1:2)"}))js");
  EXPECT_EQ((*queries)[1].panel, "breakerd / Journal latency");
  EXPECT_FALSE((*queries)[1].instant);
  // max(1 s + 1 s, 4 x 1 s).
  EXPECT_EQ((*queries)[1].expr, "rate(breakerd_store_write_seconds_sum[4s]) / breakerd");
  EXPECT_EQ((*queries)[2].expr, "increase(breakerd_refused_total[120s]) + 1000");
  // The second query variable's selector used the first's value.
  EXPECT_THAT(asked_, ElementsAre("breakerd_mode|job", R"js(up{job="breakerd"}|instance)js"));
}

TEST_F(DashboardQueriesTest, AnUndefinedVariableIsNamed) {
  EXPECT_THAT(Read(R"js({"panels": [{"type": "stat", "title": "Lag", "targets": [
                        {"refId": "A", "expr": "breakerd_node_policy_lag{node=\"$node\"}"}]}]})js"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("panel 'Lag' target A"), HasSubstr("$node"))));
}

TEST_F(DashboardQueriesTest, AVariableWithoutValuesIsAnError) {
  EXPECT_THAT(Read(R"js({"templating": {"list": [
                        {"name": "node", "type": "query", "query": "label_values(node_id)"}]},
                      "panels": []})js"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("variable 'node'")));
}

TEST_F(DashboardQueriesTest, AQueryOtherThanLabelValuesIsRefused) {
  EXPECT_THAT(Read(R"js({"templating": {"list": [
                        {"name": "v", "type": "query", "query": "query_result(up)"}]},
                      "panels": []})js"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("label_values")));
}

TEST_F(DashboardQueriesTest, ARegexFilterKeepsItsCaptureGroup) {
  absl::StatusOr<std::vector<PanelQuery>> queries = Read(R"js({
    "templating": {"list": [
      {"name": "port", "type": "query", "regex": "/127\\.0\\.0\\.1:(2)/",
       "query": "label_values(instance)"}]},
    "panels": [{"type": "stat", "title": "Up",
                "targets": [{"refId": "A", "expr": "up{port=\"$port\"}"}]}]})js");
  ASSERT_THAT(queries, IsOk());
  EXPECT_THAT(*queries, ElementsAre(Field(&PanelQuery::expr, R"js(up{port="2"})js")));
}

TEST_F(DashboardQueriesTest, ANonDashboardIsRefused) {
  EXPECT_THAT(Read("[1, 2]"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Read(R"js({"rows": []})js"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'panels'")));
}

}  // namespace
}  // namespace breaker::testing
