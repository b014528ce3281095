#include "trex/util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "trex/util/error.h"
#include "trex/util/io_error.h"

namespace trex {

namespace {

std::string errno_text() { return std::strerror(errno); }

}  // namespace

void write_file_atomic(const std::string& path, std::string_view contents) {
  static std::atomic<unsigned> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(path + ": cannot create: " + errno_text());
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string why = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw IoError(path + ": write failed: " + why);
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw IoError(path + ": write failed: " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw IoError(path + ": cannot rename into place: " + why);
  }
}

std::string read_file(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path, 0, "cannot open: " + errno_text());
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string why = errno_text();
    ::close(fd);
    throw InputError(path, 0, "cannot stat: " + why);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw InputError(path, 0, "is a directory");
  }
  if (st.st_size > 0 && size_t(st.st_size) > max_bytes) {
    ::close(fd);
    throw InputError(path, 0, "file too large (" + std::to_string(st.st_size) + " bytes)");
  }
  std::string out;
  out.reserve(st.st_size > 0 ? size_t(st.st_size) : 0);
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string why = errno_text();
      ::close(fd);
      throw InputError(path, 0, "read failed: " + why);
    }
    if (n == 0) break;
    out.append(buf, size_t(n));
    if (out.size() > max_bytes) {
      ::close(fd);
      throw InputError(path, 0, "file too large");
    }
  }
  ::close(fd);
  return out;
}

}  // namespace trex
