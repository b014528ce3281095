#include "trex/util/zstd_file.h"

#include <zstd.h>

#include <memory>

#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex {

namespace {

bool starts_with_zstd_magic(std::string_view data) {
  return data.size() >= 4 && static_cast<unsigned char>(data[0]) == 0x28 && static_cast<unsigned char>(data[1]) == 0xB5 &&
         static_cast<unsigned char>(data[2]) == 0x2F && static_cast<unsigned char>(data[3]) == 0xFD;
}

}  // namespace

bool is_zstd_path(const std::string& path) {
  const std::string s = kZstdSuffix;
  return path.size() > s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
}

std::string zstd_compress(std::string_view data, int level) {
  // One context per thread, kept: a new one per call (ZSTD_compress) allocates and sets up its
  // tables each time. The output is the same bytes as ZSTD_compress's.
  thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> ctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!ctx) throw InputError("zstd compression failed: no memory for a context");
  // The worst-case buffer stays uninitialised (a std::string of that size would be zero-filled:
  // megabytes written and faulted in for a result about a tenth of that size).
  const size_t bound = ZSTD_compressBound(data.size());
  std::unique_ptr<char[]> buf(new char[bound]);
  size_t n = ZSTD_compressCCtx(ctx.get(), buf.get(), bound, data.data(), data.size(), level);
  if (ZSTD_isError(n)) throw InputError(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  return std::string(buf.get(), n);
}

std::string zstd_decompress(std::string_view data, const std::string& path) {
  if (!starts_with_zstd_magic(data)) throw InputError(path, 0, "not zstd-compressed data (no zstd frame header)");
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::string out;
  std::string buf(ZSTD_DStreamOutSize(), '\0');
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  size_t ret = 0;  // 0 once a frame is complete; a hint of bytes still wanted inside one
  for (;;) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    ret = ZSTD_decompressStream(ctx.get(), &o, &in);
    if (ZSTD_isError(ret)) throw InputError(path, 0, std::string("corrupt zstd data: ") + ZSTD_getErrorName(ret));
    out.append(buf.data(), o.pos);
    if (in.pos == in.size && o.pos < o.size) break;  // all input read and all output flushed
  }
  if (ret != 0) throw InputError(path, 0, "truncated zstd data (the last frame is incomplete)");
  return out;
}

std::string read_text_file(const std::string& path) {
  std::string raw = read_file(path);
  if (is_zstd_path(path)) return zstd_decompress(raw, path);
  if (starts_with_zstd_magic(raw))
    throw InputError(path, 0, "holds zstd-compressed data but its name does not end in .zst");
  return raw;
}

}  // namespace trex
