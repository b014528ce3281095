// Measuring the machine trex runs on (spec/hardware-and-kernels.md section 2).
//
// probe_hardware() reads what the system states (CPUID features and model name, cores and
// sockets and caches from /sys/devices/system/cpu, memory size from /proc/meminfo) and
// measures what it does not:
//   - the core clock under load, from a chain of dependent integer adds (one per cycle);
//   - FMA latency, from a chain of dependent FMAs;
//   - peak fp32 FMA throughput per instruction set (AVX2, AVX-512 where present, a portable
//     SSE fallback), on one core and on all CPUs at once: a register-resident loop over 12
//     independent accumulators, threads pinned, best of several runs;
//   - memory bandwidth by the STREAM method: copy, scale, add, triad, triad with
//     non-temporal stores, read-only and write-only, over three arrays each at least as large
//     as the last-level cache (128 MiB minimum), first touched by the pinned threads that use
//     them, best of several repetitions, bytes counted as STREAM does;
//   - read bandwidth of one core from each cache level (a working set of half the level).
// Timings are wall-clock (steady_clock). The default run takes about 10 s; quick runs take
// about a second, with small arrays and short loops: their figures are rough, for tests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trex/core/hw_description.h"

namespace trex::core {

struct ProbeOptions {
  bool quick = false;
  int threads = 0;  // 0: every CPU of the affinity mask
  // Called before each measurement with a short name and the number of steps done and total.
  std::function<void(const std::string& step, int done, int total)> on_step;
};

struct CacheInfo {
  int level = 0;
  std::string type;  // "Data", "Unified" (instruction caches are left out)
  int64_t size_bytes = 0;
  int line_bytes = 0;
  int ways = 0;
  int shared_by = 0;             // logical CPUs sharing one instance
  double read_bytes_per_s = 0;   // one core, working set of half the level
  int64_t working_set_bytes = 0;
};

struct FmaPeak {
  std::string isa;  // "avx512", "avx2" or "sse" (portable fallback, separate mul and add)
  int accumulators = 0;
  int lanes = 0;  // fp32 lanes per register
  double flops_one_core = 0;
  double flops_all_cores = 0;
};

// Bytes per second, counted as STREAM does (copy and scale move 2 arrays, add and triad 3).
struct StreamResult {
  int64_t array_bytes = 0;
  int threads = 0;
  int repetitions = 0;
  double copy = 0, scale = 0, add = 0, triad = 0, triad_nt = 0, read = 0, write = 0;
};

struct ProbeResult {
  std::string model_name;
  int logical_cpus = 0;    // in the affinity mask: the threads the probe ran
  int physical_cores = 0;  // distinct (package, core) among those CPUs
  int sockets = 0;
  int threads_per_core = 1;
  std::vector<std::string> simd;
  std::vector<CacheInfo> caches;  // ascending level
  int64_t memory_bytes = 0;
  double clock_hz = 0;
  double fma_latency_cycles = 0;
  std::vector<FmaPeak> fma;  // widest instruction set first
  StreamResult stream;
  bool quick = false;
  double seconds = 0;

  // The instruction set with the highest all-core throughput.
  const FmaPeak& best_fma() const;
  // The last-level cache, or nullptr when sysfs has none.
  const CacheInfo* last_level_cache() const;
};

ProbeResult probe_hardware(const ProbeOptions& options = {});

// The probe's findings as a hardware description (kind cpu), each number with its source.
HwDescription describe(const ProbeResult& r);

// The description of the machine trex runs on, for rooflines and kernel tuning: `path` when
// given, else ./this-machine.toml when present, else a quick probe (about a second, rough).
// *source says which. Throws InputError for an unreadable file or a description whose device
// is not a cpu.
HwDescription this_machine_description(const std::string& path, std::string* source);

}  // namespace trex::core
