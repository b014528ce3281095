// Reading, compiling and installing the module copy; why it is copied is in module_copy.h.
#include "trex/oreval/module_copy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/subprocess.h"

namespace trex::oreval {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxModuleFile = size_t(16) << 20;

// The packages a program may import (the shared modelling core and its skins), each required.
constexpr const char* kPackages[] = {"trex_modeling", "gurobipy", "coptpy", "trex_pulp"};

// The module's sources: the runner, the warm interpreter (warm_pool.h), its warm-up and its
// in-place compile, and every .py file of the packages.
std::vector<std::string> module_sources(const std::string& pydir) {
  std::vector<std::string> rel = {"trex_eval_runner.py", "trex_eval_zygote.py", "trex_eval_warmup.py",
                                  "trex_eval_pyc.py"};
  for (const char* package : kPackages) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(fs::path(pydir) / package, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->is_regular_file() && it->path().extension() == ".py") rel.push_back(fs::relative(it->path(), pydir).string());
    }
    if (ec) throw InputError(pydir + "/" + package, 0, "cannot list the module: " + ec.message());
  }
  return rel;
}

void write_new_file(const std::string& path, const std::string& contents) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + path + ": " + strerror(errno));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t w = write(fd, contents.data() + done, contents.size() - done);
    if (w <= 0) {
      int e = errno;
      close(fd);
      throw std::runtime_error("cannot write " + path + ": " + strerror(e));
    }
    done += size_t(w);
  }
  close(fd);
  chmod(path.c_str(), 0644);  // whatever the umask, the child must read it
}

ModuleFiles load(const std::string& python, const std::string& pydir, bool compiled) {
  ModuleFiles m;
  std::vector<std::string> sources = module_sources(pydir);
  for (const auto& rel : sources) m.files.emplace_back(rel, read_file(pydir + "/" + rel, kMaxModuleFile));
  if (!compiled) return m;
  // Compile in a private staging folder, never in the clone (which may be read-only).
  std::string stage = (fs::temp_directory_path() / "trex-module-XXXXXX").string();
  if (!mkdtemp(stage.data())) return m;
  try {
    install_module(m, stage);
    ProcessOptions po;
    po.timeout_s = 60;
    ProcessResult r = run_process({python, "-I", "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash", stage}, po);
    if (r.exit_code == 0) {
      for (auto& entry : fs::recursive_directory_iterator(stage)) {
        if (!entry.is_regular_file() || entry.path().extension() != ".pyc") continue;
        m.files.emplace_back(fs::relative(entry.path(), stage).string(), read_file(entry.path().string(), kMaxModuleFile));
      }
    }
  } catch (const std::exception&) {
    // No interpreter, or it cannot compile: the sources alone are carried.
  }
  std::error_code ec;
  fs::remove_all(stage, ec);
  return m;
}

}  // namespace

const ModuleFiles& module_files(const std::string& python, const std::string& pydir, bool compiled) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<ModuleFiles>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[python + '\n' + pydir + (compiled ? "\ncompiled" : "\nsources")];
  if (!slot) slot = std::make_unique<ModuleFiles>(load(python, pydir, compiled));
  return *slot;
}

std::string install_module(const ModuleFiles& module, const std::string& into) {
  fs::create_directories(into);
  chmod(into.c_str(), 0755);
  for (const auto& [rel, contents] : module.files) {
    fs::path target = fs::path(into) / rel;
    fs::create_directories(target.parent_path());
    for (fs::path dir = target.parent_path(); dir != fs::path(into); dir = dir.parent_path()) chmod(dir.c_str(), 0755);
    write_new_file(target.string(), contents);
  }
  return into + "/trex_eval_runner.py";
}

}  // namespace trex::oreval
