// trex data families|gen|check: the OR-CPT corpus engine.
//
//   families  each generator family with its contract (parameters, ranges, units, modes)
//   gen       generate, solve, render, reconstruct, check, deduplicate and export a corpus
//   check     re-verify an exported corpus independently (another solver, every check again)
//   distil    a teacher model behind an OpenAI-compatible endpoint writes the formulations;
//             the solver-verified replies become SFT rows
#include <malloc.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "trex/dist/communicator.h"
#include "trex/dist/session.h"
#include "trex/ordata/config.h"
#include "trex/ordata/corpus_check.h"
#include "trex/ordata/corpus_run.h"
#include "trex/ordata/distil.h"
#include "trex/ordata/family.h"
#include "trex/lp/lp_format.h"
#include "trex/lp/structure.h"
#include "trex/ordata/story.h"
#include "trex/oreval/execute.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/zstd_file.h"

namespace trex::cli {

namespace {

using namespace trex::ordata;

struct GenArgs {
  std::string config, families, out, shard;
  long count = -1;
  long long seed = -1;
  int threads = 0;
  double near = -1;
  std::string sft_view;
  std::string program_style;
  std::vector<std::string> against;
  bool quiet = false;
  bool uncompressed = false;
  long dedup_memory_mb = long(ordata::Deduplicator::kDefaultResidentBudget >> 20);
};

// "i/n" -> (i, n).
std::pair<int, int> parse_shard(const std::string& s) {
  size_t slash = s.find('/');
  try {
    if (slash != std::string::npos) {
      size_t a = 0, b = 0;
      int i = std::stoi(s.substr(0, slash), &a), n = std::stoi(s.substr(slash + 1), &b);
      if (a == slash && b == s.size() - slash - 1 && n >= 1 && i >= 0 && i < n) return {i, n};
    }
  } catch (const std::exception&) {
  }
  throw InputError::field("--shard", "expected i/n with 0 <= i < n, got '" + s + "'");
}

// The corpus engine's two collectives over MPI (dist::Communicator): rank 0 gathers the
// candidates of every rank's block and broadcasts its verdicts.
class MpiRanks : public RankGroup {
 public:
  MpiRanks() : world_(dist::Communicator::world()) {}
  int rank() const override { return world_.rank(); }
  int size() const override { return world_.size(); }
  std::vector<std::string> gather(const std::string& mine) override { return world_.gather_bytes(mine, 0); }
  std::string broadcast(const std::string& from_rank0) override { return world_.broadcast_bytes(from_rank0, 0); }
  void barrier() override { world_.barrier("data gen"); }

 private:
  dist::Communicator world_;
};

int run_families(bool json) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const Family* f : all_families()) {
    const Contract& c = f->contract();
    nlohmann::ordered_json j;
    j["family"] = c.family;
    j["title"] = c.title;
    j["class"] = to_string(c.problem_class);
    j["version"] = c.version;
    std::vector<std::string> modes;
    for (FeasibilityMode m : c.modes) modes.push_back(to_string(m));
    j["modes"] = modes;
    j["industries"] = f->industries();
    nlohmann::ordered_json ps = nlohmann::ordered_json::array();
    for (const ParamSpec& p : c.params)
      ps.push_back({{"name", p.name},
                    {"type", p.integer ? "integer" : "real"},
                    {"role", p.role == ParamSpec::Role::kSize ? "size" : p.role == ParamSpec::Role::kDifficulty ? "difficulty" : "data"},
                    {"min", p.min},
                    {"max", p.max},
                    {"default", {p.lo, p.hi}},
                    {"unit", p.unit},
                    {"doc", p.doc}});
    j["params"] = ps;
    all.push_back(j);
  }
  if (json) {
    std::printf("%s\n", all.dump(2).c_str());
    return 0;
  }
  std::printf("%zu families (each parameter: contract range, default sampling range, unit)\n", all.size());
  for (const auto& j : all) {
    std::printf("\n%s  [%s]  %s\n", j["family"].get<std::string>().c_str(), j["class"].get<std::string>().c_str(),
                j["title"].get<std::string>().c_str());
    std::string modes, inds;
    for (const auto& m : j["modes"]) modes += (modes.empty() ? "" : ", ") + m.get<std::string>();
    for (const auto& m : j["industries"]) inds += (inds.empty() ? "" : ", ") + m.get<std::string>();
    std::printf("  modes:      %s\n  industries: %s\n", modes.c_str(), inds.c_str());
    for (const auto& p : j["params"]) {
      std::string range = "[" + num(p["min"].get<double>()) + ", " + num(p["max"].get<double>()) + "]";
      std::string def = "[" + num(p["default"][0].get<double>()) + ", " + num(p["default"][1].get<double>()) + "]";
      std::string unit = p["unit"].get<std::string>();
      std::printf("  %-12s %-7s %-16s default %-12s %s%s\n", p["name"].get<std::string>().c_str(),
                  p["type"].get<std::string>().c_str(), range.c_str(), def.c_str(),
                  p["doc"].get<std::string>().c_str(), unit.empty() ? "" : (" (" + unit + ")").c_str());
    }
  }
  return 0;
}

int run_gen(const GenArgs& a, RankGroup* ranks);

// Under mpirun (without --shard) the ranks write one corpus together, byte for byte the one a
// single process writes: rank 0 deduplicates every rank's candidates in block order.
int run_gen(const GenArgs& a) {
  if (!a.shard.empty() || !dist::Session::launched()) return run_gen(a, nullptr);
  dist::Session session;
  // A rank waits in a collective while rank 0 replays a resumed corpus into its dedup state
  // (minutes at a million samples); mpirun itself ends the job when a rank dies.
  session.set_timeout(3600);
  if (session.world() == 1) return run_gen(a, nullptr);
  MpiRanks ranks;
  // Several ranks: an error on one must end them all (the others would wait for it forever).
  try {
    return run_gen(a, &ranks);
  } catch (const std::exception& e) {
    session.abort(e.what(), dynamic_cast<const InputError*>(&e) ? kUsageExitCode : 1);
  }
}

int run_gen(const GenArgs& a, RankGroup* ranks) {
  // A corpus run allocates and frees many strings of 10 to 100 KiB per sample. Keeping freed
  // memory in the process (no trimming, no mmap for these sizes) saved page faults that cost
  // about a tenth of the run under glibc's malloc. These calls matter only when trex-full uses
  // glibc's malloc (built with TREX_TCMALLOC=OFF or without libtcmalloc_minimal): tcmalloc's
  // mallopt is a no-op, and so is ASan's (TSan's allocator does not read glibc's settings).
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  mallopt(M_TOP_PAD, 64 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (a.out.empty()) throw InputError::field("--out", "required");
  CorpusConfig cfg = a.config.empty() ? default_config() : load_config(a.config);
  if (!a.families.empty()) select_families(cfg, a.families);
  if (a.count == 0 || a.count < -1) throw InputError::field("--count", "must be >= 1");
  if (a.count > 0) cfg.count = a.count;
  if (a.seed < -1) throw InputError::field("--seed", "must be >= 0");
  if (a.seed >= 0) cfg.seed = uint64_t(a.seed);
  if (a.near >= 0) {
    if (a.near > 1) throw InputError::field("--near-threshold", "must be in [0, 1]");
    cfg.near_threshold = a.near;
  }
  if (!a.sft_view.empty()) {
    if (a.sft_view != "full" && a.sft_view != "program") throw InputError::field("--sft-view", "must be full or program");
    cfg.sft_view = a.sft_view == "program" ? CorpusConfig::kSftProgram : CorpusConfig::kSftFull;
  }
  if (!a.program_style.empty()) {
    if (a.program_style != "plain" && a.program_style != "statement-data")
      throw InputError::field("--program-style", "must be plain or statement-data");
    cfg.program_style =
        a.program_style == "statement-data" ? CorpusConfig::kProgramStatementData : CorpusConfig::kProgramPlain;
  }
  if (a.threads < 0) throw InputError::field("--threads", "must be >= 0 (0: all CPUs)");
  if (a.dedup_memory_mb < 0) throw InputError::field("--dedup-memory", "must be >= 0 (MB)");
  finalize_config(cfg);

  RunOptions o;
  o.config = cfg;
  o.out_dir = a.out;
  o.threads = a.threads;
  o.against = a.against;
  o.progress = !a.quiet;
  o.compress = !a.uncompressed;
  o.dedup_memory_bytes = uint64_t(a.dedup_memory_mb) << 20;
  if (!a.shard.empty()) std::tie(o.shard, o.shards) = parse_shard(a.shard);
  const int rank = ranks ? ranks->rank() : 0, size = ranks ? ranks->size() : 1;
  if (ranks) {
    o.ranks = ranks;
    // The CPUs shared by this machine's ranks, unless the user chose.
    if (a.threads == 0) o.threads = std::max(1, int(std::thread::hardware_concurrency()) / dist::Session::local_ranks());
  }
  RunReport r = run_corpus(o);
  if (rank != 0) {
    std::printf("trex data gen: rank %d of %d: done (rank 0 writes the manifest)\n", rank, size);
    return 0;
  }
  nlohmann::ordered_json m = r.manifest;
  // The last shard to finish merges the shards' manifests (they share the output directory);
  // while one has not finished, that one merges. Whatever fails in the merge (a shard of another
  // configuration, an unreadable manifest, a refused write) goes on to main: one line, non-zero.
  if (o.shards > 1 && shards_finished(a.out, o.shards)) {
    merge_manifests(a.out, o.shards);
    std::printf("trex data gen: every shard is done: merged manifest %s/manifest.json\n", a.out.c_str());
  }
  std::string where = m["shard"]["count"].get<int>() > 1
                          ? " (shard " + std::to_string(o.shard) + "/" + std::to_string(o.shards) + ")"
                          : "";
  const int threads = m["threads"].get<int>();
  std::string workers = size > 1 ? std::to_string(size) + " MPI ranks x " + std::to_string(threads / size) +
                                       " threads, deduplicated together"
                                 : std::to_string(threads) + " threads";
  std::printf("trex data gen: %ld samples in %s%s (%ld generated, %zu families, %s%s)\n", m["samples"].get<long>(),
              a.out.c_str(), where.c_str(), m["candidates"].get<long>(), m["per_family"].size(), workers.c_str(),
              r.blocks_resumed ? (", " + std::to_string(r.blocks_resumed) + " blocks resumed").c_str() : "");
  std::printf("  throughput: %.1f verified samples/s (wall %.2f s)\n", m["samples_per_second"].get<double>(),
              m["wall_seconds"].get<double>());
  const auto& st = m["stage_seconds"];
  std::printf("  stages (thread-seconds): generate %.3f, solve %.3f, render %.3f, verify %.3f, dedup %.3f, write %.3f\n",
              st["generate"].get<double>(), st["solve"].get<double>(), st["render"].get<double>(),
              st["verify"].get<double>(), st["dedup"].get<double>(), st["write"].get<double>());
  if (m["per_reason"].empty()) std::printf("  rejected: none\n");
  for (const auto& [k, v] : m["per_reason"].items())
    std::printf("  rejected: %-22s %5ld (%.2f%% of generated)\n", k.c_str(), v["count"].get<long>(),
                100 * v["share_of_generated"].get<double>());
  std::printf("  manifest: %s\n", r.manifest_path.c_str());
  return 0;
}

// Runs the gurobipy programs of the first `limit` samples for real: /usr/bin/python3 with
// trex's gurobipy-compatible module, in the evaluation sandbox (oreval), and compares the model
// each program builds with the sample's LP. Appends an issue per program that fails or differs.
long execute_programs(const std::string& dir, long limit, CorpusCheckReport& r) {
  namespace fs = std::filesystem;
  std::vector<std::string> parts;
  for (const auto& e : fs::directory_iterator(dir + "/data"))
    if (ordata::is_corpus_part(e.path().filename().string())) parts.push_back(e.path().string());
  std::sort(parts.begin(), parts.end());
  oreval::ExecOptions opts;
  long done = 0;
  for (const std::string& part : parts) {
    std::string text = read_text_file(part);
    size_t pos = 0;
    for (long line = 1; pos < text.size() && done < limit; ++line) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) break;
      nlohmann::json j = nlohmann::json::parse(text.begin() + long(pos), text.begin() + long(nl), nullptr, false);
      pos = nl + 1;
      if (j.is_discarded() || !j.contains("formulations")) continue;  // reported by the main check
      ++done;
      oreval::Extraction code{oreval::CodeKind::kPython, j["formulations"]["gurobipy"].get<std::string>()};
      oreval::Execution e = oreval::execute(code, "", opts);
      std::string id = j.value("id", "");
      if (e.status != oreval::ExecStatus::kOk || !e.model) {
        r.issues.push_back({part, line, id, "disagreement",
                            std::string("the gurobipy program did not run (") + oreval::to_string(e.status) + "): " + e.message});
        continue;
      }
      lp::Model ref = lp::read_lp(j["formulations"]["lp"].get<std::string>(), part);
      std::string why;
      if (!lp::same_model(ref, *e.model, &why) && !lp::structurally_equivalent(ref, *e.model, &why))
        r.issues.push_back({part, line, id, "disagreement", "the gurobipy program builds another model: " + why});
    }
  }
  return done;
}

int run_check(const std::string& dir, const std::string& solver, int threads, int max_issues, long execute) {
  if (threads < 0) throw InputError::field("--threads", "must be >= 0 (0: all CPUs)");
  if (execute < 0) throw InputError::field("--execute", "must be >= 0");
  CorpusCheckReport r = check_corpus(dir, solver, threads);
  long executed = execute > 0 ? execute_programs(dir, execute, r) : 0;
  int shown = 0;
  for (const CheckIssue& i : r.issues) {
    if (max_issues >= 0 && shown++ >= max_issues) break;
    std::printf("%s:%ld: %s%s%s: %s\n", i.file.c_str(), i.line, i.kind.c_str(), i.id.empty() ? "" : " ",
                i.id.c_str(), i.message.c_str());
  }
  long corrupt = 0, disagree = 0, dup = 0;
  for (const CheckIssue& i : r.issues) {
    if (i.kind == "corrupt" || i.kind == "truncated") ++corrupt;
    else if (i.kind == "duplicate") ++dup;
    else ++disagree;
  }
  std::printf("trex data check: %ld samples in %ld parts re-verified with %s in %.2f s: %ld disagreements, %ld "
              "duplicates, %ld corrupt or truncated lines\n",
              r.samples, r.parts, r.solver.c_str(), r.seconds, disagree, dup, corrupt);
  if (executed > 0)
    std::printf("  executed %ld gurobipy programs with /usr/bin/python3 and trex's gurobipy module (included above)\n",
                executed);
  return r.issues.empty() ? 0 : 1;
}

struct DistilArgs {
  DistilOptions o;
  std::string mode = "sirl";
  long long seed = -1;
  bool quiet = false;
};

int run_distil(DistilArgs a) {
  a.o.mode = oreval::comparator_from_string(a.mode);
  if (a.seed >= 0) a.o.seed = a.seed;
  a.o.progress = !a.quiet;
  DistilReport r = distil(a.o);
  std::printf("trex data distil: %ld samples from %s, %ld accepted (%ld replies from the cache) in %.2f s\n", r.samples,
              a.o.corpus_dir.c_str(), r.accepted, r.from_cache, r.wall_seconds);
  for (const auto& [reason, n] : r.per_reason) std::printf("  rejected: %-20s %5ld\n", reason.c_str(), n);
  std::printf("  sft: %s\n  manifest: %s%s\n", r.sft_path.c_str(), r.manifest_path.c_str(),
              r.endpoint_errors ? " (endpoint errors: run again to resume)" : "");
  return r.endpoint_errors ? 1 : 0;
}

}  // namespace

void add_data_command(CLI::App& app, Action* action) {
  CLI::App* data = app.add_subcommand("data", "OR-CPT corpus: generator families, corpus generation, verification");
  data->require_subcommand(1);

  auto json = std::make_shared<bool>(false);
  CLI::App* fam = data->add_subcommand("families", "List the generator families and their parameter contracts");
  fam->add_flag("--json", *json, "Print the contracts as JSON");
  fam->callback([json, action] { *action = [json] { return run_families(*json); }; });

  auto g = std::make_shared<GenArgs>();
  CLI::App* gen = data->add_subcommand("gen", "Generate, verify, deduplicate and export a corpus");
  gen->add_option("--config", g->config, "TOML mixture (see configs/data/default.toml)");
  gen->add_option("--families", g->families, "Comma-separated families to use (default: all, or the config's)");
  gen->add_option("--count", g->count, "Samples to export (default 100, or the config's)");
  gen->add_option("--seed", g->seed, "Run seed (default 1, or the config's)");
  gen->add_option("--out", g->out, "Output directory (resumes a run found there)")->required();
  gen->add_option("--threads", g->threads, "Worker threads (default 0: all CPUs)");
  gen->add_option("--shard", g->shard, "Take shard i of n (i/n): blocks i, i+n, ..., deduplicated within the shard "
                  "(under mpirun without --shard the ranks write one corpus, deduplicated together)");
  gen->add_option("--against", g->against, "A corpus directory whose samples count as seen (repeatable)");
  gen->add_option("--sft-view", g->sft_view,
                  "SFT answer: full (model, program, result; default, or the config's) or program (the program alone)");
  gen->add_option("--program-style", g->program_style,
                  "gurobipy program: plain (every number inline; default, or the config's) or statement-data (the "
                  "statement's numbers first, named, in its order, then the formulation against the names)");
  gen->add_option("--near-threshold", g->near, "MinHash similarity at or above which text is a near duplicate (default 0.8)");
  gen->add_flag("--quiet", g->quiet, "No progress bar");
  gen->add_flag("--uncompressed", g->uncompressed, "Write plain .jsonl parts instead of zstd-compressed .jsonl.zst");
  gen->add_option("--dedup-memory", g->dedup_memory_mb,
                  "MB of memory for the dedup indexes (default 704), a cache over their files on disk: "
                  "less memory, more reads. Never changes the corpus");
  gen->callback([g, action] { *action = [g] { return run_gen(*g); }; });

  auto dir = std::make_shared<std::string>();
  auto solver = std::make_shared<std::string>("glpk");
  auto threads = std::make_shared<int>(0);
  auto max_issues = std::make_shared<int>(50);
  auto execute = std::make_shared<long>(0);
  CLI::App* chk = data->add_subcommand("check", "Re-verify an exported corpus with another solver; report each disagreement");
  chk->add_option("dir", *dir, "Corpus directory (written by trex data gen)")->required();
  chk->add_option("--solver", *solver, "Back end for the re-solve (default glpk; the corpus was solved with cbc)");
  chk->add_option("--threads", *threads, "Worker threads (default 0: all CPUs)");
  chk->add_option("--max-issues", *max_issues, "Issues to print (default 50; -1: all)");
  chk->add_option("--execute", *execute,
                  "Also run the gurobipy programs of the first N samples (python3 with trex's gurobipy module, "
                  "sandboxed) and compare the model each builds with the LP (default 0)");
  chk->footer("Exit status: 0 when every sample agrees, 1 when any issue was found, 2 for usage errors.");
  chk->callback([=] { *action = [=] { return run_check(*dir, *solver, *threads, *max_issues, *execute); }; });

  auto d = std::make_shared<DistilArgs>();
  CLI::App* dis = data->add_subcommand(
      "distil", "Ask an OpenAI-compatible endpoint to formulate a corpus's statements; keep the solver-verified replies");
  dis->add_option("corpus", d->o.corpus_dir, "Corpus directory (written by trex data gen)")->required();
  dis->add_option("--endpoint", d->o.chat.base_url, "Base URL, e.g. http://127.0.0.1:8000/v1")->required();
  dis->add_option("--model", d->o.chat.model, "Model name sent to the endpoint")->required();
  dis->add_option("--out", d->o.out_dir, "Output folder: sft.jsonl, manifest.json, cache/ (resumes from its cache)")->required();
  dis->add_option("--template", d->o.template_file, "Prompt template (default configs/eval/distil.txt)");
  dis->add_option("--api-key-env", d->o.chat.api_key_env, "Environment variable holding the API key")->capture_default_str();
  dis->add_option("--limit", d->o.limit, "Only the first N samples (default 0: all)");
  dis->add_option("--temperature", d->o.temperature)->capture_default_str();
  dis->add_option("--top-p", d->o.top_p)->capture_default_str();
  dis->add_option("--max-tokens", d->o.max_tokens)->capture_default_str();
  dis->add_option("--seed", d->seed, "Sampling seed sent with every request");
  dis->add_option("--concurrency", d->o.chat.concurrency, "Requests in flight")->capture_default_str();
  dis->add_option("--retries", d->o.chat.max_retries, "Retries per request (transport errors, 408, 429, 5xx, garbage)")
      ->capture_default_str();
  dis->add_option("--backoff", d->o.chat.backoff_s, "First retry delay in seconds, doubled each time")->capture_default_str();
  dis->add_option("--request-timeout", d->o.chat.timeout_s, "Seconds per request")->capture_default_str();
  dis->add_option("--jobs", d->o.jobs, "Sandboxed executions at once")->capture_default_str();
  dis->add_option("--mode", d->mode, "Objective comparator: absolute, orlm, sirl, resocratic")->capture_default_str();
  dis->add_option("--solver", d->o.solver, "Back end that solves each reply's model")->capture_default_str();
  dis->add_flag("--quiet", d->quiet, "No progress bar");
  dis->footer("Exit status: 0 when every sample got a reply (accepted or rejected), 1 when some endpoint requests "
              "failed after their retries (run again to resume), 2 for usage errors.");
  dis->callback([d, action] { *action = [d] { return run_distil(*d); }; });
}

namespace {
const CommandRegistration kDataRegistration(30, add_data_command);
}  // namespace

}  // namespace trex::cli
