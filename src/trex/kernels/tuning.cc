// The tuning file and the process-wide active tuning (see tuning.h).
#include "trex/kernels/tuning.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>
#include "toml++/toml.h"

#include "trex/core/cpu_features.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::kernels {

namespace {

// The elementwise kernels share two parameters: how many elements one parallel block covers
// (rows per block = block_elems / row length, at least 1; the built-in is 16384 to 262144 by the
// call's shape, builtin::row_block_elems) and the store
// strategy of large outputs (the built-in streams outputs far larger than the LLC).
#define TREX_ROW_BLOCKED(k)                                                                      \
  {k, "block_elems", 64, int64_t(1) << 24, 1, 0,                                                 \
   "elements per parallel block (rows per block = block_elems / row); 0: 16384 to 262144 by shape"},                \
  {k, "stream", 1, 2, 1, 0, "large outputs: 1 normal stores, 2 non-temporal stores; 0: by size"}

const std::vector<TunableParam> kParams = {
    {"gemm", "mc", 1, 16384, 1, 0, "rows of the packed A block (rounded down to MR); 0: model"},
    {"gemm", "kc", 16, 4096, 8, 0, "depth of the packed slivers; 0: model"},
    {"gemm", "nc", 16, 65536, 1, 0, "columns of the packed B block (rounded down to NR); 0: model"},
    {"gemm", "split", 1, 2, 1, 0, "thread split: 1 rows, 2 NR column slivers of C per thread; 0: the longer side"},
    {"gemm", "ukernel", 1, 3, 1, 0, "micro-kernel: 1 scalar 6x16, 2 AVX2 6x16, 3 AVX-512 12x32; 0: best"},
    TREX_ROW_BLOCKED("rmsnorm.fwd"),
    TREX_ROW_BLOCKED("swiglu.fwd"),
    TREX_ROW_BLOCKED("swiglu.bwd"),
    // Shape classes of the kernels from here on: rope {tokens, heads, head_dim}, kv_compress
    // {tokens, head_dim, ratio}, sparse attention {tokens, heads, head_dim}, mHC {tokens,
    // streams, d}; cross-entropy {rows, vocab}.
    {"rope.fwd", "block_elems", 64, int64_t(1) << 24, 1, 0,
     "elements per parallel block (tokens per block = block_elems / (heads x head_dim)); 0: 16384 to 262144 by shape"},
    {"cross_entropy", "block_elems", 64, int64_t(1) << 24, 1, 0,
     "elements per parallel block (rows per block = block_elems / vocab); 0: 16384 to 262144 by shape"},
    {"cross_entropy", "vocab_tile", 64, int64_t(1) << 20, 8, 0,
     "max and sum-of-exp over tiles of this many logits (online rescale); 0: whole row"},
    {"kv_compress.fwd", "channel_block", 8, 4096, 8, 0,
     "channels per parallel block (jobs = chunks of entries x blocks); 0: the kernel's own split: "
     "whole entries claimed one at a time, two in flight per thread, on AVX-512 rows at ratio != 4, "
     "else blocks of 64"},
    {"kv_compress.bwd", "channel_block", 8, 4096, 8, 0,
     "channels per parallel block (ratio 4: jobs = chunks of 64 entries x blocks; else jobs = "
     "blocks); 0: the kernel's own split: ratio 4 one block of every channel, by entries on "
     "AVX-512 rows, ratio != 4, from 2^18 floats per input, else blocks of 64"},
    {"sparse_attention.fwd", "query_block", 1, 4096, 1, 0, "query tokens per parallel block; 0: 4"},
    {"sparse_attention.bwd", "chunks", 1, 16, 1, 0,
     "token chunks, each with a private key-gradient slice reduced in chunk order (the parallel "
     "jobs); 0: 16"},
    {"mhc.pre_fwd", "block_tokens", 1, 65536, 1, 0, "tokens per parallel block; 0: 16"},
    {"mhc.pre_bwd", "block_tokens", 1, 65536, 1, 0, "tokens per parallel block of stage 1; 0: 16"},
    {"mhc.pre_bwd", "column_block", 8, 8192, 8, 0,
     "columns of n x d per stage-2 block (one thread's dphi and dX slice); 0: 1024 on the "
     "AVX-512 fused path, 256 on the GEMM path"},
    {"mhc.post_fwd", "block_tokens", 1, 65536, 1, 0, "tokens per parallel block; 0: 8"},
    {"mhc.post_bwd", "block_tokens", 1, 65536, 1, 0, "tokens per parallel block; 0: 8 (64 on AVX-512 rows)"},
    {"mhc.head_fwd", "block_tokens", 1, 65536, 1, 0, "tokens per parallel block; 0: 4 (64 on the AVX-512 pipeline, n = 4)"},
    {"mhc.head_bwd", "block_tokens", 1, 65536, 1, 0, "tokens per parallel block of stage 1; 0: 4"},
    {"mhc.head_bwd", "column_block", 8, 8192, 8, 0,
     "columns of n x d per stage-2 block; 0: 1024 on the AVX-512 fused path, 256 on the GEMM "
     "path"},
};
#undef TREX_ROW_BLOCKED

int ceil_log2(int64_t v) {
  int b = 0;
  while ((int64_t(1) << b) < v && b < 62) ++b;
  return b;
}

std::atomic<bool> g_active{false};
std::mutex g_mutex;
std::shared_ptr<const Tuning> g_tuning;
bool g_env_read = false;
// Moves (under g_mutex) whenever g_tuning does; lookups compare it with their thread's copy.
std::atomic<uint64_t> g_generation{0};

// Reads $TREX_TUNING once, on the first lookup (under g_mutex).
void read_env_locked() {
  if (g_env_read) return;
  g_env_read = true;
  const char* path = std::getenv("TREX_TUNING");
  if (path == nullptr || *path == '\0') return;
  g_tuning = std::make_shared<const Tuning>(Tuning::load(path));
  g_generation.fetch_add(1, std::memory_order_release);
  g_active.store(true);
}

std::once_flag g_env_once;
void ensure_env() {
  std::call_once(g_env_once, [] {
    std::lock_guard<std::mutex> lock(g_mutex);
    read_env_locked();
  });
}

// TREX_TUNING_LOG=1: one stderr line per (kernel, shape class) a run looks up, the first time,
// with what applies to it; how to find the classes a workload uses before tuning them.
void log_lookup(const char* kernel, const std::string& shape, const ParamMap* found) {
  static const bool on = [] {
    const char* v = std::getenv("TREX_TUNING_LOG");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  if (!on) return;
  static std::mutex m;
  static std::set<std::pair<std::string, std::string>> seen;
  std::lock_guard<std::mutex> lock(m);
  if (!seen.insert({kernel, shape}).second) return;
  std::string what = found ? "" : " built-in";
  if (found)
    for (const auto& [k, v] : *found) what += " " + k + "=" + std::to_string(v);
  std::fprintf(stderr, "trex tuning: %s %s:%s\n", kernel, shape.c_str(), what.c_str());
}

}  // namespace

const std::vector<TunableParam>& tunable_params() { return kParams; }

std::vector<std::string> tunable_kernels() {
  std::vector<std::string> out;
  for (const TunableParam& p : kParams)
    if (out.empty() || out.back() != p.kernel) out.push_back(p.kernel);
  return out;
}

std::vector<TunableParam> params_of(const std::string& kernel) {
  std::vector<TunableParam> out;
  for (const TunableParam& p : kParams)
    if (kernel == p.kernel) out.push_back(p);
  return out;
}

std::string shape_class(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) {
    if (!s.empty()) s += 'x';
    s += std::to_string(int64_t(1) << ceil_log2(std::max<int64_t>(d, 1)));
  }
  return s;
}

std::string shape_class(std::initializer_list<int64_t> dims) {
  return shape_class(std::vector<int64_t>(dims));
}

std::vector<int> shape_buckets(const std::string& cls) {
  std::vector<int> out;
  std::stringstream ss(cls);
  std::string part;
  while (std::getline(ss, part, 'x')) {
    if (part.empty() || part.size() > 18 || part.find_first_not_of("0123456789") != std::string::npos)
      return {};
    int64_t v = std::stoll(part);
    if (v <= 0 || (v & (v - 1)) != 0) return {};
    out.push_back(ceil_log2(v));
  }
  return out;
}

void check_param(const std::string& kernel, const std::string& name, int64_t value) {
  const std::string field = kernel + "." + name;
  for (const TunableParam& p : kParams) {
    if (kernel != p.kernel || name != p.name) continue;
    if (value == p.fallback) return;
    if (value < p.lo || value > p.hi || (p.step > 1 && value % p.step != 0))
      throw InputError::field(field, std::to_string(value) + " is outside the legal values (" +
                                         std::to_string(p.fallback) + " or " + std::to_string(p.lo) +
                                         ".." + std::to_string(p.hi) +
                                         (p.step > 1 ? ", a multiple of " + std::to_string(p.step) : "") +
                                         ")");
    if (name == "ukernel") {
      core::Isa isa = value == 3 ? core::Isa::kAvx512 : value == 2 ? core::Isa::kAvx2 : core::Isa::kScalar;
      if (!core::isa_supported(isa))
        throw InputError::field(field, std::string(core::to_string(isa)) + " is not supported on this CPU");
    }
    return;
  }
  throw InputError::field(field, "unknown tunable parameter (see `trex aura tune --help`)");
}

Tuning Tuning::parse(std::string_view text, const std::string& name) {
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    throw InputError(name, long(e.source().begin.line), "invalid TOML: " + std::string(e.description()));
  }
  auto line = [](const toml::node& n) { return long(n.source().begin.line); };
  Tuning t;
  for (const auto& [k, node] : root) {
    std::string key(k.str());
    if (key == "hardware") {
      const toml::table* h = node.as_table();
      if (!h) throw InputError(name, line(node), "hardware: must be a table");
      for (const auto& [hk, hv] : *h) {
        std::string f(hk.str());
        auto s = hv.value<std::string>();
        if (!s || (f != "name" && f != "features"))
          throw InputError(name, line(hv), "hardware." + f + ": expected name or features, a string");
        (f == "name" ? t.hardware_name : t.hardware_features) = *s;
      }
    } else if (key == "kernel") {
      const toml::array* arr = node.as_array();
      if (!arr) throw InputError(name, line(node), "kernel: must be an array of tables ([[kernel]])");
      std::set<std::pair<std::string, std::string>> seen;
      for (const toml::node& e : *arr) {
        const toml::table* et = e.as_table();
        if (!et) throw InputError(name, line(e), "kernel: must be an array of tables ([[kernel]])");
        TuningEntry entry;
        auto kname = (*et)["name"].value<std::string>();
        if (!kname) throw InputError(name, line(e), "kernel.name: missing (a kernel name)");
        entry.kernel = *kname;
        if (params_of(entry.kernel).empty())
          throw InputError(name, line(e), "kernel.name: '" + entry.kernel + "' is not a tunable kernel");
        auto shape = (*et)["shape"].value<std::string>();
        entry.shape = shape ? *shape : "*";
        if (entry.shape != "*" && shape_buckets(entry.shape).empty())
          throw InputError(name, line(e), "kernel.shape: '" + entry.shape +
                                              "' is not a shape class (powers of two joined by x, or *)");
        for (const auto& [pk, pv] : *et) {
          std::string p(pk.str());
          if (p == "name" || p == "shape") continue;
          auto v = pv.value_exact<int64_t>();
          if (!v) throw InputError(name, line(pv), entry.kernel + "." + p + ": must be an integer");
          try {
            check_param(entry.kernel, p, *v);
          } catch (const InputError& err) {
            throw InputError(name, line(pv), err.what());
          }
          entry.params[p] = *v;
        }
        if (!seen.insert({entry.kernel, entry.shape}).second)
          throw InputError(name, line(e), "kernel: a second entry for " + entry.kernel + " shape " + entry.shape);
        t.entries.push_back(std::move(entry));
      }
    } else {
      throw InputError(name, line(node), key + ": unknown table (expected hardware or kernel)");
    }
  }
  return t;
}

Tuning Tuning::load(const std::string& path) { return parse(read_file(path, size_t(4) << 20), path); }

std::string Tuning::to_toml() const {
  std::ostringstream o;
  o << "# trex kernel tuning (see docs/aura.md); parameters left out keep their built-in value\n";
  o << "[hardware]\nname = " << toml::value<std::string>(hardware_name) << "\nfeatures = "
    << toml::value<std::string>(hardware_features) << "\n";
  for (const TuningEntry& e : entries) {
    o << "\n[[kernel]]\nname = " << toml::value<std::string>(e.kernel)
      << "\nshape = " << toml::value<std::string>(e.shape) << "\n";
    for (const auto& [p, v] : e.params) o << p << " = " << v << "\n";
  }
  return o.str();
}

const ParamMap* Tuning::find(const std::string& kernel, const std::string& shape) const {
  const ParamMap* any = nullptr;
  for (const TuningEntry& e : entries) {
    if (e.kernel != kernel) continue;
    if (e.shape == shape) return &e.params;
    if (e.shape == "*") any = &e.params;
  }
  return any;
}

void Tuning::set(const std::string& kernel, const std::string& shape, const ParamMap& params) {
  for (TuningEntry& e : entries)
    if (e.kernel == kernel && e.shape == shape) {
      e.params = params;
      return;
    }
  entries.push_back({kernel, shape, params});
}

std::shared_ptr<const Tuning> active_tuning() {
  ensure_env();
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_tuning;
}

void set_active_tuning(std::shared_ptr<const Tuning> tuning) {
  ensure_env();
  std::lock_guard<std::mutex> lock(g_mutex);
  g_tuning = std::move(tuning);
  g_generation.fetch_add(1, std::memory_order_release);
  g_active.store(g_tuning != nullptr);
}

namespace {

// The active tuning as the calling thread last copied it, copied again (under g_mutex) only when
// set_active_tuning has run since. Why: every tunable kernel call looks the tuning up, from both
// pool threads at once, and a copy under the shared mutex on each made them meet there: with a
// file active (even one with no entries) about 340 futex calls in a 3-step v4-micro run came from
// that mutex, each one a thread put to sleep (perf record -e syscalls:sys_enter_futex, session 18;
// bench/results/aura_s18/README.md section 2c). The thread's copy keeps its Tuning alive.
const Tuning* thread_tuning() {
  thread_local uint64_t seen = ~uint64_t(0);
  thread_local std::shared_ptr<const Tuning> held;
  if (g_generation.load(std::memory_order_acquire) != seen) {
    std::lock_guard<std::mutex> lock(g_mutex);
    held = g_tuning;
    seen = g_generation.load(std::memory_order_relaxed);
  }
  return held.get();
}

}  // namespace

void use_tuning_file(const std::string& path) {
  set_active_tuning(std::make_shared<const Tuning>(Tuning::load(path)));
}

bool tuning_active() {
  ensure_env();
  return g_active.load(std::memory_order_relaxed);
}

ParamMap tuned_params(const char* kernel, const std::string& shape) {
  if (!tuning_active()) return {};
  const Tuning* t = thread_tuning();
  if (!t) return {};
  const ParamMap* p = t->find(kernel, shape);
  log_lookup(kernel, shape, p);
  return p ? *p : ParamMap{};
}

int64_t tuned_value(const char* kernel, const std::string& shape, const char* param,
                    int64_t fallback) {
  if (!tuning_active()) return fallback;
  const Tuning* t = thread_tuning();
  if (!t) return fallback;
  const ParamMap* p = t->find(kernel, shape);
  log_lookup(kernel, shape, p);
  if (!p) return fallback;
  auto it = p->find(param);
  return it == p->end() ? fallback : it->second;
}

int64_t tuned_or(const char* kernel, std::initializer_list<int64_t> dims, const char* param,
                 int64_t builtin) {
  if (!tuning_active()) return builtin;
  int64_t v = tuned_value(kernel, shape_class(dims), param, 0);
  return v > 0 ? v : builtin;
}

}  // namespace trex::kernels
