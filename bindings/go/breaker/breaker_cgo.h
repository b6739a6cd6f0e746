#ifndef BINDINGS_GO_BREAKER_BREAKER_CGO_H_
#define BINDINGS_GO_BREAKER_BREAKER_CGO_H_

// The helpers package breaker's Go files call (breaker_cgo.c): each is the C API function of
// the same name after "go_", and fills `err` from breaker_last_error when it fails.

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The package's own copy of client/c_api.h, so that a vendored copy of the package builds
// wherever it lies (//bindings:go_test checks that the two are the same).
#include "c_api.h"

int go_report_bid(breaker_client* c, uint64_t slot, uint64_t builder, const char* relay,
                  const uint8_t* pubkey, size_t pubkey_len, breaker_error* err);
int go_report_payload_missing(breaker_client* c, uint64_t slot, uint64_t builder,
                              const uint8_t* root, double fraction, breaker_error* err);
int go_report_payload_delivered(breaker_client* c, uint64_t slot, uint64_t builder,
                                const uint8_t* root, breaker_error* err);
int go_report_blocks_seen(breaker_client* c, uint64_t slot, const uint8_t* roots, size_t n,
                          breaker_error* err);
int go_report_finalized(breaker_client* c, uint64_t slot, uint64_t epoch, breaker_error* err);
int go_report_builder_exited(breaker_client* c, uint64_t slot, uint64_t builder,
                             breaker_error* err);
int go_report_relay_reveal_missing(breaker_client* c, uint64_t slot, const char* relay,
                                   const uint8_t* root, breaker_error* err);
// Subscribes the Client whose cgo.Handle is `handle`: the library calls goPolicyChanged with
// it, on the library's thread, at every new policy in force.
int go_subscribe(breaker_client* c, uintptr_t handle, int* id, breaker_error* err);
// Sends the library's log lines to the Options.Log function whose cgo.Handle is `handle`: the
// library calls goLog with it, on the client's log thread.
int go_options_set_log(breaker_options* o, uintptr_t handle);
// breaker_policy_is_current and breaker_is_allowed, over handles passed as integers.
bool go_policy_is_current(uintptr_t client, uintptr_t policy);
bool go_is_allowed(uintptr_t client, uint64_t builder, uintptr_t relay_or_null);

#endif  // BINDINGS_GO_BREAKER_BREAKER_CGO_H_
