#ifndef PROTO_CODEC_RECEIVED_BATCH_H_
#define PROTO_CODEC_RECEIVED_BATCH_H_

// A batch of observations as a node sent it: the bytes that arrived, which breakerd's journal
// stores as they are (state.proto, NodeObservations.batch), read once.
//
// The common batch, bids alone in the encoding protobuf writes, is read in place: each bid's
// numbers are decoded and its strings stay in the bytes, so reading a batch allocates nothing
// per observation. Any other batch (another event, an unknown or repeated field, a relay that
// is not ASCII) is parsed by protobuf into an arena of its own. Both readings accept exactly
// the same bytes and give the same observations (received_batch_fuzzer checks it).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "breaker/v1/breaker.pb.h"
#include "google/protobuf/arena.h"

namespace breaker::codec {

class ReceivedBatch {
 public:
  // A bid of a batch read in place. The strings are parts of the batch's bytes.
  struct Bid {
    uint64_t sequence = 0;
    uint64_t slot = 0;
    uint64_t builder_index = 0;
    absl::string_view relay;
    absl::string_view pubkey;
  };

  // Reads `bytes`, a serialized breaker.v1.ObservationBatch, and keeps them.
  // INVALID_ARGUMENT when they do not parse.
  static absl::StatusOr<ReceivedBatch> Parse(std::string bytes);
  // Serializes `batch`, parsed already (a unary Report's request), and keeps a copy of it.
  static ReceivedBatch Of(const breaker::v1::ObservationBatch& batch);

  ReceivedBatch(ReceivedBatch&&) = default;
  ReceivedBatch& operator=(ReceivedBatch&&) = default;

  int size() const;
  // The sequence number of observation `i`. REQUIRES: 0 <= i < size().
  uint64_t sequence(int i) const;
  // Whether the batch was read in place, as bids: then bid(i) gives its observations, else
  // parsed() does.
  bool read_in_place() const { return parsed_ == nullptr; }
  // REQUIRES: read_in_place(), 0 <= i < size().
  Bid bid(int i) const;
  // REQUIRES: !read_in_place().
  const breaker::v1::ObservationBatch& parsed() const { return *parsed_; }
  // The batch as a message, built anew: for tests and tools (breakerd reads it in place).
  breaker::v1::ObservationBatch ToProto() const;
  // The serialized batch, as received (or as cut by Keep).
  const std::string& bytes() const { return bytes_; }
  // Keeps the observations `i` for which `keep(i)` holds, in order, and only the bytes that
  // hold them: the journal must hold what is applied. For breakerd's cuts before its journal
  // (observations refused for their content, or beyond the rate limit), the only changes it
  // makes to a batch.
  void Keep(absl::FunctionRef<bool(int i)> keep);
  // Keep(i < count). REQUIRES: 0 <= count <= size().
  void KeepFirst(int count);

 private:
  // Where a bid read in place lies in bytes_: offsets, which survive a move of the bytes.
  struct BidSpan {
    uint64_t sequence = 0;
    uint64_t slot = 0;
    uint64_t builder_index = 0;
    uint32_t relay_at = 0;
    uint32_t relay_size = 0;
    uint32_t pubkey_at = 0;
    uint32_t pubkey_size = 0;
    // Just past the observation's field in bytes_.
    uint32_t end = 0;
  };

  explicit ReceivedBatch(std::string bytes) : bytes_(std::move(bytes)) {}
  // Reads bytes_ as bids into bids_; false for any other batch (then bids_ is to be dropped).
  bool ReadBids();
  // Makes parsed_, empty, in an arena sized for bytes_.
  void NewParsed();

  std::string bytes_;
  std::vector<BidSpan> bids_;
  std::unique_ptr<google::protobuf::Arena> arena_;
  // Owned by arena_; null when the batch was read in place.
  breaker::v1::ObservationBatch* parsed_ = nullptr;
};

// The bytes of the observations field of `message`, a serialized breaker.v1.NodeMessage, when
// the message holds that field alone, as breaker clients send their batches: a part of
// `message`, not yet parsed. nullopt for any other message, which the caller parses whole.
std::optional<absl::string_view> LoneObservationsField(absl::string_view message);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_RECEIVED_BATCH_H_
