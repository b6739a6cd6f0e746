#include "tests/support/fake_relay.h"

#include "absl/strings/str_cat.h"

namespace breaker::testing {

std::string FakeRelay::BlockHash() { return "0x" + std::string(64, '2'); }

FakeRelay::FakeRelay(Reveals reveals) {
  const std::string header =
      absl::StrCat(R"({"version":"deneb","data":{"message":{"header":{"block_hash":")", BlockHash(),
                   R"("},"value":"1"},"signature":"0x00"}})");
  server_.Get("/eth/v1/builder/header/.*",
              [this, header](const httplib::Request&, httplib::Response& response) {
                ++headers_;
                response.set_content(header, "application/json");
              });
  const bool delivers = reveals == Reveals::kDelivers;
  server_.Post("/eth/v1/builder/blinded_blocks",
               [delivers](const httplib::Request&, httplib::Response& response) {
                 response.status = delivers ? 200 : 500;
                 response.set_content(delivers ? "{}" : R"({"code":500,"message":"no payload"})",
                                      "application/json");
               });
  port_ = server_.bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  // A stop() before the server runs would be lost, and the destructor's join would hang.
  while (port_ > 0 && !server_.is_running()) std::this_thread::yield();
}

FakeRelay::~FakeRelay() {
  server_.stop();
  thread_.join();
}

std::string FakeRelay::url() const { return absl::StrCat("http://127.0.0.1:", port_); }

}  // namespace breaker::testing
