#ifndef TESTS_SUPPORT_FAKE_BLOCK_PRODUCTION_H_
#define TESTS_SUPPORT_FAKE_BLOCK_PRODUCTION_H_

// Block production of a fake beacon node (FakeBeaconNode serves it): produceBlockV3 and
// produceBlockV4 as ethereum/beacon-APIs specifies them, recording what each request asked for.
//
//   - produceBlockV4 (POST /eth/v4/validator/blocks/{slot}?include_payload=...): the body is a
//     BuilderConfig in JSON, or in SSZ for Content-Type application/octet-stream, read as the spec
//     tells beacon nodes: a malformed entry is ignored; a body whose top level cannot be read, or
//     a missing include_payload, is answered 400. The block's payload comes from the scripted
//     builder-API bid when an entry names its url, else from the scripted P2P bid unless the
//     top-level builder_boost_factor is 0, else from the node itself. The answer carries
//     Eth-Consensus-Version, Eth-Execution-Payload-Included, Eth-Execution-Payload-Value,
//     Eth-Consensus-Block-Value and, for a builder-API win, Eth-Builder-Url; its body is JSON, or
//     SSZ-like bytes when the request's Accept names application/octet-stream.
//   - produceBlockV3 (GET /eth/v3/validator/blocks/{slot}): a builder's block
//     (Eth-Execution-Payload-Blinded: true) when a builder bid is scripted and the
//     builder_boost_factor query is not 0, else the node's own.
//
// This class is thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/mutex.h"
#include "core/types.h"
#include "httplib.h"
#include "sidecar/ssz/builder_config.h"

namespace breaker::testing {

struct ProductionScript {
  // The url of the builder-API bid on offer (V4: won when an entry names it); empty: none. For
  // V3, any non-empty url means a builder bid is on offer.
  std::string builder_url;
  // A P2P bid is on offer (V4).
  bool p2p_bid = false;
  // The builder index the winning bid names.
  core::BuilderIndex builder = 7;
  // How long the node takes to answer.
  absl::Duration delay = absl::ZeroDuration();
  // The SSZ answer (V4 asked with Accept: application/octet-stream): `ssz_answer` when set (e.g.
  // a Gloas block, sidecar/ssz/test_blocks.h), else SSZ-like bytes of `ssz_answer_bytes`.
  std::string ssz_answer;
  size_t ssz_answer_bytes = 1024;
};

// One block production request, as the node read it.
struct ProductionRequest {
  int version = 0;  // 3 or 4
  std::string method;
  std::string target;
  std::string content_type;
  std::string consensus_version;  // the Eth-Consensus-Version header; empty when absent
  std::string body;
  // V4: the BuilderConfig read, malformed entries left out; nullopt when the top level could not
  // be read.
  std::optional<sidecar::ssz::BuilderConfig> config;
  // V3: the builder_boost_factor query parameter; nullopt when absent.
  std::optional<std::string> builder_boost_factor;
  int status = 0;
};

class FakeBlockProduction {
 public:
  void Script(ProductionScript script);
  // Whether `path` is produceBlockV3's or produceBlockV4's.
  static bool Serves(const std::string& path);
  // Answers a block production request. Sleeps the scripted delay first.
  void Serve(const httplib::Request& request, httplib::Response& response);
  std::vector<ProductionRequest> requests() const;

 private:
  void ServeV3(const httplib::Request& request, const ProductionScript& script,
               ProductionRequest& record, httplib::Response& response);
  void ServeV4(const httplib::Request& request, const ProductionScript& script,
               ProductionRequest& record, httplib::Response& response);

  mutable Mutex mu_;
  ProductionScript script_ ABSL_GUARDED_BY(mu_);
  std::vector<ProductionRequest> requests_ ABSL_GUARDED_BY(mu_);
};

}  // namespace breaker::testing

#endif  // TESTS_SUPPORT_FAKE_BLOCK_PRODUCTION_H_
