p='src/trex/core/trace.cc'
s=open(p).read()
s=s.replace('''void TraceSpan::begin(TraceCategory category, const char* name) {''','''namespace {
double scratch_clock(clockid_t c) { timespec ts; clock_gettime(c, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
struct ScratchAgg { std::mutex mu; std::map<std::string, std::array<double, 5>> m;
  ~ScratchAgg() { for (auto& [k, v] : m) std::fprintf(stderr, "SPAN %s %d %.0f %.6f %.6f %.6f\\n", k.c_str(), int(v[4]), v[0], v[1], v[2], v[3]); } };
ScratchAgg g_scratch;
thread_local double t_b[64][2]; thread_local int t_depth = 0;
}
void TraceSpan::begin(TraceCategory category, const char* name) {
  if (t_depth < 64) { t_b[t_depth][0] = scratch_clock(CLOCK_PROCESS_CPUTIME_ID); t_b[t_depth][1] = scratch_clock(CLOCK_THREAD_CPUTIME_ID); }
  ++t_depth;''')
s=s.replace('''void TraceSpan::end() {
  int64_t end_ns = trace_now_ns();''','''void TraceSpan::end() {
  int64_t end_ns = trace_now_ns();
  --t_depth;
  if (t_depth < 64) { double pc = scratch_clock(CLOCK_PROCESS_CPUTIME_ID) - t_b[t_depth][0], tc = scratch_clock(CLOCK_THREAD_CPUTIME_ID) - t_b[t_depth][1]; std::lock_guard<std::mutex> l(g_scratch.mu);
    auto& v = g_scratch.m[std::string(name_)]; v[0] += 1; v[1] += (end_ns - begin_ns_) * 1e-9; v[2] += pc; v[3] += tc; v[4] = enclosing_ == nullptr; }''')
s='#include <map>\n#include <array>\n#include <string>\n#include <cstdio>\n#include <ctime>\n'+s
open(p,'w').write(s)
