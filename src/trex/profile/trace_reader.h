// Reading a trace file into a KernelTrace (kernel_trace.h).
//
// Formats, told apart by content rather than by file name:
//   - trex's Chrome trace (`trex train --trace`, core/trace.h): nested operator spans on the
//     training thread; each span's self time is one record, with the flops and bytes the
//     kernels counted into it (args), and ProfilerStep#N spans as steps;
//   - PyTorch/Kineto JSON (torch.profiler's export_chrome_trace): GPU events (cat "kernel",
//     "gpu_memcpy", "gpu_memset") are the kernels; without any, the CPU operators (cat "cpu_op")
//     by self time. cpu_op args "flops" reach their kernels through "External id" (directly, or
//     through the launching runtime call's "correlation", which is the id of the "ac2g" flow);
//     "distributedInfo" gives the rank;
//   - Ascend msprof op_summary CSV: one row per task, "Op Name", "OP Type", "Task Type",
//     "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)" and the pipe ratio
//     columns (aic_*_ratio, aiv_*_ratio).
// Errors: an unreadable file, a truncated or malformed one, or one in no known format is an
// InputError of one line naming the file (and the line, for CSV).
#pragma once

#include <string>

#include "trex/profile/kernel_trace.h"

namespace trex::profile {

KernelTrace read_trace(const std::string& path);

// The readers behind it, on the file's text; `path` names the file in errors.
KernelTrace read_chrome_trace(const std::string& text, const std::string& path);
KernelTrace read_msprof_op_summary(const std::string& text, const std::string& path);

}  // namespace trex::profile
