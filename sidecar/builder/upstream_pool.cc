#include "sidecar/builder/upstream_pool.h"

#include <curl/curl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "glog/logging.h"

namespace breaker::sidecar {
namespace {

// libcurl's global state, set up once before the first handle (thread-safe from 7.84 on, but
// once is all it needs).
void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { CHECK_EQ(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK); });
}

absl::Status CheckReadable(absl::string_view what, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", path, "' cannot be read (", std::strerror(errno), ")"));
  }
  std::fclose(file);
  return absl::OkStatus();
}

UpstreamAnswer::Failure FailureOf(CURLcode code) {
  using Failure = UpstreamAnswer::Failure;
  switch (code) {
    case CURLE_OK:
      return Failure::kNone;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_URL_MALFORMAT:
      return Failure::kConnect;
    case CURLE_OPERATION_TIMEDOUT:
      return Failure::kTimeout;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_INITFAILED:
      return Failure::kTls;
    case CURLE_SEND_ERROR:
    case CURLE_SEND_FAIL_REWIND:
      return Failure::kSend;
    case CURLE_ABORTED_BY_CALLBACK:
      return Failure::kStopped;
    default:
      // CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_WEIRD_SERVER_REPLY...
      return Failure::kReceive;
  }
}

// The state of one exchange that libcurl's callbacks write to.
struct Transfer {
  const UpstreamRequest* request = nullptr;
  size_t body_sent = 0;
  size_t max_body = 0;
  bool too_large = false;
  const std::atomic<bool>* aborted = nullptr;
  UpstreamAnswer* answer = nullptr;
};

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t length = size * count;
  if (transfer->answer->body.size() + length > transfer->max_body) {
    transfer->too_large = true;
    return 0;  // Not `length`: libcurl ends the transfer with CURLE_WRITE_ERROR.
  }
  transfer->answer->body.append(data, length);
  return length;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t length = size * count;
  absl::string_view line(data, length);
  line = absl::StripSuffix(absl::StripSuffix(line, "\n"), "\r");
  if (absl::StartsWith(line, "HTTP/")) {
    // A status line: an interim answer's (100 Continue) headers are not the final answer's.
    transfer->answer->headers.clear();
    return length;
  }
  const size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return length;
  transfer->answer->headers.emplace_back(
      std::string(line.substr(0, colon)),
      std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))));
  return length;
}

size_t OnReadBody(char* buffer, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::string& body = transfer->request->body;
  const size_t length = std::min(size * count, body.size() - transfer->body_sent);
  std::memcpy(buffer, body.data() + transfer->body_sent, length);
  transfer->body_sent += length;
  return length;
}

// libcurl rewinds the body only to send it again on a new connection.
int OnSeekBody(void* user, curl_off_t offset, int origin) {
  auto* transfer = static_cast<Transfer*>(user);
  if (transfer->request->never_resend || transfer->body_sent > 0 || origin != SEEK_SET ||
      offset != 0) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  return CURL_SEEKFUNC_OK;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* transfer = static_cast<Transfer*>(user);
  return transfer->aborted->load(std::memory_order_relaxed) ? 1 : 0;
}

}  // namespace

// The TLS session and DNS caches every handle of the pool shares, with the locks libcurl asks
// for.
class UpstreamPool::Share {
 public:
  Share() : share_(curl_share_init()) {
    CHECK(share_ != nullptr);
    curl_share_setopt(share_, CURLSHOPT_LOCKFUNC, &Share::Lock);
    curl_share_setopt(share_, CURLSHOPT_UNLOCKFUNC, &Share::Unlock);
    curl_share_setopt(share_, CURLSHOPT_USERDATA, this);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  }
  ~Share() { curl_share_cleanup(share_); }

  CURLSH* get() { return share_; }

 private:
  // libcurl pairs each lock with an unlock of the same data; the analysis cannot follow that.
  static void Lock(CURL*, curl_lock_data data, curl_lock_access,
                   void* user) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<Share*>(user)->mu_[Index(data)].Lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* user) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<Share*>(user)->mu_[Index(data)].Unlock();
  }
  static size_t Index(curl_lock_data data) { return static_cast<size_t>(data) % kLocks; }

  static constexpr size_t kLocks = CURL_LOCK_DATA_LAST;
  CURLSH* share_;
  Mutex mu_[kLocks];
};

// One easy handle: libcurl keeps its connection between exchanges.
struct UpstreamPool::Handle {
  Handle() : curl(curl_easy_init()) { CHECK(curl != nullptr); }
  ~Handle() { curl_easy_cleanup(curl); }

  CURL* curl;
  absl::Time last_used;
  // Warm() left it; cleared by its next use.
  bool warmed = false;
};

absl::StatusOr<std::unique_ptr<UpstreamPool>> UpstreamPool::Create(UpstreamPoolOptions options,
                                                                   const Clock& clock) {
  if (absl::Status ok = CheckReadable("tls_ca_file", options.tls_ca_file); !ok.ok()) return ok;
  if (absl::Status ok = CheckReadable("tls_cert_file", options.tls_cert_file); !ok.ok()) {
    return ok;
  }
  if (absl::Status ok = CheckReadable("tls_key_file", options.tls_key_file); !ok.ok()) return ok;
  InitCurlOnce();
  return std::unique_ptr<UpstreamPool>(new UpstreamPool(std::move(options), clock));
}

UpstreamPool::UpstreamPool(UpstreamPoolOptions options, const Clock& clock)
    : options_(std::move(options)), clock_(clock), share_(std::make_unique<Share>()) {}

UpstreamPool::~UpstreamPool() {
  MutexLock lock(&mu_);
  // Handles go before the share they point to.
  idle_.clear();
}

std::unique_ptr<UpstreamPool::Handle> UpstreamPool::Acquire() {
  // A connection idle for idle_timeout is never reused, to the clock's precision: the sweep
  // (CloseIdle) runs only so often, and libcurl's own age check counts whole seconds.
  const absl::Time oldest = clock_.Now() - options_.idle_timeout;
  std::vector<std::unique_ptr<Handle>> closing;
  std::unique_ptr<Handle> handle;
  {
    MutexLock lock(&mu_);
    while (!idle_.empty() && handle == nullptr) {
      std::unique_ptr<Handle> newest = std::move(idle_.back());
      idle_.pop_back();
      if (newest->last_used > oldest) {
        handle = std::move(newest);
      } else {
        closing.push_back(std::move(newest));
      }
    }
  }
  // Closed outside the lock: a TLS close_notify is a write.
  closing.clear();
  return handle != nullptr ? std::move(handle) : std::make_unique<Handle>();
}

void UpstreamPool::Release(std::unique_ptr<Handle> handle, bool keep) {
  handle->last_used = clock_.Now();
  MutexLock lock(&mu_);
  if (keep && idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(handle));
  // Otherwise destroyed here, its connection closed.
}

void UpstreamPool::CloseIdle() {
  const absl::Time oldest = clock_.Now() - options_.idle_timeout;
  std::vector<std::unique_ptr<Handle>> closing;
  {
    MutexLock lock(&mu_);
    auto stale = std::stable_partition(idle_.begin(), idle_.end(),
                                       [&](const auto& h) { return h->last_used <= oldest; });
    std::move(idle_.begin(), stale, std::back_inserter(closing));
    idle_.erase(idle_.begin(), stale);
  }
  // Closed outside the lock: a TLS close_notify is a write.
}

void UpstreamPool::Abort() { aborted_.store(true); }

UpstreamPoolStats UpstreamPool::stats() const {
  MutexLock lock(&mu_);
  UpstreamPoolStats stats = stats_;
  stats.idle_connections = idle_.size();
  return stats;
}

UpstreamAnswer UpstreamPool::Send(const UpstreamRequest& request, absl::Duration budget) {
  std::unique_ptr<Handle> handle = Acquire();
  const bool warmed = handle->warmed;
  handle->warmed = false;
  UpstreamAnswer answer = Exchange(*handle, request, budget);
  answer.warmed_connection = warmed && answer.reused_connection;
  {
    MutexLock lock(&mu_);
    if (answer.reused_connection) ++stats_.hits;
    if (answer.new_connection) ++stats_.misses;
    if (answer.warmed_connection) ++stats_.warmed_used;
  }
  // libcurl closes a connection that failed; the handle itself stays good.
  Release(std::move(handle), answer.failure != UpstreamAnswer::Failure::kStopped);
  return answer;
}

absl::Status UpstreamPool::Warm(absl::string_view status_path, absl::Duration budget) {
  std::unique_ptr<Handle> handle = Acquire();
  UpstreamRequest request;
  request.method = "GET";
  request.target = std::string(status_path);
  const UpstreamAnswer answer = Exchange(*handle, request, budget);
  handle->warmed = answer.ok();
  {
    MutexLock lock(&mu_);
    if (answer.ok()) ++stats_.warmed;
  }
  Release(std::move(handle), answer.failure != UpstreamAnswer::Failure::kStopped);
  if (!answer.ok()) {
    return absl::UnavailableError(absl::StrCat("warming ", options_.name, ": ", answer.error));
  }
  return absl::OkStatus();
}

UpstreamAnswer UpstreamPool::Exchange(Handle& handle, const UpstreamRequest& request,
                                      absl::Duration budget) {
  UpstreamAnswer answer;
  Transfer transfer;
  transfer.request = &request;
  transfer.max_body = options_.max_body_bytes;
  transfer.aborted = &aborted_;
  transfer.answer = &answer;

  CURL* curl = handle.curl;
  // Clears the last exchange's options; the connection and the shared caches stay.
  curl_easy_reset(curl);
  const std::string url = options_.scheme_host_port + request.target;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  // The target as the node sent it: no dot segments squashed.
  curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_SHARE, share_->get());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXCONNECTS, 1L);
  // A backstop in whole seconds; Acquire applies idle_timeout exactly.
  curl_easy_setopt(curl, CURLOPT_MAXAGE_CONN,
                   static_cast<long>(absl::ToInt64Seconds(options_.idle_timeout)));
  const long budget_ms = std::max<long>(1, absl::ToInt64Milliseconds(budget));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, budget_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, budget_ms);
  if (!options_.tls_ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, options_.tls_ca_file.c_str());
  }
  if (!options_.tls_cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, options_.tls_cert_file.c_str());
    curl_easy_setopt(curl, CURLOPT_SSLKEY, options_.tls_key_file.c_str());
  }
  char error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);

  const bool has_body = !request.body.empty() || request.method == "POST" ||
                        request.method == "PUT" || request.method == "PATCH";
  if (has_body) {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, &OnReadBody);
    curl_easy_setopt(curl, CURLOPT_READDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, &OnSeekBody);
    curl_easy_setopt(curl, CURLOPT_SEEKDATA, &transfer);
  }
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method != (has_body ? "POST" : "GET")) {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }

  // The node's headers, and none of libcurl's own but Host and Content-Length: an empty
  // "Name:" removes the one libcurl would add.
  curl_slist* headers = nullptr;
  bool accept = false;
  bool content_type = false;
  for (const auto& [name, value] : request.headers) {
    accept = accept || absl::EqualsIgnoreCase(name, "Accept");
    content_type = content_type || absl::EqualsIgnoreCase(name, "Content-Type");
    const std::string line =
        value.empty() ? absl::StrCat(name, ";") : absl::StrCat(name, ": ", value);
    headers = curl_slist_append(headers, line.c_str());
  }
  if (!accept) headers = curl_slist_append(headers, "Accept:");
  if (has_body && !content_type) headers = curl_slist_append(headers, "Content-Type:");
  // Not waiting a round trip for "100 Continue" before a large body.
  if (has_body) headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);

  const CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);

  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  answer.status = static_cast<int>(status);
  long connects = 0;
  curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &connects);
  answer.new_connection = connects > 0;
  // A reused connection answered; one that failed before any connection (a stop, a budget
  // already spent) was neither.
  answer.reused_connection = connects == 0 && (code == CURLE_OK || status != 0);
  curl_off_t handshake_us = 0;
  curl_easy_getinfo(curl, CURLINFO_APPCONNECT_TIME_T, &handshake_us);

  answer.failure = transfer.too_large ? UpstreamAnswer::Failure::kTooLarge : FailureOf(code);
  if (!answer.ok()) {
    answer.error = absl::StrCat(curl_easy_strerror(code), error[0] != '\0' ? ": " : "", error);
  }
  MutexLock lock(&mu_);
  if (handshake_us > 0 && connects > 0) ++stats_.tls_handshakes;
  if (answer.failure == UpstreamAnswer::Failure::kTls) ++stats_.tls_failures;
  return answer;
}

}  // namespace breaker::sidecar
