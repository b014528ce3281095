// The instruction-set path of the row kernels that have an AVX-512 body beside their AVX2 one
// (SwiGLU, RMSNorm, bf16 RoPE, cross-entropy, mHC, KV compressor): core::best_isa() (TREX_ISA
// lowers it for a whole process). Tests lower it for a scope, so every path is checked on one
// machine.
#pragma once

#include "trex/core/cpu_features.h"

namespace trex::kernels {

core::Isa row_isa();

// While alive, row_isa() returns at most `isa` (never a path the CPU lacks). For tests; not
// meant to be nested or used while kernels run on other threads.
class ScopedRowIsa {
 public:
  explicit ScopedRowIsa(core::Isa isa);
  ~ScopedRowIsa();
  ScopedRowIsa(const ScopedRowIsa&) = delete;
  ScopedRowIsa& operator=(const ScopedRowIsa&) = delete;

 private:
  int previous_;
};

}  // namespace trex::kernels
