#ifndef SIDECAR_SSZ_BUILDER_CONFIG_SCAN_H_
#define SIDECAR_SSZ_BUILDER_CONFIG_SCAN_H_

// A JSON BuilderConfig (builder_config.h) read in one pass without a document, for a rewriter
// that keeps most of the bytes as they came: which entries are well formed, each one's url and
// builder_pubkeys, and where each part's bytes are. It accepts exactly the JSON that
// nlohmann::json does (common/json_cursor.h), and judges the top level and each entry as
// BuilderConfigFromJson and BuilderEntryFromJson do, a duplicated member name counting by its
// last value as there, with one rule more: an entry that names its url or builder_pubkeys twice
// is malformed, since a copy of its bytes could be read by another reader with the other value.
//
// Bounded: at most kMaxBuilderEntries entries of kMaxBuilderPubkeys keys are kept; memory
// otherwise grows only with the nesting, one byte per level. Pure; thread-safe.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace breaker::sidecar::ssz {

// Bytes [begin, end) of the scanned text.
struct JsonSpan {
  size_t begin = 0;
  size_t end = 0;
};

struct ScannedBuilderEntry {
  // BuilderEntryFromJson reads it, and it names url and builder_pubkeys once each. The fields
  // below are meaningful only then.
  bool well_formed = false;
  // The entry's bytes; its builder_pubkeys array's; each key's string, quotes included.
  JsonSpan bytes;
  JsonSpan keys_array;
  std::vector<JsonSpan> key_bytes;
  // Decoded: the url, and the keys (kBlsPubkeyBytes bytes each).
  std::string url;
  std::vector<std::string> builder_pubkeys;
};

struct ScannedBuilderConfig {
  // The value of every top-level member of these names, in order (a name may come more than
  // once; the last one's value is the one read).
  std::vector<JsonSpan> min_bid_values;
  std::vector<JsonSpan> builder_boost_factor_values;
  std::vector<JsonSpan> builders_values;
  // The entries of the last builders member.
  std::vector<ScannedBuilderEntry> builders;
};

// InvalidArgument, saying what is wrong, when `json` is not JSON, or its top level is not a
// BuilderConfig's: not an object, min_bid or builder_boost_factor missing or no uint64, builders
// missing, no array, or over kMaxBuilderEntries entries.
absl::StatusOr<ScannedBuilderConfig> ScanBuilderConfigJson(absl::string_view json);

}  // namespace breaker::sidecar::ssz

#endif  // SIDECAR_SSZ_BUILDER_CONFIG_SCAN_H_
