// The authorizer over credentials read off a call, and the swap of its access file at a
// reload: calls authorized from then on see the new file, a bad or missing file keeps the old.

#include "service/rpc/authorizer.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "service/rpc/access_policy.h"
#include "tests/support/status_matchers.h"

namespace breaker::service {
namespace {

namespace v1 = ::breaker::v1;
using ::breaker::testing::IsOk;
using ::breaker::testing::StatusIs;
using ::testing::HasSubstr;

// Bearer tokens; the files list their SHA-256.
const std::string kNodeToken = "node-token";
const std::string kViewerToken = "viewer-token";

std::string Principal(const std::string& name, const std::string& role, const std::string& token) {
  return "principal { name: \"" + name + "\" role: " + role + " token_sha256: \"" +
         Sha256Hex(token) + "\" }\n";
}

Credentials Token(const std::string& token) {
  Credentials credentials;
  credentials.token_sha256 = Sha256Hex(token);
  return credentials;
}

Credentials Certificate(const std::string& identity) {
  Credentials credentials;
  credentials.certificate_identities = {identity};
  return credentials;
}

class AuthorizerTest : public ::testing::Test {
 protected:
  AuthorizerTest()
      : path_(std::string(std::getenv("TEST_TMPDIR")) + "/" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() +
              ".access.textproto") {}

  void Write(const std::string& text) {
    std::ofstream file(path_, std::ios::trunc);
    file << text;
    ASSERT_TRUE(file.good()) << path_;
  }

  // An authorizer over the file as it is now, as breakerd starts with it.
  std::unique_ptr<Authorizer> Load() {
    absl::StatusOr<AccessPolicy> policy = AccessPolicy::Load(path_);
    EXPECT_THAT(policy, IsOk());
    if (!policy.ok()) return nullptr;
    return std::make_unique<Authorizer>(*std::move(policy), path_);
  }

  const std::string path_;
};

TEST_F(AuthorizerTest, ReadsTheCredentialsDigestAndCertificate) {
  Write(Principal("bn-1", "ROLE_NODE", kNodeToken) +
        "principal { name: \"bn-2\" role: ROLE_NODE certificate_identity: \"bn-2.test\" }\n");
  std::unique_ptr<Authorizer> authorizer = Load();
  ASSERT_NE(authorizer, nullptr);
  absl::StatusOr<service::Principal> by_token =
      authorizer->Authorize(Token(kNodeToken), Permission::kNodeStream);
  ASSERT_THAT(by_token, IsOk());
  EXPECT_EQ(by_token->name, "bn-1");
  absl::StatusOr<service::Principal> by_certificate =
      authorizer->Authorize(Certificate("bn-2.test"), Permission::kNodeStream);
  ASSERT_THAT(by_certificate, IsOk());
  EXPECT_EQ(by_certificate->name, "bn-2");
  EXPECT_THAT(authorizer->Authorize(Token("guess"), Permission::kNodeStream),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("bearer token")));
  EXPECT_THAT(authorizer->Authorize(Credentials{}, Permission::kNodeStream),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("no credential")));
  EXPECT_THAT(authorizer->Authorize(Token(kNodeToken), Permission::kView),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("ROLE_NODE")));
}

TEST_F(AuthorizerTest, AReloadPutsTheNewFileInForce) {
  Write(Principal("bn-1", "ROLE_NODE", kNodeToken) +
        Principal("dashboard", "ROLE_VIEWER", kViewerToken));
  std::unique_ptr<Authorizer> authorizer = Load();
  ASSERT_NE(authorizer, nullptr);
  ASSERT_THAT(authorizer->Authorize(Token(kNodeToken), Permission::kNodeStream), IsOk());

  // The node's token is gone; the dashboard's now belongs to an admin.
  Write(Principal("ops", "ROLE_ADMIN", kViewerToken));
  absl::StatusOr<size_t> reloaded = authorizer->Reload();
  ASSERT_THAT(reloaded, IsOk());
  EXPECT_EQ(*reloaded, 1u);
  EXPECT_THAT(authorizer->Authorize(Token(kNodeToken), Permission::kNodeStream),
              StatusIs(absl::StatusCode::kUnauthenticated));
  absl::StatusOr<service::Principal> ops =
      authorizer->Authorize(Token(kViewerToken), Permission::kOperate);
  ASSERT_THAT(ops, IsOk());
  EXPECT_EQ(ops->name, "ops");
  EXPECT_EQ(ops->role, v1::ROLE_ADMIN);

  // A role taken away.
  Write(Principal("ops", "ROLE_VIEWER", kViewerToken));
  ASSERT_THAT(authorizer->Reload(), IsOk());
  EXPECT_THAT(authorizer->Authorize(Token(kViewerToken), Permission::kOperate),
              StatusIs(absl::StatusCode::kPermissionDenied));
}

// The report this guards against: a reload reads a large file slowly; meanwhile the file loses
// a principal and a second reload puts that in force and answers OK; the first must not then
// give the principal its access back.
TEST_F(AuthorizerTest, AReloadCalledEarlierNeverUndoesOneCalledLater) {
  Write(Principal("bn-1", "ROLE_NODE", kNodeToken) +
        Principal("dashboard", "ROLE_VIEWER", kViewerToken));
  absl::StatusOr<AccessPolicy> initial = AccessPolicy::Load(path_);
  ASSERT_THAT(initial, IsOk());
  // The first reload's read stops once it has read the file, until released: a slow parse.
  std::promise<void> first_read;
  std::promise<void> release_first;
  std::shared_future<void> released = release_first.get_future().share();
  std::atomic<int> reads{0};
  Authorizer authorizer(*std::move(initial), path_, [&](const std::string& path) {
    absl::StatusOr<AccessPolicy> read = AccessPolicy::Load(path);
    if (reads.fetch_add(1) == 0) {
      first_read.set_value();
      released.wait();
    }
    return read;
  });

  absl::StatusOr<size_t> first = absl::UnknownError("not run");
  std::thread slow([&] { first = authorizer.Reload(); });
  first_read.get_future().wait();
  // The node is revoked, and a second reload puts that in force while the first still reads.
  Write(Principal("dashboard", "ROLE_VIEWER", kViewerToken));
  absl::StatusOr<size_t> second = authorizer.Reload();
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(*second, 1u);
  EXPECT_THAT(authorizer.Authorize(Token(kNodeToken), Permission::kNodeStream),
              StatusIs(absl::StatusCode::kUnauthenticated));

  release_first.set_value();
  slow.join();
  EXPECT_THAT(first, StatusIs(absl::StatusCode::kAborted, HasSubstr("reload again")));
  EXPECT_THAT(authorizer.Authorize(Token(kNodeToken), Permission::kNodeStream),
              StatusIs(absl::StatusCode::kUnauthenticated));
  EXPECT_THAT(authorizer.Authorize(Token(kViewerToken), Permission::kView), IsOk());

  // A reload called after both reads the file as it is then.
  Write(Principal("bn-1", "ROLE_NODE", kNodeToken));
  ASSERT_THAT(authorizer.Reload(), IsOk());
  EXPECT_THAT(authorizer.Authorize(Token(kNodeToken), Permission::kNodeStream), IsOk());
  EXPECT_THAT(authorizer.Authorize(Token(kViewerToken), Permission::kView),
              StatusIs(absl::StatusCode::kUnauthenticated));
}

TEST_F(AuthorizerTest, ABadOrMissingFileChangesNothing) {
  Write(Principal("bn-1", "ROLE_NODE", kNodeToken));
  std::unique_ptr<Authorizer> authorizer = Load();
  ASSERT_NE(authorizer, nullptr);

  Write("principal { name: \"nobody\" }\n");
  EXPECT_THAT(authorizer->Reload(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'nobody'")));
  Write("principal { bogus: 1 }\n");
  EXPECT_THAT(authorizer->Reload(), StatusIs(absl::StatusCode::kInvalidArgument));
  std::filesystem::remove(path_);
  EXPECT_THAT(authorizer->Reload(), StatusIs(absl::StatusCode::kNotFound));

  absl::StatusOr<service::Principal> caller =
      authorizer->Authorize(Token(kNodeToken), Permission::kNodeStream);
  ASSERT_THAT(caller, IsOk());
  EXPECT_EQ(caller->name, "bn-1");
}

TEST_F(AuthorizerTest, WithoutAnAccessFileEveryCallerIsAnAdminAndNothingReloads) {
  Authorizer authorizer(std::nullopt);
  EXPECT_THAT(authorizer.Reload(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--access_file")));
  absl::StatusOr<service::Principal> caller =
      authorizer.Authorize(Credentials{}, Permission::kOperate);
  ASSERT_THAT(caller, IsOk());
  EXPECT_EQ(caller->role, v1::ROLE_ADMIN);
}

}  // namespace
}  // namespace breaker::service
