#include "ctl/format.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"

namespace breaker::ctl {

namespace v1 = ::breaker::v1;

namespace {

// The character that valid UTF-8 (RFC 3629) starts `text` with, and its length in bytes; a
// length of 0 when `text` does not start with one. REQUIRES: text[0] is not ASCII.
struct Utf8Character {
  uint32_t code_point = 0;
  size_t length = 0;
};

Utf8Character DecodeUtf8(absl::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  size_t length;
  uint32_t code_point;
  uint32_t smallest;  // a shorter form would do below it: overlong
  if ((byte(0) & 0xe0) == 0xc0) {
    length = 2, code_point = byte(0) & 0x1f, smallest = 0x80;
  } else if ((byte(0) & 0xf0) == 0xe0) {
    length = 3, code_point = byte(0) & 0x0f, smallest = 0x800;
  } else if ((byte(0) & 0xf8) == 0xf0) {
    length = 4, code_point = byte(0) & 0x07, smallest = 0x10000;
  } else {
    return {};
  }
  if (text.size() < length) return {};
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return {};
    code_point = code_point << 6 | (byte(i) & 0x3f);
  }
  if (code_point < smallest || code_point > 0x10ffff ||
      (code_point >= 0xd800 && code_point <= 0xdfff)) {
    return {};
  }
  return {code_point, length};
}

// The letters of the Latin, Greek and Cyrillic alphabets: one column each, left to right, no
// combining marks. Everything else is escaped (see ForTerminal).
bool IsShownLetter(uint32_t c) {
  struct Range {
    uint32_t first, last;
  };
  static constexpr Range kLetters[] = {
      {0x00c0, 0x00d6}, {0x00d8, 0x00f6}, {0x00f8, 0x024f},  // Latin-1, Extended-A and -B
      {0x0386, 0x0386}, {0x0388, 0x038a}, {0x038c, 0x038c},  // Greek
      {0x038e, 0x03a1}, {0x03a3, 0x03ce},                    //
      {0x0400, 0x0481}, {0x048a, 0x04ff},                    // Cyrillic, without its marks
      {0x1e00, 0x1eff},                                      // Latin Extended Additional
  };
  for (const Range& range : kLetters) {
    if (c >= range.first && c <= range.last) return true;
  }
  return false;
}

// Terminal columns of text that ForTerminal wrote: one per UTF-8 character.
size_t Columns(absl::string_view text) {
  return static_cast<size_t>(std::count_if(
      text.begin(), text.end(), [](char c) { return (static_cast<uint8_t>(c) & 0xc0) != 0x80; }));
}

}  // namespace

std::string ForTerminal(absl::string_view text) {
  std::string shown;
  shown.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const uint8_t byte = static_cast<uint8_t>(text[i]);
    if (byte < 0x80) {
      ++i;
      switch (byte) {
        case '\\':
          shown += "\\\\";
          continue;
        case '\n':
          shown += "\\n";
          continue;
        case '\r':
          shown += "\\r";
          continue;
        case '\t':
          shown += "\\t";
          continue;
        default:
          if (byte >= 0x20 && byte < 0x7f) {
            shown += static_cast<char>(byte);
          } else {
            absl::StrAppend(&shown, "\\x", absl::Hex(byte, absl::kZeroPad2));
          }
          continue;
      }
    }
    const Utf8Character character = DecodeUtf8(text.substr(i));
    if (character.length == 0) {
      absl::StrAppend(&shown, "\\x", absl::Hex(byte, absl::kZeroPad2));
      ++i;
    } else if (IsShownLetter(character.code_point)) {
      absl::StrAppend(&shown, text.substr(i, character.length));
      i += character.length;
    } else {
      absl::StrAppend(&shown, character.code_point > 0xffff ? "\\U" : "\\u",
                      absl::Hex(character.code_point,
                                character.code_point > 0xffff ? absl::kZeroPad8 : absl::kZeroPad4));
      i += character.length;
    }
  }
  return shown;
}

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {
  for (std::string& cell : header_) cell = ForTerminal(cell);
}

void Table::AddRow(std::vector<std::string> cells) {
  for (std::string& cell : cells) cell = ForTerminal(cell);
  rows_.push_back(std::move(cells));
}

void Table::Print(std::ostream& out) const {
  std::vector<const std::vector<std::string>*> lines;
  if (!header_.empty()) lines.push_back(&header_);
  for (const std::vector<std::string>& row : rows_) lines.push_back(&row);

  std::vector<size_t> widths;
  for (const std::vector<std::string>* line : lines) {
    if (line->size() > widths.size()) widths.resize(line->size(), 0);
    for (size_t i = 0; i < line->size(); ++i) widths[i] = std::max(widths[i], Columns((*line)[i]));
  }
  for (const std::vector<std::string>* line : lines) {
    std::string text;
    for (size_t i = 0; i < line->size(); ++i) {
      if (i > 0) text.append(2, ' ');
      text += (*line)[i];
      if (i + 1 < line->size()) text.append(widths[i] - Columns((*line)[i]), ' ');
    }
    // A row whose last cells are empty would otherwise end in padding.
    text.erase(text.find_last_not_of(' ') + 1);
    out << text << '\n';
  }
}

void Output::Line(absl::string_view line) { stream_ << ForTerminal(line) << '\n'; }

void Output::Print(const Table& table) { table.Print(stream_); }

void Output::Json(const google::protobuf::Message& message) { stream_ << ToJson(message) << '\n'; }

void Output::JsonText(absl::string_view json) {
  stream_ << AsciiJson(json);
  if (!absl::EndsWith(json, "\n")) stream_ << '\n';
}

void Output::Verbatim(absl::string_view text) { stream_ << text; }

void Output::Flush() { stream_.flush(); }

std::string FormatUtc(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", time, absl::UTCTimeZone());
}

std::string FormatTimestamp(const google::protobuf::Timestamp& timestamp) {
  if (timestamp.seconds() == 0 && timestamp.nanos() == 0) return "-";
  return FormatUtc(absl::FromUnixSeconds(timestamp.seconds()));
}

std::string ModeName(v1::Mode mode) {
  std::string name = v1::Mode_Name(mode);
  if (absl::StartsWith(name, "MODE_")) name.erase(0, 5);
  return name.empty() ? absl::StrCat("mode ", static_cast<int>(mode)) : name;
}

std::string ModeMeaning(v1::Mode mode) {
  switch (mode) {
    case v1::MODE_ALL_BUILDERS:
      return "bids from every builder that is not banned";
    case v1::MODE_TRUSTED_ONLY:
      return "only bids from trusted builders or through trusted relays";
    case v1::MODE_SELF_BUILD:
      return "no bids: every proposer builds its own payload";
    default:
      return "unknown to this breakerctl";
  }
}

std::string BanKindName(v1::BanKind kind) {
  switch (kind) {
    case v1::BAN_KIND_FAILURE:
      return "failure";
    case v1::BAN_KIND_OPERATOR:
      return "operator";
    case v1::BAN_KIND_COLLATERAL:
      return "collateral";
    default:
      return absl::StrCat("kind ", static_cast<int>(kind));
  }
}

std::string BanUntil(const v1::Ban& ban) {
  if (ban.until_reset()) return "reset";
  return absl::StrCat("epoch ", ban.until_epoch());
}

std::string HexBytes(const std::string& bytes) {
  if (bytes.empty()) return "-";
  return absl::StrCat("0x", absl::BytesToHexString(bytes));
}

std::string OrDash(absl::string_view text) { return text.empty() ? "-" : std::string(text); }

std::string JoinOrDash(const google::protobuf::RepeatedPtrField<std::string>& items) {
  return OrDash(absl::StrJoin(items, ", "));
}

std::string JoinOrDash(const google::protobuf::RepeatedField<uint64_t>& items) {
  return OrDash(absl::StrJoin(items, ", "));
}

std::string Count(uint64_t n, const std::string& singular, const std::string& plural) {
  return absl::StrCat(n, " ", n == 1 ? singular : plural);
}

std::string PolicySummary(const v1::Policy& policy) {
  return absl::StrCat("version ", policy.version(), ", mode ", ModeName(policy.mode()), ", ",
                      Count(policy.banned_builders_size(), "builder", "builders"), " and ",
                      Count(policy.banned_relays_size(), "relay", "relays"), " banned");
}

std::string MissedSlotSummary(const v1::MissedSlotState& state) {
  if (!state.active()) return "not active (no pre-Gloas rule applies)";
  const std::string counts = absl::StrCat(
      state.consecutive_missed(), " consecutive missed, ", state.missed_in_window(),
      " missed in window, ", state.epochs_since_finalization(), " epochs since finalization");
  if (!state.tripped()) return absl::StrCat("clear (", counts, ")");
  return absl::StrCat("TRIPPED: ", state.rule(),
                      state.latched() ? " (latched: only a reset clears it)" : "", " (", counts,
                      ")");
}

std::string AsciiJson(absl::string_view json) {
  std::string ascii;
  ascii.reserve(json.size());
  const auto escape = [&ascii](uint32_t unit) {
    absl::StrAppend(&ascii, "\\u", absl::Hex(unit, absl::kZeroPad4));
  };
  for (size_t i = 0; i < json.size();) {
    const uint8_t byte = static_cast<uint8_t>(json[i]);
    if (byte < 0x80) {
      if (byte == 0x7f) {
        escape(byte);
      } else {
        ascii += static_cast<char>(byte);
      }
      ++i;
      continue;
    }
    const Utf8Character character = DecodeUtf8(json.substr(i));
    if (character.length == 0) {
      escape(0xfffd);
      ++i;
      continue;
    }
    if (character.code_point > 0xffff) {
      const uint32_t above = character.code_point - 0x10000;
      escape(0xd800 + (above >> 10));
      escape(0xdc00 + (above & 0x3ff));
    } else {
      escape(character.code_point);
    }
    i += character.length;
  }
  return ascii;
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  // Scripts should not have to know proto3's rule that zero values are left out.
  options.always_print_primitive_fields = true;
  std::string json;
  // Only Any fields, which the API has none of, can make the conversion fail.
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return "{}";
  return AsciiJson(json);
}

}  // namespace breaker::ctl
