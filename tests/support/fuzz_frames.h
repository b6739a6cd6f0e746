#ifndef TESTS_FUZZ_FRAMES_H_
#define TESTS_FUZZ_FRAMES_H_

// Reads a fuzz input as frames: single bytes (an operation's choice) and length-prefixed
// messages (two bytes of length, big-endian, then that many bytes). Past the input's end every
// byte reads as 0 and every message is cut short, so any input is a valid sequence of frames.
// Shared by the fuzz targets that take frames (service/fleet_fuzzer.cc, service/rpc/rpc_fuzzer.cc).

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace breaker::testing {

class FrameReader {
 public:
  FrameReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool done() const { return position_ >= size_; }
  uint8_t Byte() { return position_ < size_ ? data_[position_++] : 0; }
  // LEN_HI LEN_LO, then that many bytes (fewer at the end of the input).
  absl::string_view Message() {
    const size_t length = size_t{Byte()} << 8 | Byte();
    const size_t take = std::min(length, size_ - std::min(position_, size_));
    absl::string_view bytes(reinterpret_cast<const char*>(data_ + position_), take);
    position_ += take;
    return bytes;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t position_ = 0;
};

}  // namespace breaker::testing

#endif  // TESTS_FUZZ_FRAMES_H_
