#ifndef TESTS_FAKE_BEACON_NODE_H_
#define TESTS_FAKE_BEACON_NODE_H_

// A beacon node's Beacon API for tests, over real HTTP on loopback, as ethereum/beacon-APIs
// specifies it (and with the quirks the spec allows: quoted decimals, SSE comments, CRLF):
// genesis, spec, syncing, finality checkpoints, headers, fork choice, blocks (their Gloas bid),
// the event stream, and block production (fake_block_production.h).
// The test scripts it: blocks, reorgs, finality, Gloas bids and payloads, raw (malformed)
// frames, a body of its choosing for any path, a restart (every stream dropped), another
// genesis, syncing, which form of the event stream's `topics` query it reads.
// It records every event stream request.
//
// It can also produce a block every slot on the real clock by itself (SetProducing), as a
// live node does: what a multi-process test or a person trying the sidecar needs.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "core/chain_time.h"
#include "core/types.h"
#include "httplib.h"
#include "tests/support/fake_block_production.h"

namespace breaker::testing {

// Which forms of the event stream's `topics` query a node reads: several `topics` keys
// (?topics=a&topics=b), one key with the topics joined by commas (?topics=a,b), or both. A
// request of one topic is of both forms.
enum class TopicsQuery { kBoth, kRepeatedOnly, kCommaOnly };

// One request of the event stream.
struct EventsRequest {
  // The topics, joined by commas however they were sent.
  std::string topics;
  // Sent as one `topics` key joined by commas (false: one key per topic, or a single topic).
  bool comma_joined = false;
};

// This class is thread-safe.
class FakeBeaconNode {
 public:
  // Serves `chain` on 127.0.0.1, on a port of the kernel's choice (or `port`).
  explicit FakeBeaconNode(const core::ChainSpec& chain, int port = 0);
  ~FakeBeaconNode();

  int port() const { return port_; }
  std::string url() const;

  // --- What the REST API says ---
  void SetChain(const core::ChainSpec& chain);
  void SetSyncing(bool syncing, bool optimistic = false);
  // Whether the spec lists GLOAS_FORK_EPOCH (a pre-Gloas node's does not).
  void SetSpecNamesGloas(bool names);
  // Whether the event stream accepts the Gloas topics; false: 400 for an unknown topic.
  void SetOffersGloasTopics(bool offers);
  // Which forms of the topics query the event stream reads (kBoth by default). A request in
  // the other form is answered 400 when `refuse_other`, otherwise 200 and a stream that never
  // sends an event, as a node does that reads the query as a topic it never has.
  void SetTopicsQuery(TopicsQuery accepted, bool refuse_other);
  // Answers `path` (without the query) with `status` and `body` from now on.
  void OverridePath(const std::string& path, int status, std::string body);
  void ClearOverride(const std::string& path);
  // Fork choice weights: the tree root's (every vote) and a block's.
  void SetForkChoiceWeights(uint64_t total, const core::BlockRoot& root, uint64_t weight);
  // Fork choice's tree: `child`'s parent is `parent` (by default a block's parent is the tree's
  // root). A block's weight as set above is what the node answers: set it to include its
  // descendants' votes, as a real node's does.
  void SetForkChoiceParent(const core::BlockRoot& child, const core::BlockRoot& parent);
  // A validator the node knows (/eth/v1/beacon/states/head/validators?id=...): `pubkey` (0x and
  // hex, any case) has `index`.
  void AddValidator(const std::string& pubkey, uint64_t index);
  // The proposers of `epoch`'s slots (/eth/v1/validator/duties/proposer/{epoch}); an epoch
  // without any set has none.
  struct ProposerDuty {
    core::Slot slot = 0;
    std::string pubkey;
    uint64_t validator_index = 0;
  };
  void SetProposerDuties(core::Epoch epoch, std::vector<ProposerDuty> duties);
  // Block production (produceBlockV3, produceBlockV4): scripted and recorded there.
  FakeBlockProduction& block_production() { return block_production_; }
  // GETs of `path` (without the query) answered so far.
  int requests(const std::string& path) const;

  // --- Blocks and events ---
  // The node imported `root` at `slot`: stored (headers list it when canonical, fork choice
  // always), a `block` event, and a `head` event when canonical. `bid_builder`: the Gloas bid
  // the block carries.
  void AddBlock(core::Slot slot, const core::BlockRoot& root, bool canonical = true,
                std::optional<core::BuilderIndex> bid_builder = std::nullopt);
  // The node reorged from `old_head` to `new_head` at `slot`: `old_head` leaves the canonical
  // chain (headers no longer list it); a chain_reorg event.
  void Reorg(core::Slot slot, const core::BlockRoot& old_head, const core::BlockRoot& new_head);
  // The finalized checkpoint moves to `epoch`: the REST API says so, and an event.
  void Finalize(core::Epoch epoch);
  // Gloas events.
  void Bid(core::Slot slot, core::BuilderIndex builder);
  void Payload(core::Slot slot, const core::BlockRoot& root, core::BuilderIndex builder);
  // Sends `name` with `data` as one event.
  void Emit(absl::string_view name, absl::string_view data);
  // Sends `bytes` as they are (malformed frames).
  void EmitRaw(std::string bytes);
  // Drops every open event stream, as a restart does.
  void DropStreams();

  // Produces a block at every slot start from now on (root: ProducedRoot), or stops. With
  // `empty_every` N above 0, the slots divisible by N get no block.
  void SetProducing(bool producing, uint64_t empty_every = 0);

  // Event streams opened so far, and open now.
  int streams_opened() const;
  int streams_open() const;
  // The topics of the latest stream request, joined by commas however they were sent.
  std::string last_topics() const;
  // Every stream request so far, oldest first (the latest kMaxRecordedRequests).
  std::vector<EventsRequest> events_requests() const;
  static constexpr size_t kMaxRecordedRequests = 1024;

  static std::string Hex(const core::BlockRoot& root);
  // The root SetProducing gives the block of `slot`.
  static core::BlockRoot ProducedRoot(core::Slot slot);

 private:
  struct Block {
    core::BlockRoot root;
    bool canonical = true;
    std::optional<core::BuilderIndex> bid_builder;
  };

  void Serve(const httplib::Request& request, httplib::Response& response);
  void ServeEvents(const httplib::Request& request, httplib::Response& response);
  bool Overridden(const std::string& path, httplib::Response& response);
  void Push(std::string frame);
  void ProduceLoop();

  httplib::Server server_;
  FakeBlockProduction block_production_;
  int port_ = 0;
  std::thread listener_;
  std::thread producer_;

  mutable Mutex mu_;
  CondVar changed_;
  core::ChainSpec chain_;
  bool syncing_ = false;
  bool optimistic_ = false;
  bool spec_names_gloas_ = true;
  bool offers_gloas_topics_ = true;
  TopicsQuery topics_query_ = TopicsQuery::kBoth;
  bool refuse_other_query_ = true;
  std::vector<EventsRequest> events_requests_;
  std::map<std::string, std::pair<int, std::string>> overrides_;
  std::map<core::Slot, std::vector<Block>> blocks_;
  core::Epoch finalized_epoch_ = 0;
  uint64_t total_weight_ = 0;
  std::map<std::string, uint64_t> weights_;
  std::map<std::string, std::string> parents_;
  std::map<std::string, uint64_t> validators_;  // By lower-case pubkey.
  std::map<core::Epoch, std::vector<ProposerDuty>> duties_;
  std::map<std::string, int> requests_;
  // Every frame sent; each stream reads from where it joined. `generation_` ends the streams
  // of earlier generations.
  std::vector<std::string> frames_;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  bool producing_ = false;
  uint64_t empty_every_ = 0;
  int streams_opened_ = 0;
  int streams_open_ = 0;
  std::string last_topics_;
};

}  // namespace breaker::testing

#endif  // TESTS_FAKE_BEACON_NODE_H_
