// block_root: the block root (hash_tree_root of the BeaconBlock) of a signed beacon block read
// from stdin, printed as 0x-hex on stdout. For checking the sidecar's roots against a beacon
// node's (tests/lodestar) and by hand.

#include <iostream>
#include <iterator>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "nlohmann/json.hpp"
#include "sidecar/ssz/beacon_block.h"

ABSL_FLAG(std::string, kind, "blinded",
          "blinded (a SignedBlindedBeaconBlock, as submitBlindedBlock carries) or full (a "
          "SignedBeaconBlock, as GET /eth/v2/beacon/blocks/{id} answers)");
ABSL_FLAG(std::string, fork, "",
          "bellatrix, capella, deneb, electra or fulu; empty: the JSON wrapping's version, "
          "else the fork whose block body has the body's fields");
ABSL_FLAG(std::string, preset, "mainnet",
          "mainnet (every public network) or minimal (test chains; up to Capella)");
ABSL_FLAG(bool, ssz, false, "stdin is the block's SSZ encoding, not JSON");

namespace {

// Far above any block the builder API carries.
constexpr size_t kMaxInputBytes = 64 << 20;

int Fail(const std::string& message) {
  std::cerr << "block_root: " << message << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  namespace ssz = breaker::sidecar::ssz;
  absl::SetProgramUsageMessage(
      "block_root [--kind=blinded|full] [--fork=NAME] [--preset=mainnet|minimal] [--ssz] "
      "<block\n\n"
      "Prints the block root (hash_tree_root of the block's message) of the signed beacon block\n"
      "on stdin: JSON, {\"message\", \"signature\"} or inside {\"version\", \"data\"}, or SSZ.");
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "block_root_main.cc");
  };
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);

  const std::string kind_name = absl::GetFlag(FLAGS_kind);
  if (kind_name != "blinded" && kind_name != "full") {
    return Fail("--kind is blinded or full, not \"" + kind_name + "\"");
  }
  const ssz::BlockKind kind =
      kind_name == "full" ? ssz::BlockKind::kFull : ssz::BlockKind::kBlinded;
  std::optional<ssz::Fork> fork;
  if (const std::string name = absl::GetFlag(FLAGS_fork); !name.empty()) {
    fork = ssz::ForkFromName(name);
    if (!fork)
      return Fail("--fork is bellatrix, capella, deneb, electra or fulu, not \"" + name + "\"");
  }
  const std::string preset_name = absl::GetFlag(FLAGS_preset);
  if (preset_name != "mainnet" && preset_name != "minimal") {
    return Fail("--preset is mainnet or minimal, not \"" + preset_name + "\"");
  }
  const ssz::Preset preset =
      preset_name == "minimal" ? ssz::Preset::kMinimal : ssz::Preset::kMainnet;

  std::string input;
  char buffer[1 << 16];
  while (std::cin.read(buffer, sizeof buffer) || std::cin.gcount() > 0) {
    input.append(buffer, std::cin.gcount());
    if (input.size() > kMaxInputBytes) {
      return Fail("stdin holds more than " + std::to_string(kMaxInputBytes) + " bytes");
    }
  }

  absl::StatusOr<ssz::BlockRoot> root;
  if (absl::GetFlag(FLAGS_ssz)) {
    root = ssz::SignedBlockRootFromSsz(input, kind, fork, preset);
  } else {
    const nlohmann::json json = nlohmann::json::parse(input, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return Fail("stdin is not JSON (or pass --ssz)");
    root = ssz::SignedBlockRootFromJson(json, kind, fork, preset);
  }
  if (!root.ok()) return Fail(std::string(root.status().message()));
  const auto& bytes = root->root;
  std::cout << ssz::Hex(
                   absl::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()))
            << "\n";
  return 0;
}
