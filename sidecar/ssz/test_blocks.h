#ifndef SIDECAR_SSZ_TEST_BLOCKS_H_
#define SIDECAR_SSZ_TEST_BLOCKS_H_

// Valid signed blinded blocks for the sidecar's tests, from testdata/ (data dependency
// //sidecar/ssz:vectors; read relative to the test's working directory, the runfiles root).

#include <cstdint>
#include <string>

namespace breaker::sidecar::ssz {

struct TestVector {
  std::string fork;
  // A SignedBeaconBlock (a full one) rather than a SignedBlindedBeaconBlock.
  bool full = false;
  // The minimal preset's block rather than mainnet's.
  bool minimal = false;
  // The signed block in JSON, and in SSZ.
  std::string json;
  std::string ssz;
  // The block root, as @chainsafe/ssz computed it: 32 bytes.
  std::string root;
  uint64_t slot = 0;
  // The payload (header)'s block hash, 0x-hex.
  std::string block_hash;
};

// testdata/<name>.json (e.g. "deneb_0"). Aborts when it cannot be read.
TestVector ReadTestVector(const std::string& name);

// A Gloas BeaconBlock in SSZ as produceBlockV4 answers it without its payload
// (testdata/gloas_block_<preset>.json), and the builder index of the bid it carries.
struct GloasTestBlock {
  std::string ssz;
  uint64_t builder_index = 0;
};
GloasTestBlock ReadGloasTestBlock(bool minimal);

// The JSON of a valid Bellatrix blinded block at `slot` whose payload header's block hash is
// `block_hash` (0x and 64 hex digits).
std::string BlindedBlockJson(uint64_t slot, const std::string& block_hash);

// A Gloas SignedExecutionPayloadBid of `builder_index` at `slot` with `commitments` blob
// commitments, in the builder API's JSON (without the {"version", "data"} envelope) and in SSZ
// (made from that JSON by EncodeJson).
std::string SignedBidJson(uint64_t builder_index, uint64_t slot, int commitments = 0);
std::string SignedBidSsz(uint64_t builder_index, uint64_t slot, int commitments = 0);

// A SignedValidatorRegistrationV1 of `pubkey` (0x and 96 hex digits) in JSON, and in SSZ.
std::string RegistrationJson(const std::string& pubkey);
std::string RegistrationSsz(const std::string& pubkey);

}  // namespace breaker::sidecar::ssz

#endif  // SIDECAR_SSZ_TEST_BLOCKS_H_
