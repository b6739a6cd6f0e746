#include "bench/server_message_view.h"

#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/support/proto_buffer_reader.h"

namespace breaker::bench {
namespace {

using ::google::protobuf::internal::WireFormatLite;
using CodedInput = ::google::protobuf::io::CodedInputStream;

// Field numbers of proto/breaker/v1/breaker.proto.
constexpr int kServerMessagePolicy = 1;
constexpr int kServerMessageObservationAck = 2;
constexpr int kServerMessageConfig = 3;
constexpr int kPolicyVersion = 1;
constexpr int kPolicyFleetId = 12;
constexpr int kAckSequence = 1;
constexpr int kAckRefused = 2;

// Reads the length-delimited field at the stream's position as a sub-message: `field` is called
// with each field number inside it and must consume that field or return false to skip it.
template <typename FieldReader>
bool ReadSubMessage(CodedInput& input, FieldReader field) {
  uint32_t length = 0;
  if (!input.ReadVarint32(&length)) return false;
  const CodedInput::Limit limit = input.PushLimit(static_cast<int>(length));
  while (const uint32_t tag = input.ReadTag()) {
    if (field(WireFormatLite::GetTagFieldNumber(tag), tag)) continue;
    if (!WireFormatLite::SkipField(&input, tag)) return false;
  }
  const bool complete = input.ConsumedEntireMessage();
  input.PopLimit(limit);
  return complete;
}

bool ReadPolicy(CodedInput& input, ServerMessageView* view) {
  view->kind = ServerMessageView::Kind::kPolicy;
  bool ok = true;
  const bool read = ReadSubMessage(input, [&](int number, uint32_t tag) {
    if (number == kPolicyVersion &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_VARINT) {
      ok = ok && input.ReadVarint64(&view->version);
      return true;
    }
    if (number == kPolicyFleetId &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      ok = ok && WireFormatLite::ReadString(&input, &view->fleet_id);
      return true;
    }
    return false;
  });
  return read && ok;
}

bool ReadAck(CodedInput& input, ServerMessageView* view) {
  view->kind = ServerMessageView::Kind::kObservationAck;
  bool ok = true;
  const bool read = ReadSubMessage(input, [&](int number, uint32_t tag) {
    if (number == kAckSequence &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_VARINT) {
      ok = ok && input.ReadVarint64(&view->ack_sequence);
      return true;
    }
    if (number == kAckRefused) ++view->refused;  // then skipped
    return false;
  });
  return read && ok;
}

}  // namespace

bool ParseServerMessageView(grpc::ByteBuffer& buffer, ServerMessageView* view) {
  *view = ServerMessageView();
  grpc::ProtoBufferReader reader(&buffer);
  CodedInput input(&reader);
  while (const uint32_t tag = input.ReadTag()) {
    const int number = WireFormatLite::GetTagFieldNumber(tag);
    const bool delimited =
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (delimited && number == kServerMessagePolicy) {
      if (!ReadPolicy(input, view)) return false;
    } else if (delimited && number == kServerMessageObservationAck) {
      if (!ReadAck(input, view)) return false;
    } else {
      if (delimited && number == kServerMessageConfig)
        view->kind = ServerMessageView::Kind::kConfig;
      if (!WireFormatLite::SkipField(&input, tag)) return false;
    }
  }
  return input.ConsumedEntireMessage();
}

std::string BytesOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Dump(&slices).ok()) return bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

}  // namespace breaker::bench
