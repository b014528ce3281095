#include "serve_demo.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/recipe/local_server.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/subprocess.h"

namespace trex::cli {

namespace {

namespace fs = std::filesystem;

// Two questions with known optima (the eval step's furniture problem and a diet LP).
constexpr const char* kBench =
    R"({"id": "furniture", "question": "A shop makes tables (profit 30) and chairs (profit 20). A table needs 4 units of wood and 2 hours, a chair 2 units and 3 hours; 20 units of wood and 18 hours are available. How many of each maximize profit?", "answer": 170})"
    "\n"
    R"({"id": "diet", "question": "Food A costs 2 per unit and gives 3 units of protein; food B costs 3 per unit and gives 5. At least 15 units of protein are needed. What is the least cost?", "answer": 9})"
    "\n";

// The last non-empty line a failed child printed, for the demo's one-line verdict.
std::string last_line(const ProcessResult& p) {
  std::string text = p.err.empty() ? p.out : p.err;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.substr(text.rfind('\n') + 1);
}

}  // namespace

int serve_and_evaluate_demo(const std::string& run_dir, const std::string& work_dir) {
  std::error_code ec;
  const std::string trex = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) {
    std::printf("trex demo: serving skipped (cannot find the trex binary: /proc/self/exe)\n");
    return 1;
  }
  const std::string bench = work_dir + "/serve-bench.jsonl";
  write_file_atomic(bench, kBench);

  int served_exit = -1;
  std::string url;
  ProcessResult gen;
  try {
    // The prompt template is longer than the demo model's 128 training positions.
    recipe::LocalServer server(trex, "demo", {"--ckpt", run_dir, "--context", "2048"}, "demo serve");
    url = server.url();
    gen = run_process({trex, "eval", "gen", "--bench", bench, "--id-field", "id", "--endpoint", url + "/v1", "--model",
                       "demo", "--out", work_dir + "/gen", "--max-tokens", "12", "--temperature", "0", "--quiet"});
    served_exit = server.stop();
  } catch (const InputError& e) {
    std::printf("trex demo: serving FAILED: %s\n", e.what());
    return 1;
  }
  std::printf("trex demo: the trained model served by trex serve (%s) and evaluated through its API\n", url.c_str());
  if (gen.exit_code != 0) {
    std::printf("  trex eval gen FAILED (exit %d): %s\n", gen.exit_code, last_line(gen).c_str());
    return 1;
  }
  std::vector<nlohmann::json> completions;
  std::ifstream in(work_dir + "/gen/completions.jsonl");
  for (std::string line; std::getline(in, line);) completions.push_back(nlohmann::json::parse(line));
  std::string first = completions.empty() ? "" : completions[0].value("completion", "");
  for (char& c : first)
    if (c == '\n') c = ' ';
  std::printf("  trex eval gen: %zu completions over HTTP (greedy, 12 tokens), e.g. \"%s\"\n", completions.size(),
              first.c_str());
  std::printf("  trex serve: stopped by SIGTERM, exit %d%s\n", served_exit, served_exit == 0 ? " (drained)" : "");

  // As in the evaluation step: the programs come from the demo's own model, so they run in
  // whatever sandbox this machine offers, where `trex eval run` alone would refuse a weak one.
  const ProcessResult run = run_process({trex, "eval", "run", "--bench", bench, "--id-field", "id", "--completions",
                                         work_dir + "/gen/completions.jsonl", "--out", work_dir + "/run",
                                         "--allow-weak-sandbox", "--quiet"});
  if (run.exit_code != 0) {
    std::printf("  trex eval run FAILED (exit %d): %s\n", run.exit_code, last_line(run).c_str());
    return 1;
  }
  std::string verdicts;
  long correct = 0, items = 0;
  std::ifstream results(work_dir + "/run/results.jsonl");
  for (std::string line; std::getline(results, line); ++items) {
    const nlohmann::json r = nlohmann::json::parse(line);
    correct += r.value("class", "") == "correct";
    verdicts += (verdicts.empty() ? "" : ", ") + r.value("id", "") + ": " + r.value("class", "");
  }
  std::printf("  trex eval run: Pass@1 %ld/%ld (%s)\n", correct, items, verdicts.c_str());
  return completions.size() == 2 && items == 2 && served_exit == 0 ? 0 : 1;
}

}  // namespace trex::cli
