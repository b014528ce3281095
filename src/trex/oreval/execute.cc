// Executing formulations: the lp readers for LP/MPS, the sandbox for Python.
#include "trex/oreval/execute.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "nlohmann/json.hpp"
#include "trex/lp/lp_format.h"
#include "trex/lp/model_file.h"
#include "trex/lp/mps_format.h"
#include "trex/lp/solver.h"
#include "trex/oreval/left_file.h"
#include "trex/oreval/model_json.h"
#include "trex/oreval/module_copy.h"
#include "trex/oreval/solve_helper.h"
#include "trex/oreval/warm_pool.h"
#include "trex/oreval/workspace.h"
#include "trex/util/error.h"

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
    case ExecStatus::kUnsupportedLibrary: return "unsupported-library";
    case ExecStatus::kUnsupportedCall: return "unsupported-call";
  }
  return "?";
}

namespace {

constexpr int kRunnerSyntaxError = 65;
constexpr int kRunnerNoModel = 66;
constexpr int kRunnerUnsupportedLibrary = 67;
constexpr int kRunnerUnsupportedCall = 68;
constexpr const char* kModuleFolder = "__trex_module";

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

// A private directory, removed with everything in it when this goes out of scope. `fd` is
// opened once, before the child runs: everything read back afterwards goes through it, so a
// child that renames its folder or puts a link in its place redirects nothing. Under $TMPDIR, or
// in a warm interpreter's workspace (workspace.h), where `path` is the folder's path as the
// interpreter's children see it and the caller reaches it only through `fd`.
struct TempDir {
  std::string path;
  int fd = -1;
  int workspace_fd = -1;  // the workspace holding it (not owned), or -1: under $TMPDIR
  std::string name;       // its name in the workspace
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "trex-eval-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary directory");
    path = tmpl;
    fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      fs::remove(path);
      throw std::runtime_error("cannot open the temporary directory " + path);
    }
  }
  TempDir(int workspace, const std::string& workspace_dir) : workspace_fd(workspace) {
    static std::atomic<unsigned long> made{0};
    name = "p" + std::to_string(++made);
    path = workspace_dir + "/" + name;
    if (mkdirat(workspace_fd, name.c_str(), 0700) != 0)
      throw std::runtime_error("cannot create " + path + " in the workspace: " + strerror(errno));
    fd = openat(workspace_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      unlinkat(workspace_fd, name.c_str(), AT_REMOVEDIR);
      throw std::runtime_error("cannot open " + path + " in the workspace");
    }
  }
  ~TempDir() {
    close(fd);
    if (workspace_fd >= 0) {
      remove_tree_at(workspace_fd, name);  // by descriptor: the path is the children's
      return;
    }
    std::error_code ec;
    fs::remove_all(path, ec);  // never follows a link the child left
  }
};

// A file of the program's (its source, its data), into the folder just made for it (no one else
// can have a file there), through the folder's descriptor: written once, never replaced, so
// neither a temporary name nor an fsync buys anything (the fsync cost a journal commit per
// program), and the folder is removed with it.
void write_into(const TempDir& dir, const char* name, const std::string& bytes) {
  std::string where = dir.path + "/" + name;
  int fd = openat(dir.fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + where + ": " + strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      throw std::runtime_error("cannot write " + where + ": " + strerror(e));
    }
    done += size_t(w);
  }
  if (close(fd) != 0) throw std::runtime_error("cannot write " + where + ": " + strerror(errno));
}

// The benchmark item's data file, whole (the program reads it as data.json).
std::string read_data_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("cannot read " + path);
  return bytes;
}

constexpr const char* kSolveFile = "__trex_solve.json";
constexpr const char* kFinalFile = "__trex_final.json";
constexpr const char* kLpFile = "model.lp";

// Serves the module's "solve FILE LIMIT" requests. The record is read here and parsed and
// solved in the exec'd helper (solve_helper.h), never here; every request shares the program's own deadline
// (its wall clock), and the request after the max_solve_requests-th stops the program.
std::optional<std::string> serve_solve(const std::string& request, double seconds_left, int dir_fd,
                                       const ExecOptions& o, Execution& ex) {
  if (++ex.solve_requests > o.max_solve_requests) {
    ex.message = "more than " + std::to_string(o.max_solve_requests) + " solve requests";
    return std::nullopt;
  }
  nlohmann::json reply;
  if (request.rfind("solve ", 0) != 0) {
    reply = {{"status", "error"}, {"message", "unknown request"}, {"objective", nullptr}, {"x", nullptr}};
    return reply.dump();
  }
  HelperLimits hl;
  hl.seconds_left = seconds_left;
  size_t sp = request.rfind(' ');
  if (sp != std::string::npos && sp > 6) {
    double asked = std::atof(request.c_str() + sp + 1);
    if (asked > 0) hl.seconds_left = std::min(hl.seconds_left, asked);
  }
  hl.memory_bytes = o.limits.memory_bytes;
  // The record is read here, once, and handed to the helper as these bytes (it parses them):
  // what is solved is what is kept, whatever the program does to the file meanwhile.
  std::optional<std::string> text;
  lp::SolveResult r;
  try {
    text = read_left_file(dir_fd, kSolveFile, o.read_bytes);
    if (!text) {
      r.status = lp::SolveStatus::kError;
      r.message = std::string(kSolveFile) + " is missing";
    }
  } catch (const std::exception& e) {
    r.status = lp::SolveStatus::kError;
    r.message = e.what();
  }
  if (text) r = solve_in_helper(HelperInput::record(*text, kSolveFile), o.solver, hl);
  ex.last_solved = text ? std::move(*text) : std::string();
  ex.last_solve = r;
  reply["status"] = lp::to_string(r.status);
  reply["seconds"] = r.seconds;
  reply["message"] = r.message;
  if (lp::has_solution(r.status)) {
    reply["objective"] = r.objective;
    reply["x"] = r.x;
    // Row duals and reduced costs (gurobipy's Pi and RC), for an LP solved to optimality.
    if (!r.duals.empty()) reply["duals"] = r.duals;
    if (!r.reduced_costs.empty()) reply["reduced_costs"] = r.reduced_costs;
  } else {
    reply["objective"] = nullptr;
    reply["x"] = nullptr;
  }
  return reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The model file as it was read between the end of the program's output and its exit status
// (run_sandboxed's after_output), parsed then: while the warm child's address space is torn down
// (about 0.8 ms here, after it closed its output: trex_eval_zygote.py finish) rather than after
// it. Nothing read then is final: a thread the program left may still rewrite the file until the
// child exits. So the file is read again after the status, and this parse is used only when it
// is of exactly those bytes (Hostile.ModelRewrittenAtTheExitIsTheOneScored).
struct ModelReadAhead {
  const char* file = nullptr;  // kFinalFile or kLpFile; null: nothing read (or it did not parse)
  std::string text;
  nlohmann::json record;  // kFinalFile's, parsed
  std::optional<lp::Model> model;

  void read(int dir_fd, size_t max_bytes) {
    std::optional<std::string> got = read_left_file(dir_fd, kFinalFile, max_bytes);
    if (got) {
      nlohmann::json j = nlohmann::json::parse(*got);
      model = model_from_json(j, kFinalFile);
      record = std::move(j);
      text = std::move(*got);
      file = kFinalFile;
    } else if ((got = read_left_file(dir_fd, kLpFile, max_bytes))) {
      model = lp::read_lp(*got, kLpFile);
      text = std::move(*got);
      file = kLpFile;
    }
  }
  // Whether `bytes` of `name`, read after the status, are what was parsed ahead.
  bool holds(const char* name, const std::string& bytes) const { return file == name && text == bytes; }
};

Execution run_python(const std::string& code, const std::string& data_json, const ExecOptions& o,
                     const ModelAhead& on_ahead) {
  Execution ex;
  std::string pydir = o.python_dir.empty() ? python_module_dir() : o.python_dir;
  // The warm interpreter's module copy is read-only to the child, in a folder of its own; the
  // fresh path's is a copy in the sandbox folder. Either way the child can read it (it may not
  // be able to enter the clone).
  std::optional<WarmLease> lease;
  if (o.warm_pool && missing_sandbox_layers().empty()) lease.emplace(o.python, pydir);
  std::optional<TempDir> made;
  if (lease && lease->workspace_fd() >= 0) made.emplace(lease->workspace_fd(), lease->workspace_dir());
  else made.emplace();
  const TempDir& dir = *made;
  write_into(dir, "completion.py", code);
  if (!data_json.empty()) write_into(dir, "data.json", read_data_file(data_json));
  SandboxSpec spec;
  std::string runner = lease ? lease->runner()
                             : install_module(module_files(o.python, pydir), dir.path + "/" + kModuleFolder);
  spec.argv = {o.python, "-I", "-B", runner, "completion.py"};
  spec.env = {"PATH=/usr/bin:/bin", "HOME=" + dir.path, "LANG=C.UTF-8", "PYTHONIOENCODING=utf-8",
              "PYTHONHASHSEED=0", "OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1",
              "TREX_EVAL_CHANNEL_FD=3"};
  spec.workdir = dir.path;
  spec.workdir_fd = dir.fd;
  spec.read_only_paths = {"/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/etc/localtime",
                          "/dev/urandom", "/sys/devices/system/cpu"};
  if (lease) spec.read_only_paths.push_back(lease->module_dir());
  spec.limits = o.limits;
  spec.allow_weak = o.allow_weak_sandbox;
  ModelReadAhead ahead;
  SandboxResult r = run_sandboxed(
      spec, [&](const std::string& req, double left) { return serve_solve(req, left, dir.fd, o, ex); },
      lease ? lease->launcher() : nullptr, [&] {
        try {
          ahead.read(dir.fd, o.read_bytes);
        } catch (...) {
          ahead = ModelReadAhead{};  // read again after the status, where its error is reported
        }
        if (ahead.model && on_ahead) on_ahead(*ahead.model);  // run_sandboxed drops what it throws
      });
  ex.seconds = r.seconds;
  ex.output = r.out;
  if (r.stopped) {
    ex.status = ExecStatus::kRuntimeError;  // the message says why (serve_solve)
    return ex;
  }
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
  if (r.exit_code == kRunnerUnsupportedLibrary || r.exit_code == kRunnerUnsupportedCall) {
    ex.status = r.exit_code == kRunnerUnsupportedLibrary ? ExecStatus::kUnsupportedLibrary : ExecStatus::kUnsupportedCall;
    ex.message = last_line(r.err);  // "unsupported-library: pyomo", "unsupported-call: ..."
    return ex;
  }
  if (r.exit_code != 0 && r.exit_code != kRunnerNoModel) {
    ex.status = ExecStatus::kRuntimeError;
    ex.message = last_line(r.err);
    if (ex.message.empty()) ex.message = "exit status " + std::to_string(r.exit_code);
    return ex;
  }
  // The model: the runner's record of the gurobipy Model, else a model.lp the program wrote
  // (Bench4Opt's reference programs write one). Both are files the program controls.
  try {
    std::optional<std::string> text;
    if (r.exit_code == 0) text = read_left_file(dir.fd, kFinalFile, o.read_bytes);
    if (text) {
      bool ready = ahead.holds(kFinalFile, *text);
      nlohmann::json j = ready ? std::move(ahead.record) : nlohmann::json::parse(*text);
      ex.message = "model from " + j.value("from", std::string("the program"));
      if (ready) ex.model = std::move(ahead.model);
      else ex.model = model_from_json(j, kFinalFile);
      ex.model_read_ahead = ready;
      if (ex.last_solve && !ex.last_solved.empty()) {
        j.erase("from");
        nlohmann::json solved = nlohmann::json::parse(ex.last_solved, nullptr, false);
        if (!solved.is_discarded() && solved == j) ex.final_solve = ex.last_solve;
      }
    } else if ((text = read_left_file(dir.fd, kLpFile, o.read_bytes))) {
      ex.message = "model from model.lp";
      ex.model_read_ahead = ahead.holds(kLpFile, *text);
      if (ex.model_read_ahead) ex.model = std::move(ahead.model);
      else ex.model = lp::read_lp(*text, kLpFile);
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

void prestart_python(const ExecOptions& o) {
  // The condition and the pair (python, module folder) are run_python's, so that its lease
  // finds this interpreter.
  try {
    if (!o.warm_pool) return;  // not missing_sandbox_layers(): its probe would come first (execute.h)
    warm_pool_prestart(o.python, o.python_dir.empty() ? python_module_dir() : o.python_dir);
  } catch (const std::exception&) {
    // The first program reports whatever is wrong, as without this.
  }
}

Execution execute(const Extraction& code, const std::string& data_json, const ExecOptions& options,
                  const ModelAhead& ahead) {
  auto t0 = std::chrono::steady_clock::now();
  Execution ex;
  if (code.kind == CodeKind::kPython) {
    ex = run_python(code.code, data_json, options, ahead);
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
