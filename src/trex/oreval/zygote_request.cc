// The warm interpreter's request, parsed in its child (zygote_request.h).
#include "trex/oreval/zygote_request.h"

#include <string.h>

namespace trex::oreval {

namespace {

constexpr int kMaxDepth = 32;  // of values skipped under unknown keys

struct Parser {
  const char* p;
  const char* end;
  char* arena;

  void blank() {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
  }

  bool take(char c) {
    blank();
    if (p < end && *p == c) {
      ++p;
      return true;
    }
    return false;
  }

  int hex4(unsigned* value) {
    if (end - p < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = p[i];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return -1;
      v = v * 16 + unsigned(d);
    }
    p += 4;
    *value = v;
    return 0;
  }

  void put_utf8(unsigned cp) {
    if (cp < 0x80) {
      *arena++ = char(cp);
    } else if (cp < 0x800) {
      *arena++ = char(0xC0 | (cp >> 6));
      *arena++ = char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *arena++ = char(0xE0 | (cp >> 12));
      *arena++ = char(0x80 | ((cp >> 6) & 0x3F));
      *arena++ = char(0x80 | (cp & 0x3F));
    } else {
      *arena++ = char(0xF0 | (cp >> 18));
      *arena++ = char(0x80 | ((cp >> 12) & 0x3F));
      *arena++ = char(0x80 | ((cp >> 6) & 0x3F));
      *arena++ = char(0x80 | (cp & 0x3F));
    }
  }

  // A string, decoded into the arena, NUL-terminated; *out points at it. nullptr if malformed.
  const char* string(const char** out) {
    if (!take('"')) return "a string expected";
    char* start = arena;
    while (p < end && *p != '"') {
      unsigned char c = static_cast<unsigned char>(*p);
      if (c < 0x20) return "a control character in a string";
      if (c != '\\') {
        *arena++ = char(c);
        ++p;
        continue;
      }
      if (++p >= end) return "a string not ended";
      char e = *p++;
      switch (e) {
        case '"': *arena++ = '"'; break;
        case '\\': *arena++ = '\\'; break;
        case '/': *arena++ = '/'; break;
        case 'b': *arena++ = '\b'; break;
        case 'f': *arena++ = '\f'; break;
        case 'n': *arena++ = '\n'; break;
        case 'r': *arena++ = '\r'; break;
        case 't': *arena++ = '\t'; break;
        case 'u': {
          unsigned cp;
          if (hex4(&cp) != 0) return "a bad \\u escape";
          if (cp >= 0xDC00 && cp <= 0xDFFF) return "a lone surrogate";
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned low;
            if (end - p < 2 || p[0] != '\\' || p[1] != 'u') return "a lone surrogate";
            p += 2;
            if (hex4(&low) != 0) return "a bad \\u escape";
            if (low < 0xDC00 || low > 0xDFFF) return "a lone surrogate";
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          if (cp == 0) return "a NUL in a string";
          put_utf8(cp);
          break;
        }
        default: return "a bad escape";
      }
    }
    if (p >= end) return "a string not ended";
    ++p;  // the closing quote
    *arena++ = 0;
    *out = start;
    return nullptr;
  }

  const char* strings(std::vector<const char*>* out) {
    out->clear();
    if (!take('[')) return "an array of strings expected";
    if (take(']')) return nullptr;
    do {
      const char* s;
      if (const char* error = string(&s)) return error;
      out->push_back(s);
    } while (take(','));
    return take(']') ? nullptr : "an array not ended";
  }

  // A non-negative integer up to `limit`, as nlohmann writes one: digits only, no sign, no
  // fraction or exponent.
  const char* integer(uint64_t limit, uint64_t* out) {
    blank();
    if (p >= end || *p < '0' || *p > '9') return "a non-negative integer expected";
    if (*p == '0' && end - p > 1 && p[1] >= '0' && p[1] <= '9') return "an integer with a leading zero";
    uint64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9') {
      uint64_t d = uint64_t(*p++ - '0');
      if (v > (limit - d) / 10) return "an integer out of range";
      v = v * 10 + d;
    }
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return "a non-negative integer expected";
    *out = v;
    return nullptr;
  }

  bool literal(const char* word) {
    blank();
    size_t n = strlen(word);
    if (size_t(end - p) < n || memcmp(p, word, n) != 0) return false;
    p += n;
    return true;
  }

  // Any value, passed over (an unknown key's); strings are decoded into the arena and dropped.
  const char* skip(int depth) {
    if (depth > kMaxDepth) return "nested too deep";
    blank();
    if (p >= end) return "a value expected";
    if (*p == '"') {
      char* mark = arena;
      const char* s;
      const char* error = string(&s);
      arena = mark;
      return error;
    }
    if (*p == '[' || *p == '{') {
      char close = *p == '[' ? ']' : '}';
      bool object = *p == '{';
      ++p;
      if (take(close)) return nullptr;
      do {
        if (object) {
          if (const char* error = skip_key()) return error;
        }
        if (const char* error = skip(depth + 1)) return error;
      } while (take(','));
      return take(close) ? nullptr : "an array or object not ended";
    }
    if (literal("true") || literal("false") || literal("null")) return nullptr;
    // A number: JSON's grammar, checked loosely (its value is not used).
    const char* start = p;
    if (p < end && *p == '-') ++p;
    while (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-')) ++p;
    return p > start && (p[-1] >= '0' && p[-1] <= '9') ? nullptr : "a value expected";
  }

  const char* skip_key() {
    char* mark = arena;
    const char* key;
    const char* error = string(&key);
    arena = mark;
    if (error) return error;
    return take(':') ? nullptr : "':' expected";
  }

  const char* limits(ZygoteRequest* out) {
    bool cpu = false, memory = false, file = false, open = false;
    if (!take('{')) return "limits: an object expected";
    if (!take('}')) {
      do {
        char* mark = arena;
        const char* key;
        if (const char* error = string(&key)) return error;
        if (!take(':')) return "':' expected";
        uint64_t v = 0;
        const char* error = nullptr;
        if (strcmp(key, "cpu_s") == 0) {
          error = integer(uint64_t(0x7FFFFFFF), &v);
          out->cpu_s = int(v), cpu = true;
        } else if (strcmp(key, "memory_bytes") == 0) {
          error = integer(~uint64_t(0), &out->memory_bytes), memory = true;
        } else if (strcmp(key, "file_bytes") == 0) {
          error = integer(~uint64_t(0), &out->file_bytes), file = true;
        } else if (strcmp(key, "open_files") == 0) {
          error = integer(uint64_t(0x7FFFFFFF), &v);
          out->open_files = int(v), open = true;
        } else {
          error = skip(1);
        }
        arena = mark;  // keys are not kept
        if (error) return error;
      } while (take(','));
      if (!take('}')) return "limits: an object not ended";
    }
    if (!cpu) return "limits: cpu_s missing";
    if (!memory) return "limits: memory_bytes missing";
    if (!file) return "limits: file_bytes missing";
    if (!open) return "limits: open_files missing";
    return nullptr;
  }
};

}  // namespace

const char* parse_zygote_request(const char* text, size_t size, char* arena, ZygoteRequest* out) {
  *out = ZygoteRequest{};
  Parser q{text, text + size, arena};
  bool workdir = false, read_only = false, argv = false, env = false, limits = false, allow_weak = false;
  if (!q.take('{')) return "an object expected";
  if (!q.take('}')) {
    do {
      // A key's bytes are dropped from the arena once known (the values after it are kept).
      char* mark = q.arena;
      const char* key;
      if (const char* error = q.string(&key)) return error;
      if (!q.take(':')) return "':' expected";
      const char* error = nullptr;
      if (strcmp(key, "workdir") == 0) {
        q.arena = mark;
        error = q.string(&out->workdir), workdir = true;
      } else if (strcmp(key, "read_only") == 0) {
        q.arena = mark;
        error = q.strings(&out->read_only), read_only = true;
      } else if (strcmp(key, "argv") == 0) {
        q.arena = mark;
        error = q.strings(&out->argv), argv = true;
      } else if (strcmp(key, "env") == 0) {
        q.arena = mark;
        error = q.strings(&out->env), env = true;
      } else if (strcmp(key, "limits") == 0) {
        q.arena = mark;
        error = q.limits(out), limits = true;
      } else if (strcmp(key, "allow_weak") == 0) {
        q.arena = mark;
        if (q.literal("true")) out->allow_weak = true;
        else if (q.literal("false")) out->allow_weak = false;
        else error = "allow_weak: true or false expected";
        allow_weak = true;
      } else {
        q.arena = mark;
        error = q.skip(1);
      }
      if (error) return error;
    } while (q.take(','));
    if (!q.take('}')) return "an object not ended";
  }
  q.blank();
  if (q.p != q.end) return "bytes after the object";
  if (!workdir) return "workdir missing";
  if (!read_only) return "read_only missing";
  if (!argv) return "argv missing";
  if (!env) return "env missing";
  if (!limits) return "limits missing";
  if (!allow_weak) return "allow_weak missing";
  return nullptr;
}

}  // namespace trex::oreval
