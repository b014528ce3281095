// A tuning target: one tunable kernel at one shape, its search space (the candidate values of
// each parameter, legal by construction), its byte and FLOP counts, and its performance model
// as a ChoiceProblem (docs/aura.md states the models).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trex/aura/choice_ip.h"
#include "trex/aura/hardware.h"
#include "trex/kernels/tuning.h"

namespace trex::aura {

using Config = kernels::ParamMap;

struct SpaceParam {
  std::string name;
  std::vector<int64_t> values;
  // A blocking capped by a dimension (GEMM kc by K, mc by M, nc by N): the value from which one
  // block covers the whole dimension; 0 when the parameter is not such a blocking. Skills map
  // "the whole dimension" between shapes by it (prior.h).
  int64_t whole = 0;
  // Shape quantities the parameter's value may be relative to (GEMM kc to K; a row kernel's
  // block to the row and to the whole tensor; mHC's block of tokens to the tokens): a skill may
  // transfer its value as a ratio to one of them instead of as an absolute value, whichever
  // makes the skills agree (prior.h). Empty for a choice such as a micro-kernel or store kind.
  std::vector<int64_t> scales = {};
};

struct TuneTarget {
  std::string kernel;           // a tunable suite kernel
  std::string dtype = "fp32";   // storage of the timed case (fp32, or bf16 where the kernel has it)
  std::vector<int64_t> dims;    // gemm {m, n, k}; the row kernels {rows, cols}
  std::string shape_class;      // kernels::shape_class(dims)
  std::vector<SpaceParam> space;
  double bytes_in = 0, bytes_out = 0, flops = 0;  // one call, minimum traffic
  // Why the space is one point, where the kernel reads none of its parameters at this size and
  // thread count (mHC's pre and head backward by tokens); empty otherwise.
  std::string fixed;

  size_t size() const;                          // configurations in the space
  Config config_at(const std::vector<int>& index) const;
  // Index of each parameter's value in `c` (the nearest candidate for a value not in the list,
  // the first candidate for a parameter `c` lacks).
  std::vector<int> index_of(const Config& c) const;
  std::string shape_text() const;               // "512x512x512"
};

// "512x512x512" -> {512, 512, 512}; empty text gives the kernel's default shape (the suite's
// full benchmark shape). Throws InputError::field("--shape") for a malformed shape, a wrong
// number of dimensions, or a dimension outside [1, 2^20].
std::vector<int64_t> parse_shape(const std::string& kernel, const std::string& text);

// Throws InputError::field("KERNEL") for a kernel that is not tunable, ("--dtype") for a dtype
// the kernel lacks. mhc.pre_bwd and mhc.head_bwd where they run by tokens
// (kernels::mhc_backward_runs_by_tokens at hw.threads: AVX-512 rows and at least one 256-token
// chunk per thread) read neither block_tokens nor column_block: their space is the built-in's
// one point and `fixed` says why, so a tune measures nothing to choose between (it measured
// noise and could record it as a tuning and a skill).
TuneTarget make_target(const std::string& kernel, const std::vector<int64_t>& dims,
                       const AuraHardware& hw, const std::string& dtype = "fp32");

// While alive, make_target keeps the whole space of those targets (the column path's
// parameters) whatever the path: bench/aura_search_bench scores the search on its tables, which
// hold the whole space (tables measured before the token path, and the same spaces since).
// Not thread-safe; for the bench and tests.
class ScopedEveryPath {
 public:
  ScopedEveryPath();
  ~ScopedEveryPath();
  ScopedEveryPath(const ScopedEveryPath&) = delete;
  ScopedEveryPath& operator=(const ScopedEveryPath&) = delete;

 private:
  bool previous_;
};

// The kernel's performance model over its space (parameters in space order).
ChoiceProblem performance_model(const TuneTarget& t, const AuraHardware& hw);

// The built-in configuration (what the kernel does untuned), as values of the space where they
// are in it: GEMM's BLIS analytic blocking, the row kernels' 16384-element blocks.
Config builtin_config(const TuneTarget& t, const AuraHardware& hw);

// A work-split kernel's built-in value of one parameter at the target's shape (kernels::builtin,
// with kv_compress.bwd's that depends on the shape: 0 where its tuning class splits by entries,
// ratio 4 the whole head as the space's value that covers it, else 64; 64 when the target has no
// shape). 0 where there is none.
int64_t builtin_value(const TuneTarget& t, const std::string& param);

}  // namespace trex::aura
