#include "service/service_limits.h"

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_util.h"

namespace breaker::service {
namespace {

using ::testing::HasSubstr;

TEST(ServiceLimitsTest, AbsentFieldsTakeTheDefaults) {
  absl::StatusOr<ServiceLimits> limits = ServiceLimitsFromProto(breaker::v1::Config());
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ(*limits, ServiceLimits());
}

TEST(ServiceLimitsTest, PresentFieldsAreTakenAndWrittenBack) {
  breaker::v1::Config proto;
  proto.set_max_connected_nodes(4);
  proto.set_node_observation_rate(10);
  proto.set_node_observation_burst(1000);
  proto.set_max_known_nodes(3);
  absl::StatusOr<ServiceLimits> limits = ServiceLimitsFromProto(proto);
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ(limits->max_connected_nodes, 4u);
  EXPECT_EQ(limits->node_observation_rate, 10u);
  EXPECT_EQ(limits->node_observation_burst, 1000u);
  EXPECT_EQ(limits->max_known_nodes, 3u);

  breaker::v1::Config written;
  ServiceLimitsToProto(*limits, written);
  EXPECT_EQ(written.SerializeAsString(), proto.SerializeAsString());
}

TEST(ServiceLimitsTest, AValueOutOfRangeNamesTheFieldAndTheRange) {
  struct Case {
    void (breaker::v1::Config::*set)(uint32_t);
    uint32_t value;
    std::string message;
  };
  for (const Case& c : std::initializer_list<Case>{
           {&breaker::v1::Config::set_max_connected_nodes, 0,
            "max_connected_nodes is 0; accepted: 1..100000"},
           {&breaker::v1::Config::set_node_observation_rate, 1'000'001,
            "node_observation_rate is 1000001; accepted: 1..1000000"},
           {&breaker::v1::Config::set_node_observation_burst, 10,
            "node_observation_burst is 10; accepted: 1000..10000000"},
           {&breaker::v1::Config::set_max_known_nodes, 0,
            "max_known_nodes is 0; accepted: 1..1000000"},
       }) {
    breaker::v1::Config proto;
    (proto.*c.set)(c.value);
    absl::StatusOr<ServiceLimits> limits = ServiceLimitsFromProto(proto);
    EXPECT_EQ(limits.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(limits.status().message(), c.message);
  }
}

TEST(ServiceLimitsTest, TheFileGivesBothTheRulesAndTheLimits) {
  const std::string path = testing::TestDir() + "/breakerd.textproto";
  std::ofstream(path) << "chain { network: \"mainnet\" }\n"
                         "min_reporting_nodes: 2\n"
                         "max_known_nodes: 7\n";
  absl::StatusOr<ServiceConfig> config = LoadServiceConfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->rules.min_reporting_nodes, 2u);
  EXPECT_EQ(config->limits.max_known_nodes, 7u);
  EXPECT_EQ(config->limits.max_connected_nodes, ServiceLimits().max_connected_nodes);

  const breaker::v1::Config proto = ServiceConfigToProto(*config);
  EXPECT_EQ(proto.max_known_nodes(), 7u);
  EXPECT_EQ(proto.min_reporting_nodes(), 2u);
}

TEST(ServiceLimitsTest, TheWholeConfigurationSetsEveryField) {
  const breaker::v1::Config proto = ServiceConfigToProto(ServiceConfig());
  const google::protobuf::Descriptor& descriptor = *proto.GetDescriptor();
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const google::protobuf::FieldDescriptor& field = *descriptor.field(i);
    if (field.is_repeated()) continue;
    EXPECT_TRUE(proto.GetReflection()->HasField(proto, &field)) << field.full_name();
  }
}

TEST(ServiceLimitsTest, TheFilesErrorsAreTheCodecsThenTheLimits) {
  const std::string path = testing::TestDir() + "/bad.textproto";
  std::ofstream(path) << "max_known_nodes: 0\n";
  EXPECT_THAT(LoadServiceConfig(path).status().message(), HasSubstr("max_known_nodes is 0"));
  EXPECT_EQ(LoadServiceConfig(testing::TestDir() + "/absent.textproto").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace breaker::service
