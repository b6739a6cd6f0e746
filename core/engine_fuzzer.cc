// Fuzz target for the breaker engine: the input is a program of engine steps (observations of
// every kind from a few nodes, time, operator actions, new configurations, export/import), and
// after every step the engine's invariants (engine_invariants.h, the ones the property test
// checks) must hold. A violation aborts, with the steps that led to it on stderr.
//
// Input format: a byte code, chosen so that seeds can be written by hand (fuzz_corpus/engine/).
//   - The first argument byte picks the starting configuration (see Configs()).
//   - Then, until the input ends, an op byte and its argument bytes. The ops are letters:
//       a DELTA                         advance the clock (see kAdvance)
//       b NODE SEQ SLOT BUILDER RELAY PUBKEY   bid seen
//       m NODE SEQ SLOT BUILDER ROOT FRACTION  payload missing
//       d NODE SEQ SLOT BUILDER ROOT    payload delivered
//       s NODE SEQ SLOT COUNT           blocks seen (COUNT % 3 new roots)
//       f NODE SEQ SLOT BACK            finalized (BACK % 6 epochs back; 5: one ahead)
//       x NODE SEQ SLOT BUILDER         builder exited
//       r NODE SEQ SLOT RELAY ROOT      relay reveal missing
//       B BUILDER REASON UNTIL          operator ban
//       U BUILDER                       operator unban
//       T BUILDER TRUSTED               builder trust override
//       R RELAY TRUSTED                 relay trust override
//       Z                               reset
//       C CONFIG                        reconfigure (the last one is invalid)
//       I                               replace the engine by Import(Export()) of it
//       V RELAY REASON UNTIL            operator ban of a relay
//       W RELAY                         operator unban of a relay
//     Any other op byte stands for the op at (byte % number of ops) in that list.
//   - An argument byte is a small number: '0'-'9' are 0-9, 'a'-'z' 10-35, 'A'-'Z' 36-61, any
//     other byte its own value; each argument takes it modulo its alphabet (below). A missing
//     byte reads as 0.
//     SEQ % 8 is 0-4 for the node's next number, 5 a resend of its highest, 6 an older one,
//     7 a gap; SLOT indexes kSlotOffset, relative to the current slot.
//   - Whitespace is skipped, and '#' starts a comment that runs to the end of the line.
// BREAKER_FUZZ_TRACE=1 in the environment prints every step and its answer to stderr.
//
// The alphabets are small (three nodes and an empty id, 24 builders, five relays spelled
// twelve ways, 16 roots) so that the collisions that matter happen: the same root from several
// nodes, a builder in several relays, an index changing hands, caps filling up.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/chain_time.h"
#include "core/config.h"
#include "core/engine.h"
#include "core/engine_invariants.h"
#include "core/observation.h"
#include "core/types.h"

namespace breaker::core {
namespace {

constexpr Slot kStartSlot = 10 * 32;
// Bounds the work per input: libFuzzer looks for breadth, not for one endless run.
constexpr int kMaxSteps = 4000;
// Steps listed when an invariant breaks.
constexpr size_t kHistory = 12;

constexpr char kOps[] = "abmdsfxrBUTRZCIVW";

// Clock advances, in slots: mostly the next slot, sometimes an epoch boundary, a jump past the
// amendment window (which ages out votes and prunes records), past the missed-slot tracker's
// ring (256 slots), or past the default relay association TTL and back-off (64 epochs).
constexpr uint64_t kAdvance[] = {0, 1, 1, 300, 2, 2100, 3, 4, 5, 8, 12, 16, 31, 32, 33, 70};
// Observation slots, relative to the current one: mostly recent, some at and beyond both ends
// of the accepted range (max_future_slots 2, amendment window 64).
constexpr int64_t kSlotOffset[] = {0, 0, 0, -1, -1, -2, -3, 1, 2, -5, -31, -64, -65, 3, -33, -10};
constexpr const char* kNodes[] = {"node-0", "node-1", "node-2", ""};
// Five endpoints: a and b are configured; c, d and e are learned from bids. The last two
// spellings are malformed.
constexpr const char* kRelays[] = {
    "",
    "https://relay-a.example",
    "HTTPS://Relay-A.example/",
    "https://0xabc@relay-a.example:443/?id=7",
    "relay-b.example:18550",
    "http://RELAY-B.example:18550/",
    "https://relay-c.example",
    "https://relay-c.example//",
    "relay-d.example:9000",
    "http://relay-e.example/builder",
    "ftp://relay-x.example",
    "a b",
};
// Public keys: none (a failed look-up), three builders' 48-byte keys, and one of another length,
// which is refused.
constexpr int kPubkeys = 5;
std::string Pubkey(uint32_t i) {
  if (i == 0) return "";
  if (i == kPubkeys - 1) return "pk-short";
  return std::string(48, static_cast<char>('0' + i));
}
constexpr int kRoots = 16;

// Attested fractions: around the default threshold (0.60), both ends, and malformed ones.
constexpr double kFractions[] = {
    0.9, 0.9, 0.61, 0.6, 0.59, 1.0, 0.0, std::numeric_limits<double>::quiet_NaN(), -0.1, 1.5};

BlockRoot RootOf(uint64_t id) {
  std::string bytes(sizeof(id), '\0');
  for (size_t i = 0; i < sizeof(id); ++i) bytes[i] = static_cast<char>((id >> (8 * i)) & 0xff);
  return BlockRootFromBytes(bytes);
}

Config BaseConfig() {
  Config config;
  config.trusted_builders = {1, 2};
  config.blacklisted_builders = {3};
  config.relays = {RelayConfig{"https://relay-a.example", true, {4, 5}},
                   RelayConfig{"relay-b.example:18550", false, {6, 7, 8}}};
  return config;
}

// The configurations an input starts with and reconfigures to: the property test's variants,
// with tighter caps, so that every eviction path is within reach. The last one is invalid.
const std::vector<Config>& Configs() {
  static const auto* const configs = [] {
    auto* configs = new std::vector<Config>;
    {
      // Gloas from genesis with every default; the missed-slot rules must stay inactive.
      Config config = BaseConfig();
      config.chain.gloas_fork_epoch = 0;
      configs->push_back(config);
    }
    {
      // Gloas, two reporters, small caps, a tolerant and finite escalation.
      Config config = WithSmallCaps(BaseConfig());
      config.chain.gloas_fork_epoch = 0;
      configs->push_back(config);
    }
    {
      // Pre-Gloas with a windowed preset that recovers by itself; the fork two epochs ahead.
      Config config = BaseConfig();
      config.chain.gloas_fork_epoch = 12;
      config.missed_slots = MissedSlotRulesForPreset("prysm").value();
      config.critical_failed_untrusted_builders = 2;
      configs->push_back(config);
    }
    {
      // Pre-Gloas with the latched rule, two reporters, short relay memory and bans.
      Config config = BaseConfig();
      config.missed_slots = MissedSlotRulesForPreset("mevboost").value();
      config.min_reporting_nodes = 2;
      config.relay_association_ttl_epochs = 4;
      config.relay_blacklist_period_epochs = 2;
      config.critical_failed_builders = 5;
      config.amendment_window_slots = 16;
      // Relay d is banned, with its members, for as long as it is listed.
      config.blacklisted_relays = {"relay-d.example:9000"};
      configs->push_back(config);
    }
    {
      // Invalid: the first ban would already be critical.
      Config config = BaseConfig();
      config.critical_failures = config.allowed_failures;
      configs->push_back(config);
    }
    return configs;
  }();
  return *configs;
}

// Reads the byte code; see the format above.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  // The next op, or nullopt at the end of the input.
  std::optional<char> NextOp() {
    const int byte = NextByte();
    if (byte < 0) return std::nullopt;
    for (const char* op = kOps; *op != '\0'; ++op) {
      if (byte == *op) return *op;
    }
    return kOps[static_cast<size_t>(byte) % (sizeof(kOps) - 1)];
  }

  // The next argument, in [0, range).
  uint32_t Arg(size_t range) {
    const int byte = NextByte();
    if (byte < 0) return 0;
    uint32_t value = static_cast<uint32_t>(byte);
    if (byte >= '0' && byte <= '9') {
      value = static_cast<uint32_t>(byte - '0');
    } else if (byte >= 'a' && byte <= 'z') {
      value = static_cast<uint32_t>(byte - 'a' + 10);
    } else if (byte >= 'A' && byte <= 'Z') {
      value = static_cast<uint32_t>(byte - 'A' + 36);
    }
    return static_cast<uint32_t>(value % range);
  }

 private:
  // The next byte that is not whitespace or comment, or -1 at the end.
  int NextByte() {
    while (position_ < size_) {
      const uint8_t byte = data_[position_++];
      if (byte == '#') {
        while (position_ < size_ && data_[position_] != '\n') ++position_;
        continue;
      }
      if (byte == ' ' || byte == '\n' || byte == '\t' || byte == '\r') continue;
      return byte;
    }
    return -1;
  }

  const uint8_t* data_;
  size_t size_;
  size_t position_ = 0;
};

bool Tracing() {
  static const bool tracing = [] {
    const char* value = std::getenv("BREAKER_FUZZ_TRACE");
    return value != nullptr && *value != '\0' && *value != '0';
  }();
  return tracing;
}

BuilderIndex ReadBuilder(Reader& reader) {
  const uint32_t value = reader.Arg(32);
  if (value == 31) return kSelfBuild;
  return value < 24 ? value : value % 8;
}

class Run {
 public:
  explicit Run(size_t config) : engine_(Engine::Create(Configs()[config], kStartSlot).value()) {
    EngineChecker::Options options;
    options.probe_max = 30;
    // Inputs are short: copies run in lock step more often than in the property test.
    options.import_every = 16;
    options.lockstep_steps = 8;
    checker_.emplace(engine_, options);
  }

  void Execute(Reader& reader) {
    for (int step = 0; step < kMaxSteps; ++step) {
      const std::optional<char> op = reader.NextOp();
      if (!op.has_value()) return;
      if (*op == 'I') {
        ReplaceByImport();
        continue;
      }
      const EngineStep next = Decode(*op, reader);
      history_.push_back(DescribeStep(next));
      if (history_.size() > kHistory) history_.pop_front();
      const StepResult result = checker_->Step(engine_, next);
      history_.back() += absl::StrCat(" -> ", DescribeResult(result));
      if (Tracing()) {
        std::fprintf(stderr, "%s => %s\n", history_.back().c_str(),
                     DescribeBans(engine_.policy()).c_str());
      }
      if (!checker_->violations().empty()) {
        std::string what;
        for (const EngineChecker::Violation& violation : checker_->violations()) {
          absl::StrAppend(&what, "[", InvariantFamilyName(violation.family), "] ", violation.what,
                          "\n");
        }
        Fail(what);
      }
    }
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    std::fprintf(stderr,
                 "engine invariant violated at step %d, slot %llu:\n%s"
                 "last steps (oldest first):\n  %s\npolicy now: %s\n",
                 checker_->steps(), static_cast<unsigned long long>(engine_.current_slot()),
                 what.c_str(), absl::StrJoin(history_, "\n  ").c_str(),
                 DescribeBans(engine_.policy()).c_str());
    std::abort();
  }

  // The common head of an observation: node, sequence number and slot.
  Observation Head(Reader& reader) {
    Observation observation;
    observation.node = kNodes[reader.Arg(std::size(kNodes))];
    uint64_t highest = 0;
    if (auto it = engine_.node_sequences().find(observation.node);
        it != engine_.node_sequences().end()) {
      highest = it->second;
    }
    const uint32_t mode = reader.Arg(8);
    if (mode <= 4) {
      observation.sequence = highest + 1;  // The usual case: the next one.
    } else if (mode == 5) {
      observation.sequence = highest;  // A resend (or 0 for a new node).
    } else if (mode == 6) {
      observation.sequence = highest / 2;  // An older resend.
    } else {
      observation.sequence = highest + 1000;  // A gap: the node lost some.
    }
    const int64_t offset = kSlotOffset[reader.Arg(std::size(kSlotOffset))];
    const Slot now = engine_.current_slot();
    observation.slot = offset < 0 && static_cast<Slot>(-offset) > now ? 0 : now + offset;
    return observation;
  }

  EngineStep Decode(char op, Reader& reader) {
    EngineStep step;
    step.kind = EngineStep::Kind::kObserve;
    switch (op) {
      case 'a':
        step.kind = EngineStep::Kind::kAdvance;
        step.slot = engine_.current_slot() + kAdvance[reader.Arg(std::size(kAdvance))];
        return step;
      case 'b': {
        step.observation = Head(reader);
        BidSeen bid;
        bid.builder = ReadBuilder(reader);
        bid.relay = kRelays[reader.Arg(std::size(kRelays))];
        bid.pubkey = Pubkey(reader.Arg(kPubkeys));
        step.observation.event = std::move(bid);
        return step;
      }
      case 'm': {
        step.observation = Head(reader);
        PayloadMissing missing;
        missing.builder = ReadBuilder(reader);
        missing.root = RootOf(1 + reader.Arg(kRoots));
        missing.attested_fraction = kFractions[reader.Arg(std::size(kFractions))];
        step.observation.event = missing;
        return step;
      }
      case 'd': {
        step.observation = Head(reader);
        PayloadDelivered delivered;
        delivered.builder = ReadBuilder(reader);
        delivered.root = RootOf(1 + reader.Arg(kRoots));
        step.observation.event = delivered;
        return step;
      }
      case 's': {
        step.observation = Head(reader);
        BlocksSeen blocks;
        const uint32_t count = reader.Arg(3);
        // Roots of blocks seen only matter by being there; fresh ones, apart from the others.
        for (uint32_t i = 0; i < count; ++i) blocks.roots.push_back(RootOf(1000 + next_root_++));
        step.observation.event = std::move(blocks);
        return step;
      }
      case 'f': {
        step.observation = Head(reader);
        const Epoch epoch = EpochOf(step.observation.slot, engine_.config().chain);
        const uint32_t back = reader.Arg(6);
        step.observation.event =
            Finalized{back == 5 ? epoch + 1 : epoch - std::min<Epoch>(epoch, back)};
        return step;
      }
      case 'x':
        step.observation = Head(reader);
        step.observation.event = BuilderExited{ReadBuilder(reader)};
        return step;
      case 'r': {
        step.observation = Head(reader);
        RelayRevealMissing missing;
        missing.relay = kRelays[reader.Arg(std::size(kRelays))];
        missing.root = RootOf(1 + reader.Arg(kRoots));
        step.observation.event = std::move(missing);
        return step;
      }
      case 'B': {
        step.kind = EngineStep::Kind::kBan;
        step.builder = ReadBuilder(reader);
        step.reason = reader.Arg(8) == 0 ? "" : "fuzz";
        const uint32_t until = reader.Arg(6);
        // 0: open-ended; 1: the current epoch, which is refused; then 1 to 4 epochs ahead.
        if (until > 0) step.until_epoch = engine_.current_epoch() + until - 1;
        return step;
      }
      case 'U':
        step.kind = EngineStep::Kind::kUnban;
        step.builder = ReadBuilder(reader);
        return step;
      case 'T':
        step.kind = EngineStep::Kind::kSetBuilderTrust;
        step.builder = ReadBuilder(reader);
        step.trusted = reader.Arg(2) == 1;
        return step;
      case 'R':
        step.kind = EngineStep::Kind::kSetRelayTrust;
        step.relay = kRelays[reader.Arg(std::size(kRelays))];
        step.trusted = reader.Arg(2) == 1;
        return step;
      case 'Z':
        step.kind = EngineStep::Kind::kReset;
        return step;
      case 'V': {
        step.kind = EngineStep::Kind::kBanRelay;
        step.relay = kRelays[reader.Arg(std::size(kRelays))];
        const uint32_t reason = reader.Arg(8);
        // An empty reason and one beyond the bound are refused.
        step.reason = reason == 0 ? "" : reason == 1 ? std::string(1025, 'r') : "fuzz";
        const uint32_t until = reader.Arg(7);
        // 0: open-ended; 1: the current epoch and 6: beyond the longest period, both refused;
        // 2 to 5: 1 to 4 epochs ahead.
        if (until == 6) {
          step.until_epoch = engine_.current_epoch() + (uint64_t{1} << 20) + 1;
        } else if (until > 0) {
          step.until_epoch = engine_.current_epoch() + until - 1;
        }
        return step;
      }
      case 'W':
        step.kind = EngineStep::Kind::kUnbanRelay;
        step.relay = kRelays[reader.Arg(std::size(kRelays))];
        return step;
      case 'C':
      default:
        step.kind = EngineStep::Kind::kReconfigure;
        step.config = Configs()[reader.Arg(Configs().size())];
        return step;
    }
  }

  // What a restart does: the engine is replaced by the import of its export, which must be
  // the same engine (the checker's copies check that it also behaves the same).
  void ReplaceByImport() {
    history_.push_back("Import(Export())");
    if (history_.size() > kHistory) history_.pop_front();
    absl::StatusOr<Engine> imported = Engine::Import(engine_.config(), engine_.Export());
    if (!imported.ok()) {
      Fail(absl::StrCat("Import(Export()) failed: ", imported.status().ToString()));
    }
    if (imported->policy().version != engine_.policy().version ||
        !imported->policy().SameDecisions(engine_.policy()) ||
        imported->policy().reason != engine_.policy().reason) {
      Fail(absl::StrCat("the imported policy differs: ", DescribeBans(imported->policy()), " vs ",
                        DescribeBans(engine_.policy())));
    }
    if (EngineFingerprint(*imported) != EngineFingerprint(engine_)) {
      Fail(absl::StrCat("the imported state differs:\n", EngineFingerprint(*imported), "\nvs\n",
                        EngineFingerprint(engine_)));
    }
    if (imported->RefreshPolicy()) {
      Fail(absl::StrCat("the imported engine publishes a new policy at once: ",
                        imported->policy().reason));
    }
    engine_ = *std::move(imported);
  }

  Engine engine_;
  std::optional<EngineChecker> checker_;
  std::deque<std::string> history_;
  uint64_t next_root_ = 0;
};

}  // namespace
}  // namespace breaker::core

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  breaker::core::Reader reader(data, size);
  // Only the valid configurations start a run.
  const size_t config = reader.Arg(breaker::core::Configs().size() - 1);
  breaker::core::Run run(config);
  run.Execute(reader);
  return 0;
}
