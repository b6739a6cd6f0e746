#ifndef CORE_OBSERVATION_H_
#define CORE_OBSERVATION_H_

// What a beacon node tells the breaker. Each observation names the slot it concerns, the node
// that saw it and that node's sequence number, so that the fleet's reports can be merged and
// replays dropped.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/types.h"

namespace breaker::core {

// A bid for `builder` reached the node. `relay` is the endpoint it came through, empty for a
// bid received over P2P. `pubkey` is the builder's public key when the node could look it up,
// empty otherwise.
struct BidSeen {
  BuilderIndex builder = 0;
  std::string relay;
  std::string pubkey;
};

// The block `root`, whose bid names `builder`, got no payload. `attested_fraction` is the
// fraction of the slot's committee weight that attested the block, in [0, 1].
struct PayloadMissing {
  BuilderIndex builder = 0;
  BlockRoot root;
  double attested_fraction = 0;
};

// `builder` revealed the payload of block `root`.
struct PayloadDelivered {
  BuilderIndex builder = 0;
  BlockRoot root;
};

// The blocks the node has for the observation's slot, canonical or not. Empty: the node has
// none — the slot counts as missed unless another node has one.
struct BlocksSeen {
  std::vector<BlockRoot> roots;
};

// The node's latest finalized epoch.
struct Finalized {
  Epoch epoch = 0;
};

// `builder` exited; its index may be given to a new builder later.
struct BuilderExited {
  BuilderIndex builder = 0;
};

// Pre-Gloas: `relay` signed for the header of block `root` and did not reveal the payload.
struct RelayRevealMissing {
  std::string relay;
  BlockRoot root;
};

using Event = std::variant<BidSeen, PayloadMissing, PayloadDelivered, BlocksSeen, Finalized,
                           BuilderExited, RelayRevealMissing>;

struct Observation {
  Slot slot = 0;
  // The reporting node's identifier; not empty.
  std::string node;
  // Per node, strictly increasing from 1; an observation whose sequence number is not above
  // the node's highest seen is a replay and is ignored.
  uint64_t sequence = 0;
  Event event;
};

}  // namespace breaker::core

#endif  // CORE_OBSERVATION_H_
