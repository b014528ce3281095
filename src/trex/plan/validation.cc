#include "trex/plan/validation.h"

#include <algorithm>
#include <filesystem>

#include "trex/model/toml_fields.h"
#include "trex/plan/strategy_toml.h"
#include "trex/util/error.h"

namespace trex::plan {

using model::TomlFields;

ValidationCase load_validation_case(const std::string& path) {
  toml::table root = TomlFields::parse_file(path);
  TomlFields top(path, root, "");
  ValidationCase v;
  v.file = path;
  const toml::table* vt = top.table("validation");
  if (vt == nullptr) throw InputError(path, 0, "validation: missing table [validation]");
  std::string model_file, cluster_file;
  long nodes = 0;
  {
    TomlFields f(path, *vt, "validation");
    v.name = f.text("name");
    v.source = f.text("source");
    v.notes = f.text_or("notes", "");
    model_file = f.text_or("model", "");
    cluster_file = model::resolve_beside(path, f.text("cluster"));
    nodes = f.integer_or("nodes", 0, 0);
    v.convention = model::parse_convention(f.text_or("convention", "megatron"), "validation.convention");
    v.reported_mfu = f.number_or("reported_mfu", 0, 0, 1);
    double tflops = f.number_or("reported_tflops_per_device", 0, 0, 1e5);
    v.reported_tokens_per_s_device = f.number_or("reported_tokens_per_s_per_device", 0, 0, 1e9);
    if ((v.reported_mfu > 0) + (tflops > 0) + (v.reported_tokens_per_s_device > 0) != 1)
      f.fail("reported_mfu", "give exactly one of reported_mfu, reported_tflops_per_device, reported_tokens_per_s_per_device");
    f.allow({"url"});
    f.finish();
    v.cluster = load_cluster(cluster_file);
    if (nodes > 0) set_nodes(v.cluster, nodes);
    if (tflops > 0) v.reported_mfu = tflops * 1e12 / v.cluster.peak_flops;
  }
  v.model = model_file.empty() ? model::load_model_tables(path) : model::load_model_config(model::resolve_beside(path, model_file));
  top.allow({"model", "attention", "ffn", "indexer", "mhc"});
  const toml::table* rt = top.table("run");
  const toml::table* st = top.table("strategy");
  if (rt == nullptr) throw InputError(path, 0, "run: missing table [run]");
  if (st == nullptr) throw InputError(path, 0, "strategy: missing table [strategy]");
  v.run = read_run(*rt, path);
  v.strategy = read_strategy(*st, path);
  top.finish();
  return v;
}

std::vector<ValidationCase> load_validation_dir(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".toml") files.push_back(e.path().string());
  if (ec) throw InputError(dir, 0, "cannot read the directory: " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<ValidationCase> cases;
  for (const std::string& f : files) cases.push_back(load_validation_case(f));
  return cases;
}

ValidationResult evaluate(const ValidationCase& c) {
  ValidationResult r;
  r.c = c;
  r.prediction = predict(c.model, c.cluster, c.run, c.strategy);
  if (c.reported_mfu > 0) {
    r.mfu = true;
    r.reported = c.reported_mfu;
    r.predicted = r.prediction.mfu_of(c.convention);
  } else {
    r.mfu = false;
    r.reported = c.reported_tokens_per_s_device;
    r.predicted = r.prediction.tokens_per_s / double(c.cluster.devices());
  }
  r.error = r.predicted / r.reported - 1;
  return r;
}

}  // namespace trex::plan
