#include "trex/train/config.h"

#include <cstdio>
#include <utility>

#include "trex/model/toml_fields.h"
#include "trex/optim/swap_optimizer.h"
#include "trex/util/error.h"

namespace trex::train {

using model::TomlFields;

const char* to_string(TrainMode m) { return m == TrainMode::kSft ? "sft" : "cpt"; }

namespace {

std::string megabytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g MB", bytes / 1e6);
  return buf;
}

// [optimizer] swap_memory_mb: the swap optimizer's resident budget, swap_slots chunks of 12 B per
// element. With swap_chunk given, the K chunks must fit in it; without, the chunk is the largest
// that fits. A budget that cannot hold them is refused here, before any file is made, naming the
// field (the chunk actually used is never larger: the trainer only shrinks it to the shard).
void fit_swap_memory(TomlFields& opt, TrainConfig& c) {
  const double mb = opt.number("swap_memory_mb", 0, 1e9);
  const size_t budget = size_t(mb * 1e6);
  const std::string slots = "swap_slots = " + std::to_string(c.swap_slots);
  if (opt.has("swap_chunk")) {
    const double need = double(c.swap_slots) * 12.0 * double(c.swap_chunk);
    if (need > double(budget))
      opt.fail("swap_memory_mb", megabytes(double(budget)) + " cannot hold " + slots + " chunks of swap_chunk = " +
                                     std::to_string(c.swap_chunk) + " elements (" + megabytes(need) +
                                     "); raise it or lower swap_chunk or swap_slots");
    return;
  }
  c.swap_chunk = optim::SwapOptimizer::chunk_elems_for_budget(budget, c.swap_slots);
  if (c.swap_chunk == 0)
    opt.fail("swap_memory_mb", megabytes(double(budget)) + " cannot hold " + slots +
                                   " chunks of the smallest size, 1024 elements (" +
                                   megabytes(double(c.swap_slots) * 12.0 * 1024) + ")");
}

// [[data]] (or [[tokenizer.data]]) tables as sources; section names them in errors.
std::vector<SourceSpec> sources(const std::string& path, const std::vector<const toml::table*>& tables,
                                const std::string& section, TrainMode mode) {
  std::vector<SourceSpec> out;
  for (size_t i = 0; i < tables.size(); ++i) {
    std::string name = section + "[" + std::to_string(i) + "]";
    TomlFields d(path, *tables[i], name);
    SourceSpec s;
    s.name = d.text_or("name", name);
    std::string kind = d.choice("kind", {"text", "cpt", "sft"});
    s.kind = kind == "text" ? SourceKind::kText : kind == "cpt" ? SourceKind::kCpt : SourceKind::kSft;
    std::string p = d.text("path");
    // A glob or a path: relative ones are beside the config, like the model file.
    s.path = model::resolve_beside(path, p);
    s.weight = d.number_or("weight", 1.0, 1e-9, 1e9);
    s.count_all = s.kind == SourceKind::kSft && mode == TrainMode::kCpt;
    s.field = s.name == name ? name : name + " (" + s.name + ")";
    d.finish();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

TrainConfig load_train_config(const std::string& path) {
  TrainConfig c = load_train_config_without_model(path);
  set_train_model(c, model::load_model_config(c.model_file));
  return c;
}

TrainConfig load_train_config_without_model(const std::string& path) {
  toml::table root = TomlFields::parse_file(path);
  TrainConfig c;
  c.file = path;
  TomlFields top(path, root, "");

  const toml::table* run_t = top.table("run");
  if (run_t == nullptr) top.fail("run", "missing table [run]");
  TomlFields run(path, *run_t, "run");
  c.model_file = model::resolve_beside(path, run.text("model"));
  c.mode = run.choice_or("mode", "cpt", {"cpt", "sft"}) == "sft" ? TrainMode::kSft : TrainMode::kCpt;
  c.seed = uint64_t(run.integer_or("seed", 1, 0));
  c.seq = run.integer("seq", 2);
  c.rows = run.integer_or("rows", 4, 1);
  c.micro_batches = run.integer_or("micro_batches", 1, 1);
  c.packing = run.choice_or("packing", "cut", {"cut", "whole", "first-fit"});
  c.steps = run.integer("steps", 1);
  c.mtp = run.boolean_or("mtp", true);
  c.activations = run.choice_or("activations", "fp32", {"fp32", "bf16"});
  c.log_every = run.integer_or("log_every", 10, 0);
  if (run.has("init_from")) c.init_from = model::resolve_beside(path, run.text("init_from"));
  run.finish();

  if (const toml::table* t = top.table("tokenizer")) {
    TomlFields tk(path, *t, "tokenizer");
    c.tokenizer.model_type = tk.choice_or("model_type", "bpe", {"bpe", "unigram"});
    c.tokenizer.split_digits = tk.boolean_or("split_digits", true);
    c.tokenizer.number_pieces = int(tk.integer_or("number_pieces", 0, 0));
    if (c.tokenizer.number_pieces > 0 && !c.tokenizer.split_digits)
      tk.fail("number_pieces", "needs split_digits = true (a number that is not a piece is one token a digit)");
    c.tokenizer.number_digits = int(tk.integer_or("number_digits", c.tokenizer.number_digits, 2));
    if (c.tokenizer.number_digits > 9) tk.fail("number_digits", "must be 2..9, got " + std::to_string(c.tokenizer.number_digits));
    c.tokenizer.number_slots = int(tk.integer_or("number_slots", 0, 0));
    if (c.tokenizer.number_slots > 9999) tk.fail("number_slots", "must be 0..9999, got " + std::to_string(c.tokenizer.number_slots));
    // A tokenizer taken as is (init_from's, or a file) has the slots it was trained with: the
    // field would be ignored, and a run meant to have slots would silently have none (or another
    // count), so the pair is refused like file with [[tokenizer.data]].
    if (tk.has("number_slots") && (!c.init_from.empty() || tk.has("file")))
      tk.fail("number_slots", std::string("cannot be given with ") + (c.init_from.empty() ? "tokenizer.file" : "run.init_from") +
                                  " (that tokenizer is used as is, with the slots it was trained with); drop it");
    c.tokenizer_sample_bytes = tk.integer_or("sample_bytes", c.tokenizer_sample_bytes, 1024);
    c.tokenizer.max_sentences = int(tk.integer_or("max_sentences", c.tokenizer.max_sentences, 100));
    if (tk.has("file")) c.tokenizer_file = model::resolve_beside(path, tk.text("file"));
    c.tokenizer_data = sources(path, tk.tables("data"), "tokenizer.data", c.mode);
    // A given file is the tokenizer: nothing would be trained on [[tokenizer.data]], so refuse
    // the pair rather than ignore the sources.
    if (!c.tokenizer_file.empty() && !c.tokenizer_data.empty())
      tk.fail("file", "cannot be given with [[tokenizer.data]] (the file is used as is, nothing is trained "
                      "on tokenizer.data); drop one of them");
    tk.finish();
  }

  const toml::table* opt_t = top.table("optimizer");
  if (opt_t == nullptr) top.fail("optimizer", "missing table [optimizer]");
  TomlFields opt(path, *opt_t, "optimizer");
  c.optimizer = opt.choice_or("kind", "adamw", {"adamw", "swap"});
  c.schedule.kind = opt.choice_or("schedule", "cosine", {"cosine", "constant"});
  c.schedule.peak_lr = opt.number("lr", 0, 10);
  c.schedule.min_lr = opt.number_or("min_lr", c.schedule.peak_lr * 0.1, 0, c.schedule.peak_lr);
  c.schedule.warmup = opt.integer_or("warmup", 0, 0);
  c.weight_decay = opt.number_or("weight_decay", c.weight_decay, 0, 10);
  c.beta1 = opt.number_or("beta1", c.beta1, 0, 0.999999);
  c.beta2 = opt.number_or("beta2", c.beta2, 0, 0.999999);
  c.eps = opt.number_or("eps", c.eps, 1e-30, 1);
  c.clip_norm = opt.number_or("clip_norm", c.clip_norm, 0, 1e30);
  c.clip_with = opt.choice_or("clip_with", c.clip_with, {"current", "previous"});
  if (opt.has("swap_dir")) c.swap_dir = model::resolve_beside(path, opt.text("swap_dir"));
  c.swap_chunk = opt.integer_or("swap_chunk", c.swap_chunk, 1);
  c.swap_slots = int(opt.integer_or("swap_slots", c.swap_slots, 2));
  if (opt.has("swap_memory_mb")) fit_swap_memory(opt, c);
  c.swap_direct = opt.boolean_or("swap_direct", c.swap_direct);
  c.swap_overlap = opt.boolean_or("swap_overlap", c.swap_overlap);
  opt.finish();

  if (const toml::table* t = top.table("checkpoint")) {
    TomlFields ck(path, *t, "checkpoint");
    c.checkpoint_every = ck.integer_or("every", c.checkpoint_every, 0);
    c.keep_last = ck.integer_or("keep_last", c.keep_last, 1);
    ck.finish();
  }
  if (const toml::table* t = top.table("guard")) {
    TomlFields g(path, *t, "guard");
    c.nan_limit = g.integer_or("nan_limit", c.nan_limit, 1);
    if (g.has("nan_at_step")) c.nan_at_step = g.integers("nan_at_step", 1);
    g.finish();
  }

  if (const toml::table* t = top.table("parallel")) {
    TomlFields pl(path, *t, "parallel");
    c.dp = int(pl.integer_or("dp", 0, 1));
    c.ep = int(pl.integer_or("ep", 0, 1));
    c.etp = int(pl.integer_or("etp", 0, 1));
    c.dist_timeout_s = pl.number_or("timeout_s", 0, 1, 1e9);
    if (pl.has("debug_stall")) {
      std::vector<long> v = pl.integers("debug_stall", 0);
      if (v.size() != 2) pl.fail("debug_stall", "must be [rank, step]");
      c.dist_stall_rank = v[0];
      c.dist_stall_step = v[1];
    }
    if (pl.has("debug_die")) {
      std::vector<long> v = pl.integers("debug_die", 0);
      if (v.size() != 2) pl.fail("debug_die", "must be [rank, step]");
      c.dist_die_rank = v[0];
      c.dist_die_step = v[1];
    }
    pl.finish();
  }

  std::vector<const toml::table*> data = top.tables("data");
  if (data.empty()) top.fail("data", "no [[data]] source");
  c.data = sources(path, data, "data", c.mode);
  top.finish();

  c.tokenizer.seed = uint32_t(c.seed);
  c.schedule.total = c.steps;
  return c;
}

void set_train_model(TrainConfig& c, model::ModelConfig m) {
  c.model = std::move(m);
  c.tokenizer.vocab = c.model.vocab;
  if (c.model.attention.kind != model::AttentionKind::kV4)
    throw InputError(c.file, 0, "run.model: " + c.model_file + " is not a V4 model (the trainer trains V4 models)");
}

}  // namespace trex::train
