#include "trex/core/hw_description.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <set>
#include <utility>

#include "toml++/toml.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::core {

namespace {

// What a number must be.
enum class Check {
  kPositive,  // finite, > 0
  kCount,     // a positive integer
  kFraction,  // in (0, 1]
};

constexpr const char* kKinds[] = {"cpu", "npu", "gpu"};
constexpr const char* kScopes[] = {"core", "shared", "device"};
constexpr const char* kPipes[] = {"cube", "vec",  "scalar", "mte1",  "mte2",    "mte3",
                                  "fixpipe", "fma", "load", "store", "frontend"};

// The field list of every table, written once and walked by both the reader and the writer.
// V provides str(key, s), choice(key, s, allowed), strings(key, v), num(key, q, check) for
// required numbers and opt(key, q, check) for optional ones.

template <class D, class V>
void visit(D& d, V& v, HwDevice*) {
  v.str("name", d.name);
  v.choice("kind", d.kind, kKinds);
  v.num("clock_hz", d.clock_hz, Check::kPositive);
  v.num("cores_matrix", d.cores_matrix, Check::kCount);
  v.num("cores_vector", d.cores_vector, Check::kCount);
  v.opt("dies", d.dies, Check::kCount);
  v.opt("sockets", d.sockets, Check::kCount);
  v.opt("threads_per_core", d.threads_per_core, Check::kCount);
  v.strings("simd", d.simd);
}

template <class D, class V>
void visit(D& d, V& v, HwPeak*) {
  v.num("flops_fp32", d.flops_fp32, Check::kPositive);
  v.num("flops_bf16", d.flops_bf16, Check::kPositive);
  v.opt("flops_fp16", d.flops_fp16, Check::kPositive);
  v.opt("flops_fp8", d.flops_fp8, Check::kPositive);
  v.opt("flops_int8", d.flops_int8, Check::kPositive);
  v.opt("vector_flops_fp32", d.vector_flops_fp32, Check::kPositive);
  v.opt("flops_fp32_one_core", d.flops_fp32_one_core, Check::kPositive);
}

template <class D, class V>
void visit(D& d, V& v, HwCore*) {
  v.opt("fma_units", d.fma_units, Check::kCount);
  v.opt("fma_latency_cycles", d.fma_latency_cycles, Check::kPositive);
  v.opt("simd_bytes", d.simd_bytes, Check::kCount);
  v.opt("vector_regs", d.vector_regs, Check::kCount);
  v.opt("bytes_per_repeat", d.bytes_per_repeat, Check::kCount);
  v.opt("max_repeat", d.max_repeat, Check::kCount);
}

template <class D, class V>
void visit(D& d, V& v, HwMemory*) {
  v.str("name", d.name);
  v.choice("scope", d.scope, kScopes);
  v.num("size_bytes", d.size_bytes, Check::kCount);
  v.opt("line_bytes", d.line_bytes, Check::kCount);
  v.opt("ways", d.ways, Check::kCount);
  v.opt("align_bytes", d.align_bytes, Check::kCount);
  v.opt("bw_read", d.bw_read, Check::kPositive);
  v.opt("bw_write", d.bw_write, Check::kPositive);
  v.opt("shared_by", d.shared_by, Check::kCount);
}

template <class D, class V>
void visit(D& d, V& v, HwPipe*) {
  v.choice("name", d.name, kPipes);
  v.str("unit", d.unit);
  v.num("rate", d.rate, Check::kPositive);
}

template <class D, class V>
void visit(D& d, V& v, HwLink*) {
  v.str("level", d.level);
  v.num("bw_unidir_bytes_per_s", d.bw_unidir_bytes_per_s, Check::kPositive);
  v.opt("group_size", d.group_size, Check::kCount);
  v.opt("latency_s", d.latency_s, Check::kPositive);
  v.opt("efficiency", d.efficiency, Check::kFraction);
}

template <class D, class V>
void visit(D& d, V& v, HwCalibration*) {
  v.opt("compute_efficiency", d.compute_efficiency, Check::kFraction);
  v.opt("memory_efficiency", d.memory_efficiency, Check::kFraction);
  v.opt("launch_s_matrix", d.launch_s_matrix, Check::kPositive);
  v.opt("launch_s_vector", d.launch_s_vector, Check::kPositive);
  v.opt("launch_s_comm", d.launch_s_comm, Check::kPositive);
}

template <class D, class V>
void visit(D& d, V& v, HwStream*) {
  v.num("array_bytes", d.array_bytes, Check::kCount);
  v.num("threads", d.threads, Check::kCount);
  v.num("repetitions", d.repetitions, Check::kCount);
  v.opt("copy", d.copy, Check::kPositive);
  v.opt("scale", d.scale, Check::kPositive);
  v.opt("add", d.add, Check::kPositive);
  v.opt("triad", d.triad, Check::kPositive);
  v.opt("triad_nt", d.triad_nt, Check::kPositive);
  v.opt("read", d.read, Check::kPositive);
  v.opt("write", d.write, Check::kPositive);
}

template <class D, class V>
void visit(D& d, V& v, HwFmaPeak*) {
  v.str("isa", d.isa);
  v.num("accumulators", d.accumulators, Check::kCount);
  v.num("flops_one_core", d.flops_one_core, Check::kPositive);
  v.num("flops_all_cores", d.flops_all_cores, Check::kPositive);
}

template <class D, class V>
void visit(D& d, V& v, HwSystem*) {
  v.str("name", d.name);
  v.num("devices", d.devices, Check::kCount);
  v.opt("nodes", d.nodes, Check::kCount);
  v.opt("devices_per_node", d.devices_per_node, Check::kCount);
  v.opt("host_cpus", d.host_cpus, Check::kCount);
  v.opt("flops_bf16", d.flops_bf16, Check::kPositive);
  v.opt("memory_bytes", d.memory_bytes, Check::kCount);
}

template <class S, class V>
void visit_fields(S& s, V& v) {
  using Plain = std::remove_const_t<S>;
  visit(s, v, static_cast<Plain*>(nullptr));
}

constexpr std::pair<Confidence, const char*> kConfidenceNames[] = {
    {Confidence::kMeasured, "measured"},     {Confidence::kOfficial, "official"},
    {Confidence::kThirdParty, "third-party"}, {Confidence::kDerived, "derived"},
    {Confidence::kUncertain, "uncertain"},
};

// ---------------------------------------------------------------------------------------
// Reading

long line_of(const toml::node* n) { return n == nullptr ? 0 : long(n->source().begin.line); }

template <size_t N>
std::string one_of(const char* const (&allowed)[N]) {
  std::string s;
  for (size_t i = 0; i < N; ++i) s += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(allowed[i]);
  return s;
}

class TableReader {
 public:
  TableReader(const std::string& file, const toml::table& table, std::string section)
      : file_(file), table_(table), section_(std::move(section)) {
    if (const toml::node* n = table_.get("source")) default_source_ = string_at(n, "source");
    if (const toml::node* n = table_.get("confidence")) default_confidence_ = confidence_at(n, "confidence");
  }

  void str(const char* key, std::string& out) {
    const toml::node* n = take(key);
    if (n == nullptr) fail(&table_, key, "missing");
    out = string_at(n, key);
    if (out.empty()) fail(n, key, "must not be empty");
  }

  template <size_t N>
  void choice(const char* key, std::string& out, const char* const (&allowed)[N]) {
    str(key, out);
    for (const char* a : allowed)
      if (out == a) return;
    fail(table_.get(key), key, "is \"" + out + "\", expected " + one_of(allowed));
  }

  void strings(const char* key, std::vector<std::string>& out) {
    const toml::node* n = take(key);
    if (n == nullptr) return;
    const toml::array* a = n->as_array();
    if (a == nullptr) fail(n, key, "must be an array of strings");
    for (const toml::node& e : *a) {
      const auto* s = e.as_string();
      if (s == nullptr) fail(&e, key, "must be an array of strings");
      out.push_back(s->get());
    }
  }

  void num(const char* key, Quantity& q, Check check) {
    const toml::node* n = take(key);
    if (n == nullptr) fail(&table_, key, "missing");
    q = quantity(n, key, check);
  }

  void opt(const char* key, OptQuantity& q, Check check) {
    const toml::node* n = take(key);
    if (n == nullptr) {
      q.reset();
      return;
    }
    q = quantity(n, key, check);
  }

  [[noreturn]] void fail(const toml::node* at, const std::string& key, const std::string& msg) const {
    throw InputError(file_, line_of(at), section_ + "." + key + ": " + msg);
  }

 private:
  const toml::node* take(const std::string& key) const { return table_.get(key); }

  std::string string_at(const toml::node* n, const std::string& key) const {
    const auto* s = n->as_string();
    if (s == nullptr) fail(n, key, "must be a string");
    return s->get();
  }

  Confidence confidence_at(const toml::node* n, const std::string& key) const {
    std::string s = string_at(n, key);
    for (const auto& [c, name] : kConfidenceNames)
      if (s == name) return c;
    fail(n, key, "is \"" + s + "\", expected measured, official, third-party, derived or uncertain");
  }

  Quantity quantity(const toml::node* n, const std::string& key, Check check) {
    Quantity q;
    if (const auto* i = n->as_integer())
      q.value = double(i->get());
    else if (const auto* f = n->as_floating_point())
      q.value = f->get();
    else
      fail(n, key, "must be a number");
    if (!std::isfinite(q.value) || q.value <= 0) fail(n, key, "must be a positive number");
    if (check == Check::kCount && q.value != std::floor(q.value)) fail(n, key, "must be a whole number");
    if (check == Check::kFraction && q.value > 1) fail(n, key, "must be in (0, 1]");

    if (const toml::node* s = take(key + "_source"))
      q.source = string_at(s, key + "_source");
    else if (default_source_)
      q.source = *default_source_;
    else
      fail(n, key, "has no source (set source in the table or " + key + "_source)");
    if (q.source.empty()) fail(n, key, "has an empty source");
    if (const toml::node* c = take(key + "_confidence"))
      q.confidence = confidence_at(c, key + "_confidence");
    else if (default_confidence_)
      q.confidence = *default_confidence_;
    else
      fail(n, key, "has no confidence (set confidence in the table or " + key + "_confidence)");
    return q;
  }

  const std::string& file_;
  const toml::table& table_;
  std::string section_;
  std::optional<std::string> default_source_;
  std::optional<Confidence> default_confidence_;
};

// The keys a table may hold: its fields, and for numbers their provenance overrides.
class KeyCollector {
 public:
  KeyCollector() { keys_ = {"source", "confidence"}; }
  void str(const char* key, const std::string&) { keys_.insert(key); }
  template <size_t N>
  void choice(const char* key, const std::string&, const char* const (&)[N]) {
    keys_.insert(key);
  }
  void strings(const char* key, const std::vector<std::string>&) { keys_.insert(key); }
  void num(const char* key, const Quantity&, Check) {
    keys_.insert(key);
    keys_.insert(std::string(key) + "_source");
    keys_.insert(std::string(key) + "_confidence");
  }
  void opt(const char* key, const OptQuantity&, Check c) { num(key, Quantity{}, c); }
  const std::set<std::string>& keys() const { return keys_; }

 private:
  std::set<std::string> keys_;
};

template <class S>
S read_table(const std::string& file, const toml::node& node, const std::string& section) {
  const toml::table* t = node.as_table();
  if (t == nullptr) throw InputError(file, line_of(&node), section + ": must be a table");
  S s{};
  // Unknown keys first: a misspelt field is reported as such, not as the field it should be.
  KeyCollector known;
  visit_fields(s, known);
  for (const auto& [k, v] : *t)
    if (!known.keys().count(std::string(k.str())))
      throw InputError(file, line_of(&v), section + "." + std::string(k.str()) + ": unknown field");
  TableReader r(file, *t, section);
  visit_fields(s, r);
  return s;
}

template <class S>
std::vector<S> read_array(const std::string& file, const toml::node& node, const std::string& section) {
  const toml::array* a = node.as_array();
  if (a == nullptr || !a->is_array_of_tables())
    throw InputError(file, line_of(&node), section + ": must be an array of tables ([[" + section + "]])");
  std::vector<S> out;
  for (size_t i = 0; i < a->size(); ++i)
    out.push_back(read_table<S>(file, *a->get(i), section + "[" + std::to_string(i) + "]"));
  return out;
}

// ---------------------------------------------------------------------------------------
// Writing

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

std::string toml_number(double v, Check check) {
  if (check == Check::kCount && std::fabs(v) < 9e15) return std::to_string(static_cast<long long>(v));
  // The shortest text that reads back to the same double ("2.6e+09", "0.7", "196608"): all
  // valid TOML numbers, and the reader takes integers where it wants floats.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
  return std::string(buf, res.ptr);
}

// A reading aid after the number: GFLOP/s, GB/s, MiB, GHz.
std::string human(const std::string& key, double v, Check check) {
  char buf[64];
  auto ends_with = [&](const char* suffix) {
    std::string s(suffix);
    return key.size() >= s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0;
  };
  bool flops = key.rfind("flops", 0) == 0 || key.find("_flops") != std::string::npos;
  bool bandwidth = key.rfind("bw_", 0) == 0 || key == "copy" || key == "scale" || key == "add" ||
                   key == "triad" || key == "triad_nt" || key == "read" || key == "write";
  if (flops) {
    if (v >= 1e12)
      std::snprintf(buf, sizeof buf, "%.4g TFLOP/s", v / 1e12);
    else
      std::snprintf(buf, sizeof buf, "%.4g GFLOP/s", v / 1e9);
  } else if (bandwidth) {
    std::snprintf(buf, sizeof buf, "%.4g GB/s", v / 1e9);
  } else if (key == "clock_hz") {
    std::snprintf(buf, sizeof buf, "%.4g GHz", v / 1e9);
  } else if (ends_with("_bytes") && check == Check::kCount && v >= 1024) {
    const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    double x = v / 1024;
    int u = 0;
    while (x >= 1024 && u < 3) x /= 1024, ++u;
    std::snprintf(buf, sizeof buf, "%.4g %s", x, units[u]);
  } else {
    return "";
  }
  return buf;
}

class TableWriter {
 public:
  void str(const char* key, const std::string& s) { lines_.push_back({key, toml_string(s), nullptr, ""}); }

  template <size_t N>
  void choice(const char* key, const std::string& s, const char* const (&)[N]) {
    str(key, s);
  }

  void strings(const char* key, const std::vector<std::string>& v) {
    if (v.empty()) return;
    std::string text = "[";
    for (size_t i = 0; i < v.size(); ++i) text += (i ? ", " : "") + toml_string(v[i]);
    lines_.push_back({key, text + "]", nullptr, ""});
  }

  void num(const char* key, const Quantity& q, Check check) {
    lines_.push_back({key, toml_number(q.value, check), &q, human(key, q.value, check)});
  }

  void opt(const char* key, const OptQuantity& q, Check check) {
    if (q) num(key, *q, check);
  }

  // "[name]" or "[[name]]", the table's provenance defaults (the most common ones), the fields,
  // and an override after each number that differs from the defaults.
  std::string text(const std::string& header) const {
    std::map<std::string, int> sources;
    std::map<Confidence, int> confidences;
    for (const Line& l : lines_)
      if (l.q) ++sources[l.q->source], ++confidences[l.q->confidence];
    std::string source;
    Confidence confidence = Confidence::kUncertain;
    int best = 0;
    for (const auto& [s, n] : sources)
      if (n > best) best = n, source = s;
    best = 0;
    for (const auto& [c, n] : confidences)
      if (n > best) best = n, confidence = c;

    std::string out = header + "\n";
    if (!sources.empty()) {
      out += "source = " + toml_string(source) + "\n";
      out += "confidence = " + toml_string(to_string(confidence)) + "\n";
    }
    for (const Line& l : lines_) {
      out += l.key + " = " + l.value;
      if (!l.comment.empty()) out += "  # " + l.comment;
      out += "\n";
      if (l.q && l.q->source != source) out += l.key + "_source = " + toml_string(l.q->source) + "\n";
      if (l.q && l.q->confidence != confidence)
        out += l.key + "_confidence = " + toml_string(to_string(l.q->confidence)) + "\n";
    }
    return out;
  }

 private:
  struct Line {
    std::string key;
    std::string value;
    const Quantity* q;
    std::string comment;
  };
  std::vector<Line> lines_;
};

template <class S>
std::string write_table(const S& s, const std::string& header) {
  TableWriter w;
  visit_fields(s, w);
  return w.text(header);
}

}  // namespace

const char* to_string(Confidence c) {
  for (const auto& [k, name] : kConfidenceNames)
    if (k == c) return name;
  return "uncertain";
}

const HwMemory* HwDescription::find_memory(std::string_view name) const {
  for (const HwMemory& m : memory)
    if (m.name == name) return &m;
  return nullptr;
}

const HwMemory& HwDescription::device_memory() const {
  for (const HwMemory& m : memory)
    if (m.scope == "device") return m;
  throw std::logic_error("HwDescription: no memory of scope device");
}

HwDescription parse_hw_description(std::string_view text, const std::string& name) {
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    throw InputError(name, long(e.source().begin.line), "invalid TOML: " + std::string(e.description()));
  }

  HwDescription d;
  bool has_device = false, has_peak = false;
  for (const auto& [k, node] : root) {
    std::string key(k.str());
    if (key == "device") {
      d.device = read_table<HwDevice>(name, node, key);
      has_device = true;
    } else if (key == "peak") {
      d.peak = read_table<HwPeak>(name, node, key);
      has_peak = true;
    } else if (key == "core") {
      d.core = read_table<HwCore>(name, node, key);
    } else if (key == "memory") {
      d.memory = read_array<HwMemory>(name, node, key);
    } else if (key == "pipe") {
      d.pipes = read_array<HwPipe>(name, node, key);
    } else if (key == "link") {
      d.links = read_array<HwLink>(name, node, key);
    } else if (key == "calibration") {
      d.calibration = read_table<HwCalibration>(name, node, key);
    } else if (key == "stream") {
      d.stream = read_table<HwStream>(name, node, key);
    } else if (key == "fma_peak") {
      d.fma_peaks = read_array<HwFmaPeak>(name, node, key);
    } else if (key == "system") {
      d.system = read_table<HwSystem>(name, node, key);
    } else {
      throw InputError(name, line_of(&node),
                       key + ": unknown table (expected device, peak, core, memory, pipe, link, "
                             "calibration, stream, fma_peak or system)");
    }
  }
  if (!has_device) throw InputError(name, 0, "device: missing table [device]");
  if (!has_peak) throw InputError(name, 0, "peak: missing table [peak]");
  if (d.memory.empty()) throw InputError(name, 0, "memory: missing (at least one [[memory]] table)");
  size_t device_memory = d.memory.size();
  for (size_t i = d.memory.size(); i-- > 0;)
    if (d.memory[i].scope == "device") device_memory = i;
  if (device_memory == d.memory.size())
    throw InputError(name, 0, "memory: no [[memory]] with scope = \"device\" (DRAM or HBM)");
  if (!d.memory[device_memory].bw_read)
    throw InputError(name, 0, "memory[" + std::to_string(device_memory) +
                                  "].bw_read: missing (the bandwidth of the device memory)");
  return d;
}

HwDescription load_hw_description(const std::string& path) {
  return parse_hw_description(read_file(path, size_t(16) << 20), path);
}

std::string to_toml(const HwDescription& d, const std::string& header) {
  std::string out;
  size_t start = 0;
  while (!header.empty() && start <= header.size()) {
    size_t end = header.find('\n', start);
    if (end == std::string::npos) end = header.size();
    std::string line = header.substr(start, end - start);
    out += line.empty() ? "#\n" : "# " + line + "\n";
    start = end + 1;
  }
  if (!out.empty()) out += "\n";
  out += write_table(d.device, "[device]");
  out += "\n" + write_table(d.peak, "[peak]");
  if (d.core) out += "\n" + write_table(*d.core, "[core]");
  for (const HwMemory& m : d.memory) out += "\n" + write_table(m, "[[memory]]");
  for (const HwPipe& p : d.pipes) out += "\n" + write_table(p, "[[pipe]]");
  for (const HwLink& l : d.links) out += "\n" + write_table(l, "[[link]]");
  if (d.calibration) out += "\n" + write_table(*d.calibration, "[calibration]");
  if (d.stream) out += "\n" + write_table(*d.stream, "[stream]");
  for (const HwFmaPeak& f : d.fma_peaks) out += "\n" + write_table(f, "[[fma_peak]]");
  if (d.system) out += "\n" + write_table(*d.system, "[system]");
  return out;
}

}  // namespace trex::core
