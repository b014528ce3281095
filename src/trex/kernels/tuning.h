// Kernel tuning: the parameters of the tunable kernels, and a per-hardware file that maps a
// kernel and a shape class to a configuration.
//
// A tunable kernel asks for its parameters at each call with the kernel's suite name and the
// shape class of the call; with no tuning active (the default) or no entry for that kernel it
// uses its built-in choices, so an untuned run behaves exactly as before. Every parameter has a
// legal range (kTunableParams); any legal configuration gives correct, deterministic results
// (bits may differ between configurations where the parameter changes the summation order, e.g.
// GEMM's KC or the cross-entropy vocabulary tile, always within the kernel's tolerance).
//
// The file (TOML; written by `trex aura tune --out`):
//   [hardware]                      # free text, what the entries were measured on
//   name = "AMD EPYC 9B14 (2 cores)"
//   features = "avx512 l1=48K l2=2M"
//   [[kernel]]
//   name = "gemm"                   # a suite kernel name (tunable_kernels())
//   shape = "1024x1024x1024"        # a shape class (shape_class()), or "*" for every shape
//   mc = 504                        # parameters; the ones left out keep their default
//   kc = 256
// Lookup takes the exact shape class first, then "*".
//
// The active tuning is process-wide: the first lookup loads $TREX_TUNING when set (a bad file is
// an InputError there); set_active_tuning() replaces it (`--tuning FILE`, the search's
// candidates). Lookups are cheap when no tuning is active (one atomic load). With a tuning
// active, TREX_TUNING_LOG=1 prints each (kernel, shape class) a run looks up once to stderr
// (a file with only [hardware] lists a workload's classes before any is tuned).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trex::kernels {

// One tunable parameter of one kernel: its legal range and what it means.
struct TunableParam {
  const char* kernel;
  const char* name;
  int64_t lo, hi;       // legal values are lo..hi (and a multiple of `step` when step > 1)
  int64_t step;
  int64_t fallback;     // the value meaning "the built-in choice" (0 for every parameter here)
  const char* meaning;
};

// Every tunable parameter, grouped by kernel.
const std::vector<TunableParam>& tunable_params();
// Kernel names with at least one parameter, in suite order.
std::vector<std::string> tunable_kernels();
// The parameters of one kernel (empty when it has none).
std::vector<TunableParam> params_of(const std::string& kernel);

// The shape class of a call: each dimension rounded up to a power of two, joined by "x"
// ({1000, 4096} -> "1024x4096"). Calls in one class share a configuration.
std::string shape_class(std::initializer_list<int64_t> dims);
std::string shape_class(const std::vector<int64_t>& dims);
// The dimensions' log2 buckets of a class ("1024x4096" -> {10, 12}); empty when malformed.
std::vector<int> shape_buckets(const std::string& shape_class);

using ParamMap = std::map<std::string, int64_t>;

struct TuningEntry {
  std::string kernel;
  std::string shape;  // a shape class or "*"
  ParamMap params;
};

class Tuning {
 public:
  std::string hardware_name, hardware_features;
  std::vector<TuningEntry> entries;

  // Parses a tuning file; throws InputError naming the file, line and field on invalid TOML, an
  // unknown kernel or parameter, an out-of-range value, or a duplicate (kernel, shape).
  static Tuning parse(std::string_view text, const std::string& name);
  static Tuning load(const std::string& path);
  std::string to_toml() const;

  // The entry for (kernel, shape class): exact first, then "*"; nullptr when none.
  const ParamMap* find(const std::string& kernel, const std::string& shape) const;
  // Adds or replaces the entry for (kernel, shape).
  void set(const std::string& kernel, const std::string& shape, const ParamMap& params);
};

// Throws InputError::field(kernel + "." + name) when the value is outside the legal range or the
// parameter does not exist (ukernel also checks that this CPU supports the chosen path).
void check_param(const std::string& kernel, const std::string& name, int64_t value);

// The process-wide tuning (see the header comment). active_tuning() may return nullptr.
std::shared_ptr<const Tuning> active_tuning();
void set_active_tuning(std::shared_ptr<const Tuning> tuning);
// Loads a file and makes it active (`--tuning FILE`).
void use_tuning_file(const std::string& path);

// The value of one parameter for a call, or `fallback` when no tuning applies (0 = built-in).
int64_t tuned_value(const char* kernel, const std::string& shape, const char* param,
                    int64_t fallback = 0);
// All parameters of a call's entry at once (one lookup): nullptr-safe copy, empty when none.
ParamMap tuned_params(const char* kernel, const std::string& shape);
// The value of one parameter for a call of shape `dims`, or `builtin` when no tuning applies or
// the entry leaves it at 0 (the shape class is only built when a tuning is active).
int64_t tuned_or(const char* kernel, std::initializer_list<int64_t> dims, const char* param,
                 int64_t builtin);
// True when a tuning is active at all (kernels skip building the shape class otherwise).
bool tuning_active();

}  // namespace trex::kernels
