#include "ctl/format.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"

namespace breaker::ctl {

namespace v1 = ::breaker::v1;

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {}

void Table::AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

void Table::Print(std::ostream& out) const {
  std::vector<const std::vector<std::string>*> lines;
  if (!header_.empty()) lines.push_back(&header_);
  for (const std::vector<std::string>& row : rows_) lines.push_back(&row);

  std::vector<size_t> widths;
  for (const std::vector<std::string>* line : lines) {
    if (line->size() > widths.size()) widths.resize(line->size(), 0);
    for (size_t i = 0; i < line->size(); ++i) widths[i] = std::max(widths[i], (*line)[i].size());
  }
  for (const std::vector<std::string>* line : lines) {
    std::string text;
    for (size_t i = 0; i < line->size(); ++i) {
      if (i > 0) text.append(2, ' ');
      text += (*line)[i];
      if (i + 1 < line->size()) text.append(widths[i] - (*line)[i].size(), ' ');
    }
    // A row whose last cells are empty would otherwise end in padding.
    text.erase(text.find_last_not_of(' ') + 1);
    out << text << '\n';
  }
}

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

std::string JoinOrDash(const google::protobuf::RepeatedPtrField<std::string>& items) {
  return items.empty() ? "-" : absl::StrJoin(items, ", ");
}

std::string JoinOrDash(const google::protobuf::RepeatedField<uint64_t>& items) {
  return items.empty() ? "-" : absl::StrJoin(items, ", ");
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

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  // Scripts should not have to know proto3's rule that zero values are left out.
  options.always_print_primitive_fields = true;
  std::string json;
  // Only Any fields, which the API has none of, can make the conversion fail.
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return "{}";
  return json;
}

}  // namespace breaker::ctl
