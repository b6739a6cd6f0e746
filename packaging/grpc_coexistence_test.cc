// The self-contained client library (libbreaker_client.a linked in, or libbreaker_client.so.1
// loaded) inside a program that uses Debian's shared gRPC and Protobuf itself: the program's
// gRPC serves and connects, the library's client works beside it, and neither sees the other's
// copy (the program's Protobuf pool knows no breaker type, its Protobuf symbols come from
// Debian's shared library).
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>

#include "client/c_api.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/duration.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace {

TEST(GrpcCoexistence, ProgramsOwnGrpcServesBesideTheLibrary) {
#if defined(__SANITIZE_THREAD__)
  // The gRPC, Abseil and Protobuf inside the library are Debian's static archives, built
  // without -fsanitize=thread and linked into this program itself. ThreadSanitizer sees their
  // memory accesses where it intercepts them (memmove, free) but not the locks that order them
  // (Abseil's SpinLock, gRPC's own), so it reports races between the library's gRPC threads
  // inside those copies; its suppressions name the system's shared libraries, which these
  // frames are not in. The client's threads are checked under ThreadSanitizer by //client's
  // tests, against the shared libraries; the ordinary and AddressSanitizer builds run this one.
  GTEST_SKIP() << "the library's gRPC and Abseil are not instrumented for ThreadSanitizer";
#endif
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);

  breaker_options* opts = breaker_options_new();
  ASSERT_NE(opts, nullptr);
  // Nothing listens on port 1: the library keeps dialing in the background and answers from
  // its local policy meanwhile.
  ASSERT_EQ(breaker_options_add_address(opts, "127.0.0.1:1"), BREAKER_OK);
  ASSERT_EQ(breaker_options_set_node_id(opts, "coexistence"), BREAKER_OK);
  breaker_client* client = nullptr;
  breaker_error error{};
  error.size = sizeof(error);
  ASSERT_EQ(breaker_client_new(opts, &client, &error), BREAKER_OK) << error.message;
  breaker_options_free(opts);

  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  EXPECT_TRUE(
      channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10)));

  EXPECT_EQ(breaker_policy_source(client), BREAKER_SOURCE_LOCAL);
  EXPECT_TRUE(breaker_is_allowed(client, 7, nullptr));
  // A bid of the current mainnet slot: the library refuses slots long past.
  const uint64_t slot = (static_cast<uint64_t>(time(nullptr)) - 1606824023u) / 12u;
  EXPECT_EQ(breaker_report_bid(client, slot, 7, nullptr, nullptr, 0), BREAKER_OK);

  breaker_client_free(client);
  server->Shutdown();
}

TEST(GrpcCoexistence, ProgramsProtobufIsTheSharedOneAndKnowsNoBreakerType) {
  const google::protobuf::DescriptorPool* pool = google::protobuf::DescriptorPool::generated_pool();
  EXPECT_NE(pool->FindMessageTypeByName("google.protobuf.Duration"), nullptr);
  EXPECT_EQ(pool->FindMessageTypeByName("breaker.v1.NodeMessage"), nullptr);

  Dl_info info{};
  ASSERT_NE(
      dladdr(reinterpret_cast<void*>(&google::protobuf::DescriptorPool::generated_pool), &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("libprotobuf.so"), std::string::npos)
      << info.dli_fname;
}

}  // namespace
