// Executing formulations: the lp readers for LP/MPS, the sandbox for Python.
#include "trex/oreval/execute.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>

#include "nlohmann/json.hpp"
#include "trex/lp/lp_format.h"
#include "trex/lp/model_file.h"
#include "trex/lp/mps_format.h"
#include "trex/lp/solver.h"
#include "trex/oreval/model_json.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/subprocess.h"

#ifndef TREX_PYTHON_DIR
#define TREX_PYTHON_DIR ""
#endif

namespace trex::oreval {

namespace fs = std::filesystem;

const char* to_string(ExecStatus s) {
  switch (s) {
    case ExecStatus::kOk: return "ok";
    case ExecStatus::kSyntaxError: return "syntax-error";
    case ExecStatus::kRuntimeError: return "runtime-error";
    case ExecStatus::kTimeout: return "timeout";
    case ExecStatus::kNoModel: return "no-model";
  }
  return "?";
}

namespace {

constexpr int kRunnerSyntaxError = 65;
constexpr int kRunnerNoModel = 66;

bool holds_module(const std::string& dir) {
  return !dir.empty() && fs::exists(dir + "/gurobipy/__init__.py") && fs::exists(dir + "/trex_eval_runner.py");
}

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  std::string line = text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

// A private directory, removed with everything in it when this goes out of scope.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "trex-eval-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary directory");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Serves the module's "solve FILE LIMIT" requests with a trex solver.
std::string serve_solve(const std::string& request, const std::string& workdir, const ExecOptions& o, int* served) {
  nlohmann::json reply;
  try {
    if (request.rfind("solve ", 0) != 0) throw std::runtime_error("unknown request");
    ++*served;
    std::string path = workdir + "/__trex_solve.json";
    std::string text = read_file(path, o.limits.file_bytes);
    lp::Model m = model_from_json(nlohmann::json::parse(text), "__trex_solve.json");
    double limit = o.solve_time_limit_s;
    size_t sp = request.rfind(' ');
    if (sp != std::string::npos && sp > 6) {
      double asked = std::atof(request.c_str() + sp + 1);
      if (asked > 0) limit = std::min(limit, asked);
    }
    lp::SolveOptions so;
    so.time_limit_s = limit;
    lp::SolveResult r = lp::make_solver(o.solver)->solve(m, so);
    reply["status"] = lp::to_string(r.status);
    reply["seconds"] = r.seconds;
    reply["message"] = r.message;
    if (lp::has_solution(r.status)) {
      reply["objective"] = r.objective;
      reply["x"] = r.x;
    } else {
      reply["objective"] = nullptr;
      reply["x"] = nullptr;
    }
  } catch (const std::exception& e) {
    reply = {{"status", "error"}, {"message", e.what()}, {"objective", nullptr}, {"x", nullptr}};
  }
  return reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The module and the runner compiled to byte code once per trex process, in their own
// __pycache__ as a first import would (the sandbox may not write there, and -B keeps it from
// trying), so no completion pays for compiling them: about 8 ms of a 30 ms start-up. When the
// folder is not writable the programs still run, from source.
void compile_module_once(const std::string& python, const std::string& pydir) {
  static std::mutex mu;
  static std::set<std::string> done;
  std::lock_guard<std::mutex> lock(mu);
  if (!done.insert(python + "\n" + pydir).second) return;
  ProcessOptions po;
  po.timeout_s = 60;
  try {
    run_process({python, "-I", "-m", "compileall", "-q", pydir}, po);
  } catch (const std::exception&) {
    // No interpreter: the sandboxed run reports it.
  }
}

Execution run_python(const std::string& code, const std::string& data_json, const ExecOptions& o) {
  Execution ex;
  std::string pydir = o.python_dir.empty() ? python_module_dir() : o.python_dir;
  TempDir dir;
  write_file_atomic(dir.path + "/completion.py", code);
  if (!data_json.empty()) fs::copy_file(data_json, dir.path + "/data.json");
  SandboxSpec spec;
  compile_module_once(o.python, pydir);
  spec.argv = {o.python, "-I", "-B", pydir + "/trex_eval_runner.py", "completion.py"};
  spec.env = {"PATH=/usr/bin:/bin", "HOME=" + dir.path, "LANG=C.UTF-8", "PYTHONIOENCODING=utf-8",
              "PYTHONHASHSEED=0", "OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1",
              "TREX_EVAL_CHANNEL_FD=3"};
  spec.workdir = dir.path;
  spec.read_only_paths = {"/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/etc/localtime",
                          "/dev/urandom", "/sys/devices/system/cpu", pydir};
  spec.limits = o.limits;
  SandboxResult r = run_sandboxed(spec, [&](const std::string& req) { return serve_solve(req, dir.path, o, &ex.solve_requests); });
  ex.seconds = r.seconds;
  ex.output = r.out;
  if (r.timed_out || r.signal == SIGXCPU || (r.signal == SIGKILL && !r.output_limit)) {
    ex.status = ExecStatus::kTimeout;
    ex.message = r.timed_out ? "wall-clock limit reached" : "CPU limit reached";
    return ex;
  }
  if (r.output_limit) {
    ex.status = ExecStatus::kRuntimeError;
    ex.message = "output limit reached";
    return ex;
  }
  if (r.signal) {
    ex.status = ExecStatus::kRuntimeError;
    ex.message = std::string("killed by signal ") + strsignal(r.signal);
    return ex;
  }
  if (r.exit_code == kRunnerSyntaxError) {
    ex.status = ExecStatus::kSyntaxError;
    ex.message = last_line(r.err);
    return ex;
  }
  if (r.exit_code == kRunnerNoModel) {
    ex.status = ExecStatus::kNoModel;
    ex.message = "the program built no Model";
    return ex;
  }
  if (r.exit_code != 0) {
    ex.status = ExecStatus::kRuntimeError;
    ex.message = last_line(r.err);
    if (ex.message.empty()) ex.message = "exit status " + std::to_string(r.exit_code);
    return ex;
  }
  try {
    std::string final_json = dir.path + "/__trex_final.json";
    if (fs::exists(final_json)) {
      auto j = nlohmann::json::parse(read_file(final_json, o.limits.file_bytes));
      ex.message = "model from " + j.value("from", std::string("the program"));
      ex.model = model_from_json(j, "__trex_final.json");
    } else if (fs::exists(dir.path + "/model.lp")) {
      ex.message = "model from model.lp";
      ex.model = lp::read_lp(read_file(dir.path + "/model.lp", o.limits.file_bytes), "model.lp");
    } else {
      ex.status = ExecStatus::kNoModel;
      ex.message = "the program built no Model";
      return ex;
    }
  } catch (const std::exception& e) {
    ex.status = ExecStatus::kRuntimeError;
    ex.message = std::string("unreadable model: ") + e.what();
    return ex;
  }
  ex.status = ExecStatus::kOk;
  return ex;
}

}  // namespace

std::string python_module_dir() {
  if (const char* env = std::getenv("TREX_PYTHON_DIR"); env && *env) {
    if (!holds_module(env)) throw InputError::field("TREX_PYTHON_DIR", std::string(env) + " holds no gurobipy/__init__.py");
    return fs::absolute(env).string();
  }
  if (holds_module(TREX_PYTHON_DIR)) return TREX_PYTHON_DIR;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path p : {exe.parent_path() / "../python", exe.parent_path() / "../share/trex/python"})
      if (holds_module(p.string())) return fs::canonical(p).string();
  throw InputError("the gurobipy-compatible module was not found (set TREX_PYTHON_DIR to trex's python/ folder)");
}

Execution execute(const Extraction& code, const std::string& data_json, const ExecOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  Execution ex;
  if (code.kind == CodeKind::kPython) {
    ex = run_python(code.code, data_json, options);
  } else if (code.kind == CodeKind::kLp || code.kind == CodeKind::kMps) {
    try {
      ex.model = code.kind == CodeKind::kLp ? lp::read_lp(code.code, "completion.lp") : lp::read_mps(code.code, "completion.mps");
      ex.model->validate();
      ex.status = ExecStatus::kOk;
      ex.message = std::string("model from ") + to_string(code.kind) + " text";
    } catch (const std::exception& e) {
      ex.model.reset();
      ex.status = ExecStatus::kSyntaxError;
      ex.message = e.what();
    }
  } else {
    ex.status = ExecStatus::kNoModel;
    ex.message = "no formulation found";
  }
  ex.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return ex;
}

}  // namespace trex::oreval
