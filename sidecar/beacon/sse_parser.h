#ifndef SIDECAR_BEACON_SSE_PARSER_H_
#define SIDECAR_BEACON_SSE_PARSER_H_

// A parser of Server-Sent Events streams (the WHATWG HTML standard, "Server-sent events",
// "Interpreting an event stream"), as the Beacon API's /eth/v1/events serves them: bytes in,
// in chunks split anywhere, whole events out.
//
// What it keeps of the standard: lines end in LF, CRLF or CR; a line starting with ':' is a
// comment; "field: value" with one optional space after the colon; `event` names the event
// (default "message"), `data` lines are joined with LF; an empty line dispatches; an event
// without data is dropped. `id` and `retry` are read and ignored (the observer backfills from
// the Beacon API instead of resuming by id). A leading byte-order mark is skipped.
//
// What it bounds: a line longer than `max_line_bytes` and an event whose data exceeds
// `max_event_bytes` are dropped whole (up to the next empty line), counted, and reported to
// the caller, so that a hostile stream costs at most those bytes of memory.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/strings/string_view.h"

namespace breaker::sidecar {

struct SseEvent {
  std::string name;
  std::string data;
};

// This class is thread-compatible.
class SseParser {
 public:
  struct Limits {
    size_t max_line_bytes = 1 << 20;
    size_t max_event_bytes = 4 << 20;
  };

  // `on_event` is called for every whole event; `on_dropped` (may be empty) with a reason for
  // every event dropped for its size.
  SseParser(Limits limits, std::function<void(SseEvent)> on_event,
            std::function<void(absl::string_view reason)> on_dropped = nullptr);

  // Feeds the next bytes of the stream; calls the callbacks for what they complete.
  void Feed(absl::string_view bytes);

  // Forgets a partial line and event: for a new connection.
  void Reset();

  uint64_t events() const { return events_; }
  uint64_t dropped() const { return dropped_; }

 private:
  void Line(absl::string_view line);
  void Dispatch();
  void Drop(absl::string_view reason);

  const Limits limits_;
  const std::function<void(SseEvent)> on_event_;
  const std::function<void(absl::string_view)> on_dropped_;

  std::string line_;
  // The last byte fed was a CR: an LF right after it ends nothing more.
  bool after_cr_ = false;
  bool at_stream_start_ = true;
  // Skipping the rest of an over-long line, or of an event dropped for its size.
  bool skipping_line_ = false;
  bool skipping_event_ = false;

  std::string name_;
  std::string data_;
  bool has_data_ = false;

  uint64_t events_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_BEACON_SSE_PARSER_H_
