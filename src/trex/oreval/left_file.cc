// Refusing what a sandboxed program leaves; the threats are listed in left_file.h.
#include "trex/oreval/left_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace trex::oreval {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

[[noreturn]] void refuse(const std::string& name, const std::string& why) {
  throw LeftFileError(name + ": " + why + "; not read");
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

std::optional<std::string> read_left_file(int dir_fd, const std::string& name, size_t max_bytes) {
  if (name.empty() || name.find('/') != std::string::npos) refuse(name, "not a plain file name");
  Fd f{openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (f.fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ELOOP) refuse(name, "is a symbolic link");
    // ENXIO: a socket (or a FIFO with no writer, which O_NONBLOCK does not wait for on read).
    struct stat st;
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
      refuse(name, std::string("is ") + kind_of(st.st_mode));
    refuse(name, std::string("cannot be opened: ") + strerror(errno));
  }
  struct stat st;
  if (fstat(f.fd, &st) != 0) refuse(name, std::string("cannot be examined: ") + strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse(name, std::string("is ") + kind_of(st.st_mode));
  // A hard link made by the program could name a file it cannot read itself.
  if (st.st_nlink != 1) refuse(name, "has " + std::to_string(st.st_nlink) + " links");
  if (size_t(st.st_size) > max_bytes) refuse(name, "is larger than " + std::to_string(max_bytes) + " bytes");
  std::string out;
  out.resize(max_bytes < size_t(st.st_size) + 1 ? max_bytes + 1 : size_t(st.st_size) + 1);
  size_t got = 0;
  while (got < out.size()) {
    ssize_t r = read(f.fd, out.data() + got, out.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) refuse(name, std::string("cannot be read: ") + strerror(errno));
    if (r == 0) break;
    got += size_t(r);
  }
  // Grown since fstat (the program's group is dead by now, but be exact about the cap).
  if (got > max_bytes) refuse(name, "is larger than " + std::to_string(max_bytes) + " bytes");
  out.resize(got);
  return out;
}

}  // namespace trex::oreval
