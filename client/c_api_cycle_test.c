/* 1,000 clients started and freed in turn through the C API, each having reported, subscribed
 * and held a policy: the process's resident memory stays flat (a leak of a few hundred bytes a
 * cycle would show), and under ASan (--config=asan) every allocation is returned. No breakerd
 * runs: each client points at a port nothing listens on and tries to connect meanwhile. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/c_api.h"

/* Under AddressSanitizer (its quarantine holds freed memory on purpose) and ThreadSanitizer
 * (its shadow memory grows with every thread started), RSS says nothing of leaks: ASan's leak
 * checker judges then. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

enum { kCycles = 1000, kWarmUp = 100 };
/* Growth allowed over the 900 measured cycles: allocators keep some freed memory, but a leak of
 * one client's threads' stacks or buffers (tens of kilobytes) a cycle is far above it. */
enum { kMaxGrowthKiB = 4096 };

/* The resident set size of this process, from /proc; -1 when unreadable. */
static long rss_kib(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL) return -1;
  long size = 0, resident = 0;
  const int n = fscanf(f, "%ld %ld", &size, &resident);
  fclose(f);
  return n == 2 ? resident * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

static void on_policy(void* user_data, uint64_t fleet_version, int mode, int source) {
  (void)user_data;
  (void)fleet_version;
  (void)mode;
  (void)source;
}

/* One client's life; returns false (having said why) when a call fails. */
static bool cycle(int i) {
  breaker_options* opts = breaker_options_new();
  char node_id[32];
  snprintf(node_id, sizeof(node_id), "cycle-%d", i);
  breaker_error err = {.size = sizeof err};
  breaker_client* client = NULL;
  const bool made = opts != NULL && breaker_options_add_address(opts, "127.0.0.1:1") == 0 &&
                    breaker_options_set_node_id(opts, node_id) == 0 &&
                    breaker_client_new(opts, &client, &err) == 0;
  breaker_options_free(opts);
  if (!made) {
    fprintf(stderr, "cycle %d: breaker_client_new: %s\n", i, client == NULL ? err.message : "");
    return false;
  }
  uint8_t root[32] = {1, 2, 3};
  int subscription = 0;
  /* The mainnet slot now: the client refuses one outside its window. */
  const uint64_t slot = (uint64_t)(time(NULL) - 1606824023) / 12;
  bool ok = breaker_report_bid(client, slot, 7, "relay.example:18550", NULL, 0) == 0 &&
            breaker_report_payload_missing(client, slot, 7, root, 0.9) == 0 &&
            breaker_subscribe(client, on_policy, NULL, &subscription) == 0;
  /* A refusal records its message, which this thread keeps until its next call. */
  ok = ok && breaker_report_blocks_seen(client, slot, NULL, 1) == BREAKER_INVALID_ARGUMENT;
  breaker_policy* policy = breaker_policy_get(client);
  ok = ok && policy != NULL && breaker_policy_is_current(client, policy);
  if (i % 2 == 0) breaker_unsubscribe(client, subscription);
  breaker_client_free(client);
  /* A held policy outlives its client. */
  breaker_policy_info info = {.size = sizeof info};
  ok = ok && breaker_policy_read(policy, &info) == 0 && info.source == BREAKER_SOURCE_LOCAL;
  breaker_policy_free(policy);
  if (!ok) fprintf(stderr, "cycle %d: a call failed\n", i);
  return ok;
}

int main(void) {
  long before = -1;
  for (int i = 0; i < kCycles; ++i) {
    if (!cycle(i)) return 1;
    if (i + 1 == kWarmUp) before = rss_kib();
  }
  const long after = rss_kib();
  printf("RSS after %d cycles: %ld KiB; after %d: %ld KiB (growth %ld KiB)\n", kWarmUp, before,
         kCycles, after, after - before);
#ifdef UNDER_SANITIZER
  return 0;
#else
  if (before < 0 || after < 0) {
    fprintf(stderr, "FAIL: /proc/self/statm is unreadable\n");
    return 1;
  }
  if (after - before > kMaxGrowthKiB) {
    fprintf(stderr, "FAIL: RSS grew by %ld KiB over %d cycles (allowed: %d KiB)\n", after - before,
            kCycles - kWarmUp, kMaxGrowthKiB);
    return 1;
  }
  return 0;
#endif
}
