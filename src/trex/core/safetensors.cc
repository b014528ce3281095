#include "trex/core/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "trex/util/error.h"
#include "trex/util/io_error.h"

namespace trex::core {
namespace {

constexpr StDtype kAllDtypes[] = {StDtype::kF64, StDtype::kF32, StDtype::kF16, StDtype::kBF16,
                                  StDtype::kI64, StDtype::kI32, StDtype::kI16, StDtype::kI8,
                                  StDtype::kU8,  StDtype::kBool};

// The Rust reference refuses headers above 100 MB; so do we (a corrupt length must not make us
// parse the whole file as JSON).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Pieces in which streamed tensors are produced and written.
constexpr uint64_t kWritePiece = uint64_t(4) << 20;

std::string errno_text() { return std::strerror(errno); }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Product of the dimensions, or -1 when it overflows 2^62.
int64_t checked_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > (int64_t(1) << 62) / d) return -1;
    n *= d;
  }
  return n;
}

void write_all(int fd, const std::byte* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw IoError(path + ": write failed: " + errno_text());
    }
    p += w;
    n -= size_t(w);
  }
}

}  // namespace

const char* to_string(StDtype dtype) {
  switch (dtype) {
    case StDtype::kF64: return "F64";
    case StDtype::kF32: return "F32";
    case StDtype::kF16: return "F16";
    case StDtype::kBF16: return "BF16";
    case StDtype::kI64: return "I64";
    case StDtype::kI32: return "I32";
    case StDtype::kI16: return "I16";
    case StDtype::kI8: return "I8";
    case StDtype::kU8: return "U8";
    case StDtype::kBool: return "BOOL";
  }
  return "?";
}

size_t dtype_bytes(StDtype dtype) {
  switch (dtype) {
    case StDtype::kF64: case StDtype::kI64: return 8;
    case StDtype::kF32: case StDtype::kI32: return 4;
    case StDtype::kF16: case StDtype::kBF16: case StDtype::kI16: return 2;
    case StDtype::kI8: case StDtype::kU8: case StDtype::kBool: return 1;
  }
  return 1;
}

int64_t StTensorInfo::numel() const { return checked_numel(shape); }

// ---- reader -----------------------------------------------------------------------------------

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path, 0, "cannot open: " + errno_text());
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    std::string why = errno_text();
    ::close(fd);
    throw InputError(path, 0, "cannot stat: " + why);
  }
  map_size_ = size_t(st.st_size);
  if (map_size_ < 8) {
    ::close(fd);
    throw InputError(path, 0, "not a safetensors file: " + std::to_string(map_size_) +
                                  " bytes, shorter than the 8-byte header length");
  }
  void* m = ::mmap(nullptr, map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) throw InputError(path, 0, "cannot map: " + errno_text());
  map_ = static_cast<const std::byte*>(m);
  try {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | uint64_t(map_[i]);  // little-endian
    if (n > kMaxHeaderBytes)
      throw InputError(path, 0, "not a safetensors file: header length " + std::to_string(n) +
                                    " exceeds the 100 MB limit");
    if (n > map_size_ - 8)
      throw InputError(path, 0, "truncated: header length " + std::to_string(n) + " but only " +
                                    std::to_string(map_size_ - 8) + " bytes follow");
    const char* h = reinterpret_cast<const char*>(map_ + 8);
    nlohmann::json j = nlohmann::json::parse(h, h + n, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
      throw InputError(path, 0, "not a safetensors file: the header is not a JSON object");
    data_ = map_ + 8 + n;
    uint64_t data_size = map_size_ - 8 - n;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& name = it.key();
      const nlohmann::json& e = it.value();
      if (name == "__metadata__") {
        if (!e.is_object()) throw InputError(path, 0, "__metadata__ is not a JSON object");
        for (auto mt = e.begin(); mt != e.end(); ++mt) {
          if (!mt.value().is_string())
            throw InputError(path, 0, "__metadata__ '" + mt.key() + "' is not a string");
          metadata_[mt.key()] = mt.value().get<std::string>();
        }
        continue;
      }
      std::string where = "tensor '" + name + "': ";
      if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") ||
          !e.contains("data_offsets"))
        throw InputError(path, 0, where + "needs dtype, shape and data_offsets");
      StTensorInfo t;
      t.name = name;
      const nlohmann::json& dt = e["dtype"];
      bool known = false;
      if (dt.is_string())
        for (StDtype d : kAllDtypes)
          if (dt.get<std::string>() == to_string(d)) t.dtype = d, known = true;
      if (!known) throw InputError(path, 0, where + "unsupported dtype " + dt.dump());
      const nlohmann::json& sh = e["shape"];
      if (!sh.is_array()) throw InputError(path, 0, where + "shape is not an array");
      for (const auto& d : sh) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0)
          throw InputError(path, 0, where + "shape " + sh.dump() + " is not a list of sizes");
        t.shape.push_back(d.get<int64_t>());
      }
      const nlohmann::json& off = e["data_offsets"];
      if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
          !off[1].is_number_unsigned())
        throw InputError(path, 0, where + "data_offsets " + off.dump() + " is not [begin, end]");
      t.begin = off[0].get<uint64_t>();
      t.end = off[1].get<uint64_t>();
      int64_t numel = checked_numel(t.shape);
      if (numel < 0) throw InputError(path, 0, where + "shape " + shape_text(t.shape) + " overflows");
      uint64_t want = uint64_t(numel) * dtype_bytes(t.dtype);
      if (t.end < t.begin || t.end - t.begin != want)
        throw InputError(path, 0, where + "data_offsets [" + std::to_string(t.begin) + ", " +
                                      std::to_string(t.end) + "] do not match shape " +
                                      shape_text(t.shape) + " of " + to_string(t.dtype) + " (" +
                                      std::to_string(want) + " bytes)");
      if (t.end > data_size)
        throw InputError(path, 0, "truncated: tensor '" + name + "' ends at byte " +
                                      std::to_string(t.end) + " of a " +
                                      std::to_string(data_size) + "-byte data buffer");
      tensors_.push_back(std::move(t));
    }
    std::sort(tensors_.begin(), tensors_.end(), [](const StTensorInfo& a, const StTensorInfo& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t at = 0;
    for (const StTensorInfo& t : tensors_) {
      if (t.begin != at)
        throw InputError(path, 0, "tensor '" + t.name + "' starts at byte " +
                                      std::to_string(t.begin) + ", expected " +
                                      std::to_string(at) + " (tensors overlap or leave a hole)");
      at = t.end;
    }
    if (at != data_size)
      throw InputError(path, 0, std::to_string(data_size - at) +
                                    " bytes after the last tensor (trailing data or a wrong header)");
  } catch (...) {
    ::munmap(const_cast<std::byte*>(map_), map_size_);
    map_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(const_cast<std::byte*>(map_), map_size_);
}

const StTensorInfo* SafetensorsFile::find(const std::string& name) const {
  for (const StTensorInfo& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

const StTensorInfo& SafetensorsFile::get(const std::string& name) const {
  const StTensorInfo* t = find(name);
  if (!t) throw InputError(path_, 0, "no tensor '" + name + "'");
  return *t;
}

std::span<const std::byte> SafetensorsFile::bytes(const StTensorInfo& t) const {
  return {data_ + t.begin, size_t(t.end - t.begin)};
}

// ---- writer -----------------------------------------------------------------------------------

void write_safetensors(const std::string& path, const std::vector<StTensorSource>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::vector<uint64_t> sizes;
  uint64_t at = 0;
  for (const StTensorSource& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      throw InputError(path, 0, "invalid tensor name '" + t.name + "'");
    if (!names.insert(t.name).second)
      throw InputError(path, 0, "tensor '" + t.name + "' given twice");
    int64_t numel = checked_numel(t.shape);
    if (numel < 0)
      throw InputError(path, 0, "tensor '" + t.name + "': invalid shape " + shape_text(t.shape));
    uint64_t bytes = uint64_t(numel) * dtype_bytes(t.dtype);
    if (bytes > 0 && !t.data && !t.fill)
      throw std::logic_error("write_safetensors: tensor '" + t.name + "' has no data source");
    header[t.name] = {{"dtype", to_string(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {at, at + bytes}}};
    sizes.push_back(bytes);
    at += bytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // the data buffer starts 8-byte aligned
  std::byte len[8];
  for (int i = 0; i < 8; ++i) len[i] = std::byte((uint64_t(h.size()) >> (8 * i)) & 0xff);

  static std::atomic<unsigned> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(path + ": cannot create: " + errno_text());
  try {
    write_all(fd, len, 8, path);
    write_all(fd, reinterpret_cast<const std::byte*>(h.data()), h.size(), path);
    std::unique_ptr<std::byte[]> piece;
    for (size_t k = 0; k < tensors.size(); ++k) {
      const StTensorSource& t = tensors[k];
      if (t.data) {
        write_all(fd, static_cast<const std::byte*>(t.data), sizes[k], path);
        continue;
      }
      if (!piece && sizes[k] > 0) piece.reset(new std::byte[kWritePiece]);
      for (uint64_t off = 0; off < sizes[k]; off += kWritePiece) {
        uint64_t n = std::min(kWritePiece, sizes[k] - off);
        t.fill(off, n, piece.get());
        write_all(fd, piece.get(), n, path);
      }
    }
    if (::fsync(fd) != 0) throw IoError(path + ": fsync failed: " + errno_text());
    int rc = ::close(fd);
    fd = -1;
    if (rc != 0) throw IoError(path + ": close failed: " + errno_text());
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw IoError(path + ": cannot rename the temporary into place: " + errno_text());
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
}

}  // namespace trex::core
