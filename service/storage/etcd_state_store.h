#ifndef SERVICE_STORAGE_ETCD_STATE_STORE_H_
#define SERVICE_STORAGE_ETCD_STATE_STORE_H_

// A StateStore in etcd (3.4, its v3 gRPC API), for a breakerd whose state must outlive its
// machine: what it stores is committed by a quorum of etcd members before a call returns.
//
// Keys, under the prefix (e.g. /breaker/<pool>):
//   <prefix>/leader                    who writes: the leader's name, bound to its lease
//   <prefix>/replicas/<name>           every store campaigning or leading, bound to its lease
//   <prefix>/journal/<sequence>        one journal entry (20 decimal digits, so keys sort)
//   <prefix>/snapshot                  "generation sequence chunks bytes" of the snapshot
//   <prefix>/snapshot/<gen>/<chunk>    the snapshot's bytes, in chunks of one request each
//
// Fencing. Opening the store campaigns for leadership: it takes a lease and creates the leader
// key bound to it in a transaction that succeeds only when the key is absent. Every write is a
// transaction conditioned on the leader key's create revision being the one this store
// created, so a store whose lease expired or was revoked (a paused or cut-off process) cannot
// write, even before it knows: etcd refuses the transaction.
//
// Stepping down. etcd does not expire leases while it has no quorum, and a leader cut off from
// etcd cannot hear that another took over. So the store counts its lease's TTL on its own
// clock (Options::clock, monotonic) from the moment it sent the last keepalive that etcd
// answered: once TTL minus Options::lease_margin has passed without one, it is deposed, at that
// moment (the keepalive thread wakes for it; a keepalive never waits past it). It also is the
// moment etcd answers that the lease is gone, or that another store holds the leader key.
// Once deposed, it stays so: every later Append and WriteSnapshot fails at once with
// UNAVAILABLE naming the lost lease, so does every write and keepalive still waiting on etcd
// (their calls are cancelled), leadership() returns that status, and Options::on_deposed is
// called once. A deposed store does not revoke its lease when destroyed. Leading again takes a new
// store (breakerd steps down and opens one, campaigning again), which Loads what the new leader
// wrote.
//
// Sizes. etcd refuses a request larger than its --max-request-bytes (1.5 MiB by default;
// Options::max_request_bytes must not exceed it): an Append whose entries do not fit one
// request is INVALID_ARGUMENT, as the contract allows. A snapshot of any size is stored
// atomically: its chunks go under a new generation first, then one transaction points
// <prefix>/snapshot at them and deletes the folded journal entries and the older chunks. After
// each snapshot the store compacts etcd's revision history up to that transaction (for the
// whole etcd keyspace), so that etcd's database stays bounded.
//
// Errors, beyond the contract's: every call to etcd has a deadline (Options::call_timeout). A
// member that does not answer in time (down, or without a leader during an election) is left
// for the next endpoint, up to one try per endpoint (at least two): the writes are made safe to
// run twice, so a retried Append that finds its own entries already committed returns OK.
// When no try succeeds, the result is UNAVAILABLE naming the endpoint and what to check.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/status.h"
#include "service/storage/state_store.h"

namespace etcdserverpb {
class TxnRequest;
class TxnResponse;
}  // namespace etcdserverpb

namespace breaker::service {

// The PEM files of TLS to etcd's client port; all empty: plaintext.
struct EtcdTlsFiles {
  std::string ca_file;    // --etcd_ca: the CA that etcd's server certificate chains to
  std::string cert_file;  // --etcd_cert: this client's certificate (etcd's --client-cert-auth)
  std::string key_file;   // --etcd_key: its private key
};

// Channel credentials from `files`. INVALID_ARGUMENT naming the flag (--etcd_ca, --etcd_cert,
// --etcd_key) when a file cannot be read, or only one of cert and key is given.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeEtcdCredentials(
    const EtcdTlsFiles& files);

// This class is thread-safe: Load, Append and WriteSnapshot are serialized by one mutex; the
// lease is kept alive by a thread of its own.
class EtcdStateStore : public StateStore {
 public:
  static constexpr int64_t kDefaultMaxRequestBytes = 1572864;  // etcd's default, 1.5 MiB

  struct Options {
    // Client addresses of etcd members, "host:port". Calls go to one at a time, and move to
    // the next when one does not answer.
    std::vector<std::string> endpoints;
    // Where the keys go: "/" and then at least one character, no trailing "/".
    std::string prefix;
    // null: plaintext.
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    // The leader key's value, so that operators and other replicas see who leads.
    std::string name;
    // The lease's TTL (whole seconds, at least 2: etcd's minimum is about 1.5 s), and how long
    // before the TTL ends, on this store's clock, it considers itself deposed: what the clocks
    // of this machine and etcd's may drift apart in one TTL, plus a keepalive's travel.
    // REQUIRES: 0 < lease_margin < lease_ttl.
    absl::Duration lease_ttl = absl::Seconds(5);
    absl::Duration lease_margin = absl::Seconds(1);
    // How often the lease is renewed; zero: a third of the TTL. Tests that count the TTL on a
    // fake clock make it long, so that the clock alone decides.
    absl::Duration keepalive_interval = absl::ZeroDuration();
    // The deadline of each call to etcd.
    absl::Duration call_timeout = absl::Seconds(5);
    // How long Open waits for the leader key to become free (another store's lease to end);
    // infinite for a standby, which campaigns until it leads.
    absl::Duration campaign_timeout = absl::ZeroDuration();
    // While Open campaigns and another store holds the leader key: called with that key's
    // value (the leader's name) whenever it differs from the one seen before. From the thread
    // in Open; must not block for long.
    std::function<void(absl::string_view leader)> on_follow;
    // Open gives up with CANCELLED once this returns true (asked between tries, at least every
    // tenth of a second). Null: never.
    std::function<bool()> cancelled;
    // The largest request etcd accepts (its --max-request-bytes), and the size of a snapshot's
    // chunks, which must fit one request.
    int64_t max_request_bytes = kDefaultMaxRequestBytes;
    int64_t snapshot_chunk_bytes = 1 << 20;
    // Counts the lease's TTL (Monotonic()). REQUIRES: outlives the store.
    const Clock* clock = &SystemClock();
    // Called once when the store finds itself deposed, with the status its writes return from
    // then on, before any of them (and leadership()) returns it: an owner that turns its
    // health off here does so before a write is refused for it. From the keepalive thread, or
    // from a thread in Append or WriteSnapshot while that call holds the store's lock. So it
    // may call leadership() (still OK then) but not Load, Append or WriteSnapshot, and must
    // not block for long: writes wait for it.
    std::function<void(const absl::Status&)> on_deposed;
    // After each call to etcd (lease grant and keepalive, registration, campaign, reads,
    // writes, compaction): true when a member answered it, even with a refusal; false when
    // none did in time (UNAVAILABLE, DEADLINE_EXCEEDED), after trying the next endpoints where
    // the call does. Not called for a call this store cancelled (deposed or stopping): that
    // says nothing of etcd. From the thread that made the call, possibly holding the store's
    // locks: must not block nor call the store.
    std::function<void(bool answered)> on_answered;
  };

  // INVALID_ARGUMENT, naming the flag breakerd takes it from, for a bad option.
  static absl::Status CheckOptions(const Options& options);

  // Checks the options, takes a lease and campaigns for the leader key until
  // campaign_timeout, then reads the sequences stored.
  // Returns INVALID_ARGUMENT for bad options (naming the flag breakerd takes them from);
  // FAILED_PRECONDITION when another store holds the leader key past campaign_timeout (the
  // message names its holder); UNAVAILABLE when etcd does not answer; DATA_LOSS when what is
  // stored under the prefix is not a state this store wrote.
  static absl::StatusOr<std::unique_ptr<EtcdStateStore>> Open(Options options);

  // Stops the keepalives and, unless deposed, revokes the lease, which frees the leader key at
  // once for a standby (best effort: otherwise it frees when the lease expires).
  ~EtcdStateStore() override;
  EtcdStateStore(const EtcdStateStore&) = delete;
  EtcdStateStore& operator=(const EtcdStateStore&) = delete;

  // StateStore; see there and above for the errors.
  absl::StatusOr<StoredState> Load() override;
  absl::StatusOr<uint64_t> Append(const std::vector<std::string>& entries) override;
  // Within one etcd request (Options::max_request_bytes), keys and framing counted.
  bool FitsOneAppend(size_t entries, uint64_t bytes) const override;
  absl::Status WriteSnapshot(absl::string_view snapshot, uint64_t through_sequence) override;

  // Hands the lead over: revokes the lease now, which frees the leader key at once for a
  // standby, and from then on refuses every write as a deposed store does (UNAVAILABLE, saying
  // it resigned). For a planned stop, once the owner has stopped taking writes and the journal
  // holds what it acknowledged. Options::on_deposed is not called: the owner asked for it.
  // Does nothing to a deposed store.
  void Resign();

  // OK while this store leads; once deposed, the UNAVAILABLE status its writes return.
  absl::Status leadership() const;
  // When the last keepalive that etcd answered was sent (or the lease was asked for), on
  // Options::clock's Monotonic(): the TTL counts from there.
  absl::Duration last_keepalive() const;
  // Who leads the prefix (the leader key's value; empty when no one does) and the names of
  // the stores campaigning or leading on it, sorted (the first 64), as etcd holds them now
  // (one read).
  // UNAVAILABLE when etcd does not answer.
  struct Replicas {
    std::string leader;
    std::vector<std::string> names;
  };
  absl::StatusOr<Replicas> ReadReplicas() const;
  // When this store took the leader key, by the system's wall clock.
  absl::Time leading_since() const { return leading_since_; }
  // The lease this store holds (etcd's id), and the revision that created its leader key.
  int64_t lease_id() const { return lease_id_; }
  int64_t leader_revision() const { return leader_revision_; }

 private:
  struct Endpoint;
  class Cancellable;
  struct Sequences {
    uint64_t snapshot_sequence = 0;
    uint64_t last_sequence = 0;
    uint64_t generation = 0;
  };

  explicit EtcdStateStore(Options options);

  // Grants the lease, registers the store under <prefix>/replicas/ and takes the leader key.
  absl::Status Campaign();
  // Waits for the leader key to be free and takes it.
  absl::Status TakeLeaderKey();
  // Revokes `lease`, the lease of a deposed store of this process, which holds the leader key.
  // Returns whether etcd revoked it (or it had expired).
  bool RevokeStaleLease(int64_t lease);
  // Reads <prefix>/snapshot and the last journal key into sequences_.
  absl::Status ReadSequences() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReadSequencesOnce() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<StoredState> LoadOnce() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `request` (a transaction whose first comparison is the leader key's), for `what` (in
  // messages: "appending entries 5..7"). When it fails on that comparison, the store is
  // deposed and the result is its UNAVAILABLE status. An endpoint that does not answer (a
  // member down, an election under way) is left for the next, up to Attempts() tries: so
  // `request` must be safe to run twice, a second run finding what the first did.
  // The leader key's range is added as the last of the failure branch's operations.
  absl::StatusOr<etcdserverpb::TxnResponse> LeaderTxn(etcdserverpb::TxnRequest& request,
                                                      absl::string_view what);
  // OK while leading by this store's own clock; otherwise deposes it.
  absl::Status CheckLeading();
  // Deposes the store with `status` (once): calls on_deposed, then makes leadership() return
  // it and cancels every call to etcd under way. A second thread deposing it meanwhile waits
  // for the first.
  void Depose(absl::Status status);
  // How long the lease lasts yet by this store's clock, less the margin; deposed at zero.
  absl::Duration LeaseLeftLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(lease_mu_);
  absl::Duration KeepAliveInterval() const {
    return options_.keepalive_interval > absl::ZeroDuration() ? options_.keepalive_interval
                                                              : granted_ttl_ / 3;
  }
  // Renews the lease every KeepAliveInterval(), and deposes the store as soon as its lease
  // ran out by its clock, whether or not a keepalive is under way.
  void KeepAliveLoop();
  // One keepalive, bounded by the lease left; OK when etcd renewed the lease, CANCELLED when
  // the store was deposed or is stopping meanwhile.
  absl::Status KeepAliveOnce();

  // Tells Options::on_answered whether etcd answered a call that ended with `status`.
  void ReportAnswered(const grpc::Status& status) const;

  // How often a call is tried, on one endpoint after another, when one does not answer.
  size_t Attempts() const { return std::max<size_t>(2, endpoints_.size()); }
  // What the last try of TryEndpoints got, and the endpoint it asked.
  struct Tried {
    grpc::Status status;
    std::string address;
  };
  // Runs `call` (grpc::Status(Endpoint&, grpc::ClientContext&)) with a fresh context whose
  // deadline is the call timeout: on the current endpoint, and after a transport failure
  // (UNAVAILABLE, DEADLINE_EXCEEDED) on the next, until a try ends otherwise or Attempts()
  // tries are spent. So `call` must be safe to run twice, a second run finding what the first
  // did.
  template <typename Call>
  Tried TryEndpoints(Call call) const;
  // The endpoint calls go to now, and moving on from it after it failed.
  Endpoint& Current() const;
  void MoveOn(const Endpoint& failed) const;

  std::string Key(absl::string_view suffix) const;
  std::string JournalKey(uint64_t sequence) const;
  std::string ChunkKey(uint64_t generation, uint64_t chunk) const;

  const Options options_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  mutable std::atomic<size_t> current_{0};
  int64_t lease_id_ = 0;
  int64_t leader_revision_ = 0;
  absl::Time leading_since_;
  absl::Duration granted_ttl_;

  // Lock order: mu_ (a write, a load), then lease_mu_ (the lease checked or a call registered
  // as Cancellable during it); never mu_ while holding lease_mu_.
  Mutex mu_;
  // What the store holds, as far as this store knows; nullopt after a write whose outcome is
  // unknown, until read again.
  std::optional<Sequences> sequences_ ABSL_GUARDED_BY(mu_);

  mutable Mutex lease_mu_;
  CondVar lease_changed_;
  // When the last keepalive that etcd answered was sent (options_.clock->Monotonic()).
  absl::Duration renewed_at_ ABSL_GUARDED_BY(lease_mu_);
  absl::Status deposed_ ABSL_GUARDED_BY(lease_mu_);
  bool stopping_ ABSL_GUARDED_BY(lease_mu_) = false;
  // Set once Depose began: deposed_ follows once on_deposed returned.
  bool deposing_ ABSL_GUARDED_BY(lease_mu_) = false;
  // The calls to etcd under way that deposing the store, or destroying it, cancels.
  absl::flat_hash_set<grpc::ClientContext*> calls_ ABSL_GUARDED_BY(lease_mu_);
  std::thread keepalive_;
};

}  // namespace breaker::service

#endif  // SERVICE_STORAGE_ETCD_STATE_STORE_H_
