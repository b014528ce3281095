// Taking the formulation out of a model's completion.
//
// Candidates, in the order they appear: fenced blocks (```python, ```py, ```lp, ```mps, or
// unlabelled, classified by content) and the report's <python>...</python> sections. The
// last complete candidate wins (models often draft, then correct); an unterminated block at
// the end (a truncated completion) is not complete. With no candidate, bare LP text (from a
// "Maximize"/"Minimize" line to "End") or bare gurobipy code (from its import line on) is
// taken.
#pragma once

#include <string>

namespace trex::oreval {

enum class CodeKind { kNone, kPython, kLp, kMps };
const char* to_string(CodeKind k);

struct Extraction {
  CodeKind kind = CodeKind::kNone;
  std::string code;
};

Extraction extract_formulation(const std::string& completion);

}  // namespace trex::oreval
