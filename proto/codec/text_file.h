#ifndef PROTO_CODEC_TEXT_FILE_H_
#define PROTO_CODEC_TEXT_FILE_H_

// Hand-written files in general: reading one whole, and parsing protobuf text format with
// errors that name the file, line and column. Shared by every file breakerd, the client
// library, breakerctl and the sidecar read (configuration, access, scenarios, TLS, tokens), so
// that they all report a missing file and a syntax error alike.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace breaker::codec {

// Reads the whole file at `path`; `what` names the kind of file in errors ("config file").
// Returns NOT_FOUND "<what> '<path>' does not exist" when the file does not exist, and
// FAILED_PRECONDITION (with the system's reason) when it cannot be opened or read.
absl::StatusOr<std::string> ReadTextFile(const std::string& path, absl::string_view what);

// Parses `text` as the text format of `message`'s type into `message` (cleared first).
// Returns INVALID_ARGUMENT "<source_name>:<line>:<column>: <message>" (1-based) for a syntax
// error, an unknown field (named in the message) or a singular field given twice.
absl::Status ParseTextFormat(absl::string_view text, absl::string_view source_name,
                             google::protobuf::Message& message);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_TEXT_FILE_H_
