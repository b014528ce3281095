// `trex serve` as clients outside trex use it: the official OpenAI client library (the npm
// `openai` package, run by Node; scripts/install-deps.sh installs it into
// tests/serve/openai_client/) plain, streamed, several requests at once, loglikelihood and
// errors; `trex eval gen` asking a live server for a benchmark's completions, which
// `trex eval run` then scores; and `trex data distil` asking it to formulate a corpus.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/tiny_checkpoint.h"
#include "nlohmann/json.hpp"
#include "serve/serve_process.h"
#include "trex/util/atomic_file.h"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ServeClients : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("trex-serve-clients-test-" + std::to_string(::getpid())));
    test_util::write_tiny_checkpoint(*dir_);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
  }
  // A server on a free port; `extra` flags appended; its first line in *line.
  static test_util::ServeProcess start(const std::vector<std::string>& extra, std::string* line) {
    std::vector<std::string> args = {TREX_BINARY, "serve", "--ckpt", (*dir_ / "ckpt").string(), "--model-config",
                                     (*dir_ / "model.toml").string(), "--port", "0", "--name", "tiny",
                                     "--context", "2000"};
    args.insert(args.end(), extra.begin(), extra.end());
    return test_util::spawn_server(args, line);
  }
  static fs::path* dir_;
};
fs::path* ServeClients::dir_ = nullptr;

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<json> read_jsonl(const fs::path& p) {
  std::vector<json> rows;
  std::ifstream f(p);
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) rows.push_back(json::parse(line));
  return rows;
}

TEST_F(ServeClients, OfficialOpenAIClientLibrary) {
  const fs::path client_dir = fs::path(TREX_SOURCE_DIR) / "tests/serve/openai_client";
  ASSERT_TRUE(program_available("node")) << "node is missing: run scripts/install-deps.sh";
  ASSERT_TRUE(fs::exists(client_dir / "node_modules/openai/package.json"))
      << "the openai npm package is missing from " << client_dir << ": run scripts/install-deps.sh";
  std::string line;
  test_util::ServeProcess server = start({"--api-key", "sk-trex-test", "--slots", "8"}, &line);
  const int port = test_util::port_of(line);
  ASSERT_GT(port, 0) << line;
  ProcessOptions o;
  o.timeout_s = 900;  // a hang guard only
  ProcessResult r = run_process({"node", (client_dir / "check.mjs").string(),
                                 "http://127.0.0.1:" + std::to_string(port) + "/v1", "tiny", "sk-trex-test"},
                                o);
  EXPECT_EQ(test_util::stop_server(server), 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);

  EXPECT_EQ(out["models"], json::array({"tiny"}));

  const json& plain = out["plain"];
  EXPECT_EQ(plain["object"], "chat.completion");
  EXPECT_EQ(plain["role"], "assistant");
  EXPECT_TRUE(plain["finish_reason"] == "length" || plain["finish_reason"] == "stop") << plain;
  EXPECT_GT(plain["usage"]["prompt_tokens"].get<int>(), 0);
  EXPECT_EQ(plain["usage"]["total_tokens"].get<int>(),
            plain["usage"]["prompt_tokens"].get<int>() + plain["usage"]["completion_tokens"].get<int>());

  // Streamed and whole give the same greedy text and the same usage; the usage chunk comes with
  // no choices, as OpenAI sends it.
  const json& stream = out["stream"];
  EXPECT_EQ(stream["content"], plain["content"]);
  EXPECT_EQ(stream["finish_reason"], plain["finish_reason"]);
  EXPECT_EQ(stream["usage"], plain["usage"]);
  EXPECT_EQ(stream["usage_chunk_choices"], 0);
  EXPECT_GE(stream["chunks"].get<int>(), 3);

  EXPECT_EQ(out["seeded"]["first"], out["seeded"]["second"]);
  EXPECT_EQ(out["seeded"]["indices"], json::array({0, 1}));

  // Eight requests batched together answer what each answers alone, and each has its own id.
  const json& conc = out["concurrent"];
  EXPECT_EQ(conc["together"], conc["alone"]);
  std::vector<std::string> ids = conc["ids"].get<std::vector<std::string>>();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end());

  const json& ll = out["loglikelihood"];
  EXPECT_EQ(ll["text"], "minimize cost");
  EXPECT_EQ(ll["tokens"], ll["prompt_tokens"]);
  EXPECT_EQ(ll["completion_tokens"], 0);
  EXPECT_TRUE(ll["first"].is_null());
  EXPECT_TRUE(ll["rest_finite"].get<bool>());
  EXPECT_TRUE(ll["top"].get<bool>());

  const json& err = out["errors"];
  EXPECT_EQ(err["unknown_model"]["class"], "NotFoundError") << err;
  EXPECT_EQ(err["unknown_model"]["code"], "model_not_found");
  EXPECT_EQ(err["too_long"]["class"], "BadRequestError") << err;
  EXPECT_EQ(err["too_long"]["code"], "context_length_exceeded");
  EXPECT_EQ(err["bad_temperature"]["status"], 400) << err;
  EXPECT_EQ(err["bad_temperature"]["param"], "temperature");
  EXPECT_EQ(err["wrong_key"]["class"], "AuthenticationError") << err;
  EXPECT_EQ(err["wrong_key"]["code"], "invalid_api_key");
}

TEST_F(ServeClients, EvalGenAgainstALiveServerThenEvalRun) {
  const fs::path work = *dir_ / "eval";
  fs::create_directories(work);
  write_file_atomic((work / "bench.jsonl").string(),
                    "{\"id\":\"a\",\"q\":\"maximize 3x+2y with x+y<=4\",\"a\":\"12\"}\n"
                    "{\"id\":\"b\",\"q\":\"minimize cost of the plant\",\"a\":\"5\"}\n"
                    "{\"id\":\"c\",\"q\":\"capacity of the market\",\"a\":\"infeasible\"}\n");
  // A template whose rendering the test knows, so it can ask the server the same question.
  write_file_atomic((work / "template.txt").string(),
                    "### system\nYou model plants.\n### user\nProblem: {{question}}\n");
  std::string line;
  test_util::ServeProcess server = start({"--slots", "4"}, &line);
  const int port = test_util::port_of(line);
  ASSERT_GT(port, 0) << line;
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  const std::vector<std::string> gen = {TREX_BINARY, "eval", "gen", "--bench", (work / "bench.jsonl").string(),
                                        "--id-field", "id", "--question-field", "q", "--answer-field", "a",
                                        "--template", (work / "template.txt").string(),
                                        "--endpoint", url, "--model", "tiny", "--out", (work / "gen").string(),
                                        "--max-tokens", "12", "--temperature", "0", "--concurrency", "3",
                                        "--request-timeout", "600", "--quiet"};
  ProcessOptions o;
  o.timeout_s = 900;  // a hang guard only
  ProcessResult first = run_process(gen, o);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("3 requests, 3 answered (0 from the cache), 0 failed"), std::string::npos) << first.out;

  // Each completion is the server's greedy answer to the rendered prompt.
  std::vector<json> rows = read_jsonl(work / "gen/completions.jsonl");
  ASSERT_EQ(rows.size(), 3u);
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(600, 0);
  for (const json& row : rows) {
    const std::string q = row["id"] == "a"   ? "maximize 3x+2y with x+y<=4"
                          : row["id"] == "b" ? "minimize cost of the plant"
                                             : "capacity of the market";
    json body = {{"model", "tiny"}, {"max_tokens", 12}, {"temperature", 0},
                 {"messages", {{{"role", "system"}, {"content", "You model plants."}},
                               {{"role", "user"}, {"content", "Problem: " + q}}}}};
    auto res = http.Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(row["completion"], json::parse(res->body)["choices"][0]["message"]["content"]) << row;
  }

  // A second run is answered from its cache: nothing is asked again.
  const std::string first_rows = read_text(work / "gen/completions.jsonl");
  ProcessResult again = run_process(gen, o);
  EXPECT_EQ(test_util::stop_server(server), 0);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("3 requests, 3 answered (3 from the cache), 0 failed"), std::string::npos) << again.out;
  EXPECT_EQ(read_text(work / "gen/completions.jsonl"), first_rows);

  // The completions close the loop through the scorer: every item is judged (an untrained model
  // writes no program, so none passes).
  ProcessResult run = run_process({TREX_BINARY, "eval", "run", "--bench", (work / "bench.jsonl").string(),
                                   "--id-field", "id", "--question-field", "q", "--answer-field", "a", "--completions",
                                   (work / "gen/completions.jsonl").string(), "--out", (work / "run").string(),
                                   "--jobs", "1"},
                                  o);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<json> results = read_jsonl(work / "run/results.jsonl");
  ASSERT_EQ(results.size(), 3u);
  for (const json& r : results) EXPECT_NE(r["class"], "correct") << r;
  const json summary = json::parse(read_text(work / "run/summary.json"));
  ASSERT_EQ(summary["benchmarks"].size(), 1u) << summary;
  EXPECT_EQ(summary["benchmarks"][0]["items"], 3);
  EXPECT_EQ(summary["benchmarks"][0]["pass_at_1"], 0.0);
}

TEST_F(ServeClients, DataDistilAgainstALiveServer) {
  const fs::path work = *dir_ / "distil";
  ProcessOptions o;
  o.timeout_s = 900;  // a hang guard only
  ProcessResult gen = run_process({TREX_BINARY, "data", "gen", "--count", "3", "--seed", "1", "--families", "diet",
                                   "--out", (work / "corpus").string(), "--quiet", "--threads", "1"},
                                  o);
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::string line;
  test_util::ServeProcess server = start({"--slots", "3"}, &line);
  const int port = test_util::port_of(line);
  ASSERT_GT(port, 0) << line;
  ProcessResult r = run_process({TREX_BINARY, "data", "distil", (work / "corpus").string(), "--endpoint",
                                 "http://127.0.0.1:" + std::to_string(port) + "/v1", "--model", "tiny", "--out",
                                 (work / "out").string(), "--max-tokens", "24", "--concurrency", "3", "--quiet"},
                                o);
  EXPECT_EQ(test_util::stop_server(server), 0);
  // Every statement got a reply through the default template; an untrained model's replies hold
  // no formulation that passes, so none is kept and each rejection says why.
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json manifest = json::parse(read_text(work / "out/manifest.json"));
  EXPECT_EQ(manifest["samples"], 3);
  EXPECT_EQ(manifest["accepted"], 0);
  ASSERT_EQ(manifest["rejected"].size(), 3u);
  for (const json& rej : manifest["rejected"]) {
    EXPECT_NE(rej["reason"], "endpoint_error") << rej;
    EXPECT_FALSE(rej["detail"].get<std::string>().empty()) << rej;
  }
  EXPECT_NE(manifest["template"].get<std::string>().find("configs/eval/distil.txt"), std::string::npos);
  EXPECT_EQ(read_text(work / "out/sft.jsonl"), "");
  EXPECT_EQ(std::distance(fs::directory_iterator(work / "out/cache"), fs::directory_iterator()), 3);
}

}  // namespace
}  // namespace trex
