/* Prints the size of each sized struct of client/c_api.h and the offset of each of its fields,
 * as the C compiler lays them out: "<struct> <size>" then "<struct>.<field> <offset>", one a
 * line. The bindings' layout tests compare their own declarations with these lines. */

#include <stddef.h>
#include <stdio.h>

#include "client/c_api.h"

#define SIZE(type) printf("%s %zu\n", #type, sizeof(type))
#define FIELD(type, field) printf("%s.%s %zu\n", #type, #field, offsetof(type, field))

int main(void) {
  SIZE(breaker_error);
  FIELD(breaker_error, size);
  FIELD(breaker_error, code);
  FIELD(breaker_error, message);

  SIZE(breaker_policy_info);
  FIELD(breaker_policy_info, size);
  FIELD(breaker_policy_info, fleet_version);
  FIELD(breaker_policy_info, mode);
  FIELD(breaker_policy_info, source);
  FIELD(breaker_policy_info, n_banned_builders);
  FIELD(breaker_policy_info, n_trusted_builders);
  FIELD(breaker_policy_info, n_banned_relays);
  FIELD(breaker_policy_info, n_trusted_relays);

  SIZE(breaker_stats);
  FIELD(breaker_stats, size);
  FIELD(breaker_stats, connected);
  FIELD(breaker_stats, reconnects);
  FIELD(breaker_stats, reported);
  FIELD(breaker_stats, acknowledged);
  FIELD(breaker_stats, buffered);
  FIELD(breaker_stats, dropped_bids);
  FIELD(breaker_stats, dropped_other);
  FIELD(breaker_stats, dropped_failures);
  FIELD(breaker_stats, refused);
  FIELD(breaker_stats, fleet_policy_version);
  FIELD(breaker_stats, source);
  FIELD(breaker_stats, fallback_active);
  FIELD(breaker_stats, replayed);
  FIELD(breaker_stats, sequence_exhausted);
  FIELD(breaker_stats, address);
  FIELD(breaker_stats, last_refusal);
  return 0;
}
