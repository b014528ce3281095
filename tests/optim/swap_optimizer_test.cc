// The swap optimizer against the in-memory AdamW: bitwise-identical state and bf16 weights over
// many steps for odd sizes, several chunk sizes, 2 and 3 slots, both I/O back ends and O_DIRECT;
// resident memory bounded by its slots (from the allocator accounting, not timings); one-line
// errors for bad options; an I/O error mid-step (the swap file cut under it) surfaces and leaves
// the optimizer refusing further steps.
#include "trex/optim/swap_optimizer.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "trex/optim/adamw.h"
#include "trex/util/error.h"
#include "trex/util/io_error.h"

namespace trex::optim {
namespace {

namespace fs = std::filesystem;

// Three groups of odd sizes with different hyperparameters (the middle one without decay).
std::vector<ParamGroup> test_groups() {
  return {{"blocks", 5003, {1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f}},
          {"norms", 17, {1e-3f, 0.9f, 0.999f, 1e-8f, 0.f}},
          {"experts", 12007, {3e-3f, 0.8f, 0.95f, 1e-6f, 0.01f}}};
}

std::vector<float> normal(int64_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("trex_swap_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// The one-line message of the InputError that f() throws ("" when none).
template <class F>
std::string input_error(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<float> state_of(Optimizer& o, StateArray a) {
  std::vector<float> v(static_cast<size_t>(o.num_params()));
  o.read_state(a, 0, o.num_params(), v.data());
  return v;
}

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// Steps both optimizers `steps` times with the same gradients (new ones every step) and checks
// that weights and all three state arrays stay byte-identical.
void expect_lockstep(Optimizer& want, Optimizer& got, int steps, uint32_t seed,
                     const std::string& tag) {
  int64_t n = want.num_params();
  std::vector<core::bf16> w1(static_cast<size_t>(n)), w2(static_cast<size_t>(n));
  for (int t = 0; t < steps; ++t) {
    // Gradients with a large spread, and a few exact zeros.
    std::vector<float> g = normal(n, seed + uint32_t(t), t % 3 == 0 ? 10.f : 0.01f);
    for (int64_t i = 0; i < n; i += 97) g[size_t(i)] = 0.f;
    want.step(g.data(), w1.data());
    std::fill(w2.begin(), w2.end(), core::bf16{0x7fc1});
    got.step(g.data(), w2.data());
    ASSERT_EQ(std::memcmp(w1.data(), w2.data(), w1.size() * 2), 0) << tag << " step " << t;
  }
  EXPECT_EQ(got.step_count(), want.step_count());
  for (StateArray a : {StateArray::kMaster, StateArray::kExpAvg, StateArray::kExpAvgSq})
    EXPECT_TRUE(same(state_of(want, a), state_of(got, a))) << tag << " array " << int(a);
}

TEST(SwapOptimizer, BitIdenticalToInMemoryAdamW) {
  auto groups = test_groups();
  int64_t n = 5003 + 17 + 12007;
  std::vector<float> init = normal(n, 1, 0.5f);
  struct Config {
    int64_t chunk;
    int slots;
    IoBackend backend;
  };
  // 1024 and 3000 (-> 3072): many chunks crossing group boundaries; 5000 -> 5120; one chunk.
  const Config configs[] = {{1024, 3, IoBackend::kAuto},  {3000, 2, IoBackend::kAuto},
                            {5000, 3, IoBackend::kPread}, {1024, 2, IoBackend::kPread},
                            {1 << 20, 3, IoBackend::kAuto}, {INT64_MAX, 2, IoBackend::kAuto},
                            {1024, 3, IoBackend::kMmap},  {3000, 2, IoBackend::kMmap}};
  for (const Config& c : configs) {
    AdamW mem(groups, init.data());
    SwapOptions o;
    o.path = temp_path("eq.swap");
    o.chunk_elems = c.chunk;
    o.slots = c.slots;
    o.backend = c.backend;
    SwapOptimizer swap(groups, init.data(), o);
    std::string tag = "chunk " + std::to_string(swap.chunk_elems()) + " slots " +
                      std::to_string(swap.slots()) + " " + to_string(swap.backend());
    // A chunk larger than the parameters shrinks to them: one chunk, one slot.
    if (c.chunk > n) {
      EXPECT_EQ(swap.chunk_elems(), 17408) << tag;
    }
    std::printf("  %s (%lld chunks)%s%s\n", tag.c_str(), (long long)swap.num_chunks(),
                swap.fallback_reason().empty() ? "" : ": ", swap.fallback_reason().c_str());
    expect_lockstep(mem, swap, 25, 100, tag);
  }
}

TEST(SwapOptimizer, DirectIoIsBitIdenticalToo) {
  auto groups = test_groups();
  std::vector<float> init = normal(5003 + 17 + 12007, 2, 0.5f);
  AdamW mem(groups, init.data());
  SwapOptions o;
  o.path = temp_path("direct.swap");
  o.chunk_elems = 4096;
  o.direct = true;
  SwapOptimizer swap(groups, init.data(), o);
  std::printf("  O_DIRECT %s, backend %s%s%s\n", swap.direct() ? "on" : "refused",
              to_string(swap.backend()), swap.fallback_reason().empty() ? "" : ": ",
              swap.fallback_reason().c_str());
  expect_lockstep(mem, swap, 5, 200, "direct");
}

TEST(SwapOptimizer, ResidentMemoryBoundedBySlots) {
  auto groups = test_groups();
  int64_t n = 5003 + 17 + 12007;
  std::vector<float> init = normal(n, 3, 0.5f);
  AdamW mem(groups, init.data());
  EXPECT_EQ(mem.memory().current(), size_t(12 * n));
  for (int slots : {2, 3}) {
    SwapOptions o;
    o.path = temp_path("mem.swap");
    o.chunk_elems = 2048;
    o.slots = slots;
    SwapOptimizer swap(groups, init.data(), o);
    std::vector<float> g = normal(n, 4, 1.f);
    std::vector<core::bf16> w(static_cast<size_t>(n));
    for (int t = 0; t < 3; ++t) swap.step(g.data(), w.data());
    std::string ckpt = temp_path("mem.safetensors");
    swap.save_state(ckpt);
    swap.load_state(ckpt);
    fs::remove(ckpt);
    EXPECT_EQ(swap.buffer_bytes(), size_t(slots) * 12 * 2048);
    EXPECT_EQ(swap.memory().peak(), swap.buffer_bytes()) << slots << " slots";
    EXPECT_LT(swap.memory().peak(), size_t(12 * n) / 2) << slots << " slots";
  }
  // A chunk from a memory budget fits the budget.
  int64_t c = SwapOptimizer::chunk_elems_for_budget(size_t(64) << 20, 3);
  EXPECT_EQ(c % 1024, 0);
  EXPECT_LE(size_t(3 * 12 * c), size_t(64) << 20);
  EXPECT_GT(size_t(3 * 12 * (c + 1024)), size_t(64) << 20);
  EXPECT_EQ(SwapOptimizer::chunk_elems_for_budget(1000, 3), 0);
}

TEST(SwapOptimizer, StatsAccountForEveryChunk) {
  auto groups = test_groups();
  int64_t n = 5003 + 17 + 12007;
  std::vector<float> init = normal(n, 5, 0.5f), g = normal(n, 6, 1.f);
  SwapOptions o;
  o.path = temp_path("stats.swap");
  o.chunk_elems = 1024;
  SwapOptimizer swap(groups, init.data(), o);
  swap.step(g.data(), nullptr);
  swap.step(g.data(), nullptr);
  const SwapStats& s = swap.last_step();
  EXPECT_EQ(s.bytes_read, uint64_t(swap.num_chunks()) * 12 * 1024);
  EXPECT_EQ(s.bytes_written, s.bytes_read);
  EXPECT_EQ(swap.total().steps, 2);
  EXPECT_EQ(swap.total().bytes_read, 2 * s.bytes_read);
  EXPECT_GE(s.hidden_fraction(), 0.0);
  EXPECT_LE(s.hidden_fraction(), 1.0);
  EXPECT_TRUE(swap.backend() == IoBackend::kIoUring || swap.backend() == IoBackend::kPread);
  std::printf("  backend %s; hidden %.0f%% of %.2f ms I/O\n", to_string(swap.backend()),
              100 * s.hidden_fraction(), 1e3 * s.io_s);
}

// Where io_uring cannot be set up (simulated with TREX_DISABLE_IO_URING), kAuto falls back to
// pread/pwrite and says why, the results stay bit-identical, and kIoUring is refused.
TEST(SwapOptimizer, FallsBackToPreadWithoutIoUring) {
  auto groups = test_groups();
  int64_t n = 5003 + 17 + 12007;
  std::vector<float> init = normal(n, 9, 0.5f);
  ::setenv("TREX_DISABLE_IO_URING", "1", 1);
  SwapOptions o;
  o.path = temp_path("fallback.swap");
  o.chunk_elems = 2048;
  std::string forced;
  {
    SwapOptimizer swap(groups, init.data(), o);
    EXPECT_EQ(swap.backend(), IoBackend::kPread);
    EXPECT_NE(swap.fallback_reason().find("io_uring unavailable (disabled by TREX_DISABLE_IO_URING)"),
              std::string::npos)
        << swap.fallback_reason();
    AdamW mem(groups, init.data());
    expect_lockstep(mem, swap, 3, 300, "fallback");
    // A second optimizer on the same path must not clobber the live swap file.
    std::string clash = input_error([&] { SwapOptimizer s2(groups, init.data(), o); });
    EXPECT_NE(clash.find("already exists"), std::string::npos) << clash;
    expect_lockstep(mem, swap, 1, 400, "after clash");
    o.backend = IoBackend::kIoUring;
    o.path = temp_path("forced.swap");
    forced = input_error([&] { SwapOptimizer s2(groups, init.data(), o); });
  }
  ::unsetenv("TREX_DISABLE_IO_URING");
  EXPECT_NE(forced.find("io_uring is not available here"), std::string::npos) << forced;
  EXPECT_FALSE(fs::exists(o.path));
}

// A filesystem that refuses O_DIRECT (simulated with TREX_REFUSE_O_DIRECT): the file is opened
// buffered, the reason is reported, and the updates stay bit-identical to in-memory AdamW.
TEST(SwapOptimizer, FallsBackToBufferedWithoutODirect) {
  auto groups = test_groups();
  int64_t n = 5003 + 17 + 12007;
  std::vector<float> init = normal(n, 11, 0.5f);
  ::setenv("TREX_REFUSE_O_DIRECT", "1", 1);
  SwapOptions o;
  o.path = temp_path("no_direct.swap");
  o.chunk_elems = 2048;
  o.direct = true;
  {
    SwapOptimizer swap(groups, init.data(), o);
    EXPECT_FALSE(swap.direct());
    EXPECT_NE(swap.fallback_reason().find("O_DIRECT refused by the filesystem"), std::string::npos)
        << swap.fallback_reason();
    AdamW mem(groups, init.data());
    expect_lockstep(mem, swap, 3, 300, "buffered fallback");
  }
  ::unsetenv("TREX_REFUSE_O_DIRECT");
  EXPECT_FALSE(fs::exists(o.path));
}

// The mmap back end is explicit, never combined with O_DIRECT, and cleans up after itself.
TEST(SwapOptimizer, MmapBackend) {
  auto groups = test_groups();
  std::vector<float> init(5003 + 17 + 12007, 0.5f);
  SwapOptions o;
  o.path = temp_path("mmap.swap");
  o.chunk_elems = 4096;
  o.backend = IoBackend::kMmap;
  {
    SwapOptimizer s(groups, init.data(), o);
    EXPECT_EQ(s.backend(), IoBackend::kMmap);
    EXPECT_STREQ(to_string(s.backend()), "mmap");
    EXPECT_EQ(s.memory().peak(), s.buffer_bytes());
  }
  EXPECT_FALSE(fs::exists(o.path));
  o.direct = true;
  std::string e = input_error([&] { SwapOptimizer s(groups, init.data(), o); });
  // Where the filesystem refuses O_DIRECT the file opens buffered and mmap is fine.
  if (!e.empty()) {
    EXPECT_NE(e.find("cannot be combined with direct I/O"), std::string::npos) << e;
  }
  EXPECT_FALSE(fs::exists(o.path));
}

// The hidden share from its definition: (io - wait) / io, within [0, 1].
TEST(SwapOptimizer, HiddenFractionDefinition) {
  SwapStats s;
  EXPECT_EQ(s.hidden_fraction(), 1.0);  // no I/O: nothing exposed
  s.io_s = 2.0;
  s.wait_s = 0.5;
  EXPECT_DOUBLE_EQ(s.hidden_fraction(), 0.75);
  s.wait_s = 3.0;
  EXPECT_EQ(s.hidden_fraction(), 0.0);
}

TEST(SwapOptimizer, BadOptionsGiveOneLineErrors) {
  auto groups = test_groups();
  std::vector<float> init(5003 + 17 + 12007, 0.f);
  auto make = [&](int64_t chunk, int slots, const std::string& path) {
    SwapOptions o;
    o.path = path;
    o.chunk_elems = chunk;
    o.slots = slots;
    SwapOptimizer s(groups, init.data(), o);
  };
  std::string e = input_error([&] { make(0, 3, temp_path("bad.swap")); });
  EXPECT_NE(e.find("chunk_elems: must be at least 1, got 0"), std::string::npos) << e;
  e = input_error([&] { make(1024, 1, temp_path("bad.swap")); });
  EXPECT_NE(e.find("slots"), std::string::npos) << e;
  std::string bad = "/nonexistent-dir/trex/state.swap";
  e = input_error([&] { make(1024, 3, bad); });
  EXPECT_NE(e.find(bad), std::string::npos) << e;
  EXPECT_NE(e.find("cannot create the swap file"), std::string::npos) << e;
  e = input_error([&] { make(1024, 3, ""); });
  EXPECT_NE(e.find("path"), std::string::npos) << e;
  for (const std::string& msg : {e}) EXPECT_EQ(msg.find('\n'), std::string::npos);
  e = input_error([&] { AdamW a({{"x", 0, {}}}, init.data()); });
  EXPECT_NE(e.find("size must be positive"), std::string::npos) << e;
  e = input_error([&] { AdamW a({{"x", 3, {}}, {"x", 3, {}}}, init.data()); });
  EXPECT_NE(e.find("given twice"), std::string::npos) << e;
  e = input_error([&] { AdamW a({{"x", 3, {1e-3f, 1.f, 0.999f, 1e-8f, 0.f}}}, init.data()); });
  EXPECT_NE(e.find("out of range"), std::string::npos) << e;
}

TEST(SwapOptimizer, SwapFileLivesWithTheOptimizer) {
  auto groups = test_groups();
  std::vector<float> init(5003 + 17 + 12007, 1.f);
  SwapOptions o;
  o.path = temp_path("life.swap");
  o.chunk_elems = 1024;
  {
    SwapOptimizer s(groups, init.data(), o);
    EXPECT_TRUE(fs::exists(o.path));
    // Two copies of the state: the committed one and the one a step writes.
    EXPECT_EQ(fs::file_size(o.path), 2 * uint64_t(s.num_chunks()) * 12 * 1024);
  }
  EXPECT_FALSE(fs::exists(o.path));
}

// The reservation refused by the kernel, for real: a forked child whose file size limit
// (RLIMIT_FSIZE, SIGXFSZ ignored as trex does) is below the swap file's size, so posix_fallocate
// fails with EFBIG as a full disk fails it with ENOSPC. That is the system refusing a write, as
// one mid-run is: an IoError naming the file and the cause (not an InputError), and no file left.
// The child reports what it caught through a pipe: the kind, then the message.
TEST(SwapOptimizer, ReservationRefusedIsAnIoErrorAndLeavesNothing) {
  auto groups = test_groups();
  std::vector<float> init(5003 + 17 + 12007, 1.f);
  SwapOptions o;
  o.path = temp_path("reserve.swap");
  o.chunk_elems = 1024;
  fs::remove(o.path);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{rlim_t(64) << 10, rlim_t(64) << 10};  // 64 KiB; the file needs 408 KiB
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(3);
    std::string got = "none\n";
    try {
      SwapOptimizer s(groups, init.data(), o);
    } catch (const IoError& e) {
      got = std::string("IoError\n") + e.what();
    } catch (const InputError& e) {
      got = std::string("InputError\n") + e.what();
    } catch (const std::exception& e) {
      got = std::string("other\n") + e.what();
    }
    ssize_t w = ::write(fds[1], got.data(), got.size());
    ::_exit(w == ssize_t(got.size()) ? 0 : 4);
  }
  ::close(fds[1]);
  std::string got;
  char buf[512];
  for (ssize_t r; (r = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(r));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status << ": " << got;
  const size_t nl = got.find('\n');
  ASSERT_NE(nl, std::string::npos) << got;
  EXPECT_EQ(got.substr(0, nl), "IoError") << got;
  const std::string msg = got.substr(nl + 1);
  // Two copies of 17 chunks of 1024 elements, 12 bytes each.
  EXPECT_EQ(msg, o.path + ": cannot reserve " + std::to_string(2 * 17 * 12 * 1024) +
                     " bytes for the swap file: File too large");
  EXPECT_FALSE(fs::exists(o.path)) << "the refused swap file was left behind";
}

// The swap file cut to nothing under a running optimizer: the step fails with the file named,
// and the optimizer refuses to go on (its state is no longer trustworthy). Not for kMmap, where
// the kernel answers such a cut with SIGBUS (documented in swap_file.h).
TEST(SwapOptimizer, IoErrorMidStepSurfaces) {
  auto groups = test_groups();
  int64_t n = 5003 + 17 + 12007;
  std::vector<float> init = normal(n, 7, 0.5f), g = normal(n, 8, 1.f);
  for (IoBackend b : {IoBackend::kPread, IoBackend::kAuto}) {
    SwapOptions o;
    o.path = temp_path("cut.swap");
    o.chunk_elems = 1024;
    o.backend = b;
    SwapOptimizer swap(groups, init.data(), o);
    swap.step(g.data(), nullptr);
    ASSERT_EQ(::truncate(o.path.c_str(), 0), 0);
    std::string what;
    try {
      swap.step(g.data(), nullptr);
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    EXPECT_NE(what.find(o.path), std::string::npos) << to_string(swap.backend()) << ": " << what;
    EXPECT_NE(what.find("read failed at offset "), std::string::npos) << what;
    EXPECT_THROW(swap.step(g.data(), nullptr), std::runtime_error);
  }
  // The same during a streamed step: finish_step reports it, with the file and the offset.
  SwapOptions o;
  o.path = temp_path("cut2.swap");
  o.chunk_elems = 1024;
  SwapOptimizer swap(groups, init.data(), o);
  ASSERT_EQ(::truncate(o.path.c_str(), 0), 0);
  std::string what;
  try {
    swap.begin_step(g.data(), nullptr);
    swap.grads_final(0, n);
    swap.finish_step();
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find(o.path + ": swap read failed at offset "), std::string::npos) << what;
}

}  // namespace
}  // namespace trex::optim

namespace trex::optim {
namespace {

// The gradient declared final piece by piece, in an order unlike the chunk order (a backward's
// ranges, shuffled), with a clipping scale applied inside: weights and state stay byte-identical
// to the in-memory AdamW stepping the pre-scaled gradient; a finished step discarded leaves the
// state as it was, and its redo with another scale matches too.
TEST(SwapOptimizer, StreamedStepEqualsAdamWInAnyOrder) {
  auto groups = test_groups();
  int64_t n = 5003 + 17 + 12007;
  std::vector<float> init = normal(n, 21, 0.5f);
  AdamW want(groups, init.data());
  SwapOptions o;
  o.path = temp_path("stream.swap");
  o.chunk_elems = 2048;
  SwapOptimizer got(groups, init.data(), o);
  std::mt19937 rng(5);
  std::vector<core::bf16> w1(static_cast<size_t>(n)), w2(static_cast<size_t>(n));
  for (int t = 0; t < 5; ++t) {
    std::vector<float> g = normal(n, 100 + uint32_t(t), t % 2 ? 3.f : 0.02f);
    float scale = t % 2 ? 0.37f : 1.0f;
    // Pieces of odd sizes, declared in a shuffled order.
    std::vector<std::pair<int64_t, int64_t>> pieces;
    for (int64_t lo = 0; lo < n;) {
      int64_t hi = std::min(n, lo + 1 + int64_t(rng() % 3000));
      pieces.push_back({lo, hi});
      lo = hi;
    }
    std::shuffle(pieces.begin(), pieces.end(), rng);
    if (t == 2) {
      // A speculative step thrown away: nothing of it may remain.
      got.begin_step(g.data(), w2.data());
      got.grads_final(0, n);
      got.finish_step();
      got.discard_step();
      EXPECT_EQ(got.step_count(), want.step_count());
      for (StateArray a : {StateArray::kMaster, StateArray::kExpAvg, StateArray::kExpAvgSq})
        EXPECT_TRUE(same(state_of(want, a), state_of(got, a))) << "after discard, array " << int(a);
    }
    got.begin_step(g.data(), w2.data(), scale);
    for (auto [lo, hi] : pieces) got.grads_final(lo, hi);
    got.finish_step();
    got.commit_step();
    std::vector<float> gs = g;
    if (scale != 1.0f)
      for (float& x : gs) x *= scale;
    want.step(gs.data(), w1.data());
    ASSERT_EQ(std::memcmp(w1.data(), w2.data(), w1.size() * 2), 0) << "step " << t;
    EXPECT_LE(got.memory().peak(), got.buffer_bytes());
  }
  EXPECT_EQ(got.step_count(), want.step_count());
  for (StateArray a : {StateArray::kMaster, StateArray::kExpAvg, StateArray::kExpAvgSq})
    EXPECT_TRUE(same(state_of(want, a), state_of(got, a))) << "array " << int(a);
}

// In a streamed step the updater thread waits for the gradients as the backward produces them;
// that is not exposed I/O. The exposed wait (SwapStats::wait_s) is the caller's only, inside
// finish_step(), so it can never exceed the time the caller spent in finish_step(), however long
// the "backward" (here a 50 ms pause before the first range is final) kept the updater waiting.
TEST(SwapOptimizer, StreamedStepExposesOnlyTheFinishWait) {
  auto groups = test_groups();
  int64_t n = 5003 + 17 + 12007;
  std::vector<float> init = normal(n, 24, 0.5f), g = normal(n, 25, 1.f);
  SwapOptions o;
  o.path = temp_path("exposed.swap");
  o.chunk_elems = 1024;
  SwapOptimizer s(groups, init.data(), o);
  for (int step = 0; step < 2; ++step) {
    s.begin_step(g.data(), nullptr);
    ::usleep(50000);
    s.grads_final(0, n);
    const auto t0 = std::chrono::steady_clock::now();
    s.finish_step();
    const double in_finish = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.commit_step();
    EXPECT_LE(s.last_step().wait_s, in_finish) << "step " << step;
    EXPECT_GE(s.last_step().wait_s, 0.0);
  }
}

// The first step visits the chunks last to first; each later one in the order they became
// complete in the last streamed step (chunks completed by one call last to first), so the state
// read ahead is the next to be needed. A foreground step() teaches nothing. The results stay
// AdamW's (StreamedStepEqualsAdamWInAnyOrder steps through such orders).
TEST(SwapOptimizer, StreamedStepVisitsChunksInTheLastOrderOfCompletion) {
  auto groups = test_groups();
  int64_t n = 5003 + 17 + 12007;  // 17 chunks of 1024, the last one short
  std::vector<float> init = normal(n, 26, 0.5f), g = normal(n, 27, 1.f);
  SwapOptions o;
  o.path = temp_path("order.swap");
  o.chunk_elems = 1024;
  SwapOptimizer s(groups, init.data(), o);
  std::vector<int64_t> last_to_first;
  for (int64_t c = 16; c >= 0; --c) last_to_first.push_back(c);
  EXPECT_EQ(s.update_order(), last_to_first);
  // A "backward" that finishes chunks 8..12 first (one call), then 13..16 piece by piece in
  // ascending order, then 0..7 with chunk 3 last (it is completed by two calls).
  s.begin_step(g.data(), nullptr);
  s.grads_final(8 * 1024, 13 * 1024);
  for (int64_t c = 13; c < 17; ++c) s.grads_final(c * 1024, std::min(n, (c + 1) * 1024));
  s.grads_final(3 * 1024, 3 * 1024 + 10);
  s.grads_final(0, 3 * 1024);
  s.grads_final(4 * 1024, 8 * 1024);
  s.grads_final(3 * 1024 + 10, 4 * 1024);
  s.finish_step();
  s.commit_step();
  EXPECT_EQ(s.update_order(), last_to_first) << "the order changes when the next step begins";
  s.begin_step(g.data(), nullptr);
  const std::vector<int64_t> learnt = {12, 11, 10, 9, 8, 13, 14, 15, 16, 2, 1, 0, 7, 6, 5, 4, 3};
  EXPECT_EQ(s.update_order(), learnt);
  s.grads_final(0, n);
  s.finish_step();
  s.commit_step();
  s.begin_step(g.data(), nullptr);
  EXPECT_EQ(s.update_order(), last_to_first) << "one call: last to first";
  s.grads_final(0, n);
  s.finish_step();
  s.discard_step();
  s.step(g.data(), nullptr);  // foreground: keeps the order it found
  s.begin_step(g.data(), nullptr);
  EXPECT_EQ(s.update_order(), last_to_first);
  s.grads_final(0, n);
  s.finish_step();
  s.commit_step();
  std::vector<float> out(static_cast<size_t>(n));
  s.read_state(StateArray::kMaster, 0, n, out.data());  // waits for the last write-backs
}

// Misuse of the streamed step is a programming error, reported as such; a step abandoned
// half-way (the caller threw between begin_step and finish_step) does not hang the destructor.
TEST(SwapOptimizer, StreamedStepContract) {
  auto groups = test_groups();
  int64_t n = 5003 + 17 + 12007;
  std::vector<float> init = normal(n, 22, 0.5f), g = normal(n, 23, 1.f);
  SwapOptions o;
  o.path = temp_path("contract.swap");
  o.chunk_elems = 1024;
  {
    SwapOptimizer s(groups, init.data(), o);
    EXPECT_THROW(s.grads_final(0, 1), std::logic_error);
    EXPECT_THROW(s.commit_step(), std::logic_error);
    s.begin_step(g.data(), nullptr);
    EXPECT_THROW(s.grads_final(0, n + 1), std::out_of_range);
    s.grads_final(0, 1024);                                    // chunk 0, whole
    EXPECT_THROW(s.grads_final(5, 20), std::logic_error);  // declared twice
    std::vector<float> out(10);
    EXPECT_THROW(s.read_state(StateArray::kMaster, 0, 10, out.data()), std::logic_error);
    EXPECT_THROW(s.begin_step(g.data(), nullptr), std::logic_error);
  }  // destroyed mid-step
  EXPECT_FALSE(fs::exists(o.path));
  SwapOptimizer s(groups, init.data(), o);
  s.begin_step(g.data(), nullptr);
  s.grads_final(100, n);
  EXPECT_THROW(s.finish_step(), std::logic_error);  // [0, 100) never declared final
}

}  // namespace
}  // namespace trex::optim
