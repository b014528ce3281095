#include "trex/optim/swap_file.h"

#include <fcntl.h>
#include <immintrin.h>
#include <liburing.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "trex/core/arena.h"
#include "trex/core/cpu_features.h"
#include "trex/util/error.h"
#include "trex/util/io_error.h"

namespace trex::optim {
namespace {

constexpr uint64_t kRequestBytes = uint64_t(1) << 20;
constexpr unsigned kQueueDepth = 8;
// Buffered writes to one file serialize on its inode lock, so parallel requests only make
// io_uring hand them to extra kernel workers that compete for the same cores: without O_DIRECT a
// write goes as one request (up to 1 GiB, well within io_uring's 32-bit length). Measured on
// 24M parameters, 1M-element chunks: 75-81 ms of write time per step against 136-153 ms with
// 1 MiB x 8 (one outlier of 195 ms, on a machine at load 8-9).
constexpr uint64_t kBufferedWriteBytes = uint64_t(1) << 30;

std::string errno_text(int e) { return std::strerror(e); }

// Moves bytes with pread/pwrite until all have moved; a short count is retried, so a failure
// reports the system's own reason (EFBIG, ENOSPC, EIO) or the end of a cut file.
void transfer_sync(int fd, const std::string& path, bool write, uint64_t offset, uint64_t bytes, char* p) {
  uint64_t done = 0;
  while (done < bytes) {
    size_t n = size_t(std::min(kRequestBytes, bytes - done));
    ssize_t r = write ? ::pwrite(fd, p + done, n, off_t(offset + done)) : ::pread(fd, p + done, n, off_t(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      throw IoError(path + ": swap " + (write ? "write" : "read") + " failed at offset " +
                    std::to_string(offset + done) + ": " + (r < 0 ? errno_text(errno) : "unexpected end of file"));
    done += uint64_t(r);
  }
}

class PreadChannel : public SwapFile::Channel {
 public:
  PreadChannel(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  void read(uint64_t offset, uint64_t bytes, void* dst) override {
    transfer_sync(fd_, path_, false, offset, bytes, static_cast<char*>(dst));
  }
  void write(uint64_t offset, uint64_t bytes, const void* src) override {
    transfer_sync(fd_, path_, true, offset, bytes, const_cast<char*>(static_cast<const char*>(src)));
  }

 private:
  int fd_;
  std::string path_;
};

class UringChannel : public SwapFile::Channel {
 public:
  // Throws std::runtime_error carrying io_uring_queue_init's error when no ring can be set up.
  UringChannel(int fd, std::string path, uint64_t write_request_bytes)
      : fd_(fd), path_(std::move(path)), write_request_(write_request_bytes) {
    int rc = io_uring_queue_init(kQueueDepth, &ring_, 0);
    if (rc < 0) throw std::runtime_error("io_uring_queue_init: " + errno_text(-rc));
  }
  ~UringChannel() override { io_uring_queue_exit(&ring_); }
  void read(uint64_t offset, uint64_t bytes, void* dst) override {
    transfer(false, offset, bytes, static_cast<char*>(dst));
  }
  void write(uint64_t offset, uint64_t bytes, const void* src) override {
    transfer(true, offset, bytes, const_cast<char*>(static_cast<const char*>(src)));
  }

 private:
  // Keeps up to kQueueDepth requests of kRequestBytes in flight until all bytes have moved. A
  // request that moved fewer bytes than asked (a write stopped by a file size limit or a full
  // disk, a read past the end of a cut file) is finished with pread/pwrite once the ring is
  // drained, which either completes it or names the system's reason.
  void transfer(bool write, uint64_t offset, uint64_t bytes, char* p) {
    uint64_t next = 0;
    unsigned inflight = 0;
    std::string failure;
    uint64_t failed_at = 0;
    std::vector<std::pair<uint64_t, uint64_t>> short_parts;  // (start in the transfer, bytes left)
    while ((next < bytes && failure.empty()) || inflight > 0) {
      while (failure.empty() && next < bytes && inflight < kQueueDepth) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (!sqe) break;
        unsigned n = unsigned(std::min(write ? write_request_ : kRequestBytes, bytes - next));
        if (write)
          io_uring_prep_write(sqe, fd_, p + next, n, offset + next);
        else
          io_uring_prep_read(sqe, fd_, p + next, n, offset + next);
        sqe->user_data = next;  // where the request starts; its length follows from that
        next += n;
        ++inflight;
      }
      int rc = io_uring_submit(&ring_);
      // Requests the kernel did not take would never complete: waiting for them would hang.
      if (rc < 0 && rc != -EINTR && rc != -EAGAIN)
        throw IoError(path_ + ": io_uring_submit: " + errno_text(-rc));
      io_uring_cqe* cqe = nullptr;
      rc = io_uring_wait_cqe(&ring_, &cqe);
      if (rc == -EINTR) continue;
      if (rc < 0) throw IoError(path_ + ": io_uring_wait_cqe: " + errno_text(-rc));
      int res = cqe->res;
      uint64_t at = cqe->user_data;
      uint64_t want = std::min(write ? write_request_ : kRequestBytes, bytes - at);
      io_uring_cqe_seen(&ring_, cqe);
      --inflight;
      if (failure.empty() && res < 0) {
        failure = errno_text(-res);
        failed_at = offset + at;
      } else if (res >= 0 && uint64_t(res) < want) {
        short_parts.emplace_back(at + uint64_t(res), want - uint64_t(res));
      }
    }
    if (!failure.empty())
      throw IoError(path_ + ": swap " + (write ? "write" : "read") + " failed at offset " + std::to_string(failed_at) +
                    ": " + failure);
    for (const auto& [at, left] : short_parts) transfer_sync(fd_, path_, write, offset + at, left, p + at);
  }
  int fd_;
  std::string path_;
  uint64_t write_request_;
  io_uring ring_{};
};

// Copies with non-temporal stores: written-back state is not read again until the next step,
// so it should not evict the slots the update is using from the cache. REQUIRES 64-byte
// aligned dst and src and a length that is a multiple of 64 (4 KiB blocks always are).
__attribute__((target("avx512f"))) void copy_streaming_avx512(char* dst, const char* src,
                                                              uint64_t bytes) {
  for (uint64_t i = 0; i < bytes; i += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i),
                        _mm512_load_si512(reinterpret_cast<const __m512i*>(src + i)));
  _mm_sfence();
}

// The file mapped once (MAP_SHARED): a transfer is a memcpy between the page cache and a slot in
// user space, with no system call and no per-request kernel copy path.
class MmapChannel : public SwapFile::Channel {
 public:
  MmapChannel(char* base, uint64_t size, std::string path)
      : base_(base), size_(size), path_(std::move(path)) {}
  void read(uint64_t offset, uint64_t bytes, void* dst) override {
    check(offset, bytes);
    std::memcpy(dst, base_ + offset, bytes);
  }
  void write(uint64_t offset, uint64_t bytes, const void* src) override {
    check(offset, bytes);
    const char* s = static_cast<const char*>(src);
    char* d = base_ + offset;
    bool aligned = (reinterpret_cast<uintptr_t>(s) | reinterpret_cast<uintptr_t>(d) | bytes) % 64 == 0;
    if (aligned && core::isa_supported(core::Isa::kAvx512))
      copy_streaming_avx512(d, s, bytes);
    else
      std::memcpy(d, s, bytes);
  }

 private:
  void check(uint64_t offset, uint64_t bytes) const {
    if (offset > size_ || bytes > size_ - offset)
      throw std::runtime_error(path_ + ": swap transfer outside the mapped file");
  }
  char* base_;
  uint64_t size_;
  std::string path_;
};

}  // namespace

const char* to_string(IoBackend b) {
  switch (b) {
    case IoBackend::kAuto: return "auto";
    case IoBackend::kIoUring: return "io_uring";
    case IoBackend::kPread: return "pread/pwrite";
    case IoBackend::kMmap: return "mmap";
  }
  return "?";
}

SwapFile::SwapFile(std::string path, uint64_t bytes, IoBackend backend, bool direct)
    : path_(std::move(path)) {
  // O_EXCL: never truncate a file that exists (another optimizer's live swap file, or anything
  // else a mistyped path could name).
  int flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC;
  if (direct) {
    // TREX_REFUSE_O_DIRECT=1: behave as a filesystem that refuses O_DIRECT (EINVAL) would; the
    // tests' way into the buffered fallback, since every filesystem they can create allows it.
    const char* refuse = std::getenv("TREX_REFUSE_O_DIRECT");
    if (refuse && *refuse && std::string(refuse) != "0") {
      fd_ = -1;
      errno = EINVAL;
    } else {
      fd_ = ::open(path_.c_str(), flags | O_DIRECT, 0600);
    }
    if (fd_ >= 0) {
      direct_ = true;
    } else if (errno == EINVAL) {
      fallback_ = "O_DIRECT refused by the filesystem (" + errno_text(errno) + ")";
    }
  }
  if (fd_ < 0 && (!direct || errno == EINVAL)) fd_ = ::open(path_.c_str(), flags, 0600);
  if (fd_ < 0) {
    if (errno == EEXIST)
      throw InputError(path_, 0, "the swap file already exists (another optimizer's, or left "
                                 "by a crashed run: remove it)");
    throw InputError(path_, 0, "cannot create the swap file: " + errno_text(errno));
  }
  // Reserve the blocks now, so a disk too small fails here, naming the file, and not in the
  // middle of a step. Filesystems without fallocate (EOPNOTSUPP) get a sparse file instead. A
  // refusal here is the system refusing a write (no space, a file size limit), as a write
  // mid-run is: an IoError (exit 1), not an input error.
  int rc = bytes > 0 ? ::posix_fallocate(fd_, 0, off_t(bytes)) : 0;
  if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
    ::close(fd_);
    ::unlink(path_.c_str());
    throw IoError(path_ + ": cannot reserve " + std::to_string(bytes) + " bytes for the swap file: " + errno_text(rc));
  }
  if (::ftruncate(fd_, off_t(bytes)) != 0) {
    std::string why = errno_text(errno);
    ::close(fd_);
    ::unlink(path_.c_str());
    throw IoError(path_ + ": cannot size the swap file to " + std::to_string(bytes) + " bytes: " + why);
  }
  backend_ = IoBackend::kPread;
  if (backend == IoBackend::kMmap) {
    if (direct_) {
      ::close(fd_);
      ::unlink(path_.c_str());
      throw InputError(path_, 0, "the mmap back end goes through the page cache: it cannot be "
                                 "combined with direct I/O");
    }
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_, 0);
    if (m == MAP_FAILED) {
      std::string why = errno_text(errno);
      ::close(fd_);
      ::unlink(path_.c_str());
      throw InputError(path_, 0, "cannot map the swap file: " + why);
    }
    map_ = static_cast<char*>(m);
    map_size_ = bytes;
    backend_ = IoBackend::kMmap;
  } else if (backend != IoBackend::kPread) {
    // Set up a ring and move one block out and back, so a ring that exists but whose operations
    // are blocked is caught here rather than in the first step.
    std::string why;
    try {
      // An operator's switch (and the tests' way into the fallback path): behave as if the
      // kernel had refused the ring.
      const char* off = std::getenv("TREX_DISABLE_IO_URING");
      if (off && *off && std::string(off) != "0")
        throw std::runtime_error("disabled by TREX_DISABLE_IO_URING");
      UringChannel probe(fd_, path_, kRequestBytes);
      // 4096-byte aligned, as O_DIRECT requires.
      std::unique_ptr<char, core::AlignedDeleter> block(
          static_cast<char*>(core::aligned_alloc_bytes(4096, 4096)));
      std::memset(block.get(), 0, 4096);
      probe.write(0, 4096, block.get());
      probe.read(0, 4096, block.get());
      backend_ = IoBackend::kIoUring;
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (backend_ != IoBackend::kIoUring) {
      if (backend == IoBackend::kIoUring) {
        ::close(fd_);
        ::unlink(path_.c_str());
        throw InputError(path_, 0, "io_uring is not available here: " + why);
      }
      fallback_ += (fallback_.empty() ? "" : "; ") + ("io_uring unavailable (" + why + ")");
    }
  }
}

SwapFile::~SwapFile() {
  if (map_) ::munmap(map_, map_size_);
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
}

std::unique_ptr<SwapFile::Channel> SwapFile::channel() {
  if (backend_ == IoBackend::kMmap) return std::make_unique<MmapChannel>(map_, map_size_, path_);
  if (backend_ == IoBackend::kIoUring)
    return std::make_unique<UringChannel>(fd_, path_, direct_ ? kRequestBytes : kBufferedWriteBytes);
  return std::make_unique<PreadChannel>(fd_, path_);
}

}  // namespace trex::optim
