// The main() of a fuzz target outside libFuzzer: with it, a target's LLVMFuzzerTestOneInput
// runs as an ordinary test under any compiler and sanitizer (see docs/development.md, Fuzzing).
//
//   fuzz_replay [--runs=N] [--seconds=S] [--seed=N] PATH...
//
// Runs the target over every file named, and every file of every directory named (the seed
// corpus and the crash reproducers checked in beside it), then over up to N inputs made from
// them by deterministic mutations (bit flips, byte changes, insertions, deletions, truncation,
// splicing) for at most S seconds. The mutations come from a seeded PRNG, so a run is the
// same sequence of inputs every time; the time limit only cuts it short on a slow machine or
// under a sanitizer. Defaults: --runs=3000 --seconds=10 --seed=1. The environment's
// FUZZ_REPLAY_RUNS, FUZZ_REPLAY_SECONDS and FUZZ_REPLAY_SEED win over the arguments, so that
// `bazel test --test_env=FUZZ_REPLAY_SECONDS=300 ...` changes what a test's own arguments say.
// --runs=0 runs the files only, to reproduce a crash:
// `bazel run //core:engine_fuzzer -- --runs=0 /path/to/crash`.
//
// A target reports a failure by crashing (abort, trap or sanitizer report). The input that
// crashed is then written to $TEST_UNDECLARED_OUTPUTS_DIR/crash-input (under `bazel test`,
// bazel-testlogs/<target>/test.outputs/outputs.zip) or ./crash-input.

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional in a target, as with libFuzzer.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));
// Provided by the sanitizers' runtimes when one is linked in.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

// Mutated inputs stay below this size, as libFuzzer's -max_len keeps them bounded.
constexpr size_t kMaxInputSize = 1 << 16;

// The input being run, for the crash handlers. Written before each run, read only by them.
const uint8_t* volatile g_current_data = nullptr;
volatile size_t g_current_size = 0;
char g_crash_path[4096] = "crash-input";

// Async-signal-safe: only open, write and close.
void SaveCurrentInput() {
  const int fd = ::open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const uint8_t* data = g_current_data;
  size_t left = g_current_size;
  while (data != nullptr && left > 0) {
    const ssize_t written = ::write(fd, data, left);
    if (written <= 0) break;
    data += written;
    left -= static_cast<size_t>(written);
  }
  ::close(fd);
  static const char kMessage[] = "fuzz_replay: the crashing input is saved as ";
  (void)!::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  (void)!::write(STDERR_FILENO, g_crash_path, std::strlen(g_crash_path));
  (void)!::write(STDERR_FILENO, "\n", 1);
}

void OnFatalSignal(int signal_number) {
  SaveCurrentInput();
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

void InstallCrashHandlers() {
  if (const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR"); dir != nullptr) {
    std::snprintf(g_crash_path, sizeof(g_crash_path), "%s/crash-input", dir);
  }
  // An abort or trap is how a target reports a broken invariant.
  for (int signal_number : {SIGABRT, SIGILL, SIGTRAP}) ::signal(signal_number, OnFatalSignal);
  if (__sanitizer_set_death_callback != nullptr) {
    // A sanitizer handles the faults itself (its report is worth more than a bare signal) and
    // calls this on the way out.
    __sanitizer_set_death_callback(SaveCurrentInput);
  } else {
    for (int signal_number : {SIGSEGV, SIGFPE, SIGBUS}) ::signal(signal_number, OnFatalSignal);
  }
}

void Run(const std::vector<uint8_t>& input) {
  // A copy of exactly the input's size, so that an AddressSanitizer build catches a read past
  // its end; never a null pointer, even for an empty input (libFuzzer's convention).
  std::vector<uint8_t> copy(input);
  if (copy.empty()) copy.reserve(1);
  g_current_data = copy.data();
  g_current_size = copy.size();
  LLVMFuzzerTestOneInput(copy.data(), copy.size());
  g_current_data = nullptr;
  g_current_size = 0;
}

bool ReadFile(const std::string& path, std::vector<uint8_t>& contents) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  contents.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  return true;
}

// The regular files named by `path`: itself, or the files of the directory, sorted.
std::vector<std::string> ListInputs(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return {};
  if (!S_ISDIR(info.st_mode)) return {path};
  std::vector<std::string> files;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return {};
  while (const dirent* entry = ::readdir(dir)) {
    const std::string file = path + "/" + entry->d_name;
    // stat, not d_type: in Bazel's runfiles tree the files are symbolic links.
    if (entry->d_name[0] != '.' && ::stat(file.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
      files.push_back(file);
    }
  }
  ::closedir(dir);
  std::sort(files.begin(), files.end());
  return files;
}

// One to four libFuzzer-like mutations of a corpus input, spliced now and then with another.
std::vector<uint8_t> Mutate(const std::vector<std::vector<uint8_t>>& corpus, std::mt19937_64& rng) {
  auto below = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  std::vector<uint8_t> input = corpus[below(corpus.size())];
  static constexpr uint8_t kInteresting[] = {0, 1, 2, '0', '1', 'a', 0x7f, 0x80, 0xfe, 0xff};
  const size_t mutations = 1 + below(4);
  for (size_t m = 0; m < mutations; ++m) {
    switch (below(8)) {
      case 0:  // Flip a bit.
        if (!input.empty()) input[below(input.size())] ^= static_cast<uint8_t>(1u << below(8));
        break;
      case 1:  // Any byte.
        if (!input.empty()) input[below(input.size())] = static_cast<uint8_t>(rng());
        break;
      case 2:  // A byte that often sits at a boundary.
        if (!input.empty()) {
          input[below(input.size())] = kInteresting[below(std::size(kInteresting))];
        }
        break;
      case 3:  // Insert a byte.
        input.insert(input.begin() + static_cast<std::ptrdiff_t>(below(input.size() + 1)),
                     static_cast<uint8_t>(rng()));
        break;
      case 4:  // Erase a few bytes.
        if (!input.empty()) {
          const size_t at = below(input.size());
          const size_t count = std::min(input.size() - at, 1 + below(8));
          input.erase(input.begin() + static_cast<std::ptrdiff_t>(at),
                      input.begin() + static_cast<std::ptrdiff_t>(at + count));
        }
        break;
      case 5:  // Truncate.
        input.resize(below(input.size() + 1));
        break;
      case 6: {  // Splice: a prefix of this input and a suffix of another.
        const std::vector<uint8_t>& other = corpus[below(corpus.size())];
        input.resize(below(input.size() + 1));
        input.insert(input.end(),
                     other.begin() + static_cast<std::ptrdiff_t>(below(other.size() + 1)),
                     other.end());
        break;
      }
      default: {  // Repeat a chunk of the input at another place.
        if (input.empty()) break;
        const size_t from = below(input.size());
        const size_t count = std::min(input.size() - from, 1 + below(32));
        const std::vector<uint8_t> chunk(input.begin() + static_cast<std::ptrdiff_t>(from),
                                         input.begin() + static_cast<std::ptrdiff_t>(from + count));
        input.insert(input.begin() + static_cast<std::ptrdiff_t>(below(input.size() + 1)),
                     chunk.begin(), chunk.end());
        break;
      }
    }
  }
  if (input.size() > kMaxInputSize) input.resize(kMaxInputSize);
  return input;
}

// The environment's `env`, when set, or `value`.
uint64_t FromEnvironment(const char* env, uint64_t value) {
  const char* text = std::getenv(env);
  return text != nullptr && *text != '\0' ? std::strtoull(text, nullptr, 10) : value;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t runs = 3000;
  uint64_t seconds = 10;
  uint64_t seed = 1;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--runs=", 0) == 0) {
      runs = std::strtoull(arg.c_str() + 7, nullptr, 10);
    } else if (arg.rfind("--seconds=", 0) == 0) {
      seconds = std::strtoull(arg.c_str() + 10, nullptr, 10);
    } else if (arg.rfind("--seed=", 0) == 0) {
      seed = std::strtoull(arg.c_str() + 7, nullptr, 10);
    } else {
      paths.push_back(arg);
    }
  }
  runs = FromEnvironment("FUZZ_REPLAY_RUNS", runs);
  seconds = FromEnvironment("FUZZ_REPLAY_SECONDS", seconds);
  seed = FromEnvironment("FUZZ_REPLAY_SEED", seed);
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  InstallCrashHandlers();

  std::vector<std::vector<uint8_t>> corpus;
  for (const std::string& path : paths) {
    const std::vector<std::string> files = ListInputs(path);
    if (files.empty()) {
      std::fprintf(stderr, "fuzz_replay: no input files at '%s'\n", path.c_str());
      return 1;
    }
    for (const std::string& file : files) {
      std::vector<uint8_t> input;
      if (!ReadFile(file, input)) {
        std::fprintf(stderr, "fuzz_replay: cannot read '%s'\n", file.c_str());
        return 1;
      }
      std::fprintf(stderr, "fuzz_replay: %s (%zu bytes)\n", file.c_str(), input.size());
      Run(input);
      corpus.push_back(std::move(input));
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "usage: %s [--runs=N] [--seconds=S] [--seed=N] FILE_OR_DIR...\n", argv[0]);
    return 1;
  }

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::seconds(seconds);
  std::mt19937_64 rng(seed);
  uint64_t done = 0;
  for (; done < runs && std::chrono::steady_clock::now() < deadline; ++done) {
    Run(Mutate(corpus, rng));
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr,
               "fuzz_replay: %zu corpus inputs, then %llu of %llu mutated inputs (seed %llu) in "
               "%.1f s\n",
               corpus.size(), static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(runs), static_cast<unsigned long long>(seed),
               elapsed);
  return 0;
}
