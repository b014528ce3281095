// Per-item evaluation and the parallel driver.
#include "trex/oreval/evaluate.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "nlohmann/json.hpp"
#include "trex/lp/model_file.h"
#include "trex/oreval/orgeval.h"
#include "trex/oreval/solve_helper.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::oreval {

std::vector<Completion> read_completions(const std::string& path, const CompletionFields& f) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const std::exception& e) {
    throw InputError(path, 0, "cannot read completions");
  }
  std::vector<Completion> out;
  std::map<std::string, int> seen;
  size_t pos = 0;
  long line = 0, index = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string l = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line;
    if (l.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(l);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path, line, std::string("invalid JSON: ") + e.what());
    }
    ++index;
    if (!j.is_object()) throw InputError(path, line, "not a JSON object");
    if (!f.id.empty() && !j.contains(f.id)) throw InputError(path, line, "no field '" + f.id + "'");
    if (!j.contains(f.text) || !j[f.text].is_string()) throw InputError(path, line, "no string field '" + f.text + "'");
    Completion c;
    if (f.id.empty())
      c.id = std::to_string(index);
    else
      c.id = j[f.id].is_string() ? j[f.id].get<std::string>() : j[f.id].dump();
    c.text = j[f.text].get<std::string>();
    if (j.contains("sample")) {
      if (!j["sample"].is_number_integer() || j["sample"].get<int>() < 0) throw InputError(path, line, "field 'sample' must be an integer >= 0");
      c.sample = j["sample"].get<int>();
    } else {
      c.sample = seen[c.id];
    }
    ++seen[c.id];
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

// Reference LPs, read and prepared (orgeval.h step 1) once per file, shared by the workers.
class ReferenceCache {
 public:
  const lp::Model& get(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(path);
    if (it != cache_.end()) return it->second;
    return cache_.emplace(path, orgeval_prepare(lp::read_model_file(path))).first->second;
  }

 private:
  std::mutex mu_;
  std::map<std::string, lp::Model> cache_;  // std::map: references stay valid as it grows
};

ReferenceCache& references() {
  static ReferenceCache c;
  return c;
}

ErrorClass class_of(ExecStatus s) {
  switch (s) {
    case ExecStatus::kSyntaxError: return ErrorClass::kSyntaxError;
    case ExecStatus::kTimeout: return ErrorClass::kTimeout;
    case ExecStatus::kNoModel: return ErrorClass::kRuntimeError;
    case ExecStatus::kUnsupportedLibrary: return ErrorClass::kUnsupportedLibrary;
    case ExecStatus::kUnsupportedCall: return ErrorClass::kUnsupportedCall;
    default: return ErrorClass::kRuntimeError;
  }
}

ItemResult evaluate_unguarded(const Benchmark& bench, const Item& item, const Completion& c, const EvalOptions& o,
                              std::chrono::steady_clock::time_point t0) {
  ItemResult r;
  r.id = item.id;
  r.sample = c.sample;
  r.answer = item.answer;
  Extraction code = extract_formulation(c.text);
  r.code_kind = code.kind;
  r.code = code.code;
  auto done = [&] {
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  if (code.kind == CodeKind::kNone) {
    r.error = ErrorClass::kNoCode;
    r.status = "no-code";
    r.message = "no formulation found in the completion";
    return done();
  }
  // The structural verdict on the model as its files held it when the output ended, worked out
  // while the child exits (execute.h ModelAhead); kept only when that model is the final one.
  std::optional<bool> same_ahead;
  std::string why_ahead;
  ModelAhead ahead;
  if (bench.score_by == ScoreBy::kStructure && !item.reference_lp.empty())
    ahead = [&](const lp::Model& m) {
      same_ahead.reset();
      why_ahead.clear();
      same_ahead = orgeval_equivalent_prepared(orgeval_prepare(m), references().get(item.reference_lp), &why_ahead);
    };
  Execution ex = execute(code, item.data_path, o.exec, ahead);
  r.message = ex.message;
  if (ex.status != ExecStatus::kOk || !ex.model) {
    r.error = class_of(ex.status);
    r.status = to_string(ex.status);
    return done();
  }
  if (bench.score_by == ScoreBy::kStructure) {
    if (item.reference_lp.empty()) {
      r.error = ErrorClass::kRuntimeError;
      r.status = "no-reference";
      r.message = "the item has no reference LP";
      return done();
    }
    std::string why;
    bool same;
    if (ex.model_read_ahead && same_ahead) {
      same = *same_ahead;
      why = why_ahead;
    } else {
      same = orgeval_equivalent_prepared(orgeval_prepare(*ex.model), references().get(item.reference_lp), &why);
    }
    r.error = same ? ErrorClass::kCorrect : ErrorClass::kWrongStructure;
    r.status = same ? "equivalent" : "different";
    if (!same) r.message = why;
    return done();
  }
  // The model is the program's: solved in the rlimited helper, never in this process.
  HelperLimits hl;
  hl.seconds_left = o.exec.solve_time_limit_s;
  hl.memory_bytes = o.exec.limits.memory_bytes;
  const lp::Model& model = *ex.model;
  // One solve per program: when the program solved its final model itself and the answer is
  // final (not a limit), that result is scored; otherwise the model is solved here.
  bool decided = ex.final_solve && (ex.final_solve->status == lp::SolveStatus::kOptimal ||
                                    ex.final_solve->status == lp::SolveStatus::kInfeasible ||
                                    ex.final_solve->status == lp::SolveStatus::kUnbounded);
  lp::SolveResult s = decided ? *ex.final_solve : solve_in_helper(HelperInput::model(model), o.exec.solver, hl);
  r.status = lp::to_string(s.status);
  if (lp::has_solution(s.status)) r.objective = s.objective;
  if (!s.message.empty() && !lp::has_solution(s.status)) r.message = s.message;
  r.error = classify_solution(s.status, s.objective, item.answer, o.mode, o.lenient_status);
  return done();
}

}  // namespace

ItemResult evaluate_one(const Benchmark& bench, const Item& item, const Completion& c, const EvalOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  try {
    return evaluate_unguarded(bench, item, c, o, t0);
  } catch (const std::exception& e) {
    ItemResult r;
    r.id = item.id;
    r.sample = c.sample;
    r.answer = item.answer;
    r.error = ErrorClass::kRuntimeError;
    r.status = "error";
    r.message = e.what();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
}

std::vector<ItemResult> evaluate(const Benchmark& bench, const std::vector<Completion>& completions,
                                 const EvalOptions& o, const std::function<void()>& progress) {
  std::map<std::string, const Item*> by_id;
  for (const Item& it : bench.items) by_id[it.id] = &it;
  struct Job {
    const Item* item;
    const Completion* completion;
  };
  std::vector<Job> jobs;
  std::map<std::string, bool> has_completion;
  for (const Completion& c : completions) {
    auto it = by_id.find(c.id);
    if (it == by_id.end()) continue;
    jobs.push_back({it->second, &c});
    has_completion[c.id] = true;
  }
  static const Completion kEmpty{};
  for (const Item& it : bench.items)
    if (!has_completion.count(it.id)) jobs.push_back({&it, &kEmpty});
  std::vector<ItemResult> results(jobs.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k; (k = next.fetch_add(1)) < jobs.size();) {
      results[k] = evaluate_one(bench, *jobs[k].item, *jobs[k].completion, o);
      if (jobs[k].completion == &kEmpty) results[k].message = "no completion for this item";
      if (progress) progress();
    }
  };
  int n = std::max(1, std::min(o.jobs, int(jobs.size())));
  std::vector<std::thread> threads;
  for (int t = 1; t < n; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace trex::oreval
