#include "tests/observability/prometheus.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_util.h"

namespace breaker::testing {
namespace {

constexpr char kBinary[] = "/usr/bin/prometheus";
// Its start replays no write-ahead log here (the storage is new): seconds, even under load.
constexpr absl::Duration kStartTimeout = absl::Seconds(60);

using Json = nlohmann::json;

std::string SecondsText(absl::Time time) {
  return absl::StrFormat("%.3f", absl::ToDoubleSeconds(time - absl::UnixEpoch()));
}

// One [unix seconds, "value"] pair of the API.
absl::StatusOr<std::pair<absl::Time, double>> ParseSample(const Json& pair) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_string()) {
    return absl::InternalError(absl::StrCat("a sample is not [time, \"value\"]: ", pair.dump()));
  }
  double value = 0;
  // "NaN", "+Inf" and "-Inf" included.
  if (!absl::SimpleAtod(pair[1].get<std::string>(), &value)) {
    return absl::InternalError(absl::StrCat("a sample's value is no number: ", pair.dump()));
  }
  return std::make_pair(absl::UnixEpoch() + absl::Seconds(pair[0].get<double>()), value);
}

absl::StatusOr<Series> ParseSeries(const Json& result, const char* samples_field) {
  Series series;
  if (result.contains("metric")) {
    for (const auto& [name, value] : result["metric"].items()) {
      series.labels[name] = value.get<std::string>();
    }
  }
  const Json& samples = result[samples_field];
  for (const Json& pair :
       std::string(samples_field) == "value" ? Json::array({samples}) : samples) {
    absl::StatusOr<std::pair<absl::Time, double>> sample = ParseSample(pair);
    if (!sample.ok()) return sample.status();
    series.samples.push_back(*sample);
  }
  return series;
}

// The data of an API answer whose status is "success"; the error Prometheus gave otherwise.
absl::StatusOr<Json> Data(const httplib::Result& result, absl::string_view what) {
  if (!result) {
    return absl::UnavailableError(
        absl::StrCat("Prometheus did not answer ", what, ": ", httplib::to_string(result.error())));
  }
  Json answer = Json::parse(result->body, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) {
    return absl::InternalError(absl::StrCat("Prometheus answered ", what, " with HTTP ",
                                            result->status,
                                            " and no JSON object: ", result->body.substr(0, 200)));
  }
  if (answer.value("status", "") != "success") {
    return absl::InvalidArgumentError(absl::StrCat("Prometheus refused ", what, ": ",
                                                   answer.value("errorType", "?"), ": ",
                                                   answer.value("error", "(no error given)")));
  }
  return answer["data"];
}

}  // namespace

std::string Series::label(const std::string& name) const {
  auto it = labels.find(name);
  return it == labels.end() ? "" : it->second;
}

absl::StatusOr<std::unique_ptr<Prometheus>> Prometheus::Start(
    const std::string& directory, const std::vector<ScrapeJob>& jobs,
    const std::vector<std::string>& rule_files) {
  if (access(kBinary, X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat(kBinary,
                                            " is missing: install Debian's prometheus "
                                            "package (bash tools/setup.sh does)"));
  }
  std::filesystem::create_directories(directory);
  const std::string config_path = directory + "/prometheus.yml";
  {
    std::ofstream config(config_path, std::ios::trunc);
    const std::string interval = absl::FormatDuration(kScrapeInterval);
    // The timeout is the interval: Prometheus refuses a longer one.
    config << "global:\n"
           << "  scrape_interval: " << interval << "\n"
           << "  scrape_timeout: " << interval << "\n"
           << "  evaluation_interval: " << interval << "\n";
    if (!rule_files.empty()) {
      config << "rule_files: ['" << absl::StrJoin(rule_files, "', '") << "']\n";
    }
    config << "scrape_configs:\n";
    for (const ScrapeJob& job : jobs) {
      config << "  - job_name: " << job.name << "\n"
             << "    static_configs:\n"
             << "      - targets: ['" << absl::StrJoin(job.targets, "', '") << "']\n";
    }
    if (!config.good()) return absl::InternalError(absl::StrCat("cannot write ", config_path));
  }
  const int port = FreeLoopbackPort();
  Subprocess::Options options;
  options.binary = kBinary;
  options.name = "prometheus";
  options.args = {absl::StrCat("--config.file=", config_path),
                  absl::StrCat("--storage.tsdb.path=", directory, "/data"),
                  absl::StrCat("--web.listen-address=127.0.0.1:", port),
                  // Its info lines (every compaction, every block) would bury the fleet's log.
                  "--log.level=warn"};
  absl::StatusOr<std::unique_ptr<Subprocess>> process = Subprocess::Start(options);
  if (!process.ok()) return process.status();
  std::unique_ptr<Prometheus> prometheus(new Prometheus(port, *std::move(process)));
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1);
  const bool ready = WaitFor(
      [&] {
        if (prometheus->process_->WaitUntilExit(absl::Now()).has_value()) return true;
        httplib::Result result = client.Get("/-/ready");
        return result && result->status == 200;
      },
      kStartTimeout, absl::Milliseconds(100));
  if (std::optional<int> exited = prometheus->process_->WaitUntilExit(absl::Now())) {
    return absl::UnavailableError(absl::StrCat("prometheus ", Subprocess::DescribeStatus(*exited),
                                               " before it was ready; its log is above"));
  }
  if (!ready) {
    return absl::UnavailableError(absl::StrCat("prometheus was not ready on port ", port,
                                               " within ", absl::FormatDuration(kStartTimeout),
                                               "; its log is above"));
  }
  return prometheus;
}

Prometheus::~Prometheus() {
  // A clean stop closes its storage; the Subprocess kills one that lingers.
  process_->Kill(SIGTERM);
  process_->WaitUntilExit(absl::Now() + absl::Seconds(10));
}

std::string Prometheus::url() const { return absl::StrCat("http://127.0.0.1:", port_); }

absl::StatusOr<std::vector<Series>> Prometheus::Ask(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& params,
    absl::string_view expression) const {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(5);
  client.set_read_timeout(30);
  httplib::Params form(params.begin(), params.end());
  const std::string what = absl::StrCat(path, " of '", expression, "'");
  absl::StatusOr<Json> data = Data(client.Post(path, form), what);
  if (!data.ok()) return data.status();
  const std::string type = data->value("resultType", "");
  const Json& result = (*data)["result"];
  std::vector<Series> answer;
  if (type == "scalar") {
    absl::StatusOr<std::pair<absl::Time, double>> sample = ParseSample(result);
    if (!sample.ok()) return sample.status();
    answer.push_back(Series{{}, {*sample}});
    return answer;
  }
  if (type != "vector" && type != "matrix") {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " answered a ", type, ", not series: no panel can show it"));
  }
  for (const Json& each : result) {
    absl::StatusOr<Series> series = ParseSeries(each, type == "vector" ? "value" : "values");
    if (!series.ok()) return series.status();
    answer.push_back(*std::move(series));
  }
  return answer;
}

absl::StatusOr<std::vector<Series>> Prometheus::Query(absl::string_view expression,
                                                      std::optional<absl::Time> at) const {
  std::vector<std::pair<std::string, std::string>> params = {{"query", std::string(expression)}};
  if (at.has_value()) params.emplace_back("time", SecondsText(*at));
  return Ask("/api/v1/query", params, expression);
}

absl::StatusOr<std::vector<Series>> Prometheus::QueryRange(absl::string_view expression,
                                                           absl::Time start, absl::Time end,
                                                           absl::Duration step) const {
  return Ask("/api/v1/query_range",
             {{"query", std::string(expression)},
              {"start", SecondsText(start)},
              {"end", SecondsText(end)},
              {"step", absl::StrFormat("%.3f", absl::ToDoubleSeconds(step))}},
             expression);
}

absl::StatusOr<std::vector<std::string>> Prometheus::LabelValues(absl::string_view selector,
                                                                 absl::string_view label) const {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(5);
  client.set_read_timeout(30);
  httplib::Params params;
  if (!selector.empty()) params.emplace("match[]", std::string(selector));
  const std::string path = absl::StrCat("/api/v1/label/", label, "/values");
  absl::StatusOr<Json> data = Data(client.Get(path, params, httplib::Headers()),
                                   absl::StrCat(path, " of '", selector, "'"));
  if (!data.ok()) return data.status();
  std::vector<std::string> values;
  for (const Json& value : *data) values.push_back(value.get<std::string>());
  return values;
}

absl::StatusOr<std::vector<Prometheus::Rule>> Prometheus::Rules() const {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(5);
  client.set_read_timeout(30);
  absl::StatusOr<Json> data = Data(client.Get("/api/v1/rules"), "/api/v1/rules");
  if (!data.ok()) return data.status();
  std::vector<Rule> rules;
  if (!data->contains("groups") || !(*data)["groups"].is_array()) return rules;
  for (const Json& group : (*data)["groups"]) {
    if (!group.contains("rules") || !group["rules"].is_array()) continue;
    for (const Json& rule : group["rules"]) {
      rules.push_back(Rule{group.value("name", ""), rule.value("name", ""),
                           rule.value("health", ""), rule.value("lastError", "")});
    }
  }
  return rules;
}

absl::StatusOr<std::vector<Series>> Prometheus::AwaitQuery(
    absl::string_view expression, const std::function<bool(const std::vector<Series>&)>& condition,
    absl::Duration timeout) const {
  absl::StatusOr<std::vector<Series>> answer;
  // A scrape a second: polling faster only loads the machine.
  if (WaitFor(
          [&] {
            answer = Query(expression);
            return answer.ok() && condition(*answer);
          },
          timeout, absl::Milliseconds(250))) {
    return answer;
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "'", expression, "' did not answer as awaited within ", absl::FormatDuration(timeout),
      "; last answer: ", answer.ok() ? Describe(*answer) : answer.status().ToString()));
}

std::string Prometheus::Describe(const std::vector<Series>& answer) {
  if (answer.empty()) return "no series";
  std::vector<std::string> parts;
  for (const Series& series : answer) {
    std::vector<std::string> labels;
    for (const auto& [name, value] : series.labels)
      labels.push_back(absl::StrCat(name, "=\"", value, "\""));
    parts.push_back(
        absl::StrCat("{", absl::StrJoin(labels, ","), "} ",
                     series.samples.empty() ? "(no samples)" : absl::StrCat(series.value())));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace breaker::testing
