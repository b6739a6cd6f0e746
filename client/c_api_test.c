/* Tests of the C API (client/c_api.h), written in C so that the header is compiled as
 * C. No breakerd runs: the client points at a port nothing listens on, keeps retrying in the
 * background, and answers from its local policy. */

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/c_api.h"

static int passed = 0;
static int failed = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      ++passed;                                                                \
    } else {                                                                   \
      ++failed;                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#define CHECK_EQ_U64(a, b)                                                                      \
  do {                                                                                          \
    uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                            \
    if (a_ == b_) {                                                                             \
      ++passed;                                                                                 \
    } else {                                                                                    \
      ++failed;                                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%llu vs %llu)\n", __FILE__, __LINE__, #a, \
              #b, (unsigned long long)a_, (unsigned long long)b_);                              \
    }                                                                                           \
  } while (0)

static const char kAddress[] = "127.0.0.1:1"; /* Nothing listens on port 1. */

/* The mainnet slot now, as the library's clock sees it (a client without a network or a
 * fallback configuration follows mainnet's chain). */
static uint64_t slot_now(void) { return (uint64_t)(time(NULL) - 1606824023) / 12; }

static void fill_root(uint8_t root[32], uint8_t seed) {
  for (int i = 0; i < 32; ++i) root[i] = (uint8_t)(seed + i);
}

static void test_option_setters(void) {
  breaker_options* opts = breaker_options_new();
  CHECK(opts != NULL);
  CHECK(breaker_options_add_address(opts, kAddress) == BREAKER_OK);
  CHECK(breaker_options_set_node_id(opts, "c-node") == BREAKER_OK);
  CHECK(breaker_options_set_network(opts, "mainnet") == BREAKER_OK);
  CHECK(breaker_options_set_client_version(opts, "c-test/1") == BREAKER_OK);
  CHECK(breaker_options_set_max_buffered_observations(opts, 1024) == BREAKER_OK);
  CHECK(breaker_options_set_staleness_limit_seconds(opts, 60.0) == BREAKER_OK);
  CHECK(breaker_options_set_fallback_config_file(opts, "") == BREAKER_OK);

  CHECK(breaker_options_add_address(NULL, kAddress) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_options_add_address(opts, NULL) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_options_set_node_id(opts, NULL) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_options_set_network(opts, NULL) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_options_set_client_version(opts, NULL) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_options_set_max_buffered_observations(NULL, 1) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_options_set_staleness_limit_seconds(opts, -1.0) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_options_set_staleness_limit_seconds(opts, NAN) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_options_set_staleness_limit_seconds(opts, INFINITY) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_options_set_fallback_config_file(opts, NULL) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_options_set_tls(opts, "ca.pem", NULL, NULL) == BREAKER_OK);
  CHECK(breaker_options_set_tls(opts, NULL, NULL, NULL) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_options_set_bearer_token(opts, "token") == BREAKER_OK);
  CHECK(breaker_options_set_bearer_token(opts, NULL) == BREAKER_INVALID_ARGUMENT);

  breaker_options_free(opts);
  breaker_options_free(NULL);
}

static void test_options_errors(void) {
  breaker_error err = {.size = sizeof err};
  breaker_client* client = (breaker_client*)&err; /* Must be overwritten with NULL. */

  /* No address. */
  breaker_options* opts = breaker_options_new();
  CHECK(breaker_options_set_node_id(opts, "c-node") == BREAKER_OK);
  memset(&err, 0, sizeof(err));
  err.size = sizeof(err);
  CHECK(breaker_client_new(opts, &client, &err) == BREAKER_INVALID_ARGUMENT);
  CHECK(client == NULL);
  CHECK(err.code == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "address") != NULL);
  if (strstr(err.message, "address") == NULL) fprintf(stderr, "  message: %s\n", err.message);
  /* The error is optional. */
  CHECK(breaker_client_new(opts, &client, NULL) == BREAKER_INVALID_ARGUMENT);
  breaker_options_free(opts);

  /* No node id. */
  opts = breaker_options_new();
  CHECK(breaker_options_add_address(opts, kAddress) == BREAKER_OK);
  memset(&err, 0, sizeof(err));
  err.size = sizeof(err);
  CHECK(breaker_client_new(opts, &client, &err) == BREAKER_INVALID_ARGUMENT);
  CHECK(client == NULL);
  CHECK(err.code == BREAKER_INVALID_ARGUMENT);
  CHECK(err.message[0] != '\0');

  /* A fallback configuration file that does not exist. */
  CHECK(breaker_options_set_node_id(opts, "c-node") == BREAKER_OK);
  CHECK(breaker_options_set_fallback_config_file(opts, "/nonexistent/breakerd.textproto") ==
        BREAKER_OK);
  memset(&err, 0, sizeof(err));
  err.size = sizeof(err);
  CHECK(breaker_client_new(opts, &client, &err) == BREAKER_NOT_FOUND);
  CHECK(client == NULL);
  CHECK(err.code == BREAKER_NOT_FOUND);
  CHECK(strstr(err.message, "fallback_config_file") != NULL);

  /* A TLS CA file that does not exist, and a certificate without its key. */
  CHECK(breaker_options_set_fallback_config_file(opts, "") == BREAKER_OK);
  CHECK(breaker_options_set_tls(opts, "/nonexistent/ca.pem", NULL, NULL) == BREAKER_OK);
  memset(&err, 0, sizeof(err));
  err.size = sizeof(err);
  CHECK(breaker_client_new(opts, &client, &err) == BREAKER_NOT_FOUND);
  CHECK(client == NULL);
  CHECK(strstr(err.message, "/nonexistent/ca.pem") != NULL);
  CHECK(breaker_options_set_tls(opts, "", "/nonexistent/node.pem", NULL) == BREAKER_OK);
  memset(&err, 0, sizeof(err));
  err.size = sizeof(err);
  CHECK(breaker_client_new(opts, &client, &err) == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "go together") != NULL);
  breaker_options_free(opts);

  /* NULL arguments. */
  memset(&err, 0, sizeof(err));
  err.size = sizeof(err);
  CHECK(breaker_client_new(NULL, &client, &err) == BREAKER_INVALID_ARGUMENT);
  CHECK(err.code == BREAKER_INVALID_ARGUMENT);
  opts = breaker_options_new();
  CHECK(breaker_client_new(opts, NULL, &err) == BREAKER_INVALID_ARGUMENT);
  breaker_options_free(opts);
}

/* Writes `text` to `name` in the test's temporary directory; stores the path in `path`. */
static bool write_temp_file(const char* name, const char* text, char* path, size_t path_size) {
  const char* dir = getenv("TEST_TMPDIR");
  if (dir == NULL || dir[0] == '\0') dir = "/tmp";
  if (snprintf(path, path_size, "%s/%s", dir, name) >= (int)path_size) return false;
  FILE* file = fopen(path, "w");
  if (file == NULL) return false;
  const bool written = fputs(text, file) >= 0;
  return fclose(file) == 0 && written;
}

static void test_fallback_config_file(void) {
  char path[4096];
  breaker_error err = {.size = sizeof err};
  breaker_client* client = NULL;
  breaker_options* opts = breaker_options_new();
  CHECK(breaker_options_add_address(opts, kAddress) == BREAKER_OK);
  CHECK(breaker_options_set_node_id(opts, "c-node") == BREAKER_OK);

  /* A file the loader refuses: the message names the option and the file. */
  CHECK(write_temp_file("bad.textproto", "no_such_field: 1\n", path, sizeof(path)));
  CHECK(breaker_options_set_fallback_config_file(opts, path) == BREAKER_OK);
  memset(&err, 0, sizeof(err));
  err.size = sizeof(err);
  CHECK(breaker_client_new(opts, &client, &err) == BREAKER_INVALID_ARGUMENT);
  CHECK(client == NULL);
  CHECK(strstr(err.message, "fallback_config_file") != NULL);
  /* The path comes first; a long one truncates the rest of the message to fit. */
  CHECK(strstr(err.message, "bad.textproto") != NULL);
  CHECK(strlen(err.message) < sizeof(err.message));

  /* A valid one. */
  CHECK(write_temp_file("good.textproto", "allowed_failures: 1\n", path, sizeof(path)));
  CHECK(breaker_options_set_fallback_config_file(opts, path) == BREAKER_OK);
  memset(&err, 0, sizeof(err));
  err.size = sizeof(err);
  CHECK(breaker_client_new(opts, &client, &err) == BREAKER_OK);
  if (err.code != BREAKER_OK) fprintf(stderr, "  message: %s\n", err.message);
  CHECK(client != NULL);
  CHECK(breaker_policy_source(client) == BREAKER_SOURCE_LOCAL);
  breaker_client_free(client);
  breaker_options_free(opts);
}

/* Counts the callback's calls; it runs on a library thread. */
static atomic_int callback_calls;

static void count_calls(void* user_data, uint64_t fleet_version, int mode, int source) {
  (void)fleet_version;
  (void)mode;
  (void)source;
  atomic_fetch_add((atomic_int*)user_data, 1);
}

static void test_client(void) {
  breaker_options* opts = breaker_options_new();
  CHECK(breaker_options_add_address(opts, kAddress) == BREAKER_OK);
  CHECK(breaker_options_set_node_id(opts, "c-node") == BREAKER_OK);
  breaker_error err = {.size = sizeof err};
  memset(&err, 0x7f, sizeof(err));
  err.size = sizeof(err);
  breaker_client* client = NULL;
  CHECK(breaker_client_new(opts, &client, &err) == BREAKER_OK);
  CHECK(err.code == BREAKER_OK);
  CHECK(err.message[0] == '\0');
  /* The client does not need its options any more. */
  breaker_options_free(opts);
  if (client == NULL) {
    fprintf(stderr, "  breaker_client_new: %d %s\n", err.code, err.message);
    return;
  }

  /* One observation of each kind. */
  const uint64_t slot = slot_now();
  uint8_t root[32];
  fill_root(root, 1);
  uint8_t roots[64];
  fill_root(roots, 2);
  fill_root(roots + 32, 3);
  const uint8_t pubkey[48] = {0xaa, 0xbb};
  CHECK(breaker_report_bid(client, slot, 7, "https://relay.example", pubkey, sizeof(pubkey)) ==
        BREAKER_OK);
  CHECK(breaker_report_payload_missing(client, slot, 7, root, 0.9) == BREAKER_OK);
  CHECK(breaker_report_payload_delivered(client, slot, 7, root) == BREAKER_OK);
  CHECK(breaker_report_blocks_seen(client, slot, roots, 2) == BREAKER_OK);
  CHECK(breaker_report_finalized(client, slot, 30) == BREAKER_OK);
  CHECK(breaker_report_builder_exited(client, slot, 9) == BREAKER_OK);
  /* Another block: breakerd refuses a relay's failure in a block reported for a builder. */
  uint8_t relay_root[32];
  fill_root(relay_root, 4);
  CHECK(breaker_report_relay_reveal_missing(client, slot, "relay.example:18550", relay_root) ==
        BREAKER_OK);
  CHECK(breaker_report_relay_reveal_missing(client, slot, "relay.example:18550", root) ==
        BREAKER_INVALID_ARGUMENT);

  /* Refused arguments queue nothing. */
  CHECK(breaker_report_bid(NULL, slot, 7, NULL, NULL, 0) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_report_bid(client, slot, 7, NULL, NULL, 48) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_report_payload_missing(client, slot, 7, NULL, 0.9) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_report_payload_missing(client, slot, 7, root, 1.5) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_report_payload_missing(client, slot, 7, root, NAN) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_report_payload_delivered(client, slot, 8, NULL) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_report_blocks_seen(client, slot, NULL, 1) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_report_blocks_seen(client, slot, roots, SIZE_MAX) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_report_finalized(NULL, slot, 30) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_report_builder_exited(NULL, slot, 9) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_report_relay_reveal_missing(client, slot, NULL, root) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_report_relay_reveal_missing(client, slot, "relay.example", NULL) ==
        BREAKER_INVALID_ARGUMENT);

  /* No fleet policy: the local engine's, with defaults. */
  CHECK(breaker_is_allowed(client, 12345, NULL));
  CHECK(breaker_is_allowed(client, 12345, ""));
  CHECK(breaker_is_allowed(client, 12345, "https://other-relay.example"));
  CHECK(!breaker_is_allowed(client, 12345, "ftp://relay.example")); /* Not a relay. */
  CHECK(breaker_is_allowed(client, UINT64_MAX, NULL));              /* Self-build, always. */
  CHECK(!breaker_is_allowed(NULL, 12345, NULL));
  CHECK(breaker_mode(client) == BREAKER_MODE_ALL_BUILDERS);
  CHECK(breaker_policy_source(client) == BREAKER_SOURCE_LOCAL);
  CHECK_EQ_U64(breaker_policy_version(client), 0);
  uint64_t banned[4] = {0};
  CHECK_EQ_U64(breaker_banned_builders(client, banned, 4), 0);
  CHECK_EQ_U64(breaker_banned_builders(client, NULL, 0), 0);
  CHECK(breaker_mode(NULL) == 0);
  CHECK(breaker_policy_source(NULL) == 0);

  breaker_stats stats = {.size = sizeof stats};
  memset(&stats, 0x7f, sizeof(stats));
  stats.size = sizeof(stats);
  breaker_get_stats(client, &stats);
  CHECK(!stats.connected);
  CHECK_EQ_U64(stats.reported, 7);
  CHECK_EQ_U64(stats.buffered, 7);
  CHECK_EQ_U64(stats.acknowledged, 0);
  CHECK_EQ_U64(stats.dropped_bids + stats.dropped_other + stats.dropped_failures, 0);
  CHECK_EQ_U64(stats.refused, 0);
  CHECK_EQ_U64(stats.fleet_policy_version, 0);
  CHECK(stats.source == BREAKER_SOURCE_LOCAL);
  /* No fleet policy yet: the local engine's rules are in force. */
  CHECK(stats.fallback_active);
  CHECK(breaker_get_stats(client, NULL) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_get_stats(NULL, &stats) == BREAKER_OK);
  CHECK_EQ_U64(stats.reported, 0);
  CHECK(!stats.fallback_active);
  /* Not connected, observations buffered, the local policy: not in sync. */
  CHECK(!breaker_is_synced(client));
  CHECK(!breaker_is_synced(NULL));
  /* The local policy bans nothing: any relay's header may be taken, but not a non-relay's. */
  CHECK(breaker_is_relay_allowed(client, "relay.example:18550"));
  CHECK(!breaker_is_relay_allowed(client, "ftp://x"));
  CHECK(!breaker_is_relay_allowed(client, NULL));
  CHECK(!breaker_is_relay_allowed(NULL, "relay.example:18550"));

  /* Subscriptions. */
  int id = -1;
  int other_id = -1;
  CHECK(breaker_subscribe(client, count_calls, &callback_calls, &id) == BREAKER_OK);
  CHECK(breaker_subscribe(client, count_calls, &callback_calls, &other_id) == BREAKER_OK);
  CHECK(id != other_id);
  CHECK(breaker_subscribe(client, NULL, NULL, &id) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_subscribe(client, count_calls, NULL, NULL) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_subscribe(NULL, count_calls, NULL, &id) == BREAKER_INVALID_ARGUMENT);
  breaker_unsubscribe(client, id);
  breaker_unsubscribe(client, id); /* Twice: ignored. */
  breaker_unsubscribe(NULL, id);
  /* other_id stays subscribed until the client is freed. */

  breaker_client_free(client);
  breaker_client_free(NULL);
}

/* Every refusal says what was wrong, per thread, through breaker_last_error. */
static void test_last_error(void) {
  breaker_error err = {.size = sizeof err};
  memset(&err, 0x7f, sizeof(err));
  err.size = sizeof(err);
  CHECK(breaker_options_add_address(NULL, kAddress) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_last_error(&err) == BREAKER_INVALID_ARGUMENT);
  CHECK(err.code == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "breaker_options_add_address: options is NULL") != NULL);
  CHECK(breaker_last_error(NULL) == BREAKER_INVALID_ARGUMENT);

  breaker_options* opts = breaker_options_new();
  CHECK(breaker_options_set_staleness_limit_seconds(opts, -2.0) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_last_error(&err) == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "seconds is -2") != NULL);
  /* A success clears it. */
  CHECK(breaker_options_add_address(opts, kAddress) == BREAKER_OK);
  CHECK(breaker_last_error(&err) == BREAKER_OK);
  CHECK(err.message[0] == '\0');
  CHECK(breaker_options_set_node_id(opts, "c-node") == BREAKER_OK);

  breaker_client* client = NULL;
  CHECK(breaker_client_new(opts, &client, NULL) == BREAKER_OK);
  breaker_options_free(opts);
  if (client == NULL) return;

  /* What breakerd would refuse is refused here, in breakerd's words, and queues nothing. */
  const uint64_t slot = slot_now();
  char relay[600];
  memset(relay, 'r', sizeof(relay) - 1);
  relay[sizeof(relay) - 1] = '\0';
  uint8_t root[32];
  fill_root(root, 9);
  CHECK(breaker_report_bid(client, slot, 1, relay, NULL, 0) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_last_error(&err) == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "breaker_report_bid: relay identifier") != NULL);
  CHECK(strstr(err.message, "is 599 bytes; accepted: at most 512 bytes") != NULL);
  CHECK(breaker_report_relay_reveal_missing(client, slot, relay, root) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_report_relay_reveal_missing(client, slot, "", root) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_last_error(&err) == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "relay identifier \"\" is empty") != NULL);
  /* A relay that does not normalize: the message breakerd's engine gives. */
  CHECK(breaker_report_bid(client, slot, 1, "ftp://x", NULL, 0) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_last_error(&err) == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message,
               "breaker_report_bid: relay identifier \"ftp://x\" has unknown "
               "scheme \"ftp\"; accepted: http, https") != NULL);
  /* A stale slot, and one too far ahead, as the library's clock sees them. */
  CHECK(breaker_report_blocks_seen(client, slot - 65, NULL, 0) == BREAKER_OUT_OF_RANGE);
  CHECK(breaker_last_error(&err) == BREAKER_OUT_OF_RANGE);
  CHECK(strstr(err.message, "breaker_report_blocks_seen: observation slot") != NULL);
  CHECK(strstr(err.message, "is older than the amendment window (64 slots") != NULL);
  breaker_stats refused = {.size = sizeof refused};
  CHECK(breaker_get_stats(client, &refused) == BREAKER_OK);
  CHECK(strstr(refused.last_refusal, "older than the amendment window") != NULL);
  CHECK(breaker_report_finalized(client, slot + 3, 1) == BREAKER_OUT_OF_RANGE);
  CHECK(breaker_last_error(&err) == BREAKER_OUT_OF_RANGE);
  CHECK(strstr(err.message, "at most max_future_slots = 2") != NULL);
  CHECK(breaker_report_bid(client, slot - 64, 1, NULL, NULL, 0) == BREAKER_OK);
  const uint8_t short_key[47] = {0};
  CHECK(breaker_report_bid(client, slot, 1, NULL, short_key, sizeof(short_key)) ==
        BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_last_error(&err) == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "bid_seen.builder_pubkey is 47 bytes") != NULL);
  uint8_t roots[65 * 32];
  memset(roots, 1, sizeof(roots));
  CHECK(breaker_report_blocks_seen(client, slot, roots, 65) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_last_error(&err) == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "blocks_seen.block_roots") != NULL);
  CHECK(breaker_report_blocks_seen(client, slot, roots, 64) == BREAKER_OK);
  CHECK(breaker_report_payload_missing(client, slot, 1, root, 2.0) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_last_error(&err) == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "attested_fraction is 2") != NULL);
  CHECK(breaker_report_finalized(NULL, 10, 1) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_last_error(&err) == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "breaker_report_finalized: client is NULL") != NULL);
  CHECK(breaker_subscribe(client, NULL, NULL, NULL) == BREAKER_INVALID_ARGUMENT);
  CHECK(breaker_last_error(&err) == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "callback is NULL") != NULL);

  breaker_stats stats = {.size = sizeof stats};
  breaker_get_stats(client, &stats);
  CHECK_EQ_U64(stats.reported, 2); /* Only the bid 64 slots behind and the 64 roots. */
  CHECK(strstr(stats.last_refusal, "attested_fraction is 2") != NULL);
  CHECK_EQ_U64(stats.replayed, 0);
  CHECK(!stats.sequence_exhausted);
  CHECK(strlen(stats.address) < sizeof(stats.address));
  breaker_client_free(client);
}

/* A held policy: one snapshot for several reads, strings owned by it, alive past its client. */
static void test_policy_handle(void) {
  CHECK(breaker_policy_get(NULL) == NULL);
  breaker_policy_info info = {.size = sizeof info};
  CHECK(breaker_policy_read(NULL, &info) == BREAKER_INVALID_ARGUMENT);
  CHECK_EQ_U64(breaker_policy_banned_builders(NULL, NULL, 0), 0);
  CHECK(breaker_policy_banned_relay(NULL, 0) == NULL);
  CHECK(strcmp(breaker_policy_mode_reason(NULL), "") == 0);
  breaker_policy_free(NULL);

  char path[4096];
  /* The local engine's configuration trusts two builders and a relay. */
  CHECK(write_temp_file("trusting.textproto",
                        "trusted_builders: 40\ntrusted_builders: 3\n"
                        "relays { identifier: \"https://trusted.example\" trusted: true }\n",
                        path, sizeof(path)));
  breaker_options* opts = breaker_options_new();
  CHECK(breaker_options_add_address(opts, kAddress) == BREAKER_OK);
  CHECK(breaker_options_set_node_id(opts, "c-node") == BREAKER_OK);
  CHECK(breaker_options_set_fallback_config_file(opts, path) == BREAKER_OK);
  breaker_client* client = NULL;
  breaker_error err = {.size = sizeof err};
  CHECK(breaker_client_new(opts, &client, &err) == BREAKER_OK);
  breaker_options_free(opts);
  if (client == NULL) {
    fprintf(stderr, "  breaker_client_new: %s\n", err.message);
    return;
  }
  breaker_policy* policy = breaker_policy_get(client);
  CHECK(policy != NULL);
  CHECK(breaker_policy_is_current(client, policy));
  CHECK(!breaker_policy_is_current(client, NULL));
  CHECK(!breaker_policy_is_current(NULL, policy));
  memset(&info, 0x7f, sizeof(info));
  info.size = sizeof(info);
  CHECK(breaker_policy_read(policy, &info) == BREAKER_OK);
  CHECK(breaker_policy_read(policy, NULL) == BREAKER_INVALID_ARGUMENT);
  CHECK_EQ_U64(info.fleet_version, 0);
  CHECK(info.mode == BREAKER_MODE_ALL_BUILDERS);
  CHECK(info.source == BREAKER_SOURCE_LOCAL);
  CHECK_EQ_U64(info.n_banned_builders, 0);
  CHECK_EQ_U64(info.n_banned_relays, 0);
  CHECK_EQ_U64(info.n_trusted_builders, 2);
  CHECK_EQ_U64(info.n_trusted_relays, 1);
  uint64_t trusted[3] = {0, 0, 99};
  CHECK_EQ_U64(breaker_policy_trusted_builders(policy, trusted, 3), 2);
  CHECK_EQ_U64(trusted[0], 3); /* Sorted. */
  CHECK_EQ_U64(trusted[1], 40);
  CHECK_EQ_U64(trusted[2], 99); /* Past the count: untouched. */
  CHECK_EQ_U64(breaker_policy_trusted_builders(policy, trusted, 1), 2);
  const char* relay = breaker_policy_trusted_relay(policy, 0);
  CHECK(relay != NULL && strstr(relay, "trusted.example") != NULL);
  CHECK(breaker_policy_trusted_relay(policy, 1) == NULL);
  CHECK(breaker_policy_banned_relay(policy, 0) == NULL);
  CHECK(strcmp(breaker_policy_mode_reason(policy), "") == 0);

  /* Freed client: the policy and its strings are the caller's until breaker_policy_free. */
  breaker_client_free(client);
  CHECK(relay != NULL && strstr(relay, "trusted.example") != NULL);
  CHECK(breaker_policy_read(policy, &info) == BREAKER_OK);
  CHECK_EQ_U64(info.n_trusted_builders, 2);
  breaker_policy_free(policy);
}

/* A caller built against a newer header, whose breaker_stats has one more field at its end. */
struct newer_stats {
  breaker_stats known;
  uint64_t added_later;
};

/* Sized structs: the library writes the caller's `size` bytes and no more, zeroes what it does
 * not know, and refuses a size that was never set. */
static void test_sized_structs(void) {
  CHECK(breaker_abi_version() == BREAKER_ABI_VERSION);

  struct newer_stats newer;
  memset(&newer, 0x7f, sizeof(newer));
  newer.known.size = sizeof(newer);
  CHECK(breaker_get_stats(NULL, &newer.known) == BREAKER_OK);
  CHECK_EQ_U64(newer.known.size, sizeof(newer)); /* The caller's size is kept. */
  CHECK_EQ_U64(newer.known.reported, 0);
  CHECK_EQ_U64(newer.added_later, 0); /* Unknown to the library: zero. */

  /* `size` not set: refused, nothing written, the message says what to do. */
  breaker_stats unset;
  memset(&unset, 0, sizeof(unset));
  unset.reported = 77;
  CHECK(breaker_get_stats(NULL, &unset) == BREAKER_INVALID_ARGUMENT);
  CHECK_EQ_U64(unset.reported, 77);
  breaker_error err = {.size = sizeof err};
  CHECK(breaker_last_error(&err) == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "set it to sizeof(breaker_stats)") != NULL);

  /* breaker_last_error with an unset size writes nothing and keeps the last error. */
  breaker_error unset_err;
  memset(&unset_err, 0, sizeof(unset_err));
  CHECK(breaker_last_error(&unset_err) == BREAKER_INVALID_ARGUMENT);
  CHECK(unset_err.message[0] == '\0');
  CHECK(breaker_last_error(&err) == BREAKER_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "breaker_get_stats") != NULL);
}

/* A caller built when breaker_stats ended before `last_refusal` (ABI version 1's first layout):
 * the library fills every field that caller knows and writes nothing past them. */
static void test_older_caller(void) {
  union {
    breaker_stats stats;
    unsigned char bytes[sizeof(breaker_stats)];
  } older;
  const size_t older_size = offsetof(breaker_stats, last_refusal);
  memset(&older, 0xab, sizeof(older));
  older.stats.size = older_size;
  CHECK(breaker_get_stats(NULL, &older.stats) == BREAKER_OK);
  CHECK_EQ_U64(older.stats.size, older_size);
  CHECK_EQ_U64(older.stats.reported, 0);
  CHECK(older.stats.address[0] == '\0');
  bool untouched = true;
  for (size_t i = older_size; i < sizeof(older.bytes); ++i) untouched &= older.bytes[i] == 0xab;
  CHECK(untouched);
  /* One byte shorter than that layout is no layout of the struct. */
  older.stats.size = older_size - 1;
  CHECK(breaker_get_stats(NULL, &older.stats) == BREAKER_INVALID_ARGUMENT);
}

int main(void) {
  test_sized_structs();
  test_older_caller();
  test_last_error();
  test_policy_handle();
  test_option_setters();
  test_options_errors();
  test_fallback_config_file();
  test_client();
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
