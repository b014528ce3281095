#include "trex/ordata/corpus_run.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <future>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "trex/core/thread_pool.h"
#include "trex/lp/lp_format.h"
#include "trex/ordata/block_admission.h"
#include "trex/ordata/builder.h"
#include "trex/ordata/dedup.h"
#include "trex/ordata/export.h"
#include "trex/ordata/ordered_worker.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/progress.h"
#include "trex/util/zstd_file.h"
#include "xxhash.h"

namespace fs = std::filesystem;

namespace trex::ordata {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// zstd level 1: about 8x smaller parts. Level 3 saved 8% of the disk (3.98 against 4.32 KB
// per sample) for 5% more CPU per candidate, on the finisher that runs beside the builders.
constexpr int kZstdLevel = 1;

// Built blocks that may wait for the finisher's ordered pass (run_corpus).
constexpr size_t kBlocksAhead = 2;

std::string part_name(const char* dir, int block, bool compressed) {
  char b[64];
  std::snprintf(b, sizeof b, "%s/part-%05d.jsonl%s", dir, block, compressed ? kZstdSuffix : "");
  return b;
}

std::string block_name(int block) {
  char b[64];
  std::snprintf(b, sizeof b, "blocks/block-%05d.json", block);
  return b;
}

nlohmann::ordered_json times_json(const StageTimes& t) {
  return {{"generate", t.generate}, {"solve", t.solve}, {"render", t.render},
          {"verify", t.verify},     {"dedup", t.dedup}, {"write", t.write}};
}

StageTimes times_from(const nlohmann::ordered_json& j) {
  StageTimes t;
  t.generate = j.value("generate", 0.0), t.solve = j.value("solve", 0.0), t.render = j.value("render", 0.0);
  t.verify = j.value("verify", 0.0), t.dedup = j.value("dedup", 0.0), t.write = j.value("write", 0.0);
  return t;
}

// Feeds every sample of a corpus's data parts to the deduplicator, in file order.
// Returns the number of samples read.
long admit_corpus(const std::string& dir, const std::vector<std::string>& parts, Deduplicator& dedup) {
  long n = 0;
  for (const std::string& part : parts) {
    std::string path = dir + "/" + part;
    std::string text = read_text_file(path);  // plain or .zst alike
    size_t pos = 0;
    long line = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) throw InputError(path, line + 1, "truncated line (no newline at the end)");
      ++line;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(text.begin() + long(pos), text.begin() + long(nl));
        lp::Model m = lp::read_lp(j.at("formulations").at("lp").get<std::string>(), path);
        dedup.admit(j.at("id").get<std::string>(), j.at("statement").get<std::string>(), m, nullptr);
      } catch (const nlohmann::json::exception& e) {
        throw InputError(path, line, std::string("not a sample: ") + e.what());
      }
      ++n;
      pos = nl + 1;
    }
  }
  return n;
}

std::vector<std::string> data_parts(const std::string& dir) {
  std::vector<std::string> parts;
  std::error_code ec;
  if (!fs::is_directory(dir + "/data", ec)) throw InputError(dir, 0, "not a corpus directory (no data/ folder)");
  for (const auto& e : fs::directory_iterator(dir + "/data")) {
    std::string name = e.path().filename().string();
    if (is_corpus_part(name)) parts.push_back("data/" + name);
  }
  std::sort(parts.begin(), parts.end());
  return parts;
}

// A model's skeleton: its family, variable counts by type, row count and nonzeros. Samples
// with one skeleton differ only in their data; the manifest counts distinct skeletons.
uint64_t skeleton(const std::string& family, const lp::Model& m) {
  uint64_t v[5] = {0, 0, 0, uint64_t(m.num_rows()), 0};
  for (const lp::Variable& x : m.vars()) ++v[x.type == lp::VarType::kBinary ? 2 : x.type == lp::VarType::kInteger ? 1 : 0];
  for (const lp::Constraint& r : m.rows()) v[4] += r.terms.size();
  return XXH3_64bits_withSeed(v, sizeof v, XXH3_64bits(family.data(), family.size()));
}

// Candidates of one family and feasibility mode with none exported: after this many the run
// stops (check_progress). In the default mixture every family exports 98.5% or more of its
// candidates (100k samples), so 100 rejections in a row by chance do not happen; a parameter
// range that admits no instance of the mode (or only duplicates) gave a run that never ended,
// writing empty blocks.
constexpr long kNoneExportedLimit = 100;

// One family and mode's candidates: generated, exported and rejected by reason.
struct ModeCounts {
  long generated = 0, exported = 0;
  std::map<std::string, long> rejected;
};

// By "family mode", e.g. "transportation infeasible".
using ModeTotals = std::map<std::string, ModeCounts>;

struct Totals {
  std::map<std::string, long> generated, accepted, rejected, near_by_family;
  std::unordered_set<uint64_t> skeletons;
  std::map<std::string, std::vector<nlohmann::ordered_json>> examples;  // a few per reason
  StageTimes times;
  double wall = 0;
  long candidates = 0, exported = 0;
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
};

void add_block(Totals& t, const nlohmann::ordered_json& b) {
  for (const auto& [k, v] : b["generated"].items()) t.generated[k] += v.get<long>();
  for (const auto& [k, v] : b["accepted"].items()) t.accepted[k] += v.get<long>();
  for (const auto& [k, v] : b["rejected"].items()) t.rejected[k] += v.get<long>();
  for (const auto& [k, v] : b["examples"].items())
    for (const auto& e : v)
      if (t.examples[k].size() < 3) t.examples[k].push_back(e);
  t.times += times_from(b["stage_seconds"]);
  t.wall += b["wall_seconds"].get<double>();
  t.candidates += b["candidates"].get<long>();
  t.exported += b["exported"].get<long>();
  if (b.contains("near_duplicates"))
    for (const auto& [k, v] : b["near_duplicates"].items()) t.near_by_family[k] += v.get<long>();
  if (b.contains("skeletons"))
    for (const auto& h : b["skeletons"]) t.skeletons.insert(h.get<uint64_t>());
  t.parts.push_back({{"data", b["data"]}, {"cpt", b["cpt"]}, {"sft", b["sft"]}, {"samples", b["exported"]}});
}

// Adds a block record's counts by family and mode (records written before they were kept have
// none), then fails closed when a family and mode has had kNoneExportedLimit candidates and
// exported none: its parameter ranges admit no instance of that mode that passes the checks,
// and the run would build blocks for ever (a mixture of that family alone) or silently leave
// the mode out. Called for each block in block order (replayed, or just written, on the
// writer thread: before it writes the next block), so the run stops after the same block
// whatever the threads, and a resume stops there again. Under MPI rank 0 adds every rank's
// blocks in block order too (run_ranks), so the ranks stop at the same block as one process.
void add_and_check_progress(ModeTotals& t, const nlohmann::ordered_json& b) {
  if (b.contains("modes"))
    for (const auto& [k, v] : b["modes"].items()) {
      ModeCounts& m = t[k];
      m.generated += v["generated"].get<long>();
      m.exported += v["exported"].get<long>();
      for (const auto& [r, n] : v["rejected"].items()) m.rejected[r] += n.get<long>();
    }
  for (const auto& [key, m] : t) {
    if (m.generated < kNoneExportedLimit || m.exported > 0) continue;
    const size_t space = key.find(' ');
    const std::string family = key.substr(0, space), mode = key.substr(space + 1);
    std::string why;
    for (const auto& [reason, n] : m.rejected) why += (why.empty() ? "" : ", ") + reason + " " + std::to_string(n);
    throw InputError::field("families." + family + ".modes." + mode,
                            "none of " + std::to_string(m.generated) + " " + mode + " candidates was exported (" +
                                why + "); its parameter ranges admit no " + mode +
                                " instance that passes the checks: widen them or give the mode no share");
  }
}

nlohmann::ordered_json manifest_from(const Totals& t, const RunOptions& o, int threads, int resumed) {
  nlohmann::ordered_json m;
  m["schema_version"] = 1;
  m["generator"] = kGeneratorName;
  m["generator_version"] = kGeneratorVersion;
  m["config_source"] = o.config.source;
  m["config"] = nlohmann::ordered_json::parse(config_fingerprint(o.config));
  m["shard"] = {{"index", o.shard}, {"count", o.shards}};
  m["samples"] = t.exported;
  m["candidates"] = t.candidates;
  nlohmann::ordered_json fam = nlohmann::ordered_json::object();
  for (const auto& [k, v] : t.generated) {
    auto it = t.accepted.find(k);
    fam[k] = {{"generated", v}, {"exported", it == t.accepted.end() ? 0 : it->second}};
  }
  m["per_family"] = fam;
  nlohmann::ordered_json rej = nlohmann::ordered_json::object();
  for (const auto& [k, v] : t.rejected)
    rej[k] = {{"count", v},
              {"share_of_generated", t.candidates ? double(v) / double(t.candidates) : 0.0},
              {"examples", t.examples.count(k) ? t.examples.at(k) : std::vector<nlohmann::ordered_json>{}}};
  m["per_reason"] = rej;
  nlohmann::ordered_json near = nlohmann::ordered_json::object();
  for (const auto& [k, v] : t.generated) {
    auto it = t.near_by_family.find(k);
    near[k] = v ? double(it == t.near_by_family.end() ? 0 : it->second) / double(v) : 0.0;
  }
  m["diversity"] = {{"distinct_structures", t.skeletons.size()},
                    {"distinct_structures_per_1000_samples",
                     t.exported ? 1000.0 * double(t.skeletons.size()) / double(t.exported) : 0.0},
                    {"near_duplicate_rate_by_family", near}};
  m["parts"] = t.parts;
  m["stage_seconds"] = times_json(t.times);
  m["wall_seconds"] = t.wall;
  m["samples_per_second"] = t.wall > 0 ? double(t.exported) / t.wall : 0.0;
  m["threads"] = threads;
  m["resumed_blocks"] = resumed;
  return m;
}


// Creates the output folders and checks or writes the run record (a resume must have the same
// configuration). `shards` is what the record says: 1 for a whole corpus, whatever the ranks.
void prepare_output(const RunOptions& o, int shards, bool write_record) {
  std::error_code ec;
  for (const char* sub : {"/data", "/cpt", "/sft", "/blocks"}) fs::create_directories(o.out_dir + sub, ec);
  if (ec) throw InputError(o.out_dir, 0, "cannot create the output directory: " + ec.message());
  nlohmann::ordered_json run;
  run["fingerprint"] = nlohmann::ordered_json::parse(config_fingerprint(o.config));
  run["shards"] = shards;
  if (!o.compress) run["compressed"] = false;  // absent for the default, so older records still match
  const std::string run_path = o.out_dir + "/run.json";
  if (fs::exists(run_path)) {
    nlohmann::ordered_json old;
    try {
      old = nlohmann::ordered_json::parse(read_file(run_path));
    } catch (const nlohmann::json::exception&) {
      throw InputError(run_path, 0, "unreadable run record; use an empty directory");
    }
    if (old != run)
      throw InputError(run_path, 0, "this directory holds a run with a different configuration or shard count; "
                                    "use an empty directory");
  } else if (write_record) {
    write_file_atomic(run_path, run.dump(2) + "\n");
  }
}

// Removes the temporaries of a run that was killed while writing (never complete, always
// redone): those of the blocks b with b % shards == shard, since other shards may be writing
// theirs in the same directory right now.
void remove_temporaries(const std::string& out_dir, int shard, int shards) {
  std::error_code ec;
  for (const char* sub : {"data", "cpt", "sft", "blocks"})
    for (const auto& e : fs::directory_iterator(out_dir + "/" + sub)) {
      const std::string name = e.path().filename().string();
      size_t dash = name.find('-');
      if (name.find(".tmp.") == std::string::npos || dash == std::string::npos) continue;
      long block = std::strtol(name.c_str() + dash + 1, nullptr, 10);
      if (block % shards == shard) fs::remove(e.path(), ec);
    }
}

// One block's candidates, built on all threads, with the three JSON lines of every sample that
// passed its checks (written here, in parallel; the ordered pass only decides which are kept).
struct BuiltBlock {
  std::vector<Sample> samples;
  std::vector<std::array<std::string, 3>> lines;
  StageTimes times;
  double wall = 0;
};

BuiltBlock build_block(core::ThreadPool& pool, std::vector<std::unique_ptr<SampleBuilder>>& builders,
                       const CorpusConfig& cfg, int block) {
  auto t0 = Clock::now();
  BuiltBlock b;
  const uint64_t first = uint64_t(block) * uint64_t(cfg.block_size);
  b.samples.resize(size_t(cfg.block_size));
  b.lines.resize(size_t(cfg.block_size));
  std::vector<StageTimes> per_thread(size_t(pool.num_threads()));
  std::atomic<int> next{0};
  pool.run([&](int t) {
    for (int k; (k = next.fetch_add(1)) < cfg.block_size;) {
      Sample& s = b.samples[size_t(k)];
      s = builders[size_t(t)]->build(first + uint64_t(k), per_thread[size_t(t)]);
      if (!s.rejection.empty()) continue;
      auto tw = Clock::now();
      b.lines[size_t(k)] = {sample_line(s, cfg), cpt_line(s), sft_line(s, cfg.sft_view)};
      per_thread[size_t(t)].write += since(tw);
    }
  });
  for (const StageTimes& s : per_thread) b.times += s;
  b.wall = since(t0);
  return b;
}

// Writes a block once its verdict is known: the kept samples' parts (each fsynced and renamed)
// and, last, the marker with the block's counts; the block is done once the marker exists.
// Returns the marker's record.
nlohmann::ordered_json write_block(int block, const BlockVerdict& v, BuiltBlock& b, const std::string& dir,
                                   bool compress) {
  apply_verdict(v, b.samples);
  nlohmann::ordered_json gen = nlohmann::ordered_json::object(), acc = nlohmann::ordered_json::object(),
                         rej = nlohmann::ordered_json::object(), ex = nlohmann::ordered_json::object(),
                         near = nlohmann::ordered_json::object(), modes = nlohmann::ordered_json::object();
  // The parts sized once: appending a block's lines to growing strings reallocated and copied
  // megabytes, each time onto freshly faulted pages.
  std::string data, cpt, sft;
  size_t sizes[3] = {0, 0, 0};
  for (long k = 0; k < v.examined; ++k)
    if (b.samples[size_t(k)].rejection.empty())
      for (int i = 0; i < 3; ++i) sizes[i] += b.lines[size_t(k)][size_t(i)].size();
  data.reserve(sizes[0]);
  cpt.reserve(sizes[1]);
  sft.reserve(sizes[2]);
  std::unordered_set<uint64_t> shapes;
  auto bump = [](nlohmann::ordered_json& j, const std::string& k) { j[k] = j.value(k, 0L) + 1; };
  for (long k = 0; k < v.examined; ++k) {
    const Sample& s = b.samples[size_t(k)];
    bump(gen, s.family);
    nlohmann::ordered_json& mode = modes[s.family + " " + to_string(s.mode)];
    if (mode.is_null()) mode = {{"generated", 0}, {"exported", 0}, {"rejected", nlohmann::ordered_json::object()}};
    bump(mode, "generated");
    if (!s.rejection.empty()) {
      bump(mode["rejected"], s.rejection);
      bump(rej, s.rejection);
      if (s.rejection == reason::kDuplicateNear) bump(near, s.family);
      if (ex[s.rejection].size() < 3) ex[s.rejection].push_back({{"id", s.id}, {"detail", s.rejection_detail}});
      continue;
    }
    bump(acc, s.family);
    bump(mode, "exported");
    shapes.insert(skeleton(s.family, s.model));
    data += b.lines[size_t(k)][0];
    cpt += b.lines[size_t(k)][1];
    sft += b.lines[size_t(k)][2];
  }
  b.times.dedup += v.seconds;
  nlohmann::ordered_json r;
  r["block"] = block;
  r["data"] = part_name("data", block, compress);
  r["cpt"] = part_name("cpt", block, compress);
  r["sft"] = part_name("sft", block, compress);
  r["candidates"] = v.examined;
  r["exported"] = v.kept;
  r["generated"] = gen;
  r["accepted"] = acc;
  r["rejected"] = rej;
  r["examples"] = ex;
  r["near_duplicates"] = near;
  r["modes"] = modes;  // per "family mode": generated, exported, rejected by reason (check_progress)
  r["skeletons"] = std::vector<uint64_t>(shapes.begin(), shapes.end());
  auto tw = Clock::now();
  auto put = [&](const char* kind, const std::string& text) {
    write_file_atomic(dir + "/" + r[kind].get<std::string>(), compress ? zstd_compress(text, kZstdLevel) : text);
  };
  put("data", data);
  put("cpt", cpt);
  put("sft", sft);
  b.times.write += since(tw);
  r["stage_seconds"] = times_json(b.times);
  r["wall_seconds"] = b.wall;
  write_file_atomic(dir + "/" + block_name(block), r.dump(2) + "\n");
  return r;
}

// The manifest's file and, for a whole corpus, the dataset card.
void write_manifest(RunReport& report, const Totals& totals, const RunOptions& o, int shard, int shards) {
  report.manifest_path = o.out_dir + "/" + manifest_name(shard, shards);
  write_file_atomic(report.manifest_path, report.manifest.dump(2) + "\n");
  if (shards == 1) write_file_atomic(o.out_dir + "/card.md", dataset_card(report.manifest));
  report.candidates = totals.candidates;
}

// A run over the ranks of an MPI job: one corpus, byte for byte the one a single process writes
// with the same configuration. Rounds of `ranks.size()` blocks: rank r builds block
// first + r, sends its candidates to rank 0, which admits the round's blocks in block order
// with the one Deduplicator (so duplicates across ranks are removed, and the earlier one
// survives as in one process) and sends the verdicts back; each rank then writes its block on
// its finisher thread while the next round is built. A resume replays the finished blocks
// from block 0 up to the first missing one (ranks finish out of order, so later markers may
// exist: those blocks are built again, to the same bytes).
RunReport run_ranks(const RunOptions& o, RankGroup& ranks) {
  const CorpusConfig& cfg = o.config;
  const int rank = ranks.rank(), size = ranks.size();
  const auto t_start = Clock::now();
  // Nothing is written before the first collective completes, so every rank sees the folder
  // as it was when the run started.
  prepare_output(o, 1, rank == 0);
  std::unique_ptr<Deduplicator> dedup;
  if (rank == 0) {
    remove_temporaries(o.out_dir, 0, 1);
    dedup = std::make_unique<Deduplicator>(cfg.near_threshold, o.out_dir, o.dedup_memory_bytes);
    for (const std::string& dir : o.against) admit_corpus(dir, data_parts(dir), *dedup);
  }
  const long target = cfg.count;
  RunReport report;
  long exported = 0;
  // Counts by family and mode (add_and_check_progress) of every block in block order: each
  // rank replays all the finished blocks; while the run goes on, rank 0 adds the round's blocks
  // (settle_round) and every rank stops on its word. So a run, its resume and any number of
  // ranks stop at the same block, with the same message.
  ModeTotals by_mode;
  int next = 0;  // the first block not finished
  for (;; ++next) {
    const std::string marker = o.out_dir + "/" + block_name(next);
    if (exported >= target || !fs::exists(marker)) break;
    nlohmann::ordered_json b = nlohmann::ordered_json::parse(read_file(marker));
    add_and_check_progress(by_mode, b);
    if (rank == 0) admit_corpus(o.out_dir, {b["data"].get<std::string>()}, *dedup);
    exported += b["exported"].get<long>();
    ++report.blocks_resumed;
  }
  const int resumed_upto = next;

  core::ThreadPool pool(o.threads);
  const int threads = pool.num_threads();
  std::vector<std::unique_ptr<SampleBuilder>> builders;
  for (int t = 0; t < threads; ++t) builders.push_back(std::make_unique<SampleBuilder>(cfg));
  std::unique_ptr<ProgressBar> bar;
  if (o.progress && rank == 0) {
    bar = std::make_unique<ProgressBar>("data gen", target);
    if (exported) bar->advance(exported);
  }
  OrderedWorker finisher;
  std::future<nlohmann::ordered_json> pending;
  // My block of the previous round is written (its errors surface here); rank 0 adds every
  // rank's record of that round, in block order (rank r wrote block first + r), and says
  // whether a family and mode exported nothing after kNoneExportedLimit candidates. Every rank
  // calls it once a round, and all stop together with the one message.
  auto settle_round = [&] {
    std::string modes;
    if (pending.valid()) {
      nlohmann::ordered_json record = pending.get();
      modes = record.contains("modes") ? record["modes"].dump() : "{}";
    }
    std::vector<std::string> records = ranks.gather(modes);
    std::string stop;
    if (rank == 0) {
      try {
        for (const std::string& m : records)
          if (!m.empty())
            add_and_check_progress(by_mode, nlohmann::ordered_json{{"modes", nlohmann::ordered_json::parse(m)}});
      } catch (const InputError& e) {
        stop = e.what();
      }
    }
    stop = ranks.broadcast(stop);
    if (!stop.empty()) throw InputError(stop);
  };
  int last = next - 1;  // the last block written (by any rank)
  while (exported < target) {
    const int mine = next + rank;
    auto built = std::make_shared<BuiltBlock>(build_block(pool, builders, cfg, mine));
    std::vector<std::string> all = ranks.gather(encode_candidates(candidates_of(built->samples)));
    std::string said;
    if (rank == 0) {
      std::vector<BlockVerdict> decided(static_cast<size_t>(size));
      long count = exported;
      for (int r = 0; r < size && count < target; ++r) {  // the rest: examined -1, not needed
        decided[size_t(r)] = admit_block(*dedup, decode_candidates(all[size_t(r)]), target - count);
        count += decided[size_t(r)].kept;
      }
      said = encode_verdicts(decided);
    }
    std::vector<BlockVerdict> round = decode_verdicts(ranks.broadcast(said));
    if (round.size() != size_t(size)) throw InputError("corpus ranks: a verdict message for another number of ranks");
    for (int r = 0; r < size; ++r) {
      if (round[size_t(r)].examined < 0) continue;
      exported += round[size_t(r)].kept;
      last = next + r;
      if (bar) bar->advance(round[size_t(r)].kept);
    }
    settle_round();  // the previous round's blocks, before this round's are written
    if (round[size_t(rank)].examined >= 0) {
      pending = finisher.submit([built, v = round[size_t(rank)], mine, dir = o.out_dir, compress = o.compress] {
        return write_block(mine, v, *built, dir, compress);
      });
    }
    next += size;
  }
  settle_round();
  ranks.barrier();  // every rank's blocks are on disk
  if (bar) bar->finish();

  report.accepted = exported;
  report.blocks = last + 1 - resumed_upto + report.blocks_resumed;
  if (rank != 0) return report;
  Totals totals;
  for (int block = 0; block <= last; ++block)
    add_block(totals, nlohmann::ordered_json::parse(read_file(o.out_dir + "/" + block_name(block))));
  report.manifest = manifest_from(totals, o, threads * size, report.blocks_resumed);
  // The blocks ran side by side: the run took its wall time, not the sum of theirs.
  report.wall_seconds = since(t_start);
  report.manifest["wall_seconds"] = report.wall_seconds;
  report.manifest["samples_per_second"] = report.wall_seconds > 0 ? double(totals.exported) / report.wall_seconds : 0.0;
  report.manifest["ranks"] = size;
  write_manifest(report, totals, o, 0, 1);
  return report;
}

}  // namespace

bool is_corpus_part(const std::string& name) {
  auto ends = [&](const std::string& s) { return name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0; };
  return name.rfind("part-", 0) == 0 && (ends(".jsonl") || ends(std::string(".jsonl") + kZstdSuffix));
}

std::string manifest_name(int shard, int shards) {
  if (shards == 1) return "manifest.json";
  return "manifest-shard-" + std::to_string(shard) + "-of-" + std::to_string(shards) + ".json";
}

RunReport run_corpus(const RunOptions& o) {
  if (o.ranks && o.ranks->size() > 1) {
    if (o.shards != 1) throw InputError::field("--shard", "a run over MPI ranks is one corpus: give no --shard");
    return run_ranks(o, *o.ranks);
  }
  const CorpusConfig& cfg = o.config;
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards) throw InputError::field("--shard", "must be i/n with 0 <= i < n");
  prepare_output(o, o.shards, true);
  remove_temporaries(o.out_dir, o.shard, o.shards);

  // The dedup indexes spill to scratch files in the output directory (unlinked at once).
  Deduplicator dedup(cfg.near_threshold, o.out_dir, o.dedup_memory_bytes);
  for (const std::string& dir : o.against) admit_corpus(dir, data_parts(dir), dedup);

  const long target = cfg.count / o.shards + (o.shard < cfg.count % o.shards ? 1 : 0);
  core::ThreadPool pool(o.threads);
  const int threads = pool.num_threads();
  std::vector<std::unique_ptr<SampleBuilder>> builders;
  for (int t = 0; t < threads; ++t) builders.push_back(std::make_unique<SampleBuilder>(cfg));

  RunReport report;
  Totals totals;
  long exported = 0;
  int written_now = 0;
  std::unique_ptr<ProgressBar> bar;
  if (o.progress) bar = std::make_unique<ProgressBar>("data gen", target);
  // Block b's ordered pass (dedup, selection) runs on the finisher thread, then its files on
  // the writer thread, while the builders go on with blocks b+1 and b+2. The finisher runs
  // blocks one at a time in block order, so the dedup state sees samples in index order exactly
  // as a serial run would. Two blocks may wait, not one: at a million samples the ordered pass
  // grows to about a block's build time, and with one block ahead the builders then waited for
  // it with a core idle (58 s of 421 at 1M, session 9); a second block lets the scheduler keep
  // both cores busy.
  // Exported by the blocks the finisher has passed: each job's need is the count less this.
  // Read and written by finisher jobs only, and here only while no job is pending. Declared
  // before the finisher, whose destructor still runs the queued jobs.
  long admitted = 0;
  // The lowest block whose finisher or writer job threw; every job of a later block then throws
  // without touching the dedup state or the disk. The workers' destructors still run the jobs
  // queued when an error leaves this function: without it, block b+1 was admitted against the
  // half-updated state of a failed block b and its files and marker written, so a resume
  // differed from an uninterrupted run. A block number, not a flag: the finisher runs ahead of
  // the writer, and block b+1's failed admission must not stop the writing of block b (whose
  // admission was whole), nor replace the error the run reports (the oldest block's) with
  // "an earlier block failed". Declared before the workers, which use it until they join.
  std::atomic<int> failed{std::numeric_limits<int>::max()};
  auto note_failure = [&failed](int block) {
    for (int was = failed.load(); block < was && !failed.compare_exchange_weak(was, block);) {
    }
  };
  // Counts by family and mode of the blocks replayed and written (add_and_check_progress). Read
  // and written by writer jobs only, and here only while no job is pending (the replay).
  ModeTotals by_mode;
  OrderedWorker finisher;  // the ordered pass: dedup and selection, block after block
  // The kept samples' files (zstd, write, fsync) on a thread of their own, also in block order:
  // on the finisher they made its serial chain a third longer (zstd level 1 on ~32 KB of JSON
  // per sample), and at a million samples that chain is what the run waits for. Declared after
  // the finisher: its jobs wait for verdicts that the finisher's destructor still delivers.
  OrderedWorker writer;
  std::deque<std::future<nlohmann::ordered_json>> pending;
  long in_flight = 0;  // candidates of the pending blocks: the most they can still export
  auto finish_oldest = [&] {
    auto tw = Clock::now();
    nlohmann::ordered_json done = pending.front().get();
    pending.pop_front();
    done["wall_seconds"] = done["wall_seconds"].get<double>() + since(tw);  // time the run waited for it
    add_block(totals, done);
    exported += done["exported"].get<long>();
    in_flight -= cfg.block_size;
    if (bar) bar->advance(done["exported"].get<long>());
  };
  auto finish_pending = [&] {
    while (!pending.empty()) finish_oldest();
  };
  for (int block = o.shard; exported < target; block += o.shards) {
    // Build the next block ahead only when the pending ones cannot finish the run: the output
    // never depends on it, and no block is built in vain.
    while (!pending.empty() && exported + in_flight >= target) finish_oldest();
    if (exported >= target) break;
    const std::string marker = o.out_dir + "/" + block_name(block);
    if (fs::exists(marker)) {  // finished earlier: replay its samples into the dedup state
      finish_pending();
      nlohmann::ordered_json b = nlohmann::ordered_json::parse(read_file(marker));
      admit_corpus(o.out_dir, {b["data"].get<std::string>()}, dedup);
      exported += b["exported"].get<long>();
      add_block(totals, b);
      add_and_check_progress(by_mode, b);
      ++report.blocks_resumed;
      ++report.blocks;
      if (bar) bar->advance(b["exported"].get<long>());
      continue;
    }
    if (o.stop_after_blocks > 0 && written_now >= o.stop_after_blocks) {
      finish_pending();
      report.accepted = exported;
      return report;  // the testing hook's "kill"
    }
    auto built = std::make_shared<BuiltBlock>(build_block(pool, builders, cfg, block));

    while (pending.size() >= kBlocksAhead) finish_oldest();  // the earlier blocks' ordered passes come first
    if (exported >= target) break;
    if (pending.empty()) admitted = exported;  // no job runs now
    std::shared_future<BlockVerdict> verdict = finisher.submit([&dedup, &admitted, &failed, note_failure, target,
                                                                built, block,
                                                                fail = o.fail_block] {
      if (failed < block)
        throw std::runtime_error("corpus block " + std::to_string(block) + ": not admitted, an earlier block failed");
      try {
        if (block == fail) throw std::runtime_error("testing hook: block " + std::to_string(block) + " fails");
        BlockVerdict v = admit_block(dedup, candidates_of(built->samples), target - admitted);
        admitted += v.kept;
        return v;
      } catch (...) {
        note_failure(block);
        throw;
      }
    });
    pending.push_back(writer.submit([&failed, note_failure, &by_mode, verdict, block, built, dir = o.out_dir,
                                     compress = o.compress] {
      try {
        const BlockVerdict& v = verdict.get();  // this block's own admission error first
        if (failed < block)
          throw std::runtime_error("corpus block " + std::to_string(block) + ": not written, an earlier block failed");
        nlohmann::ordered_json record = write_block(block, v, *built, dir, compress);
        add_and_check_progress(by_mode, record);
        return record;
      } catch (...) {
        note_failure(block);
        throw;
      }
    }));
    in_flight += cfg.block_size;
    ++written_now;
    ++report.blocks;
  }
  finish_pending();
  if (bar) bar->finish();

  report.manifest = manifest_from(totals, o, threads, report.blocks_resumed);
  write_manifest(report, totals, o, o.shard, o.shards);
  report.accepted = exported;
  report.wall_seconds = totals.wall;
  return report;
}


bool shards_finished(const std::string& dir, int shards) {
  for (int i = 0; i < shards; ++i)
    if (!fs::exists(dir + "/" + manifest_name(i, shards))) return false;
  return true;
}

nlohmann::ordered_json merge_manifests(const std::string& dir, int shards) {
  nlohmann::ordered_json merged;
  Totals t;
  int resumed = 0, threads = 0;
  for (int i = 0; i < shards; ++i) {
    std::string path = dir + "/" + manifest_name(i, shards);
    if (!fs::exists(path)) throw InputError(path, 0, "missing: shard " + std::to_string(i) + " has not finished");
    nlohmann::ordered_json m = nlohmann::ordered_json::parse(read_file(path));
    if (i == 0) merged = m;
    else if (m["config"] != merged["config"]) throw InputError(path, 0, "a different configuration from shard 0");
    for (const auto& [k, v] : m["per_family"].items()) {
      t.generated[k] += v["generated"].get<long>();
      t.accepted[k] += v["exported"].get<long>();
    }
    for (const auto& [k, v] : m["per_reason"].items()) {
      t.rejected[k] += v["count"].get<long>();
      for (const auto& e : v["examples"])
        if (t.examples[k].size() < 3) t.examples[k].push_back(e);
    }
    for (const auto& p : m["parts"]) t.parts.push_back(p);
    for (const auto& [k, v] : m["diversity"]["near_duplicate_rate_by_family"].items())
      t.near_by_family[k] += std::lround(v.get<double>() * m["per_family"][k]["generated"].get<double>());
    t.times += times_from(m["stage_seconds"]);
    // Shards run side by side: the run takes as long as the slowest.
    t.wall = std::max(t.wall, m["wall_seconds"].get<double>());
    t.candidates += m["candidates"].get<long>();
    t.exported += m["samples"].get<long>();
    resumed += m["resumed_blocks"].get<int>();
    threads += m["threads"].get<int>();
  }
  // Distinct skeletons across shards: the union of the block records.
  for (const auto& e : fs::directory_iterator(dir + "/blocks")) {
    if (e.path().extension() != ".json") continue;
    nlohmann::ordered_json b = nlohmann::ordered_json::parse(read_file(e.path().string()));
    if (b.contains("skeletons"))
      for (const auto& h : b["skeletons"]) t.skeletons.insert(h.get<uint64_t>());
  }
  RunOptions o;
  o.config.source = merged.value("config_source", "");
  nlohmann::ordered_json out = manifest_from(t, o, threads, resumed);
  out["config"] = merged["config"];
  out["config_source"] = merged["config_source"];
  out["shard"] = {{"index", 0}, {"count", shards}, {"merged", true}};
  write_file_atomic(dir + "/manifest.json", out.dump(2) + "\n");
  write_file_atomic(dir + "/card.md", dataset_card(out));
  return out;
}

}  // namespace trex::ordata
