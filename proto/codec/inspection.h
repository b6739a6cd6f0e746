#ifndef PROTO_CODEC_INSPECTION_H_
#define PROTO_CODEC_INSPECTION_H_

// The Admin API's answers about the engine's state (ListBuilders, GetBuilder, ListRelays) and
// the paging that ListBuilders and ListNodes share. Pure functions of the state they are given:
// the caller holds whatever lock makes it one consistent snapshot.
//
// A page holds at most the request's page_size entries, kMaxPageEntries, and
// core::bounds::kMaxPageBytes of them (one entry at least, so that every page moves on). Its
// next_page_token names the last entry listed; empty after the last page.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "breaker/v1/breaker.pb.h"
#include "core/engine.h"
#include "core/types.h"

namespace breaker::codec {

// Entries of a page when the request asks for none, or for more.
inline constexpr uint32_t kMaxPageEntries = 1000;

// GetBuilder's answer. REQUIRES: not the self-build index.
breaker::v1::Builder DescribeBuilder(const core::Engine& engine, core::BuilderIndex builder);

// A page of ListBuilders: banned builders first, then by index. INVALID_ARGUMENT for a page
// token not given out by breakerd.
absl::StatusOr<breaker::v1::ListBuildersResponse> ListBuilders(
    const core::Engine& engine, const breaker::v1::ListBuildersRequest& request);

// Every relay the engine knows or the operator banned, by identifier.
breaker::v1::ListRelaysResponse ListRelays(const core::Engine& engine);

// A page of ListNodes over `sorted_ids` (sorted, without repeats): `describe` fills in each
// listed node's entry, whose node_id is set. INVALID_ARGUMENT for a page token not given out by
// breakerd.
absl::StatusOr<breaker::v1::ListNodesResponse> ListNodes(
    const std::vector<std::string>& sorted_ids, const breaker::v1::ListNodesRequest& request,
    const std::function<void(breaker::v1::Node&)>& describe);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_INSPECTION_H_
