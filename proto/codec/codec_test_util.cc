#include "proto/codec/codec_test_util.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace breaker::codec {

core::BlockRoot Root(uint8_t id) {
  core::BlockRoot root;
  root.bytes.fill(id);
  root.bytes[31] = 0xff;  // Not a printable string: the codec must carry raw bytes.
  return root;
}

std::string RootBytes(uint8_t id) {
  const core::BlockRoot root = Root(id);
  return std::string(reinterpret_cast<const char*>(root.bytes.data()), root.bytes.size());
}

std::string DeterministicBytes(const google::protobuf::MessageLite& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    EXPECT_TRUE(message.SerializeToCodedStream(&out));
  }
  return bytes;
}

breaker::v1::Observation Numbered(uint64_t sequence, uint64_t slot) {
  breaker::v1::Observation proto;
  proto.set_sequence(sequence);
  proto.set_slot(slot);
  return proto;
}

void ExpectSamePolicy(const core::Policy& actual, const core::Policy& expected) {
  EXPECT_EQ(actual.version, expected.version);
  EXPECT_EQ(actual.mode, expected.mode);
  EXPECT_EQ(actual.mode_reason, expected.mode_reason);
  EXPECT_EQ(actual.banned_builders, expected.banned_builders);
  EXPECT_EQ(actual.banned_relays, expected.banned_relays);
  EXPECT_EQ(actual.trusted_builders, expected.trusted_builders);
  EXPECT_EQ(actual.trusted_relays, expected.trusted_relays);
  EXPECT_EQ(actual.builder_pubkeys, expected.builder_pubkeys);
  EXPECT_EQ(actual.missed_slots, expected.missed_slots);
  EXPECT_EQ(actual.computed_at_slot, expected.computed_at_slot);
  EXPECT_EQ(actual.computed_at_epoch, expected.computed_at_epoch);
  EXPECT_EQ(actual.reason, expected.reason);
  EXPECT_TRUE(actual.SameDecisions(expected));
}

}  // namespace breaker::codec
