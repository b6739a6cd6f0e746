#include "service/rpc/run_breakerd.h"

#include <pthread.h>

#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "common/mutex.h"
#include "glog/logging.h"

namespace breaker::service {
namespace {

// What the process acts on, in arrival order: a signal, or a server that stepped down.
class Events {
 public:
  struct Event {
    int signal = 0;  // 0: a step-down
    absl::Status stepped_down;
  };

  void Post(Event event) {
    MutexLock lock(&mu_);
    events_.push_back(std::move(event));
    changed_.SignalAll();
  }

  Event Next() {
    MutexLock lock(&mu_);
    while (events_.empty()) changed_.Wait(&mu_);
    Event event = std::move(events_.front());
    events_.pop_front();
    return event;
  }

 private:
  Mutex mu_;
  CondVar changed_;
  std::deque<Event> events_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

int RunBreakerd(ServerOptions options, const sigset_t& signals) {
  Events events;
  options.on_stepped_down = [&events](const absl::Status& why) { events.Post({0, why}); };
  // Takes the signals until a stop signal, which it posts last.
  std::thread signal_taker([&events, &signals] {
    int signal = 0;
    while (sigwait(&signals, &signal) == 0) {
      events.Post({signal, absl::OkStatus()});
      if (signal != SIGHUP) return;
    }
  });
  int exit_code = 0;
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
  if (!server.ok()) {
    LOG(ERROR) << "breakerd cannot start: " << server.status();
    exit_code = 1;
  }
  while (exit_code == 0) {
    const Events::Event event = events.Next();
    if (event.signal == SIGHUP) {
      // Server::ReloadAccess logs what it did, or why the file in force stays.
      LOG(INFO) << "SIGHUP received: reloading the access file";
      (void)(*server)->ReloadAccess();
      continue;
    }
    if (event.signal != 0) {
      LOG(INFO) << "signal " << event.signal << " received, shutting down";
      (*server)->Shutdown();
      break;
    }
    server->reset();  // the replica that stepped down, its port freed
    if (!absl::IsUnavailable(event.stepped_down)) {
      LOG(ERROR) << "breakerd stops: " << event.stepped_down;
      exit_code = 1;
      break;
    }
    server = Server::Start(options);
    if (!server.ok()) {
      LOG(ERROR) << "breakerd cannot start again after stepping down: " << server.status();
      exit_code = 1;
    }
  }
  // The signal taker ends at a stop signal; one that did not come is sent to it.
  if (exit_code != 0) pthread_kill(signal_taker.native_handle(), SIGTERM);
  signal_taker.join();
  return exit_code;
}

}  // namespace breaker::service
