#ifndef CTL_FORMAT_H_
#define CTL_FORMAT_H_

// How breakerctl shows things to people: aligned tables, UTC times, and the words for the
// API's enums and bans. Machine output is the response protos as JSON (see commands.h).

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "breaker/v1/breaker.pb.h"
#include "google/protobuf/message.h"
#include "google/protobuf/repeated_field.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "google/protobuf/timestamp.pb.h"

namespace breaker::ctl {

// Rows of text in columns padded to the widest cell, two spaces apart. The last column is not
// padded, so that a long free-text column (a reason) goes last and lines have no trailing
// blanks.
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
// The items joined by ", "; "-" when there are none.
std::string JoinOrDash(const google::protobuf::RepeatedPtrField<std::string>& items);
std::string JoinOrDash(const google::protobuf::RepeatedField<uint64_t>& items);
// "1 builder", "2 builders".
std::string Count(uint64_t n, const std::string& singular, const std::string& plural);
// One line about a policy: "version 4, mode ALL_BUILDERS, 1 builder and 0 relays banned".
std::string PolicySummary(const breaker::v1::Policy& policy);
// The pre-Gloas missed-slot breaker in one line: "not active", "clear (...)" or "TRIPPED ...".
std::string MissedSlotSummary(const breaker::v1::MissedSlotState& state);

// `message` as proto JSON (field names in lowerCamelCase, as grpcurl shows them) on one line.
std::string ToJson(const google::protobuf::Message& message);

}  // namespace breaker::ctl

#endif  // CTL_FORMAT_H_
