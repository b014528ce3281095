// OR benchmarks normalized to one item shape.
//
// Every loader yields Items {id, question, answer, reference LP and instance data where given,
// source}. Answers are numbers, or one of the explicit non-numbers: infeasible, unbounded,
// "no solution" (ORLM's "No Best Solution", SIRL's -9999: infeasible or unbounded, not told
// which) and none (the benchmark gives no value; B4O-ORGEval is scored by structure).
//
// Named benchmarks resolve under trex::data_dir(); anything else is a path to a JSON array,
// JSONL or CSV file read with the field names in FieldNames (users bring other benchmarks).
// IndustryOR is named but not in the shared data: the user points at its file
// (`--bench industryor=FILE`, or TREX_INDUSTRYOR=FILE with `--bench industryor`), read by the
// generic loader with IndustryOR's fields (en_question, en_answer; ids are line numbers, as in
// ORLM's output files).
#pragma once

#include <string>
#include <vector>

namespace trex::oreval {

enum class AnswerKind { kNumber, kInfeasible, kUnbounded, kNoSolution, kNone };
const char* to_string(AnswerKind k);

struct Answer {
  AnswerKind kind = AnswerKind::kNone;
  double value = 0;  // for kNumber
};

// Reads a benchmark's answer field: a number, a numeric string ("1,200.5", "$30", "-0.0"),
// "infeasible", "unbounded", "No Best Solution", -9999 (a sentinel, not a value) or null/"".
// Throws InputError::field(`field`) on anything else.
Answer parse_answer(const std::string& text, const std::string& field);

struct Item {
  std::string id;
  std::string question;
  Answer answer;
  std::string reference_lp;    // absolute path of the reference model, or ""
  std::string data_path;       // absolute path of the instance data (data.json), or ""
  std::string reference_code;  // Bench4Opt's gurobipy reference program, or ""
};

// How a benchmark is scored: by the optimal value, or by the structure of the built model
// against the reference LP (B4O-ORGEval).
enum class ScoreBy { kValue, kStructure };

struct Benchmark {
  std::string name;    // "nl4opt", ... or the file's stem
  std::string source;  // the file or folder read
  ScoreBy score_by = ScoreBy::kValue;
  bool in_overall = false;  // one of the four report benchmarks averaged as "overall accuracy"
  std::vector<Item> items;
};

// Field names for the generic loader (empty id: the 1-based line or row number).
struct FieldNames {
  std::string id;
  std::string question = "question";
  std::string answer = "answer";
};

// The environment variable naming IndustryOR's data file (JSONL/JSON/CSV).
inline constexpr const char* kIndustryOrEnv = "TREX_INDUSTRYOR";

struct NamedBenchmark {
  const char* name;
  const char* path;  // relative to data_dir(); "" for a file the user names (industryor)
  const char* description;
};
// The named benchmarks, in report order (the four report benchmarks first).
const std::vector<NamedBenchmark>& named_benchmarks();

// A name from named_benchmarks() or a path. Throws InputError naming the file and line (or
// the field) on unreadable input, and InputError for an unknown name that is not a file.
Benchmark load_benchmark(const std::string& name_or_path, const FieldNames& fields = {});

// The generic loader alone: JSON array, JSONL or CSV by extension.
Benchmark load_generic(const std::string& path, const FieldNames& fields);

}  // namespace trex::oreval
