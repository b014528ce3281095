// The warm interpreters and their pool; the design and what it keeps of the sandbox are in
// warm_pool.h, the interpreter's side of the protocol in python/trex_eval_zygote.py.
#include "trex/oreval/warm_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/oreval/module_copy.h"
#include "trex/oreval/short_slice.h"
#include "trex/oreval/workspace.h"
#include "trex/util/error.h"

#ifndef TREX_SANDBOX_ENTER_LIB
#define TREX_SANDBOX_ENTER_LIB ""
#endif

extern char** environ;

namespace trex::oreval {

namespace fs = std::filesystem;

namespace {

constexpr int kControlFd = 10;            // the control socket's number in the interpreter
constexpr int kWorkspaceFd = 11;          // the workspace mount's, until the interpreter attaches it

// `python3 -I -B -c kBootstrap LIBRARY CONTROL_FD PYC_CACHE COPY_AHEAD FORK_EARLY WORKSPACE
// WORKSPACE_FD`: attaches the workspace (trex_sandbox_attach_workspace) and runs the
// interpreter's script from WORKSPACE/module as __main__, with WORKSPACE_FD "attached" (its
// attach_workspace then does nothing more). A refused attach ends it (status 125), fail closed:
// its script is reachable only in the workspace. It says why first, in place of its "ready" on
// the control socket (await_ready puts it in the program's error), on stderr where it cannot.
// The script runs as runpy.run_path(path, run_name="__main__") runs it (a fresh module named
// __main__ in sys.modules with the same attributes, sys.argv[0] the script's path), without
// importing runpy: runpy, importlib.util, contextlib and warnings, which nothing else of the
// interpreter imports, cost 3.5-4.5 ms of CPU at every start (perf stat -r 40, session 27)
// and stayed in every child's address space. Its code comes from the pyc that compiling the
// module copy in place (trex_eval_pyc.py, first; the script then finds it done) wrote or took
// from the per-user cache: compiling the script's 55 kB of source here cost 5-7 ms of CPU at
// every start. The module folder goes first on sys.path, where the script would put it.
// First it waits for the evaluator's "copied" on the control socket: the evaluator writes the
// module copy after the spawn, while this interpreter starts (about 15 ms before the copy is
// read), not before it (~1.5 ms more of every run's fixed cost). Anything else (the socket's
// end: the copy failed and the evaluator killed it) ends it with status 125. Read before the
// attach: an interpreter that ends with the message unread (a refused attach) would reset the
// socket, and the evaluator would read that reset instead of the line saying why.
constexpr const char* kBootstrap =
    "import ctypes, os, sys\n"
    "if os.read(int(sys.argv[2]), 16) != b'copied':\n"
    "    os._exit(125)\n"
    "attach = ctypes.CDLL(sys.argv[1]).trex_sandbox_attach_workspace\n"
    "attach.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]\n"
    "why = ctypes.create_string_buffer(256)\n"
    "if attach(int(sys.argv[7]), sys.argv[6].encode(), why, 256) != 0:\n"
    "    line = 'cannot attach its workspace: ' + why.value.decode(errors='replace')\n"
    "    try:\n"
    "        import json\n"
    "        os.write(int(sys.argv[2]), json.dumps({'ready': False, 'error': line}).encode())\n"
    "    except Exception:\n"
    "        os.write(2, ('trex warm interpreter: ' + line + '\\n').encode())\n"
    "    os._exit(125)\n"
    "os.close(int(sys.argv[7]))\n"
    "sys.argv[7] = 'attached'\n"
    "folder = sys.argv[6] + '/module'\n"
    "path = folder + '/trex_eval_zygote.py'\n"
    "sys.path.insert(0, folder)\n"
    "import trex_eval_pyc\n"
    "trex_eval_pyc.compile_module_copy(folder, sys.argv[3])\n"
    "code = trex_eval_pyc.compiled_code(path)\n"
    "main = type(sys)('__main__')\n"
    "main.__dict__.update(__file__=path, __cached__=None, __loader__=None, __package__='', __spec__=None)\n"
    "sys.modules['__main__'] = main\n"
    "sys.argv[0] = path\n"
    "del attach, why, folder\n"
    "exec(code, main.__dict__)\n";
constexpr double kStartSeconds = 120;     // importing the module on a loaded machine
constexpr double kAnswerSeconds = 30;     // a fork, or a reap past the child's own deadline
constexpr size_t kMaxMessage = size_t(1) << 20;

std::atomic<int> g_started{0};
std::atomic<int> g_ready_in_workspace{0};     // interpreters ready with their workspace attached
std::atomic<int> g_ready_without_workspace{0};  // ready with their children's folders under $TMPDIR
std::atomic<int> g_workers{0};

// CPUs this process may run on (its affinity), at least 1.
int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace

void warm_pool_set_workers(int workers) { g_workers = workers; }

// cpus / 2, not 2 * workers: --jobs is only checked to be >= 1, and 2 * workers overflows.
bool warm_fork_early(int workers, int cpus) { return workers > 0 && workers <= cpus / 2; }

std::string sandbox_enter_library() {
  if (const char* env = std::getenv("TREX_SANDBOX_ENTER_LIB"); env && *env) {
    if (!fs::exists(env)) throw InputError::field("TREX_SANDBOX_ENTER_LIB", std::string(env) + " does not exist");
    return fs::absolute(env).string();
  }
  if (*TREX_SANDBOX_ENTER_LIB && fs::exists(TREX_SANDBOX_ENTER_LIB)) return TREX_SANDBOX_ENTER_LIB;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::exists(exe.parent_path() / "libtrex_sandbox_enter.so"))
    return (exe.parent_path() / "libtrex_sandbox_enter.so").string();
  throw InputError("libtrex_sandbox_enter.so was not found (build the trex_sandbox_enter target, or set "
                   "TREX_SANDBOX_ENTER_LIB; --cold-start runs every program in a fresh interpreter instead)");
}

class WarmInterpreter final : public SandboxLauncher {
 public:
  // Started: the module copied and the interpreter spawned. Ready only after await_ready(),
  // which every lease calls before the interpreter's first use.
  WarmInterpreter(const std::string& python, const std::string& pydir) {
    std::string tmpl = (fs::temp_directory_path() / "trex-warm-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("warm interpreter: cannot create a temporary directory");
    dir_ = tmpl;
    chmod(dir_.c_str(), 0755);  // user nobody reads the module copy in it
    try {
      start(python, pydir);
    } catch (...) {
      shut_down();
      throw;
    }
  }
  ~WarmInterpreter() override { shut_down(); }

  // Waits for the interpreter's "ready" (its imports and warm-up done) and checks it; at once
  // when it already was. Throws std::runtime_error (and the interpreter is broken) when it
  // exits, does not answer, or its sandbox probe differs from this process's (fail closed).
  void await_ready() {
    if (ready_) return;
    if (broken_) throw std::runtime_error("warm interpreter: broken by an earlier failure");
    nlohmann::json ready;
    try {
      ready = receive(kStartSeconds);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(e.what() + exit_status());  // how it ended, where it did
    }
    // Its start failed and it said why (the bootstrap's refused attach): the program is not run.
    if (ready.contains("error"))
      fail(ready.value("error", std::string("unknown")) + exit_status() + "; no program runs without it");
    // Fail closed: the interpreter's children must get exactly the layers this process found.
    std::string isolation = ready.value("isolation", std::string());
    if (!ready.value("ready", false) || isolation != sandbox_isolation())
      fail("its sandbox probe (" + isolation + ") differs from the evaluator's (" + sandbox_isolation() + ")");
    // Its children's folders go to the workspace only where the interpreter attached it; else
    // (trex not root, an older interpreter script) under $TMPDIR, as before.
    if (workspace_fd_ >= 0 && !ready.value("workspace", false)) {
      close(workspace_fd_);
      workspace_fd_ = -1;
    }
    ++(workspace_fd_ >= 0 ? g_ready_in_workspace : g_ready_without_workspace);
    ready_ = true;
  }

  bool broken() const { return broken_; }
  // Tells it to exit without waiting for it (begin_shut_down); destroying it waits. Not named
  // release: beside the pool's unique_ptr::release (which leaks one on purpose) a slip between
  // `.` and `->` would swap the two.
  void tell_to_exit() { begin_shut_down(); }
  const std::string& runner() const { return runner_; }
  const std::string& module_dir() const { return module_dir_; }
  int workspace_fd() const { return ready_ ? workspace_fd_ : -1; }
  const std::string& workspace_dir() const { return workspace_dir_; }

  pid_t launch(const SandboxSpec& spec, int out_fd, int err_fd, int channel_fd) override {
    await_ready();
    nlohmann::json req = {{"workdir", spec.workdir},
                          {"read_only", spec.read_only_paths},
                          {"argv", spec.argv},
                          {"env", spec.env},
                          {"allow_weak", spec.allow_weak},
                          {"limits",
                           {{"cpu_s", spec.limits.cpu_s},
                            {"memory_bytes", spec.limits.memory_bytes},
                            {"file_bytes", spec.limits.file_bytes},
                            {"open_files", spec.limits.open_files}}}};
    // The interpreter holds its own copies once this returns. The child's ends stay open here:
    // run_sandboxed closes them, as after a fork. Closing them here as well closed them twice,
    // and the second close hit whatever another worker thread had opened under the same number
    // meanwhile (a completion file's write failed with EBADF).
    send(req.dump(), {out_fd, err_fd, channel_fd});
    nlohmann::json answer = receive(kAnswerSeconds);
    if (!answer.contains("pid")) fail("no child: " + answer.dump());
    return pid_t(answer["pid"].get<long>());
  }

  int reap(pid_t child, double seconds_left, bool& timed_out, const std::function<void()>& meanwhile) override {
    send(nlohmann::json{{"wait", std::max(0.0, seconds_left)}}.dump(), {});
    // The interpreter waits for the child's exit from here on; the caller's work overlaps it.
    if (meanwhile) meanwhile();
    nlohmann::json answer;
    try {
      answer = receive(std::max(0.0, seconds_left) + kAnswerSeconds);
    } catch (...) {
      kill(-child, SIGKILL);  // not reaped without an answer: the pid is still the child's
      throw;
    }
    if (!answer.contains("status")) fail("no wait status: " + answer.dump());
    timed_out = answer.value("timed_out", false);
    return answer["status"].get<int>();
  }

 private:
  void start(const std::string& python, const std::string& pydir) {
    std::string lib = sandbox_enter_library();
    // The workspace (workspace.h): a tmpfs the interpreter attaches at an empty folder beside
    // where its module copy would be, in its own mount namespace, and the module copy in it.
    // $TREX_WORKSPACE=0 leaves it out (the copy and the folders under $TMPDIR, as where it cannot
    // be made).
    const char* workspace_env = getenv("TREX_WORKSPACE");
    if (!(workspace_env && std::string(workspace_env) == "0")) open_workspace();
    // Sources only: the interpreter compiles its copy in place before importing it. In the
    // workspace it is written through the mount's descriptor (/proc/self/fd/N: the magic link
    // reaches a mount on no path) and named by its path in the interpreter's namespace, after
    // the spawn (below); under $TMPDIR the interpreter runs the script from the copy, so before.
    if (workspace_fd_ >= 0) {
      module_dir_ = workspace_dir_ + "/module";
      runner_ = module_dir_ + "/trex_eval_runner.py";
    } else {
      module_dir_ = dir_ + "/module";
      runner_ = install_module(module_files(python, pydir, /*compiled=*/false), module_dir_);
    }
    std::string zygote = module_dir_ + "/trex_eval_zygote.py";
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::runtime_error(std::string("warm interpreter: socketpair: ") + strerror(errno));
    ctl_ = sv[0];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], kControlFd);
    // $TREX_PYC_CACHE (docs/eval.md): "0" no pyc cache, else the cache's folder, made absolute
    // (the interpreter's folder is not ours); unset or empty the per-user one. An argument, not
    // the environment: no child inherits it (trex_eval_pyc.py open_pyc_cache).
    const char* cache_env = getenv("TREX_PYC_CACHE");
    std::string pyc_cache = cache_env ? cache_env : "";
    if (!pyc_cache.empty() && pyc_cache != "0") {
      std::error_code ec;
      std::string absolute = std::filesystem::absolute(pyc_cache, ec).string();
      pyc_cache = ec ? "0" : absolute;  // no folder to name: no cache, never an error
    }
    // $TREX_COPY_AHEAD (docs/eval.md): "0" turns the waiting children's copy ahead off (its gain
    // was measured only where page faults trap through a hypervisor); else it is on.
    const char* copy_ahead_env = getenv("TREX_COPY_AHEAD");
    std::string copy_ahead = copy_ahead_env && std::string(copy_ahead_env) == "0" ? "0" : "1";
    std::string fork_early = warm_fork_early(g_workers.load(), usable_cpus()) ? "1" : "0";
    std::vector<std::string> args = {python, "-I", "-B", zygote, lib, std::to_string(kControlFd), pyc_cache, copy_ahead,
                                     fork_early};
    if (workspace_fd_ >= 0) {
      // The script is in the workspace, which the interpreter reaches once it has attached it:
      // the bootstrap attaches it, then runs the script from there (trex_eval_zygote.py).
      args[3] = "-c";
      args.insert(args.begin() + 4, kBootstrap);
      args.insert(args.end(), {workspace_dir_, std::to_string(kWorkspaceFd)});
      posix_spawn_file_actions_adddup2(&fa, workspace_fd_, kWorkspaceFd);
    }
    // The fresh path's environment (execute.cc); each child gets its own from the request.
    // LD_BIND_NOW: the loader binds every symbol in the interpreter, once, rather than in each
    // child at its first call (the zygote drops the name before any child sees it).
    std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + module_dir_, "LANG=C.UTF-8",
                                    "PYTHONIOENCODING=utf-8", "PYTHONHASHSEED=0", "OPENBLAS_NUM_THREADS=1",
                                    "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1", "LD_BIND_NOW=1"};
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    int rc = posix_spawn(&pid_, python.c_str(), &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    if (rc != 0) {
      pid_ = -1;
      throw std::runtime_error("warm interpreter: cannot start " + python + ": " + strerror(rc));
    }
    // Woken for microseconds several times per program: a short slice lets it run at once
    // beside other work (short_slice.h). Its children, forked later, inherit it.
    request_short_slice(pid_);
    ++g_started;
    if (workspace_fd_ >= 0) {
      // The copy while the interpreter starts; its bootstrap waits for "copied" (kBootstrap). A
      // copy that fails throws: the interpreter, not ready, is killed (shut_down). A send that
      // fails means the interpreter has ended (a refused attach): await_ready says why.
      const ModuleFiles& files = module_files(python, pydir, /*compiled=*/false);
      try {
        install_module(files, "/proc/self/fd/" + std::to_string(workspace_fd_) + "/module");
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string("warm interpreter: cannot write its module copy: ") + e.what() +
                                 "; no program runs without it");
      }
      static const char kCopied[] = "copied";
      ssize_t n;
      do n = ::send(ctl_, kCopied, sizeof(kCopied) - 1, MSG_NOSIGNAL);
      while (n < 0 && errno == EINTR);
    }
  }

  // The workspace's mount, its folder beside the module copy and a check, once per process in a
  // throwaway child, that this process's children can attach one there (a mount namespace, a
  // private remount, move_mount): the interpreter's script is in the workspace, so an
  // interpreter that could not attach it would not start. Leaves workspace_fd_ at -1 (no
  // workspace: everything under $TMPDIR) where any step is refused.
  void open_workspace() {
    static const bool attachable = [this] {
      int probe = make_workspace(size_t(1) << 20, 16);
      if (probe < 0) return false;
      // Over the interpreter's own folder, in the child's namespace only: no folder to make
      // and remove on the disk.
      const char* at = dir_.c_str();
      pid_t pid = fork();  // raw system calls only in the child (this process may run threads)
      if (pid == 0) {
        const char* what = "";
        _exit(attach_workspace(probe, at, &what) == 0 ? 0 : 1);
      }
      int status = 0;
      bool ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
      close(probe);
      return ok;
    }();
    if (!attachable) return;
    workspace_fd_ = make_workspace(kWorkspaceBytes, kWorkspaceInodes);
    if (workspace_fd_ == kControlFd || workspace_fd_ == kWorkspaceFd) {
      // Above both numbers, so that neither dup2 of the spawn lands on the other's source.
      int moved = fcntl(workspace_fd_, F_DUPFD_CLOEXEC, kWorkspaceFd + 1);
      close(workspace_fd_);
      workspace_fd_ = moved;
    }
    std::string at = dir_ + "/work";
    if (workspace_fd_ >= 0 && mkdir(at.c_str(), 0755) == 0) {
      workspace_dir_ = at;
    } else if (workspace_fd_ >= 0) {
      close(workspace_fd_);
      workspace_fd_ = -1;
    }
  }

  // " (it exited with status N)" or " (it was killed by signal N)" once the interpreter has
  // ended, waiting for that up to a second; "" if it has not. Reaped here, it is not waited
  // for again (pid_ -1), so no later kill can reach a process that took its number.
  std::string exit_status() {
    if (pid_ <= 0) return "";
    int status = 0;
    for (int i = 0; i < 500; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        if (WIFEXITED(status)) return " (it exited with status " + std::to_string(WEXITSTATUS(status)) + ")";
        return " (it was killed by signal " + std::to_string(WTERMSIG(status)) + ")";
      }
      usleep(2000);
    }
    return "";
  }

  [[noreturn]] void fail(const std::string& why) {
    broken_ = true;
    throw std::runtime_error("warm interpreter: " + why);
  }

  void send(const std::string& text, const std::vector<int>& fds) {
    msghdr msg{};
    iovec iov{const_cast<char*>(text.data()), text.size()};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))] = {};
    if (!fds.empty()) {
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
      memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
    }
    ssize_t n;
    do n = sendmsg(ctl_, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n != ssize_t(text.size())) fail(std::string("cannot send: ") + strerror(errno));
  }

  nlohmann::json receive(double seconds) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (true) {
      double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) fail("no answer within " + std::to_string(int(seconds)) + " s");
      pollfd p{ctl_, POLLIN, 0};
      int r = poll(&p, 1, int(std::max(1.0, left * 1000)));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) continue;
      // One buffer for the interpreter's life: a fresh 1 MiB one per message was a memset and
      // an mmap with its page faults, three times per program.
      if (recv_buf_.empty()) recv_buf_.resize(kMaxMessage);
      ssize_t n = recv(ctl_, recv_buf_.data(), recv_buf_.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("it exited");
      nlohmann::json j = nlohmann::json::parse(recv_buf_.data(), recv_buf_.data() + n, nullptr, false);
      if (j.is_discarded() || !j.is_object()) fail("unreadable answer");
      return j;
    }
  }

  // The first half of shut_down: the interpreter told to exit (its control socket closed; one
  // that never sent its "ready" killed), without waiting for it. Its exit then overlaps what
  // this process does next; shut_down, later, waits for it and removes its folder.
  void begin_shut_down() {
    // One started ahead (warm_pool_prestart) and never leased was never awaited: ready_ is
    // false even when its "ready" already waits on the socket. The zygote forks its waiting
    // child before it sends "ready", so one that sent it is closed and waited for like any
    // other (it stops and reaps that child). One that did not is still importing and warming
    // up, reading nothing: it is killed rather than waited for, before the socket closes. It
    // runs trex's own code only; a child it forked in the moment before its "ready" loses the
    // socket to the zygote with the kill, exits without running anything (WaitingChild) and
    // is reaped by init.
    if (pid_ > 0 && ctl_ >= 0 && !ready_ && !broken_) ready_ = ready_message_waiting();
    if (pid_ > 0 && !ready_) kill(pid_, SIGKILL);
    if (ctl_ >= 0) close(ctl_);  // the interpreter exits when it reads the end
    ctl_ = -1;
    if (workspace_fd_ >= 0) close(workspace_fd_);  // the tmpfs goes with the interpreter's namespace
    workspace_fd_ = -1;
  }

  void shut_down() {
    begin_shut_down();  // nothing more where it already ran
    if (pid_ > 0) {
      // A moment to exit on its own: it stops and reaps the child it forked ahead of the next
      // program (trex_eval_zygote.py's WaitingChild), which a kill would leave to init. Not
      // covered: a zygote killed here while a program runs, forking early (a broken one, whose
      // reap timed out): its waiting child then exits on its socket's end, but init reaps it,
      // and where trex is PID 1 or a subreaper that does not reap, it stays a zombie.
      // PR_SET_PDEATHSIG in that child would not change this: it already exits at once; what
      // falls to init is the reaping.
      // Up to a second, woken by its exit (a pidfd) rather than by 2 ms polls; the polls
      // where the kernel has no pidfd_open.
      int status;
      bool exited = false;
      int pidfd = int(syscall(SYS_pidfd_open, pid_, 0));
      if (pidfd >= 0) {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (!exited) {
          exited = waitpid(pid_, &status, WNOHANG) == pid_;
          auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
          if (exited || left.count() <= 0) break;
          pollfd p{pidfd, POLLIN, 0};
          poll(&p, 1, int(left.count()));
        }
        close(pidfd);
      } else {
        for (int i = 0; i < 500 && !exited; ++i) {
          exited = waitpid(pid_, &status, WNOHANG) == pid_;
          if (!exited) usleep(2000);
        }
      }
      if (!exited) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
      }
      pid_ = -1;
    }
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Whether the interpreter's "ready" is on the socket now (read without waiting).
  bool ready_message_waiting() {
    std::vector<char> buf(4096);  // "ready" is one short message
    ssize_t n;
    do n = recv(ctl_, buf.data(), buf.size(), MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    nlohmann::json j = nlohmann::json::parse(buf.data(), buf.data() + n, nullptr, false);
    return j.is_object() && j.value("ready", false);
  }

  std::string dir_, module_dir_, runner_;
  std::string workspace_dir_;  // where the interpreter's children see the workspace
  std::vector<char> recv_buf_;
  int ctl_ = -1;
  int workspace_fd_ = -1;  // the workspace's mount (workspace.h), or -1: folders under $TMPDIR
  pid_t pid_ = -1;
  bool broken_ = false;
  bool ready_ = false;
};

namespace {

struct Pool {
  std::mutex mu;
  std::map<std::string, std::vector<std::unique_ptr<WarmInterpreter>>> idle;
  // Told to exit (warm_pool_release_idle), waited for at exit.
  std::vector<std::unique_ptr<WarmInterpreter>> released;
  pid_t owner = getpid();
  // At exit the idle interpreters are stopped and their folders removed; a forked child of
  // this process that runs exit handlers leaves them alone (they are not its own).
  ~Pool() {
    if (getpid() != owner) {
      for (auto& [key, list] : idle)
        for (auto& interp : list) (void)interp.release();
      for (auto& interp : released) (void)interp.release();
    }
  }
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

WarmLease::WarmLease(const std::string& python, const std::string& pydir) : key_(python + '\n' + pydir) {
  {
    std::lock_guard<std::mutex> lock(pool().mu);
    auto& list = pool().idle[key_];
    if (!list.empty()) {
      interp_ = std::move(list.back());
      list.pop_back();
    }
  }
  if (!interp_) interp_ = std::make_unique<WarmInterpreter>(python, pydir);
  // This thread passes each program to the interpreter and waits for it: the same short slice
  // as the interpreter's (short_slice.h).
  request_short_slice(0);
  interp_->await_ready();  // a failure here shuts it down with the lease's members
}

void warm_pool_prestart(const std::string& python, const std::string& pydir) {
  std::string key = python + '\n' + pydir;
  {
    std::lock_guard<std::mutex> lock(pool().mu);
    if (!pool().idle[key].empty()) return;
  }
  try {
    auto interp = std::make_unique<WarmInterpreter>(python, pydir);
    std::lock_guard<std::mutex> lock(pool().mu);
    pool().idle[key].push_back(std::move(interp));
  } catch (const std::exception&) {
    // Nothing started: the first lease starts one itself and reports what goes wrong.
  }
}

WarmLease::~WarmLease() {
  if (!interp_ || interp_->broken()) return;  // a broken one is shut down here
  std::lock_guard<std::mutex> lock(pool().mu);
  pool().idle[key_].push_back(std::move(interp_));
}

SandboxLauncher* WarmLease::launcher() { return interp_.get(); }
const std::string& WarmLease::runner() const { return interp_->runner(); }
const std::string& WarmLease::module_dir() const { return interp_->module_dir(); }
int WarmLease::workspace_fd() const { return interp_->workspace_fd(); }
const std::string& WarmLease::workspace_dir() const { return interp_->workspace_dir(); }

int warm_interpreters_started() { return g_started.load(); }

void warm_pool_release_idle() {
  std::lock_guard<std::mutex> lock(pool().mu);
  for (auto& [key, list] : pool().idle) {
    for (auto& interp : list) {
      interp->tell_to_exit();
      pool().released.push_back(std::move(interp));
    }
    list.clear();
  }
}

std::string warm_program_folders() {
  int in = g_ready_in_workspace.load(), out = g_ready_without_workspace.load();
  if (in + out == 0) return "under $TMPDIR (no warm interpreter ran a program)";
  const char* env = getenv("TREX_WORKSPACE");
  std::string why = env && std::string(env) == "0"
                        ? "TREX_WORKSPACE=0"
                        : "none could be made: trex not root, or the kernel refused the mount API";
  // Where the folders are is not a sandbox layer (docs/eval.md): the layers are the same.
  std::string under = "under $TMPDIR (no workspace: " + why + "; the same sandbox layers)";
  if (out == 0) return "each warm interpreter's workspace tmpfs";
  if (in == 0) return under;
  return "each warm interpreter's workspace tmpfs for " + std::to_string(in) + " interpreters, " + under + " for " +
         std::to_string(out);
}

}  // namespace trex::oreval
