/* The library's log lines: without a callback it writes nothing to stderr while breakerd is
 * merely unreachable (no line at start, none per connection attempt, no glog banner); with one,
 * every line goes to the callback, on the client's log thread, and still nothing to stderr.
 * The test points its own stderr at a file and reads it back. */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/c_api.h"

static int failed = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++failed;                                                                \
      fprintf(stdout, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* The lines the callback received. */
struct captured {
  pthread_mutex_t mu;
  int lines;
  int info_about_address;
  pthread_t thread;
  bool other_thread;
  char last[512];
};

static void on_log(void* user_data, int level, const char* message) {
  struct captured* c = user_data;
  pthread_mutex_lock(&c->mu);
  ++c->lines;
  if (level == BREAKER_LOG_INFO && strstr(message, "breakerd at 127.0.0.1:1") != NULL) {
    ++c->info_about_address;
  }
  c->other_thread = !pthread_equal(pthread_self(), c->thread);
  snprintf(c->last, sizeof(c->last), "%s", message);
  pthread_mutex_unlock(&c->mu);
}

static breaker_client* start(const char* node_id, struct captured* c) {
  breaker_options* opts = breaker_options_new();
  CHECK(breaker_options_add_address(opts, "127.0.0.1:1") == BREAKER_OK);
  CHECK(breaker_options_set_node_id(opts, node_id) == BREAKER_OK);
  if (c != NULL) CHECK(breaker_options_set_log_callback(opts, on_log, c) == BREAKER_OK);
  breaker_client* client = NULL;
  CHECK(breaker_client_new(opts, &client, NULL) == BREAKER_OK);
  breaker_options_free(opts);
  return client;
}

/* Waits until the client has failed to connect at least once. */
static void await_a_failed_attempt(breaker_client* client) {
  breaker_stats stats = {.size = sizeof stats};
  for (int i = 0; i < 1000 && stats.reconnects == 0; ++i) {
    sleep_ms(10);
    breaker_get_stats(client, &stats);
  }
  CHECK(stats.reconnects > 0);
}

static long file_size(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

int main(void) {
  const char* dir = getenv("TEST_TMPDIR");
  char path[4096];
  snprintf(path, sizeof(path), "%s/stderr.txt", dir != NULL ? dir : "/tmp");
  fflush(stderr);
  const int saved_stderr = dup(2);
  CHECK(freopen(path, "w", stderr) != NULL);

  /* No callback: quiet. */
  breaker_client* quiet = start("quiet-node", NULL);
  const uint64_t slot = (uint64_t)(time(NULL) - 1606824023) / 12;
  CHECK(breaker_report_bid(quiet, slot, 1, NULL, NULL, 0) == BREAKER_OK);
  await_a_failed_attempt(quiet);
  breaker_client_free(quiet);
  fflush(stderr);
  const long quiet_bytes = file_size(path);

  /* A callback: every line to it, on the log thread. */
  struct captured c;
  memset(&c, 0, sizeof(c));
  pthread_mutex_init(&c.mu, NULL);
  c.thread = pthread_self();
  breaker_client* logged = start("logged-node", &c);
  await_a_failed_attempt(logged);
  int info = 0;
  for (int i = 0; i < 1000 && info == 0; ++i) {
    pthread_mutex_lock(&c.mu);
    info = c.info_about_address;
    pthread_mutex_unlock(&c.mu);
    if (info == 0) sleep_ms(10);
  }
  breaker_client_free(logged);
  fflush(stderr);
  const long logged_bytes = file_size(path);

  dup2(saved_stderr, 2);
  CHECK(quiet_bytes == 0);
  CHECK(logged_bytes == 0);
  if (quiet_bytes != 0 || logged_bytes != 0) {
    FILE* f = fopen(path, "r");
    char line[1024];
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) printf("  stderr: %s", line);
    if (f != NULL) fclose(f);
  }
  CHECK(info > 0);
  CHECK(c.other_thread);
  printf("callback lines: %d (last: %s)\n", c.lines, c.last);
  printf("%s\n", failed == 0 ? "PASS" : "FAIL");
  return failed == 0 ? 0 : 1;
}
