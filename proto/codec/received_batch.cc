#include "proto/codec/received_batch.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <utility>

#include "glog/logging.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;
using google::protobuf::internal::WireFormatLite;

// A parsed batch takes a few times its wire size; one block of about that size makes the
// common batch one allocation. Capped: a block is held for the batch's whole life.
constexpr size_t kMinBlockBytes = 1 << 10;
constexpr size_t kMaxBlockBytes = 256 << 10;
constexpr size_t kParsedPerWireByte = 4;

google::protobuf::ArenaOptions ArenaFor(size_t wire_bytes) {
  google::protobuf::ArenaOptions options;
  options.start_block_size =
      std::clamp(wire_bytes * kParsedPerWireByte, kMinBlockBytes, kMaxBlockBytes);
  options.max_block_size = kMaxBlockBytes;
  return options;
}

}  // namespace

ReceivedBatch::ReceivedBatch(std::string bytes)
    : bytes_(std::move(bytes)),
      arena_(std::make_unique<google::protobuf::Arena>(ArenaFor(bytes_.size()))),
      batch_(google::protobuf::Arena::CreateMessage<v1::ObservationBatch>(arena_.get())) {}

absl::StatusOr<ReceivedBatch> ReceivedBatch::Parse(std::string bytes) {
  ReceivedBatch received(std::move(bytes));
  if (!received.batch_->ParseFromString(received.bytes_)) {
    return absl::InvalidArgumentError("not a serialized breaker.v1.ObservationBatch");
  }
  return received;
}

ReceivedBatch ReceivedBatch::Of(const v1::ObservationBatch& batch) {
  ReceivedBatch received(batch.SerializeAsString());
  *received.batch_ = batch;
  return received;
}

void ReceivedBatch::KeepFirst(int count) {
  CHECK(count >= 0 && count <= size()) << count << " of " << size();
  if (count == size()) return;
  batch_->mutable_observations()->DeleteSubrange(count, size() - count);
  bytes_ = batch_->SerializeAsString();
}

std::optional<absl::string_view> LoneObservationsField(absl::string_view message) {
  if (message.size() > INT_MAX) return std::nullopt;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(message.data()),
                                            static_cast<int>(message.size()));
  constexpr uint32_t kTag = WireFormatLite::MakeTag(v1::NodeMessage::kObservationsFieldNumber,
                                                    WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  uint32_t length = 0;
  if (in.ReadTag() != kTag || !in.ReadVarint32(&length)) return std::nullopt;
  const size_t start = static_cast<size_t>(in.CurrentPosition());
  if (start + length != message.size()) return std::nullopt;
  return message.substr(start);
}

}  // namespace breaker::codec
