#ifndef COMMON_JSON_CURSOR_H_
#define COMMON_JSON_CURSOR_H_

// JSON from outside, read in one pass without building a document: a cursor that the reader
// moves value by value, reading the few values it needs and skipping the rest. A reader that
// wants three fields of a large body, and the byte spans of its parts to copy them as they came,
// pays neither nlohmann::json's document nor its printing.
//
// The cursor accepts exactly what nlohmann::json::parse accepts (RFC 8259; strings' UTF-8 and
// escapes checked, a leading UTF-8 byte order mark skipped, a number out of a double's range
// refused), provided the reader consumes the whole text: every value read or skipped, then
// AtEnd(). One exception: nlohmann::json takes a NUL byte outside a string for the end of its
// input and ignores what follows; the cursor refuses it, as JSON holds no NUL byte. Nothing is
// recursive: the nesting is kept as one byte per open container, so a text's memory is bounded by
// its size.
//
// The first error is kept (error()); every call after it returns false. Not thread-safe.

#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace breaker {

class JsonCursor {
 public:
  enum class Kind { kObject, kArray, kString, kNumber, kLiteral };

  // REQUIRES: `text` outlives the cursor.
  explicit JsonCursor(absl::string_view text);

  bool ok() const { return error_.empty(); }
  // What was wrong, and at which byte; empty while ok().
  const std::string& error() const { return error_; }
  // The byte the cursor is at: after Peek(), where the next value begins; after reading a value,
  // just past it.
  size_t position() const { return pos_; }
  absl::string_view text() const { return text_; }

  // The kind of the next value, the cursor moved to its first byte; nullopt (an error) when no
  // value begins there.
  std::optional<Kind> Peek();

  // Enters the object or array at the cursor. REQUIRES: Peek() returned its kind.
  void EnterObject();
  void EnterArray();
  // In an entered object: true with the cursor at the next member's value (its name, decoded,
  // in `name` unless null); false at the object's end (the cursor past it) or on an error. The
  // caller reads or skips the value before asking for the next member.
  bool NextMember(std::string* name);
  // In an entered array: true with the cursor at the next element; false as above.
  bool NextElement();

  // The string at the cursor, decoded into `value` unless null. False on an error, including a
  // value that is not a string.
  bool ReadString(std::string* value);
  // The number at the cursor, its bytes as written. False on an error, as above.
  bool ReadNumber(absl::string_view* token);
  // Checks and steps over the value at the cursor, whatever it holds.
  bool SkipValue();
  // True when only whitespace is left after the top-level value.
  bool AtEnd();

 private:
  bool Fail(absl::string_view what);
  void SkipWhitespace();
  // Consumes the byte `c` or fails naming what was expected.
  bool Expect(char c, absl::string_view expected);
  // Consumes a scalar, or enters a container.
  bool StepIn();
  bool ScanString(std::string* value);
  bool ScanEscape(std::string* value);
  bool ScanUtf8();
  bool ScanNumber();
  bool ScanLiteral();
  // Ends the innermost container, whose closing byte is at the cursor.
  void Leave();

  absl::string_view text_;
  size_t pos_ = 0;
  std::string error_;
  // '{' or '[' per open container, innermost last.
  std::string open_;
  // No member or element of the innermost container has been read yet.
  bool first_ = false;
};

}  // namespace breaker

#endif  // COMMON_JSON_CURSOR_H_
