#include "common/port_holder.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace breaker {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A listening socket on a loopback port the kernel picks.
class Listener {
 public:
  Listener() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(listen(fd_, 1), 0);
    socklen_t length = sizeof(address);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~Listener() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

TEST(PortHolderTest, NamesThisProcessForItsOwnListener) {
  Listener listener;
  EXPECT_EQ(DescribePortHolder(listener.port()).rfind(absl::StrCat("pid ", getpid(), " ("), 0), 0u);
  EXPECT_THAT(PortHolderSuffix(listener.port()), HasSubstr(absl::StrCat("held by pid ", getpid())));
}

TEST(PortHolderTest, FindsNothingOnAFreePort) {
  int port;
  {
    Listener listener;
    port = listener.port();
  }
  EXPECT_THAT(DescribePortHolder(port), IsEmpty());
  EXPECT_THAT(PortHolderSuffix(port), IsEmpty());
}

}  // namespace
}  // namespace breaker
