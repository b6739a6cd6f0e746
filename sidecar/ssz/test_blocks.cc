#include "sidecar/ssz/test_blocks.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "nlohmann/json.hpp"
#include "sidecar/ssz/builder_messages.h"
#include "sidecar/ssz/ssz.h"

namespace breaker::sidecar::ssz {
namespace {

using Json = nlohmann::json;

Json ReadJson(const std::string& name) {
  const std::string path = "sidecar/ssz/testdata/" + name + ".json";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  Json json = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    std::cerr << path << " cannot be read: add //sidecar/ssz:vectors to the test's data\n";
    std::abort();
  }
  return json;
}

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 2; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

}  // namespace

GloasTestBlock ReadGloasTestBlock(bool minimal) {
  const Json vector = ReadJson(minimal ? "gloas_block_minimal" : "gloas_block_mainnet");
  GloasTestBlock out;
  out.ssz = Unhex(vector["ssz"]);
  out.builder_index = std::stoull(vector["builder_index"].get<std::string>());
  return out;
}

TestVector ReadTestVector(const std::string& name) {
  const Json vector = ReadJson(name);
  const Json& message = vector["block"]["message"];
  TestVector out;
  out.fork = vector["fork"];
  out.full = vector["kind"] == "full";
  out.minimal = vector["preset"] == "minimal";
  out.json = vector["block"].dump();
  out.ssz = Unhex(vector["ssz"]);
  out.root = Unhex(vector["root"]);
  out.slot = std::stoull(message["slot"].get<std::string>());
  const Json& body = message["body"];
  out.block_hash = body[out.full ? "execution_payload" : "execution_payload_header"]["block_hash"];
  return out;
}

std::string BlindedBlockJson(uint64_t slot, const std::string& block_hash) {
  Json block = ReadJson("bellatrix_0")["block"];
  block["message"]["slot"] = std::to_string(slot);
  block["message"]["body"]["execution_payload_header"]["block_hash"] = block_hash;
  return block.dump();
}

namespace {

std::string HexOf(char digit, size_t bytes) { return "0x" + std::string(2 * bytes, digit); }

std::string EncodeOrAbort(const Type& type, const Json& json) {
  absl::StatusOr<std::string> ssz = EncodeJson(type, json);
  if (!ssz.ok()) {
    std::cerr << "a test message does not encode: " << ssz.status() << "\n";
    std::abort();
  }
  return *std::move(ssz);
}

Json BidJson(uint64_t builder_index, uint64_t slot, int commitments) {
  Json kzg = Json::array();
  for (int i = 0; i < commitments; ++i) kzg.push_back(HexOf('c', 48));
  return Json{{"message",
               {{"parent_block_hash", HexOf('1', 32)},
                {"parent_block_root", HexOf('2', 32)},
                {"block_hash", HexOf('3', 32)},
                {"prev_randao", HexOf('4', 32)},
                {"fee_recipient", HexOf('5', 20)},
                {"gas_limit", "30000000"},
                {"builder_index", std::to_string(builder_index)},
                {"slot", std::to_string(slot)},
                {"value", "1000"},
                {"execution_payment", "0"},
                {"blob_kzg_commitments", kzg},
                {"execution_requests_root", HexOf('6', 32)}}},
              {"signature", HexOf('9', 96)}};
}

Json RegistrationOf(const std::string& pubkey) {
  return Json{{"message",
               {{"fee_recipient", HexOf('f', 20)},
                {"gas_limit", "30000000"},
                {"timestamp", "1700000000"},
                {"pubkey", pubkey}}},
              {"signature", HexOf('9', 96)}};
}

}  // namespace

std::string SignedBidJson(uint64_t builder_index, uint64_t slot, int commitments) {
  return BidJson(builder_index, slot, commitments).dump();
}

std::string SignedBidSsz(uint64_t builder_index, uint64_t slot, int commitments) {
  return EncodeOrAbort(SignedExecutionPayloadBid(Preset::kMainnet),
                       BidJson(builder_index, slot, commitments));
}

std::string RegistrationJson(const std::string& pubkey) { return RegistrationOf(pubkey).dump(); }

std::string RegistrationSsz(const std::string& pubkey) {
  return EncodeOrAbort(SignedValidatorRegistrationV1(), RegistrationOf(pubkey));
}

}  // namespace breaker::sidecar::ssz
