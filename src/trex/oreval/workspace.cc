// A warm interpreter's workspace tmpfs (workspace.h).
#include "trex/oreval/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

namespace trex::oreval {

int make_workspace(size_t bytes, size_t inodes) {
  int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) return -1;
  const std::string size = std::to_string(bytes), count = std::to_string(inodes);
  const std::pair<const char*, const char*> options[] = {
      {"size", size.c_str()}, {"nr_inodes", count.c_str()}, {"mode", "0711"}, {"uid", "0"}, {"gid", "0"}};
  for (const auto& [key, value] : options)
    if (fsconfig(fs, FSCONFIG_SET_STRING, key, value, 0) != 0) {
      int e = errno;
      close(fs);
      errno = e;
      return -1;
    }
  int mnt = -1;
  if (fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0)
    mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
  int e = errno;
  close(fs);
  errno = e;
  return mnt;
}

int attach_workspace(int mount_fd, const char* path, const char** what) {
  if (unshare(CLONE_NEWNS) != 0) {
    *what = "unshare(CLONE_NEWNS)";
    return errno;
  }
  // Private from the root down: the attach below, and whatever the host mounts later, stay on
  // their own side.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    *what = "mount(/, MS_REC | MS_PRIVATE)";
    return errno;
  }
  if (move_mount(mount_fd, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    *what = "move_mount";
    return errno;
  }
  return 0;
}

namespace {

constexpr int kFolderFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

bool same_folder(int fd, const struct stat& expected) {
  struct stat st;
  return fstat(fd, &st) == 0 && st.st_dev == expected.st_dev && st.st_ino == expected.st_ino;
}

}  // namespace

void remove_tree_at(int parent_fd, const std::string& name) {
  if (unlinkat(parent_fd, name.c_str(), 0) == 0 || errno != EISDIR) return;
  int fd = openat(parent_fd, name.c_str(), kFolderFlags);
  if (fd < 0) return;
  // The way down from the top folder to fd's: each folder's name and its parent's identity, so
  // that the way back up (through "..") is checked to be the way that came down.
  std::vector<std::pair<std::string, struct stat>> down;
  while (true) {
    DIR* d = fdopendir(fd);
    if (!d) {
      close(fd);
      return;
    }
    std::string folder;
    while (dirent* e = readdir(d)) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno == EISDIR) {
        folder = e->d_name;
        break;
      }
    }
    if (!folder.empty()) {  // down into it, with one descriptor held
      struct stat here;
      int child = fstat(dirfd(d), &here) == 0 ? openat(dirfd(d), folder.c_str(), kFolderFlags) : -1;
      closedir(d);
      if (child < 0) return;
      down.emplace_back(folder, here);
      fd = child;
      continue;
    }
    if (down.empty()) {
      closedir(d);
      break;
    }
    int up = openat(dirfd(d), "..", kFolderFlags);
    closedir(d);
    if (up < 0 || !same_folder(up, down.back().second) || unlinkat(up, down.back().first.c_str(), AT_REMOVEDIR) != 0) {
      if (up >= 0) close(up);
      return;  // what is left stays (never loops over a folder it cannot remove)
    }
    down.pop_back();
    fd = up;
  }
  unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR);
}

}  // namespace trex::oreval
