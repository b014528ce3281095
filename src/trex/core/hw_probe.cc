#include "trex/core/hw_probe.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "trex/core/arena.h"
#include "trex/core/cpu_features.h"
#include "trex/core/thread_pool.h"
#include "trex/util/error.h"

namespace trex::core {

namespace {

// ---------------------------------------------------------------------------------------
// What the system states

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

long long read_int(const std::string& path, long long fallback) {
  std::string s = read_text(path);
  if (s.empty()) return fallback;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  return end == s.c_str() ? fallback : v;
}

// "48K", "2048K", "32M" -> bytes; 0 when unreadable.
int64_t parse_size(const std::string& s) {
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || v <= 0) return 0;
  switch (*end) {
    case 'K': return int64_t(v) << 10;
    case 'M': return int64_t(v) << 20;
    case 'G': return int64_t(v) << 30;
    default: return int64_t(v);
  }
}

// "0-3,8,10-11" -> 7.
int count_cpu_list(const std::string& s) {
  int n = 0;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    int a = 0, b = 0;
    if (std::sscanf(part.c_str(), "%d-%d", &a, &b) == 2)
      n += b >= a ? b - a + 1 : 0;
    else if (std::sscanf(part.c_str(), "%d", &a) == 1)
      ++n;
  }
  return n;
}

int64_t meminfo_bytes(const char* field) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  size_t len = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, len, field) == 0 && line.size() > len && line[len] == ':')
      return int64_t(std::strtoll(line.c_str() + len + 1, nullptr, 10)) * 1024;
  return 0;
}

void read_topology(ProbeResult& r, const std::vector<int>& cpus) {
  std::set<std::pair<long long, long long>> cores;
  std::set<long long> packages;
  for (int cpu : cpus) {
    std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    long long pkg = read_int(base + "physical_package_id", 0);
    long long core = read_int(base + "core_id", cpu);
    cores.insert({pkg, core});
    packages.insert(pkg);
  }
  r.logical_cpus = int(cpus.size());
  r.physical_cores = std::max(1, int(cores.size()));
  r.sockets = std::max(1, int(packages.size()));
  r.threads_per_core = std::max(1, r.logical_cpus / r.physical_cores);
}

void read_caches(ProbeResult& r, int cpu) {
  std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache/index";
  for (int i = 0; i < 16; ++i) {
    std::string dir = base + std::to_string(i) + "/";
    std::string type = read_text(dir + "type");
    if (type.empty()) break;
    if (type == "Instruction") continue;
    CacheInfo c;
    c.level = int(read_int(dir + "level", 0));
    c.type = type;
    c.size_bytes = parse_size(read_text(dir + "size"));
    c.line_bytes = int(read_int(dir + "coherency_line_size", 64));
    c.ways = int(read_int(dir + "ways_of_associativity", 0));
    c.shared_by = std::max(1, count_cpu_list(read_text(dir + "shared_cpu_list")));
    if (c.level > 0 && c.size_bytes > 0) r.caches.push_back(c);
  }
  std::sort(r.caches.begin(), r.caches.end(),
            [](const CacheInfo& a, const CacheInfo& b) { return a.level < b.level; });
}

// ---------------------------------------------------------------------------------------
// Timing

using Clock = std::chrono::steady_clock;

template <class F>
double seconds_of(F&& f) {
  auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

template <class F>
double best_seconds(int reps, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < reps; ++i) best = std::min(best, seconds_of(f));
  return best;
}

volatile double g_sink;  // results that must be computed

// ---------------------------------------------------------------------------------------
// Clock and FMA

// 16 dependent register-to-register adds per iteration: one cycle each on every x86 core, so
// cycles = 16 x iterations, whatever the loop overhead (it runs beside the chain). Adds of an
// immediate would not do: recent cores (Golden Cove) fold chains of those at rename.
void add_chain(int64_t iters) {
  uint64_t x = 0, y = uint64_t(iters) | 1;
  for (int64_t i = 0; i < iters; ++i) {
    __asm__ volatile(
        "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
        "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
        "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
        "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
        : "+r"(x)
        : "r"(y));
  }
  g_sink = double(x);
}

// Eight dependent FMAs per iteration.
__attribute__((target("avx2,fma"))) void fma_chain_avx2(int64_t iters, float seed) {
  __m256 a = _mm256_set1_ps(seed);
  const __m256 m = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
  for (int64_t i = 0; i < iters; ++i) {
    a = _mm256_fmadd_ps(a, m, b);
    a = _mm256_fmadd_ps(a, m, b);
    a = _mm256_fmadd_ps(a, m, b);
    a = _mm256_fmadd_ps(a, m, b);
    a = _mm256_fmadd_ps(a, m, b);
    a = _mm256_fmadd_ps(a, m, b);
    a = _mm256_fmadd_ps(a, m, b);
    a = _mm256_fmadd_ps(a, m, b);
  }
  g_sink = double(_mm256_cvtss_f32(a));
}

// Twelve independent accumulators, each acc = acc * m + b (it converges to b / (1 - m) = 1,
// no denormals, no overflow). Distinct starting values keep the compiler from merging chains.
constexpr int kAccumulators = 12;

#define TREX_FMA12(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7) OP(8) OP(9) OP(10) OP(11)

__attribute__((target("avx512f"))) double fma_peak_avx512(int64_t iters, float seed) {
  const __m512 m = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
#define TREX_INIT(k) __m512 a##k = _mm512_set1_ps(seed * float(k + 1));
  TREX_FMA12(TREX_INIT)
#undef TREX_INIT
  for (int64_t i = 0; i < iters; ++i) {
#define TREX_STEP(k) a##k = _mm512_fmadd_ps(a##k, m, b);
    TREX_FMA12(TREX_STEP)
#undef TREX_STEP
  }
  __m512 s = _mm512_setzero_ps();
#define TREX_SUM(k) s = _mm512_add_ps(s, a##k);
  TREX_FMA12(TREX_SUM)
#undef TREX_SUM
  return double(_mm512_cvtss_f32(s));  // one lane keeps the work observable
}

__attribute__((target("avx2,fma"))) double fma_peak_avx2(int64_t iters, float seed) {
  const __m256 m = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
#define TREX_INIT(k) __m256 a##k = _mm256_set1_ps(seed * float(k + 1));
  TREX_FMA12(TREX_INIT)
#undef TREX_INIT
  for (int64_t i = 0; i < iters; ++i) {
#define TREX_STEP(k) a##k = _mm256_fmadd_ps(a##k, m, b);
    TREX_FMA12(TREX_STEP)
#undef TREX_STEP
  }
  __m256 s = _mm256_setzero_ps();
#define TREX_SUM(k) s = _mm256_add_ps(s, a##k);
  TREX_FMA12(TREX_SUM)
#undef TREX_SUM
  return double(_mm256_cvtss_f32(s));
}

// Portable fallback: 4-lane vectors, a multiply and an add (2 flops) per lane and step.
double fma_peak_sse(int64_t iters, float seed) {
  typedef float v4f __attribute__((vector_size(16)));
  const v4f m = {0.999f, 0.999f, 0.999f, 0.999f}, b = {1e-3f, 1e-3f, 1e-3f, 1e-3f};
#define TREX_INIT(k) v4f a##k = m * (seed * float(k + 1));
  TREX_FMA12(TREX_INIT)
#undef TREX_INIT
  for (int64_t i = 0; i < iters; ++i) {
#define TREX_STEP(k) a##k = a##k * m + b;
    TREX_FMA12(TREX_STEP)
#undef TREX_STEP
  }
  v4f s = {0, 0, 0, 0};
#define TREX_SUM(k) s += a##k;
  TREX_FMA12(TREX_SUM)
#undef TREX_SUM
  return double(s[0]);
}

#undef TREX_FMA12

struct FmaKernel {
  const char* isa;
  int lanes;
  double (*fn)(int64_t, float);
};

std::vector<FmaKernel> fma_kernels() {
  std::vector<FmaKernel> k;
  if (isa_supported(Isa::kAvx512)) k.push_back({"avx512", 16, fma_peak_avx512});
  if (isa_supported(Isa::kAvx2)) k.push_back({"avx2", 8, fma_peak_avx2});
  if (k.empty()) k.push_back({"sse", 4, fma_peak_sse});
  return k;
}

// ---------------------------------------------------------------------------------------
// Memory

// Three arrays of doubles, each thread owning the same contiguous chunk of each; chunk
// boundaries fall on 64-byte lines so threads never share one.
struct StreamArrays {
  std::unique_ptr<double[], AlignedDeleter> a, b, c;
  int64_t n = 0;
  int threads = 1;

  std::pair<int64_t, int64_t> chunk(int t) const {
    auto edge = [&](int k) { return k == threads ? n : (n * k / threads) & ~int64_t(7); };
    return {edge(t), edge(t + 1)};
  }
};

constexpr double kScalar = 3.0;

// "+ 0.0" keeps the compiler from turning the loop into a memcpy call (glibc's memcpy takes
// non-temporal stores for large sizes, which is not what STREAM copy measures); it cannot be
// folded without -ffast-math (-0.0 + 0.0 is +0.0) and costs nothing in a memory-bound loop.
void copy_kernel(double* __restrict c, const double* __restrict a, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) c[i] = a[i] + 0.0;
}

void scale_kernel(double* __restrict b, const double* __restrict c, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) b[i] = kScalar * c[i];
}

void add_kernel(double* __restrict c, const double* __restrict a, const double* __restrict b, int64_t lo,
                int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) c[i] = a[i] + b[i];
}

void triad_kernel(double* __restrict a, const double* __restrict b, const double* __restrict c, int64_t lo,
                  int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) a[i] = b[i] + kScalar * c[i];
}

// Triad storing around the caches. REQUIRES: a + lo is 32-byte aligned.
__attribute__((target("avx"))) void triad_nt_avx(double* __restrict a, const double* __restrict b,
                                                 const double* __restrict c, int64_t lo, int64_t hi) {
  const __m256d s = _mm256_set1_pd(kScalar);
  int64_t i = lo;
  for (; i + 4 <= hi; i += 4)
    _mm256_stream_pd(a + i, _mm256_add_pd(_mm256_loadu_pd(b + i), _mm256_mul_pd(s, _mm256_loadu_pd(c + i))));
  for (; i < hi; ++i) a[i] = b[i] + kScalar * c[i];
  _mm_sfence();
}

void triad_nt_sse(double* __restrict a, const double* __restrict b, const double* __restrict c, int64_t lo,
                  int64_t hi) {
  const __m128d s = _mm_set1_pd(kScalar);
  int64_t i = lo;
  for (; i + 2 <= hi; i += 2)
    _mm_stream_pd(a + i, _mm_add_pd(_mm_loadu_pd(b + i), _mm_mul_pd(s, _mm_loadu_pd(c + i))));
  for (; i < hi; ++i) a[i] = b[i] + kScalar * c[i];
  _mm_sfence();
}

// Read-only: four independent 64-byte vector sums, so the adds never limit the loads.
double read_kernel(const double* __restrict a, int64_t lo, int64_t hi) {
  typedef double v8d __attribute__((vector_size(64)));
  v8d s0 = {}, s1 = {}, s2 = {}, s3 = {};
  int64_t i = lo;
  for (; i + 32 <= hi; i += 32) {
    v8d x0, x1, x2, x3;
    std::memcpy(&x0, a + i, 64);
    std::memcpy(&x1, a + i + 8, 64);
    std::memcpy(&x2, a + i + 16, 64);
    std::memcpy(&x3, a + i + 24, 64);
    s0 += x0;
    s1 += x1;
    s2 += x2;
    s3 += x3;
  }
  v8d s = (s0 + s1) + (s2 + s3);
  double total = 0;
  for (int k = 0; k < 8; ++k) total += s[k];
  for (; i < hi; ++i) total += a[i];
  return total;
}

void write_kernel(double* __restrict a, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) a[i] = kScalar;
}

// ---------------------------------------------------------------------------------------

struct Plan {
  int64_t fma_iters, clock_iters, latency_iters;
  int fma_reps, clock_reps, stream_reps, cache_reps;
  int64_t stream_array_bytes;
  int64_t cache_bytes_per_rep;
  int64_t cache_working_set_cap;
};

Plan make_plan(bool quick, const ProbeResult& r) {
  Plan p;
  if (quick) {
    p = Plan{2'000'000, 500'000, 200'000, 2, 2, 2, 2, int64_t(16) << 20, int64_t(32) << 20,
             int64_t(8) << 20};
    return p;
  }
  p = Plan{100'000'000, 10'000'000, 2'000'000, 5, 5, 10, 5, 0, int64_t(1) << 30, int64_t(64) << 20};
  // STREAM asks for arrays well beyond the last-level cache: each array at least as large as
  // it (and 128 MiB), within an eighth of the available memory and 1 GiB.
  int64_t llc = r.last_level_cache() ? r.last_level_cache()->size_bytes : 0;
  int64_t bytes = std::max(int64_t(128) << 20, llc);
  int64_t avail = meminfo_bytes("MemAvailable");
  if (avail > 0) bytes = std::min(bytes, avail / 8);
  bytes = std::min(bytes, int64_t(1) << 30);
  p.stream_array_bytes = std::max(int64_t(16) << 20, bytes >> 20 << 20);
  return p;
}

}  // namespace

const FmaPeak& ProbeResult::best_fma() const {
  if (fma.empty()) throw std::logic_error("ProbeResult: no FMA measurement");
  return *std::max_element(fma.begin(), fma.end(), [](const FmaPeak& a, const FmaPeak& b) {
    return a.flops_all_cores < b.flops_all_cores;
  });
}

const CacheInfo* ProbeResult::last_level_cache() const { return caches.empty() ? nullptr : &caches.back(); }

ProbeResult probe_hardware(const ProbeOptions& options) {
  auto t_start = Clock::now();
  ProbeResult r;
  r.quick = options.quick;
  std::vector<int> cpus = allowed_cpus();
  if (options.threads > 0) cpus.resize(std::min(cpus.size(), size_t(options.threads)));
  r.model_name = cpu_model_name();
  r.simd = cpu_features().names();
  read_topology(r, cpus);
  read_caches(r, cpus.front());
  r.memory_bytes = meminfo_bytes("MemTotal");
  const Plan plan = make_plan(options.quick, r);
  const std::vector<FmaKernel> kernels = fma_kernels();

  const int total_steps = 2 + 2 * int(kernels.size()) + int(r.caches.size()) + 1 + 7;
  int step = 0;
  auto announce = [&](const std::string& what) {
    if (options.on_step) options.on_step(what, step, total_steps);
    ++step;
  };

  ThreadPool one(1, /*pin=*/true);
  ThreadPool all(int(cpus.size()), /*pin=*/true);

  announce("clock");
  double t = 0;
  one.run([&](int) { t = best_seconds(plan.clock_reps, [&] { add_chain(plan.clock_iters); }); });
  r.clock_hz = 16.0 * double(plan.clock_iters) / t;

  announce("FMA latency");
  if (isa_supported(Isa::kAvx2)) {
    one.run([&](int) { t = best_seconds(plan.clock_reps, [&] { fma_chain_avx2(plan.latency_iters, 0.5f); }); });
    r.fma_latency_cycles = t * r.clock_hz / (8.0 * double(plan.latency_iters));
  }

  for (const FmaKernel& k : kernels) {
    FmaPeak p;
    p.isa = k.isa;
    p.accumulators = kAccumulators;
    p.lanes = k.lanes;
    double flops_per_thread = double(plan.fma_iters) * kAccumulators * k.lanes * 2;
    announce(std::string("FMA peak ") + k.isa + ", one core");
    one.run([&](int) { t = best_seconds(plan.fma_reps, [&] { g_sink = k.fn(plan.fma_iters, 0.5f); }); });
    p.flops_one_core = flops_per_thread / t;
    announce(std::string("FMA peak ") + k.isa + ", all cores");
    std::vector<double> sink(cpus.size());
    t = best_seconds(plan.fma_reps, [&] {
      all.run([&](int th) { sink[size_t(th)] = k.fn(plan.fma_iters, 0.5f + float(th)); });
    });
    g_sink = sink[0];
    p.flops_all_cores = flops_per_thread * double(cpus.size()) / t;
    r.fma.push_back(p);
  }

  // One core's read bandwidth per cache level: half the level, but at most 64 MiB (8 MiB when
  // quick): a large shared last-level cache is mostly other cores' share.
  for (CacheInfo& c : r.caches) {
    announce("L" + std::to_string(c.level) + " read bandwidth");
    int64_t ws = std::min(c.size_bytes / 2, plan.cache_working_set_cap) / 64 * 64;
    if (ws < 1024) continue;
    c.working_set_bytes = ws;
    int64_t n = ws / int64_t(sizeof(double));
    int64_t passes = std::max<int64_t>(1, plan.cache_bytes_per_rep / ws);
    auto buf = aligned_array<double>(size_t(n));
    one.run([&](int) {
      for (int64_t i = 0; i < n; ++i) buf[size_t(i)] = 1.0;
      double sum = 0;
      read_kernel(buf.get(), 0, n);  // warm the level
      t = best_seconds(plan.cache_reps, [&] {
        for (int64_t p = 0; p < passes; ++p) {
          sum += read_kernel(buf.get(), 0, n);
          __asm__ volatile("" : : "r"(buf.get()) : "memory");  // read it again, every pass
        }
      });
      g_sink = sum;
    });
    c.read_bytes_per_s = double(ws) * double(passes) / t;
  }

  announce("STREAM arrays");
  StreamArrays s;
  s.n = plan.stream_array_bytes / int64_t(sizeof(double));
  s.threads = int(cpus.size());
  // 2 MiB and more: on huge pages where granted, as every large trex buffer (core/arena.cc).
  s.a = aligned_array<double>(size_t(s.n));
  s.b = aligned_array<double>(size_t(s.n));
  s.c = aligned_array<double>(size_t(s.n));
  all.run([&](int th) {  // first touch by the thread that will use the chunk
    auto [lo, hi] = s.chunk(th);
    for (int64_t i = lo; i < hi; ++i) s.a[size_t(i)] = 1.0, s.b[size_t(i)] = 2.0, s.c[size_t(i)] = 0.0;
  });
  double *a = s.a.get(), *b = s.b.get(), *c = s.c.get();
  bool avx = cpu_features().avx;
  const double array_bytes = double(s.n) * sizeof(double);
  auto stream = [&](const char* name, double arrays, auto&& body) {
    announce(std::string("STREAM ") + name);
    std::vector<double> sink(size_t(s.threads));
    double best = best_seconds(plan.stream_reps, [&] {
      all.run([&](int th) {
        auto [lo, hi] = s.chunk(th);
        sink[size_t(th)] = body(lo, hi);
      });
    });
    g_sink = sink[0];
    return arrays * array_bytes / best;
  };
  r.stream.array_bytes = int64_t(array_bytes);
  r.stream.threads = s.threads;
  r.stream.repetitions = plan.stream_reps;
  r.stream.copy = stream("copy", 2, [&](int64_t lo, int64_t hi) {
    copy_kernel(c, a, lo, hi);
    return 0.0;
  });
  r.stream.scale = stream("scale", 2, [&](int64_t lo, int64_t hi) {
    scale_kernel(b, c, lo, hi);
    return 0.0;
  });
  r.stream.add = stream("add", 3, [&](int64_t lo, int64_t hi) {
    add_kernel(c, a, b, lo, hi);
    return 0.0;
  });
  r.stream.triad = stream("triad", 3, [&](int64_t lo, int64_t hi) {
    triad_kernel(a, b, c, lo, hi);
    return 0.0;
  });
  r.stream.triad_nt = stream("triad (non-temporal)", 3, [&](int64_t lo, int64_t hi) {
    if (avx)
      triad_nt_avx(a, b, c, lo, hi);
    else
      triad_nt_sse(a, b, c, lo, hi);
    return 0.0;
  });
  r.stream.read = stream("read", 1, [&](int64_t lo, int64_t hi) { return read_kernel(a, lo, hi); });
  r.stream.write = stream("write", 1, [&](int64_t lo, int64_t hi) {
    write_kernel(b, lo, hi);
    return 0.0;
  });

  r.seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
  if (options.on_step) options.on_step("done", total_steps, total_steps);
  return r;
}

HwDescription describe(const ProbeResult& r) {
  const std::string probe = std::string("trex hw probe") + (r.quick ? " --quick" : "");
  // Timings are good to a few digits at best: four significant ones keep the file readable.
  // Scaling by an exact power of ten keeps the result the double nearest the 4-digit decimal.
  auto rounded = [](double v) {
    if (v == std::floor(v) || v <= 0) return v;
    double e = std::floor(std::log10(v));
    if (e >= 3) {
      double p = std::pow(10.0, e - 3);
      return std::round(v / p) * p;
    }
    double p = std::pow(10.0, 3 - e);
    return std::round(v * p) / p;
  };
  auto measured = [&](double v, const std::string& how) {
    return Quantity{rounded(v), probe + ": " + how, Confidence::kMeasured};
  };
  auto stated = [&](double v, const std::string& where) {
    return Quantity{v, where, Confidence::kMeasured};
  };
  auto derived = [&](double v, const std::string& how) {
    return Quantity{rounded(v), probe + ": " + how, Confidence::kDerived};
  };
  const FmaPeak& best = r.best_fma();
  char buf[256];

  HwDescription d;
  d.device.name = r.model_name;
  d.device.kind = "cpu";
  double per_cycle = best.flops_one_core / r.clock_hz;  // flops per cycle of one core
  int fma_units = std::max(1, int(std::lround(per_cycle / (best.lanes * 2))));
  double implied_clock = best.flops_one_core / (fma_units * best.lanes * 2.0);
  std::snprintf(buf, sizeof buf, "one-core %s FMA peak / (%d FMA units x %d lanes x 2)", best.isa.c_str(),
                fma_units, best.lanes);
  d.device.clock_hz = derived(implied_clock, buf);
  d.device.cores_matrix = stated(r.physical_cores, "/sys/devices/system/cpu/cpu*/topology, CPUs in the affinity mask");
  d.device.cores_vector = d.device.cores_matrix;
  d.device.sockets = stated(r.sockets, d.device.cores_matrix.source);
  d.device.threads_per_core = stated(r.threads_per_core, d.device.cores_matrix.source);
  d.device.simd = r.simd;

  const CpuFeatures& f = cpu_features();
  std::snprintf(buf, sizeof buf, "%s FMA loop, %d independent accumulators, threads pinned, best of runs",
                best.isa.c_str(), best.accumulators);
  d.peak.flops_fp32 = measured(best.flops_all_cores, std::string(buf) + ", all " + std::to_string(r.logical_cpus) + " CPUs");
  d.peak.flops_fp32_one_core = measured(best.flops_one_core, std::string(buf) + ", one core");
  d.peak.vector_flops_fp32 = d.peak.flops_fp32;
  if (f.avx512_bf16 && best.isa == "avx512")
    d.peak.flops_bf16 = derived(2 * best.flops_all_cores,
                                "2 x fp32 peak: VDPBF16PS does two bf16 products per fp32 lane (AMX not counted)");
  else
    d.peak.flops_bf16 = derived(best.flops_all_cores,
                                "equal to the fp32 peak: no bf16 arithmetic without AVX512_BF16, bf16 is "
                                "converted to fp32 in registers");

  HwCore core;
  core.fma_units = derived(fma_units, "one-core FMA flops per cycle / (lanes x 2), rounded");
  if (r.fma_latency_cycles > 0)
    core.fma_latency_cycles = measured(r.fma_latency_cycles, "dependent AVX2 FMA chain, cycles from the add-chain clock");
  core.simd_bytes = stated(best.lanes * 4, "CPUID: widest supported vector (" + best.isa + ")");
  core.vector_regs = stated(best.isa == "avx512" ? 32 : 16, core.simd_bytes->source);
  d.core = core;

  for (const CacheInfo& c : r.caches) {
    HwMemory m;
    m.name = "L" + std::to_string(c.level) + (c.type == "Data" ? "d" : "");
    m.scope = c.shared_by <= r.threads_per_core ? "core" : "shared";
    std::string sysfs = "/sys/devices/system/cpu/cpu*/cache/index*";
    m.size_bytes = stated(double(c.size_bytes), sysfs);
    m.line_bytes = stated(c.line_bytes, sysfs);
    if (c.ways > 0) m.ways = stated(c.ways, sysfs);
    m.shared_by = stated(c.shared_by, sysfs);
    if (c.read_bytes_per_s > 0)
      m.bw_read = measured(c.read_bytes_per_s, "one-core read-only sum over " +
                                                   std::to_string(c.working_set_bytes >> 10) + " KiB, best of runs");
    d.memory.push_back(m);
  }
  HwMemory dram;
  dram.name = "DRAM";
  dram.scope = "device";
  dram.size_bytes = stated(double(r.memory_bytes > 0 ? r.memory_bytes : 1), "/proc/meminfo MemTotal");
  dram.line_bytes = stated(r.caches.empty() ? 64 : r.caches.back().line_bytes, "sysfs coherency_line_size");
  std::string stream_how = "STREAM method, " + std::to_string(r.stream.threads) + " threads, " +
                           std::to_string(r.stream.array_bytes >> 20) + " MiB arrays, best of " +
                           std::to_string(r.stream.repetitions);
  dram.bw_read = measured(r.stream.read, "read-only sum, " + stream_how);
  dram.bw_write = measured(r.stream.write, "write-only, " + stream_how);
  d.memory.push_back(dram);

  HwPipe fma;
  fma.name = "fma";
  fma.unit = "flop/cycle";
  fma.rate = derived(best.flops_one_core / implied_clock, "one-core FMA peak / clock_hz");
  d.pipes.push_back(fma);

  HwStream st;
  st.array_bytes = measured(double(r.stream.array_bytes), stream_how);
  st.threads = measured(r.stream.threads, stream_how);
  st.repetitions = measured(r.stream.repetitions, stream_how);
  st.copy = measured(r.stream.copy, stream_how);
  st.scale = measured(r.stream.scale, stream_how);
  st.add = measured(r.stream.add, stream_how);
  st.triad = measured(r.stream.triad, stream_how);
  st.triad_nt = measured(r.stream.triad_nt, stream_how);
  st.read = measured(r.stream.read, stream_how);
  st.write = measured(r.stream.write, stream_how);
  d.stream = st;

  for (const FmaPeak& p : r.fma) {
    HwFmaPeak h;
    h.isa = p.isa;
    std::string how = p.isa + " FMA loop, threads pinned, best of runs";
    h.accumulators = measured(p.accumulators, how);
    h.flops_one_core = measured(p.flops_one_core, how);
    h.flops_all_cores = measured(p.flops_all_cores, how);
    d.fma_peaks.push_back(h);
  }
  return d;
}

HwDescription this_machine_description(const std::string& path_in, std::string* source) {
  std::string path = path_in;
  if (path.empty() && std::filesystem::exists("this-machine.toml")) path = "this-machine.toml";
  if (path.empty()) {
    ProbeOptions po;
    po.quick = true;
    if (source) *source = "quick probe (rough; write a description with `trex hw probe` for exact figures)";
    return describe(probe_hardware(po));
  }
  HwDescription d = load_hw_description(path);
  if (d.device.kind != "cpu")
    throw InputError(path, 0, "device.kind: the kernels need a cpu description, not " + d.device.kind);
  if (source) *source = path;
  return d;
}

}  // namespace trex::core
