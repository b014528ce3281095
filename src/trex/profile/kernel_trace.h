// What every trace reader produces: the kernels (device operators) of one trace, in one
// vocabulary, whatever the trace's format (trex Chrome trace, PyTorch/Kineto JSON, Ascend msprof
// op_summary CSV). The anatomy (anatomy.h) reads only this.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace trex::profile {

// One launch of one kernel.
struct KernelRecord {
  std::string name;        // operator or kernel name as the trace gives it
  std::string trace_kind;  // the trace's own classification: trex category, Kineto cat, msprof Task Type
  std::string op_type;     // msprof "OP Type"; empty elsewhere
  double start_us = 0;
  double dur_us = 0;       // device (or, for CPU traces, self) time of this launch
  double flops = 0;        // 0: the trace does not say
  double bytes = 0;        // 0: the trace does not say
  bool is_launch = true;   // false for a span whose child spans take most of its time (trex, CPU ops)
  std::map<std::string, double> pipe_ratios;  // msprof: "aiv_vec_ratio" -> 0.31, ...
};

// A training step as the trace marks it (ProfilerStep#N).
struct StepSpan {
  long long step = 0;
  double start_us = 0;
  double end_us = 0;
};

struct KernelTrace {
  std::string path;
  std::string format;   // "trex", "kineto", "msprof"
  int rank = -1;        // distributedInfo.rank (msprof: Device_id); -1 when absent
  std::vector<KernelRecord> kernels;
  std::vector<StepSpan> steps;
  // The device timeline the kernels were observed on; idle time is what no kernel covers.
  double window_begin_us = 0;
  double window_end_us = 0;
  double window_us = 0;  // length of the windows: the steps, else [window_begin, window_end)
  double busy_us = 0;    // of which some kernel was running
  std::vector<std::string> notes;  // what the reader left out, one line each
};

}  // namespace trex::profile
