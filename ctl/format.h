#ifndef CTL_FORMAT_H_
#define CTL_FORMAT_H_

// How breakerctl shows things to people: aligned tables, UTC times, and the words for the
// API's enums and bans. Machine output is the response protos as JSON (see commands.h).
//
// Most strings breakerd sends were chosen by others: a node's id, client version and network,
// a relay's identifier, an operator's reason, a replica's name. None may reach a terminal as
// a control sequence (ESC clears the screen, CR and LF forge a row, a bidi override reorders
// a line), so every string shown to a person passes through ForTerminal exactly once: Table
// escapes each of its cells, and a command writes only through Output, whose Line escapes.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.pb.h"
#include "google/protobuf/message.h"
#include "google/protobuf/repeated_field.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "google/protobuf/timestamp.pb.h"

namespace breaker::ctl {

// `text` on one line, everything that would not be shown as itself escaped:
//   - printable ASCII (0x20..0x7e) as it is, but '\' as "\\", so that no escape can be
//     forged;
//   - "\n", "\r", "\t", and "\xHH" for the other control bytes (0x00..0x1f, 0x7f);
//   - the letters of the Latin, Greek and Cyrillic alphabets (valid UTF-8) as they are, so that
//     a reason such as "Überprüfung" stays readable: each is one column wide, written left to
//     right, and combines with nothing;
//   - every other character as "\uXXXX" (above U+FFFF "\UXXXXXXXX"): C1 controls, spaces
//     other than ' ', invisible and format characters (the bidi embeddings, overrides and
//     isolates U+202A..U+202E and U+2066..U+2069, the zero-width ones, U+FEFF), combining marks,
//     other scripts (which may run right to left or take two columns), symbols, emoji;
//   - each byte that is not part of valid UTF-8 (a stray continuation byte, an overlong or
//     surrogate form, a truncated sequence, above U+10FFFF) as "\xHH".
// The result is as many columns wide as it has UTF-8 characters.
std::string ForTerminal(absl::string_view text);

// Rows of text in columns padded to the widest cell, two spaces apart. The last column is not
// padded, so that a long free-text column (a reason) goes last and lines have no trailing
// blanks. Every cell is escaped by ForTerminal: a row is one line, whatever its cells hold.
class Table {
 public:
  // `header` is printed first; empty for a table without one (e.g. key/value lines).
  explicit Table(std::vector<std::string> header = {});

  // A row with fewer cells than the widest row is padded with empty cells.
  void AddRow(std::vector<std::string> cells);

  bool empty() const { return rows_.empty(); }

  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Where a command writes: people's text only through Line and Print, which escape, so that a
// field cannot be written unescaped by forgetting to escape it. Not thread-safe.
class Output {
 public:
  explicit Output(std::ostream& stream) : stream_(stream) {}

  // `line` escaped by ForTerminal, then a newline.
  void Line(absl::string_view line);
  // `table`, whose cells are escaped.
  void Print(const Table& table);
  // `message` as ToJson writes it, then a newline.
  void Json(const google::protobuf::Message& message);
  // A JSON document made otherwise (of ToJson's, or by the simulator), through AsciiJson, then
  // a newline unless it ends in one.
  void JsonText(absl::string_view json);
  // Written as it is: only for protobuf's text format, which escapes the strings in it, and
  // for breakerctl's own text (help, usage).
  void Verbatim(absl::string_view text);
  // Flushes the stream (`watch` shows each version as it arrives).
  void Flush();

 private:
  std::ostream& stream_;
};

// "2026-11-30T04:29:06Z": RFC 3339, UTC, whole seconds.
std::string FormatUtc(absl::Time time);
// As FormatUtc; "-" for an absent (default) timestamp.
std::string FormatTimestamp(const google::protobuf::Timestamp& timestamp);

// "ALL_BUILDERS", "TRUSTED_ONLY", "SELF_BUILD": the enum's name without its prefix.
std::string ModeName(breaker::v1::Mode mode);
// What the mode means for block production, in a few words.
std::string ModeMeaning(breaker::v1::Mode mode);
// "failure", "operator", "collateral".
std::string BanKindName(breaker::v1::BanKind kind);
// When a ban ends: "epoch 101", or "reset" for a ban that lasts until an operator acts.
std::string BanUntil(const breaker::v1::Ban& ban);
// "0x" and the bytes in hex; "-" when empty.
std::string HexBytes(const std::string& bytes);
// `text`, or "-" when it is empty (a table's empty cell).
std::string OrDash(absl::string_view text);
// The items joined by ", "; "-" when there are none.
std::string JoinOrDash(const google::protobuf::RepeatedPtrField<std::string>& items);
std::string JoinOrDash(const google::protobuf::RepeatedField<uint64_t>& items);
// "1 builder", "2 builders".
std::string Count(uint64_t n, const std::string& singular, const std::string& plural);
// One line about a policy: "version 4, mode ALL_BUILDERS, 1 builder and 0 relays banned".
std::string PolicySummary(const breaker::v1::Policy& policy);
// The pre-Gloas missed-slot breaker in one line: "not active", "clear (...)" or "TRIPPED ...".
std::string MissedSlotSummary(const breaker::v1::MissedSlotState& state);

// `json` with every non-ASCII character and DEL written as a \u escape (a UTF-16 surrogate
// pair above U+FFFF): the same document to any JSON parser, and as inert on a terminal as
// JSON's own escapes make the control characters. REQUIRES: `json` is valid UTF-8 (each
// invalid byte becomes \ufffd).
std::string AsciiJson(absl::string_view json);

// `message` as proto JSON (field names in lowerCamelCase, as grpcurl shows them) on one line,
// through AsciiJson.
std::string ToJson(const google::protobuf::Message& message);

}  // namespace breaker::ctl

#endif  // CTL_FORMAT_H_
