// Operator tracing: spans are recorded only while enabled, nest into self times, land in the
// Chrome trace JSON with their categories, and threads keep their own buffers.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "trex/core/thread_pool.h"
#include "trex/core/trace.h"
#include "trex/util/error.h"
#include "trex/util/io_error.h"

namespace trex::core {
namespace {

void busy_for_us(int64_t us) {
  int64_t until = trace_now_ns() + us * 1000;
  while (trace_now_ns() < until) {
  }
}

class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    trace_enable(false);
    trace_clear();
  }
  void TearDown() override {
    trace_enable(false);
    trace_clear();
  }
};

TEST_F(TraceTest, DisabledRecordsNothing) {
  { TREX_TRACE(kGemm, "off"); }
  EXPECT_TRUE(trace_collect().empty());
}

TEST_F(TraceTest, NestedSpansSplitIntoSelfTimes) {
  trace_enable(true);
  int64_t t0 = trace_now_ns();
  {
    TREX_TRACE(kAttention, "outer");
    busy_for_us(2000);
    {
      TREX_TRACE(kGemm, "inner");
      busy_for_us(3000);
    }
  }
  busy_for_us(1000);
  int64_t t1 = trace_now_ns();
  trace_enable(false);
  std::vector<TraceEvent> ev = trace_collect();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_STREQ(ev[0].name, "outer");  // the enclosing span sorts first
  EXPECT_STREQ(ev[1].name, "inner");
  TraceSummary s = summarize_trace(ev, trace_thread_id(), t0, t1);
  double inner = double(ev[1].end_ns - ev[1].begin_ns) / 1e9;
  double outer = double(ev[0].end_ns - ev[0].begin_ns) / 1e9;
  EXPECT_NEAR(s.seconds[int(TraceCategory::kGemm)], inner, 1e-9);
  EXPECT_NEAR(s.seconds[int(TraceCategory::kAttention)], outer - inner, 1e-9);
  // Nothing is counted twice: categories plus idle make up the wall time.
  double sum = s.idle_s;
  for (double x : s.seconds) sum += x;
  EXPECT_NEAR(sum, s.wall_s, 1e-9);
  EXPECT_GT(s.idle_s, 0.0);
  EXPECT_NE(s.to_string().find("attention"), std::string::npos);
  EXPECT_NE(s.to_string().find("idle"), std::string::npos);
}

TEST_F(TraceTest, ThreadsKeepTheirOwnSpans) {
  trace_enable(true);
  int main_id = trace_thread_id();
  int other_id = -1;
  std::thread t([&] {
    other_id = trace_thread_id();
    TREX_TRACE(kData, "loader");
  });
  t.join();
  { TREX_TRACE(kOptimizer, "step"); }
  std::vector<TraceEvent> ev = trace_collect();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_NE(main_id, other_id);
  for (const TraceEvent& e : ev) {
    if (std::string(e.name) == "loader") {
      EXPECT_EQ(e.thread, other_id);
      EXPECT_EQ(e.category, TraceCategory::kData);
    } else {
      EXPECT_EQ(e.thread, main_id);
    }
  }
}

TEST_F(TraceTest, ChromeTraceIsValidJsonWithCategories) {
  trace_enable(true);
  {
    TREX_TRACE(kMoeDispatch, "dispatch");
    TREX_TRACE(kElementwise, "swiglu");
  }
  std::vector<TraceEvent> ev = trace_collect();
  std::string path = ::testing::TempDir() + "trex_trace_test.json";
  write_chrome_trace(path, ev);
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["traceEvents"].size(), 2u);
  EXPECT_EQ(j["traceEvents"][0]["name"], "dispatch");
  EXPECT_EQ(j["traceEvents"][0]["cat"], "moe_dispatch");
  EXPECT_EQ(j["traceEvents"][0]["ph"], "X");
  EXPECT_EQ(j["traceEvents"][1]["cat"], "elementwise");
  EXPECT_GE(j["traceEvents"][0]["dur"].get<double>(), j["traceEvents"][1]["dur"].get<double>());
  std::remove(path.c_str());
}

TEST_F(TraceTest, WorkCountsLandOnTheInnermostSpan) {
  trace_count(1, 1);  // no span open, tracing off: nothing
  trace_enable(true);
  trace_count(5, 5);  // no span open: dropped
  {
    TREX_TRACE(kAttention, "outer");
    trace_count(10, 100);
    {
      TREX_TRACE(kGemm, "inner");
      trace_count(2000, 300);
      trace_count(1000, 0);
    }
  }
  std::vector<TraceEvent> ev = trace_collect();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].flops, 10);
  EXPECT_EQ(ev[0].bytes, 100);
  EXPECT_EQ(ev[1].flops, 3000);
  EXPECT_EQ(ev[1].bytes, 300);
}

// Work run as tasks on pool workers (which have no span open) reaches the span open where it was
// dispatched, through a TraceForward: the same totals with 1, 2 and 4 threads. A span a task opens
// keeps its own counts.
TEST_F(TraceTest, WorkOnPoolWorkersReachesTheDispatchingSpan) {
  trace_enable(true);
  const int64_t tasks = 37;
  double expect_flops = 0, expect_bytes = 0;
  for (int64_t i = 0; i < tasks; ++i) {
    expect_flops += double(1000 + i);
    expect_bytes += double(10 * i);
  }
  for (int threads : {1, 2, 4}) {
    trace_clear();
    ThreadPool pool(threads);
    std::atomic<int> off_caller{0};
    const std::thread::id caller = std::this_thread::get_id();
    {
      TREX_TRACE(kGemm, "products");
      TraceForward counts;
      pool.parallel_for(0, tasks, 1, [&](int64_t lo, int64_t hi) {
        TraceForward::Scope scope(counts);
        for (int64_t i = lo; i < hi; ++i) {
          if (std::this_thread::get_id() != caller) off_caller++;
          trace_count(double(1000 + i), double(10 * i));
          if (i == 0) {
            TREX_TRACE(kElementwise, "own");
            trace_count(7, 8);
            // Hold this thread until another one has taken a task (the caller may otherwise
            // run them all before a worker wakes): the check is that workers' counts arrive.
            const int64_t give_up = trace_now_ns() + int64_t(10e9);
            while (threads > 1 && off_caller.load() == 0 &&
                   std::this_thread::get_id() == caller && trace_now_ns() < give_up)
              std::this_thread::yield();
          }
        }
      });
    }
    if (threads > 1) {
      EXPECT_GT(off_caller.load(), 0) << threads;  // workers did run tasks
    }
    std::vector<TraceEvent> ev = trace_collect();
    double products_flops = -1, products_bytes = -1, own_flops = -1, own_bytes = -1;
    for (const TraceEvent& e : ev) {
      if (std::string(e.name) == "products") products_flops = e.flops, products_bytes = e.bytes;
      if (std::string(e.name) == "own") own_flops = e.flops, own_bytes = e.bytes;
    }
    EXPECT_EQ(products_flops, expect_flops) << threads << " threads";
    EXPECT_EQ(products_bytes, expect_bytes) << threads << " threads";
    EXPECT_EQ(own_flops, 7) << threads << " threads";
    EXPECT_EQ(own_bytes, 8) << threads << " threads";
  }
  // Tracing off: a forward captures nothing and its scopes change nothing.
  trace_enable(false);
  trace_clear();
  {
    TREX_TRACE(kGemm, "off");
    TraceForward counts;
    TraceForward::Scope scope(counts);
    trace_count(1, 1);
  }
  EXPECT_TRUE(trace_collect().empty());
}

TEST_F(TraceTest, StepsAndRankReachTheChromeTraceForHta) {
  trace_enable(true);
  int64_t t0 = trace_now_ns();
  {
    TREX_TRACE(kGemm, "mm");
    trace_count(64, 32);
  }
  trace_record_step(12, t0, trace_now_ns());
  std::vector<TraceEvent> ev = trace_collect();
  // Steps frame the work: they are no category of it.
  TraceSummary s = summarize_trace(ev, trace_thread_id(), t0, trace_now_ns());
  double sum = s.idle_s;
  for (double x : s.seconds) sum += x;
  EXPECT_NEAR(sum, s.wall_s, 1e-9);
  std::string path = ::testing::TempDir() + "trex_trace_step_test.json";
  TraceMetadata meta;
  meta.rank = 2;
  meta.world_size = 8;
  meta.backend = "mpi";
  write_chrome_trace(path, ev, meta);
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["distributedInfo"]["rank"], 2);
  EXPECT_EQ(j["distributedInfo"]["world_size"], 8);
  EXPECT_EQ(j["distributedInfo"]["backend"], "mpi");
  bool step = false, mm = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["name"] == "ProfilerStep#12") {
      step = true;
      EXPECT_EQ(e["cat"], "user_annotation");
    }
    if (e["name"] == "mm") {
      mm = true;
      EXPECT_EQ(e["args"]["flops"], 64);
      EXPECT_EQ(e["args"]["bytes"], 32);
    }
  }
  EXPECT_TRUE(step);
  EXPECT_TRUE(mm);
  std::remove(path.c_str());
}

// The system's refusal (util/io_error.h: the command line exits 1), not bad input.
TEST_F(TraceTest, UnwritablePathIsAnIoError) {
  EXPECT_THROW(write_chrome_trace("/nonexistent-dir/trace.json", {}), IoError);
}

}  // namespace
}  // namespace trex::core
