#ifndef TESTS_SUPPORT_FAKE_RELAY_H_
#define TESTS_SUPPORT_FAKE_RELAY_H_

// A relay's builder API for tests, over real HTTP on loopback: every getHeader is answered 200
// with one pre-Gloas header, and every reveal (blinded_blocks) 200, or 500 when the relay
// withholds its payloads.

#include <atomic>
#include <string>
#include <thread>

#include "httplib.h"

namespace breaker::testing {

// This class is thread-safe.
class FakeRelay {
 public:
  enum class Reveals { kDelivers, kWithholds };

  // Serves on 127.0.0.1, on a port of the kernel's choice.
  explicit FakeRelay(Reveals reveals);
  ~FakeRelay();

  FakeRelay(const FakeRelay&) = delete;
  FakeRelay& operator=(const FakeRelay&) = delete;

  // "http://127.0.0.1:PORT", also the relay's identifier as breakerd normalizes it.
  std::string url() const;
  // getHeader requests answered so far.
  int headers() const { return headers_; }

  // The block hash of the header served: a blinded block that reveals it names this.
  static std::string BlockHash();

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> headers_{0};
};

}  // namespace breaker::testing

#endif  // TESTS_SUPPORT_FAKE_RELAY_H_
