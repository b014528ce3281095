// The safetensors file format (Hugging Face): read by mapping the file, written atomically.
//
// Layout: an 8-byte little-endian unsigned N; N bytes of UTF-8 JSON (padded with spaces to a
// multiple of 8 by this writer); then the data buffer. The JSON maps each tensor name to
//   {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
// (byte offsets into the data buffer, little-endian, row-major), plus an optional
// "__metadata__" object of string to string. The tensors must cover the data buffer exactly,
// without holes or overlaps; the reader checks that, so a truncated or padded file is caught.
//
// Errors: every problem with a file is an InputError naming the file, one line
// ("ckpt.safetensors: tensor 'w': data_offsets [0, 12] do not match shape [4] of F32 (16 bytes)").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace trex::core {

enum class StDtype { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };

const char* to_string(StDtype dtype);   // the format's name: "F32", "BF16", ...
size_t dtype_bytes(StDtype dtype);

struct StTensorInfo {
  std::string name;
  StDtype dtype = StDtype::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data buffer
  uint64_t end = 0;
  int64_t numel() const;
};

// A safetensors file, mapped read-only for as long as the object lives.
class SafetensorsFile {
 public:
  // Maps and validates the whole header. Throws InputError naming `path`.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // In data-buffer order.
  const std::vector<StTensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // nullptr when absent.
  const StTensorInfo* find(const std::string& name) const;
  // Throws InputError ("PATH: no tensor 'NAME'") when absent.
  const StTensorInfo& get(const std::string& name) const;
  // The tensor's bytes inside the mapping (valid while this object lives).
  std::span<const std::byte> bytes(const StTensorInfo& t) const;

 private:
  std::string path_;
  const std::byte* map_ = nullptr;
  size_t map_size_ = 0;
  const std::byte* data_ = nullptr;  // start of the data buffer
  std::vector<StTensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// One tensor to write: its bytes come from `data` (dtype_bytes x numel bytes in memory), or,
// for state that does not fit in memory at once, from `fill(offset, size, dst)`, which must
// write bytes [offset, offset + size) of the tensor to dst; the writer asks for pieces in order.
struct StTensorSource {
  std::string name;
  StDtype dtype = StDtype::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  std::function<void(uint64_t offset, uint64_t size, std::byte* dst)> fill;
};

// Writes the tensors in the order given to PATH.tmp.PID.N, fsyncs, renames it over `path`: a
// reader never sees a half-written file. Throws InputError naming `path` (duplicate or empty
// names, a name "__metadata__", negative dimensions, an unwritable directory); the temporary is
// removed on any failure, an exception from `fill` included.
void write_safetensors(const std::string& path, const std::vector<StTensorSource>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace trex::core
