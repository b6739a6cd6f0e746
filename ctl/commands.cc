#include "ctl/commands.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "client/channel_security.h"
#include "core/config.h"
#include "core/input_bounds.h"
#include "ctl/exit_codes.h"
#include "ctl/format.h"
#include "ctl/policy_watch.h"
#include "ctl/simulator.h"
#include "ctl/unary_call.h"
#include "google/protobuf/text_format.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "proto/codec/config_file.h"

namespace breaker::ctl {

namespace {

namespace v1 = ::breaker::v1;
using Stub = v1::Admin::Stub;

// One unary Admin rpc under the --timeout deadline.
template <typename Request, typename Response>
absl::StatusOr<Response> Call(const CommandContext& context,
                              void (Stub::async::*method)(grpc::ClientContext*, const Request*,
                                                          Response*,
                                                          std::function<void(grpc::Status)>),
                              const Request& request) {
  return CallUnary(*context.admin, method, request, context.options.timeout);
}

// Every page of a List rpc, merged into one answer; `entries` gives an answer's list. The
// rest of the answer (ListNodes' policy version) is the last page's.
template <typename Request, typename Response, typename Entries>
absl::StatusOr<Response> CallAllPages(
    const CommandContext& context,
    void (Stub::async::*method)(grpc::ClientContext*, const Request*, Response*,
                                std::function<void(grpc::Status)>),
    Request request, Entries entries) {
  Response all;
  do {
    absl::StatusOr<Response> page = Call(context, method, request);
    if (!page.ok()) return page.status();
    request.set_page_token(page->next_page_token());
    entries(all).MergeFrom(entries(*page));
    entries(*page).Swap(&entries(all));
    page->clear_next_page_token();
    all = *std::move(page);
  } while (!request.page_token().empty());
  return all;
}

absl::StatusOr<v1::ListNodesResponse> AllNodes(const CommandContext& context) {
  return CallAllPages(
      context, &Stub::async::ListNodes, v1::ListNodesRequest(),
      [](v1::ListNodesResponse & r) -> auto& { return *r.mutable_nodes(); });
}

// The INDEX argument.
absl::StatusOr<uint64_t> IndexArg(const CommandContext& context) {
  return ParseUint64("INDEX", context.line.args.at(0));
}

// What a command that changes the shared state prints: what was done, then the policy that
// results (or the policy as JSON).
absl::Status PrintSteered(const CommandContext& context, const std::string& done,
                          const v1::Policy& policy) {
  if (context.options.json) {
    context.out.Json(policy);
  } else {
    context.out.Line(done);
    context.out.Line(absl::StrCat("policy: ", PolicySummary(policy)));
  }
  return absl::OkStatus();
}

// --- status ---------------------------------------------------------------------------------

// Who leads and who stands by, for breakerd on etcd; nothing on SQLite.
void AddReplicationRows(const v1::Replication& replication, Table& table) {
  if (replication.leader().empty()) return;
  table.AddRow({"leader", absl::StrCat(replication.leader(), " since ",
                                       FormatTimestamp(replication.leader_since()))});
  table.AddRow({"replicas", JoinOrDash(replication.replicas())});
}

absl::Status RunStatus(const CommandContext& context) {
  absl::StatusOr<v1::Policy> policy =
      Call(context, &Stub::async::GetPolicy, v1::GetPolicyRequest());
  if (!policy.ok()) return policy.status();
  absl::StatusOr<v1::ListNodesResponse> nodes = AllNodes(context);
  if (!nodes.ok()) return nodes.status();

  if (context.options.json) {
    context.out.JsonText(
        absl::StrCat("{\"policy\":", ToJson(*policy), ",\"nodes\":", ToJson(*nodes), "}"));
    return absl::OkStatus();
  }
  int connected = 0;
  int lagging = 0;
  for (const v1::Node& node : nodes->nodes()) {
    if (!node.connected()) continue;
    ++connected;
    // Stale nodes are behind too, but that is their staleness; this counts the nodes that
    // hold a stream and still have not applied the current policy.
    if (node.lag() > 0) ++lagging;
  }
  Table table;
  table.AddRow({"mode", absl::StrCat(ModeName(policy->mode()), ": ", ModeMeaning(policy->mode()))});
  if (!policy->mode_reason().empty()) table.AddRow({"because", policy->mode_reason()});
  table.AddRow({"policy version", absl::StrCat(policy->version())});
  table.AddRow({"computed at", absl::StrCat("slot ", policy->computed_at_slot(), ", epoch ",
                                            policy->computed_at_epoch())});
  if (!policy->reason().empty()) table.AddRow({"last change", policy->reason()});
  table.AddRow(
      {"banned", absl::StrCat(Count(policy->banned_builders_size(), "builder", "builders"), ", ",
                              Count(policy->banned_relays_size(), "relay", "relays"))});
  table.AddRow(
      {"trusted", absl::StrCat(Count(policy->trusted_builders_size(), "builder", "builders"), ", ",
                               Count(policy->trusted_relays_size(), "relay", "relays"))});
  table.AddRow({"missed-slot breaker", MissedSlotSummary(policy->missed_slots())});
  table.AddRow({"nodes", absl::StrCat(connected, " of ", nodes->nodes_size(), " connected; ",
                                      lagging, " of them behind the current policy")});
  AddReplicationRows(nodes->replication(), table);
  context.out.Print(table);
  return absl::OkStatus();
}

// --- builders, builder ----------------------------------------------------------------------

absl::Status RunBuilders(const CommandContext& context) {
  v1::ListBuildersRequest request;
  request.set_banned_only(context.line.BoolFlag("banned"));
  absl::StatusOr<v1::ListBuildersResponse> response = CallAllPages(
      context, &Stub::async::ListBuilders, request,
      [](v1::ListBuildersResponse & r) -> auto& { return *r.mutable_builders(); });
  if (!response.ok()) return response.status();
  if (context.options.json) {
    context.out.Json(*response);
    return absl::OkStatus();
  }
  if (response->builders().empty()) {
    context.out.Line(request.banned_only() ? "no builders banned" : "no builders known");
    return absl::OkStatus();
  }
  // breakerd lists banned builders first, then by index.
  Table table({"INDEX", "FAILED", "BANNED UNTIL", "KIND", "TRUSTED", "RELAYS", "REASON"});
  for (const v1::Builder& builder : response->builders()) {
    const bool banned = builder.has_ban();
    table.AddRow({absl::StrCat(builder.builder_index()), absl::StrCat(builder.failed()),
                  banned ? BanUntil(builder.ban()) : "-",
                  banned ? BanKindName(builder.ban().kind()) : "-",
                  builder.trusted() ? "yes" : "no", JoinOrDash(builder.relays()),
                  banned ? builder.ban().reason() : "-"});
  }
  context.out.Print(table);
  return absl::OkStatus();
}

absl::Status RunBuilder(const CommandContext& context) {
  absl::StatusOr<uint64_t> index = IndexArg(context);
  if (!index.ok()) return index.status();
  v1::GetBuilderRequest request;
  request.set_builder_index(*index);
  absl::StatusOr<v1::Builder> builder = Call(context, &Stub::async::GetBuilder, request);
  if (!builder.ok()) return builder.status();
  if (context.options.json) {
    context.out.Json(*builder);
    return absl::OkStatus();
  }
  Table table;
  table.AddRow({"builder", absl::StrCat(builder->builder_index())});
  if (builder->has_ban()) {
    const v1::Ban& ban = builder->ban();
    table.AddRow(
        {"banned", absl::StrCat("until ", BanUntil(ban), " (", BanKindName(ban.kind()), ")")});
    table.AddRow({"reason", ban.reason()});
  } else {
    table.AddRow({"banned", "no"});
  }
  table.AddRow({"failures", builder->backoff_epoch() == 0
                                ? absl::StrCat(builder->failed())
                                : absl::StrCat(builder->failed(), " (counted until epoch ",
                                               builder->backoff_epoch(), ")")});
  table.AddRow({"trusted", builder->trusted() ? "yes" : "no"});
  table.AddRow({"pubkey", HexBytes(builder->pubkey())});
  table.AddRow({"relays", JoinOrDash(builder->relays())});
  context.out.Print(table);
  return absl::OkStatus();
}

std::string BuilderHint(const CommandContext&, const absl::Status& status) {
  if (status.code() == absl::StatusCode::kInvalidArgument) {
    return "18446744073709551615 (2^64-1) is the self-build index, which is never tracked";
  }
  return "";
}

// --- relays, nodes --------------------------------------------------------------------------

absl::Status RunRelays(const CommandContext& context) {
  absl::StatusOr<v1::ListRelaysResponse> response =
      Call(context, &Stub::async::ListRelays, v1::ListRelaysRequest());
  if (!response.ok()) return response.status();
  if (context.options.json) {
    context.out.Json(*response);
    return absl::OkStatus();
  }
  if (response->relays().empty()) {
    context.out.Line("no relays known");
    return absl::OkStatus();
  }
  Table table(
      {"RELAY", "CONFIGURED", "TRUSTED", "BANNED UNTIL", "KIND", "BUILDERS", "LAST BID", "REASON"});
  for (const v1::Relay& relay : response->relays()) {
    const bool banned = relay.has_ban();
    table.AddRow(
        {relay.relay(), relay.configured() ? "yes" : "no", relay.trusted() ? "yes" : "no",
         banned ? BanUntil(relay.ban()) : "-", banned ? BanKindName(relay.ban().kind()) : "-",
         JoinOrDash(relay.builder_indices()),
         relay.last_seen_epoch() == 0 ? "-" : absl::StrCat("epoch ", relay.last_seen_epoch()),
         banned ? relay.ban().reason() : "-"});
  }
  context.out.Print(table);
  return absl::OkStatus();
}

absl::Status RunNodes(const CommandContext& context) {
  absl::StatusOr<v1::ListNodesResponse> response = AllNodes(context);
  if (!response.ok()) return response.status();
  if (context.options.json) {
    context.out.Json(*response);
    return absl::OkStatus();
  }
  if (!response->replication().leader().empty()) {
    context.out.Line(absl::StrCat("leader ", response->replication().leader(), " since ",
                                  FormatTimestamp(response->replication().leader_since()),
                                  "; replicas ", JoinOrDash(response->replication().replicas())));
  }
  if (response->nodes().empty()) {
    context.out.Line("no nodes known");
    return absl::OkStatus();
  }
  context.out.Line(absl::StrCat("current policy version ", response->policy_version()));
  Table table({"NODE", "STATE", "PEER", "CLIENT", "CONNECTED SINCE", "LAST OBSERVATION", "ACKED",
               "LAG", "REFUSED", "REPLAYED"});
  std::vector<std::string> exhausted;
  for (const v1::Node& node : response->nodes()) {
    if (node.last_sequence() >= core::bounds::kMaxSequence) exhausted.push_back(node.node_id());
    table.AddRow({node.node_id(), node.connected() ? "connected" : "stale",
                  node.peer().empty() ? "-" : node.peer(),
                  node.client_version().empty() ? "-" : node.client_version(),
                  FormatTimestamp(node.connected_since()), FormatTimestamp(node.last_observation()),
                  absl::StrCat(node.policy_version_acked()), absl::StrCat(node.lag()),
                  absl::StrCat(node.observations_refused()),
                  absl::StrCat(node.observations_replayed())});
  }
  context.out.Print(table);
  for (const std::string& node : exhausted) {
    context.out.Line(absl::StrCat("node ", node, " has used sequence number ",
                                  core::bounds::kMaxSequence,
                                  ", the last: its observations are refused until "
                                  "'breakerctl reset --node=",
                                  node, "'"));
  }
  return absl::OkStatus();
}

// --- ban, unban -----------------------------------------------------------------------------

// `ban` and `unban` take a builder INDEX or --relay=URL, exactly one; true for the relay.
absl::StatusOr<bool> RelayOrIndex(const CommandContext& context) {
  const bool relay = context.line.Has("relay");
  if (relay && !context.line.args.empty()) {
    return UsageError("give a builder INDEX or --relay=URL, not both");
  }
  if (!relay && context.line.args.empty()) return UsageError("missing INDEX (or --relay=URL)");
  if (relay && context.line.Flag("relay").empty()) {
    return UsageError("--relay needs the relay's endpoint");
  }
  return relay;
}

absl::Status RunBan(const CommandContext& context) {
  absl::StatusOr<bool> relay = RelayOrIndex(context);
  if (!relay.ok()) return relay.status();
  const std::string reason = context.line.Flag("reason");
  if (reason.empty()) return UsageError("--reason needs a text: why, for the other operators");
  uint64_t until_epoch = 0;
  if (context.line.Has("until_epoch")) {
    absl::StatusOr<uint64_t> until = ParseUint64("--until_epoch", context.line.Flag("until_epoch"));
    if (!until.ok()) return until.status();
    if (*until == 0)
      return UsageError(
          "--until_epoch must be a future epoch; leave it out for a ban until unbanned");
    until_epoch = *until;
  }
  const std::string until_text =
      until_epoch == 0 ? std::string("until unbanned") : absl::StrCat("until epoch ", until_epoch);
  if (*relay) {
    v1::BanRelayRequest request;
    request.set_relay(context.line.Flag("relay"));
    request.set_reason(reason);
    request.set_until_epoch(until_epoch);
    absl::StatusOr<v1::Policy> policy = Call(context, &Stub::async::BanRelay, request);
    if (!policy.ok()) return policy.status();
    return PrintSteered(context,
                        absl::StrCat("relay ", request.relay(), " banned ", until_text,
                                     ", with every builder it serves"),
                        *policy);
  }
  absl::StatusOr<uint64_t> index = IndexArg(context);
  if (!index.ok()) return index.status();
  v1::BanBuilderRequest request;
  request.set_builder_index(*index);
  request.set_reason(reason);
  request.set_until_epoch(until_epoch);
  absl::StatusOr<v1::Policy> policy = Call(context, &Stub::async::BanBuilder, request);
  if (!policy.ok()) return policy.status();
  return PrintSteered(context, absl::StrCat("builder ", *index, " banned ", until_text), *policy);
}

std::string BanHint(const CommandContext& context, const absl::Status& status) {
  const bool relay = context.line.Has("relay");
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      // The hint that fits what breakerd refused: the epoch, the reason, or the relay.
      if (absl::StrContains(status.message(), "epoch")) {
        return "'breakerctl status' shows the current epoch: --until_epoch must be after it, at "
               "most 2^20 epochs ahead, or left out for a ban until 'breakerctl unban'";
      }
      if (absl::StrContains(status.message(), "reason")) {
        return "give a --reason of 1 to 1024 bytes, for the other operators to read";
      }
      return relay ? "give the relay's endpoint, e.g. https://relay.example.com" : "";
    case absl::StatusCode::kResourceExhausted:
      return relay ? "breakerd holds at most 64 operator bans of relays; lift one with "
                     "'breakerctl unban --relay=URL' ('breakerctl relays' lists them), or list "
                     "long-lived bans in the configuration's blacklisted_relays"
                   : "breakerd holds at most 256 operator bans of builders; lift one with "
                     "'breakerctl unban INDEX' ('breakerctl builders --banned' lists them), or "
                     "list permanent bans in the configuration's blacklisted_builders";
    default:
      return "";
  }
}

absl::Status RunUnban(const CommandContext& context) {
  absl::StatusOr<bool> relay = RelayOrIndex(context);
  if (!relay.ok()) return relay.status();
  if (*relay) {
    v1::UnbanRelayRequest request;
    request.set_relay(context.line.Flag("relay"));
    absl::StatusOr<v1::Policy> policy = Call(context, &Stub::async::UnbanRelay, request);
    if (!policy.ok()) return policy.status();
    return PrintSteered(context,
                        absl::StrCat("relay ", request.relay(),
                                     " unbanned (a ban for its builders' failures stays)"),
                        *policy);
  }
  absl::StatusOr<uint64_t> index = IndexArg(context);
  if (!index.ok()) return index.status();
  v1::UnbanBuilderRequest request;
  request.set_builder_index(*index);
  absl::StatusOr<v1::Policy> policy = Call(context, &Stub::async::UnbanBuilder, request);
  if (!policy.ok()) return policy.status();
  return PrintSteered(
      context, absl::StrCat("builder ", *index, " unbanned (and its failure record cleared)"),
      *policy);
}

std::string UnbanHint(const CommandContext& context, const absl::Status& status) {
  const bool relay = context.line.Has("relay");
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
      return relay ? "the operator does not ban this relay; 'breakerctl relays' lists the bans "
                     "(a ban of kind failure lifts with its causes, or by 'breakerctl reset')"
                   : "nothing to lift; 'breakerctl builders --banned' lists the bans";
    case absl::StatusCode::kFailedPrecondition:
      return relay ? "a relay in the configuration's blacklisted_relays stays banned until it is "
                     "removed from the file and 'breakerctl reload' runs"
                   : "a builder in the configuration's blacklisted_builders stays banned until it "
                     "is removed from the file and 'breakerctl reload' runs; one banned only as a "
                     "member of a banned relay is cleared by 'breakerctl reset', or by 'breakerctl "
                     "unban --relay=URL' for a relay the operator banned";
    case absl::StatusCode::kInvalidArgument:
      return relay ? "give the relay's endpoint, e.g. https://relay.example.com" : "";
    default:
      return "";
  }
}

// --- trust, untrust -------------------------------------------------------------------------

// `trust` and `untrust`: a builder INDEX or --relay=URL, exactly one.
absl::Status SetTrust(const CommandContext& context, bool trusted) {
  const bool relay = context.line.Has("relay");
  if (relay == !context.line.args.empty()) {
    return UsageError("give a builder INDEX or --relay=URL (one of them)");
  }
  const char* word = trusted ? "trusted" : "untrusted";
  if (relay) {
    v1::SetRelayTrustRequest request;
    request.set_relay(context.line.Flag("relay"));
    request.set_trusted(trusted);
    if (request.relay().empty()) return UsageError("--relay needs the relay's endpoint");
    absl::StatusOr<v1::Policy> policy = Call(context, &Stub::async::SetRelayTrust, request);
    if (!policy.ok()) return policy.status();
    return PrintSteered(context, absl::StrCat("relay ", request.relay(), " ", word), *policy);
  }
  absl::StatusOr<uint64_t> index = IndexArg(context);
  if (!index.ok()) return index.status();
  v1::SetBuilderTrustRequest request;
  request.set_builder_index(*index);
  request.set_trusted(trusted);
  absl::StatusOr<v1::Policy> policy = Call(context, &Stub::async::SetBuilderTrust, request);
  if (!policy.ok()) return policy.status();
  return PrintSteered(context, absl::StrCat("builder ", *index, " ", word), *policy);
}

absl::Status RunTrust(const CommandContext& context) { return SetTrust(context, true); }
absl::Status RunUntrust(const CommandContext& context) { return SetTrust(context, false); }

std::string TrustHint(const CommandContext& context, const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return "";
  if (context.line.Has("relay")) {
    return "give the relay's endpoint, e.g. https://relay.example.com or relay.example.com:18550";
  }
  return "18446744073709551615 (2^64-1) is the self-build index, which has no trust to set";
}

// --- reset ----------------------------------------------------------------------------------

absl::Status RunReset(const CommandContext& context) {
  if (context.line.Has("node")) {
    v1::ResetNodeRequest request;
    request.set_node_id(context.line.Flag("node"));
    if (request.node_id().empty()) return UsageError("--node needs the node's id");
    if (absl::Status id = core::bounds::CheckNodeId("--node", request.node_id()); !id.ok()) {
      return UsageError(std::string(id.message()));
    }
    request.set_reason(context.line.Flag("reason"));
    absl::StatusOr<v1::Policy> policy = Call(context, &Stub::async::ResetNode, request);
    if (!policy.ok()) return policy.status();
    return PrintSteered(context,
                        absl::StrCat("node ", request.node_id(),
                                     ": sequence numbers reset (its stream, if any, reconnects "
                                     "and numbers on from its clock); nothing else changed"),
                        *policy);
  }
  v1::ResetRequest request;
  request.set_reason(context.line.Flag("reason"));
  absl::StatusOr<v1::Policy> policy = Call(context, &Stub::async::Reset, request);
  if (!policy.ok()) return policy.status();
  return PrintSteered(context,
                      "failure records, relay bans and the latched missed-slot breaker cleared "
                      "(operator bans and trust overrides stay)",
                      *policy);
}

// --- watch ----------------------------------------------------------------------------------

// One line per policy version: when it arrived (`now`), then what it decides.
std::string WatchLine(const v1::Policy& policy, absl::Time now) {
  return absl::StrCat(FormatUtc(now), "  version ", policy.version(), "  ", ModeName(policy.mode()),
                      "  ", Count(policy.banned_builders_size(), "builder", "builders"), ", ",
                      Count(policy.banned_relays_size(), "relay", "relays"), " banned  slot ",
                      policy.computed_at_slot(), " epoch ", policy.computed_at_epoch(),
                      policy.reason().empty() ? "" : "  ", policy.reason());
}

absl::Status RunWatch(const CommandContext& context) {
  uint64_t count = 0;  // 0: until interrupted
  if (context.line.Has("count")) {
    absl::StatusOr<uint64_t> parsed = ParseUint64("--count", context.line.Flag("count"));
    if (!parsed.ok()) return parsed.status();
    if (*parsed == 0) return UsageError("--count takes a number of versions, at least 1");
    count = *parsed;
  }
  PolicyWatch watch(*context.admin);
  // breakerd sends the current policy at once: waiting longer than --timeout for it means it
  // is not answering. Later versions come when they come.
  absl::Duration timeout = context.options.timeout;
  for (uint64_t received = 0; count == 0 || received < count; ++received) {
    absl::StatusOr<v1::Policy> policy = watch.Next(timeout);
    if (!policy.ok()) return policy.status();
    timeout = absl::InfiniteDuration();
    if (context.options.json) {
      context.out.Json(*policy);
    } else {
      context.out.Line(WatchLine(*policy, context.clock->Now()));
    }
    context.out.Flush();
  }
  return absl::OkStatus();
}

// --- config, reload -------------------------------------------------------------------------

// The configuration as JSON or as the text format, which is also the file's format.
void PrintConfig(const CommandContext& context, const v1::Config& config) {
  if (context.options.json) {
    context.out.Json(config);
    return;
  }
  // The text format escapes control characters and non-ASCII bytes in strings itself.
  std::string text;
  google::protobuf::TextFormat::PrintToString(config, &text);
  context.out.Verbatim(text);
}

absl::Status RunConfig(const CommandContext& context) {
  absl::StatusOr<v1::Config> config =
      Call(context, &Stub::async::GetConfig, v1::GetConfigRequest());
  if (!config.ok()) return config.status();
  PrintConfig(context, *config);
  return absl::OkStatus();
}

absl::Status RunReload(const CommandContext& context) {
  absl::StatusOr<v1::Config> config =
      Call(context, &Stub::async::ReloadConfig, v1::ReloadConfigRequest());
  if (!config.ok()) return config.status();
  // A comment, so that the output stays a valid configuration file.
  if (!context.options.json) context.out.Line("# reloaded; the configuration now in force:");
  PrintConfig(context, *config);
  return absl::OkStatus();
}

std::string ReloadHint(const CommandContext&, const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
      return "breakerd runs without --config, or the file changes the chain settings, which "
             "cannot change while it runs; the configuration in force is unchanged";
    case absl::StatusCode::kInvalidArgument:
      return "the configuration in force is unchanged; fix the file and reload again ('breakerctl "
             "simulate --config FILE ...' tries a file offline)";
    case absl::StatusCode::kNotFound:
      return "the file breakerd was started with (--config) is gone; the configuration in force "
             "is unchanged";
    default:
      return "";
  }
}

// --- reload-access --------------------------------------------------------------------------

absl::Status RunReloadAccess(const CommandContext& context) {
  absl::StatusOr<v1::ReloadAccessResponse> response =
      Call(context, &Stub::async::ReloadAccess, v1::ReloadAccessRequest());
  if (!response.ok()) return response.status();
  if (context.options.json) {
    context.out.Json(*response);
    return absl::OkStatus();
  }
  context.out.Line(absl::StrCat(
      "access file reloaded: ", Count(response->principals(), "principal", "principals"),
      " in force; ", Count(response->streams_ended(), "stream", "streams"),
      " ended, their credential no longer allowed"));
  return absl::OkStatus();
}

std::string ReloadAccessHint(const CommandContext&, const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
      return "breakerd runs without --access_file, so every caller is an admin; an access file "
             "can only be given at start";
    case absl::StatusCode::kInvalidArgument:
      return "the access file in force is unchanged; fix the file and reload again";
    case absl::StatusCode::kNotFound:
      return "the file breakerd was started with (--access_file) is gone; the access file in "
             "force is unchanged";
    default:
      return "";
  }
}

// --- simulate -------------------------------------------------------------------------------

absl::Status RunSimulate(const CommandContext& context) {
  absl::StatusOr<core::Config> config = codec::LoadConfigFile(context.line.Flag("config"));
  if (!config.ok()) return InputError(config.status());
  absl::StatusOr<v1::Scenario> scenario = LoadScenarioFile(context.line.Flag("scenario"));
  if (!scenario.ok()) return InputError(scenario.status());
  absl::StatusOr<SimulationResult> result = Simulate(*config, *scenario);
  if (!result.ok()) return InputError(result.status());

  if (context.options.json) {
    context.out.JsonText(TimelineToJson(*result));
  } else {
    PrintTimeline(*result, context.out);
  }
  if (!result->failures.empty()) {
    return ExpectationsFailed(absl::StrCat(
        Count(result->failures.size(), "expectation", "expectations"), " of the scenario failed"));
  }
  return absl::OkStatus();
}

// --- help -----------------------------------------------------------------------------------

absl::Status RunHelp(const CommandContext& context) {
  if (context.line.args.empty()) {
    context.out.Verbatim(ProgramHelp(CommandSpecs()));
    return absl::OkStatus();
  }
  for (const Command& command : Commands()) {
    if (command.spec.name == context.line.args[0]) {
      context.out.Verbatim(CommandHelp(command.spec));
      return absl::OkStatus();
    }
  }
  return UsageError(absl::StrCat("no command '", context.line.args[0], "'"));
}

// --- the table ------------------------------------------------------------------------------

const FlagSpec kRelayFlag{"relay", "URL", "a relay's endpoint (any spelling) instead of a builder"};
const ArgSpec kOptionalIndexArg{"INDEX", "the builder's index on the chain", true};

std::vector<Command>* MakeCommands() {
  auto* commands = new std::vector<Command>;
  commands->push_back(Command{
      {"status",
       "status",
       "is the fleet taking builders' blocks? mode, bans, breaker, nodes",
       "Shows the fleet's policy: the mode and why, the policy version and the chain time it was\n"
       "computed at, how many builders and relays are banned or trusted, the pre-Gloas\n"
       "missed-slot breaker, and how many nodes are connected and behind the current policy.\n"
       "--json prints {\"policy\": <Policy>, \"nodes\": <ListNodesResponse>}.\n",
       {},
       {},
       "breakerctl status\nbreakerctl --target=breakerd.pool.internal:50051 status"},
      &RunStatus});
  commands->push_back(Command{
      {"builders",
       "builders [--banned]",
       "the builders breakerd knows, banned first",
       "Lists the builders breakerd knows (failure records, bans, operator bans, configured\n"
       "lists), banned first, then by index: failures in the back-off window, until when a ban\n"
       "lasts (an epoch, or \"reset\": until an operator acts), its kind (failure, operator,\n"
       "collateral: banned for another builder of its relay), trust, relays, and the reason.\n",
       {},
       {{"banned", "", "only the builders banned now"}},
       "breakerctl builders --banned"},
      &RunBuilders});
  commands->push_back(Command{
      {"builder",
       "builder INDEX",
       "why is builder INDEX banned? one builder in full",
       "Shows one builder: its ban and the reason, failures and their back-off window, trust,\n"
       "public key and relays.\n",
       {{"INDEX", "the builder's index on the chain"}},
       {},
       "breakerctl builder 42"},
      &RunBuilder,
      true,
      &BuilderHint});
  commands->push_back(Command{
      {"relays",
       "relays",
       "the relays breakerd knows, their members and bans",
       "Lists the relays breakerd knows (configured and learned from bids): whether configured\n"
       "and trusted, their ban, the builder indices they serve, and the epoch of the latest bid\n"
       "seen through them.\n",
       {},
       {},
       "breakerctl relays"},
      &RunRelays});
  commands->push_back(Command{
      {"nodes",
       "nodes",
       "which nodes are connected, and which are behind?",
       "Lists the beacon nodes of the fleet: connected now or stale (no stream), the peer\n"
       "address, client version, when the stream opened, the latest observation, the policy\n"
       "version the node acknowledged and how many versions it is behind (lag), and how many\n"
       "of its observations breakerd refused and ignored as replays since it started. A node\n"
       "that used sequence number 2^62, the last one accepted, is named below the table: its\n"
       "observations are refused until 'breakerctl reset --node=ID'.\n",
       {},
       {},
       "breakerctl nodes"},
      &RunNodes});
  commands->push_back(Command{
      {"ban",
       "ban INDEX --reason=TEXT [--until_epoch=N] | ban --relay=URL --reason=TEXT "
       "[--until_epoch=N]",
       "ban a builder, or a relay, fleet-wide",
       "Bans a builder for every node of the fleet, until epoch N or until unbanned. An operator\n"
       "ban does not count toward the fallback modes. Prints the resulting policy.\n"
       "With --relay instead of INDEX, bans a relay (any spelling of its endpoint): every bid\n"
       "through it is refused, and every builder it serves (learned from its bids, or\n"
       "configured) is banned with it, kind operator; neither counts toward the modes. The\n"
       "reason is at most 1024 bytes, N at most 2^20 epochs ahead, and at most 64 relays are\n"
       "banned this way at once.\n",
       {kOptionalIndexArg},
       {{"reason", "TEXT", "why, for the other operators", true},
        {"until_epoch", "N", "the ban lifts at this epoch (default: until unbanned)"},
        kRelayFlag},
       "breakerctl ban 42 --reason=\"withheld twice\" --until_epoch=400010\n"
       "breakerctl ban --relay=https://relay.example.com --reason=\"leaked bids\""},
      &RunBan,
      true,
      &BanHint});
  commands->push_back(Command{
      {"unban",
       "unban INDEX | unban --relay=URL",
       "lift a builder's ban and failure record, or a relay's ban",
       "Lifts an operator ban and the builder's failure record. A builder in the configured\n"
       "blacklist is unbanned by editing the configuration and reloading; one banned only as a\n"
       "member of a banned relay by a reset, or by unbanning the relay the operator banned.\n"
       "With --relay instead of INDEX, lifts the operator's ban of a relay, and with it the bans\n"
       "of the builders it serves (a ban for their failures stays). A relay in the\n"
       "configuration's blacklisted_relays is unbanned by editing the configuration and\n"
       "reloading. Prints the resulting policy.\n",
       {kOptionalIndexArg},
       {kRelayFlag},
       "breakerctl unban 42\nbreakerctl unban --relay=https://relay.example.com"},
      &RunUnban,
      true,
      &UnbanHint});
  commands->push_back(Command{
      {"trust",
       "trust INDEX | trust --relay=URL",
       "trust a builder or a relay",
       "Marks a builder, or every builder a relay serves, trusted, overriding the configuration.\n"
       "In TRUSTED_ONLY mode the fleet takes only trusted builders' bids. Prints the resulting\n"
       "policy.\n",
       {{"INDEX", "the builder's index on the chain", true}},
       {kRelayFlag},
       "breakerctl trust 42\nbreakerctl trust --relay=https://relay.example.com"},
      &RunTrust,
      true,
      &TrustHint});
  commands->push_back(Command{
      {"untrust",
       "untrust INDEX | untrust --relay=URL",
       "stop trusting a builder or a relay",
       "Marks a builder or a relay untrusted, overriding the configuration (also a builder or\n"
       "relay the configuration trusts). Prints the resulting policy.\n",
       {{"INDEX", "the builder's index on the chain", true}},
       {kRelayFlag},
       "breakerctl untrust 42\nbreakerctl untrust --relay=https://relay.example.com"},
      &RunUntrust,
      true,
      &TrustHint});
  commands->push_back(Command{
      {"reset",
       "reset [--node=ID] [--reason=TEXT]",
       "clear failure records and the latched breaker, or one node's numbers",
       "Clears every builder's failure record, every relay ban for failures and the latched\n"
       "pre-Gloas missed-slot breaker: what restarting a beacon node did before. Operator bans\n"
       "(of builders and of relays) and trust overrides stay. Use it once the incident that\n"
       "tripped the breaker is understood and over. Prints the resulting policy.\n"
       "With --node, instead, only forgets that node's highest observation sequence number:\n"
       "the way out for a node that used 2^62, the last number breakerd accepts, whose\n"
       "observations are refused until then ('breakerctl nodes' says so). Its stream ends and\n"
       "reconnects; its next observations are taken whatever their numbers.\n",
       {},
       {{"node", "ID", "reset only this node's sequence numbers"},
        {"reason", "TEXT", "why, for breakerd's log"}},
       "breakerctl reset --reason=\"relay outage over\"\nbreakerctl reset --node=bn-eu-1"},
      &RunReset});
  commands->push_back(Command{
      {"watch",
       "watch [--count=N]",
       "follow the policy: one line per new version",
       "Prints the current policy, then every new version as breakerd publishes it, one line\n"
       "each (with --json, one JSON Policy per line), until interrupted or N versions are\n"
       "printed. A slow reader skips to the newest version. --timeout applies to the first\n"
       "version only.\n",
       {},
       {{"count", "N", "stop after N versions (the current one counts)"}},
       "breakerctl watch\nbreakerctl watch --json --count=2"},
      &RunWatch});
  commands->push_back(Command{
      {"config",
       "config",
       "the configuration in force",
       "Prints the configuration in force, every field filled in, in the text format of the\n"
       "configuration file: the output can be edited and used as breakerd's --config.\n",
       {},
       {},
       "breakerctl config > breakerd.textproto"},
      &RunConfig});
  commands->push_back(Command{
      {"reload",
       "reload",
       "re-read breakerd's configuration file",
       "Makes breakerd re-read its --config file and prints the configuration now in force. A\n"
       "bad file changes nothing and the error names the field; the chain settings cannot\n"
       "change while breakerd runs.\n",
       {},
       {},
       "breakerctl reload"},
      &RunReload,
      true,
      &ReloadHint});
  commands->push_back(Command{
      {"reload-access",
       "reload-access",
       "re-read breakerd's access file",
       "Makes breakerd re-read its --access_file, as SIGHUP does, and prints how many principals\n"
       "it lists and how many streams it ended: every node stream or policy watch whose\n"
       "credential lost its role, or whose node id the file no longer binds to it, ends with\n"
       "PERMISSION_DENIED. A bad file changes nothing and the error names the principal. Needs\n"
       "an admin's credential.\n",
       {},
       {},
       "breakerctl reload-access"},
      &RunReloadAccess,
      true,
      &ReloadAccessHint});
  commands->push_back(Command{
      {"simulate",
       "simulate --config=FILE --scenario=FILE [--json]",
       "try a configuration on a scenario, offline",
       "Plays a scenario (a text-format breaker.v1.Scenario, see\n"
       "proto/breaker/v1/scenario.proto and examples/scenarios/) on the breaker engine under a\n"
       "configuration file, offline, and prints every new policy version with the step that\n"
       "made it, then every expectation that failed. Exits 4 when one failed. Needs no breakerd.\n",
       {},
       {{"config", "FILE", "a configuration file, as breakerd's --config", true},
        {"scenario", "FILE", "the scenario to play", true}},
       "breakerctl simulate --config=examples/scenarios/gloas.config.textproto \\\n"
       "    --scenario=examples/scenarios/01_builder_bug.scenario.textproto"},
      &RunSimulate,
      false});
  commands->push_back(Command{{"help",
                               "help [COMMAND]",
                               "a command's usage, arguments, flags and an example",
                               "Prints the list of commands, or one command's help.\n",
                               {{"COMMAND", "the command to explain", true}},
                               {},
                               "breakerctl help ban"},
                              &RunHelp,
                              false});
  return commands;
}

}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command>* const commands = MakeCommands();
  return *commands;
}

std::vector<const CommandSpec*> CommandSpecs() {
  std::vector<const CommandSpec*> specs;
  for (const Command& command : Commands()) specs.push_back(&command.spec);
  return specs;
}

absl::StatusOr<std::unique_ptr<v1::Admin::Stub>> NewAdminStub(const GlobalOptions& options) {
  absl::StatusOr<client::ChannelSecurity> security =
      client::SecurityFromFiles(options.security, options.token_file);
  if (!security.ok()) return InputError(security.status());
  return v1::Admin::NewStub(client::CreateChannel(
      options.target, security->credentials, security->bearer_token, grpc::ChannelArguments()));
}

int PrintHelp(const CommandLine& line, std::ostream& out) {
  out << (line.spec == nullptr ? ProgramHelp(CommandSpecs()) : CommandHelp(*line.spec));
  return kExitOk;
}

absl::Status RunCommand(const CommandLine& line, const GlobalOptions& options, const Clock& clock,
                        std::ostream& out_stream, std::ostream& err_stream) {
  Output out(out_stream);
  Output err(err_stream);
  for (const Command& command : Commands()) {
    if (&command.spec != line.spec) continue;
    if (!command.calls_service)
      return command.run(CommandContext{options, line, nullptr, out, err, &clock});
    // Every replica's address: a standby, or one that is down, answers UNAVAILABLE before the
    // command prints anything, and the next one is asked.
    const std::vector<std::string> targets =
        absl::StrSplit(options.target, ',', absl::SkipWhitespace());
    std::vector<std::string> unavailable;
    for (const std::string& target : targets) {
      GlobalOptions one = options;
      one.target = target;
      absl::StatusOr<std::unique_ptr<v1::Admin::Stub>> stub = NewAdminStub(one);
      if (!stub.ok()) return stub.status();
      const absl::Status status =
          command.run(CommandContext{one, line, stub->get(), out, err, &clock});
      if (!absl::IsUnavailable(status) || targets.size() == 1) return status;
      unavailable.push_back(absl::StrCat(target, ": ", status.message()));
    }
    return absl::UnavailableError(
        absl::StrCat("no address of --target answered: ", absl::StrJoin(unavailable, "; ")));
  }
  return UsageError("no command given");
}

int ReportResult(const CommandLine& line, const GlobalOptions& options, const absl::Status& status,
                 std::ostream& err_stream) {
  Output err(err_stream);
  const ExitCode code = ExitCodeFor(status);
  if (code == kExitOk) return code;
  const std::string who =
      line.spec == nullptr ? "breakerctl" : absl::StrCat("breakerctl ", line.spec->name);
  if (IsUsageError(status)) {
    err.Line(absl::StrCat(who, ": ", status.message()));
    err.Verbatim(UsageReminder(line.spec));
    return code;
  }
  if (IsInputError(status) || code == kExitExpectationFailed) {
    err.Line(absl::StrCat(who, ": ", status.message()));
    return code;
  }

  // An error of breakerd, or of gRPC on the way to it.
  err.Line(
      absl::StrCat(who, ": ", absl::StatusCodeToString(status.code()), ": ", status.message()));
  std::string hint;
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
      hint = options.security.tls()
                 ? absl::StrCat("is breakerd running at ", options.target,
                                ", with TLS and a certificate that --tls_ca trusts? (--target)")
                 : absl::StrCat("is breakerd running at ", options.target,
                                "? (--target; if it serves TLS, give --tls_ca)");
      break;
    case absl::StatusCode::kUnauthenticated:
      hint =
          "breakerd wants a credential its access file lists: --token_file, or --tls_cert "
          "and --tls_key";
      break;
    case absl::StatusCode::kPermissionDenied:
      hint = "viewers may read, only admins change the state; use an admin's credential";
      break;
    case absl::StatusCode::kDeadlineExceeded:
      hint = absl::StrCat("breakerd at ", options.target, " did not answer within ",
                          absl::FormatDuration(options.timeout), " (--target, --timeout)");
      break;
    case absl::StatusCode::kUnimplemented:
      hint = absl::StrCat("is ", options.target, " a breakerd? (--target)");
      break;
    default:
      for (const Command& command : Commands()) {
        if (&command.spec == line.spec && command.hint != nullptr) {
          CommandContext context{options, line, nullptr, err, err, nullptr};
          hint = command.hint(context, status);
        }
      }
  }
  if (!hint.empty()) err.Line(absl::StrCat("hint: ", hint));
  return code;
}

}  // namespace breaker::ctl
