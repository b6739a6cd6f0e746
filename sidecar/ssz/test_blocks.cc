#include "sidecar/ssz/test_blocks.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "nlohmann/json.hpp"

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

}  // namespace breaker::sidecar::ssz
