#include "trex/kernels/row_isa.h"

#include <algorithm>
#include <atomic>

namespace trex::kernels {
namespace {

std::atomic<int> g_cap{-1};  // -1: no cap

}  // namespace

core::Isa row_isa() {
  const int cap = g_cap.load(std::memory_order_relaxed);
  const core::Isa best = core::best_isa();
  return cap < 0 ? best : std::min(best, core::Isa(cap));
}

ScopedRowIsa::ScopedRowIsa(core::Isa isa) : previous_(g_cap.exchange(int(isa))) {}
ScopedRowIsa::~ScopedRowIsa() { g_cap.store(previous_); }

}  // namespace trex::kernels
