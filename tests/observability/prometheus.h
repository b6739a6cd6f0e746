#ifndef TESTS_OBSERVABILITY_PROMETHEUS_H_
#define TESTS_OBSERVABILITY_PROMETHEUS_H_

// A real Prometheus server (Debian's /usr/bin/prometheus) for tests: started on loopback with a
// generated prometheus.yml that scrapes the given targets every second, its storage in the
// test's directory, and asked through its HTTP API (/api/v1/query, /api/v1/query_range) what
// an operator would ask. It dies with the test.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tests/support/subprocess.h"

namespace breaker::testing {

// One time series of an answer: its labels (the metric name as __name__, when the expression
// keeps it) and its samples, oldest first. An instant query's series has one sample.
struct Series {
  std::map<std::string, std::string> labels;
  std::vector<std::pair<absl::Time, double>> samples;

  // The label's value; empty when the series has no such label.
  std::string label(const std::string& name) const;
  // The value of the latest sample. REQUIRES: !samples.empty().
  double value() const { return samples.back().second; }
};

// Not thread-safe: the test's thread drives it (and its process dies with that thread).
class Prometheus {
 public:
  struct ScrapeJob {
    // The job label Prometheus gives the targets' series.
    std::string name;
    // "127.0.0.1:PORT" of each target, which serves /metrics.
    std::vector<std::string> targets;
  };

  // The scrape interval: an operator's 15 s would make a test wait minutes for its answers.
  static constexpr absl::Duration kScrapeInterval = absl::Seconds(1);

  // Writes prometheus.yml under `directory` (created when missing), loading the rule files
  // `rule_files` (absolute paths), and starts Prometheus on a free loopback port with its
  // storage there, then waits until it says it is ready.
  // Returns NOT_FOUND when /usr/bin/prometheus is missing (install Debian's prometheus, as
  // tools/setup.sh does), UNAVAILABLE when it exits or is not ready in time (its log, echoed
  // above, says why).
  static absl::StatusOr<std::unique_ptr<Prometheus>> Start(
      const std::string& directory, const std::vector<ScrapeJob>& jobs,
      const std::vector<std::string>& rule_files = {});

  // Stops the server (SIGTERM, then SIGKILL with the Subprocess).
  ~Prometheus();

  // "http://127.0.0.1:PORT", for messages.
  std::string url() const;

  // Evaluates `expression` at `at` (now when unset). An answer that is a scalar is one series
  // without labels. Returns INVALID_ARGUMENT when Prometheus refuses the expression (its
  // error quoted), UNAVAILABLE when it does not answer.
  absl::StatusOr<std::vector<Series>> Query(absl::string_view expression,
                                            std::optional<absl::Time> at = std::nullopt) const;

  // Evaluates `expression` at every `step` from `start` to `end`. Errors as Query's.
  absl::StatusOr<std::vector<Series>> QueryRange(absl::string_view expression, absl::Time start,
                                                 absl::Time end, absl::Duration step) const;

  // The values of `label` across the series `selector` selects now (every series when empty),
  // sorted: what a dashboard's label_values(selector, label) lists. Errors as Query's.
  absl::StatusOr<std::vector<std::string>> LabelValues(absl::string_view selector,
                                                       absl::string_view label) const;

  // Polls Query(`expression`) until `condition` holds for its answer, or `timeout` passes;
  // returns the last answer that satisfied it, or an error naming the expression and the last
  // answer (or the error) when it never did.
  absl::StatusOr<std::vector<Series>> AwaitQuery(
      absl::string_view expression,
      const std::function<bool(const std::vector<Series>&)>& condition,
      absl::Duration timeout) const;

  // One rule of the rule files, as Prometheus last evaluated it (/api/v1/rules).
  struct Rule {
    std::string group;
    // The alert's or recording rule's name.
    std::string name;
    // "ok", "err" (last_error says why), or "unknown" before its first evaluation.
    std::string health;
    std::string last_error;
  };

  // Every rule loaded, in the files' order. Errors as Query's.
  absl::StatusOr<std::vector<Rule>> Rules() const;

  // "{instance="127.0.0.1:1",job="breakerd"} 1; ..." of an answer, for messages.
  static std::string Describe(const std::vector<Series>& answer);

 private:
  Prometheus(int port, std::unique_ptr<Subprocess> process)
      : port_(port), process_(std::move(process)) {}

  // POSTs `params` to the API's `path` and returns the answer's data.result, as series.
  absl::StatusOr<std::vector<Series>> Ask(
      const std::string& path, const std::vector<std::pair<std::string, std::string>>& params,
      absl::string_view expression) const;

  const int port_;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace breaker::testing

#endif  // TESTS_OBSERVABILITY_PROMETHEUS_H_
