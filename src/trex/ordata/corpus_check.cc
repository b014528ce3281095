#include "trex/ordata/corpus_check.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "nlohmann/json.hpp"
#include "trex/core/thread_pool.h"
#include "trex/lp/lp_format.h"
#include "trex/lp/solver.h"
#include "trex/ordata/certificate.h"
#include "trex/ordata/checks.h"
#include "trex/ordata/corpus_run.h"
#include "trex/ordata/dedup.h"
#include "trex/ordata/reconstruct.h"
#include "trex/ordata/render.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/zstd_file.h"

namespace fs = std::filesystem;

namespace trex::ordata {

namespace {

struct Item {
  std::string file;
  long line;
  std::string id, statement, status;
  bool has_objective = false;
  double objective = 0;
  std::vector<std::pair<std::string, double>> solution;
  lp::Model model;
};

lp::SolveStatus status_from(const std::string& s) {
  for (lp::SolveStatus st : {lp::SolveStatus::kOptimal, lp::SolveStatus::kInfeasible, lp::SolveStatus::kUnbounded,
                             lp::SolveStatus::kInfeasibleOrUnbounded, lp::SolveStatus::kTimeLimitFeasible,
                             lp::SolveStatus::kTimeLimitNoSolution, lp::SolveStatus::kUnsupported,
                             lp::SolveStatus::kError})
    if (s == lp::to_string(st)) return st;
  return lp::SolveStatus::kError;
}

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

// The checks that need only the sample's own text; "" when all hold.
std::string recheck_text(const nlohmann::json& j, const lp::Model& m) {
  const std::string statement = j.at("statement").get<std::string>();
  std::string detail;
  std::vector<double> implied = j.at("provenance").at("implied_numbers").get<std::vector<double>>();
  if (std::string why = review_numbers(statement, m, implied, &detail); !why.empty()) return why + ": " + detail;
  if (clean_text(statement) != statement) return "the statement is not normalized text";
  bool maximize = m.sense == lp::Sense::kMaximize;
  std::string lower;
  for (char c : statement) lower += char(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find(maximize ? "maximize" : "minimize") == std::string::npos)
    return std::string("the statement does not say ") + (maximize ? "maximize" : "minimize");
  lp::Model py = read_gurobipy(j.at("formulations").at("gurobipy").get<std::string>());
  std::string why;
  if (!lp::same_model(m, py, &why)) return "the gurobipy program is a different model: " + why;
  for (const auto& [name, v] : j.at("checks").items())
    if (v != "pass") return "recorded check " + name + " did not pass";
  return "";
}

}  // namespace

CorpusCheckReport check_corpus(const std::string& dir, const std::string& solver_name, int threads) {
  auto t0 = std::chrono::steady_clock::now();
  CorpusCheckReport rep;
  auto solver = lp::make_solver(solver_name);
  rep.solver = solver->name() + " (" + solver->version() + ")";
  std::error_code ec;
  if (!fs::is_directory(dir + "/data", ec)) throw InputError(dir, 0, "not a corpus directory (no data/ folder)");
  std::vector<std::string> parts;
  for (const auto& e : fs::directory_iterator(dir + "/data")) {
    std::string name = e.path().filename().string();
    if (is_corpus_part(name)) parts.push_back(dir + "/data/" + name);
  }
  std::sort(parts.begin(), parts.end());
  rep.parts = long(parts.size());

  std::vector<Item> items;
  for (const std::string& path : parts) {
    std::string text;
    try {
      text = read_text_file(path);  // plain or .zst alike
    } catch (const InputError& e) {  // a corrupt or mislabelled compressed part: say so, go on
      rep.issues.push_back({path, 0, "", "corrupt", e.detail()});
      continue;
    }
    size_t pos = 0;
    long line = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      ++line;
      if (nl == std::string::npos) {
        rep.issues.push_back({path, line, "", "truncated", "the last line has no newline (the file was cut off)"});
        break;
      }
      std::string_view l(text.data() + pos, nl - pos);
      pos = nl + 1;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(l);
      } catch (const nlohmann::json::exception& e) {
        rep.issues.push_back({path, line, "", "corrupt", std::string("not JSON: ") + e.what()});
        continue;
      }
      Item it;
      it.file = path;
      it.line = line;
      try {
        it.id = j.at("id").get<std::string>();
        it.statement = j.at("statement").get<std::string>();
        const auto& ans = j.at("answer");
        it.status = ans.at("status").get<std::string>();
        it.has_objective = !ans.at("objective").is_null();
        if (it.has_objective) it.objective = ans.at("objective").get<double>();
        for (const auto& [k, v] : ans.at("solution").items()) it.solution.push_back({k, v.get<double>()});
        it.model = lp::read_lp(j.at("formulations").at("lp").get<std::string>(), path);
        if (std::string bad = recheck_text(j, it.model); !bad.empty()) {
          rep.issues.push_back({path, line, it.id, "disagreement", bad});
          continue;
        }
      } catch (const nlohmann::json::exception& e) {
        rep.issues.push_back({path, line, it.id, "corrupt", std::string("not a sample: ") + e.what()});
        continue;
      } catch (const InputError& e) {
        rep.issues.push_back({path, line, it.id, "disagreement", std::string("a formulation does not parse: ") + e.what()});
        continue;
      }
      items.push_back(std::move(it));
    }
  }
  rep.samples = long(items.size());

  // Duplicates across the whole corpus.
  std::unordered_map<uint64_t, size_t> texts, structures;
  for (size_t k = 0; k < items.size(); ++k) {
    auto [a, fresh_text] = texts.emplace(text_hash(items[k].statement), k);
    if (!fresh_text)
      rep.issues.push_back({items[k].file, items[k].line, items[k].id, "duplicate", "same statement as " + items[a->second].id});
    auto [b, fresh_model] = structures.emplace(structure_fingerprint(items[k].model), k);
    if (!fresh_model)
      rep.issues.push_back({items[k].file, items[k].line, items[k].id, "duplicate", "same model structure as " + items[b->second].id});
  }

  // Independent re-solve.
  std::vector<std::string> verdict(items.size());
  core::ThreadPool pool(threads);
  std::atomic<size_t> next{0};
  pool.run([&](int) {
    for (size_t k; (k = next.fetch_add(1)) < items.size();) {
      const Item& it = items[k];
      lp::SolveResult r = solver->solve(it.model, lp::SolveOptions{});
      lp::SolveStatus want = status_from(it.status);
      std::string bad;
      if (r.status != want) {
        bad = solver_name + " says " + lp::to_string(r.status) + ", the sample says " + it.status;
      } else if (want == lp::SolveStatus::kOptimal) {
        if (!it.has_objective) bad = "optimal without an objective";
        else if (!objectives_agree(r.objective, it.objective))
          bad = solver_name + " objective " + fmt(r.objective) + ", the sample says " + fmt(it.objective);
        else {
          std::vector<double> x(size_t(it.model.num_vars()), 0.0);
          for (const auto& [name, v] : it.solution) {
            int j = it.model.find_var(name);
            if (j < 0) bad = "the solution names an unknown variable " + name;
            else x[size_t(j)] = v;
          }
          if (bad.empty()) bad = check_optimality_certificate(it.model, it.objective, x, nullptr);
        }
      }
      verdict[k] = bad;
    }
  });
  for (size_t k = 0; k < items.size(); ++k) {
    ++rep.resolved;
    if (!verdict[k].empty()) rep.issues.push_back({items[k].file, items[k].line, items[k].id, "disagreement", verdict[k]});
  }
  std::stable_sort(rep.issues.begin(), rep.issues.end(), [](const CheckIssue& a, const CheckIssue& b) {
    return a.file != b.file ? a.file < b.file : a.line < b.line;
  });
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace trex::ordata
