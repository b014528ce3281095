// What the serving benchmarks (serve_bench, prefill_chunk_bench, decode_step_bench) share: the
// median of the rounds, the load average printed beside them, the process's CPU time, and their
// argument loop, which refuses a flag it does not know or a number it cannot read (exit 2,
// naming the flag) instead of running with a silent 0.
#pragma once


#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "trex/util/cpu_time.h"

namespace trex::bench {

// The middle value (the upper one of an even count), 0 for none.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The 1-minute load average (/proc/loadavg), -1 where unreadable.
inline double load_average() {
  std::ifstream f("/proc/loadavg");
  double l = -1;
  f >> l;
  return l;
}

// CPU seconds this process has used, all its threads together (util/cpu_time.h, the trainer's too).
using trex::process_cpu_seconds;

[[noreturn]] inline void usage_error(const std::string& what) {
  std::fprintf(stderr, "error: %s\n", what.c_str());
  std::exit(2);
}

// An integer in [lo, hi], the whole of `text`, else exit 2 naming `flag`.
inline int64_t parse_int(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = text.empty() ? 0 : std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi)
    usage_error(flag + ": '" + text + "' is not an integer in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "]");
  return int64_t(v);
}

// A comma-separated list of integers in [lo, hi] ("1,2,4,8"), at least one.
inline std::vector<int> parse_int_list(const std::string& flag, const std::string& text, int lo,
                                       int hi) {
  std::vector<int> out;
  for (size_t at = 0;;) {
    const size_t comma = text.find(',', at);
    out.push_back(int(parse_int(flag, text.substr(at, comma - at), lo, hi)));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

// The arguments in order: `while (a.next())`, then a.is("--flag") takes the flag's value with
// a.integer(...) or a.integers(...); anything else is the one positional argument (a.positional()),
// and an unknown --flag ends the program with exit 2.
class Args {
 public:
  Args(int argc, char** argv) : argv_(argv + 1, argv + argc) {}
  bool next() { return ++at_ < argv_.size(); }
  bool is(const char* flag) const { return argv_[at_] == flag; }
  int64_t integer(int64_t lo, int64_t hi) {
    const std::string flag = argv_[at_];
    return parse_int(flag, value(), lo, hi);
  }
  std::vector<int> integers(int lo, int hi) {
    const std::string flag = argv_[at_];
    return parse_int_list(flag, value(), lo, hi);
  }
  const std::string& positional() const {
    if (argv_[at_].rfind("--", 0) == 0) usage_error("unknown flag " + argv_[at_]);
    return argv_[at_];
  }

 private:
  std::string value() {
    if (at_ + 1 >= argv_.size()) usage_error(argv_[at_] + " needs a value");
    return argv_[++at_];
  }
  std::vector<std::string> argv_;
  size_t at_ = size_t(-1);
};

}  // namespace trex::bench
