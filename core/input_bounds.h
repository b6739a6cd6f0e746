#ifndef CORE_INPUT_BOUNDS_H_
#define CORE_INPUT_BOUNDS_H_

// The table of input bounds: the longest string, the largest list and the largest number that
// breakerd takes from outside (a node, an operator, a configuration file). Each is enforced
// where the input enters (the node and admin services, the configuration's load and reload),
// with INVALID_ARGUMENT naming the field, its length and the bound. Together with the caps of
// the configuration they bound what breakerd keeps and sends: see WorstCasePolicyBytes in
// core/config.h. docs/api.md (Limits) lists the same table for operators.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace breaker::core::bounds {

// --- Strings ---
// A relay (endpoint) identifier, as given (before normalization).
inline constexpr size_t kMaxRelayIdBytes = 512;
// An operator's reason (BanBuilder, BanRelay, Reset).
inline constexpr size_t kMaxReasonBytes = 1024;
// A node id: 1..128 printable ASCII characters (0x20..0x7e).
inline constexpr size_t kMaxNodeIdBytes = 128;
// Hello.client_version.
inline constexpr size_t kMaxClientVersionBytes = 128;
// A network name (Hello.network, chain.network).
inline constexpr size_t kMaxNetworkBytes = 64;
// Hello.fleet_id (breakerd's own are 32 hex characters).
inline constexpr size_t kMaxFleetIdBytes = 64;
// A builder's BLS public key: exactly this many bytes, or empty (not known).
inline constexpr size_t kPubkeyBytes = 48;
// Builder keys a policy carries at most (Policy::builder_pubkeys): banned builders' first.
inline constexpr size_t kMaxPolicyBuilderKeys = 1024;
// A beacon block root: exactly this many bytes.
inline constexpr size_t kBlockRootBytes = 32;
// A page token of ListBuilders and ListNodes.
inline constexpr size_t kMaxPageTokenBytes = 256;

// --- Lists ---
// Observations in one batch (Connect or Report).
inline constexpr int kMaxObservationsPerBatch = 1000;
// BlocksSeen.block_roots: blocks one node has for one slot.
inline constexpr int kMaxBlockRootsPerSlot = 64;
// Config.trusted_builders and Config.blacklisted_builders, each.
inline constexpr size_t kMaxListedBuilders = 1024;
// Config.blacklisted_relays.
inline constexpr size_t kMaxListedRelays = 64;
// Operator bans of builders, and operator bans of relays, held at once.
inline constexpr size_t kMaxOperatorBuilderBans = 256;
inline constexpr size_t kMaxOperatorRelayBans = 64;
// Runtime trust overrides of builders, and of relays, held at once.
inline constexpr size_t kMaxBuilderTrustOverrides = 256;
inline constexpr size_t kMaxRelayTrustOverrides = 64;

// --- Numbers ---
// The largest observation sequence number (2^62): a client numbering from its clock in
// microseconds stays far below it for millennia.
inline constexpr uint64_t kMaxSequence = uint64_t{1} << 62;
// The longest period in epochs (bans, back-off, relay TTL) and the furthest an operator ban may
// end ahead of the current epoch: 2^20 epochs, about 12 years of mainnet epochs. "Forever" has
// one spelling: a ban until reset (critical_blacklist_period_epochs 0, an operator ban without
// until_epoch), never a huge number.
inline constexpr uint64_t kMaxPeriodEpochs = uint64_t{1} << 20;
// A genesis time may be at most this far ahead of breakerd's clock (a later one is a typo, such
// as milliseconds for seconds).
inline constexpr int64_t kMaxGenesisAheadSeconds = 366 * 24 * 3600;

// --- What breakerd sends ---
// Every message breakerd sends (a Policy, a ServerMessage, an Admin answer) stays under this.
// Clients accept kClientReceiveBytes, twice as much, so that a breakerd within its bounds is
// always received.
inline constexpr size_t kMaxSentMessageBytes = 2 << 20;
inline constexpr size_t kClientReceiveBytes = 4 << 20;
// A Policy lists every ban, so each ban's reason in it is cut to this many bytes (the policy
// goes to every node; breakerd's log keeps an operator's whole reason). The
// policy's own texts (mode_reason, reason, missed_slots.rule) are cut to kMaxReasonBytes.
inline constexpr size_t kMaxBanReasonBytes = 96;
// A page of ListBuilders or ListNodes is cut once it holds this many bytes.
inline constexpr size_t kMaxPageBytes = 1 << 20;

// --- Checks, each INVALID_ARGUMENT naming `field` ---

// `value` is at most `max` bytes: "<field> is N bytes (starts "..."); accepted: at most M".
absl::Status CheckMaxBytes(absl::string_view field, absl::string_view value, size_t max);
// `value` is exactly `size` bytes, or empty when `empty_ok`.
absl::Status CheckExactBytes(absl::string_view field, absl::string_view value, size_t size,
                             bool empty_ok);
// A node id: 1..kMaxNodeIdBytes printable ASCII characters.
absl::Status CheckNodeId(absl::string_view field, absl::string_view node_id);
// `count` elements of a list of at most `max`.
absl::Status CheckMaxCount(absl::string_view field, size_t count, size_t max);

// --- Quoting what a client wrote ---

// At most the first 32 bytes of `value`, C-escaped, with "..." when cut: for refusal messages,
// which must not echo a long input back nor carry control characters.
std::string QuotePrefix(absl::string_view value);
// `value` C-escaped and cut at 160 bytes: for log lines, so that a client cannot forge one.
std::string ForLog(absl::string_view value);
// `text` cut to at most `max` bytes at a UTF-8 character boundary, ending in "..." when cut.
std::string Truncate(absl::string_view text, size_t max);

}  // namespace breaker::core::bounds

#endif  // CORE_INPUT_BOUNDS_H_
