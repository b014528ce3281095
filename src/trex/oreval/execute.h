// Turning an extracted formulation into a model: LP and MPS text through the lp readers,
// Python through /usr/bin/python3 in the sandbox with trex's gurobipy-compatible module.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "trex/lp/model.h"
#include "trex/lp/solver.h"
#include "trex/oreval/extract.h"
#include "trex/oreval/sandbox.h"

namespace trex::oreval {

// kUnsupportedLibrary: the program imports a modelling library trex does not emulate (pyomo, ...);
// kUnsupportedCall: it calls outside the emulated surface of one that trex does (message names it).
enum class ExecStatus { kOk, kSyntaxError, kRuntimeError, kTimeout, kNoModel, kUnsupportedLibrary, kUnsupportedCall };
const char* to_string(ExecStatus s);

struct ExecOptions {
  SandboxLimits limits;
  std::string python = "/usr/bin/python3";
  std::string python_dir;        // folder holding gurobipy/ and trex_eval_runner.py; "" = python_module_dir()
  std::string solver = "auto";   // for the module's optimize() requests
  double solve_time_limit_s = 60; // the final solve of the program's model (evaluate.h)
  int max_solve_requests = 100;   // optimize() calls one program may make; one more kills it
  size_t read_bytes = size_t(16) << 20;  // largest file read back from the sandbox folder
  bool allow_weak_sandbox = false;       // run even when a sandbox layer is missing
  // Python programs are forked from the worker's warm interpreter (warm_pool.h), with every
  // sandbox layer applied in the child; false, or a layer missing (weak sandbox): a fresh
  // interpreter per program.
  bool warm_pool = true;
};

struct Execution {
  ExecStatus status = ExecStatus::kNoModel;
  std::optional<lp::Model> model;
  std::string message;    // one line: the error, or where the model came from
  std::string output;     // the program's stdout (capped)
  int solve_requests = 0; // requests received on the solve channel
  // The channel's result for the final model when the program's last solve was of exactly that
  // model (the same record, compared after parsing): the solve it asked for is the one scored.
  std::optional<lp::SolveResult> final_solve;
  std::string last_solved;                // bytes of the last record solved on the channel
  std::optional<lp::SolveResult> last_solve;
  double seconds = 0;
  // `model` is the one execute's `ahead` was called with (the same bytes of the same file).
  bool model_read_ahead = false;
};

// Where python/gurobipy lives: $TREX_PYTHON_DIR, else the source tree's python/ compiled in,
// else ../python beside the trex binary. Throws InputError when none holds the module.
std::string python_module_dir();

// Starts the warm interpreter that the first Python program will lease (warm_pool_prestart),
// when programs run with `options` would use one: called before slow work of the caller's own
// (loading a benchmark), the interpreter's start overlaps it instead of delaying the first
// program. Never throws. A run that then has no Python program pays one interpreter start,
// beside its own work, and kills it at exit. It does not wait for the sandbox probe (a forked
// child, ~1 ms: call it before require_sandbox, whose probe then overlaps the start too): where
// a layer turns out missing, no program leases the interpreter (run_python's condition) and it
// is killed at exit like any never leased.
void prestart_python(const ExecOptions& options);

// Called with a Python program's model as its files held it when its output ended, before its
// exit status is known (execute.cc ModelReadAhead): work on it there overlaps the child's exit.
// That model may not be the final one (Execution::model_read_ahead says whether it is). What it
// throws is dropped.
using ModelAhead = std::function<void(const lp::Model&)>;

// `data_json`: a file copied into the sandbox as data.json, or "". `ahead` may be empty.
Execution execute(const Extraction& code, const std::string& data_json, const ExecOptions& options,
                  const ModelAhead& ahead = {});

}  // namespace trex::oreval
