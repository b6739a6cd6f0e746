// What an operator's Prometheus sees of a live fleet. Two breakerd replicas on a 3-member etcd
// cluster, two breaker-sidecars (each beside a fake beacon node producing a block every slot,
// and in front of the same two fake relays: one withholds its payloads), two example_node
// processes, and a real Prometheus scraping the replicas and the sidecars every second, all
// on loopback. The fleet plays a script: bids, a builder's failure, a failed reveal that bans
// a relay, missed slots that trip SELF_BUILD, an operator's reset, the leader killed and
// restarted, a node stopped. After each step the test asks Prometheus's HTTP API what an operator
// would ask, and at the end the whole story over time; the example alert rules are loaded and seen
// to fire; and every query of the Grafana dashboard is run.
//
// Every wait polls Prometheus (or the fleet) for what it waits for, with a deadline; nothing
// asserts how long anything took.

#include <signal.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "sidecar/ssz/test_blocks.h"
#include "tests/observability/dashboard.h"
#include "tests/observability/prometheus.h"
#include "tests/support/fake_beacon_node.h"
#include "tests/support/fake_relay.h"
#include "tests/support/fleet_harness.h"
#include "tests/support/replica_harness.h"
#include "tests/support/sidecar_process.h"
#include "tests/support/status_matchers.h"
#include "tests/support/subprocess.h"
#include "tests/support/test_util.h"

namespace breaker::testing {
namespace {

// The dashboard an operator loads (examples/grafana/), from the test's data.
constexpr char kDashboard[] = "examples/grafana/breaker-fleet.json";
// The alert rules an operator loads (examples/prometheus/), and the job names their example
// prometheus.yml gives the replicas and the sidecars, which the rules name.
constexpr char kAlerts[] = "examples/prometheus/alerts.yml";
constexpr char kReplicasJob[] = "breakerd_replicas";
constexpr char kSidecarsJob[] = "breaker_sidecar";

// A relay's or builder's ban for failures lasts 10 epochs (over 10 minutes on the fast
// chain), so no epoch boundary lifts it mid-test; more than 2 missed slots in a row trip
// SELF_BUILD until a reset.
constexpr char kRules[] =
    "blacklist_period_epochs: 10\n"
    "missed_slots { preset: \"custom\" latched_rule: true max_allowed_missing_slots: 2 }\n";

// Seconds a sidecar keeps the fleet policy alone once breakerd is out of reach: shorter than
// a failover (the leader's lease must run out first), so that the failover shows.
constexpr int kStalenessLimitSeconds = 1;

// Prometheus sees a change within a scrape or two; the fleet's steps take slots.
constexpr absl::Duration kScrapeTimeout = absl::Seconds(60);

// The relays, by their index in every sidecar's upstreams.
constexpr size_t kWithholding = 0;
constexpr size_t kHonest = 1;
// Why the sidecars refuse each relay in the script: the withholding relay only while it is
// banned (never asked during SELF_BUILD), the honest one only in SELF_BUILD.
constexpr const char* kRefusalReason[] = {"relay_banned", "self_build"};

class FleetMetricsTest : public ReplicaFleetTest {
 protected:
  struct Sidecar {
    std::string id;
    std::unique_ptr<FakeBeaconNode> beacon_node;
    std::unique_ptr<Subprocess> process;
    // The local port of each relay, in the order of relays_.
    std::vector<int> ports;
    int metrics_port = 0;
    std::string metrics_address() const { return absl::StrCat("127.0.0.1:", metrics_port); }
  };

  // What the test's requests through the sidecars got: (sidecar, relay, HTTP status) -> count.
  using Answers = std::map<std::tuple<size_t, size_t, int>, int>;

  void TearDown() override {
    for (Sidecar& sidecar : sidecars_) {
      if (sidecar.process == nullptr) continue;
      sidecar.process->Kill(SIGTERM);
      ExpectCleanExit(*sidecar.process);
    }
    sidecars_.clear();
    prometheus_.reset();
    ReplicaFleetTest::TearDown();
  }

  // --- The fleet ---

  // A fake beacon node producing a block every slot for each sidecar: made before breakerd
  // starts, so that every slot it judges has its block.
  void AddBeaconNodes(int count) {
    for (int i = 0; i < count; ++i) {
      Sidecar sidecar;
      sidecar.id = absl::StrCat("sidecar-", i);
      sidecar.beacon_node = std::make_unique<FakeBeaconNode>(chain_);
      sidecar.beacon_node->SetProducing(true);
      sidecars_.push_back(std::move(sidecar));
    }
  }

  // Replica `i` with its metrics on a port of its own that stays the same across restarts,
  // as Prometheus's targets do.
  void StartReplicaWithMetrics(size_t i) {
    // The test counts leadership changes: under a sanitizer's slowdown a 5 s lease could run
    // out between two keepalives and add one.
    lease_ttl_seconds_ = 5 * kSanitizerSlowdown;
    while (replica_metrics_ports_.size() <= i) replica_metrics_ports_.push_back(FreeLoopbackPort());
    breakerd_flags_ = {absl::StrCat("--metrics_listen=127.0.0.1:", replica_metrics_ports_[i])};
    StartReplica(i);
    breakerd_flags_.clear();
  }

  std::string ReplicaMetricsAddress(size_t i) const {
    return absl::StrCat("127.0.0.1:", replica_metrics_ports_.at(i));
  }

  void StartSidecars() {
    for (Sidecar& sidecar : sidecars_) {
      sidecar.metrics_port = FreeLoopbackPort();
      const std::string config_path = absl::StrCat(dir_, "/", sidecar.id, ".textproto");
      std::ofstream config(config_path);
      config << "beacon_node_url: \"" << sidecar.beacon_node->url() << "\"\n";
      for (const Replica& replica : replicas_) {
        config << "breakerd_addresses: \"" << replica.address() << "\"\n";
      }
      config << "node_id: \"" << sidecar.id << "\"\n"
             << "network: \"" << kNetwork << "\"\n"
             << "fallback_config_file: \"" << config_path_ << "\"\n"
             << "staleness_limit_seconds: " << kStalenessLimitSeconds << "\n"
             << "metrics_listen: \"" << sidecar.metrics_address() << "\"\n";
      for (const FakeRelay* relay : relays_) {
        const int port = FreeLoopbackPort();
        sidecar.ports.push_back(port);
        config << "upstreams { listen_port: " << port << " url: \"" << relay->url() << "\" }\n";
      }
      config.close();
      ASSERT_TRUE(config.good()) << config_path;
      absl::StatusOr<std::unique_ptr<Subprocess>> started =
          StartReadySidecar(config_path, sidecar.id, Deadline());
      ASSERT_THAT(started, IsOk());
      sidecar.process = *std::move(started);
    }
  }

  void StartPrometheus() {
    Prometheus::ScrapeJob breakerd{kReplicasJob, {}};
    for (size_t i = 0; i < replicas_.size(); ++i) {
      breakerd.targets.push_back(ReplicaMetricsAddress(i));
    }
    Prometheus::ScrapeJob sidecars{kSidecarsJob, {}};
    for (const Sidecar& sidecar : sidecars_) sidecars.targets.push_back(sidecar.metrics_address());
    absl::StatusOr<std::unique_ptr<Prometheus>> started = Prometheus::Start(
        dir_ + "/prometheus", {breakerd, sidecars}, {std::filesystem::absolute(kAlerts).string()});
    ASSERT_THAT(started, IsOk());
    prometheus_ = *std::move(started);
  }

  void SetProducing(bool producing) {
    for (Sidecar& sidecar : sidecars_) sidecar.beacon_node->SetProducing(producing);
  }

  // --- Requests through the sidecars, each one recorded ---

  // A getHeader through sidecar `i` towards relay `relay`; its HTTP status (0: no answer).
  int GetHeader(size_t i, size_t relay) {
    httplib::Client client("127.0.0.1", sidecars_[i].ports[relay]);
    client.set_connection_timeout(10);
    client.set_read_timeout(30);
    httplib::Result result = client.Get(absl::StrCat("/eth/v1/builder/header/", CurrentSlot(),
                                                     "/0x", std::string(64, '1'), "/0xaaaa"));
    const int status = result ? result->status : 0;
    ++answers_[{i, relay, status}];
    return status;
  }

  // Polls every sidecar until each answers `status` for `relay`.
  bool EverySidecarAnswers(size_t relay, int status) {
    return PollUntil([&] {
      for (size_t i = 0; i < sidecars_.size(); ++i) {
        if (GetHeader(i, relay) != status) return false;
      }
      return true;
    });
  }

  // Sidecar `i`'s node takes relay `relay`'s header and asks it to reveal the payload; the
  // reveal's HTTP status.
  int Reveal(size_t i, size_t relay) {
    const core::Slot slot = CurrentSlot();
    httplib::Client client("127.0.0.1", sidecars_[i].ports[relay]);
    client.set_read_timeout(30);
    httplib::Result header = client.Get(
        absl::StrCat("/eth/v1/builder/header/", slot, "/0x", std::string(64, '1'), "/0xaaaa"));
    const int header_status = header ? header->status : 0;
    ++answers_[{i, relay, header_status}];
    if (header_status != 200) return 0;
    // A valid block of the header's block hash: the sidecar reads its root.
    httplib::Result reveal = client.Post(
        "/eth/v1/builder/blinded_blocks",
        sidecar::ssz::BlindedBlockJson(slot, FakeRelay::BlockHash()), "application/json");
    const int status = reveal ? reveal->status : 0;
    ++answers_[{i, relay, status}];
    return status;
  }

  // The count of `status` answers of sidecar `i` for `relay` (0: no answer).
  int Answered(size_t i, size_t relay, int status) const {
    auto it = answers_.find({i, relay, status});
    return it == answers_.end() ? 0 : it->second;
  }

  // --- Asking Prometheus ---

  // Waits until `expression`'s answer satisfies `condition`; fails the test otherwise.
  std::vector<Series> Await(const std::string& expression,
                            const std::function<bool(const std::vector<Series>&)>& condition,
                            const std::string& what) {
    absl::StatusOr<std::vector<Series>> answer =
        prometheus_->AwaitQuery(expression, condition, kScrapeTimeout);
    EXPECT_TRUE(answer.ok()) << what << ": " << answer.status();
    return answer.value_or(std::vector<Series>());
  }

  // Waits until `expression` is one series of value `value`.
  void AwaitValue(const std::string& expression, double value, const std::string& what) {
    Await(
        expression,
        [&](const std::vector<Series>& answer) {
          return answer.size() == 1 && answer[0].value() == value;
        },
        what);
  }

  // Waits until `expression`, a series per value of `label`, has exactly `expected`.
  void AwaitByLabel(const std::string& expression, const std::string& label,
                    const std::map<std::string, double>& expected, const std::string& what) {
    Await(
        expression,
        [&](const std::vector<Series>& answer) {
          std::map<std::string, double> got;
          for (const Series& series : answer) got[series.label(label)] = series.value();
          return got == expected;
        },
        what);
  }

  // Waits until Prometheus's requests counters of every sidecar and relay are what the
  // test's own requests got: forwarded for each 200, refused for each 204 (each for the
  // relay's kRefusalReason), upstream_error for each 500 (the relay's own) or no answer.
  void AwaitRequestCounts(const std::string& what) {
    for (size_t i = 0; i < sidecars_.size(); ++i) {
      for (size_t relay = 0; relay < relays_.size(); ++relay) {
        AwaitByLabel(absl::StrCat("breaker_sidecar_requests_total{instance=\"",
                                  sidecars_[i].metrics_address(), "\",upstream=\"",
                                  relays_[relay]->url(), "\"}"),
                     "outcome",
                     {{"forwarded", Answered(i, relay, 200)},
                      {"refused", Answered(i, relay, 204)},
                      {"upstream_error", Answered(i, relay, 500) + Answered(i, relay, 0)}},
                     absl::StrCat(what, ": ", sidecars_[i].id, " towards relay ", relay));
        std::map<std::string, double> reasons;
        if (const int refused = Answered(i, relay, 204); refused > 0) {
          reasons[kRefusalReason[relay]] = refused;
        }
        AwaitByLabel(absl::StrCat("sum by (reason) (breaker_sidecar_refused_total{instance=\"",
                                  sidecars_[i].metrics_address(), "\",upstream=\"",
                                  relays_[relay]->url(), "\"}) > 0"),
                     "reason", reasons,
                     absl::StrCat(what, ": ", sidecars_[i].id, "'s 204s by reason, relay ", relay));
      }
    }
  }

  // The series of `expression` from the test's start until now, a sample a second.
  std::vector<Series> History(const std::string& expression) {
    absl::StatusOr<std::vector<Series>> answer =
        prometheus_->QueryRange(expression, begin_, absl::Now(), absl::Seconds(1));
    EXPECT_THAT(answer, IsOk());
    return answer.value_or(std::vector<Series>());
  }

  // Of `history` (a series per value of `label`, 0 or 1 at each step), the values at 1 in
  // the order they took over, each run once: "all_builders, self_build, all_builders".
  static std::vector<std::string> Succession(const std::vector<Series>& history,
                                             const std::string& label) {
    std::map<absl::Time, std::string> at_one;
    for (const Series& series : history) {
      for (const auto& [time, value] : series.samples) {
        if (value == 1) at_one[time] = series.label(label);
      }
    }
    std::vector<std::string> succession;
    for (const auto& [time, value] : at_one) {
      if (succession.empty() || succession.back() != value) succession.push_back(value);
    }
    return succession;
  }

  // Waits until Prometheus has evaluated every alert rule, and expects each to evaluate
  // without error against the live fleet.
  void ExpectEveryRuleHealthy() {
    absl::StatusOr<std::vector<Prometheus::Rule>> rules;
    ASSERT_TRUE(PollUntil([&] {
      rules = prometheus_->Rules();
      return rules.ok() && std::none_of(rules->begin(), rules->end(),
                                        [](const auto& rule) { return rule.health == "unknown"; });
    })) << "the rules were not all evaluated: "
        << rules.status();
    EXPECT_FALSE(rules->empty()) << kAlerts << " has no rule";
    for (const Prometheus::Rule& rule : *rules) {
      EXPECT_EQ(rule.health, "ok") << rule.group << "/" << rule.name << ": " << rule.last_error;
    }
    std::cerr << "alerts: " << rules->size() << " rules evaluated" << std::endl;
  }

  // Waits until the alert `name` is in `state` ("firing", "pending"), or has been at any time
  // in the last five minutes when `state` is empty.
  void AwaitAlert(const std::string& name, const std::string& state, const std::string& what) {
    const std::string selector =
        state.empty() ? absl::StrCat("max_over_time(ALERTS{alertname=\"", name, "\"}[5m])")
                      : absl::StrCat("ALERTS{alertname=\"", name, "\",alertstate=\"", state, "\"}");
    Await(
        selector, [](const std::vector<Series>& answer) { return !answer.empty(); }, what);
  }

  // Runs every query of the dashboard over the test's time range and expects each to answer
  // series.
  void ExpectEveryPanelAnswers() {
    std::ifstream file(kDashboard);
    ASSERT_TRUE(file.good()) << kDashboard << " is not in the test's data";
    std::stringstream json;
    json << file.rdbuf();
    DashboardContext context;
    context.from = begin_;
    context.to = absl::Now();
    context.scrape_interval = Prometheus::kScrapeInterval;
    context.label_values = [this](absl::string_view selector, absl::string_view label) {
      return prometheus_->LabelValues(selector, label);
    };
    absl::StatusOr<std::vector<PanelQuery>> queries = DashboardQueries(json.str(), context);
    ASSERT_THAT(queries, IsOk()) << kDashboard;
    EXPECT_FALSE(queries->empty()) << kDashboard << " has no PromQL target";
    for (const PanelQuery& query : *queries) {
      absl::StatusOr<std::vector<Series>> answer =
          query.instant
              ? prometheus_->Query(query.expr, context.to)
              : prometheus_->QueryRange(query.expr, context.from, context.to, absl::Seconds(1));
      const std::string where =
          absl::StrCat("panel '", query.panel, "' target ", query.ref_id, ": ", query.expr);
      ASSERT_THAT(answer, IsOk()) << where;
      EXPECT_FALSE(answer->empty()) << where << " answers no series while the fleet runs";
    }
    std::cerr << "dashboard: " << queries->size() << " queries answered series" << std::endl;
  }

  std::vector<Sidecar> sidecars_;
  std::vector<const FakeRelay*> relays_;
  std::vector<int> replica_metrics_ports_;
  std::unique_ptr<Prometheus> prometheus_;
  Answers answers_;
  absl::Time begin_ = absl::Now();
};

TEST_F(FleetMetricsTest, PrometheusAnswersWhatHappenedToTheFleet) {
  ASSERT_NO_FATAL_FAILURE(Configure(FastChain(/*gloas=*/false), kRules));
  AddBeaconNodes(2);
  AddReplicas(2);
  ASSERT_NO_FATAL_FAILURE(StartReplicaWithMetrics(0));
  ASSERT_TRUE(AwaitLeadingLine(0).has_value()) << "breakerd-1 did not lead (its log is above)";
  ASSERT_NO_FATAL_FAILURE(StartReplicaWithMetrics(1));
  ASSERT_TRUE(AwaitStandbyLine(1).has_value()) << "breakerd-2 did not stand by";
  ASSERT_EQ(AwaitLeader(), std::optional<size_t>(0));
  FakeRelay withholding(FakeRelay::Reveals::kWithholds);
  FakeRelay honest(FakeRelay::Reveals::kDelivers);
  relays_ = {&withholding, &honest};
  ASSERT_NO_FATAL_FAILURE(StartSidecars());
  StartNodes(2);
  ASSERT_NO_FATAL_FAILURE(StartPrometheus());
  const std::string leader = ReplicaMetricsAddress(0);
  const std::string standby = ReplicaMetricsAddress(1);

  // 1. Every target is up; one replica states the fleet (a standby has no state to state),
  //    and it holds the four nodes' streams: two sidecars and two example nodes.
  AwaitValue("sum(up)", 4, "every target scraped");
  AwaitByLabel("count by (instance) (breakerd_mode)", "instance", {{leader, 3}},
               "only the leader states the mode");
  AwaitByLabel("breakerd_leader", "instance", {{leader, 1}, {standby, 0}}, "one replica leads");
  AwaitByLabel("breakerd_etcd_reachable", "instance", {{leader, 1}, {standby, 1}},
               "both replicas reach etcd");
  AwaitValue("sum(breakerd_connected_nodes)", 4, "the nodes connected");
  AwaitByLabel("breakerd_node_connected", "node_id",
               {{"bn-1", 1}, {"bn-2", 1}, {"sidecar-0", 1}, {"sidecar-1", 1}},
               "each node connected");
  AwaitByLabel("breaker_sidecar_breakerd_connected", "instance",
               {{sidecars_[0].metrics_address(), 1}, {sidecars_[1].metrics_address(), 1}},
               "each sidecar holds a stream");

  // 2. Bids through both relays, a header from each through each sidecar, and a builder's
  //    failure: banned for its own failure.
  node(0).Observe(Bid(11, withholding.url()));
  node(1).Observe(Bid(12, honest.url()));
  node(0).Observe(Missing(13, "r13"));
  ASSERT_TRUE(node(0).AwaitHandled());
  ASSERT_TRUE(node(1).AwaitHandled());
  for (size_t i = 0; i < sidecars_.size(); ++i) {
    EXPECT_EQ(GetHeader(i, kWithholding), 200);
    EXPECT_EQ(GetHeader(i, kHonest), 200);
  }
  AwaitValue("sum(breakerd_observations_total{kind=\"bid_seen\"})", 2, "bids handled");
  AwaitValue("sum(breakerd_observations_total{outcome=\"refused\"})", 0, "no observation refused");
  AwaitByLabel("sum by (cause) (breakerd_banned_builders)", "cause",
               {{"own", 1}, {"operator", 0}, {"collateral", 0}}, "builder 13 banned");
  AwaitRequestCounts("headers forwarded");

  // 3. Sidecar 0's node signs the withholding relay's header and gets no payload: the relay
  //    is banned for it, fleet-wide, and both sidecars refuse it from then on.
  EXPECT_EQ(Reveal(0, kWithholding), 500);
  AwaitByLabel("sum by (instance) (breaker_sidecar_reveal_failures_total)", "instance",
               {{sidecars_[0].metrics_address(), 1}, {sidecars_[1].metrics_address(), 0}},
               "reveal failures by sidecar");
  AwaitByLabel("sum by (upstream) (breaker_sidecar_reveal_failures_total)", "upstream",
               {{withholding.url(), 1}, {honest.url(), 0}}, "reveal failures by upstream");
  // The standby's counters are there too, at 0.
  AwaitByLabel("sum by (target) (breakerd_failures_recorded_total)", "target",
               {{"builder", 1}, {"relay", 1}}, "failures recorded");
  AwaitByLabel("sum by (cause) (breakerd_banned_relays)", "cause",
               {{"own", 1}, {"operator", 0}, {"collateral", 0}}, "the relay banned");
  ASSERT_TRUE(EverySidecarAnswers(kWithholding, 204));
  for (size_t i = 0; i < sidecars_.size(); ++i) EXPECT_EQ(GetHeader(i, kHonest), 200);
  AwaitRequestCounts("the banned relay refused");
  const absl::Time relay_banned = absl::Now();

  // 4. The beacon nodes see no more blocks: more than 2 missed slots trip SELF_BUILD, and
  //    every header is refused, the honest relay's too.
  SetProducing(false);
  AwaitByLabel("breakerd_mode", "mode",
               {{"all_builders", 0}, {"trusted_only", 0}, {"self_build", 1}},
               "breakerd in SELF_BUILD");
  AwaitValue("sum(breaker_sidecar_mode{mode=\"self_build\"})", 2, "both sidecars in SELF_BUILD");
  AwaitAlert("BreakerdModeNotAllBuilders", "firing", "the operator is told of SELF_BUILD");
  ASSERT_TRUE(EverySidecarAnswers(kHonest, 204));
  AwaitRequestCounts("SELF_BUILD refuses every relay");
  std::vector<int> honest_refused_when_tripped;
  for (size_t i = 0; i < sidecars_.size(); ++i) {
    honest_refused_when_tripped.push_back(Answered(i, kHonest, 204));
  }

  // 5. Blocks again, and an operator's reset: the failures' bans and the breaker lifted.
  SetProducing(true);
  v1::ResetRequest reset;
  reset.set_reason("chain healthy again");
  ASSERT_THAT(Call(&v1::Admin::Stub::async::Reset, reset), IsOk());
  AwaitByLabel("breakerd_mode", "mode",
               {{"all_builders", 1}, {"trusted_only", 0}, {"self_build", 0}},
               "breakerd back to ALL_BUILDERS");
  AwaitValue("sum(breakerd_banned_relays) + sum(breakerd_banned_builders)", 0, "bans lifted");
  AwaitValue("absent(ALERTS{alertname=\"BreakerdModeNotAllBuilders\",alertstate=\"firing\"})", 1,
             "the mode alert resolved");
  ASSERT_TRUE(EverySidecarAnswers(kWithholding, 200));
  ASSERT_TRUE(EverySidecarAnswers(kHonest, 200));
  AwaitValue("sum(breaker_sidecar_mode{mode=\"all_builders\"})", 2, "both sidecars forward");
  AwaitRequestCounts("forwarded again after the reset");
  const absl::Time reset_done = absl::Now();

  // 6. The leader dies. Its target goes down; the sidecars, out of reach of any leader past
  //    their staleness limit, apply their local rules too; the standby takes over and the
  //    four nodes reconnect to it.
  const absl::Time killed = absl::Now();
  StopReplica(0, SIGKILL);
  ASSERT_EQ(AwaitLeader(/*except=*/0), std::optional<size_t>(1));
  Await(
      absl::StrCat("up{instance=\"", leader, "\"}"),
      [](const std::vector<Series>& answer) {
        return answer.size() == 1 && answer[0].value() == 0;
      },
      "the killed leader's target down");
  AwaitByLabel("count by (instance) (breakerd_mode)", "instance", {{standby, 3}},
               "the standby states the mode");
  AwaitByLabel("breakerd_leader", "instance", {{standby, 1}}, "the standby leads");
  // Whether the gap outlasts the alert's `for:` is the machine's pace; that it was seen is not.
  AwaitAlert("BreakerdNoLeader", "", "the alert rule saw no leader during the failover");
  AwaitValue("sum(breakerd_connected_nodes)", 4, "the nodes reconnected to the new leader");
  AwaitByLabel(
      "max by (instance) "
      "(max_over_time(breaker_sidecar_policy_source{source=\"fleet+local\"}[5m]))",
      "instance", {{sidecars_[0].metrics_address(), 1}, {sidecars_[1].metrics_address(), 1}},
      "each sidecar was stale during the failover");
  AwaitValue("sum(breaker_sidecar_policy_source{source=\"fleet\"})", 2,
             "both sidecars back on the fleet's policy");

  // 7. The killed replica restarts over the same state: a standby now, up and stating nothing.
  ASSERT_NO_FATAL_FAILURE(StartReplicaWithMetrics(0));
  ASSERT_TRUE(AwaitStandbyLine(0).has_value()) << "breakerd-1 did not stand by after restarting";
  AwaitValue(absl::StrCat("up{instance=\"", leader, "\"}"), 1, "the restarted replica scraped");
  AwaitValue(absl::StrCat("absent(breakerd_mode{instance=\"", leader, "\"})"), 1,
             "the restarted replica stands by");
  AwaitByLabel("breakerd_leader", "instance", {{leader, 0}, {standby, 1}},
               "the restarted replica is the standby");
  // Per process: the new leader took the lead once; the restarted one has not led.
  AwaitByLabel("breakerd_leadership_changes_total", "instance", {{leader, 0}, {standby, 1}},
               "leadership changes by process");
  for (size_t i = 0; i < sidecars_.size(); ++i) {
    EXPECT_EQ(GetHeader(i, kWithholding), 200);
    EXPECT_EQ(GetHeader(i, kHonest), 200);
  }
  AwaitRequestCounts("forwarded under the new leader");

  // 8. A node stops: breakerd still knows it, without a stream.
  node(1).process().Kill(SIGTERM);
  ExpectCleanExit(node(1).process());
  AwaitByLabel("breakerd_node_connected", "node_id",
               {{"bn-1", 1}, {"bn-2", 0}, {"sidecar-0", 1}, {"sidecar-1", 1}},
               "bn-2 without a stream");
  AwaitValue("sum(breakerd_known_nodes) - sum(breakerd_connected_nodes)", 1,
             "one node known and not connected");

  // 9. The story over time, as an operator's graphs show it.
  const std::string range =
      absl::StrCat(static_cast<int64_t>(absl::ToDoubleSeconds(absl::Now() - begin_)) + 1, "s");
  // The mode in force: forwarding, tripped, forwarding again.
  EXPECT_THAT(Succession(History("max by (mode) (breakerd_mode)"), "mode"),
              ::testing::ElementsAre("all_builders", "self_build", "all_builders"));
  // Who stated the fleet's state: the first replica, then the second (one leader change).
  EXPECT_THAT(Succession(History("count by (instance) (breakerd_policy_version)"), "instance"),
              ::testing::ElementsAre(leader, standby));
  EXPECT_THAT(Succession(History("breakerd_leader"), "instance"),
              ::testing::ElementsAre(leader, standby));
  AwaitValue(absl::StrCat("count(count by (instance) (count_over_time(breakerd_policy_version[",
                          range, "])))"),
             2, "two replicas led");
  // The policy version never went back across the failover.
  for (const Series& series : History("max(breakerd_policy_version)")) {
    for (size_t i = 1; i < series.samples.size(); ++i) {
      EXPECT_GE(series.samples[i].second, series.samples[i - 1].second)
          << "the policy version went back at " << series.samples[i].first;
    }
  }
  // The sidecars were stale only during the failover.
  for (const Series& series :
       History("max by (instance) (breaker_sidecar_policy_source{source=\"fleet+local\"})")) {
    for (const auto& [time, value] : series.samples) {
      if (value == 1) {
        EXPECT_GT(time, killed) << series.label("instance") << " stale before the kill";
      }
    }
  }
  // 204s by upstream: the withholding relay's while banned; the honest one's only while the
  // breaker was tripped (the counters at the reset are those at the trip).
  for (size_t i = 0; i < sidecars_.size(); ++i) {
    const std::string selector =
        absl::StrCat("breaker_sidecar_requests_total{instance=\"", sidecars_[i].metrics_address(),
                     "\",outcome=\"refused\",upstream=\"", honest.url(), "\"}");
    absl::StatusOr<std::vector<Series>> before = prometheus_->Query(selector, relay_banned);
    ASSERT_THAT(before, IsOk());
    ASSERT_EQ(before->size(), 1u);
    EXPECT_EQ((*before)[0].value(), 0) << "honest relay refused before the trip";
    absl::StatusOr<std::vector<Series>> after = prometheus_->Query(selector, reset_done);
    ASSERT_THAT(after, IsOk());
    ASSERT_EQ(after->size(), 1u);
    EXPECT_EQ((*after)[0].value(), honest_refused_when_tripped[i]);
  }
  // Reveal failures over the run: one, of the withholding relay, seen by sidecar 0.
  // (increase() extrapolates, so its value is about 1, not exactly.)
  Await(
      absl::StrCat("sum by (upstream) (increase(breaker_sidecar_reveal_failures_total[", range,
                   "])) > 0"),
      [&](const std::vector<Series>& answer) {
        return answer.size() == 1 && answer[0].label("upstream") == withholding.url();
      },
      "reveal failures over the run");

  // 10. Every alert rule evaluates against the live fleet, and every panel of the dashboard
  //     answers series.
  ASSERT_NO_FATAL_FAILURE(ExpectEveryRuleHealthy());
  ASSERT_NO_FATAL_FAILURE(ExpectEveryPanelAnswers());
}

}  // namespace
}  // namespace breaker::testing
