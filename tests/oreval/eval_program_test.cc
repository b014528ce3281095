// trex-eval, the lean program that the launcher runs for `trex eval run|list|equiv`
// (apps/launcher/trex_launcher.cc), against trex-full, which has every subcommand: the same
// options with the same defaults, the same outputs, and none of the libraries that only the other
// parts need. Both programs lie next to the launcher (TREX_BINARY).
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/util/atomic_file.h"
#include "trex/util/subprocess.h"
#include "util/temp_dir.h"

namespace trex {
namespace {

namespace fs = std::filesystem;

std::string program(const char* name) { return (fs::path(TREX_BINARY).parent_path() / name).string(); }

ProcessResult run(const std::string& binary, std::vector<std::string> args) {
  args.insert(args.begin(), binary);
  ProcessOptions o;
  o.timeout_s = 120;  // a hang guard only
  return run_process(args, o);
}

// Every occurrence of `from` in text replaced by `to`: the outputs name the program that wrote
// them (usage lines) and the folder they went to.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// The help of each subcommand lists its every option and default: equal help, equal command
// lines accepted (CLI11 refuses any option it was not given).
TEST(EvalProgram, EachSubcommandTakesTheOptionsTrexFullTakes) {
  for (const char* sub : {"run", "list", "equiv"}) {
    ProcessResult lean = run(program("trex-eval"), {"eval", sub, "--help"});
    ProcessResult full = run(program("trex-full"), {"eval", sub, "--help"});
    ASSERT_EQ(lean.exit_code, 0) << sub << ": " << lean.err;
    ASSERT_EQ(full.exit_code, 0) << sub << ": " << full.err;
    EXPECT_NE(full.out.find("Options:"), std::string::npos) << full.out;
    EXPECT_EQ(replaced(lean.out, program("trex-eval"), "PROGRAM"), replaced(full.out, program("trex-full"), "PROGRAM"))
        << sub;
  }
}

// The same input, the same bytes out (the seconds each item and the run took aside), and the
// same refusal of bad input.
TEST(EvalProgram, WritesWhatTrexFullWrites) {
  test_util::TempDir d("eval_program");
  const std::string lp = "Maximize\n obj: 3 x + 2 y\nSubject To\n c1: x + y <= 4\n c2: x + 3 y <= 6\nEnd\n";
  write_file_atomic(d.path + "/a.lp", lp);
  write_file_atomic(d.path + "/b.lp", "Maximize\n obj: 3 x + 2 y\nSubject To\n c1: x + y <= 4\nEnd\n");
  write_file_atomic(d.path + "/bench.jsonl",
                    "{\"id\":\"lp\",\"q\":\"max\",\"a\":\"11\"}\n{\"id\":\"py\",\"q\":\"max\",\"a\":14}\n"
                    "{\"id\":\"junk\",\"q\":\"?\",\"a\":1}\n{\"id\":\"none\",\"q\":\"?\",\"a\":1}\n");
  std::string py =
      "```python\nfrom gurobipy import Model, GRB, quicksum\nmodel = Model()\n"
      "x = model.addVars(3, vtype=GRB.INTEGER, ub=4)\n"
      "model.setObjective(quicksum((i + 1) * x[i] for i in range(3)), GRB.MAXIMIZE)\n"
      "model.addConstr(x.sum() <= 5)\nmodel.optimize()\nprint(model.ObjVal)\n```";
  std::string completions;
  for (auto [id, text] : std::vector<std::pair<std::string, std::string>>{
           {"lp", "```lp\n" + lp + "```"}, {"py", py}, {"junk", "```python\ndef (:\n```"}})
    completions += nlohmann::json({{"id", id}, {"completion", text}}).dump() + "\n";
  write_file_atomic(d.path + "/completions.jsonl", completions);

  auto outputs = [&](const char* name) {
    std::string out = d.path + "/" + name;
    std::vector<ProcessResult> r;
    r.push_back(run(program(name), {"eval", "equiv", d.path + "/a.lp", d.path + "/b.lp"}));
    r.push_back(run(program(name), {"eval", "list", d.path + "/bench.jsonl", "--id-field", "id", "--question-field", "q",
                                    "--answer-field", "a"}));
    r.push_back(run(program(name), {"eval", "run", "--bench", d.path + "/bench.jsonl", "--id-field", "id", "--question-field",
                                    "q", "--answer-field", "a", "--completions", d.path + "/completions.jsonl", "--out", out, "--quiet"}));
    r.push_back(run(program(name), {"eval", "run", "--bench", d.path + "/bench.jsonl", "--completions",
                                    d.path + "/completions.jsonl", "--out", out + "-bad", "--mode", "fuzzy"}));
    std::string text;
    for (const ProcessResult& p : r)
      text += "exit " + std::to_string(p.exit_code) + "\n" + p.out + "stderr:\n" + p.err + "--\n";
    text = replaced(text, out, "OUT");
    // The wall time of the run, to a tenth of a second, is the one figure that may differ.
    size_t wall = text.find("- wall time: ");
    if (wall != std::string::npos) text.erase(wall, text.find('\n', wall) - wall);
    std::ifstream in(out + "/results.jsonl");
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line);
      j.erase("seconds");
      text += j.dump() + "\n";
    }
    nlohmann::json summary = nlohmann::json::parse(read_file(out + "/summary.json"));
    summary.erase("seconds");
    return text + summary.dump() + "\n";
  };
  std::string lean = outputs("trex-eval"), full = outputs("trex-full");
  EXPECT_NE(full.find("\"class\":\"correct\""), std::string::npos) << full;
  EXPECT_NE(full.find("--mode"), std::string::npos) << full;
  EXPECT_EQ(lean, full);
}

// Why trex-eval exists: its start maps none of the libraries of the parts evaluation does not
// call (the chat client's libcurl, Open MPI, SentencePiece, SQLite, tcmalloc), which cost every
// `trex eval run` about 25 ms of CPU before main in trex-full (apps/launcher/trex_launcher.cc).
TEST(EvalProgram, LoadsNoneOfTheLibrariesOfThePartsEvaluationDoesNotCall) {
  if (!program_available("/usr/bin/ldd")) GTEST_SKIP() << "/usr/bin/ldd not installed";
  ProcessResult full = run("/usr/bin/ldd", {program("trex-full")});
  ProcessResult lean = run("/usr/bin/ldd", {program("trex-eval")});
  ASSERT_EQ(lean.exit_code, 0) << lean.err;
  ASSERT_EQ(full.exit_code, 0) << full.err;
  for (const char* library : {"libcurl", "libmpi", "libsentencepiece", "libsqlite3", "libtcmalloc"}) {
    EXPECT_EQ(lean.out.find(library), std::string::npos) << library << " in\n" << lean.out;
  }
  // The check has teeth: trex-full maps the chat client's library.
  EXPECT_NE(full.out.find("libcurl"), std::string::npos) << full.out;
}

// trex-eval parses what untrusted programs leave (model.lp, records), so its code must sit at a
// random address in every run: linked fully static it is a static PIE (ET_DYN, no program
// interpreter), otherwise a PIE that names the loader. A plain -static link (ET_EXEC, fixed
// addresses) or -static-pie undone by a later -pie (a loader named again, the start's cost back)
// fails here.
TEST(EvalProgram, IsPositionIndependentAndWhereLinkedFullyStaticHasNoLoader) {
  const std::string path = program("trex-eval");
  std::ifstream f(path, std::ios::binary);
  Elf64_Ehdr header{};
  ASSERT_TRUE(f.read(reinterpret_cast<char*>(&header), sizeof header)) << path;
  ASSERT_EQ(std::memcmp(header.e_ident, ELFMAG, SELFMAG), 0) << path;
  ASSERT_EQ(header.e_ident[EI_CLASS], ELFCLASS64) << path;
  EXPECT_EQ(header.e_type, ET_DYN) << path << " is not position-independent";
  ASSERT_EQ(header.e_phentsize, sizeof(Elf64_Phdr)) << path;
  bool interpreter = false;
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr ph{};
    f.seekg(std::streamoff(header.e_phoff + uint64_t(i) * header.e_phentsize));
    ASSERT_TRUE(f.read(reinterpret_cast<char*>(&ph), sizeof ph)) << path;
    interpreter = interpreter || ph.p_type == PT_INTERP;
  }
#if TREX_EVAL_LINKED_FULLY_STATIC
  EXPECT_FALSE(interpreter) << path << " names a program interpreter though CMake linked it fully static";
#else
  EXPECT_TRUE(interpreter) << path << " has no program interpreter though CMake linked it dynamically";
#endif
}

}  // namespace
}  // namespace trex
