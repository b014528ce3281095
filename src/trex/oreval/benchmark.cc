// Benchmark loaders: the named files in ../shared/data/or-benchmarks and a generic
// JSON/JSONL/CSV reader.
#include "trex/oreval/benchmark.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "nlohmann/json.hpp"
#include "trex/util/atomic_file.h"
#include "trex/util/csv.h"
#include "trex/util/data_dir.h"
#include "trex/util/error.h"

namespace trex::oreval {

namespace fs = std::filesystem;
using nlohmann::json;

const char* to_string(AnswerKind k) {
  switch (k) {
    case AnswerKind::kNumber: return "number";
    case AnswerKind::kInfeasible: return "infeasible";
    case AnswerKind::kUnbounded: return "unbounded";
    case AnswerKind::kNoSolution: return "no_solution";
    case AnswerKind::kNone: return "none";
  }
  return "?";
}

namespace {

std::string lower_trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace((unsigned char)s[b])) ++b;
  while (e > b && std::isspace((unsigned char)s[e - 1])) --e;
  std::string out = s.substr(b, e - b);
  for (char& c : out) c = char(std::tolower((unsigned char)c));
  return out;
}

// -9999 is SIRL's and MAMO-fixed's mark for "no valid optimum", never a real objective here.
constexpr double kSentinelNoSolution = -9999;

Answer number_answer(double v) {
  if (v == kSentinelNoSolution) return {AnswerKind::kNoSolution, 0};
  return {AnswerKind::kNumber, v == 0 ? 0.0 : v};  // "-0.0" (an empty selection) is 0
}

Answer answer_of(const json& j, const std::string& field) {
  if (j.is_null()) return {};
  if (j.is_number()) return number_answer(j.get<double>());
  if (j.is_string()) return parse_answer(j.get<std::string>(), field);
  throw InputError::field(field, "answer is neither a number nor a string: " + j.dump().substr(0, 60));
}

std::string string_of(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "";
  return j.dump();
}

std::string split_dir(const char* relative) {
  std::string dir = find_data(relative);
  if (dir.empty()) throw InputError(std::string(relative) + ": not found under " + data_dir() + " (set TREX_DATA_DIR)");
  return dir;
}

// Bench4Opt's slai_trex splits: test.jsonl with paths relative to the split folder.
Benchmark load_bench4opt_split(const std::string& name, const char* relative_file, ScoreBy score_by,
                               const char* value_field) {
  std::string file = split_dir(relative_file);
  std::string dir = fs::path(file).parent_path().string();
  Benchmark b;
  b.name = name;
  b.source = file;
  b.score_by = score_by;
  std::ifstream in(file);
  std::string line;
  long n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      throw InputError(file, n, std::string("invalid JSON: ") + e.what());
    }
    Item it;
    it.id = string_of(j.value("id", json()));
    it.question = string_of(j.value("problem", json()));
    if (j.contains("reference_lp_path") && j["reference_lp_path"].is_string())
      it.reference_lp = dir + "/" + j["reference_lp_path"].get<std::string>();
    if (j.contains("data_path") && j["data_path"].is_string()) it.data_path = dir + "/" + j["data_path"].get<std::string>();
    it.reference_code = string_of(j.value("reference_code", json()));
    if (value_field) {
      try {
        it.answer = answer_of(j.value(value_field, json()), value_field);
      } catch (const InputError& e) {
        throw InputError(file, n, e.detail());
      }
    }
    if (it.id.empty()) throw InputError(file, n, "item without an id");
    b.items.push_back(std::move(it));
  }
  return b;
}

// The original Bench4Opt folders: LP/<type>/<problem>/{wp.txt, model.lp, data.json}.
Benchmark load_bench4opt_original() {
  std::string root = split_dir("or-benchmarks/bench4opt/original");
  Benchmark b;
  b.name = "b4o-original";
  b.source = root;
  b.score_by = ScoreBy::kStructure;
  std::vector<fs::path> problems;
  for (const char* kind : {"LP", "MILP"})
    for (const auto& type : fs::directory_iterator(root + "/" + kind))
      if (type.is_directory())
        for (const auto& p : fs::directory_iterator(type.path()))
          if (fs::exists(p.path() / "model.lp")) problems.push_back(p.path());
  std::sort(problems.begin(), problems.end());
  for (const fs::path& p : problems) {
    Item it;
    it.id = fs::relative(p, root).string();
    it.question = fs::exists(p / "wp.txt") ? read_file((p / "wp.txt").string()) : "";
    it.reference_lp = (p / "model.lp").string();
    if (fs::exists(p / "data.json")) it.data_path = (p / "data.json").string();
    b.items.push_back(std::move(it));
  }
  return b;
}

// IndustryOR (CardinalOperations/IndustryOR, JSONL of en_question/en_answer) is not in the
// shared data; `spec` is "industryor=FILE", or "industryor" and TREX_INDUSTRYOR names the file.
Benchmark load_industryor(const std::string& spec) {
  std::string file, from;
  if (spec.size() > 10) {
    file = spec.substr(11);
    from = "--bench industryor=FILE";
    if (file.empty()) throw InputError::field("--bench", "industryor=: no file after '='");
  } else {
    const char* env = std::getenv(kIndustryOrEnv);
    if (env && *env) file = env;
    from = kIndustryOrEnv;
  }
  if (file.empty())
    throw InputError::field("--bench", std::string("industryor: no data file given (set ") + kIndustryOrEnv +
                                           "=FILE or write --bench industryor=FILE; the file is IndustryOR.json of "
                                           "CardinalOperations/IndustryOR)");
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw InputError(file, 0, "IndustryOR data file (from " + from + ") " +
                                  (fs::exists(file, ec) ? "is not a regular file" : "does not exist"));
  Benchmark b = load_generic(file, {"", "en_question", "en_answer"});  // read errors name file and line
  b.name = "industryor";
  return b;
}

std::string extension_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = char(std::tolower((unsigned char)c));
  return ext;
}

Item item_from_object(const json& j, const FieldNames& f, long index, const std::string& file, long line) {
  Item it;
  auto field = [&](const std::string& name) -> const json& {
    static const json kNull;
    auto p = j.find(name);
    return p == j.end() ? kNull : *p;
  };
  if (!j.is_object()) throw InputError(file, line, "item is not a JSON object");
  if (!j.contains(f.question)) throw InputError(file, line, "no field '" + f.question + "' (see --question-field)");
  if (!j.contains(f.answer)) throw InputError(file, line, "no field '" + f.answer + "' (see --answer-field)");
  if (!f.id.empty() && !j.contains(f.id)) throw InputError(file, line, "no field '" + f.id + "' (see --id-field)");
  it.id = f.id.empty() ? std::to_string(index) : string_of(field(f.id));
  it.question = string_of(field(f.question));
  try {
    it.answer = answer_of(field(f.answer), f.answer);
  } catch (const InputError& e) {
    throw InputError(file, line, e.detail());
  }
  return it;
}

}  // namespace

Answer parse_answer(const std::string& text, const std::string& field) {
  std::string s = lower_trimmed(text);
  if (s.empty() || s == "none" || s == "null" || s == "nan") return {};
  if (s == "infeasible" || s == "the problem is infeasible") return {AnswerKind::kInfeasible, 0};
  if (s == "unbounded" || s == "the problem is unbounded") return {AnswerKind::kUnbounded, 0};
  if (s == "no best solution" || s == "no solution" || s == "no feasible solution") return {AnswerKind::kNoSolution, 0};
  std::string digits;
  for (char c : s)
    if (c != ',' && c != '$' && c != ' ' && c != '%') digits += c;
  const char* begin = digits.c_str();
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  if (digits.empty() || end != begin + digits.size() || !std::isfinite(v))
    throw InputError::field(field, "not a number, infeasible, unbounded or 'No Best Solution': '" + text.substr(0, 60) + "'");
  return number_answer(v);
}

const std::vector<NamedBenchmark>& named_benchmarks() {
  static const std::vector<NamedBenchmark> k = {
      {"nl4opt", "or-benchmarks/nl4opt/slai_trex_test.jsonl", "NL4OPT test, T-Rex copy (289, values)"},
      {"optibench", "or-benchmarks/optibench/slai_trex_OptiBench_600.json", "OptiBench, T-Rex copy (600, values)"},
      {"b4o-feasible", "or-benchmarks/bench4opt/slai_trex/bench4opt_feasible/test.jsonl",
       "Bench4Opt feasible split (344, values, reference LPs)"},
      {"b4o-orgeval", "or-benchmarks/bench4opt/slai_trex/bench4opt/test.jsonl",
       "Bench4Opt ORGEval split (394, scored by structure)"},
      {"b4o-orgeval-solver", "or-benchmarks/bench4opt/slai_trex/bench4opt/solver_test.jsonl",
       "Bench4Opt ORGEval items with a known optimum (212, values)"},
      {"b4o-original", "or-benchmarks/bench4opt/original", "Bench4Opt original folders (LP + MILP, structure)"},
      {"mamo-easy", "or-benchmarks/mamo/official/mamo_easy_lp.jsonl", "MAMO EasyLP, official (652, values)"},
      {"mamo-complex", "or-benchmarks/mamo/official/mamo_complex_lp.jsonl", "MAMO ComplexLP, official (211, values)"},
      {"nlp4lp", "or-benchmarks/nlp4lp/llmopt_nlp4lp.jsonl", "NLP4LP, LLMOPT copy (242, values)"},
      {"industryor", "", "IndustryOR (100, values): the file in $TREX_INDUSTRYOR or --bench industryor=FILE"},
  };
  return k;
}

Benchmark load_generic(const std::string& path, const FieldNames& fields) {
  if (!fs::is_regular_file(path)) throw InputError(path, 0, "no such file");
  std::string ext = extension_of(path);
  Benchmark b;
  b.name = fs::path(path).stem().string();
  b.source = path;
  std::string text = read_file(path);
  // Hugging Face's .json data files are often JSON lines (IndustryOR.json is): an object
  // first, not an array, means one object per line.
  size_t first = text.find_first_not_of(" \t\r\n");
  bool json_lines = ext == ".jsonl" || (ext == ".json" && first != std::string::npos && text[first] == '{');
  if (json_lines) {
    size_t pos = 0;
    long line = 0, index = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      std::string l = text.substr(pos, nl - pos);
      pos = nl + 1;
      ++line;
      if (l.find_first_not_of(" \t\r") == std::string::npos) continue;
      json j;
      try {
        j = json::parse(l);
      } catch (const json::exception& e) {
        throw InputError(path, line, std::string("invalid JSON: ") + e.what());
      }
      b.items.push_back(item_from_object(j, fields, ++index, path, line));
    }
  } else if (ext == ".json") {
    json j;
    try {
      j = json::parse(text);
    } catch (const json::exception& e) {
      throw InputError(path, 0, std::string("invalid JSON: ") + e.what());
    }
    if (!j.is_array()) throw InputError(path, 0, "expected a JSON array of items");
    long index = 0;
    for (const json& e : j) {
      ++index;
      b.items.push_back(item_from_object(e, fields, index, path, 0));
    }
  } else if (ext == ".csv") {
    auto rows = parse_csv(text, path);
    if (rows.empty()) throw InputError(path, 1, "empty CSV file");
    const auto& header = rows[0].fields;
    auto column = [&](const std::string& name, const char* flag) -> long {
      auto it = std::find(header.begin(), header.end(), name);
      if (it == header.end()) throw InputError(path, 1, "no column '" + name + "' (see " + flag + ")");
      return long(it - header.begin());
    };
    long q = column(fields.question, "--question-field"), a = column(fields.answer, "--answer-field");
    long id = fields.id.empty() ? -1 : column(fields.id, "--id-field");
    for (size_t r = 1; r < rows.size(); ++r) {
      const auto& row = rows[r].fields;
      const long line = rows[r].line;
      long need = std::max({q, a, id});
      if (long(row.size()) <= need) throw InputError(path, line, "row has " + std::to_string(row.size()) + " fields, header " + std::to_string(header.size()));
      Item it;
      it.id = id < 0 ? std::to_string(r) : row[size_t(id)];
      it.question = row[size_t(q)];
      try {
        it.answer = parse_answer(row[size_t(a)], fields.answer);
      } catch (const InputError& e) {
        throw InputError(path, line, e.detail());
      }
      b.items.push_back(std::move(it));
    }
  } else {
    throw InputError(path, 0, "unknown benchmark format '" + ext + "' (expected .json, .jsonl or .csv)");
  }
  return b;
}

Benchmark load_benchmark(const std::string& name_or_path, const FieldNames& fields) {
  const std::string& n = name_or_path;
  Benchmark b;
  if (n == "nl4opt" || n == "optibench") {
    std::string file = split_dir(n == "nl4opt" ? named_benchmarks()[0].path : named_benchmarks()[1].path);
    b = load_generic(file, {"", "en_question", "en_answer"});
    b.name = n;
    b.in_overall = true;
  } else if (n == "b4o-feasible") {
    b = load_bench4opt_split(n, named_benchmarks()[2].path, ScoreBy::kValue, "optimal_value");
    b.in_overall = true;
  } else if (n == "b4o-orgeval") {
    b = load_bench4opt_split(n, named_benchmarks()[3].path, ScoreBy::kStructure, nullptr);
    b.in_overall = true;
  } else if (n == "b4o-orgeval-solver") {
    b = load_bench4opt_split(n, named_benchmarks()[4].path, ScoreBy::kValue, "gt_optimal_value");
  } else if (n == "b4o-original") {
    b = load_bench4opt_original();
  } else if (n == "mamo-easy" || n == "mamo-complex") {
    b = load_generic(split_dir(n == "mamo-easy" ? named_benchmarks()[6].path : named_benchmarks()[7].path),
                     {"id", "Question", "Answer"});
    b.name = n;
  } else if (n == "nlp4lp") {
    b = load_generic(split_dir(named_benchmarks()[8].path), {"index", "question", "answer"});
    b.name = n;
  } else if (n == "industryor" || n.rfind("industryor=", 0) == 0) {
    b = load_industryor(n);
  } else if (fs::exists(n)) {
    return load_generic(n, fields);
  } else {
    std::string names;
    for (const auto& nb : named_benchmarks()) names += std::string(names.empty() ? "" : ", ") + nb.name;
    throw InputError::field("--bench", "'" + n + "' is neither a benchmark name (" + names + ") nor a file");
  }
  return b;
}

}  // namespace trex::oreval
