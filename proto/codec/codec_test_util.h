#ifndef PROTO_CODEC_CODEC_TEST_UTIL_H_
#define PROTO_CODEC_CODEC_TEST_UTIL_H_

// What the tests of the API codec (api_codec_test.cc) and of the snapshot codec
// (snapshot_codec_test.cc) both build their values with and compare them by, and the matchers
// they check results with.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "breaker/v1/breaker.pb.h"
#include "core/policy.h"
#include "core/types.h"
#include "gmock/gmock.h"
#include "google/protobuf/message_lite.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::codec {

using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The code of every refusal of a codec.
inline constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

// A block root of 32 bytes, nearly all `id`.
core::BlockRoot Root(uint8_t id);

// Root(id) as the raw bytes of the protos.
std::string RootBytes(uint8_t id);

// `message` serialized with deterministic serialization, as breakerd writes its state.
std::string DeterministicBytes(const google::protobuf::MessageLite& message);

// `message` written to bytes and parsed back, as it would be after a restart.
template <typename Message>
Message ThroughBytes(const Message& message) {
  Message parsed;
  EXPECT_TRUE(parsed.ParseFromString(DeterministicBytes(message)));
  return parsed;
}

// The builder_index of each entry of `list`, in order.
template <typename T>
std::vector<uint64_t> Indices(const T& list) {
  std::vector<uint64_t> indices;
  for (const auto& entry : list) indices.push_back(entry.builder_index());
  return indices;
}

// An observation with its sequence and slot set, and no event yet.
breaker::v1::Observation Numbered(uint64_t sequence, uint64_t slot);

// Expects every field of `actual` to equal that of `expected`, and the same decisions.
void ExpectSamePolicy(const core::Policy& actual, const core::Policy& expected);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_CODEC_TEST_UTIL_H_
