#include "proto/codec/received_batch.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
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

constexpr uint64_t Tag(int field, WireFormatLite::WireType type) {
  return WireFormatLite::MakeTag(field, type);
}
constexpr uint64_t kObservationTag =
    Tag(v1::ObservationBatch::kObservationsFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
constexpr uint64_t kSequenceTag =
    Tag(v1::Observation::kSequenceFieldNumber, WireFormatLite::WIRETYPE_VARINT);
constexpr uint64_t kSlotTag =
    Tag(v1::Observation::kSlotFieldNumber, WireFormatLite::WIRETYPE_VARINT);
constexpr uint64_t kBidSeenTag =
    Tag(v1::Observation::kBidSeenFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
constexpr uint64_t kBuilderIndexTag =
    Tag(v1::BidSeen::kBuilderIndexFieldNumber, WireFormatLite::WIRETYPE_VARINT);
constexpr uint64_t kRelayTag =
    Tag(v1::BidSeen::kRelayFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
constexpr uint64_t kPubkeyTag =
    Tag(v1::BidSeen::kBuilderPubkeyFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);

// Reads protobuf's wire format, strictly: whatever it declines, protobuf's own parser decides.
class WireReader {
 public:
  explicit WireReader(absl::string_view bytes)
      : at_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(at_ + bytes.size()) {}

  bool done() const { return at_ == end_; }
  const uint8_t* position() const { return at_; }

  // A varint of at most ten bytes whose value fits in 64 bits.
  bool Varint(uint64_t& value) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ == end_) return false;
      const uint8_t byte = *at_++;
      if (shift == 63 && byte > 1) return false;
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (byte < 0x80) {
        value = result;
        return true;
      }
    }
    return false;
  }

  // A length, then that many bytes.
  bool Delimited(absl::string_view& bytes) {
    uint64_t length = 0;
    if (!Varint(length) || length > static_cast<uint64_t>(end_ - at_)) return false;
    bytes = absl::string_view(reinterpret_cast<const char*>(at_), length);
    at_ += length;
    return true;
  }

 private:
  const uint8_t* at_;
  const uint8_t* end_;
};

bool IsAscii(absl::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Reads a BidSeen's fields, each at most once. A relay that is not ASCII is left to protobuf,
// which checks that a string is UTF-8.
bool ReadBid(absl::string_view bytes, uint64_t& builder_index, absl::string_view& relay,
             absl::string_view& pubkey) {
  WireReader in(bytes);
  bool seen_index = false, seen_relay = false, seen_pubkey = false;
  while (!in.done()) {
    uint64_t tag = 0;
    if (!in.Varint(tag)) return false;
    if (tag == kBuilderIndexTag && !seen_index) {
      seen_index = true;
      if (!in.Varint(builder_index)) return false;
    } else if (tag == kRelayTag && !seen_relay) {
      seen_relay = true;
      if (!in.Delimited(relay) || !IsAscii(relay)) return false;
    } else if (tag == kPubkeyTag && !seen_pubkey) {
      seen_pubkey = true;
      if (!in.Delimited(pubkey)) return false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

bool ReceivedBatch::ReadBids() {
  // Offsets are 32 bits; protobuf refuses messages of 2 GiB and more anyway.
  if (bytes_.size() > INT_MAX) return false;
  const auto* const base = reinterpret_cast<const uint8_t*>(bytes_.data());
  // An absent string is empty, and points nowhere.
  auto offset = [base](absl::string_view part) {
    return part.empty()
               ? 0
               : static_cast<uint32_t>(reinterpret_cast<const uint8_t*>(part.data()) - base);
  };
  WireReader batch(bytes_);
  while (!batch.done()) {
    uint64_t tag = 0;
    absl::string_view observation_bytes;
    if (!batch.Varint(tag) || tag != kObservationTag || !batch.Delimited(observation_bytes)) {
      return false;
    }
    BidSpan& span = bids_.emplace_back();
    span.end = static_cast<uint32_t>(batch.position() - base);
    WireReader observation(observation_bytes);
    bool seen_sequence = false, seen_slot = false, seen_bid = false;
    while (!observation.done()) {
      if (!observation.Varint(tag)) return false;
      if (tag == kSequenceTag && !seen_sequence) {
        seen_sequence = true;
        if (!observation.Varint(span.sequence)) return false;
      } else if (tag == kSlotTag && !seen_slot) {
        seen_slot = true;
        if (!observation.Varint(span.slot)) return false;
      } else if (tag == kBidSeenTag && !seen_bid) {
        seen_bid = true;
        absl::string_view bid, relay, pubkey;
        if (!observation.Delimited(bid) || !ReadBid(bid, span.builder_index, relay, pubkey)) {
          return false;
        }
        span.relay_at = offset(relay);
        span.relay_size = static_cast<uint32_t>(relay.size());
        span.pubkey_at = offset(pubkey);
        span.pubkey_size = static_cast<uint32_t>(pubkey.size());
      } else {
        return false;
      }
    }
    // An observation without an event is refused by name, which the parsed form does.
    if (!seen_bid) return false;
  }
  return true;
}

void ReceivedBatch::NewParsed() {
  arena_ = std::make_unique<google::protobuf::Arena>(ArenaFor(bytes_.size()));
  parsed_ = google::protobuf::Arena::CreateMessage<v1::ObservationBatch>(arena_.get());
}

absl::StatusOr<ReceivedBatch> ReceivedBatch::Parse(std::string bytes) {
  ReceivedBatch received(std::move(bytes));
  if (received.ReadBids()) return received;
  received.bids_ = {};
  received.NewParsed();
  if (!received.parsed_->ParseFromString(received.bytes_)) {
    return absl::InvalidArgumentError("not a serialized breaker.v1.ObservationBatch");
  }
  return received;
}

ReceivedBatch ReceivedBatch::Of(const v1::ObservationBatch& batch) {
  ReceivedBatch received(batch.SerializeAsString());
  received.NewParsed();
  *received.parsed_ = batch;
  return received;
}

int ReceivedBatch::size() const {
  return read_in_place() ? static_cast<int>(bids_.size()) : parsed_->observations_size();
}

uint64_t ReceivedBatch::sequence(int i) const {
  return read_in_place() ? bids_[i].sequence : parsed_->observations(i).sequence();
}

ReceivedBatch::Bid ReceivedBatch::bid(int i) const {
  const BidSpan& span = bids_[i];
  const absl::string_view bytes = bytes_;
  return Bid{span.sequence, span.slot, span.builder_index,
             bytes.substr(span.relay_at, span.relay_size),
             bytes.substr(span.pubkey_at, span.pubkey_size)};
}

v1::ObservationBatch ReceivedBatch::ToProto() const {
  if (!read_in_place()) return *parsed_;
  v1::ObservationBatch batch;
  for (int i = 0; i < size(); ++i) {
    const Bid read = bid(i);
    v1::Observation* observation = batch.add_observations();
    observation->set_sequence(read.sequence);
    observation->set_slot(read.slot);
    v1::BidSeen* bid_seen = observation->mutable_bid_seen();
    bid_seen->set_builder_index(read.builder_index);
    bid_seen->set_relay(std::string(read.relay));
    bid_seen->set_builder_pubkey(std::string(read.pubkey));
  }
  return batch;
}

void ReceivedBatch::Keep(absl::FunctionRef<bool(int i)> keep) {
  if (!read_in_place()) {
    auto& observations = *parsed_->mutable_observations();
    int kept = 0;
    for (int i = 0; i < observations.size(); ++i) {
      if (!keep(i)) continue;
      if (kept != i) observations.SwapElements(kept, i);
      ++kept;
    }
    if (kept == observations.size()) return;
    observations.DeleteSubrange(kept, observations.size() - kept);
    bytes_ = parsed_->SerializeAsString();
    return;
  }
  // The bytes are the observations' fields alone, in order: observation i lies between the end
  // of observation i-1 and its own. The kept ones are moved forward over the others.
  uint32_t read = 0, written = 0;
  size_t kept = 0;
  for (size_t i = 0; i < bids_.size(); ++i) {
    BidSpan span = bids_[i];
    const uint32_t start = read;
    read = span.end;
    if (!keep(static_cast<int>(i))) continue;
    const uint32_t size = span.end - start;
    if (written != start) {
      std::memmove(bytes_.data() + written, bytes_.data() + start, size);
      // Offsets of empty strings stay 0: they point nowhere.
      if (span.relay_size > 0) span.relay_at -= start - written;
      if (span.pubkey_size > 0) span.pubkey_at -= start - written;
    }
    written += size;
    span.end = written;
    bids_[kept++] = span;
  }
  bids_.resize(kept);
  bytes_.resize(written);
}

void ReceivedBatch::KeepFirst(int count) {
  CHECK(count >= 0 && count <= size()) << count << " of " << size();
  Keep([count](int i) { return i < count; });
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
