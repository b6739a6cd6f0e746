#ifndef COMMON_BOUNDED_JSON_H_
#define COMMON_BOUNDED_JSON_H_

// JSON from outside, read with a bound on its nesting: the one way the project parses JSON it
// did not write (relays' bids and headers, blocks, registrations, a beacon node's answers and
// events). nlohmann::json builds and destroys a document recursively, so a document nested a
// million deep would exhaust the stack; one nested deeper than the bound is refused whole,
// before it is parsed, by a scan that keeps only a counter.

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace breaker {

// Deeper than any message the sidecar reads (a signed block nests about ten deep).
inline constexpr int kMaxJsonDepth = 32;

// True when `json` nests arrays and objects deeper than `max_depth` (strings' brackets do not
// count).
bool JsonTooDeep(absl::string_view json, int max_depth);

// `text` parsed, or a discarded value (is_discarded()) when it is not JSON or nests deeper than
// `max_depth`. Never throws.
nlohmann::json ParseBoundedJson(absl::string_view text, int max_depth = kMaxJsonDepth);

// The member `key` of `object`; null when `object` is no object or has no such member.
const nlohmann::json* JsonMember(const nlohmann::json& object, const char* key);

}  // namespace breaker

#endif  // COMMON_BOUNDED_JSON_H_
