#include "common/port_holder.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace breaker {
namespace {

constexpr int kMaxProcesses = 8192;
constexpr int kMaxFdsPerProcess = 65536;
// /proc/net/tcp's state of a listening socket.
constexpr absl::string_view kListen = "0A";

// The inodes of the sockets listening on `port`, from /proc/net/tcp and tcp6: lines of
// "sl local_address rem_address st ... inode", addresses as HEX_IP:HEX_PORT.
std::set<std::string> ListeningInodes(int port) {
  std::set<std::string> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // The header.
    while (std::getline(in, line)) {
      std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (fields.size() < 10 || fields[3] != kListen) continue;
      const size_t colon = fields[1].rfind(':');
      int local_port = 0;
      if (colon == absl::string_view::npos ||
          !absl::SimpleHexAtoi(fields[1].substr(colon + 1), &local_port) || local_port != port) {
        continue;
      }
      inodes.insert(std::string(fields[9]));
    }
  }
  return inodes;
}

std::string ProcessName(const std::string& pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/comm"));
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace

std::string DescribePortHolder(int port) {
  const std::set<std::string> inodes = ListeningInodes(port);
  if (inodes.empty()) return "";
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return "a process of another user";
  std::string found;
  int processes = 0;
  for (dirent* entry;
       found.empty() && processes < kMaxProcesses && (entry = readdir(proc)) != nullptr;) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    ++processes;
    const std::string fd_dir = absl::StrCat("/proc/", entry->d_name, "/fd");
    DIR* fds = opendir(fd_dir.c_str());
    if (fds == nullptr) continue;  // Another user's, or gone.
    int count = 0;
    for (dirent* fd; found.empty() && count < kMaxFdsPerProcess && (fd = readdir(fds)) != nullptr;
         ++count) {
      char target[64];
      const std::string link = absl::StrCat(fd_dir, "/", fd->d_name);
      const ssize_t length = readlink(link.c_str(), target, sizeof(target) - 1);
      if (length <= 0) continue;
      absl::string_view socket(target, static_cast<size_t>(length));
      if (!absl::ConsumePrefix(&socket, "socket:[") || !absl::ConsumeSuffix(&socket, "]")) {
        continue;
      }
      if (inodes.count(std::string(socket)) > 0) {
        found = absl::StrCat("pid ", pid, " (", ProcessName(entry->d_name), ")");
      }
    }
    closedir(fds);
  }
  closedir(proc);
  return found.empty() ? "a process of another user" : found;
}

std::string PortHolderSuffix(int port) {
  const std::string holder = DescribePortHolder(port);
  return holder.empty() ? "" : absl::StrCat(" (held by ", holder, ")");
}

}  // namespace breaker
