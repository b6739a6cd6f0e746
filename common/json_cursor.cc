#include "common/json_cursor.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace breaker {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t code_point, std::string* out) {
  if (code_point < 0x80) {
    out->push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

// The bytes a string holds as they are: printable ASCII but the quote and the backslash.
constexpr std::array<bool, 256> PlainBytes() {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  return plain;
}
constexpr std::array<bool, 256> kPlain = PlainBytes();

constexpr absl::string_view kByteOrderMark = "\xEF\xBB\xBF";

}  // namespace

JsonCursor::JsonCursor(absl::string_view text) : text_(text) {
  // As nlohmann::json: a text starting with 0xEF must start with the whole mark.
  if (!text_.empty() && text_[0] == kByteOrderMark[0]) {
    if (text_.substr(0, 3) != kByteOrderMark) {
      Fail("a byte order mark must be 0xEF 0xBB 0xBF");
    } else {
      pos_ = 3;
    }
  }
}

bool JsonCursor::Fail(absl::string_view what) {
  if (error_.empty()) error_ = absl::StrCat(what, " at byte ", pos_);
  return false;
}

void JsonCursor::SkipWhitespace() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
    ++pos_;
  }
}

bool JsonCursor::Expect(char c, absl::string_view expected) {
  SkipWhitespace();
  if (pos_ >= text_.size() || text_[pos_] != c) return Fail(absl::StrCat("expected ", expected));
  ++pos_;
  return true;
}

std::optional<JsonCursor::Kind> JsonCursor::Peek() {
  if (!ok()) return std::nullopt;
  SkipWhitespace();
  if (pos_ >= text_.size()) {
    Fail("expected a value, the text ended");
    return std::nullopt;
  }
  const char c = text_[pos_];
  if (c == '{') return Kind::kObject;
  if (c == '[') return Kind::kArray;
  if (c == '"') return Kind::kString;
  if (c == '-' || IsDigit(c)) return Kind::kNumber;
  if (c == 't' || c == 'f' || c == 'n') return Kind::kLiteral;
  Fail("expected a value");
  return std::nullopt;
}

void JsonCursor::EnterObject() {
  open_.push_back('{');
  ++pos_;
  first_ = true;
}

void JsonCursor::EnterArray() {
  open_.push_back('[');
  ++pos_;
  first_ = true;
}

void JsonCursor::Leave() {
  ++pos_;
  open_.pop_back();
  first_ = false;
}

bool JsonCursor::NextMember(std::string* name) {
  if (!ok()) return false;
  SkipWhitespace();
  if (pos_ < text_.size() && text_[pos_] == '}') {
    // An empty object, or the end after a member; "{"a":1,}" fails below, at the missing name.
    Leave();
    return false;
  }
  if (!first_ && !Expect(',', "',' or '}'")) return false;
  first_ = false;
  SkipWhitespace();
  if (pos_ >= text_.size() || text_[pos_] != '"') return Fail("expected a member name");
  if (name != nullptr) name->clear();
  if (!ScanString(name)) return false;
  if (!Expect(':', "':'")) return false;
  SkipWhitespace();
  return true;
}

bool JsonCursor::NextElement() {
  if (!ok()) return false;
  SkipWhitespace();
  if (pos_ < text_.size() && text_[pos_] == ']') {
    Leave();
    return false;
  }
  if (!first_ && !Expect(',', "',' or ']'")) return false;
  first_ = false;
  SkipWhitespace();
  return true;
}

bool JsonCursor::ReadString(std::string* value) {
  const std::optional<Kind> kind = Peek();
  if (!kind.has_value()) return false;
  if (*kind != Kind::kString) return Fail("expected a string");
  if (value != nullptr) value->clear();
  return ScanString(value);
}

bool JsonCursor::ReadNumber(absl::string_view* token) {
  const std::optional<Kind> kind = Peek();
  if (!kind.has_value()) return false;
  if (*kind != Kind::kNumber) return Fail("expected a number");
  const size_t begin = pos_;
  if (!ScanNumber()) return false;
  *token = text_.substr(begin, pos_ - begin);
  return true;
}

bool JsonCursor::StepIn() {
  const std::optional<Kind> kind = Peek();
  if (!kind.has_value()) return false;
  switch (*kind) {
    case Kind::kObject:
      EnterObject();
      return true;
    case Kind::kArray:
      EnterArray();
      return true;
    case Kind::kString:
      return ScanString(nullptr);
    case Kind::kNumber:
      return ScanNumber();
    case Kind::kLiteral:
      return ScanLiteral();
  }
  return false;
}

bool JsonCursor::SkipValue() {
  const size_t depth = open_.size();
  if (!StepIn()) return false;
  while (open_.size() > depth) {
    const bool more = open_.back() == '{' ? NextMember(nullptr) : NextElement();
    if (!ok()) return false;
    if (more && !StepIn()) return false;
  }
  return true;
}

bool JsonCursor::AtEnd() {
  if (!ok()) return false;
  SkipWhitespace();
  if (pos_ != text_.size()) return Fail("expected the end of the text");
  return true;
}

bool JsonCursor::ScanString(std::string* value) {
  ++pos_;             // the opening quote
  size_t run = pos_;  // the start of the bytes not yet copied to `value`
  while (true) {
    // Printable ASCII other than the quote and the backslash stands for itself: most bytes.
    while (pos_ < text_.size() && kPlain[static_cast<unsigned char>(text_[pos_])]) ++pos_;
    if (pos_ >= text_.size()) return Fail("a string does not end");
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"' || c == '\\') {
      if (value != nullptr) value->append(text_.data() + run, pos_ - run);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (!ScanEscape(value)) return false;
      run = pos_;
    } else if (c < 0x20) {
      return Fail("a control character in a string must be escaped");
    } else if (!ScanUtf8()) {
      return false;
    }
  }
}

bool JsonCursor::ScanEscape(std::string* value) {
  ++pos_;  // the backslash
  if (pos_ >= text_.size()) return Fail("a string does not end");
  const char c = text_[pos_++];
  char plain = 0;
  switch (c) {
    case '"':
    case '\\':
    case '/':
      plain = c;
      break;
    case 'b':
      plain = '\b';
      break;
    case 'f':
      plain = '\f';
      break;
    case 'n':
      plain = '\n';
      break;
    case 'r':
      plain = '\r';
      break;
    case 't':
      plain = '\t';
      break;
    case 'u':
      break;
    default:
      return Fail("an invalid escape in a string");
  }
  if (c != 'u') {
    if (value != nullptr) value->push_back(plain);
    return true;
  }
  const auto code_unit = [this]() -> int {
    if (text_.size() - pos_ < 4) return -1;
    int unit = 0;
    for (int i = 0; i < 4; ++i) {
      const int digit = HexValue(text_[pos_ + i]);
      if (digit < 0) return -1;
      unit = unit * 16 + digit;
    }
    pos_ += 4;
    return unit;
  };
  const int first = code_unit();
  if (first < 0) return Fail("\\u must be followed by four hex digits");
  uint32_t code_point = static_cast<uint32_t>(first);
  if (first >= 0xDC00 && first <= 0xDFFF) return Fail("a low surrogate without a high one");
  if (first >= 0xD800 && first <= 0xDBFF) {
    // A high surrogate must be followed by an escaped low one.
    if (text_.substr(pos_, 2) != "\\u") return Fail("a high surrogate without a low one");
    pos_ += 2;
    const int second = code_unit();
    if (second < 0xDC00 || second > 0xDFFF) return Fail("a high surrogate without a low one");
    code_point = 0x10000 + ((code_point - 0xD800) << 10) + (static_cast<uint32_t>(second) - 0xDC00);
  }
  if (value != nullptr) AppendUtf8(code_point, value);
  return true;
}

bool JsonCursor::ScanUtf8() {
  // Well-formed UTF-8 (RFC 3629): the lead byte gives the range of the first continuation byte.
  const unsigned char lead = static_cast<unsigned char>(text_[pos_]);
  int continuations = 0;
  unsigned char low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    continuations = 1;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    continuations = 2;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    continuations = 3;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return Fail("invalid UTF-8 in a string");
  }
  ++pos_;
  for (int i = 0; i < continuations; ++i) {
    if (pos_ >= text_.size()) return Fail("invalid UTF-8 in a string");
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c < low || c > high) return Fail("invalid UTF-8 in a string");
    low = 0x80;
    high = 0xBF;
    ++pos_;
  }
  return true;
}

bool JsonCursor::ScanNumber() {
  const size_t begin = pos_;
  const auto digits = [this] {
    const size_t from = pos_;
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    return pos_ - from;
  };
  if (text_[pos_] == '-') ++pos_;
  if (pos_ < text_.size() && text_[pos_] == '0') {
    ++pos_;
  } else if (digits() == 0) {
    return Fail("expected a digit");
  }
  bool integer = true;
  if (pos_ < text_.size() && text_[pos_] == '.') {
    ++pos_;
    integer = false;
    if (digits() == 0) return Fail("expected a digit after '.'");
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    integer = false;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (digits() == 0) return Fail("expected a digit in the exponent");
  }
  // nlohmann::json reads a fraction, an exponent, or an integer past 64 bits as a double, and
  // refuses one out of its range. Twenty characters hold every 64-bit integer.
  if (!integer || pos_ - begin > 20) {
    const std::string token(text_.substr(begin, pos_ - begin));
    if (!std::isfinite(std::strtod(token.c_str(), nullptr))) {
      return Fail("a number out of a double's range");
    }
  }
  return true;
}

bool JsonCursor::ScanLiteral() {
  for (absl::string_view literal : {"true", "false", "null"}) {
    if (text_.substr(pos_, literal.size()) == literal) {
      pos_ += literal.size();
      return true;
    }
  }
  return Fail("expected true, false or null");
}

}  // namespace breaker
