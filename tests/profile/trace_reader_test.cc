// The trace readers on small traces of each format, written here or shipped in data/ (all
// hand-made, tiny): what they extract, and one clear error for every kind of bad file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "trex/core/trace.h"
#include "trex/profile/trace_reader.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::profile {
namespace {

namespace fs = std::filesystem;

std::string data(const std::string& name) { return std::string(TREX_SOURCE_DIR) + "/tests/profile/data/" + name; }

std::string scratch(const std::string& name, const std::string& text) {
  std::string p = (fs::temp_directory_path() / ("trex_profile_" + std::to_string(::getpid()) + "_" + name)).string();
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

// The error a reader throws for `path`, which must name the file.
std::string error_for(const std::string& path) {
  try {
    read_trace(path);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
    return e.what();
  }
  ADD_FAILURE() << "no error for " << path;
  return "";
}

const KernelRecord* find(const KernelTrace& t, const std::string& name) {
  for (const KernelRecord& k : t.kernels)
    if (k.name == name) return &k;
  return nullptr;
}

TEST(TraceReader, TrexTraceWrittenByCoreRoundTrips) {
  using namespace core;
  trace_enable(false);
  trace_clear();
  trace_enable(true);
  int64_t t0 = trace_now_ns();
  {
    TREX_TRACE(kAttention, "outer");
    {
      TREX_TRACE(kGemm, "inner");
      trace_count(2e6, 3e4);
      int64_t until = trace_now_ns() + 200000;
      while (trace_now_ns() < until) {
      }
    }
  }
  trace_record_step(7, t0, trace_now_ns());
  int64_t later = trace_now_ns() + 10000;
  while (trace_now_ns() < later) {
  }
  { TREX_TRACE(kOther, "after_the_step"); }
  trace_enable(false);
  std::string path = scratch("core.json", "");
  TraceMetadata meta;
  meta.rank = 3;
  meta.world_size = 4;
  write_chrome_trace(path, trace_collect(), meta);
  trace_clear();

  KernelTrace t = read_trace(path);
  EXPECT_EQ(t.format, "trex");
  EXPECT_EQ(t.rank, 3);
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.steps[0].step, 7);
  // The span after the step is left out; the outer span's record is its self time, not a launch.
  ASSERT_EQ(t.kernels.size(), 2u);
  const KernelRecord* inner = find(t, "inner");
  const KernelRecord* outer = find(t, "outer");
  ASSERT_TRUE(inner && outer);
  EXPECT_TRUE(inner->is_launch);
  EXPECT_FALSE(outer->is_launch);
  EXPECT_EQ(inner->flops, 2e6);
  EXPECT_EQ(inner->bytes, 3e4);
  EXPECT_GE(inner->dur_us, 200.0);
  EXPECT_LT(outer->dur_us, inner->dur_us);
  EXPECT_GT(t.window_us, inner->dur_us);
  EXPECT_LE(t.busy_us, t.window_us);
  fs::remove(path);
}

TEST(TraceReader, TrexFixtureSelfTimesAndIdle) {
  KernelTrace t = read_trace(data("trex_trace.json"));
  EXPECT_EQ(t.format, "trex");
  EXPECT_EQ(t.rank, 0);
  ASSERT_EQ(t.steps.size(), 2u);
  // 2 steps x 14 spans; the checkpoint lies outside both steps.
  EXPECT_EQ(t.kernels.size(), 28u);
  const KernelRecord* attention = find(t, "attention");
  ASSERT_TRUE(attention);
  EXPECT_DOUBLE_EQ(attention->dur_us, 6000 - 1500 - 12 - 3000 - 1200);
  EXPECT_FALSE(attention->is_launch);
  EXPECT_DOUBLE_EQ(t.window_us, 2 * 19000.0);
  // Busy: the top-level spans of each step.
  double busy_step = 40 + 30 + 6000 + 4000 + 15 + 2500 + 18 + 400 + 3000 + 500;
  EXPECT_DOUBLE_EQ(t.busy_us, 2 * busy_step);
}

TEST(TraceReader, KinetoGpuKernelsWithFlopsThroughCorrelation) {
  KernelTrace t = read_trace(data("kineto_trace.json"));
  EXPECT_EQ(t.format, "kineto");
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.kernels.size(), 2u * 13);  // the GPU events only
  const KernelRecord* gemm = find(t, "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32");
  ASSERT_TRUE(gemm);
  // The kernel has only a correlation id; the flops come from its aten::mm.
  EXPECT_DOUBLE_EQ(gemm->flops, 2.0 * 1024 * 4096 * 4096);
  const KernelRecord* memcpy = find(t, "Memcpy DtoD (Device -> Device)");
  ASSERT_TRUE(memcpy);
  EXPECT_EQ(memcpy->trace_kind, "gpu_memcpy");
  EXPECT_GT(t.window_us, t.busy_us);  // gaps between kernels are idle
}

TEST(TraceReader, KinetoCpuOnlyTraceUsesOperatorSelfTimes) {
  std::string path = scratch("cpu.json", R"({"traceEvents":[
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":10,"dur":50},
    {"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":15,"dur":40,"args":{"flops":1000}},
    {"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":2,"ts":70,"dur":10}]})");
  KernelTrace t = read_trace(path);
  EXPECT_EQ(t.format, "kineto");
  ASSERT_EQ(t.kernels.size(), 3u);
  EXPECT_DOUBLE_EQ(find(t, "aten::linear")->dur_us, 10);
  EXPECT_DOUBLE_EQ(find(t, "aten::addmm")->flops, 1000);
  EXPECT_DOUBLE_EQ(t.window_us, 100);
  EXPECT_DOUBLE_EQ(t.busy_us, 60);
  fs::remove(path);
}

TEST(TraceReader, LegacyPytorchTraceWithoutCategories) {
  // The shape torch 1.13 without Kineto exports: a bare array, no "cat", pid "CPU functions".
  std::string path = scratch("legacy.json", R"([
    {"name": "ProfilerStep#0", "ph": "X", "ts": 0, "dur": 200, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "aten::linear", "ph": "X", "ts": 10, "dur": 100, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "aten::addmm", "ph": "X", "ts": 20, "dur": 80, "tid": 1, "pid": "CPU functions", "args": {}}])");
  KernelTrace t = read_trace(path);
  EXPECT_EQ(t.format, "kineto");
  ASSERT_EQ(t.steps.size(), 1u);
  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_DOUBLE_EQ(find(t, "aten::linear")->dur_us, 20);
  EXPECT_DOUBLE_EQ(t.busy_us, 100);
  fs::remove(path);
}

TEST(TraceReader, MsprofOpSummaryColumnsAndRatios) {
  KernelTrace t = read_trace(data("msprof_op_summary.csv"));
  EXPECT_EQ(t.format, "msprof");
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.kernels.size(), 2u * 16);
  const KernelRecord& mm = t.kernels[0];
  EXPECT_EQ(mm.op_type, "MatMulV3");
  EXPECT_EQ(mm.trace_kind, "AI_CORE");
  EXPECT_DOUBLE_EQ(mm.dur_us, 820.5);
  EXPECT_DOUBLE_EQ(mm.start_us, 1002.0);  // msprof's trailing tab is tolerated
  EXPECT_DOUBLE_EQ(mm.pipe_ratios.at("aic_mac_ratio"), 0.812);
  EXPECT_EQ(mm.pipe_ratios.count("aiv_vec_ratio"), 0u);  // N/A cells are absent, not zero
  EXPECT_GT(t.window_us, t.busy_us);
}

TEST(TraceReader, MsprofQuotedFieldsAndNoStartTimes) {
  std::string path = scratch("nostart.csv",
                             "Op Name,OP Type,Input Shapes,Task Duration(us),Task Wait Time(us)\n"
                             "\"a,b\",Add,\"1,2;3,\"\"4\"\"\",10,5\n"
                             "c,Mul,\"multi\nline\",20,1\n");
  KernelTrace t = read_trace(path);
  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_EQ(t.kernels[0].name, "a,b");
  EXPECT_DOUBLE_EQ(t.busy_us, 30);
  EXPECT_DOUBLE_EQ(t.window_us, 36);
  fs::remove(path);
}

TEST(TraceReader, BadFilesAreOneLineErrorsNamingTheFile) {
  EXPECT_NE(error_for("/nonexistent/trace.json").find("/nonexistent/trace.json"), std::string::npos);
  std::string empty = scratch("empty.json", "  \n");
  EXPECT_NE(error_for(empty).find("empty"), std::string::npos);
  std::string unknown = scratch("unknown.txt", "step,seconds\n1,0.5\n");
  EXPECT_NE(error_for(unknown).find("unknown trace format"), std::string::npos);
  // A JSON trace cut off mid-way.
  std::string full = read_file(data("kineto_trace.json"));
  std::string cut = scratch("cut.json", full.substr(0, full.size() / 2));
  EXPECT_NE(error_for(cut).find("truncated"), std::string::npos);
  std::string no_events = scratch("noevents.json", R"({"foo": 1})");
  EXPECT_NE(error_for(no_events).find("traceEvents"), std::string::npos);
  std::string no_kernels = scratch("nokernels.json", R"({"traceEvents":[{"ph":"X","cat":"python_function","name":"f","ts":1,"dur":2}]})");
  EXPECT_NE(error_for(no_kernels).find("without kernels"), std::string::npos);
  // A CSV cut off in its last row names the line.
  std::string csv = read_file(data("msprof_op_summary.csv"));
  std::string cut_csv = scratch("cut.csv", csv.substr(0, csv.size() - 40));
  EXPECT_NE(error_for(cut_csv).find(":33:"), std::string::npos);
  std::string bad_number = scratch("bad.csv", "Op Name,Task Duration(us)\nx,fast\n");
  EXPECT_NE(error_for(bad_number).find(":2: Task Duration(us): not a number"), std::string::npos);
  for (const std::string& p : {empty, unknown, cut, no_events, no_kernels, cut_csv, bad_number}) fs::remove(p);
}

}  // namespace
}  // namespace trex::profile
