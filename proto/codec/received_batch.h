#ifndef PROTO_CODEC_RECEIVED_BATCH_H_
#define PROTO_CODEC_RECEIVED_BATCH_H_

// A batch of observations as a node sent it: the bytes that arrived, which breakerd's journal
// stores as they are (state.proto, NodeObservations.batch), and the batch parsed from them
// once, into an arena of its own, which is freed at once with it.

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "breaker/v1/breaker.pb.h"
#include "google/protobuf/arena.h"

namespace breaker::codec {

class ReceivedBatch {
 public:
  // Parses `bytes`, a serialized breaker.v1.ObservationBatch, and keeps them.
  // INVALID_ARGUMENT when they do not parse.
  static absl::StatusOr<ReceivedBatch> Parse(std::string bytes);
  // Serializes `batch`, parsed already (a unary Report's request), and keeps a copy of it.
  static ReceivedBatch Of(const breaker::v1::ObservationBatch& batch);

  ReceivedBatch(ReceivedBatch&&) = default;
  ReceivedBatch& operator=(ReceivedBatch&&) = default;

  const breaker::v1::ObservationBatch& batch() const { return *batch_; }
  int size() const { return batch_->observations_size(); }
  // The serialized batch; empty once taken.
  const std::string& bytes() const { return bytes_; }
  // Moves the bytes out (into a journal entry), leaving the parsed batch.
  std::string TakeBytes() { return std::move(bytes_); }
  // Keeps the first `count` observations only, and serializes them again: the bytes must hold
  // what is applied. For the rate limit's cut, the one case where breakerd changes a batch.
  // REQUIRES: 0 <= count <= size(); the bytes not taken.
  void KeepFirst(int count);

 private:
  // An empty batch in an arena sized for what `bytes` parse to.
  explicit ReceivedBatch(std::string bytes);

  std::string bytes_;
  std::unique_ptr<google::protobuf::Arena> arena_;
  // Owned by arena_.
  breaker::v1::ObservationBatch* batch_ = nullptr;
};

// The bytes of the observations field of `message`, a serialized breaker.v1.NodeMessage, when
// the message holds that field alone, as breaker clients send their batches: a part of
// `message`, not yet parsed. nullopt for any other message, which the caller parses whole.
std::optional<absl::string_view> LoneObservationsField(absl::string_view message);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_RECEIVED_BATCH_H_
