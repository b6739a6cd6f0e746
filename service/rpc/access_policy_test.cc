#include "service/rpc/access_policy.h"

#include <string>

#include "breaker/v1/access.pb.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;

// printf %s "secret" | sha256sum
constexpr char kSecretSha256[] = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b";

absl::StatusOr<AccessPolicy> Parse(const std::string& text) {
  v1::AccessPolicy proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &proto)) << text;
  return AccessPolicy::FromProto(proto, "access.textproto");
}

TEST(Sha256HexTest, MatchesSha256sum) { EXPECT_EQ(Sha256Hex("secret"), kSecretSha256); }

TEST(RoleAllowsTest, EachRoleItsPermissions) {
  EXPECT_TRUE(RoleAllows(v1::ROLE_NODE, Permission::kNodeStream));
  EXPECT_FALSE(RoleAllows(v1::ROLE_NODE, Permission::kView));
  EXPECT_FALSE(RoleAllows(v1::ROLE_NODE, Permission::kOperate));
  EXPECT_FALSE(RoleAllows(v1::ROLE_VIEWER, Permission::kNodeStream));
  EXPECT_TRUE(RoleAllows(v1::ROLE_VIEWER, Permission::kView));
  EXPECT_FALSE(RoleAllows(v1::ROLE_VIEWER, Permission::kOperate));
  EXPECT_TRUE(RoleAllows(v1::ROLE_ADMIN, Permission::kNodeStream));
  EXPECT_TRUE(RoleAllows(v1::ROLE_ADMIN, Permission::kView));
  EXPECT_TRUE(RoleAllows(v1::ROLE_ADMIN, Permission::kOperate));
  EXPECT_FALSE(RoleAllows(v1::ROLE_UNSPECIFIED, Permission::kView));
}

TEST(AccessPolicyTest, FindsPrincipalsByTokenAndCertificate) {
  absl::StatusOr<AccessPolicy> policy = Parse(absl::StrCat(
      R"pb(
        principal { name: "node-a" role: ROLE_NODE certificate_identity: "node-a.pool" }
        principal { name: "ops" role: ROLE_ADMIN token_sha256: ")pb",
      kSecretSha256, R"pb(" })pb"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(policy->size(), 2u);

  const Principal* ops = policy->FindByToken("secret");
  ASSERT_NE(ops, nullptr);
  EXPECT_EQ(ops->name, "ops");
  EXPECT_EQ(ops->role, v1::ROLE_ADMIN);
  EXPECT_EQ(policy->FindByToken("Secret"), nullptr);
  EXPECT_EQ(policy->FindByToken(kSecretSha256), nullptr) << "the digest is not the token";

  // The first listed name decides, whichever of the certificate's names it is.
  const Principal* node = policy->FindByCertificate({"other.pool", "node-a.pool", "node-a"});
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->name, "node-a");
  EXPECT_EQ(policy->FindByCertificate({"node-b.pool", "ops"}), nullptr)
      << "a principal's name is not a certificate identity";
  EXPECT_EQ(policy->FindByCertificate({}), nullptr);
}

TEST(AccessPolicyTest, UpperCaseDigestsMatch) {
  std::string upper = kSecretSha256;
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  absl::StatusOr<AccessPolicy> policy = Parse(absl::StrCat(
      R"pb(principal { name: "ops" role: ROLE_ADMIN token_sha256: ")pb", upper, R"pb(" })pb"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_NE(policy->FindByToken("secret"), nullptr);
}

TEST(AccessPolicyTest, AnEmptyFileKnowsNobody) {
  absl::StatusOr<AccessPolicy> policy = Parse("");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(policy->FindByToken("secret"), nullptr);
}

struct BadFile {
  std::string text;
  std::string error;
};

class BadAccessFileTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadAccessFileTest, IsRefusedNamingThePrincipalAndTheFix) {
  absl::StatusOr<AccessPolicy> policy = Parse(GetParam().text);
  EXPECT_THAT(policy, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().error)));
  EXPECT_THAT(policy.status().message(), HasSubstr("access.textproto: principal"));
}

INSTANTIATE_TEST_SUITE_P(
    Rows, BadAccessFileTest,
    ::testing::Values(
        BadFile{R"pb(principal { role: ROLE_ADMIN certificate_identity: "a" })pb", "name is empty"},
        BadFile{R"pb(principal { name: "a" role: ROLE_ADMIN certificate_identity: "a" }
                     principal { name: "a" role: ROLE_VIEWER certificate_identity: "b" })pb",
                "the name is used twice"},
        // A name that no node id can be: the node ids' rule holds for every name.
        BadFile{R"pb(principal { name: " bn-sp" role: ROLE_NODE certificate_identity: "a" })pb",
                "name \" bn-sp\" begins with a space"},
        BadFile{R"pb(principal { name: "bn\n1" role: ROLE_NODE certificate_identity: "a" })pb",
                "has byte 0x0a at offset 2"},
        BadFile{R"pb(principal { name: "a" certificate_identity: "a" })pb",
                "set role to ROLE_NODE, ROLE_VIEWER or ROLE_ADMIN"},
        BadFile{R"pb(principal { name: "a" role: ROLE_NODE })pb", "no credential"},
        BadFile{R"pb(principal { name: "a" role: ROLE_NODE token_sha256: "secret" })pb",
                "is not 64 hex digits"},
        BadFile{R"pb(principal { name: "a" role: ROLE_NODE certificate_identity: "" })pb",
                "a certificate_identity is empty"},
        BadFile{R"pb(principal { name: "a" role: ROLE_NODE certificate_identity: "x" }
                     principal { name: "b" role: ROLE_NODE certificate_identity: "x" })pb",
                "certificate_identity 'x' is another principal's too"},
        BadFile{
            R"pb(principal {
                   name: "a"
                   role: ROLE_NODE
                   token_sha256: "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
                 }
                 principal {
                   name: "b"
                   role: ROLE_ADMIN
                   token_sha256: "2BB80D537B1DA3E38BD30361AA855686BDE0EACD7162FEF6A25FE97BF527A25B"
                 })pb",
            "is another principal's too"}));

TEST(AccessPolicyTest, TheShippedExampleLoadsAndItsCommentsTellTheTokens) {
  absl::StatusOr<AccessPolicy> policy = AccessPolicy::Load("examples/access.textproto");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(policy->size(), 5u);
  const Principal* lab = policy->FindByToken("replace-me-lab");
  ASSERT_NE(lab, nullptr);
  EXPECT_EQ(lab->name, "bn-lab-1");
  EXPECT_EQ(lab->role, v1::ROLE_NODE);
  const Principal* grafana = policy->FindByToken("replace-me-grafana");
  ASSERT_NE(grafana, nullptr);
  EXPECT_EQ(grafana->role, v1::ROLE_VIEWER);
  const Principal* oncall = policy->FindByCertificate({"oncall@pool.internal"});
  ASSERT_NE(oncall, nullptr);
  EXPECT_EQ(oncall, policy->FindByToken("replace-me-oncall"));
  EXPECT_EQ(oncall->role, v1::ROLE_ADMIN);
}

TEST(AccessPolicyTest, LoadNamesAMissingFile) {
  EXPECT_THAT(AccessPolicy::Load("no/such/access.textproto"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no/such/access.textproto")));
}

}  // namespace
}  // namespace breaker::service
