// The categories a step's time is reported in (the report's Fig. 2 and Fig. 6): matmul,
// attention, elementwise, cast, data movement, communication, optimizer, other (and idle, which
// is no kernel's). A kernel's category comes from the trace's own classification where it has
// one (trex's span categories, Kineto's memcpy/memset, msprof's communication tasks), else from
// its name and operator type.
#pragma once

#include <string>

#include "trex/profile/kernel_trace.h"

namespace trex::profile {

enum class KernelCategory {
  kMatmul = 0,
  kAttention,
  kElementwise,
  kCast,
  kDataMovement,
  kCommunication,
  kOptimizer,
  kOther,
};
inline constexpr int kKernelCategories = 8;

// "matmul", "attention", "elementwise", "cast", "data_movement", "communication", "optimizer", "other".
const char* to_string(KernelCategory c);

KernelCategory classify_kernel(const KernelRecord& k, const std::string& format);

}  // namespace trex::profile
