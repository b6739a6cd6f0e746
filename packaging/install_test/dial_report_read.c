/* A beacon node's use of the installed libbreaker-client-dev, built with pkg-config alone:
 * dial breakerd, report a bid, and read the fleet's policy until it bans the builder the
 * operator banned (argv[2]). Exits 0 when it does within 20 seconds. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "client/c_api.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s HOST:PORT BANNED_BUILDER\n", argv[0]);
    return 2;
  }
  const uint64_t banned = strtoull(argv[2], NULL, 10);
  breaker_options* opts = breaker_options_new();
  breaker_options_add_address(opts, argv[1]);
  breaker_options_set_node_id(opts, "installed-c-node");
  breaker_options_set_network(opts, "mainnet");
  breaker_client* client = NULL;
  breaker_error error = {.size = sizeof error};
  if (breaker_client_new(opts, &client, &error) != BREAKER_OK) {
    fprintf(stderr, "breaker_client_new: %s\n", error.message);
    return 1;
  }
  breaker_options_free(opts);
  /* A bid of the current mainnet slot: breakerd refuses observations of long-gone slots. */
  const uint64_t slot = ((uint64_t)time(NULL) - 1606824023u) / 12u;
  if (breaker_report_bid(client, slot, 7, NULL, NULL, 0) != BREAKER_OK) {
    fprintf(stderr, "breaker_report_bid failed\n");
    return 1;
  }
  const struct timespec tenth = {0, 100 * 1000 * 1000};
  for (int i = 0; i < 200; ++i) {
    if (breaker_policy_source(client) == BREAKER_SOURCE_FLEET &&
        !breaker_is_allowed(client, banned, NULL)) {
      printf("policy version %llu from breakerd: builder %llu banned\n",
             (unsigned long long)breaker_policy_version(client), (unsigned long long)banned);
      breaker_client_free(client);
      return 0;
    }
    nanosleep(&tenth, NULL);
  }
  fprintf(stderr, "no fleet policy banning builder %llu within 20 s (source %d)\n",
          (unsigned long long)banned, breaker_policy_source(client));
  breaker_client_free(client);
  return 1;
}
