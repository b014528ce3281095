// Endpoint distillation; the gates and outputs are described in distil.h.
#include "trex/ordata/distil.h"

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "trex/lp/lp_format.h"
#include "trex/lp/solver.h"
#include "trex/ordata/corpus_reader.h"
#include "trex/ordata/sample.h"
#include "trex/oreval/extract.h"
#include "trex/oreval/prompt.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/progress.h"

namespace trex::ordata {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

// Rejection reasons of distillation that reference reconstructions never meet.
constexpr const char* kEndpointError = "endpoint_error";
constexpr const char* kNoFormulation = "no_formulation";
constexpr const char* kExecutionFailed = "execution_failed";

// A corpus sample's answer as oreval scores against it.
oreval::Answer answer_of(const CorpusSample& c) {
  if (c.status == lp::to_string(lp::SolveStatus::kOptimal)) {
    if (!c.objective) throw InputError(c.file, c.line, "answer.objective: not a number");
    return {oreval::AnswerKind::kNumber, *c.objective};
  }
  if (c.status == lp::to_string(lp::SolveStatus::kInfeasible)) return {oreval::AnswerKind::kInfeasible, 0};
  if (c.status == lp::to_string(lp::SolveStatus::kUnbounded)) return {oreval::AnswerKind::kUnbounded, 0};
  throw InputError(c.file, c.line, "answer.status: '" + c.status + "' is not optimal, infeasible or unbounded");
}

struct CorpusRow {
  CorpusSample sample;
  oreval::Answer answer;
};

std::vector<CorpusRow> read_corpus_rows(const std::string& dir, long limit) {
  std::vector<CorpusRow> rows;
  for (CorpusSample& c : read_corpus_samples(dir, limit)) {
    oreval::Answer a = answer_of(c);
    rows.push_back({std::move(c), a});
  }
  return rows;
}

struct Verdict {
  std::string reason;  // "" when accepted
  std::string detail;
  oreval::CodeKind kind = oreval::CodeKind::kNone;
  std::string code;
};

// Every gate but dedup (which needs the accepted replies in order).
Verdict verify_reply(const CorpusRow& row, const chat::ChatResult& reply, const DistilOptions& o,
                     const lp::Solver& solver) {
  Verdict v;
  if (!reply.ok) return {kEndpointError, reply.error, oreval::CodeKind::kNone, ""};
  oreval::Extraction x = oreval::extract_formulation(reply.content);
  v.kind = x.kind;
  v.code = x.code;
  if (x.kind == oreval::CodeKind::kNone) {
    v.reason = kNoFormulation;
    v.detail = "no python, LP or MPS formulation in the reply";
    return v;
  }
  oreval::Execution e = oreval::execute(x, "", o.exec);
  if (e.status != oreval::ExecStatus::kOk || !e.model) {
    v.reason = kExecutionFailed;
    v.detail = std::string(oreval::to_string(e.status)) + ": " + e.message;
    return v;
  }
  const lp::Model reference = lp::read_lp(row.sample.lp, row.sample.file + ":" + std::to_string(row.sample.line));
  const lp::Model& model = *e.model;
  if (model.num_vars() != reference.num_vars() || model.num_integer_vars() != reference.num_integer_vars()) {
    v.reason = reason::kContract;
    v.detail = std::to_string(model.num_vars()) + " variables (" + std::to_string(model.num_integer_vars()) +
               " integer), the reference has " + std::to_string(reference.num_vars()) + " (" +
               std::to_string(reference.num_integer_vars()) + " integer)";
    return v;
  }
  if (model.sense != reference.sense) {
    v.reason = reason::kDirection;
    v.detail = model.sense == lp::Sense::kMaximize ? "maximizes; the reference minimizes" : "minimizes; the reference maximizes";
    return v;
  }
  lp::SolveOptions so;
  so.time_limit_s = o.exec.solve_time_limit_s;
  lp::SolveResult s;
  try {
    s = solver.solve(model, so);
  } catch (const InputError& err) {
    v.reason = kExecutionFailed;
    v.detail = std::string("the model is malformed: ") + err.what();
    return v;
  }
  const oreval::ErrorClass c = oreval::classify_solution(s.status, s.objective, row.answer, o.mode);
  if (c == oreval::ErrorClass::kCorrect) return v;
  v.reason = c == oreval::ErrorClass::kWrongObjective ? reason::kObjectiveMismatch : reason::kStatusMismatch;
  v.detail = std::string(lp::to_string(s.status)) +
             (lp::has_solution(s.status) ? " " + std::to_string(s.objective) : std::string()) + ", the answer is " +
             (row.answer.kind == oreval::AnswerKind::kNumber ? std::to_string(row.answer.value)
                                                             : std::string(oreval::to_string(row.answer.kind)));
  return v;
}

// The formulation text with runs of white space made one space, for exact dedup.
std::string normalized(const std::string& code) {
  std::string out;
  bool space = false;
  for (char ch : code) {
    if (std::isspace(static_cast<unsigned char>(ch))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += ch;
  }
  return out;
}

}  // namespace

DistilReport distil(const DistilOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (o.out_dir.empty()) throw InputError::field("--out", "required");
  if (o.jobs < 1) throw InputError::field("--jobs", "must be >= 1");
  if (o.limit < 0) throw InputError::field("--limit", "must be >= 0");
  const std::vector<CorpusRow> rows = read_corpus_rows(o.corpus_dir, o.limit);
  const std::string template_file =
      o.template_file.empty() ? oreval::eval_config_dir() + "/distil.txt" : o.template_file;
  const oreval::PromptTemplate t = oreval::load_template(template_file);
  std::unique_ptr<lp::Solver> solver = lp::make_solver(o.solver);
  fs::create_directories(o.out_dir);
  chat::ChatConfig cc = o.chat;
  if (cc.cache_dir.empty()) cc.cache_dir = o.out_dir + "/cache";
  chat::ChatClient client(cc);

  std::vector<chat::ChatRequest> requests;
  for (const CorpusRow& row : rows) {
    const std::map<std::string, std::string> vars = {{"question", row.sample.statement}, {"examples", ""}, {"data_note", ""}};
    chat::ChatRequest r;
    if (!t.system.empty()) r.messages.push_back({"system", oreval::render(t.system, vars, t.file)});
    r.messages.push_back({"user", oreval::render(t.user, vars, t.file)});
    r.temperature = o.temperature;
    r.top_p = o.top_p;
    r.max_tokens = o.max_tokens;
    r.seed = o.seed;
    requests.push_back(std::move(r));
  }

  // Ask, then verify on `jobs` workers as replies are in (each verdict depends only on its reply).
  ProgressBar bar("distil", int64_t(std::max<size_t>(rows.size(), 1)),
                  o.progress ? ProgressBar::Mode::kAuto : ProgressBar::Mode::kOff);
  const std::vector<chat::ChatResult> replies = client.complete_all(requests);
  std::vector<Verdict> verdicts(rows.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k; (k = next.fetch_add(1)) < rows.size();) {
      try {
        verdicts[k] = verify_reply(rows[k], replies[k], o, *solver);
      } catch (const std::exception& e) {
        // A reference LP that does not read back, a fork that fails: this sample only.
        verdicts[k] = {kExecutionFailed, e.what(), oreval::CodeKind::kNone, ""};
      }
      bar.advance(1);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < std::min<int>(o.jobs, int(std::max<size_t>(rows.size(), 1))); ++i) threads.emplace_back(worker);
  for (auto& th : threads) th.join();
  bar.finish();

  DistilReport report;
  report.samples = long(rows.size());
  std::set<std::string> seen;
  std::string sft;
  for (size_t k = 0; k < rows.size(); ++k) {
    Verdict& v = verdicts[k];
    report.from_cache += replies[k].from_cache;
    if (v.reason.empty() && !seen.insert(normalized(v.code)).second) {
      v.reason = reason::kDuplicateExact;
      v.detail = "the same formulation as an earlier accepted reply";
    }
    if (!v.reason.empty()) {
      report.endpoint_errors += v.reason == kEndpointError;
      ++report.per_reason[v.reason];
      report.rejected.push_back({rows[k].sample.id, v.reason, v.detail});
      continue;
    }
    ++report.accepted;
    const chat::ChatResult& r = replies[k];
    const std::string assistant = r.reasoning.empty() ? r.content : "<think>\n" + r.reasoning + "\n</think>\n\n" + r.content;
    ordered_json row;
    row["messages"] = ordered_json::array();
    for (const chat::ChatMessage& m : requests[k].messages) row["messages"].push_back({{"role", m.role}, {"content", m.content}});
    row["messages"].push_back({{"role", "assistant"}, {"content", assistant}});
    const oreval::Answer& a = rows[k].answer;
    row["metadata"] = {{"id", rows[k].sample.id},
                       {"family", rows[k].sample.family},
                       {"source", "endpoint"},
                       {"model", cc.model},
                       {"code_kind", oreval::to_string(v.kind)},
                       {"answer", a.kind == oreval::AnswerKind::kNumber ? ordered_json(a.value)
                                                                        : ordered_json(oreval::to_string(a.kind))}};
    sft += row.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  }
  report.sft_path = o.out_dir + "/sft.jsonl";
  report.manifest_path = o.out_dir + "/manifest.json";
  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_file_atomic(report.sft_path, sft);

  ordered_json m;
  m["schema_version"] = 1;
  m["corpus"] = o.corpus_dir;
  m["endpoint"] = cc.base_url;
  m["model"] = cc.model;
  m["template"] = t.file;
  m["comparator"] = oreval::to_string(o.mode);
  m["samples"] = report.samples;
  m["accepted"] = report.accepted;
  m["from_cache"] = report.from_cache;
  m["per_reason"] = ordered_json::object();
  for (const auto& [k, n] : report.per_reason) m["per_reason"][k] = n;
  m["rejected"] = ordered_json::array();
  for (const DistilRejection& r : report.rejected)
    m["rejected"].push_back({{"id", r.id}, {"reason", r.reason}, {"detail", r.detail}});
  m["wall_seconds"] = report.wall_seconds;
  write_file_atomic(report.manifest_path, m.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  return report;
}

}  // namespace trex::ordata
