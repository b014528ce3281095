// An evaluation works wherever the clone sits: here from a clone-like copy of python/ inside
// a mode-0700 folder (as root's home and every `mktemp -d` are), which the sandboxed child,
// running as another user, cannot enter.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "nlohmann/json.hpp"
#include "trex/oreval/execute.h"
#include "trex/util/atomic_file.h"
#include "trex/util/subprocess.h"

namespace trex::oreval {
namespace {

namespace fs = std::filesystem;

// A mode-0700 folder holding clone/python, a copy of the source tree's module.
struct PrivateClone {
  std::string root, python;
  PrivateClone() {
    root = (fs::temp_directory_path() / "trex-private-XXXXXX").string();
    if (!mkdtemp(root.data())) throw std::runtime_error("mkdtemp failed");
    chmod(root.c_str(), 0700);
    python = root + "/clone/python";
    fs::create_directories(root + "/clone");
    fs::copy(std::string(TREX_SOURCE_DIR) + "/python", python, fs::copy_options::recursive);
  }
  ~PrivateClone() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

const char* kProgram =
    "from gurobipy import Model, GRB, quicksum\n"
    "model = Model()\n"
    "x = model.addVars(3, vtype=GRB.INTEGER, ub=4)\n"
    "model.setObjective(quicksum((i + 1) * x[i] for i in range(3)), GRB.MAXIMIZE)\n"
    "model.addConstr(x.sum() <= 5)\n"
    "model.optimize()\n"
    "print(model.ObjVal)\n";

TEST(Location, ExecutesFromACloneInAPrivateFolder) {
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not installed";
  PrivateClone clone;
  ExecOptions o;
  o.python_dir = clone.python;
  o.limits.wall_s = 20;
  o.allow_weak_sandbox = true;
  Execution e = execute({CodeKind::kPython, kProgram}, "", o);
  ASSERT_EQ(e.status, ExecStatus::kOk) << e.message;
  EXPECT_EQ(e.output, "trex: optimal, objective 14\n14.0\n");
  ASSERT_TRUE(e.model);
  EXPECT_EQ(e.model->num_vars(), 3);
}

TEST(Location, EvalRunFromACloneInAPrivateFolder) {
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not installed";
  PrivateClone clone;
  std::string bench = clone.root + "/bench.jsonl", completions = clone.root + "/completions.jsonl";
  write_file_atomic(bench, "{\"id\":\"py\",\"q\":\"max\",\"a\":14}\n");
  write_file_atomic(completions,
                    nlohmann::json({{"id", "py"}, {"completion", std::string("```python\n") + kProgram + "```"}}).dump() + "\n");
  ProcessOptions po;
  po.timeout_s = 120;
  ProcessResult r = run_process({"env", "TREX_PYTHON_DIR=" + clone.python, TREX_BINARY, "eval", "run", "--bench", bench,
                                 "--id-field", "id", "--question-field", "q", "--answer-field", "a", "--completions",
                                 completions, "--out", clone.root + "/out", "--quiet"},
                                po);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(clone.root + "/out/results.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["class"], "correct") << line;
}

}  // namespace
}  // namespace trex::oreval
