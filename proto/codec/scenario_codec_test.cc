#include "proto/codec/scenario_codec.h"

#include <string>

#include "gtest/gtest.h"

namespace breaker::codec {
namespace {

namespace v1 = ::breaker::v1;

TEST(ExpandScriptedObservationTest, SlotZeroBecomesTheCurrentSlot) {
  v1::Observation observation;
  observation.mutable_bid_seen()->set_builder_index(3);
  EXPECT_EQ(ExpandScriptedObservation(observation, 1234).slot(), 1234u);

  observation.set_slot(99);
  EXPECT_EQ(ExpandScriptedObservation(observation, 1234).slot(), 99u);
}

TEST(ExpandScriptedObservationTest, ShortRootsArePaddedLabels) {
  v1::Observation missing;
  missing.mutable_payload_missing()->set_block_root("r1");
  const std::string root = ExpandScriptedObservation(missing, 1).payload_missing().block_root();
  EXPECT_EQ(root, std::string("r1") + std::string(30, '\0'));

  v1::Observation seen;
  seen.mutable_blocks_seen()->add_block_roots("a");
  seen.mutable_blocks_seen()->add_block_roots(std::string(32, 'x'));
  const v1::Observation expanded = ExpandScriptedObservation(seen, 1);
  EXPECT_EQ(expanded.blocks_seen().block_roots(0), std::string("a") + std::string(31, '\0'));
  EXPECT_EQ(expanded.blocks_seen().block_roots(1), std::string(32, 'x'));

  v1::Observation delivered;
  delivered.mutable_payload_delivered()->set_block_root("r1");
  EXPECT_EQ(ExpandScriptedObservation(delivered, 1).payload_delivered().block_root(), root);

  v1::Observation reveal;
  reveal.mutable_relay_reveal_missing()->set_block_root("r1");
  EXPECT_EQ(ExpandScriptedObservation(reveal, 1).relay_reveal_missing().block_root(), root);
}

TEST(ExpandScriptedObservationTest, LongRootsAreLeftForTheCodecToRefuse) {
  v1::Observation missing;
  missing.mutable_payload_missing()->set_block_root(std::string(33, 'x'));
  EXPECT_EQ(ExpandScriptedObservation(missing, 1).payload_missing().block_root().size(), 33u);
}

}  // namespace
}  // namespace breaker::codec
