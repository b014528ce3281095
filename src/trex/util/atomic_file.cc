#include "trex/util/atomic_file.h"
#include "trex/util/atomic_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "trex/util/error.h"
#include "trex/util/io_error.h"

namespace trex {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string temporary_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
}

// Creates `tmp` and writes `contents` to it; returns its open descriptor. On failure the
// temporary is removed and the IoError names `path`.
int write_temporary(const std::string& path, const std::string& tmp, std::string_view contents) {
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
  return fd;
}

// fsync and close `fd` (the temporary `tmp` of `path`): closed whatever happens (a failed
// fsync must not leak it); on failure the first error is reported and the temporary removed.
void sync_temporary(const std::string& path, const std::string& tmp, int fd) {
  int failed = ::fsync(fd) != 0 ? errno : 0;
  if (::close(fd) != 0 && failed == 0) failed = errno;
  if (failed != 0) {
    ::unlink(tmp.c_str());
    throw IoError(path + ": write failed: " + std::strerror(failed));
  }
}

void rename_into_place(const std::string& path, const std::string& tmp) {
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw IoError(path + ": cannot rename into place: " + why);
  }
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view contents) {
  std::string tmp = temporary_name(path);
  sync_temporary(path, tmp, write_temporary(path, tmp, contents));
  rename_into_place(path, tmp);
}

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::string> tmps;
  std::vector<int> fds;  // -1 once closed
  auto discard = [&]() {
    for (size_t i = 0; i < tmps.size(); ++i) {
      if (i < fds.size() && fds[i] >= 0) ::close(fds[i]);
      ::unlink(tmps[i].c_str());
    }
  };
  try {
    for (const auto& [path, contents] : files) {
      tmps.push_back(temporary_name(path));
      fds.push_back(write_temporary(path, tmps.back(), contents));
    }
    // Start every temporary's write-back (block allocation joins the running transaction) before
    // any fsync waits for a commit. Advisory: an error here is reported by the fsync below.
    for (int fd : fds) ::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    for (size_t i = 0; i < fds.size(); ++i) {
      int fd = fds[i];
      fds[i] = -1;  // sync_temporary closes it, whatever happens
      sync_temporary(files[i].first, tmps[i], fd);
    }
  } catch (...) {
    discard();
    throw;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    try {
      rename_into_place(files[i].first, tmps[i]);
    } catch (...) {
      for (size_t j = i + 1; j < tmps.size(); ++j) ::unlink(tmps[j].c_str());
      throw;
    }
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
