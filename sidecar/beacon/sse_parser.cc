#include "sidecar/beacon/sse_parser.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace breaker::sidecar {
namespace {

constexpr absl::string_view kByteOrderMark = "\xEF\xBB\xBF";

}  // namespace

SseParser::SseParser(Limits limits, std::function<void(SseEvent)> on_event,
                     std::function<void(absl::string_view)> on_dropped)
    : limits_(limits), on_event_(std::move(on_event)), on_dropped_(std::move(on_dropped)) {}

void SseParser::Reset() {
  line_.clear();
  after_cr_ = false;
  at_stream_start_ = true;
  skipping_line_ = false;
  skipping_event_ = false;
  name_.clear();
  data_.clear();
  has_data_ = false;
}

void SseParser::Feed(absl::string_view bytes) {
  for (char c : bytes) {
    if (c == '\n' && after_cr_) {
      after_cr_ = false;
      continue;
    }
    after_cr_ = c == '\r';
    if (c == '\n' || c == '\r') {
      if (skipping_line_) {
        skipping_line_ = false;
      } else {
        Line(line_);
      }
      line_.clear();
      continue;
    }
    if (skipping_line_) continue;
    if (line_.size() >= limits_.max_line_bytes) {
      line_.clear();
      skipping_line_ = true;
      Drop(absl::StrCat("a line longer than ", limits_.max_line_bytes, " bytes"));
      continue;
    }
    line_.push_back(c);
    if (at_stream_start_ && line_.size() <= kByteOrderMark.size()) {
      if (line_ == kByteOrderMark) {
        line_.clear();
        at_stream_start_ = false;
      } else if (!absl::StartsWith(kByteOrderMark, line_)) {
        at_stream_start_ = false;
      }
    }
  }
}

void SseParser::Line(absl::string_view line) {
  at_stream_start_ = false;
  if (line.empty()) {
    if (skipping_event_) {
      skipping_event_ = false;
      name_.clear();
      data_.clear();
      has_data_ = false;
      return;
    }
    Dispatch();
    return;
  }
  if (skipping_event_ || line.front() == ':') return;
  const size_t colon = line.find(':');
  absl::string_view field = line.substr(0, colon);
  absl::string_view value;
  if (colon != absl::string_view::npos) {
    value = line.substr(colon + 1);
    if (absl::StartsWith(value, " ")) value.remove_prefix(1);
  }
  if (field == "event") {
    name_ = std::string(value);
  } else if (field == "data") {
    if (data_.size() + value.size() + 1 > limits_.max_event_bytes) {
      Drop(absl::StrCat("an event longer than ", limits_.max_event_bytes, " bytes"));
      return;
    }
    if (has_data_) data_.push_back('\n');
    data_.append(value.data(), value.size());
    has_data_ = true;
  }
  // `id`, `retry` and unknown fields are ignored, as the standard says of unknown ones.
}

void SseParser::Dispatch() {
  if (has_data_) {
    ++events_;
    SseEvent event{name_.empty() ? "message" : std::move(name_), std::move(data_)};
    name_.clear();
    data_.clear();
    has_data_ = false;
    on_event_(std::move(event));
    return;
  }
  name_.clear();
}

void SseParser::Drop(absl::string_view reason) {
  // An over-long line drops its whole event: what the line held is unknown.
  skipping_event_ = true;
  name_.clear();
  data_.clear();
  has_data_ = false;
  ++dropped_;
  if (on_dropped_) on_dropped_(reason);
}

}  // namespace breaker::sidecar
