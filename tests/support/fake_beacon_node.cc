#include "tests/support/fake_beacon_node.h"

#include <chrono>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/mutex.h"

namespace breaker::testing {
namespace {

constexpr absl::string_view kPreGloasTopics[] = {"block", "head", "chain_reorg",
                                                 "finalized_checkpoint"};

std::string Quoted(uint64_t value) { return absl::StrCat("\"", value, "\""); }

}  // namespace

std::string FakeBeaconNode::Hex(const core::BlockRoot& root) {
  return absl::StrCat("0x", absl::BytesToHexString(absl::string_view(
                                reinterpret_cast<const char*>(root.bytes.data()), 32)));
}

core::BlockRoot FakeBeaconNode::ProducedRoot(core::Slot slot) {
  return core::BlockRootFromBytes(absl::StrCat("produced-", slot));
}

FakeBeaconNode::FakeBeaconNode(const core::ChainSpec& chain, int port) : chain_(chain) {
  // As beacon nodes' HTTP servers do: an answer's head and body written apart must not wait
  // for the peer's delayed acknowledgement.
  server_.set_tcp_nodelay(true);
  server_.Get(".*", [this](const httplib::Request& request, httplib::Response& response) {
    Serve(request, response);
  });
  server_.Post(".*", [this](const httplib::Request& request, httplib::Response& response) {
    Serve(request, response);
  });
  port_ = port == 0 ? server_.bind_to_any_port("127.0.0.1")
                    : (server_.bind_to_port("127.0.0.1", port) ? port : -1);
  listener_ = std::thread([this] { server_.listen_after_bind(); });
  // A stop() before the server runs would be lost, and the destructor's join would hang.
  while (port_ > 0 && !server_.is_running()) std::this_thread::yield();
  producer_ = std::thread([this] { ProduceLoop(); });
}

FakeBeaconNode::~FakeBeaconNode() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  changed_.SignalAll();
  server_.stop();
  listener_.join();
  producer_.join();
}

std::string FakeBeaconNode::url() const { return absl::StrCat("http://127.0.0.1:", port_); }

void FakeBeaconNode::SetChain(const core::ChainSpec& chain) {
  MutexLock lock(&mu_);
  chain_ = chain;
}

void FakeBeaconNode::SetSyncing(bool syncing, bool optimistic) {
  MutexLock lock(&mu_);
  syncing_ = syncing;
  optimistic_ = optimistic;
}

void FakeBeaconNode::SetSpecNamesGloas(bool names) {
  MutexLock lock(&mu_);
  spec_names_gloas_ = names;
}

void FakeBeaconNode::SetOffersGloasTopics(bool offers) {
  MutexLock lock(&mu_);
  offers_gloas_topics_ = offers;
}

void FakeBeaconNode::SetTopicsQuery(TopicsQuery accepted, bool refuse_other) {
  MutexLock lock(&mu_);
  topics_query_ = accepted;
  refuse_other_query_ = refuse_other;
}

void FakeBeaconNode::OverridePath(const std::string& path, int status, std::string body) {
  MutexLock lock(&mu_);
  overrides_[path] = {status, std::move(body)};
}

void FakeBeaconNode::ClearOverride(const std::string& path) {
  MutexLock lock(&mu_);
  overrides_.erase(path);
}

void FakeBeaconNode::SetForkChoiceParent(const core::BlockRoot& child,
                                         const core::BlockRoot& parent) {
  MutexLock lock(&mu_);
  parents_[Hex(child)] = Hex(parent);
}

void FakeBeaconNode::SetForkChoiceWeights(uint64_t total, const core::BlockRoot& root,
                                          uint64_t weight) {
  MutexLock lock(&mu_);
  total_weight_ = total;
  weights_[Hex(root)] = weight;
}

void FakeBeaconNode::AddValidator(const std::string& pubkey, uint64_t index) {
  MutexLock lock(&mu_);
  validators_[absl::AsciiStrToLower(pubkey)] = index;
}

void FakeBeaconNode::SetProposerDuties(core::Epoch epoch, std::vector<ProposerDuty> duties) {
  MutexLock lock(&mu_);
  duties_[epoch] = std::move(duties);
}

int FakeBeaconNode::requests(const std::string& path) const {
  MutexLock lock(&mu_);
  auto it = requests_.find(path);
  return it == requests_.end() ? 0 : it->second;
}

bool FakeBeaconNode::Overridden(const std::string& path, httplib::Response& response) {
  MutexLock lock(&mu_);
  auto it = overrides_.find(path);
  if (it == overrides_.end()) return false;
  response.status = it->second.first;
  response.set_content(it->second.second, "application/json");
  return true;
}

void FakeBeaconNode::Serve(const httplib::Request& request, httplib::Response& response) {
  {
    MutexLock lock(&mu_);
    ++requests_[request.path];
  }
  if (Overridden(request.path, response)) return;
  if (FakeBlockProduction::Serves(request.path)) {
    block_production_.Serve(request, response);
    return;
  }
  if (request.path == "/eth/v1/events") {
    ServeEvents(request, response);
    return;
  }
  MutexLock lock(&mu_);
  std::string body;
  if (request.path == "/eth/v1/beacon/genesis") {
    body = absl::StrCat(R"({"data":{"genesis_time":)", Quoted(chain_.genesis_time_unix),
                        R"(,"genesis_validators_root":"0x)", std::string(64, '1'),
                        R"(","genesis_fork_version":"0x00000000"}})");
  } else if (request.path == "/eth/v1/config/spec") {
    body = absl::StrCat(R"({"data":{"CONFIG_NAME":"fake","SECONDS_PER_SLOT":)",
                        Quoted(chain_.seconds_per_slot), R"(,"SLOTS_PER_EPOCH":)",
                        Quoted(chain_.slots_per_epoch));
    if (spec_names_gloas_)
      absl::StrAppend(&body, R"(,"GLOAS_FORK_EPOCH":)", Quoted(chain_.gloas_fork_epoch));
    absl::StrAppend(&body, "}}");
  } else if (request.path == "/eth/v1/node/syncing") {
    body = absl::StrCat(R"({"data":{"head_slot":)", Quoted(core::SlotAt(absl::Now(), chain_)),
                        R"(,"sync_distance":"0",)", R"("is_syncing":)", syncing_ ? "true" : "false",
                        R"(,"is_optimistic":)", optimistic_ ? "true" : "false",
                        R"(,"el_offline":false}})");
  } else if (request.path == "/eth/v1/beacon/headers") {
    core::Slot slot = 0;
    if (!absl::SimpleAtoi(request.get_param_value("slot"), &slot)) {
      response.status = 400;
      response.set_content(R"({"code":400,"message":"bad slot"})", "application/json");
      return;
    }
    std::string headers;
    auto it = blocks_.find(slot);
    if (it != blocks_.end()) {
      for (const Block& block : it->second) {
        if (!block.canonical) continue;
        absl::StrAppend(&headers, headers.empty() ? "" : ",", R"({"root":")", Hex(block.root),
                        R"(","canonical":true,"header":{"message":{"slot":)", Quoted(slot),
                        R"(,"proposer_index":"1"}}})");
      }
    }
    if (headers.empty()) {
      // As Lighthouse does: 404 for a slot without a canonical block.
      response.status = 404;
      response.set_content(R"({"code":404,"message":"NOT_FOUND: beacon block"})",
                           "application/json");
      return;
    }
    body =
        absl::StrCat(R"({"execution_optimistic":false,"finalized":false,"data":[)", headers, "]}");
  } else if (request.path == "/eth/v1/beacon/states/head/finality_checkpoints") {
    const std::string checkpoint = absl::StrCat(R"({"epoch":)", Quoted(finalized_epoch_),
                                                R"(,"root":"0x)", std::string(64, '3'), R"("})");
    body = absl::StrCat(R"({"execution_optimistic":false,"finalized":false,"data":{)",
                        R"("previous_justified":)", checkpoint, R"(,"current_justified":)",
                        checkpoint, R"(,"finalized":)", checkpoint, "}}");
  } else if (request.path == "/eth/v1/debug/fork_choice") {
    const std::string tree_root = absl::StrCat("0x", std::string(64, '0'));
    std::string nodes;
    for (const auto& [slot, blocks] : blocks_) {
      for (const Block& block : blocks) {
        auto weight = weights_.find(Hex(block.root));
        auto parent = parents_.find(Hex(block.root));
        absl::StrAppend(&nodes, nodes.empty() ? "" : ",", R"({"slot":)", Quoted(slot),
                        R"(,"block_root":")", Hex(block.root), R"(","parent_root":")",
                        parent == parents_.end() ? tree_root : parent->second, R"(","weight":)",
                        Quoted(weight == weights_.end() ? 0 : weight->second),
                        R"(,"validity":"valid"})");
      }
    }
    // The tree's root, holding every vote; the anchor, without a parent.
    absl::StrAppend(&nodes, nodes.empty() ? "" : ",", R"({"slot":"0","block_root":")", tree_root,
                    R"(","parent_root":null,"weight":)", Quoted(total_weight_), "}");
    body = absl::StrCat(R"({"justified_checkpoint":{"epoch":"0","root":"0x)", std::string(64, '0'),
                        R"("},"fork_choice_nodes":[)", nodes, "]}");
  } else if (request.path == "/eth/v1/beacon/states/head/validators") {
    // Every `id` key, each possibly a comma-separated list; unknown keys are left out.
    std::string validators;
    for (size_t i = 0; i < request.get_param_value_count("id"); ++i) {
      for (absl::string_view id : absl::StrSplit(request.get_param_value("id", i), ',')) {
        auto it = validators_.find(absl::AsciiStrToLower(id));
        if (it == validators_.end()) continue;
        absl::StrAppend(&validators, validators.empty() ? "" : ",", R"({"index":)",
                        Quoted(it->second), R"(,"balance":"32000000000","status":)",
                        R"("active_ongoing","validator":{"pubkey":")", it->first,
                        R"(","effective_balance":"32000000000","slashed":false}})");
      }
    }
    body = absl::StrCat(R"({"execution_optimistic":false,"finalized":false,"data":[)", validators,
                        "]}");
  } else if (absl::StartsWith(request.path, "/eth/v1/validator/duties/proposer/")) {
    core::Epoch epoch = 0;
    if (!absl::SimpleAtoi(absl::StripPrefix(request.path, "/eth/v1/validator/duties/proposer/"),
                          &epoch)) {
      response.status = 400;
      response.set_content(R"({"code":400,"message":"bad epoch"})", "application/json");
      return;
    }
    std::string duties;
    for (const ProposerDuty& duty : duties_[epoch]) {
      absl::StrAppend(&duties, duties.empty() ? "" : ",", R"({"pubkey":")", duty.pubkey,
                      R"(","validator_index":)", Quoted(duty.validator_index), R"(,"slot":)",
                      Quoted(duty.slot), "}");
    }
    body = absl::StrCat(R"({"dependent_root":"0x)", std::string(64, '5'),
                        R"(","execution_optimistic":false,"data":[)", duties, "]}");
  } else if (absl::StartsWith(request.path, "/eth/v2/beacon/blocks/")) {
    const std::string wanted(absl::StripPrefix(request.path, "/eth/v2/beacon/blocks/"));
    for (const auto& [slot, blocks] : blocks_) {
      for (const Block& block : blocks) {
        if (Hex(block.root) != wanted || !block.bid_builder.has_value()) continue;
        body = absl::StrCat(R"({"version":"gloas","data":{"message":{"slot":)", Quoted(slot),
                            R"(,"body":{"signed_execution_payload_bid":{"message":{"slot":)",
                            Quoted(slot), R"(,"builder_index":)", Quoted(*block.bid_builder),
                            "}}}}}}");
      }
    }
    if (body.empty()) {
      response.status = 404;
      response.set_content(R"({"code":404,"message":"block not found"})", "application/json");
      return;
    }
  } else {
    response.status = 404;
    response.set_content(R"({"code":404,"message":"not served by the fake"})", "application/json");
    return;
  }
  response.set_content(body, "application/json");
}

void FakeBeaconNode::ServeEvents(const httplib::Request& request, httplib::Response& response) {
  // Every `topics` key, each possibly a comma-separated list: nodes take both forms.
  std::vector<std::string> requested;
  for (size_t i = 0; i < request.get_param_value_count("topics"); ++i) {
    requested.push_back(request.get_param_value("topics", i));
  }
  const std::string topics = absl::StrJoin(requested, ",");
  const bool comma_joined = requested.size() == 1 && absl::StrContains(requested[0], ',');
  const bool repeated = requested.size() > 1;
  MutexLock lock(&mu_);
  last_topics_ = topics;
  if (events_requests_.size() >= kMaxRecordedRequests)
    events_requests_.erase(events_requests_.begin());
  events_requests_.push_back(EventsRequest{topics, comma_joined});
  const bool unread = (topics_query_ == TopicsQuery::kRepeatedOnly && comma_joined) ||
                      (topics_query_ == TopicsQuery::kCommaOnly && repeated);
  if (unread && refuse_other_query_) {
    response.status = 400;
    response.set_content(absl::StrCat(R"({"code":400,"message":"Invalid topic: )",
                                      comma_joined ? topics : requested[0], R"("})"),
                         "application/json");
    return;
  }
  if (!offers_gloas_topics_) {
    for (absl::string_view topic : absl::StrSplit(topics, ',')) {
      bool known = false;
      for (absl::string_view pre : kPreGloasTopics) known = known || topic == pre;
      if (!known) {
        response.status = 400;
        response.set_content(
            absl::StrCat(R"({"code":400,"message":"Invalid topic: )", topic, R"("})"),
            "application/json");
        return;
      }
    }
  }
  ++streams_opened_;
  const uint64_t generation = generation_;
  auto cursor = std::make_shared<size_t>(frames_.size());
  auto open = std::make_shared<bool>(true);
  ++streams_open_;
  response.set_chunked_content_provider(
      "text/event-stream",
      [this, generation, cursor, unread](size_t, httplib::DataSink& sink) {
        std::vector<std::string> pending;
        {
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
          MutexLock lock(&mu_);
          while (!stopping_ && generation_ == generation && *cursor >= frames_.size() &&
                 !changed_.WaitUntil(&mu_, deadline)) {
          }
          if (stopping_ || generation_ != generation) return false;
          // A query the node did not read subscribed it to nothing.
          if (!unread) pending.assign(frames_.begin() + *cursor, frames_.end());
          *cursor = frames_.size();
        }
        for (const std::string& frame : pending) {
          if (!sink.write(frame.data(), frame.size())) return false;
        }
        return true;
      },
      [this, open](bool) {
        MutexLock lock(&mu_);
        if (*open) --streams_open_;
        *open = false;
      });
}

void FakeBeaconNode::Push(std::string frame) {
  {
    MutexLock lock(&mu_);
    frames_.push_back(std::move(frame));
  }
  changed_.SignalAll();
}

void FakeBeaconNode::Emit(absl::string_view name, absl::string_view data) {
  Push(absl::StrCat("event: ", name, "\ndata: ", data, "\n\n"));
}

void FakeBeaconNode::EmitRaw(std::string bytes) { Push(std::move(bytes)); }

void FakeBeaconNode::AddBlock(core::Slot slot, const core::BlockRoot& root, bool canonical,
                              std::optional<core::BuilderIndex> bid_builder) {
  {
    MutexLock lock(&mu_);
    blocks_[slot].push_back(Block{root, canonical, bid_builder});
  }
  // Lighthouse's spelling: CRLF line ends, a comment between events.
  Push(absl::StrCat("event: block\r\ndata: {\"slot\":", Quoted(slot), ",\"block\":\"", Hex(root),
                    "\",\"execution_optimistic\":false}\r\n\r\n:\r\n"));
  if (canonical) {
    Emit("head", absl::StrCat(R"({"slot":)", Quoted(slot), R"(,"block":")", Hex(root),
                              R"(","state":"0x)", std::string(64, '2'),
                              R"(","epoch_transition":false,"execution_optimistic":false})"));
  }
}

void FakeBeaconNode::Reorg(core::Slot slot, const core::BlockRoot& old_head,
                           const core::BlockRoot& new_head) {
  {
    MutexLock lock(&mu_);
    for (auto& [block_slot, blocks] : blocks_) {
      for (Block& block : blocks) {
        if (block.root == old_head) block.canonical = false;
      }
    }
  }
  Emit("chain_reorg",
       absl::StrCat(R"({"slot":)", Quoted(slot), R"(,"depth":"1","old_head_block":")",
                    Hex(old_head), R"(","new_head_block":")", Hex(new_head), R"(","epoch":)",
                    Quoted(slot / 32), R"(,"execution_optimistic":false})"));
}

void FakeBeaconNode::Finalize(core::Epoch epoch) {
  {
    MutexLock lock(&mu_);
    finalized_epoch_ = epoch;
  }
  Emit("finalized_checkpoint",
       absl::StrCat(R"({"block":"0x)", std::string(64, '3'), R"(","state":"0x)",
                    std::string(64, '4'), R"(","epoch":)", Quoted(epoch),
                    R"(,"execution_optimistic":false})"));
}

void FakeBeaconNode::Bid(core::Slot slot, core::BuilderIndex builder) {
  Emit("execution_payload_bid", absl::StrCat(R"({"version":"gloas","data":{"message":{"slot":)",
                                             Quoted(slot), R"(,"builder_index":)", Quoted(builder),
                                             R"(,"value":"1"},"signature":"0x00"}})"));
}

void FakeBeaconNode::Payload(core::Slot slot, const core::BlockRoot& root,
                             core::BuilderIndex builder) {
  Emit("execution_payload",
       absl::StrCat(R"({"slot":)", Quoted(slot), R"(,"builder_index":)", Quoted(builder),
                    R"(,"block_root":")", Hex(root), R"(","execution_optimistic":false})"));
}

void FakeBeaconNode::DropStreams() {
  {
    MutexLock lock(&mu_);
    ++generation_;
  }
  changed_.SignalAll();
}

void FakeBeaconNode::SetProducing(bool producing, uint64_t empty_every) {
  {
    MutexLock lock(&mu_);
    producing_ = producing;
    empty_every_ = empty_every;
  }
  changed_.SignalAll();
}

void FakeBeaconNode::ProduceLoop() {
  core::Slot last_produced = 0;
  MutexLock lock(&mu_);
  while (!stopping_) {
    changed_.WaitFor(&mu_, absl::Milliseconds(20));
    if (!producing_) continue;
    const core::Slot slot = core::SlotAt(absl::Now(), chain_);
    if (slot == last_produced) continue;
    last_produced = slot;
    if (empty_every_ != 0 && slot % empty_every_ == 0) continue;
    mu_.Unlock();
    AddBlock(slot, ProducedRoot(slot));
    mu_.Lock();
  }
}

int FakeBeaconNode::streams_opened() const {
  MutexLock lock(&mu_);
  return streams_opened_;
}

int FakeBeaconNode::streams_open() const {
  MutexLock lock(&mu_);
  return streams_open_;
}

std::string FakeBeaconNode::last_topics() const {
  MutexLock lock(&mu_);
  return last_topics_;
}

std::vector<EventsRequest> FakeBeaconNode::events_requests() const {
  MutexLock lock(&mu_);
  return events_requests_;
}

}  // namespace breaker::testing
