#ifndef CLIENT_C_API_H_
#define CLIENT_C_API_H_

/*
 * The C API of the breakerd client library: what a beacon node written in Go, Rust, Java or
 * Nim links to take part in the fleet's shared circuit breaker. Pure C (C99 and later), over
 * the C++ interface in client/client.h.
 *
 * A beacon node makes three kinds of calls: it reports what it sees (breaker_report_*), asks
 * breaker_is_allowed at block production, and subscribes to policy changes. None of them waits
 * for the network: observations are buffered and streamed by the library's own threads, and
 * the policy is read from an immutable snapshot. When breakerd is unreachable the last fleet
 * policy stays in force; past the staleness limit the library also applies its local engine's
 * policy (the stricter of the two), and keeps doing so once breakerd is back until breakerd has
 * acknowledged what the node saw meanwhile and the node holds the policy that reflects it.
 * Before any fleet policy has arrived, the local one applies. Reconnects back off from 1 s,
 * x1.6, to 30 s, with jitter.
 *
 * Conventions of every function below (each function's comment, or its section's, also names
 * its thread safety, whether it blocks, and who owns what it takes and returns):
 *   - Errors: a function that can fail returns an int code: 0 (BREAKER_OK) on success,
 *     otherwise the canonical gRPC/absl status code (e.g. 3, BREAKER_INVALID_ARGUMENT). Each
 *     such function also records its code and a message saying what was wrong, for the calling
 *     thread, which breaker_last_error copies; breaker_client_new also fills an optional
 *     caller-provided breaker_error.
 *   - Strings and byte arrays passed in are copied before the function returns; the caller
 *     keeps ownership of them. Strings handed out belong to the object named in the function's
 *     comment and stay valid until that object is freed; the caller never frees them.
 *   - Handles: every object this API allocates is freed by its matching _free function, and
 *     only by it.
 *   - Thread safety: every function may be called from any thread, concurrently, except the
 *     _free functions, which must not race with any other call on the same object. A
 *     breaker_options is not shared state: do not modify one from two threads at once. No
 *     function keeps a pointer the caller passed past its return, except `user_data` of
 *     breaker_subscribe and of breaker_options_set_log_callback.
 *   - Blocking: only breaker_client_free (which ends the library's threads) and
 *     breaker_unsubscribe (which waits for a running callback) wait; every other function
 *     returns without waiting for the network, a lock held across I/O, or another thread's
 *     callback.
 *   - Nothing is thrown across this boundary: the C++ side reports errors as status values.
 *     Running out of memory (other than in breaker_options_new) ends the process.
 *   - Structs the caller allocates and the library fills (breaker_error, breaker_policy_info,
 *     breaker_stats) begin with `size_t size`, which the caller sets to sizeof the struct as
 *     its header declares it (in C, `breaker_stats s = {.size = sizeof s};`). The library
 *     writes only the first `size` bytes, and zeroes what lies past its own struct when the
 *     caller's is larger: a struct only ever grows by fields added at its end, so a program
 *     built against an older or a newer header reads every field it knows, and nothing else is
 *     written. A `size` below the struct's first layout in ABI version 1 (a `size` not set)
 *     is refused with BREAKER_INVALID_ARGUMENT and nothing is written. Sized structs rather
 *     than opaque handles with an accessor per field: one call reads a consistent set of
 *     counters, and a binding declares each struct once (bindings check its layout against
 *     this header's).
 *
 * Versions: breaker_abi_version() returns the library's BREAKER_ABI_VERSION, which is also the
 * number of its SONAME (libbreaker_client.so.1). It changes only when an existing function or
 * field changes meaning or place; adding a function, or a field at the end of a sized struct,
 * keeps it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes. */
#define BREAKER_ABI_VERSION 1

/* Returns the ABI version of the library loaded (BREAKER_ABI_VERSION of the header it was built
 * from): a binding compares it with the version it was written for. Thread-safe; does not
 * block. */
int breaker_abi_version(void);

/* ------------------------------------------------------------------------------------------
 * Errors. */

/* The codes this API returns (canonical gRPC/absl status codes). */
enum breaker_code {
  BREAKER_OK = 0,
  BREAKER_INVALID_ARGUMENT = 3,
  BREAKER_NOT_FOUND = 5,
  BREAKER_FAILED_PRECONDITION = 9,
  BREAKER_OUT_OF_RANGE = 11
};

/* Filled by functions that take one. `message` is NUL-terminated (truncated to fit); empty when
 * `code` is 0. A sized struct: set `size` (see the conventions above). */
typedef struct breaker_error {
  size_t size;
  int code;
  char message[256];
} breaker_error;

/* Copies to `*out` (when not NULL) the code and message of the last call on this thread of a
 * function of this API that returns an int code, and returns that code: 0 with an empty
 * message when that call succeeded, or when there was none. An `out` whose `size` is too small
 * is not written, and BREAKER_INVALID_ARGUMENT is returned (the last error stays as it was).
 * A binding whose language moves its tasks between threads calls it in the same native call
 * as the function that failed.
 * Thread-safe (per thread); does not block; the caller owns `*out`. */
int breaker_last_error(breaker_error* out);

/* ------------------------------------------------------------------------------------------
 * Options. */

/* How to start a client. Opaque; allocate with breaker_options_new. */
typedef struct breaker_options breaker_options;

/* Returns new options with the library's defaults and no address nor node id (both required
 * by breaker_client_new). Free with breaker_options_free. Returns NULL only when out of
 * memory. Thread-safe; does not block; the caller owns the result. */
breaker_options* breaker_options_new(void);

/* Frees `opts`. NULL is allowed. A client created from them does not need them any more.
 * Must not race with another call on `opts`; does not block. */
void breaker_options_free(breaker_options* opts);

/* Each setter returns 0, or BREAKER_INVALID_ARGUMENT for a NULL `opts` or string, or a value
 * named below as refused; values out of range otherwise are refused by breaker_client_new,
 * which names them. Strings are copied. Not thread-safe on one `opts` (see above); none
 * blocks. */

/* Adds a breakerd address ("host:port"); addresses are tried in turn, the next at once when
 * one fails, the backoff waiting once each has failed (give every replica's). At least one is
 * required. The connection is plaintext (loopback or a private network only) unless
 * breaker_options_set_tls is called. */
int breaker_options_add_address(breaker_options* opts, const char* address);

/* Connects over TLS: `ca_file` holds the CA certificates (PEM) breakerd's certificate must
 * chain to ("" for the system's roots); `cert_file` and `key_file` this node's certificate and
 * key (PEM) for mutual TLS, both NULL or "" for none. The files are read by breaker_client_new,
 * which names one that cannot be read. */
int breaker_options_set_tls(breaker_options* opts, const char* ca_file, const char* cert_file,
                            const char* key_file);

/* Sends `token` with every call as `authorization: Bearer <token>`, for a breakerd whose
 * access file knows this node by token. Empty (the default): none. */
int breaker_options_set_bearer_token(breaker_options* opts, const char* token);

/* Sets this node's stable id in the fleet. Required, not empty. */
int breaker_options_set_node_id(breaker_options* opts, const char* node_id);

/* Sets the network the node follows (e.g. "mainnet"); breakerd refuses a node of another
 * network. Empty (the default): not checked. */
int breaker_options_set_network(breaker_options* opts, const char* network);

/* Sets the version string reported to breakerd (default "breaker-client/1"). */
int breaker_options_set_client_version(breaker_options* opts, const char* client_version);

/* Sets how many observations are kept until breakerd acknowledges them (default 65536). When
 * full, the oldest bids are dropped first, then other non-failure observations, failures
 * last; drops are counted in breaker_stats. */
int breaker_options_set_max_buffered_observations(breaker_options* opts, size_t max);

/* Sets how long breakerd may be unreachable, in seconds, before the node also applies its
 * local engine's policy. Default: two epochs of the chain. Refuses a negative, infinite or NaN
 * value. */
int breaker_options_set_staleness_limit_seconds(breaker_options* opts, double seconds);

/* The level of a log line. */
enum breaker_log_level {
  /* What goes as expected: connected, a failed connection attempt (repeated while breakerd is
   * away). */
  BREAKER_LOG_INFO = 0,
  /* What an operator should know: a stream that ended, an observation breakerd refused, the
   * local engine's policy taking part. */
  BREAKER_LOG_WARNING = 1,
  /* What needs an operator: breakerd sent what this client cannot use, sequence numbers ran
   * out. */
  BREAKER_LOG_ERROR = 2
};

/* Receives each line the library logs: its level (a breaker_log_level) and the line,
 * NUL-terminated, without a newline, valid for the call only. Called on a thread of the
 * client's own (its log thread: neither a caller's thread nor the one of policy callbacks),
 * one line at a time, in order, with no lock of the library held: it may call any function of
 * this API on the client except breaker_client_free. Lines wait in a bounded queue: a slow
 * callback delays only later lines (past 1024 waiting, lines are dropped and counted in the
 * next one). */
typedef void (*breaker_log_callback)(void* user_data, int level, const char* message);

/* Sends the library's log lines, every level, to `callback` (passed `user_data` as is), and
 * nothing to stderr. `user_data` must stay valid until breaker_client_free has returned.
 * Without a callback (the default, or `callback` NULL) the library writes its warnings and
 * errors to stderr, one line each ("breaker-client: WARNING: ..."), and nothing else: no
 * line at start, none per connection attempt. The library never initializes glog nor writes
 * through it, so a program's own glog is left as the program set it up. (gRPC, a shared
 * library of its own, logs its errors to stderr as GRPC_VERBOSITY says.) */
int breaker_options_set_log_callback(breaker_options* opts, breaker_log_callback callback,
                                     void* user_data);

/* Sets the path of a breakerd configuration file (text-format breaker.v1.Config) whose
 * configuration the local engine uses until breakerd sends its own. The file is read by
 * breaker_client_new, not here. Empty (the default): the library's defaults for the network. */
int breaker_options_set_fallback_config_file(breaker_options* opts, const char* path);

/* ------------------------------------------------------------------------------------------
 * The client. */

/* A running client. Opaque; create with breaker_client_new, free with breaker_client_free. */
typedef struct breaker_client breaker_client;

/* Starts a client: its threads connect to breakerd in the background (this call does not wait
 * for a connection) and keep reconnecting until the client is freed. On success stores the
 * client in `*out` and returns 0; on failure stores NULL in `*out` (when `out` is not NULL),
 * fills `err` when not NULL, and returns:
 *   BREAKER_INVALID_ARGUMENT for NULL `opts` or `out`, no address, no node id, an option out
 *     of range, an invalid fallback configuration file, or a TLS certificate without its key
 *     (the message names what is wrong);
 *   BREAKER_NOT_FOUND when the fallback configuration file or a TLS file does not exist;
 *   BREAKER_FAILED_PRECONDITION when one cannot be read.
 * An `err` whose `size` is too small is not written (breaker_last_error has the error).
 * Thread-safe (`opts` is only read); reads the files named in `opts` but does not wait for the
 * network; the caller owns the client and frees it with breaker_client_free. */
int breaker_client_new(const breaker_options* opts, breaker_client** out, breaker_error* err);

/* Stops the client's threads and frees it. Buffered observations not yet acknowledged are
 * lost (a restarted node reports anew). NULL is allowed. Blocks until the library's threads
 * have ended: the stream to breakerd is cancelled, not drained, so this takes milliseconds
 * whatever breakerd does (docs/bindings.md has the figures). Snapshots from breaker_policy_get
 * stay valid.
 * REQUIRES: no other call on `client` is running or will start; not called from a policy
 * callback. */
void breaker_client_free(breaker_client* client);

/* ------------------------------------------------------------------------------------------
 * Reports: what this node saw about `slot`. Each queues one observation and returns at once,
 * never waiting for the network. Each returns 0, or refuses the observation, queuing nothing,
 * with a code and a message (breaker_last_error; also kept in breaker_stats.last_refusal):
 *   BREAKER_INVALID_ARGUMENT for a NULL client or a NULL pointer where one is required, and
 *     for what breakerd would refuse for its shape, in breakerd's words after the function's
 *     name: a relay that does not normalize ("ftp://x", longer than 512 bytes, ...), a public
 *     key neither absent nor 48 bytes, more than 64 roots, the self-build index where a builder
 *     is needed, an attested fraction outside [0, 1], a finalized epoch after the slot's;
 *   BREAKER_OUT_OF_RANGE for a slot outside the window as the library's clock sees it: more
 *     than 2 slots ahead of the current slot or more than 64 behind (breakerd's
 *     max_future_slots and amendment_window_slots, from its configuration once connected).
 * breakerd judges the window again by its own clock: with the two clocks apart, an
 * observation near an edge may be accepted here and refused there (counted in
 * breaker_stats.refused, and named in breaker_stats.last_refusal).
 * Roots are 32 bytes. Builder indices are the chain's (UINT64_MAX is the proposer's own
 * payload). Relays are endpoint identifiers in any spelling ("host:port", URLs with
 * credentials, ...): the library normalizes them.
 * Each is thread-safe, does not block, and copies what it is given. */

/* A bid for `builder` reached the node, through `relay_or_null` (NULL or "" for a bid received
 * over P2P). `pubkey` (`pubkey_len` bytes) is the builder's public key when the node could
 * look it up; NULL with length 0 otherwise. */
int breaker_report_bid(breaker_client* client, uint64_t slot, uint64_t builder,
                       const char* relay_or_null, const uint8_t* pubkey, size_t pubkey_len);

/* The block `root`, whose bid names `builder`, got no payload; `attested_fraction` of the
 * slot's committee weight attested the block. Refuses a fraction outside [0, 1] (or NaN). */
int breaker_report_payload_missing(breaker_client* client, uint64_t slot, uint64_t builder,
                                   const uint8_t root[32], double attested_fraction);

/* `builder` revealed the payload of block `root`. */
int breaker_report_payload_delivered(breaker_client* client, uint64_t slot, uint64_t builder,
                                     const uint8_t root[32]);

/* The blocks the node has for `slot`, canonical or not: `n_roots` roots of 32 bytes each,
 * contiguous (`roots` may be NULL when `n_roots` is 0: the node has no block for the slot). */
int breaker_report_blocks_seen(breaker_client* client, uint64_t slot, const uint8_t* roots,
                               size_t n_roots);

/* The node's latest finalized epoch is `epoch`, as of `slot`. */
int breaker_report_finalized(breaker_client* client, uint64_t slot, uint64_t epoch);

/* `builder` exited; its index may be given to a new builder later. */
int breaker_report_builder_exited(breaker_client* client, uint64_t slot, uint64_t builder);

/* Pre-Gloas: `relay` (required) signed the header of block `root` and did not reveal the
 * payload. */
int breaker_report_relay_reveal_missing(breaker_client* client, uint64_t slot, const char* relay,
                                        const uint8_t root[32]);

/* ------------------------------------------------------------------------------------------
 * The policy in force. Each function reads one immutable snapshot without blocking; two calls
 * may see two different policies if a new one arrives in between (breaker_policy_get holds one
 * snapshot for several reads). Each is thread-safe and wait-free in the common case: it takes
 * no lock the network side holds. */

/* The fleet's fallback mode; the numbers are the proto's (breaker.v1.Mode). */
enum breaker_mode {
  /* Bids from every builder that is not banned. */
  BREAKER_MODE_ALL_BUILDERS = 1,
  /* Only bids from trusted builders or through trusted relays. */
  BREAKER_MODE_TRUSTED_ONLY = 2,
  /* No bid: the proposer builds its own payload. */
  BREAKER_MODE_SELF_BUILD = 3
};

/* Where the policy in force comes from. */
enum breaker_source {
  /* The fleet's policy, from breakerd. */
  BREAKER_SOURCE_FLEET = 1,
  /* breakerd has been unreachable past the staleness limit, or is back and has not yet
   * reflected what the node saw without it: the stricter of the last fleet policy and the
   * local engine's. */
  BREAKER_SOURCE_FLEET_AND_LOCAL = 2,
  /* No fleet policy received yet: the local engine's. */
  BREAKER_SOURCE_LOCAL = 3
};

/* Returns whether the node may take a bid of `builder` received through `relay_or_null` (any
 * spelling; NULL or "" for P2P). Returns false for a relay identifier that cannot be
 * normalized (it is nobody's relay), and for a NULL client. */
bool breaker_is_allowed(const breaker_client* client, uint64_t builder, const char* relay_or_null);

/* Before Gloas a relay's header names no builder index: returns whether the node may take a
 * header from `relay` (any spelling) whatever its builder: the relay is not banned, the mode is
 * not BREAKER_MODE_SELF_BUILD, and under BREAKER_MODE_TRUSTED_ONLY the relay is trusted. False
 * for a relay that cannot be normalized, NULL or "", and for a NULL client. Thread-safe; does
 * not block. */
bool breaker_is_relay_allowed(const breaker_client* client, const char* relay);

/* Returns the mode in force (a breaker_mode), or 0 for a NULL client. */
int breaker_mode(const breaker_client* client);

/* Returns where the policy in force comes from (a breaker_source), or 0 for a NULL client. */
int breaker_policy_source(const breaker_client* client);

/* Returns the version of the fleet policy in force (also under
 * BREAKER_SOURCE_FLEET_AND_LOCAL), or 0 when none has arrived yet or for a NULL client. */
uint64_t breaker_policy_version(const breaker_client* client);

/* Returns how many builders the policy in force bans, and copies the first `cap` of their
 * indices, in increasing order, to `out` (which may be NULL when `cap` is 0). Returns 0 for a
 * NULL client. */
size_t breaker_banned_builders(const breaker_client* client, uint64_t* out, size_t cap);

/* One policy in force, held: every read of it answers from the same policy. Opaque; take one
 * with breaker_policy_get, free it with breaker_policy_free. Immutable, so that any number of
 * threads may read one at once; it does not refer to its client and may outlive it. */
typedef struct breaker_policy breaker_policy;

/* Returns the policy in force now, which the caller owns and frees with breaker_policy_free;
 * NULL for a NULL client. Thread-safe; does not block (it copies the policy's lists, sorted,
 * once: read cost grows with the number of bans and trusted entries). */
breaker_policy* breaker_policy_get(const breaker_client* client);

/* Frees `policy`, and with it every string read from it. NULL is allowed. Must not race with
 * another call on `policy`; does not block. */
void breaker_policy_free(breaker_policy* policy);

/* Returns whether `policy` is still the client's policy in force: a binding keeps its own
 * copy of a policy and refreshes it only when this turns false. False for a NULL argument.
 * Thread-safe; does not block; keeps neither pointer. */
bool breaker_policy_is_current(const breaker_client* client, const breaker_policy* policy);

/* The scalar fields of a held policy. A sized struct: set `size`. */
typedef struct breaker_policy_info {
  size_t size;
  /* As breaker_policy_version: 0 when no fleet policy has arrived. */
  uint64_t fleet_version;
  /* A breaker_mode. */
  int mode;
  /* A breaker_source. */
  int source;
  /* The lengths of the lists below. */
  size_t n_banned_builders;
  size_t n_trusted_builders;
  size_t n_banned_relays;
  size_t n_trusted_relays;
} breaker_policy_info;

/* Fills `*out` from `policy`. Returns 0, or BREAKER_INVALID_ARGUMENT for a NULL argument or
 * an `out->size` too small.
 * Thread-safe; does not block; the caller owns `*out`. */
int breaker_policy_read(const breaker_policy* policy, breaker_policy_info* out);

/* Copy the first `cap` builder indices the policy bans, or trusts, in increasing order, to
 * `out` (which may be NULL when `cap` is 0), and return how many there are (0 for a NULL
 * policy). Thread-safe; do not block; the caller owns `out`. */
size_t breaker_policy_banned_builders(const breaker_policy* policy, uint64_t* out, size_t cap);
size_t breaker_policy_trusted_builders(const breaker_policy* policy, uint64_t* out, size_t cap);

/* Return the `index`th relay the policy bans, or trusts, in increasing byte order of the
 * normalized identifiers, NUL-terminated; NULL when `index` is past the end or `policy` is
 * NULL. The string belongs to `policy` and stays valid until breaker_policy_free(policy).
 * Thread-safe; do not block. */
const char* breaker_policy_banned_relay(const breaker_policy* policy, size_t index);
const char* breaker_policy_trusted_relay(const breaker_policy* policy, size_t index);

/* Returns why the mode is what it is (empty for BREAKER_MODE_ALL_BUILDERS), NUL-terminated;
 * "" for a NULL policy. The string belongs to `policy` and stays valid until
 * breaker_policy_free(policy). Thread-safe; does not block. */
const char* breaker_policy_mode_reason(const breaker_policy* policy);

/* ------------------------------------------------------------------------------------------
 * Subscriptions. */

/* Called with every new policy in force (a new fleet version or a change of source), with its
 * fleet version (as breaker_policy_version), mode (a breaker_mode) and source (a
 * breaker_source). Runs on a library thread, never on the thread that subscribed, one call at
 * a time; it should return quickly (it delays the next callbacks, and breaker_unsubscribe waits
 * for it). It may call any function of this API on the client (including breaker_subscribe and
 * breaker_unsubscribe) except breaker_client_free, which it must not call. The library's
 * thread is not one the caller created: a runtime that needs to know its threads (Go's, the
 * JVM) attaches it the way it attaches any foreign thread. */
typedef void (*breaker_policy_callback)(void* user_data, uint64_t fleet_version, int mode,
                                        int source);

/* Subscribes `callback`, which is passed `user_data` as is, and stores the subscription's id
 * in `*subscription_id`. Returns 0, or BREAKER_INVALID_ARGUMENT for a NULL client, callback or
 * subscription_id. `user_data` must stay valid until breaker_unsubscribe (or
 * breaker_client_free) has returned: the library keeps it, without reading it, and the caller
 * still owns it. Thread-safe; does not block. */
int breaker_subscribe(breaker_client* client, breaker_policy_callback callback, void* user_data,
                      int* subscription_id);

/* Ends a subscription: once this returns, the callback is not running and is not called any
 * more. Called from a policy callback, it does not wait (the running callback returns
 * normally). An unknown id or a NULL client is ignored. Thread-safe; blocks while the callback
 * runs on the library's thread, and only then (a callback that returns quickly bounds it). */
void breaker_unsubscribe(breaker_client* client, int subscription_id);

/* ------------------------------------------------------------------------------------------
 * Statistics. */

/* A sized struct: set `size`. */
typedef struct breaker_stats {
  size_t size;
  /* A stream to breakerd is up. */
  bool connected;
  uint64_t reconnects;
  /* Observations reported, acknowledged by breakerd, waiting (sent or not), dropped when the
   * buffer was full (bids, other non-failures, failures), and refused by breakerd. */
  uint64_t reported;
  uint64_t acknowledged;
  uint64_t buffered;
  uint64_t dropped_bids;
  uint64_t dropped_other;
  uint64_t dropped_failures;
  uint64_t refused;
  /* As breaker_policy_version. */
  uint64_t fleet_policy_version;
  /* A breaker_source. */
  int source;
  /* The node's local engine takes part in the policy in force (source is not
   * BREAKER_SOURCE_FLEET): breakerd unreachable past the staleness limit, not caught up with
   * the node yet, or never reached. Export it from the node's metrics to alert on it. */
  bool fallback_active;
  /* Observations breakerd acknowledged as replays (numbers it had handled already: sent again
   * after a reconnect). */
  uint64_t replayed;
  /* breakerd has handled this node's last sequence number (2^62): observations stay buffered,
   * unsent, until an operator runs `breakerctl reset --node=ID`. Alert on it. */
  bool sequence_exhausted;
  /* The breakerd address of the current (or last) connection, NUL-terminated (truncated to
   * fit); empty before the first. */
  char address[256];
  /* Why the last observation refused was refused: at the call (the message the call
   * returned), or by breakerd ("breakerd refused observation N: ..."); NUL-terminated,
   * truncated to fit; empty when none was. Added after ABI version 1's first layout: a
   * caller whose struct ends before it (`size` = offsetof(breaker_stats, last_refusal)) is
   * served all the same. */
  char last_refusal[256];
} breaker_stats;

/* Fills `*out` with the client's counters and returns 0. A NULL client fills zeros. Returns
 * BREAKER_INVALID_ARGUMENT, writing nothing, for a NULL `out` or an `out->size` too small.
 * Thread-safe; does not block (it takes the library's counters' locks, which no thread holds
 * across I/O); the caller owns `*out`. */
int breaker_get_stats(const breaker_client* client, breaker_stats* out);

/* Returns whether the client is in sync with breakerd: a stream is up, breakerd has
 * acknowledged every observation reported so far (none is buffered), and the policy in force
 * is the fleet's (BREAKER_SOURCE_FLEET). The one definition of "synced" every binding uses: a
 * node waits for it at start, before its first proposal. False for a NULL client.
 * Thread-safe; does not block (as breaker_get_stats). */
bool breaker_is_synced(const breaker_client* client);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CLIENT_C_API_H_ */
