#include "trex/lp/mathprog.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <system_error>

#include "trex/lp/lp_format.h"
#include "trex/lp/temp_dir.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/subprocess.h"

namespace trex::lp {

namespace {

constexpr const char* kGlpsol = "glpsol";

void check_readable(const std::string& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(path, 0, std::string(what) + " not found (or not a regular file)");
}

// glpsol reports a MathProg error as "FILE:LINE: message" on stdout (its warnings the same
// way, with "warning:"). The first such error line is the one to show.
void throw_glpsol_error(const std::string& model_path, const ProcessResult& run) {
  static const std::regex located(R"(^(.+):(\d+): (.*)$)");
  std::istringstream lines(run.out + "\n" + run.err);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (!std::regex_match(line, m, located)) continue;
    std::string message = m[3];
    if (message.rfind("warning:", 0) == 0) continue;
    std::string file = m[1];
    if (file == "(unknown)") file = model_path;
    throw InputError(file, std::stol(m[2]), message);
  }
  std::string last;
  std::istringstream again(run.out + "\n" + run.err);
  while (std::getline(again, line))
    if (!line.empty()) last = line;
  throw InputError(model_path, 0, "glpsol could not translate the model" + (last.empty() ? "" : ": " + last));
}

// glpsol's --check report: "Number of rows               =        2" (the objective counts as
// a row). -1 when the line is missing.
long reported_count(const std::string& out, const char* what) {
  std::regex line(std::string(R"(Number of )") + what + R"(\s*=\s*(\d+))");
  std::smatch m;
  return std::regex_search(out, m, line) ? std::stol(m[1]) : -1;
}

// glpsol's CPLEX LP writer leaves the objective's constant term out of the objective and
// writes it as a comment right after it, "\* constant term = 2 *\" (15 significant digits, as
// every number it writes). trex's LP reader skips comments, so the constant is taken here:
// without it a model "minimize z: x + 2" would be solved to the wrong optimum.
double constant_term(const std::string& lp_text) {
  static const std::regex comment(R"(\\\* constant term = (\S+) \*\\)");
  std::smatch m;
  if (!std::regex_search(lp_text, m, comment)) return 0;
  std::string number = m[1];
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value))
    throw std::logic_error("glpsol wrote an objective constant trex cannot read: " + number);
  return value;
}

}  // namespace

Model read_mathprog(const std::string& model_path, const std::vector<std::string>& data_paths,
                    double time_limit_s) {
  check_readable(model_path, "model file");
  for (const auto& d : data_paths) check_readable(d, "data file");
  if (!program_available(kGlpsol))
    throw InputError(model_path, 0,
                     "MathProg models are translated by glpsol, which is not installed (Debian "
                     "package glpk-utils)");
  ReadLimit limit(time_limit_s);
  TempDir dir("trex-mathprog");
  std::string lp_path = dir.file("model.lp");
  std::vector<std::string> argv = {kGlpsol, "--check", "-m", model_path};
  for (const auto& d : data_paths) argv.insert(argv.end(), {"-d", d});
  argv.insert(argv.end(), {"--wlp", lp_path});
  ProcessOptions limits;
  limits.timeout_s = limit.process_limit();
  ProcessResult run = run_process(argv, limits);
  if (run.timed_out) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3g", time_limit_s);
    throw ReadTimeLimit(model_path + ": glpsol's MathProg translation did not finish within the time limit (" +
                               seconds + " s); nothing was solved");
  }
  std::error_code ec;
  if (run.signaled || run.exit_code != 0 || !std::filesystem::exists(lp_path, ec))
    throw_glpsol_error(model_path, run);
  // A model of display statements only (GLPK's cal.mod, graph.mod, sorting.mod) has no rows
  // and no columns: glpsol writes an LP with nothing in it and calls the problem optimal
  // with objective 0. The empty model says the same. With rows but no columns the LP file
  // drops the rows (and a constant objective), so nothing faithful can be solved: refused.
  long rows = reported_count(run.out, "rows"), columns = reported_count(run.out, "columns");
  if (columns == 0 && rows == 0) {
    Model empty;
    empty.name = std::filesystem::path(model_path).stem().string();
    return empty;
  }
  if (columns == 0)
    throw InputError(model_path, 0,
                     "the model has " + std::to_string(rows) +
                         " rows (objective included) but no variables; glpsol's LP translation drops "
                         "rows without variables, so it is not solved");
  // Errors in the translation are glpsol's or trex's, not the user's line numbers; they
  // still name the model.
  std::string text = read_file(lp_path);
  Model model = read_lp(text, model_path + " (as translated by glpsol)", limit);
  model.objective_constant += constant_term(text);
  return model;
}

}  // namespace trex::lp
