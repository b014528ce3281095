// Where each program's sandbox folder is made (execute_scratch.h).
#include "trex/oreval/execute_scratch.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace trex::oreval {

namespace {

bool on_tmpfs(const std::string& path) {
  struct statfs fs;
  return statfs(path.c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

// Why `dir` is not a private writable folder of this user, or "" when it is.
std::string not_private(const std::string& dir) {
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "not a folder";
  if (st.st_uid != geteuid()) return "owned by uid " + std::to_string(st.st_uid) + ", not " + std::to_string(geteuid());
  if (st.st_mode & 077) {
    char mode[8];
    snprintf(mode, sizeof mode, "%03o", unsigned(st.st_mode & 0777));
    return std::string("open to group or others (mode ") + mode + ")";
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) return std::string("not writable: ") + strerror(errno);
  return "";
}

}  // namespace

ScratchRoot::ScratchRoot(std::string path, bool made) : path_(std::move(path)), made_(made), creator_(getpid()) {}

ScratchRoot::~ScratchRoot() {
  // Each program's folder is gone by now; a folder still holding one (a run stopped midway)
  // is left rather than emptied here.
  if (made_ && getpid() == creator_) rmdir(path_.c_str());
}

std::unique_ptr<ScratchRoot> choose_scratch_root(const ScratchPlaces& places) {
  if (!places.tmpdir.empty()) return std::make_unique<ScratchRoot>(places.tmpdir, false);
  if (!places.runtime_dir.empty() && !places.other_user) {
    std::string why = not_private(places.runtime_dir);
    if (!why.empty()) throw std::runtime_error("XDG_RUNTIME_DIR=" + places.runtime_dir + ": " + why);
    if (on_tmpfs(places.runtime_dir)) return std::make_unique<ScratchRoot>(places.runtime_dir, false);
  }
  struct stat st;
  if (!places.shm.empty() && on_tmpfs(places.shm) && lstat(places.shm.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
      (st.st_mode & 01777) == 01777) {
    std::string tmpl = places.shm + "/trex-run-XXXXXX";
    if (!mkdtemp(tmpl.data()))
      throw std::runtime_error("cannot make a folder in " + places.shm + ": " + strerror(errno));
    auto root = std::make_unique<ScratchRoot>(tmpl, true);
    // The program's folder is handed to nobody, who must pass through this one by name.
    if (places.other_user && chmod(tmpl.c_str(), 0711) != 0)
      throw std::runtime_error("cannot open " + tmpl + " to the sandbox's user: " + strerror(errno));
    return root;
  }
  return std::make_unique<ScratchRoot>(places.fallback, false);
}

const std::string& scratch_root() {
  static const std::unique_ptr<ScratchRoot> root = [] {
    ScratchPlaces places;
    // temp_directory_path: $TMPDIR when set (an error when it is not a folder), else /tmp.
    if (const char* t = std::getenv("TMPDIR"); t && *t) places.tmpdir = std::filesystem::temp_directory_path().string();
    if (const char* x = std::getenv("XDG_RUNTIME_DIR")) places.runtime_dir = x;
    places.fallback = std::filesystem::temp_directory_path().string();
    places.other_user = geteuid() == 0;  // sandbox.cc hands the folder to nobody when root
    return choose_scratch_root(places);
  }();
  return root->path();
}

std::string make_program_folder(const std::string& root) {
  std::string tmpl = root + "/trex-eval-XXXXXX";
  if (!mkdtemp(tmpl.data()))
    throw std::runtime_error("cannot make a temporary folder in " + root + ": " + strerror(errno));
  return tmpl;
}

}  // namespace trex::oreval
