// `trex data distil` through the binary against a fake chat server that answers each statement
// of a real corpus in a chosen way: right (python and LP), with no code, with a program that
// fails, with the wrong variables, the wrong direction, the wrong objective; every reply comes
// after a garbage body (retried) and with reasoning. Then the cache on a rerun, an endpoint that
// is down, and bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "chat/fake_chat_server.h"
#include "nlohmann/json.hpp"
#include "util/temp_dir.h"
#include "trex/lp/lp_format.h"
#include "trex/util/atomic_file.h"
#include "trex/util/subprocess.h"

namespace trex::ordata {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using test_util::TempDir;

ProcessResult trex(std::vector<std::string> args) { return test_util::run_trex(std::move(args)); }

std::vector<json> read_jsonl(const std::string& path) {
  std::vector<json> rows;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) rows.push_back(json::parse(line));
  return rows;
}

// The reference LP of a sample changed by `edit`, as a fenced LP block.
std::string edited_lp(const std::string& lp_text, const std::function<void(lp::Model&)>& edit) {
  lp::Model m = lp::read_lp(lp_text);
  edit(m);
  return "```lp\n" + lp::write_lp(m) + "```\n";
}

TEST(DataDistil, KeepsOnlyVerifiedRepliesAndSaysWhyTheRestWereRejected) {
  TempDir d("distil");
  // diet, seed 3: eight samples, the seventh infeasible.
  ProcessResult gen = trex({"data", "gen", "--count", "8", "--seed", "3", "--families", "diet", "--out",
                            d.path + "/corpus", "--quiet", "--uncompressed", "--threads", "1"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::vector<json> samples = read_jsonl(d.path + "/corpus/data/part-00000.jsonl");
  ASSERT_EQ(samples.size(), 8u);
  for (size_t k = 0; k < samples.size(); ++k)
    ASSERT_EQ(samples[k]["answer"]["status"], k == 6 ? "infeasible" : "optimal") << k;

  std::vector<std::string> replies(8);
  auto lp_of = [&](size_t k) { return samples[k]["formulations"]["lp"].get<std::string>(); };
  replies[0] = "The model, then the program.\n```python\n" + samples[0]["formulations"]["gurobipy"].get<std::string>() + "```\n";
  replies[1] = "```lp\n" + lp_of(1) + "```\n";
  replies[2] = "I would rather not write code today.";
  replies[3] = "```python\nraise RuntimeError('no model here')\n```\n";
  replies[4] = edited_lp(lp_of(4), [](lp::Model& m) { m.add_var("spare", 0, 1); });
  replies[5] = edited_lp(lp_of(5), [](lp::Model& m) { m.sense = lp::Sense::kMaximize; });
  replies[6] = "```lp\n" + lp_of(6) + "```\n";
  replies[7] = edited_lp(lp_of(7), [](lp::Model& m) {
    for (int j = 0; j < m.num_vars(); ++j) m.set_cost(j, 2 * m.var(j).cost);
  });
  test_util::FakeServer server([&](const std::string& user) {
    for (size_t k = 0; k < samples.size(); ++k)
      if (user.find(samples[k]["statement"].get<std::string>()) != std::string::npos) return replies[k];
    return std::string("unknown statement");
  });
  setenv("TREX_TEST_KEY", "sekrit", 1);
  // Every request first gets a garbage body (retried) and every reply carries reasoning.
  write_file_atomic(d.path + "/template.txt", "### system\nYou formulate.\n### user\nthink-aloud garbage-once\n{{question}}\n");
  const std::vector<std::string> args = {"data", "distil", d.path + "/corpus", "--endpoint", server.url(), "--model", "fake",
                                         "--api-key-env", "TREX_TEST_KEY", "--out", d.path + "/out", "--template",
                                         d.path + "/template.txt", "--backoff", "0.01", "--quiet"};
  ProcessResult r = trex(args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("8 samples from " + d.path + "/corpus, 3 accepted (0 replies from the cache)"), std::string::npos)
      << r.out;
  EXPECT_EQ(server.requests(), 16);  // each statement: garbage, then the reply

  const json manifest = json::parse(read_file(d.path + "/out/manifest.json"));
  EXPECT_EQ(manifest["samples"], 8);
  EXPECT_EQ(manifest["accepted"], 3);
  std::map<std::string, std::string> reason_of;
  for (const json& rej : manifest["rejected"]) reason_of[rej["id"]] = rej["reason"];
  auto id = [&](size_t k) { return samples[k]["id"].get<std::string>(); };
  EXPECT_EQ(reason_of[id(2)], "no_formulation");
  EXPECT_EQ(reason_of[id(3)], "execution_failed");
  EXPECT_EQ(reason_of[id(4)], "contract_violation");
  EXPECT_EQ(reason_of[id(5)], "direction_mismatch");
  EXPECT_EQ(reason_of[id(7)], "objective_mismatch");
  EXPECT_EQ(reason_of.size(), 5u);

  std::vector<json> sft = read_jsonl(d.path + "/out/sft.jsonl");
  ASSERT_EQ(sft.size(), 3u);
  std::vector<std::string> kept;
  for (const json& row : sft) {
    kept.push_back(row["metadata"]["id"]);
    ASSERT_EQ(row["messages"].size(), 3u);
    EXPECT_EQ(row["messages"][0]["role"], "system");
    EXPECT_NE(row["messages"][1]["content"].get<std::string>().find("think-aloud"), std::string::npos);
    const std::string assistant = row["messages"][2]["content"];
    EXPECT_EQ(assistant.rfind("<think>\nthinking about think-aloud", 0), 0u) << assistant;
    EXPECT_EQ(row["metadata"]["source"], "endpoint");
  }
  EXPECT_EQ(kept, (std::vector<std::string>{id(0), id(1), id(6)}));
  EXPECT_EQ(sft[0]["metadata"]["code_kind"], "python");
  EXPECT_EQ(sft[2]["metadata"]["answer"], "infeasible");

  // A rerun asks nothing: every reply comes from the cache, and the rows are the same bytes.
  const std::string first = read_file(d.path + "/out/sft.jsonl");
  ProcessResult again = trex(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("3 accepted (8 replies from the cache)"), std::string::npos) << again.out;
  EXPECT_EQ(server.requests(), 16);
  EXPECT_EQ(read_file(d.path + "/out/sft.jsonl"), first);
}

TEST(DataDistil, AnEndpointThatIsDownRejectsEverySampleWithItsReason) {
  TempDir d("distil");
  ProcessResult gen = trex({"data", "gen", "--count", "2", "--seed", "1", "--families", "diet", "--out",
                            d.path + "/corpus", "--quiet", "--threads", "1"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  ProcessResult r = trex({"data", "distil", d.path + "/corpus", "--endpoint", "http://127.0.0.1:1/v1", "--model", "m",
                          "--out", d.path + "/out", "--retries", "1", "--backoff", "0.01", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("endpoint errors: run again to resume"), std::string::npos) << r.out;
  const json manifest = json::parse(read_file(d.path + "/out/manifest.json"));
  EXPECT_EQ(manifest["accepted"], 0);
  EXPECT_EQ(manifest["per_reason"]["endpoint_error"], 2);
  EXPECT_EQ(read_file(d.path + "/out/sft.jsonl"), "");
}

TEST(DataDistil, BadInputIsOneLineAndExitTwo) {
  TempDir d("distil");
  fs::create_directories(d.path + "/bad/data");
  write_file_atomic(d.path + "/bad/data/part-00000.jsonl", "{\"id\": \"x\"}\n");
  fs::create_directories(d.path + "/cut/data");
  write_file_atomic(d.path + "/cut/data/part-00000.jsonl", "{\"id\": \"x\", \"statement\": \"sho");
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  std::vector<Case> cases = {
      {{d.path + "/nothing"}, d.path + "/nothing"},
      {{d.path + "/bad"}, "part-00000.jsonl:1"},
      {{d.path + "/cut"}, "part-00000.jsonl:1"},
      {{d.path + "/bad", "--jobs", "0"}, "--jobs"},
      {{d.path + "/bad", "--mode", "loose"}, "--mode"},
  };
  for (const Case& k : cases) {
    std::vector<std::string> args = {"data", "distil"};
    args.insert(args.end(), k.args.begin(), k.args.end());
    for (const char* a : {"--endpoint", "http://127.0.0.1:1/v1", "--model", "m", "--out"}) args.push_back(a);
    args.push_back(d.path + "/out");
    ProcessResult r = trex(args);
    EXPECT_EQ(r.exit_code, 2) << k.names << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(k.names), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace trex::ordata
