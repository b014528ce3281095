#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "trex/util/progress.h"

namespace trex {
namespace {

std::string contents(FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

TEST(ProgressBar, PlainModePrintsShortLinesAndAFinalOne) {
  FILE* f = std::tmpfile();
  {
    ProgressBar bar("solve", 10, ProgressBar::Mode::kAuto, f, /*plain_interval_s=*/3600);
    EXPECT_EQ(bar.mode(), ProgressBar::Mode::kPlain);  // a file is not a terminal
    for (int k = 0; k < 10; ++k) bar.advance();
  }
  std::string out = contents(f);
  EXPECT_EQ(out.find('\r'), std::string::npos);
  EXPECT_NE(out.find("solve: 10/10 (100%)"), std::string::npos) << out;
  EXPECT_NE(out.find("done"), std::string::npos);
  std::fclose(f);
}

TEST(ProgressBar, TerminalModeRedrawsInPlace) {
  FILE* f = std::tmpfile();
  {
    ProgressBar bar("train", 4, ProgressBar::Mode::kTerminal, f);
    bar.advance(4);
    bar.finish();
    bar.finish();  // a second finish prints nothing
  }
  std::string out = contents(f);
  EXPECT_NE(out.find("\rtrain ["), std::string::npos) << out;
  EXPECT_NE(out.find("4/4"), std::string::npos);
  EXPECT_EQ(out.find("4/4", out.find("4/4") + 1), std::string::npos);
  std::fclose(f);
}

TEST(ProgressBar, CountsFromManyThreads) {
  FILE* f = std::tmpfile();
  ProgressBar bar("work", 8000, ProgressBar::Mode::kOff, f);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int k = 0; k < 1000; ++k) bar.advance();
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bar.done(), 8000);
  bar.finish();
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

}  // namespace
}  // namespace trex
