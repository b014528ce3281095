#include "trex/ordata/export.h"

#include <cstdio>
#include <initializer_list>
#include <string_view>

#include "trex/ordata/builder.h"
#include "trex/ordata/json_writer.h"

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

std::string sample_line(const Sample& s, const CorpusConfig& config) {
  std::string out;
  out.reserve(s.statement.size() + s.formulations.lp.size() + s.formulations.gurobipy.size() +
              s.formulations.math.size() + 2048);
  JsonWriter w(out);
  w.begin_object();
  w.key("schema_version").value(kSampleSchemaVersion);
  w.key("id").value(s.id);
  w.key("family").value(s.family);
  w.key("industry").value(s.industry);
  w.key("template").value(s.template_name);
  w.key("variant").value(s.variant);
  w.key("seed").value(s.seed);
  w.key("feasibility_mode").value(to_string(s.mode));
  w.key("statement").value(s.statement);
  w.key("formulations").begin_object();
  w.key("lp").value(s.formulations.lp);
  w.key("gurobipy").value(s.formulations.gurobipy);
  w.key("math").value(s.formulations.math);
  w.end_object();
  w.key("answer").begin_object();
  w.key("status").value(lp::to_string(s.status));
  w.key("objective");
  if (s.status == lp::SolveStatus::kOptimal) w.value(s.objective);
  else w.null();
  w.key("solution").begin_object();
  for (const auto& [name, v] : s.solution) w.key(name).value(v);
  w.end_object();
  w.end_object();
  w.key("checks").begin_object();
  for (const Check& c : s.checks) w.key(c.name).value(c.result);
  w.end_object();
  w.key("provenance").begin_object();
  w.key("generator").value(kGeneratorName);
  w.key("generator_version").value(kGeneratorVersion);
  w.key("family_version").value(s.family_version);
  w.key("source").value("reference");
  w.key("run_seed").value(config.seed);
  w.key("index").value(s.index);
  w.key("parameters").begin_object();
  for (const auto& [k, v] : s.params) w.key(k).value(v);
  w.end_object();
  w.key("parameter_ranges").begin_object();
  for (const FamilyMix& m : config.families)
    if (m.family->contract().family == s.family)
      for (const auto& [k, r] : m.ranges) w.key(k).begin_array().value(r.first).value(r.second).end_array();
  w.end_object();
  w.key("implied_numbers").begin_array();
  for (double v : s.implied_numbers) w.value(v);
  w.end_array();
  w.key("solver").value(s.solver);
  w.key("solver_version").value(s.solver_version);
  w.end_object();
  w.end_object();
  out += '\n';
  return out;
}

namespace {

// Appends the pieces to one string sized once (a chain of operator+ reallocates and copies the
// growing text at every step).
std::string joined(std::initializer_list<std::string_view> pieces) {
  size_t n = 0;
  for (std::string_view p : pieces) n += p.size();
  std::string out;
  out.reserve(n);
  for (std::string_view p : pieces) out += p;
  return out;
}

}  // namespace

std::string cpt_line(const Sample& s) {
  const std::string answer = answer_narrative(s);
  std::string text = joined({"Problem\n\n", s.statement, "\nMathematical model\n\n", s.formulations.math,
                             "\nLP formulation\n\n", s.formulations.lp, "\nSolution\n\n", answer, "\n"});
  std::string out;
  out.reserve(text.size() + text.size() / 16 + s.id.size() + 64);  // escapes: a newline per ~16 characters
  JsonWriter w(out);
  w.begin_object().key("id").value(s.id).key("text").value(text).end_object();
  out += '\n';
  return out;
}

std::string sft_line(const Sample& s, CorpusConfig::SftView view) {
  std::string user, assistant;
  if (view == CorpusConfig::kSftProgram) {
    // The program alone; configs/recipe/eval-program.txt asks the same question at evaluation.
    user = joined({s.statement, "\nWrite a Python program using gurobipy that solves it."});
    assistant = joined({"```python\n", s.formulations.gurobipy, "```\n"});
  } else {
    user = joined({s.statement,
                   "\nWrite the mathematical model, then a Python program using gurobipy that solves it, and "
                   "state the result."});
    assistant = joined({"Mathematical model:\n\n", s.formulations.math, "\nGurobipy program:\n\n```python\n",
                        s.formulations.gurobipy, "```\n\nResult: ", answer_narrative(s), "\n"});
  }
  std::string out;
  out.reserve(user.size() + assistant.size() + (user.size() + assistant.size()) / 16 + s.id.size() + 256);
  JsonWriter w(out);
  w.begin_object().key("messages").begin_array();
  w.begin_object().key("role").value("user").key("content").value(user).end_object();
  w.begin_object().key("role").value("assistant").key("content").value(assistant).end_object();
  w.end_array();
  w.key("metadata").begin_object();
  w.key("id").value(s.id).key("family").value(s.family).key("status").value(lp::to_string(s.status));
  w.key("objective");
  if (s.status == lp::SolveStatus::kOptimal) w.value(s.objective);
  else w.null();
  w.end_object().end_object();
  out += '\n';
  return out;
}

}  // namespace trex::ordata
