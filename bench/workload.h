#ifndef BENCH_WORKLOAD_H_
#define BENCH_WORKLOAD_H_

// What the harness sends: the configuration breakerd runs with, the observation batches of the
// ingestion test and the decisive failure of the fan-out test.

#include <cstdint>
#include <string>

#include "breaker/v1/breaker.pb.h"

namespace breaker::bench {

// The chain's current slot by the wall clock (mainnet: genesis 1606824023, 12 s slots), as
// breakerd computes it: observations must fall inside its window around that slot.
uint64_t CurrentMainnetSlot();

// breakerd's configuration for the run, text format. Mainnet with Gloas from genesis, so that
// one failure bans its builder; fan-out bans that outlast the run and fallback thresholds out of
// reach, so that a new policy version appears only when the harness causes one; the relays the
// ingestion bids come through; and no service limit in the way.
std::string ServiceConfigText();

// Builder indices of the decisive failures: far from those of the ingestion bids, so that no
// relay serves them and a ban changes nothing but the banned list.
constexpr uint64_t kFirstFanOutBuilder = 1'000'000;

// `count` bids in one message, numbered from `first_sequence`, at `slot`. Every other bid comes
// through one of four configured relays from one of the 64 builders they serve, the rest
// peer-to-peer from one of 960 others; each carries its builder's 48-byte key. Bids are the
// bulk of what nodes report: every node sees every bid of every slot.
breaker::v1::NodeMessage BidBatch(int node, uint64_t first_sequence, int count, uint64_t slot);

// A payload failure that bans `builder` at once: attested by 90% of the committee, for a block
// root never seen before.
breaker::v1::NodeMessage DecisiveFailure(uint64_t builder, uint64_t sequence, uint64_t slot);

// Whether a batch holds a decisive failure (the baseline server fans out on it).
bool HoldsDecisiveFailure(const breaker::v1::ObservationBatch& batch);

}  // namespace breaker::bench

#endif  // BENCH_WORKLOAD_H_
