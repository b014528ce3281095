#include "trex/ordata/export.h"

#include <cstdio>

#include "trex/ordata/builder.h"

namespace trex::ordata {

namespace {

std::string number_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.12g", v);
  return b;
}

std::string answer_narrative(const Sample& s) {
  switch (s.status) {
    case lp::SolveStatus::kOptimal: {
      std::string t = "The optimal objective value is " + number_text(s.objective) + ".";
      if (s.solution.empty()) return t + " Every decision variable is zero.";
      t += " Nonzero decisions:";
      for (const auto& [name, v] : s.solution) t += "\n- " + name + " = " + number_text(v);
      return t;
    }
    case lp::SolveStatus::kInfeasible:
      return "The problem is infeasible: no plan satisfies every requirement at once.";
    case lp::SolveStatus::kUnbounded:
      return "The problem is unbounded: the objective can be improved without limit, so the data or the rules are "
             "missing a limit.";
    default:
      return std::string("The solver ended with status ") + lp::to_string(s.status) + ".";
  }
}

}  // namespace

nlohmann::ordered_json sample_json(const Sample& s, const CorpusConfig& config) {
  nlohmann::ordered_json j;
  j["schema_version"] = kSampleSchemaVersion;
  j["id"] = s.id;
  j["family"] = s.family;
  j["industry"] = s.industry;
  j["template"] = s.template_name;
  j["variant"] = s.variant;
  j["seed"] = s.seed;
  j["feasibility_mode"] = to_string(s.mode);
  j["statement"] = s.statement;
  j["formulations"] = {{"lp", s.formulations.lp}, {"gurobipy", s.formulations.gurobipy}, {"math", s.formulations.math}};
  nlohmann::ordered_json sol = nlohmann::ordered_json::object();
  for (const auto& [name, v] : s.solution) sol[name] = v;
  j["answer"] = {{"status", lp::to_string(s.status)},
                 {"objective", s.status == lp::SolveStatus::kOptimal ? nlohmann::ordered_json(s.objective)
                                                                      : nlohmann::ordered_json(nullptr)},
                 {"solution", sol}};
  nlohmann::ordered_json checks = nlohmann::ordered_json::object();
  for (const Check& c : s.checks) checks[c.name] = c.result;
  j["checks"] = checks;
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (const auto& [k, v] : s.params) params[k] = v;
  nlohmann::ordered_json ranges = nlohmann::ordered_json::object();
  for (const FamilyMix& m : config.families)
    if (m.family->contract().family == s.family)
      for (const auto& [k, r] : m.ranges) ranges[k] = {r.first, r.second};
  j["provenance"] = {{"generator", kGeneratorName},
                     {"generator_version", kGeneratorVersion},
                     {"family_version", s.family_version},
                     {"source", "reference"},
                     {"run_seed", config.seed},
                     {"index", s.index},
                     {"parameters", params},
                     {"parameter_ranges", ranges},
                     {"implied_numbers", s.implied_numbers},
                     {"solver", s.solver},
                     {"solver_version", s.solver_version}};
  return j;
}

nlohmann::ordered_json cpt_json(const Sample& s) {
  std::string text = "Problem\n\n" + s.statement + "\nMathematical model\n\n" + s.formulations.math +
                     "\nLP formulation\n\n" + s.formulations.lp + "\nSolution\n\n" + answer_narrative(s) + "\n";
  nlohmann::ordered_json j;
  j["id"] = s.id;
  j["text"] = text;
  return j;
}

nlohmann::ordered_json sft_json(const Sample& s) {
  std::string user = s.statement +
                     "\nWrite the mathematical model, then a Python program using gurobipy that solves it, and "
                     "state the result.";
  std::string assistant = "Mathematical model:\n\n" + s.formulations.math + "\nGurobipy program:\n\n```python\n" +
                          s.formulations.gurobipy + "```\n\nResult: " + answer_narrative(s) + "\n";
  nlohmann::ordered_json j;
  j["messages"] = nlohmann::ordered_json::array(
      {{{"role", "user"}, {"content", user}}, {{"role", "assistant"}, {"content", assistant}}});
  j["metadata"] = {{"id", s.id},
                   {"family", s.family},
                   {"status", lp::to_string(s.status)},
                   {"objective", s.status == lp::SolveStatus::kOptimal ? nlohmann::ordered_json(s.objective)
                                                                        : nlohmann::ordered_json(nullptr)}};
  return j;
}

std::string jsonl_line(const nlohmann::ordered_json& j) { return j.dump() + "\n"; }

}  // namespace trex::ordata
