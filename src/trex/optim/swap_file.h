// The swap optimizer's slower tier: a file on disk, read and written in large aligned blocks by
// io_uring or, where io_uring cannot be set up (a container's seccomp profile, an old kernel),
// by pread/pwrite. Which one runs is decided once, by setting up a ring and moving one block
// through it, and reported with the reason for a fallback. TREX_DISABLE_IO_URING=1 in the
// environment makes the probe fail as a kernel without io_uring would; TREX_REFUSE_O_DIRECT=1
// makes the O_DIRECT open fail as a filesystem without direct I/O would.
//
// Each I/O thread takes its own Channel (its own ring), so the loader and the storer never share
// a queue. A transfer is cut into requests of 1 MiB with up to 8 in flight (ZeRO-Infinity's
// defaults), except buffered writes, which go as one request (swap_file.cc says why). With
// direct I/O (O_DIRECT, when the filesystem allows it) the page cache is bypassed, so the tier's
// speed is the device's, not memory's; it REQUIRES offsets, lengths and buffers aligned to
// 4096 bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace trex::optim {

// kMmap, chosen explicitly, maps the file once and moves chunks with memcpy (non-temporal
// stores for write-back): no system call per transfer, still through the page cache (never with
// O_DIRECT). Unlike the others it cannot report a file cut under it: access beyond the new end
// raises SIGBUS and ends the process.
enum class IoBackend { kAuto, kIoUring, kPread, kMmap };

const char* to_string(IoBackend b);

class SwapFile {
 public:
  class Channel {
   public:
    virtual ~Channel() = default;
    // Whole transfers; throw IoError naming the file and offset when the system refuses one or the
    // file ends early.
    virtual void read(uint64_t offset, uint64_t bytes, void* dst) = 0;
    virtual void write(uint64_t offset, uint64_t bytes, const void* src) = 0;
  };

  // Creates `path`, which must not exist yet, and sizes it to `bytes`. backend kAuto tries io_uring, then
  // pread/pwrite; kIoUring insists (InputError when unavailable). direct: try O_DIRECT, falling
  // back to buffered I/O when the filesystem refuses it. Throws InputError naming the path when
  // it cannot be created, IoError naming it when the system refuses its `bytes` (no space, a
  // file size limit); either way nothing is left behind. The file is removed when the SwapFile
  // is destroyed.
  SwapFile(std::string path, uint64_t bytes, IoBackend backend, bool direct);
  ~SwapFile();
  SwapFile(const SwapFile&) = delete;
  SwapFile& operator=(const SwapFile&) = delete;

  std::unique_ptr<Channel> channel();

  const std::string& path() const { return path_; }
  IoBackend backend() const { return backend_; }  // never kAuto
  bool direct() const { return direct_; }
  // Why a requested io_uring or O_DIRECT is not in use ("" when everything asked for runs).
  const std::string& fallback_reason() const { return fallback_; }

 private:
  std::string path_;
  int fd_ = -1;
  IoBackend backend_ = IoBackend::kPread;
  bool direct_ = false;
  std::string fallback_;
  char* map_ = nullptr;  // kMmap: the whole file
  uint64_t map_size_ = 0;
};

}  // namespace trex::optim
