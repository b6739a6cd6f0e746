#include "proto/codec/text_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace breaker::codec {
namespace {

// Keeps the first error only: later ones are usually the parser losing its footing after it.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit FirstErrorCollector(absl::string_view source_name) : source_name_(source_name) {}

  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!error_.empty()) return;
    // The parser counts from 0; editors count from 1. Errors about the whole message (none in
    // proto3, but the parser may report them) carry no position.
    error_ = line < 0 ? absl::StrCat(source_name_, ": ", message)
                      : absl::StrCat(source_name_, ":", line + 1, ":", column + 1, ": ", message);
  }

  const std::string& error() const { return error_; }

 private:
  absl::string_view source_name_;
  std::string error_;
};

}  // namespace

absl::StatusOr<std::string> ReadTextFile(const std::string& path, absl::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(absl::StrCat(what, " '", path, "' does not exist"));
    }
    // std::generic_category() gives strerror's text without strerror's shared buffer.
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot open ", what, " '", path, "': ", std::generic_category().message(error)));
  }

  std::string contents;
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      contents.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      const int error = errno;
      ::close(fd);
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot read ", what, " '", path, "': ", std::generic_category().message(error)));
    }
  }
  ::close(fd);
  return contents;
}

absl::Status ParseTextFormat(absl::string_view text, absl::string_view source_name,
                             google::protobuf::Message& message) {
  FirstErrorCollector errors(source_name);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  // The parser's defaults already refuse unknown fields and a singular field given twice: a
  // misspelled option silently taking its default is the mistake a hand-written file must not
  // allow.
  const std::string input(text);
  if (!parser.ParseFromString(input, &message)) {
    return absl::InvalidArgumentError(errors.error().empty()
                                          ? absl::StrCat(source_name, ": not a text-format ",
                                                         message.GetDescriptor()->full_name())
                                          : errors.error());
  }
  return absl::OkStatus();
}

}  // namespace breaker::codec
