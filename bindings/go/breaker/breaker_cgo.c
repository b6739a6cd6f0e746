// The C side of package breaker: calls that read the thread's last error in the same native
// call, and the policy callback's trampoline into Go. Compiled by cgo with the package.

#include "breaker_cgo.h"

#include "_cgo_export.h"

// Each wrapper below reads the thread's last error in the same native call as the function
// that failed: the Go scheduler may run a goroutine's next cgo call on another thread.
static int with_error(int code, breaker_error* err) {
  if (code != BREAKER_OK) breaker_last_error(err);
  return code;
}

int go_report_bid(breaker_client* c, uint64_t slot, uint64_t builder, const char* relay,
                  const uint8_t* pubkey, size_t pubkey_len, breaker_error* err) {
  return with_error(breaker_report_bid(c, slot, builder, relay, pubkey, pubkey_len), err);
}
int go_report_payload_missing(breaker_client* c, uint64_t slot, uint64_t builder,
                              const uint8_t* root, double fraction, breaker_error* err) {
  return with_error(breaker_report_payload_missing(c, slot, builder, root, fraction), err);
}
int go_report_payload_delivered(breaker_client* c, uint64_t slot, uint64_t builder,
                                const uint8_t* root, breaker_error* err) {
  return with_error(breaker_report_payload_delivered(c, slot, builder, root), err);
}
int go_report_blocks_seen(breaker_client* c, uint64_t slot, const uint8_t* roots, size_t n,
                          breaker_error* err) {
  return with_error(breaker_report_blocks_seen(c, slot, roots, n), err);
}
int go_report_finalized(breaker_client* c, uint64_t slot, uint64_t epoch, breaker_error* err) {
  return with_error(breaker_report_finalized(c, slot, epoch), err);
}
int go_report_builder_exited(breaker_client* c, uint64_t slot, uint64_t builder,
                             breaker_error* err) {
  return with_error(breaker_report_builder_exited(c, slot, builder), err);
}
int go_report_relay_reveal_missing(breaker_client* c, uint64_t slot, const char* relay,
                                   const uint8_t* root, breaker_error* err) {
  return with_error(breaker_report_relay_reveal_missing(c, slot, relay, root), err);
}

// The policy callback: the library calls it on its own thread with the cgo.Handle of the
// Client as user_data (an integer, not a Go pointer, so C keeps no Go memory).
static void policy_trampoline(void* user_data, uint64_t version, int mode, int source) {
  (void)version;
  (void)mode;
  (void)source;
  goPolicyChanged((uintptr_t)user_data);
}
int go_subscribe(breaker_client* c, uintptr_t handle, int* id, breaker_error* err) {
  return with_error(breaker_subscribe(c, policy_trampoline, (void*)handle, id), err);
}

// The hot reads take the handles as integers: cgo then checks no pointer, and allocates
// nothing, at each call (both point to C memory, which Go's collector never moves).
bool go_policy_is_current(uintptr_t client, uintptr_t policy) {
  return breaker_policy_is_current((const breaker_client*)client, (const breaker_policy*)policy);
}

bool go_is_allowed(uintptr_t client, uint64_t builder, uintptr_t relay_or_null) {
  return breaker_is_allowed((const breaker_client*)client, builder, (const char*)relay_or_null);
}

// The log callback: the library calls it on the client's log thread with the cgo.Handle of the
// Options.Log function as user_data.
static void log_trampoline(void* user_data, int level, const char* message) {
  goLog((uintptr_t)user_data, level, (char*)message);
}
int go_options_set_log(breaker_options* o, uintptr_t handle) {
  return breaker_options_set_log_callback(o, log_trampoline, (void*)handle);
}
