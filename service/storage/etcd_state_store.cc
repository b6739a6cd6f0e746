#include "service/storage/etcd_state_store.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/grpc_deadline.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "glog/logging.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/support/channel_arguments.h"

namespace breaker::service {

using etcdserverpb::Compare;
using etcdserverpb::RangeRequest;
using etcdserverpb::RangeResponse;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

struct EtcdStateStore::Endpoint {
  std::string address;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
};

// While it lives, deposing the store or destroying it cancels the call of `context` (at once
// when the store is deposed or stopping already), so that no thread waits on etcd for a store
// that can no longer write.
class EtcdStateStore::Cancellable {
 public:
  Cancellable(EtcdStateStore& store, grpc::ClientContext& context)
      : store_(store), context_(context) {
    MutexLock lock(&store_.lease_mu_);
    if (!store_.deposed_.ok() || store_.stopping_) context_.TryCancel();
    store_.calls_.insert(&context_);
  }
  ~Cancellable() {
    MutexLock lock(&store_.lease_mu_);
    store_.calls_.erase(&context_);
  }
  Cancellable(const Cancellable&) = delete;
  Cancellable& operator=(const Cancellable&) = delete;

 private:
  EtcdStateStore& store_;
  grpc::ClientContext& context_;
};

namespace {

// The leases of this process's stores that were deposed. etcd may still hold one, with the
// leader key bound to it (it keeps leases alive while it has no quorum, and renews them when a
// quorum is back), though nothing keeps it alive any more: a later store of this process that
// finds the leader key on one of them revokes it rather than follow itself.
Mutex abandoned_mu;
absl::flat_hash_set<int64_t>& AbandonedLeases() ABSL_EXCLUSIVE_LOCKS_REQUIRED(abandoned_mu) {
  static auto* const leases = new absl::flat_hash_set<int64_t>();
  return *leases;
}

void Abandon(int64_t lease) {
  MutexLock lock(&abandoned_mu);
  AbandonedLeases().insert(lease);
}

bool Abandoned(int64_t lease) {
  MutexLock lock(&abandoned_mu);
  return AbandonedLeases().contains(lease);
}

// What a key, a put's framing and a transaction's comparisons add to a request, at most: the
// check of an Append's size leaves this much room below etcd's limit.
constexpr int64_t kRequestOverhead = 4096;
constexpr int64_t kPerEntryOverhead = 256;
// Responses carry up to this many bytes (a Load's pages are sized to it).
constexpr int kMaxResponseBytes = 64 << 20;
// At most this many replicas are listed (a deployment runs two or three).
constexpr int64_t kMaxReplicasListed = 64;
// How often Open asks again for a leader key held by another store.
constexpr absl::Duration kCampaignPoll = absl::Milliseconds(100);

// The first key after every key that starts with `prefix`.
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) != 0xff) {
      prefix.back() = static_cast<char>(prefix.back() + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // every key
}

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(GrpcDeadlineIn(timeout));
}

// The error of a failed call to etcd at `endpoint` while `what` ("appending entries 3..4").
absl::Status EtcdError(const grpc::Status& status, absl::string_view endpoint,
                       absl::string_view what, absl::Duration timeout) {
  switch (status.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::UnavailableError(absl::StrCat(
          "etcd at ", endpoint, " did not answer within ", absl::FormatDuration(timeout), " ", what,
          "; check that a quorum of the etcd members (--etcd_endpoints) runs and reaches each "
          "other (etcdctl endpoint health)"));
    case grpc::StatusCode::INVALID_ARGUMENT:
      if (status.error_message().find("too large") != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat(
            "etcd at ", endpoint, " refused the request ", what, " as too large (",
            status.error_message(), "); raise etcd's --max-request-bytes on every member"));
      }
      break;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return absl::UnavailableError(absl::StrCat(
          "etcd at ", endpoint, " refused breakerd ", what, ": ", status.error_message(),
          "; check --etcd_cert/--etcd_key and the etcd user's role on the --etcd_prefix keys"));
    default:
      break;
  }
  return absl::UnavailableError(absl::StrCat(
      "etcd at ", endpoint, " failed ", what, ": ", status.error_message(), " (",
      static_cast<int>(status.error_code()),
      "); check that a quorum of the etcd members (--etcd_endpoints) runs: etcdctl endpoint "
      "health"));
}

bool IsTransportFailure(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

Compare* LeaderCompare(TxnRequest& request, const std::string& key, int64_t revision) {
  Compare* compare = request.add_compare();
  compare->set_key(key);
  compare->set_target(Compare::CREATE);
  compare->set_result(Compare::EQUAL);
  compare->set_create_revision(revision);
  return compare;
}

void AddPut(TxnRequest& request, std::string key, absl::string_view value) {
  etcdserverpb::PutRequest* put = request.add_success()->mutable_request_put();
  put->set_key(std::move(key));
  put->set_value(std::string(value));
}

void AddDeleteRange(TxnRequest& request, std::string key, std::string end) {
  etcdserverpb::DeleteRangeRequest* del = request.add_success()->mutable_request_delete_range();
  del->set_key(std::move(key));
  del->set_range_end(std::move(end));
}

// The value of <prefix>/snapshot: "generation sequence chunks bytes".
struct SnapshotPointer {
  uint64_t generation = 0;
  uint64_t sequence = 0;
  uint64_t chunks = 0;
  uint64_t bytes = 0;
};

std::string EncodePointer(const SnapshotPointer& pointer) {
  return absl::StrCat(pointer.generation, " ", pointer.sequence, " ", pointer.chunks, " ",
                      pointer.bytes);
}

std::optional<SnapshotPointer> DecodePointer(absl::string_view value) {
  std::vector<absl::string_view> fields = absl::StrSplit(value, ' ');
  SnapshotPointer pointer;
  if (fields.size() != 4 || !absl::SimpleAtoi(fields[0], &pointer.generation) ||
      !absl::SimpleAtoi(fields[1], &pointer.sequence) ||
      !absl::SimpleAtoi(fields[2], &pointer.chunks) ||
      !absl::SimpleAtoi(fields[3], &pointer.bytes)) {
    return std::nullopt;
  }
  return pointer;
}

absl::StatusOr<std::string> ReadPem(const std::string& path, absl::string_view flag) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream contents;
  contents << file.rdbuf();
  if (!file.good() && !file.eof()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " is '", path, "', which cannot be read; pass a readable PEM file"));
  }
  if (contents.str().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " is '", path, "', which is missing or empty; pass a PEM file"));
  }
  return contents.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeEtcdCredentials(
    const EtcdTlsFiles& files) {
  if (files.ca_file.empty() && files.cert_file.empty() && files.key_file.empty()) {
    return grpc::InsecureChannelCredentials();
  }
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--etcd_cert and --etcd_key go together: pass both (a client certificate) or neither");
  }
  grpc::SslCredentialsOptions ssl;
  if (!files.ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadPem(files.ca_file, "--etcd_ca");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (!files.cert_file.empty()) {
    absl::StatusOr<std::string> cert = ReadPem(files.cert_file, "--etcd_cert");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem(files.key_file, "--etcd_key");
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

absl::Status EtcdStateStore::CheckOptions(const Options& options) {
  if (options.endpoints.empty()) {
    return absl::InvalidArgumentError(
        "--etcd_endpoints is empty; pass the etcd members' client addresses, "
        "host:port,host:port,...");
  }
  for (const std::string& endpoint : options.endpoints) {
    if (endpoint.empty() || endpoint.find(':') == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--etcd_endpoints has '", endpoint,
                                                     "'; each is host:port, e.g. 127.0.0.1:2379"));
    }
  }
  if (options.prefix.size() < 2 || options.prefix[0] != '/' || options.prefix.back() == '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "--etcd_prefix is '", options.prefix,
        "'; pass a key prefix starting with / and not ending with one, e.g. /breaker/mypool"));
  }
  if (options.lease_ttl < absl::Seconds(2) || options.lease_ttl > absl::Hours(1) ||
      !(options.lease_margin > absl::ZeroDuration()) ||
      !(options.lease_margin < options.lease_ttl)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--etcd_lease_ttl is ", absl::FormatDuration(options.lease_ttl),
                     "; accepted: 2..3600 seconds (and more than the margin, ",
                     absl::FormatDuration(options.lease_margin), ")"));
  }
  // A response holds at least one entry of up to a request's size.
  if (options.max_request_bytes < 2 * kRequestOverhead ||
      options.max_request_bytes > kMaxResponseBytes / 2 || options.snapshot_chunk_bytes <= 0 ||
      options.snapshot_chunk_bytes > options.max_request_bytes - kRequestOverhead) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--etcd_max_request_bytes is ", options.max_request_bytes, "; with snapshot chunks of ",
        options.snapshot_chunk_bytes, " bytes it must be at least ",
        std::max(2 * kRequestOverhead, options.snapshot_chunk_bytes + kRequestOverhead),
        " and at most ", kMaxResponseBytes / 2, " (and no more than etcd's --max-request-bytes)"));
  }
  if (!(options.call_timeout > absl::ZeroDuration())) {
    return absl::InvalidArgumentError("the etcd call timeout must be positive");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<EtcdStateStore>> EtcdStateStore::Open(Options options) {
  if (absl::Status checked = CheckOptions(options); !checked.ok()) return checked;
  if (options.credentials == nullptr) options.credentials = grpc::InsecureChannelCredentials();
  if (options.name.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    options.name = absl::StrCat(host, " pid ", getpid());
  }
  std::unique_ptr<EtcdStateStore> store(new EtcdStateStore(std::move(options)));
  if (absl::Status campaign = store->Campaign(); !campaign.ok()) return campaign;
  MutexLock lock(&store->mu_);
  if (absl::Status read = store->ReadSequences(); !read.ok()) return read;
  return store;
}

EtcdStateStore::EtcdStateStore(Options options) : options_(std::move(options)) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kMaxResponseBytes);
  arguments.SetMaxSendMessageSize(static_cast<int>(options_.max_request_bytes));
  for (const std::string& address : options_.endpoints) {
    auto channel = grpc::CreateCustomChannel(address, options_.credentials, arguments);
    auto endpoint = std::make_unique<Endpoint>();
    endpoint->address = address;
    endpoint->kv = etcdserverpb::KV::NewStub(channel);
    endpoint->lease = etcdserverpb::Lease::NewStub(channel);
    endpoints_.push_back(std::move(endpoint));
  }
}

EtcdStateStore::~EtcdStateStore() {
  {
    MutexLock lock(&lease_mu_);
    stopping_ = true;
    for (grpc::ClientContext* call : calls_) call->TryCancel();  // a keepalive under way
    lease_changed_.SignalAll();
  }
  if (keepalive_.joinable()) keepalive_.join();
  // A deposed store's lease is gone or etcd is out of reach: revoking would only wait.
  if (lease_id_ == 0 || !leadership().ok()) return;
  // Freeing the leader key now spares a standby the wait for the lease to expire.
  grpc::ClientContext context;
  SetDeadline(context, std::min(options_.call_timeout, absl::Seconds(2)));
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease_id_);
  etcdserverpb::LeaseRevokeResponse response;
  const grpc::Status status = Current().lease->LeaseRevoke(&context, request, &response);
  if (!status.ok()) {
    LOG(WARNING) << "could not revoke etcd lease " << absl::StrFormat("%x", lease_id_) << " ("
                 << status.error_message() << "): the leader key under " << options_.prefix
                 << " frees when the lease expires";
  }
}

void EtcdStateStore::Resign() {
  {
    MutexLock lock(&lease_mu_);
    if (deposing_ || lease_id_ == 0) return;
    deposing_ = true;
  }
  grpc::ClientContext context;
  SetDeadline(context, std::min(options_.call_timeout, absl::Seconds(2)));
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease_id_);
  etcdserverpb::LeaseRevokeResponse response;
  const grpc::Status status = Current().lease->LeaseRevoke(&context, request, &response);
  if (status.ok()) {
    LOG(INFO) << "resigned the lead of " << options_.prefix << ": lease "
              << absl::StrFormat("%x", lease_id_) << " revoked, the leader key is free";
  } else {
    LOG(WARNING) << "could not revoke etcd lease " << absl::StrFormat("%x", lease_id_) << " ("
                 << status.error_message() << "): the leader key under " << options_.prefix
                 << " frees when the lease expires";
  }
  MutexLock lock(&lease_mu_);
  deposed_ = absl::UnavailableError(
      absl::StrCat("this breakerd resigned the lead of ", options_.prefix,
                   " to stop; nothing more is written: write to the new leader"));
  for (grpc::ClientContext* call : calls_) call->TryCancel();
  lease_changed_.SignalAll();
}

EtcdStateStore::Endpoint& EtcdStateStore::Current() const {
  return *endpoints_[current_.load() % endpoints_.size()];
}

void EtcdStateStore::MoveOn(const Endpoint& failed) const {
  size_t index = current_.load();
  if (endpoints_[index % endpoints_.size()].get() == &failed) {
    current_.compare_exchange_strong(index, index + 1);
  }
}

template <typename Call>
EtcdStateStore::Tried EtcdStateStore::TryEndpoints(Call call) const {
  Tried tried;
  for (size_t attempt = 0; attempt < Attempts(); ++attempt) {
    Endpoint& endpoint = Current();
    grpc::ClientContext context;
    SetDeadline(context, options_.call_timeout);
    tried.status = call(endpoint, context);
    tried.address = endpoint.address;
    if (!IsTransportFailure(tried.status)) break;
    MoveOn(endpoint);
  }
  ReportAnswered(tried.status);
  return tried;
}

void EtcdStateStore::ReportAnswered(const grpc::Status& status) const {
  if (!options_.on_answered || status.error_code() == grpc::StatusCode::CANCELLED) return;
  options_.on_answered(!IsTransportFailure(status));
}

std::string EtcdStateStore::Key(absl::string_view suffix) const {
  return absl::StrCat(options_.prefix, "/", suffix);
}

std::string EtcdStateStore::JournalKey(uint64_t sequence) const {
  return absl::StrFormat("%s/journal/%020u", options_.prefix, sequence);
}

std::string EtcdStateStore::ChunkKey(uint64_t generation, uint64_t chunk) const {
  return absl::StrFormat("%s/snapshot/%020u/%010u", options_.prefix, generation, chunk);
}

absl::Status EtcdStateStore::Campaign() {
  const absl::Duration ttl = absl::Ceil(options_.lease_ttl, absl::Seconds(1));
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_ttl(absl::ToInt64Seconds(ttl));
  etcdserverpb::LeaseGrantResponse granted;
  absl::Duration sent_at;
  const Tried granting = TryEndpoints([&](Endpoint& endpoint, grpc::ClientContext& context) {
    sent_at = options_.clock->Monotonic();
    granted.Clear();
    const grpc::Status status = endpoint.lease->LeaseGrant(&context, grant, &granted);
    // A member that answers with an error may be alone in it: the next is asked.
    if (status.ok() && !granted.error().empty()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("refused a lease (", granted.error(), ")"));
    }
    return status;
  });
  if (!granting.status.ok()) {
    return EtcdError(granting.status, granting.address, "granting a lease", options_.call_timeout);
  }
  lease_id_ = granted.id();
  // etcd may grant more than asked (its minimum TTL), never less; count what was asked.
  granted_ttl_ = std::min(ttl, absl::Seconds(granted.ttl()));
  {
    MutexLock lock(&lease_mu_);
    renewed_at_ = sent_at;
  }
  keepalive_ = std::thread([this] { KeepAliveLoop(); });

  // Known to operators (breakerctl status) for as long as the lease lives. Not fenced: it
  // says only that this store is there.
  etcdserverpb::PutRequest registration;
  registration.set_key(Key(absl::StrCat("replicas/", options_.name)));
  registration.set_value(options_.name);
  registration.set_lease(lease_id_);
  const Tried registering = TryEndpoints([&](Endpoint& endpoint, grpc::ClientContext& context) {
    etcdserverpb::PutResponse response;
    return endpoint.kv->Put(&context, registration, &response);
  });
  if (!registering.status.ok()) {
    return EtcdError(registering.status, registering.address, "registering this replica",
                     options_.call_timeout);
  }
  return TakeLeaderKey();
}

bool EtcdStateStore::RevokeStaleLease(int64_t lease) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease);
  const Tried revoking = TryEndpoints([&](Endpoint& endpoint, grpc::ClientContext& context) {
    etcdserverpb::LeaseRevokeResponse response;
    const grpc::Status status = endpoint.lease->LeaseRevoke(&context, request, &response);
    // Expired meanwhile: the key is free all the same.
    return status.error_code() == grpc::StatusCode::NOT_FOUND ? grpc::Status::OK : status;
  });
  if (revoking.status.ok()) {
    LOG(INFO) << "the leader key of " << options_.prefix << " was this replica's own, bound to "
              << "its earlier lease " << absl::StrFormat("%x", lease)
              << ": revoked that lease, and campaigning";
    return true;
  } else {
    LOG(WARNING) << "the leader key of " << options_.prefix << " is this replica's own, bound "
                 << "to its earlier lease " << absl::StrFormat("%x", lease)
                 << ", which could not be revoked (" << revoking.status.error_message()
                 << "); campaigning until it expires";
  }
  return false;
}

absl::Status EtcdStateStore::TakeLeaderKey() {
  const absl::Duration give_up = options_.clock->Monotonic() + options_.campaign_timeout;
  const std::string leader_key = Key("leader");
  std::string followed;
  size_t attempts = 0;
  while (true) {
    if (options_.cancelled && options_.cancelled()) {
      return absl::CancelledError(
          absl::StrCat("stopped campaigning for ", options_.prefix, " in etcd"));
    }
    if (absl::Status leading = CheckLeading(); !leading.ok()) {
      return absl::UnavailableError(absl::StrCat("lost the etcd lease while campaigning for ",
                                                 options_.prefix, ": ", leading.message()));
    }
    TxnRequest request;
    Compare* absent = request.add_compare();
    absent->set_key(leader_key);
    absent->set_target(Compare::CREATE);
    absent->set_result(Compare::EQUAL);
    absent->set_create_revision(0);
    etcdserverpb::PutRequest* put = request.add_success()->mutable_request_put();
    put->set_key(leader_key);
    put->set_value(options_.name);
    put->set_lease(lease_id_);
    request.add_failure()->mutable_request_range()->set_key(leader_key);
    Endpoint& endpoint = Current();
    grpc::ClientContext context;
    SetDeadline(context, options_.call_timeout);
    TxnResponse response;
    const grpc::Status status = endpoint.kv->Txn(&context, request, &response);
    ReportAnswered(status);
    ++attempts;
    const mvccpb::KeyValue* holder_kv =
        status.ok() && !response.succeeded() && response.responses_size() > 0 &&
                response.responses(0).response_range().kvs_size() > 0
            ? &response.responses(0).response_range().kvs(0)
            : nullptr;
    const bool out_of_time = options_.clock->Monotonic() + kCampaignPoll > give_up;
    if (status.ok() && response.succeeded()) {
      leader_revision_ = response.header().revision();
      break;
    }
    if (holder_kv != nullptr && holder_kv->lease() == lease_id_) {
      // An earlier try, whose answer was lost, took the key.
      leader_revision_ = holder_kv->create_revision();
      break;
    }
    if (holder_kv != nullptr && holder_kv->value() == options_.name &&
        Abandoned(holder_kv->lease())) {
      // This replica's own key, bound to the lease of an earlier store of this process, one
      // deposed while etcd had no quorum (etcd kept the lease, and renews it when the quorum
      // is back). Nobody leads through it: following it would name this replica as the leader
      // and wait out that lease. Revoked, then taken at once.
      if (RevokeStaleLease(holder_kv->lease())) continue;
      absl::SleepFor(kCampaignPoll);
      continue;
    }
    if (holder_kv != nullptr && holder_kv->value() != followed) {
      followed = holder_kv->value();
      if (options_.on_follow) options_.on_follow(followed);
    }
    if (!status.ok()) {
      if (IsTransportFailure(status)) MoveOn(endpoint);
      if (out_of_time && attempts >= Attempts()) {
        return EtcdError(status, endpoint.address,
                         absl::StrCat("creating the leader key ", leader_key),
                         options_.call_timeout);
      }
    } else if (out_of_time) {
      std::string holder = "another store";
      if (holder_kv != nullptr) {
        holder = absl::StrCat("'", holder_kv->value(), "' (lease ",
                              absl::StrFormat("%x", holder_kv->lease()), ")");
      }
      return absl::FailedPreconditionError(
          absl::StrCat("another breakerd leads ", options_.prefix, " in etcd: ", leader_key,
                       " is held by ", holder,
                       "; stop it, wait for its lease to expire (its TTL), or pass another "
                       "--etcd_prefix"));
    }
    // After an endpoint failed, the next at once; a key held by another, and a round in which
    // every endpoint failed (all refusing at once, say), asked again soon rather than in a spin.
    if (status.ok() || attempts % endpoints_.size() == 0) absl::SleepFor(kCampaignPoll);
  }
  leading_since_ = options_.clock->Now();
  LOG(INFO) << "leading " << options_.prefix << " in etcd as '" << options_.name << "' (lease "
            << absl::StrFormat("%x", lease_id_) << ", TTL " << absl::FormatDuration(granted_ttl_)
            << ", leader key revision " << leader_revision_ << ")";
  return absl::OkStatus();
}

absl::StatusOr<EtcdStateStore::Replicas> EtcdStateStore::ReadReplicas() const {
  // One transaction without comparisons: both ranges at one revision, keys in order.
  TxnRequest request;
  request.add_success()->mutable_request_range()->set_key(Key("leader"));
  RangeRequest* replicas = request.add_success()->mutable_request_range();
  replicas->set_key(Key("replicas/"));
  replicas->set_range_end(PrefixEnd(Key("replicas/")));
  replicas->set_limit(kMaxReplicasListed);
  TxnResponse response;
  const Tried reading = TryEndpoints([&](Endpoint& endpoint, grpc::ClientContext& context) {
    response.Clear();
    return endpoint.kv->Txn(&context, request, &response);
  });
  if (!reading.status.ok()) {
    return EtcdError(reading.status, reading.address, "reading the replicas",
                     options_.call_timeout);
  }
  if (response.responses_size() != 2) {
    return absl::UnavailableError(
        absl::StrCat("etcd at ", reading.address, " answered the read of the replicas with ",
                     response.responses_size(),
                     " results instead of 2; check that --etcd_endpoints name "
                     "etcd v3 members"));
  }
  Replicas result;
  const RangeResponse& leader = response.responses(0).response_range();
  if (leader.kvs_size() > 0) result.leader = leader.kvs(0).value();
  for (const mvccpb::KeyValue& kv : response.responses(1).response_range().kvs()) {
    result.names.push_back(kv.value());
  }
  return result;
}

absl::Duration EtcdStateStore::LeaseLeftLocked() const {
  return granted_ttl_ - options_.lease_margin - (options_.clock->Monotonic() - renewed_at_);
}

void EtcdStateStore::KeepAliveLoop() {
  const absl::Duration interval = KeepAliveInterval();
  // From when the lease was asked for, as its TTL counts: a grant answered late (etcd without a
  // quorum meanwhile) is renewed at once, not an interval after the answer, past its end.
  absl::Duration next_keepalive = last_keepalive() + interval;
  while (true) {
    {
      // Awake for the next keepalive, and when the lease runs out by this store's clock, so
      // that the store is deposed (and breakerd's health turns NOT_SERVING) on time even while
      // etcd does not answer.
      MutexLock lock(&lease_mu_);
      while (!stopping_ && deposed_.ok()) {
        const absl::Duration wait =
            std::min(next_keepalive - options_.clock->Monotonic(), LeaseLeftLocked());
        if (wait <= absl::ZeroDuration()) break;
        lease_changed_.WaitFor(&lease_mu_, wait);
      }
      if (stopping_ || !deposed_.ok()) return;
    }
    // Deposes the store when the TTL ran out on this store's clock.
    if (!CheckLeading().ok()) return;
    if (options_.clock->Monotonic() < next_keepalive) continue;
    next_keepalive = options_.clock->Monotonic() + interval;
    const absl::Status renewed = KeepAliveOnce();
    if (!renewed.ok() && !absl::IsCancelled(renewed)) LOG(WARNING) << renewed;
    (void)CheckLeading();
  }
}

absl::Status EtcdStateStore::KeepAliveOnce() {
  Endpoint& endpoint = Current();
  const absl::Duration sent_at = options_.clock->Monotonic();
  // An answer after the lease ran out would come too late: the store is deposed then.
  absl::Duration timeout = std::min(options_.call_timeout, KeepAliveInterval());
  {
    MutexLock lock(&lease_mu_);
    timeout = std::max(absl::Milliseconds(1), std::min(timeout, LeaseLeftLocked()));
  }
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  Cancellable cancellable(*this, context);
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
                                           etcdserverpb::LeaseKeepAliveResponse>>
      stream = endpoint.lease->LeaseKeepAlive(&context);
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease_id_);
  etcdserverpb::LeaseKeepAliveResponse response;
  const bool answered = stream->Write(request) && stream->Read(&response);
  stream->WritesDone();
  if (answered) context.TryCancel();  // etcd would keep the stream open
  const grpc::Status status = stream->Finish();
  if (!answered) {
    {
      MutexLock lock(&lease_mu_);
      if (stopping_ || !deposed_.ok()) {
        return absl::CancelledError("the store is deposed or stopping: no more keepalives");
      }
    }
    // A stream etcd ended without an answer counts as unanswered, whatever its status.
    ReportAnswered(status.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "") : status);
    if (IsTransportFailure(status) || status.ok()) MoveOn(endpoint);
    return EtcdError(status, endpoint.address,
                     absl::StrCat("renewing lease ", absl::StrFormat("%x", lease_id_)), timeout);
  }
  ReportAnswered(grpc::Status::OK);
  if (response.ttl() <= 0) {
    Depose(absl::UnavailableError(absl::StrCat(
        "this breakerd no longer leads ", options_.prefix, ": etcd reports its lease ",
        absl::StrFormat("%x", lease_id_),
        " expired or revoked, so another breakerd may lead; nothing more is written. breakerd "
        "steps down and campaigns again")));
    return absl::OkStatus();
  }
  MutexLock lock(&lease_mu_);
  renewed_at_ = std::max(renewed_at_, sent_at);
  return absl::OkStatus();
}

absl::Status EtcdStateStore::CheckLeading() {
  absl::Duration since;
  {
    MutexLock lock(&lease_mu_);
    if (!deposed_.ok()) return deposed_;
    since = options_.clock->Monotonic() - renewed_at_;
  }
  if (since < granted_ttl_ - options_.lease_margin) return absl::OkStatus();
  Depose(absl::UnavailableError(absl::StrCat(
      "this breakerd no longer leads ", options_.prefix, ": no keepalive of its etcd lease ",
      absl::StrFormat("%x", lease_id_), " succeeded for ", absl::FormatDuration(since), " (TTL ",
      absl::FormatDuration(granted_ttl_),
      "), so another breakerd may lead; nothing "
      "more is written. breakerd steps down and campaigns again; check etcd (etcdctl "
      "endpoint health)")));
  return leadership();
}

void EtcdStateStore::Depose(absl::Status status) {
  {
    MutexLock lock(&lease_mu_);
    if (deposing_) {
      // Another thread deposes the store: its status, once the owner heard it.
      while (deposed_.ok()) lease_changed_.Wait(&lease_mu_);
      return;
    }
    deposing_ = true;
  }
  LOG(ERROR) << status;
  // The owner first (breakerd's health turns NOT_SERVING), then the writes: none is refused
  // for it before the owner knows.
  if (options_.on_deposed) options_.on_deposed(status);
  MutexLock lock(&lease_mu_);
  deposed_ = status;
  Abandon(lease_id_);
  // Nothing they wait for can help now: a write that lands after this is fenced or unknown,
  // and a keepalive too late.
  for (grpc::ClientContext* call : calls_) call->TryCancel();
  lease_changed_.SignalAll();
}

absl::Status EtcdStateStore::leadership() const {
  MutexLock lock(&lease_mu_);
  return deposed_;
}

absl::Duration EtcdStateStore::last_keepalive() const {
  MutexLock lock(&lease_mu_);
  return renewed_at_;
}

absl::StatusOr<TxnResponse> EtcdStateStore::LeaderTxn(TxnRequest& request, absl::string_view what) {
  // On failure, the leader key shows whether this store still leads.
  request.add_failure()->mutable_request_range()->set_key(Key("leader"));
  absl::Status leading;
  TxnResponse response;
  const Tried sending = TryEndpoints([&](Endpoint& endpoint, grpc::ClientContext& context) {
    // Checked before each try: a store whose lease ran out by its clock writes nothing more.
    leading = CheckLeading();
    // CANCELLED: no call was made, which says nothing of etcd (see ReportAnswered).
    if (!leading.ok()) return grpc::Status(grpc::StatusCode::CANCELLED, "not leading");
    Cancellable cancellable(*this, context);
    response.Clear();
    return endpoint.kv->Txn(&context, request, &response);
  });
  if (!leading.ok()) return leading;
  if (!sending.status.ok()) {
    // Cancelled as the store was deposed: that is why.
    if (absl::Status deposed = leadership(); !deposed.ok()) return deposed;
    const absl::Status error =
        EtcdError(sending.status, sending.address, what, options_.call_timeout);
    if (!IsTransportFailure(sending.status)) return error;
    return absl::UnavailableError(
        absl::StrCat(error.message(), ". The write may have been committed all the same"));
  }
  if (response.succeeded()) return response;
  const RangeResponse& leader = response.responses(response.responses_size() - 1).response_range();
  if (leader.kvs_size() == 0 || leader.kvs(0).create_revision() != leader_revision_) {
    Depose(absl::UnavailableError(absl::StrCat(
        "this breakerd no longer leads ", options_.prefix, ": its leader key ", Key("leader"),
        leader.kvs_size() == 0 ? std::string(" is gone (its lease ended)")
                               : absl::StrCat(" is now held by '", leader.kvs(0).value(), "'"),
        ", so etcd refused ", what,
        "; nothing more is written. breakerd steps down and "
        "campaigns again")));
    return leadership();
  }
  return response;
}

absl::Status EtcdStateStore::ReadSequences() {
  absl::Status read;
  for (size_t attempt = 0; attempt < Attempts(); ++attempt) {
    read = ReadSequencesOnce();
    if (read.code() != absl::StatusCode::kUnavailable) break;
  }
  return read;
}

absl::Status EtcdStateStore::ReadSequencesOnce() {
  Endpoint& endpoint = Current();
  TxnRequest request;  // both reads at one revision
  request.add_success()->mutable_request_range()->set_key(Key("snapshot"));
  RangeRequest* last = request.add_success()->mutable_request_range();
  last->set_key(JournalKey(0));
  last->set_range_end(PrefixEnd(Key("journal/")));
  last->set_sort_order(RangeRequest::DESCEND);
  last->set_sort_target(RangeRequest::KEY);
  last->set_limit(1);
  last->set_keys_only(true);
  grpc::ClientContext context;
  SetDeadline(context, options_.call_timeout);
  TxnResponse response;
  const grpc::Status status = endpoint.kv->Txn(&context, request, &response);
  ReportAnswered(status);
  if (!status.ok()) {
    if (IsTransportFailure(status)) MoveOn(endpoint);
    return EtcdError(status, endpoint.address,
                     absl::StrCat("reading the sequences under ", options_.prefix),
                     options_.call_timeout);
  }
  Sequences sequences;
  const RangeResponse& pointer_range = response.responses(0).response_range();
  if (pointer_range.kvs_size() > 0) {
    std::optional<SnapshotPointer> pointer = DecodePointer(pointer_range.kvs(0).value());
    if (!pointer) {
      return absl::DataLossError(
          absl::StrCat("etcd key ", Key("snapshot"),
                       " holds no snapshot pointer breakerd wrote; "
                       "restore the prefix from a backup (etcdctl snapshot restore) or delete it "
                       "(etcdctl del --prefix ",
                       options_.prefix, "/) to start from empty state"));
    }
    sequences.snapshot_sequence = pointer->sequence;
    sequences.generation = pointer->generation;
  }
  sequences.last_sequence = sequences.snapshot_sequence;
  const RangeResponse& journal = response.responses(1).response_range();
  if (journal.kvs_size() > 0) {
    const std::string& key = journal.kvs(0).key();
    uint64_t sequence = 0;
    if (!absl::SimpleAtoi(absl::string_view(key).substr(key.rfind('/') + 1), &sequence)) {
      return absl::DataLossError(absl::StrCat("etcd key ", key,
                                              " is no journal key breakerd "
                                              "wrote; delete it or restore the prefix"));
    }
    sequences.last_sequence = std::max(sequences.last_sequence, sequence);
  }
  sequences_ = sequences;
  return absl::OkStatus();
}

absl::StatusOr<StoredState> EtcdStateStore::Load() {
  MutexLock lock(&mu_);
  absl::StatusOr<StoredState> state;
  // Again on the next endpoint when one does not answer, and after a compaction by another
  // store between the pages, at the new revision.
  for (size_t attempt = 0; attempt < Attempts(); ++attempt) {
    state = LoadOnce();
    if (state.status().code() != absl::StatusCode::kUnavailable &&
        state.status().code() != absl::StatusCode::kAborted) {
      break;
    }
  }
  if (state.status().code() == absl::StatusCode::kAborted) {
    return absl::UnavailableError(
        absl::StrCat("loading the state under ", options_.prefix,
                     " raced with compactions: ", state.status().message(), "; try again"));
  }
  return state;
}

absl::StatusOr<StoredState> EtcdStateStore::LoadOnce() {
  Endpoint& endpoint = Current();
  int64_t revision = 0;  // every page at the revision of the first
  auto range = [&](RangeRequest request, RangeResponse& response) -> absl::Status {
    request.set_revision(revision);
    grpc::ClientContext context;
    SetDeadline(context, options_.call_timeout);
    const grpc::Status status = endpoint.kv->Range(&context, request, &response);
    ReportAnswered(status);
    if (status.ok()) {
      if (revision == 0) revision = response.header().revision();
      return absl::OkStatus();
    }
    if (status.error_code() == grpc::StatusCode::OUT_OF_RANGE) {
      return absl::AbortedError(status.error_message());  // compacted meanwhile
    }
    if (IsTransportFailure(status)) MoveOn(endpoint);
    return EtcdError(status, endpoint.address,
                     absl::StrCat("loading the state under ", options_.prefix),
                     options_.call_timeout);
  };
  const std::string restore_hint = absl::StrCat(
      "; restore the prefix from a backup (etcdctl snapshot restore) or delete it (etcdctl del "
      "--prefix ",
      options_.prefix, "/) to start from empty state");

  StoredState state;
  Sequences sequences;
  RangeRequest pointer_request;
  pointer_request.set_key(Key("snapshot"));
  RangeResponse pointer_response;
  if (absl::Status read = range(pointer_request, pointer_response); !read.ok()) return read;
  if (pointer_response.kvs_size() > 0) {
    std::optional<SnapshotPointer> pointer = DecodePointer(pointer_response.kvs(0).value());
    if (!pointer) {
      return absl::DataLossError(
          absl::StrCat("etcd key ", Key("snapshot"), " holds no snapshot pointer", restore_hint));
    }
    std::string snapshot;
    snapshot.reserve(pointer->bytes);
    for (uint64_t chunk = 0; chunk < pointer->chunks; ++chunk) {
      RangeRequest chunk_request;
      chunk_request.set_key(ChunkKey(pointer->generation, chunk));
      RangeResponse chunk_response;
      if (absl::Status read = range(chunk_request, chunk_response); !read.ok()) return read;
      if (chunk_response.kvs_size() == 0) {
        return absl::DataLossError(absl::StrCat("etcd key ", ChunkKey(pointer->generation, chunk),
                                                ", a chunk of the snapshot, is missing",
                                                restore_hint));
      }
      snapshot += chunk_response.kvs(0).value();
    }
    if (snapshot.size() != pointer->bytes) {
      return absl::DataLossError(absl::StrCat("the snapshot under ", options_.prefix, " has ",
                                              snapshot.size(), " bytes where its pointer says ",
                                              pointer->bytes, restore_hint));
    }
    state.snapshot = std::move(snapshot);
    state.snapshot_sequence = pointer->sequence;
    sequences.snapshot_sequence = pointer->sequence;
    sequences.generation = pointer->generation;
  }

  // The journal, in pages of a bounded size.
  const int64_t page = std::max<int64_t>(1, kMaxResponseBytes / 2 / options_.max_request_bytes);
  std::string from = JournalKey(0);
  const std::string end = PrefixEnd(Key("journal/"));
  while (true) {
    RangeRequest journal_request;
    journal_request.set_key(from);
    journal_request.set_range_end(end);
    journal_request.set_limit(page);
    RangeResponse journal_response;
    if (absl::Status read = range(journal_request, journal_response); !read.ok()) return read;
    for (const auto& kv : journal_response.kvs()) {
      uint64_t sequence = 0;
      const absl::string_view key = kv.key();
      if (!absl::SimpleAtoi(key.substr(key.rfind('/') + 1), &sequence)) {
        return absl::DataLossError(
            absl::StrCat("etcd key ", kv.key(), " is no journal key", restore_hint));
      }
      if (sequence != state.last_sequence() + 1) {
        return absl::DataLossError(
            absl::StrCat("the journal under ", options_.prefix, " is missing entries: after ",
                         state.last_sequence(), " comes ", sequence, restore_hint));
      }
      state.journal.emplace_back(sequence, kv.value());
    }
    if (!journal_response.more() || journal_response.kvs_size() == 0) break;
    from = journal_response.kvs(journal_response.kvs_size() - 1).key() + std::string(1, '\0');
  }
  sequences.last_sequence = state.last_sequence();
  sequences_ = sequences;
  return state;
}

bool EtcdStateStore::FitsOneAppend(size_t entries, uint64_t bytes) const {
  return kRequestOverhead + bytes + entries * static_cast<uint64_t>(kPerEntryOverhead) <=
         static_cast<uint64_t>(options_.max_request_bytes);
}

absl::StatusOr<uint64_t> EtcdStateStore::Append(const std::vector<std::string>& entries) {
  MutexLock lock(&mu_);
  // Before reading anything from etcd: a deposed store answers at once.
  if (absl::Status leading = CheckLeading(); !leading.ok()) return leading;
  if (!sequences_) {
    if (absl::Status read = ReadSequences(); !read.ok()) return read;
  }
  if (entries.empty()) return sequences_->last_sequence;
  uint64_t bytes = 0;
  for (const std::string& entry : entries) bytes += entry.size();
  if (!FitsOneAppend(entries.size(), bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        entries.size(), " journal entries of ", bytes + entries.size() * kPerEntryOverhead,
        " bytes with their keys do not fit one etcd request, whose limit is ",
        options_.max_request_bytes,
        " bytes; append fewer at once, or raise etcd's "
        "--max-request-bytes on every member and breakerd's --etcd_max_request_bytes to "
        "match"));
  }
  const uint64_t first = sequences_->last_sequence + 1;
  const uint64_t last = sequences_->last_sequence + entries.size();
  TxnRequest request;
  LeaderCompare(request, Key("leader"), leader_revision_);
  // Sequences this store has not seen taken: a second guard besides the leader key.
  Compare* fresh = request.add_compare();
  fresh->set_key(JournalKey(first));
  fresh->set_target(Compare::CREATE);
  fresh->set_result(Compare::EQUAL);
  fresh->set_create_revision(0);
  for (size_t i = 0; i < entries.size(); ++i) AddPut(request, JournalKey(first + i), entries[i]);
  // What holds those sequences when the guard fails: this very batch, when an earlier try
  // (whose answer was lost) committed it.
  RangeRequest* taken = request.add_failure()->mutable_request_range();
  taken->set_key(JournalKey(first));
  taken->set_range_end(JournalKey(last + 1));
  absl::StatusOr<TxnResponse> response =
      LeaderTxn(request, absl::StrCat("appending journal entries ", first, "..", last));
  if (!response.ok()) {
    sequences_.reset();  // the outcome may be unknown: read again before the next write
    return response.status();
  }
  if (!response->succeeded()) {
    const RangeResponse& stored = response->responses(0).response_range();
    bool landed = stored.kvs_size() == static_cast<int>(entries.size());
    for (int i = 0; landed && i < stored.kvs_size(); ++i) {
      landed = stored.kvs(i).value() == entries[i];
    }
    if (!landed) {
      sequences_.reset();
      return absl::UnavailableError(absl::StrCat(
          "journal entry ", first, " under ", options_.prefix,
          " was written meanwhile (a write whose outcome was unknown landed late, or something "
          "else writes there); load the state again before writing"));
    }
  }
  sequences_->last_sequence = last;
  return last;
}

absl::Status EtcdStateStore::WriteSnapshot(absl::string_view snapshot, uint64_t through_sequence) {
  MutexLock lock(&mu_);
  if (absl::Status leading = CheckLeading(); !leading.ok()) return leading;
  if (!sequences_) {
    if (absl::Status read = ReadSequences(); !read.ok()) return read;
  }
  if (through_sequence > sequences_->last_sequence ||
      through_sequence < sequences_->snapshot_sequence) {
    return absl::InvalidArgumentError(
        absl::StrCat("a snapshot through sequence ", through_sequence, " is outside ",
                     sequences_->snapshot_sequence, "..", sequences_->last_sequence,
                     " (the current snapshot's sequence .. the last appended)"));
  }
  const uint64_t generation = sequences_->generation + 1;
  const uint64_t chunk_bytes = static_cast<uint64_t>(options_.snapshot_chunk_bytes);
  const uint64_t chunks = (snapshot.size() + chunk_bytes - 1) / chunk_bytes;
  const std::string leader_key = Key("leader");
  // The chunks, each in a transaction of its own under the new generation, which nothing
  // reads until the pointer names it. All but the last; that one goes with the pointer.
  for (uint64_t chunk = 0; chunk + 1 < chunks; ++chunk) {
    TxnRequest request;
    LeaderCompare(request, leader_key, leader_revision_);
    AddPut(request, ChunkKey(generation, chunk), snapshot.substr(chunk * chunk_bytes, chunk_bytes));
    absl::StatusOr<TxnResponse> written = LeaderTxn(
        request, absl::StrCat("writing chunk ", chunk + 1, " of ", chunks, " of a snapshot"));
    if (!written.ok()) return written.status();  // nothing visible changed
  }
  TxnRequest request;
  LeaderCompare(request, leader_key, leader_revision_);
  if (chunks > 0) {
    AddPut(request, ChunkKey(generation, chunks - 1),
           snapshot.substr((chunks - 1) * chunk_bytes, chunk_bytes));
  }
  SnapshotPointer pointer;
  pointer.generation = generation;
  pointer.sequence = through_sequence;
  pointer.chunks = chunks;
  pointer.bytes = snapshot.size();
  AddPut(request, Key("snapshot"), EncodePointer(pointer));
  AddDeleteRange(request, JournalKey(0), JournalKey(through_sequence + 1));
  // Older generations, and what a failed attempt at this one left beyond its chunks.
  AddDeleteRange(request, Key("snapshot/"), ChunkKey(generation, 0));
  AddDeleteRange(request, ChunkKey(generation, chunks), PrefixEnd(Key("snapshot/")));
  absl::StatusOr<TxnResponse> flipped =
      LeaderTxn(request, absl::StrCat("storing a snapshot through sequence ", through_sequence));
  if (!flipped.ok()) {
    sequences_.reset();
    return flipped.status();
  }
  sequences_->snapshot_sequence = through_sequence;
  sequences_->generation = generation;

  // The history up to now is no longer needed by anyone: compacting it keeps etcd's database
  // bounded. A failure costs space, not correctness.
  Endpoint& endpoint = Current();
  grpc::ClientContext context;
  SetDeadline(context, options_.call_timeout);
  etcdserverpb::CompactionRequest compaction;
  compaction.set_revision(flipped->header().revision());
  etcdserverpb::CompactionResponse compacted;
  const grpc::Status status = endpoint.kv->Compact(&context, compaction, &compacted);
  ReportAnswered(status);
  if (!status.ok() && status.error_code() != grpc::StatusCode::OUT_OF_RANGE) {
    LOG(WARNING) << "compacting etcd's history to revision " << compaction.revision()
                 << " failed: " << status.error_message() << "; the next snapshot tries again";
  }
  return absl::OkStatus();
}

}  // namespace breaker::service
