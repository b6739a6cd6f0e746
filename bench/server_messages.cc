#include "bench/server_messages.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "breaker/v1/breaker.pb.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/util/delimited_message_util.h"

namespace breaker::bench {

absl::Status WriteServerMessages(const ServerMessages& messages, const std::string& path) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  auto write = [&file](const std::string& bytes) {
    breaker::v1::ServerMessage message;
    return message.ParseFromString(bytes) &&
           google::protobuf::util::SerializeDelimitedToOstream(message, &file);
  };
  if (!file || !write(messages.config)) {
    return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  for (const std::string& policy : messages.policies) {
    if (!write(policy)) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  file.close();
  if (!file) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<ServerMessages> ReadServerMessages(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  google::protobuf::io::FileInputStream input(fd);
  input.SetCloseOnDelete(true);
  ServerMessages messages;
  breaker::v1::ServerMessage message;
  bool clean_eof = false;
  while (google::protobuf::util::ParseDelimitedFromZeroCopyStream(&message, &input, &clean_eof)) {
    if (message.has_config()) {
      messages.config = message.SerializeAsString();
    } else if (message.has_policy()) {
      messages.policies.push_back(message.SerializeAsString());
    }
  }
  if (!clean_eof || messages.config.empty() || messages.policies.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " does not hold a configuration and at least one policy"));
  }
  return messages;
}

}  // namespace breaker::bench
