// The recipe loader and stage runner; the format and the caching rule are in recipe.h.
#include "trex/recipe/recipe.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "toml++/toml.h"
#include "trex/ordata/corpus_reader.h"
#include "trex/oreval/benchmark.h"
#include "trex/recipe/copy_docs.h"
#include "trex/recipe/local_server.h"
#include "trex/util/atomic_file.h"
#include "trex/util/data_dir.h"
#include "trex/util/error.h"
#include "trex/util/subprocess.h"

namespace trex::recipe {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string hash_hex(const std::string& s) {
  const size_t a = std::hash<std::string>{}(s), b = std::hash<std::string>{}("trex-recipe\n" + s);
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016zx%016zx", a, b);
  return buf;
}

// The contents of a file, or of every file under a folder (names and bytes, in name order).
std::string content_of(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return read_file(path);
  if (!fs::is_directory(path, ec)) throw InputError(path, 0, "recipe input not found");
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(path))
    if (e.is_regular_file()) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const std::string& f : files) all += f.substr(path.size()) + "\n" + hash_hex(read_file(f)) + "\n";
  return all;
}

std::string fill(std::string s, const Recipe& r, const std::string& out) {
  const std::pair<std::string, std::string> keys[] = {{"{out}", out}, {"{recipe}", r.dir}, {"{configs}", r.configs_dir}};
  for (const auto& [k, v] : keys)
    for (size_t at; (at = s.find(k)) != std::string::npos;) s.replace(at, k.size(), v);
  return s;
}

// The last non-empty line of a command's output, for error messages.
std::string last_line(const ProcessResult& p) {
  std::string text = p.err.empty() ? p.out : p.err;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

ProcessResult trex(const RunOptions& o, const std::string& stage, std::vector<std::string> args) {
  args.insert(args.begin(), o.trex);
  ProcessResult p = run_process(args);
  if (p.exit_code != 0 || p.signaled)
    throw InputError::field("stage " + stage, "`trex " + args[1] + "` failed (exit " + std::to_string(p.exit_code) +
                                                  "): " + last_line(p));
  return p;
}

// A corpus as a benchmark file: id, question (the statement), answer (objective or status).
void write_benchmark(const std::string& corpus, long limit, const std::string& file) {
  std::string out;
  for (const ordata::CorpusSample& s : ordata::read_corpus_samples(corpus, limit)) {
    json row = {{"id", s.id}, {"question", s.statement}};
    row["answer"] = s.objective ? json(*s.objective) : json(s.status);
    out += row.dump() + "\n";
  }
  write_file_atomic(file, out);
}

json run_serve_stage(const Stage& s, const Recipe& r, const RunOptions& o) {
  const std::string dir = o.out_dir + "/" + s.name;
  const std::string bench = fill(s.bench, r, o.out_dir);
  std::vector<std::string> extra = {"--ckpt", fill(s.path, r, o.out_dir)};
  if (s.context > 0) extra.insert(extra.end(), {"--context", std::to_string(s.context)});
  {
    LocalServer server(o.trex, "recipe", extra, "stage " + s.name);
    std::vector<std::string> gen = {"eval", "gen", "--bench", bench, "--id-field", "id", "--endpoint", server.url() + "/v1",
                                    "--model", "recipe", "--out", dir + "/gen", "--max-tokens",
                                    std::to_string(s.max_tokens), "--temperature", "0", "--request-timeout", "3600",
                                    "--quiet"};
    if (s.limit > 0) gen.insert(gen.end(), {"--limit", std::to_string(s.limit)});
    if (!s.prompt_template.empty()) gen.insert(gen.end(), {"--template", fill(s.prompt_template, r, o.out_dir)});
    trex(o, s.name, gen);
  }
  std::vector<std::string> run = {"eval", "run", "--bench", bench, "--id-field", "id", "--completions",
                                  dir + "/gen/completions.jsonl", "--out", dir + "/run", "--quiet"};
  if (s.limit > 0) run.insert(run.end(), {"--limit", std::to_string(s.limit)});
  trex(o, s.name, run);
  const json summary = json::parse(read_file(dir + "/run/summary.json"));
  const json& b = summary.at("benchmarks").at(0);
  const long items = b.at("items").get<long>();
  const double p = b.at("pass_at_1").get<double>();
  return {{"items", items}, {"correct", long(p * double(items) + 0.5)}, {"pass_at_1", p}, {"bench", bench}};
}

// The public benchmark (nl4opt, ...; oreval/benchmark.h) a serve stage's bench names, or nullptr
// for a benchmark file.
const oreval::NamedBenchmark* named_benchmark(const std::string& bench) {
  for (const oreval::NamedBenchmark& b : oreval::named_benchmarks())
    if (bench == b.name) return &b;
  return nullptr;
}

}  // namespace

Recipe load_recipe(const std::string& path) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw InputError(path, long(e.source().begin.line), std::string(e.description()));
  }
  Recipe r;
  r.file = path;
  r.dir = fs::absolute(fs::path(path)).parent_path().string();
  r.configs_dir = fs::path(r.dir).parent_path().string();
  r.name = root["recipe"]["name"].value_or(fs::path(path).stem().string());
  const toml::array* stages = root["stage"].as_array();
  if (!stages || stages->empty()) throw InputError(path, 0, "no [[stage]] tables");
  for (const toml::node& n : *stages) {
    const toml::table* t = n.as_table();
    const long line = long(n.source().begin.line);
    if (!t) throw InputError(path, line, "stage: not a table");
    Stage s;
    s.name = (*t)["name"].value_or(std::string());
    if (s.name.empty() || s.name.find_first_of("/ ") != std::string::npos)
      throw InputError(path, line, "stage.name: required, without '/' or spaces");
    for (const Stage& other : r.stages)
      if (other.name == s.name) throw InputError(path, line, "stage.name: '" + s.name + "' used twice");
    int kinds = 0;
    if (const toml::array* a = (*t)["run"].as_array()) {
      s.kind = "run", ++kinds;
      for (const toml::node& x : *a) s.args.push_back(x.value_or(std::string()));
    }
    if (auto v = (*t)["train"].value<std::string>()) s.kind = "train", s.path = *v, ++kinds;
    if (auto v = (*t)["benchmark"].value<std::string>()) s.kind = "benchmark", s.path = *v, ++kinds;
    if (auto v = (*t)["serve"].value<std::string>()) {
      s.kind = "serve", s.path = *v, ++kinds;
      s.bench = (*t)["bench"].value_or(std::string());
      if (s.bench.empty()) throw InputError(path, line, "stage " + s.name + ".bench: required with serve");
    }
    if (auto v = (*t)["copy_docs"].value<int64_t>()) {
      s.kind = "copy_docs", s.count = long(*v), ++kinds;
      if (s.count < 1) throw InputError(path, line, "stage " + s.name + ".copy_docs: must be >= 1");
      s.seed = uint64_t((*t)["seed"].value_or(int64_t(1)));
      s.style = (*t)["style"].value_or(std::string("mixed"));
      if (!copy_style_named(s.style))
        throw InputError(path, line, "stage " + s.name + ".style: '" + s.style + "' is not mixed, in-order, keyed or keyed-in-order");
    }
    if (kinds != 1)
      throw InputError(path, line, "stage " + s.name + ": give exactly one of run, train, benchmark, serve, copy_docs");
    if (const toml::array* a = (*t)["inputs"].as_array())
      for (const toml::node& x : *a) s.inputs.push_back(x.value_or(std::string()));
    s.max_tokens = int((*t)["max_tokens"].value_or(int64_t(256)));
    s.context = int((*t)["context"].value_or(int64_t(0)));
    s.limit = long((*t)["limit"].value_or(int64_t(0)));
    s.label = (*t)["label"].value_or(s.name);
    s.prompt_template = (*t)["template"].value_or(std::string());
    if (!s.prompt_template.empty() && s.kind != "serve")
      throw InputError(path, line, "stage " + s.name + ".template: only with serve");
    // Checked now, not when the stage's turn comes after hours of earlier stages. A template
    // under {out} is an earlier stage's output: run_recipe checks it when its stage starts.
    if (!s.prompt_template.empty() && s.prompt_template.find("{out}") == std::string::npos) {
      const std::string filled = fill(s.prompt_template, r, "");
      std::error_code ec;
      if (!fs::is_regular_file(filled, ec))
        throw InputError(path, line, "stage " + s.name + ".template: " + filled + " not found");
    }
    if (s.max_tokens < 1) throw InputError(path, line, "stage " + s.name + ".max_tokens: must be >= 1");
    std::ostringstream text;
    text << *t;
    s.table = text.str();
    r.stages.push_back(std::move(s));
  }
  return r;
}

std::vector<StageResult> run_recipe(const Recipe& r, const RunOptions& o) {
  fs::create_directories(o.out_dir + "/stages");
  std::vector<StageResult> results;
  std::string previous = "trex recipe 1\n";
  auto log = [&](const std::string& line) {
    if (o.log) o.log(line);
  };
  for (const Stage& s : r.stages) {
    // The key: the stage as written, its inputs' contents, the chain before it (and a copy_docs
    // stage's generator version).
    std::string material = previous + s.table.get<std::string>() + "\n";
    if (s.kind == "copy_docs") material += std::string(kCopyDocsVersion) + "\n";  // its code
    std::vector<std::string> inputs;
    for (const std::string& in : s.inputs) inputs.push_back(fill(in, r, o.out_dir));
    if (s.kind == "train") inputs.push_back(fill(s.path, r, o.out_dir));
    if (!s.prompt_template.empty()) {
      const std::string filled = fill(s.prompt_template, r, o.out_dir);
      std::error_code ec;
      if (!fs::is_regular_file(filled, ec))
        throw InputError::field("stage " + s.name + ".template", filled + " not found");
      inputs.push_back(filled);
    }
    if (s.kind == "serve")
      if (const oreval::NamedBenchmark* named = named_benchmark(s.bench)) {
        // A public benchmark is read in place from the data folder; where it is absent the
        // stage is skipped with the reason (and not recorded, so it runs once the data is there).
        const std::string data = find_data(named->path);
        if (data.empty()) {
          StageResult res;
          res.name = s.name;
          res.kind = s.kind;
          res.skipped = "benchmark " + s.bench + " not found: " + data_dir() + "/" + named->path +
                        " is absent (set " + kDataDirEnv + " to the folder that holds or-benchmarks/)";
          res.details = {{"label", s.label}, {"bench", s.bench}};
          log("stage " + s.name + ": skipped (" + res.skipped + ")");
          results.push_back(res);
          continue;
        }
        inputs.push_back(data);  // a changed data file re-runs the stage
      }
    for (const std::string& in : inputs) material += in + "\n" + hash_hex(content_of(in)) + "\n";
    StageResult res;
    res.name = s.name;
    res.kind = s.kind;
    res.key = hash_hex(material);
    previous = res.key;
    const std::string record = o.out_dir + "/stages/" + s.name + ".json";
    std::error_code ec;
    if (fs::exists(record, ec)) {
      json old = json::parse(read_file(record), nullptr, false);
      if (!old.is_discarded() && old.value("key", "") == res.key) {
        res.cached = true;
        res.seconds = old.value("seconds", 0.0);
        res.details = old.value("details", json::object());
        log("stage " + s.name + ": cached (key " + res.key.substr(0, 12) + ")");
        results.push_back(res);
        continue;
      }
      fs::remove(record, ec);
    }
    log("stage " + s.name + ": running (" + s.kind + ")");
    const auto t0 = std::chrono::steady_clock::now();
    const std::string stage_dir = o.out_dir + "/" + s.name;
    if (s.kind == "run") {
      std::vector<std::string> args;
      for (const std::string& a : s.args) args.push_back(fill(a, r, o.out_dir));
      trex(o, s.name, args);
    } else if (s.kind == "train") {
      // A stale run folder would be resumed by trex train: a changed input starts afresh.
      fs::remove_all(stage_dir, ec);
      fs::create_directories(o.out_dir + "/configs");
      const std::string config = o.out_dir + "/configs/" + s.name + ".toml";
      write_file_atomic(config, fill(read_file(fill(s.path, r, o.out_dir)), r, o.out_dir));
      trex(o, s.name, {"train", "--config", config, "--out", stage_dir});
      res.details = {{"run", stage_dir}};
    } else if (s.kind == "copy_docs") {
      fs::remove_all(stage_dir, ec);
      fs::create_directories(stage_dir);
      write_copy_documents(stage_dir + "/copy.jsonl", s.count, s.seed, *copy_style_named(s.style));
    } else if (s.kind == "benchmark") {
      write_benchmark(fill(s.path, r, o.out_dir), s.limit, o.out_dir + "/" + s.name + ".jsonl");
    } else {
      fs::remove_all(stage_dir, ec);
      res.details = run_serve_stage(s, r, o);
      res.details["label"] = s.label;
    }
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_file_atomic(record, json({{"key", res.key}, {"kind", s.kind}, {"seconds", res.seconds}, {"details", res.details}})
                                      .dump(2) + "\n");
    char took[64];
    std::snprintf(took, sizeof took, "%.1f s", res.seconds);
    log("stage " + s.name + ": done in " + took);
    results.push_back(res);
  }
  return results;
}

}  // namespace trex::recipe
