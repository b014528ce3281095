#include "trex/ordata/json_writer.h"

#include <charconv>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <cmath>

namespace trex::ordata {

void JsonWriter::escape(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  const size_t n = s.size();
  size_t run = 0;  // start of the pending run of characters that need no escape
  size_t i = 0;
  while (i < n) {
#ifdef __SSE2__
    // Skip sixteen bytes at a time to the next one that needs escaping (a control character,
    // '"' or '\\'): text lines are tens of characters between newlines.
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), control = _mm_set1_epi8(0x1f);
    while (i + 16 <= n) {
      __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
      __m128i bad = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                                 _mm_cmpeq_epi8(_mm_min_epu8(x, control), x));  // x <= 0x1f
      int mask = _mm_movemask_epi8(bad);
      if (mask != 0) {
        i += size_t(__builtin_ctz(unsigned(mask)));
        break;
      }
      i += 16;
    }
    if (i >= n) break;
#endif
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    out.append(s.data() + run, i - run);
    run = ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
    }
  }
  out.append(s.data() + run, n - run);
  out += '"';
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::open(char c) {
  separate();
  out_ += c;
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::close(char c) {
  out_ += c;
  first_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  separate();
  escape(out_, k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  separate();
  escape(out_, s);
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  separate();
  if (!std::isfinite(v)) {
    out_ += "null";
    return *this;
  }
  if (v == 0) v = 0;  // never "-0"
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, end);
  // Keep doubles recognizable as such ("3.0", not "3"), as JSON readers that type by form expect.
  std::string_view text(buf, size_t(end - buf));
  if (text.find_first_of(".eE") == std::string_view::npos) out_ += ".0";
  return *this;
}

JsonWriter& JsonWriter::value(int64_t v) {
  separate();
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, end);
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t v) {
  separate();
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, end);
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  separate();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

}  // namespace trex::ordata
