// `trex eval gen` end to end against a fake chat server: few-shot choice, seeds per sample,
// the cache on a rerun.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "chat/fake_chat_server.h"
#include "nlohmann/json.hpp"
#include "util/temp_dir.h"
#include "trex/util/atomic_file.h"
#include "trex/util/subprocess.h"

namespace trex::oreval {
namespace {

namespace fs = std::filesystem;
using test_util::FakeServer;

using test_util::TempDir;

TEST(EvalGen, EndToEndAgainstAFakeServer) {
  FakeServer s;
  TempDir d("gen");
  setenv("TREX_TEST_KEY", "sekrit", 1);
  write_file_atomic(d.path + "/bench.jsonl",
                    "{\"id\":\"a\",\"question\":\"Maximize profit from chairs and tables with wood limits\",\"answer\":1}\n"
                    "{\"id\":\"b\",\"question\":\"Maximize profit from tables and desks with wood limits\",\"answer\":2}\n"
                    "{\"id\":\"c\",\"question\":\"Minimize shipping cost between warehouses and stores\",\"answer\":3}\n");
  std::vector<std::string> argv = {TREX_BINARY, "eval", "gen", "--bench", d.path + "/bench.jsonl", "--id-field", "id",
                                   "--endpoint", s.url(), "--model", "fake", "--api-key-env", "TREX_TEST_KEY",
                                   "--out", d.path + "/out", "--shots", "1", "--samples", "2", "--seed", "7", "--quiet"};
  ProcessOptions po;
  po.timeout_s = 60;
  ProcessResult r = run_process(argv, po);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("6 requests, 6 answered (0 from the cache), 0 failed"), std::string::npos) << r.out;
  EXPECT_EQ(s.requests(), 6);
  std::string lines = read_file(d.path + "/out/completions.jsonl");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 6);
  for (const std::string& body : s.bodies()) {
    auto j = nlohmann::json::parse(body);
    std::string user = j["messages"].back()["content"];
    EXPECT_EQ(j["model"], "fake");
    EXPECT_TRUE(j["seed"] == 7 || j["seed"] == 8) << j["seed"];
    // The one example is the most similar other item, never the item itself.
    if (user.find("Problem:\nMaximize profit from chairs") != std::string::npos) {
      EXPECT_NE(user.find("Question:\nMaximize profit from tables and desks"), std::string::npos) << user;
      EXPECT_EQ(user.find("Question:\nMaximize profit from chairs"), std::string::npos) << user;
    }
  }
  ProcessResult again = run_process(argv, po);
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_NE(again.out.find("6 answered (6 from the cache)"), std::string::npos) << again.out;
  EXPECT_EQ(s.requests(), 6);
}

// trex serve with number slots answers 422 (number_slot_unfilled) for a completion that writes a
// slot the prompt has no number for: eval gen records it as an answer that failed (completion ""
// with the reason, scored by eval run as no code), not as a request to retry, and exits 0.
TEST(EvalGen, AnUnfilledNumberSlotIsAFailedCompletionNotAFailedRequest) {
  FakeServer s;
  TempDir d("gen422");
  setenv("TREX_TEST_KEY", "sekrit", 1);
  write_file_atomic(d.path + "/bench.jsonl",
                    "{\"id\":\"a\",\"question\":\"Maximize profit 3 4 5 slot-422\",\"answer\":1}\n"
                    "{\"id\":\"b\",\"question\":\"Maximize profit from tables\",\"answer\":2}\n");
  std::vector<std::string> argv = {TREX_BINARY, "eval", "gen", "--bench", d.path + "/bench.jsonl", "--id-field", "id",
                                   "--endpoint", s.url(), "--model", "fake", "--api-key-env", "TREX_TEST_KEY",
                                   "--out", d.path + "/out", "--quiet"};
  ProcessOptions po;
  po.timeout_s = 60;
  ProcessResult r = run_process(argv, po);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("2 requests, 1 answered (0 from the cache), 0 failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 answers wrote a number slot the prompt has no number for"), std::string::npos) << r.out;
  EXPECT_EQ(s.requests(), 2);  // no retry
  std::vector<nlohmann::json> rows;
  std::istringstream lines(read_file(d.path + "/out/completions.jsonl"));
  for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 2u);
  const nlohmann::json& a = rows[0]["id"] == "a" ? rows[0] : rows[1];
  EXPECT_EQ(a["completion"], "");
  EXPECT_NE(a["error"].get<std::string>().find("number slot <n_4>, but the prompt has 3 numbers"), std::string::npos) << a;
  EXPECT_EQ(read_file(d.path + "/out/errors.jsonl"), "");
}

}  // namespace
}  // namespace trex::oreval
