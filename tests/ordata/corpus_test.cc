// Whole corpus runs through the library: byte-identical reruns, resume after a stop,
// duplicates injected and removed, the views' formats, and the independent check finding
// corrupt lines and wrong answers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "nlohmann/json.hpp"
#include "trex/lp/lp_format.h"
#include "trex/ordata/builder.h"
#include "trex/ordata/corpus_check.h"
#include "trex/ordata/corpus_run.h"
#include "trex/ordata/dedup.h"
#include "trex/ordata/render.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/zstd_file.h"

namespace trex::ordata {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) {
  std::string d = (fs::temp_directory_path() / ("trex_ordata_" + name + "_" + std::to_string(getpid()))).string();
  fs::remove_all(d);
  return d;
}

RunOptions small_run(const std::string& out, long count = 60, uint64_t seed = 5) {
  RunOptions o;
  o.config = default_config();
  o.config.count = count;
  o.config.seed = seed;
  o.config.block_size = 16;
  finalize_config(o.config);
  o.out_dir = out;
  o.threads = 2;
  o.compress = false;  // plain parts, so tests can read and edit lines (compression has its own tests)
  return o;
}

// Every file a run publishes except the manifest and card (which hold timings).
std::map<std::string, std::string> published(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const char* sub : {"data", "cpt", "sft"})
    for (const auto& e : fs::directory_iterator(dir + "/" + sub))
      files[std::string(sub) + "/" + e.path().filename().string()] = read_file(e.path().string());
  return files;
}

std::vector<nlohmann::json> lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string l; std::getline(in, l);) out.push_back(nlohmann::json::parse(l));
  return out;
}

TEST(CorpusRun, ExportsTheCountWithManifestAndCard) {
  std::string dir = temp_dir("count");
  RunReport r = run_corpus(small_run(dir));
  EXPECT_EQ(r.accepted, 60);
  EXPECT_GE(r.candidates, 60);
  long total = 0;
  for (const auto& [name, text] : published(dir))
    if (name.rfind("data/", 0) == 0)
      for (const auto& j : lines(dir + "/" + name)) {
        ++total;
        for (const char* k : {"id", "family", "industry", "template", "seed", "statement", "formulations", "answer",
                              "checks", "provenance"})
          EXPECT_TRUE(j.contains(k)) << k;
        for (const auto& [check, result] : j["checks"].items()) EXPECT_EQ(result, "pass") << check;
        EXPECT_EQ(j["provenance"]["generator"], kGeneratorName);
      }
  EXPECT_EQ(total, 60);
  nlohmann::json m = nlohmann::json::parse(read_file(dir + "/manifest.json"));
  EXPECT_EQ(m["samples"], 60);
  long per_family = 0;
  for (const auto& [k, v] : m["per_family"].items()) per_family += v["exported"].get<long>();
  EXPECT_EQ(per_family, 60);
  for (const char* stage : {"generate", "solve", "render", "verify", "dedup", "write"})
    EXPECT_TRUE(m["stage_seconds"].contains(stage));
  std::string card = read_file(dir + "/card.md");
  EXPECT_NE(card.find("# OR-CPT corpus"), std::string::npos);
  EXPECT_NE(card.find("| Family |"), std::string::npos);
  fs::remove_all(dir);
}

TEST(CorpusRun, SameConfigGivesByteIdenticalFilesWithAnyThreadCountAndDedupMemory) {
  std::string a = temp_dir("same_a"), b = temp_dir("same_b");
  RunOptions oa = small_run(a), ob = small_run(b);
  ob.threads = 1;
  ob.dedup_memory_bytes = 0;  // the smallest page cache: index pages evicted and read back all the time
  run_corpus(oa);
  run_corpus(ob);
  EXPECT_EQ(published(a), published(b));
  RunOptions oc = small_run(temp_dir("same_c"), 60, 6);
  run_corpus(oc);
  EXPECT_NE(published(a), published(oc.out_dir));
  for (const auto& d : {a, b, oc.out_dir}) fs::remove_all(d);
}

TEST(CorpusRun, StoppedAndResumedEqualsUninterrupted) {
  std::string whole = temp_dir("whole"), split = temp_dir("split");
  run_corpus(small_run(whole));
  RunOptions first = small_run(split);
  first.stop_after_blocks = 2;
  RunReport partial = run_corpus(first);
  EXPECT_LT(partial.accepted, 60);
  EXPECT_FALSE(fs::exists(split + "/manifest.json"));
  // A half-written temporary from the "killed" run must not survive or matter.
  write_file_atomic(split + "/data/part-00002.jsonl", "{\"partial\":");
  RunReport rest = run_corpus(small_run(split));
  EXPECT_EQ(rest.blocks_resumed, 2);
  EXPECT_EQ(rest.accepted, 60);
  EXPECT_EQ(published(whole), published(split));
  fs::remove_all(whole);
  fs::remove_all(split);
}

TEST(CorpusRun, AFailedBlockStopsTheLaterOnesAndAResumeEqualsUninterrupted) {
  std::string whole = temp_dir("fail_whole"), split = temp_dir("fail_split");
  run_corpus(small_run(whole));
  RunOptions first = small_run(split);
  first.fail_block = 1;  // blocks of 16 for 60 samples: block 2 is queued when block 1's error surfaces
  EXPECT_THROW(run_corpus(first), std::runtime_error);
  EXPECT_TRUE(fs::exists(split + "/blocks/block-00000.json"));
  for (const char* later : {"blocks/block-00001.json", "blocks/block-00002.json", "data/part-00001.jsonl",
                            "data/part-00002.jsonl", "cpt/part-00002.jsonl", "sft/part-00002.jsonl"})
    EXPECT_FALSE(fs::exists(split + "/" + later)) << later;
  RunReport rest = run_corpus(small_run(split));
  EXPECT_EQ(rest.blocks_resumed, 1);
  EXPECT_EQ(rest.accepted, 60);
  EXPECT_EQ(published(whole), published(split));
  fs::remove_all(whole);
  fs::remove_all(split);
}

TEST(CorpusRun, RefusesADirectoryWithAnotherConfiguration) {
  std::string dir = temp_dir("other");
  run_corpus(small_run(dir, 20));
  EXPECT_THROW(run_corpus(small_run(dir, 20, 99)), InputError);
  fs::remove_all(dir);
}

TEST(CorpusRun, ShardsPartitionTheWorkAndMerge) {
  std::string dir = temp_dir("shards");
  for (int i = 0; i < 2; ++i) {
    RunOptions o = small_run(dir, 40);
    o.shard = i, o.shards = 2;
    EXPECT_EQ(run_corpus(o).accepted, 20);
  }
  nlohmann::ordered_json m = merge_manifests(dir, 2);
  EXPECT_EQ(m["samples"], 40);
  EXPECT_TRUE(fs::exists(dir + "/card.md"));
  std::set<std::string> ids;
  for (const auto& [name, text] : published(dir))
    if (name.rfind("data/", 0) == 0) {
      for (const auto& j : lines(dir + "/" + name)) EXPECT_TRUE(ids.insert(j["id"]).second);
    }
  EXPECT_EQ(ids.size(), 40u);
  fs::remove_all(dir);
}

TEST(Dedup, InjectedExactNearAndStructuralDuplicatesAreRemoved) {
  const Family* f = find_family("transportation");
  Rng rng(17);
  Instance inst = f->generate(default_ranges(f->contract()), FeasibilityMode::kFeasible, 0, rng);
  std::string text = render_statement(inst.story, 0, false);
  Deduplicator d(0.8);
  std::string of;
  EXPECT_EQ(d.admit("orig", text, inst.model, &of), "");
  // Exact: the same text with other case and spacing.
  std::string shouty = text;
  for (char& c : shouty) c = char(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(d.admit("exact", "  " + shouty + "\n\n", inst.model, &of), reason::kDuplicateExact);
  EXPECT_EQ(of, "orig");
  // Near: one sentence added and a word changed, on a different model.
  lp::Model other = inst.model;
  other.var(0).cost += 1;
  std::string near = text;
  near.replace(near.find("The task"), 8, "Your job");
  EXPECT_EQ(d.admit("near", near + "Please be quick.\n", other, &of), reason::kDuplicateNear);
  // Structural: the same data told in another industry and template, variables renamed.
  Rng rng2(17);
  Instance same = f->generate(default_ranges(f->contract()), FeasibilityMode::kFeasible, 2, rng2);
  std::string told = render_statement(same.story, 2, true);
  ASSERT_LT(minhash_similarity(minhash(told), minhash(text)), 0.5);
  EXPECT_EQ(d.admit("structural", told, same.model, &of), reason::kDuplicateStructural);
  // A different instance is new.
  Rng rng3(18);
  Instance fresh = f->generate(default_ranges(f->contract()), FeasibilityMode::kFeasible, 0, rng3);
  EXPECT_EQ(d.admit("fresh", render_statement(fresh.story, 0, false), fresh.model, &of), "");
}

TEST(Dedup, VerdictsDoNotDependOnTheResidentBudget) {
  // Budget 0 gives the smallest page cache (64 pages, far less than the index files, so
  // pages are evicted, written back and read again all the time); the default keeps these
  // small indexes whole. Both must see the same duplicates.
  Deduplicator keep(0.8), drop(0.8, "", 0);
  long dups = 0;
  for (const char* name : {"knapsack", "transportation", "flow_shop"}) {
    const Family* f = find_family(name);
    for (uint64_t i = 0; i < 60; ++i) {
      Rng rng(i % 40);  // seeds repeat: exact and structural duplicates come back
      Instance inst = f->generate(default_ranges(f->contract()), FeasibilityMode::kFeasible, int(i % 4), rng);
      std::string text = render_statement(inst.story, int(i % 3), false);
      std::string id = std::string(name) + std::to_string(i), of_keep, of_drop;
      std::string a = keep.admit(id, text, inst.model, &of_keep), b = drop.admit(id, text, inst.model, &of_drop);
      ASSERT_EQ(a, b) << id;
      ASSERT_EQ(of_keep, of_drop) << id;
      dups += !a.empty();
    }
  }
  EXPECT_GE(dups, 60);  // the 20 repeated seeds of each family
  EXPECT_EQ(keep.size(), drop.size());
  EXPECT_GT(drop.file_bytes(), 8 * drop.capacity_bytes());
  EXPECT_EQ(drop.resident_bytes(), drop.capacity_bytes());  // every frame used, none more
  EXPECT_EQ(keep.file_bytes(), drop.file_bytes());
}

TEST(Dedup, TheSketchFilterNeverDropsASignatureAtTheThreshold) {
  // At 0.8, 103 of 128 values must agree. Each trial offers an original and then variants
  // that keep six whole bands (26-31) and change values in the first bands to random ones
  // (whose 2-bit sketches differ from the old in about 3 of 4 positions): two values in each
  // of 26 bands (76 of 128 agree: far, and the sketch should rule it out), one in each of 26
  // (102 agree: one below the threshold) and one in each of 25 (103: at the threshold, a near
  // duplicate, which the sketch must never rule out). Texts and structures are distinct, so
  // only the near-duplicate path can decide.
  Deduplicator d(0.8);
  Rng rng(5);
  uint64_t next = 1;
  long near = 0, met = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Fingerprint orig;
    for (uint64_t& v : orig.signature) v = rng.next();
    orig.text = next++, orig.structure = next++;
    std::string of;
    ASSERT_EQ(d.admit("orig" + std::to_string(trial), orig, &of), "");
    const uint64_t compared_before = d.signatures_compared(), distinct_before = d.distinct_candidates();
    for (auto [bands, per_band] : {std::pair{26, 2}, std::pair{26, 1}, std::pair{25, 1}}) {
      Fingerprint v = orig;
      v.text = next++, v.structure = next++;
      for (int b = 0; b < bands; ++b)
        for (int k = 0; k < per_band; ++k) v.signature[size_t(b * kMinHashSize / kLshBands + k)] = rng.next();
      const uint64_t before = d.band_candidates();
      std::string got = d.admit("v" + std::to_string(trial) + "-" + std::to_string(bands * per_band), v, &of);
      met += d.band_candidates() > before;  // it met its original in a shared band
      if (bands == 25) {
        ASSERT_EQ(got, reason::kDuplicateNear) << trial;
        ASSERT_EQ(of, "orig" + std::to_string(trial));
        ++near;
      } else {
        ASSERT_EQ(got, "") << trial << " " << bands * per_band;
      }
    }
    // Distinct records met: the far variant met the original (bands 26-31), the one-below
    // variant met the original and the far variant (26-31 each), the near variant met the
    // original in band 25 and stopped there: 4 (19 band hits; the band table's keys are 32-bit,
    // so another trial's record could meet one by chance: none does with this seed). Without the
    // sketch each of the
    // 4 would have its signature read. The sketch rules out at least the far pairs (far vs
    // original and one-below vs far: 52 values differ, about 39 sketch positions against 25
    // allowed), so fewer than 4 are read. (Against band hits, 19, this could not fail.)
    const uint64_t distinct = d.distinct_candidates() - distinct_before;
    ASSERT_EQ(distinct, 4u) << trial;
    ASSERT_LT(d.signatures_compared() - compared_before, distinct) << trial;
  }
  EXPECT_EQ(near, 200);
  EXPECT_EQ(met, 600);
}

TEST(Dedup, ARecordMetInSeveralBandsOfOneAdmitIsComparedOnce) {
  // At 0.5, 64 of 128 values must agree. The variant keeps bands 26-31 (24 values) whole and
  // changes 65 values in bands 0-25 (two in each, and a third in bands 0-12): 63 agree, one
  // below the threshold, so it is not a duplicate. Its sketch differs in at most 65 positions
  // (each changed value in about 3 of 4), so the sketch rules it out only if all 65 differ
  // (0.75^65, about 1e-8; the seed is fixed): its signature is read, once, though the pair
  // shares six bands.
  Deduplicator d(0.5);
  Rng rng(11);
  Fingerprint orig;
  for (uint64_t& v : orig.signature) v = rng.next();
  orig.text = 1, orig.structure = 2;
  std::string of;
  ASSERT_EQ(d.admit("orig", orig, &of), "");
  Fingerprint v = orig;
  v.text = 3, v.structure = 4;
  constexpr int rows = kMinHashSize / kLshBands;
  for (int b = 0; b < 26; ++b)
    for (int k = 0; k < (b < 13 ? 3 : 2); ++k) v.signature[size_t(b * rows + k)] = rng.next();
  ASSERT_EQ(d.admit("variant", v, &of), "");
  EXPECT_EQ(d.band_candidates(), 6u);
  EXPECT_EQ(d.distinct_candidates(), 1u);
  EXPECT_EQ(d.signatures_compared(), 1u);  // six without the checked-once set
}

TEST(Dedup, TheCheckedOnceSetHoldsAcrossGrowthAndAdmits) {
  // Every record shares bands 30 and 31 (the last 8 values) with every earlier one and has
  // random values elsewhere (far from all of them), so admit i meets the i earlier records
  // twice each. Past 2,048 records in one admit the set grows (it starts at 4,096 slots, half
  // full at most) during band 30, and band 31 must still find every record of band 30; the
  // next admit's new stamp must forget them all. Counted exactly: i distinct per admit. (Band
  // hits are at least 2i: the band table keeps 32-bit keys, so a chance collision can add a hit
  // in another band, here once in 2,600 admits; it meets one of the same earlier records, so the
  // distinct count stays exact.)
  Deduplicator d(0.8);
  Rng rng(13);
  constexpr uint64_t n = 2600;
  const uint64_t shared = rng.next();
  for (uint64_t i = 0; i < n; ++i) {
    Fingerprint fp;
    for (uint64_t& v : fp.signature) v = rng.next();
    for (int k = kMinHashSize - 8; k < kMinHashSize; ++k) fp.signature[size_t(k)] = shared + uint64_t(k);
    fp.text = 2 * i + 1, fp.structure = 2 * i + 2;
    const uint64_t hits_before = d.band_candidates(), distinct_before = d.distinct_candidates();
    std::string of;
    ASSERT_EQ(d.admit("r" + std::to_string(i), fp, &of), "") << i;
    ASSERT_GE(d.band_candidates() - hits_before, 2 * i) << i;
    ASSERT_EQ(d.distinct_candidates() - distinct_before, i) << i;
  }
  EXPECT_EQ(d.distinct_candidates(), n * (n - 1) / 2);
  EXPECT_EQ(d.signatures_compared(), 0u);  // ~90 of 120 random values' sketch positions differ
}

TEST(Dedup, AgainstAnEarlierCorpusEverySampleIsADuplicate) {
  std::string first = temp_dir("against_a"), second = temp_dir("against_b");
  run_corpus(small_run(first, 20));
  RunOptions o = small_run(second, 5);
  o.against = {first};
  o.config.block_size = 20;  // the same 20 candidates (same seed) come first and are all seen
  RunReport r = run_corpus(o);
  nlohmann::json m = nlohmann::json::parse(read_file(second + "/manifest.json"));
  long dups = 0;
  for (const char* k : {"duplicate_exact", "duplicate_near", "duplicate_structural"})
    if (m["per_reason"].contains(k)) dups += m["per_reason"][k]["count"].get<long>();
  EXPECT_GE(dups, 20);
  EXPECT_EQ(r.accepted, 5);
  fs::remove_all(first);
  fs::remove_all(second);
}

TEST(Compression, ZstdPartsHoldExactlyThePlainPartsAndAreSmaller) {
  std::string plain = temp_dir("plain"), packed = temp_dir("packed");
  run_corpus(small_run(plain, 40));
  RunOptions o = small_run(packed, 40);
  o.compress = true;
  run_corpus(o);
  auto a = published(plain), b = published(packed);
  ASSERT_EQ(a.size(), b.size());
  size_t plain_bytes = 0, packed_bytes = 0;
  for (const auto& [name, text] : a) {
    auto it = b.find(name + ".zst");
    ASSERT_NE(it, b.end()) << name;
    EXPECT_EQ(zstd_decompress(it->second, name), text) << name;
    plain_bytes += text.size(), packed_bytes += it->second.size();
  }
  EXPECT_LT(packed_bytes * 4, plain_bytes);
  // Each form dedups against the other: every candidate of the same seed is already seen.
  std::string third = temp_dir("mixed");
  RunOptions m = small_run(third, 5);
  m.against = {packed};
  m.config.block_size = 40;
  EXPECT_EQ(run_corpus(m).accepted, 5);
  nlohmann::json man = nlohmann::json::parse(read_file(third + "/manifest.json"));
  long dups = 0;
  for (const char* k : {"duplicate_exact", "duplicate_near", "duplicate_structural"})
    if (man["per_reason"].contains(k)) dups += man["per_reason"][k]["count"].get<long>();
  EXPECT_GE(dups, 40);
  for (const std::string& d : {plain, packed, third}) fs::remove_all(d);
}

TEST(Compression, CorruptOrMislabelledAgainstCorpusIsAnErrorBeforeAnythingIsWritten) {
  std::string packed = temp_dir("bad_against"), out = temp_dir("bad_against_out");
  RunOptions o = small_run(packed, 20);
  o.compress = true;
  run_corpus(o);
  std::string part = packed + "/data/part-00000.jsonl.zst";
  std::string bytes = read_file(part);
  write_file_atomic(part, bytes.substr(0, bytes.size() / 2));  // cut off mid-frame
  RunOptions r = small_run(out, 5);
  r.against = {packed};
  try {
    run_corpus(r);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("part-00000.jsonl.zst"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out + "/data/part-00000.jsonl"));
  // zstd data under a plain name is refused too, never read as text.
  fs::rename(part, packed + "/data/part-00000.jsonl");
  write_file_atomic(packed + "/data/part-00000.jsonl", bytes);
  EXPECT_THROW(run_corpus(r), InputError);
  // trex data check reports the bad part and goes on.
  write_file_atomic(packed + "/data/part-00000.jsonl", "");
  fs::remove(packed + "/data/part-00000.jsonl");
  write_file_atomic(part, bytes.substr(0, bytes.size() / 2));
  CorpusCheckReport c = check_corpus(packed, "cbc", 1);
  ASSERT_FALSE(c.issues.empty());
  EXPECT_EQ(c.issues[0].kind, "corrupt");
  fs::remove_all(packed);
  fs::remove_all(out);
}

TEST(Views, SftRowsAreOpenAiMessagesAndCptRowsAreText) {
  std::string dir = temp_dir("views");
  run_corpus(small_run(dir, 30));
  long rows = 0;
  for (const auto& [name, text] : published(dir)) {
    if (name.rfind("sft/", 0) == 0)
      for (const auto& j : lines(dir + "/" + name)) {
        ++rows;
        ASSERT_TRUE(j["messages"].is_array());
        ASSERT_EQ(j["messages"].size(), 2u);
        EXPECT_EQ(j["messages"][0]["role"], "user");
        EXPECT_EQ(j["messages"][1]["role"], "assistant");
        EXPECT_FALSE(j["messages"][0]["content"].get<std::string>().empty());
        EXPECT_NE(j["messages"][1]["content"].get<std::string>().find("import gurobipy"), std::string::npos);
        EXPECT_TRUE(j["metadata"].contains("id"));
      }
    if (name.rfind("cpt/", 0) == 0) {
      for (const auto& j : lines(dir + "/" + name)) EXPECT_NE(j["text"].get<std::string>().find("Solution"), std::string::npos);
    }
  }
  EXPECT_EQ(rows, 30);
  fs::remove_all(dir);
}

// The statement-data program style: every sample passes every check (the program reads back to
// the reference model), the program opens with the data block, and `trex data check` agrees.
TEST(Views, StatementDataProgramsPassEveryCheckAndOpenWithTheDataBlock) {
  std::string dir = temp_dir("statement_data");
  RunOptions o = small_run(dir, 40);
  o.config.program_style = CorpusConfig::kProgramStatementData;
  o.config.sft_view = CorpusConfig::kSftProgram;
  EXPECT_EQ(run_corpus(o).accepted, 40);
  long rows = 0;
  for (const auto& [name, text] : published(dir)) {
    if (name.rfind("data/", 0) == 0)
      for (const auto& j : lines(dir + "/" + name)) {
        for (const auto& [check, result] : j["checks"].items()) EXPECT_EQ(result, "pass") << check;
        EXPECT_NE(j["formulations"]["gurobipy"].get<std::string>().find("# Data, in the order the statement gives it\n"),
                  std::string::npos);
      }
    if (name.rfind("sft/", 0) == 0)
      for (const auto& j : lines(dir + "/" + name)) {
        ++rows;
        EXPECT_EQ(j["messages"][1]["content"].get<std::string>().rfind(
                      "```python\nimport gurobipy as gp\nfrom gurobipy import GRB\n\n# Data, in the order the statement gives it\n", 0),
                  0u);
      }
  }
  EXPECT_EQ(rows, 40);
  CorpusCheckReport r = check_corpus(dir, "glpk", 2);
  EXPECT_EQ(r.samples, 40);
  for (const CheckIssue& i : r.issues) ADD_FAILURE() << i.file << ":" << i.line << ": " << i.kind << ": " << i.message;
  fs::remove_all(dir);
}

TEST(CorpusCheck, CleanCorpusHasNoIssues) {
  std::string dir = temp_dir("check_clean");
  run_corpus(small_run(dir, 40));
  CorpusCheckReport r = check_corpus(dir, "glpk", 2);
  EXPECT_EQ(r.samples, 40);
  for (const CheckIssue& i : r.issues) ADD_FAILURE() << i.file << ":" << i.line << ": " << i.kind << ": " << i.message;
  fs::remove_all(dir);
}

TEST(CorpusCheck, ReportsCorruptTruncatedAndWrongLinesByLine) {
  std::string dir = temp_dir("check_bad");
  run_corpus(small_run(dir, 40));
  std::string part = dir + "/data/part-00000.jsonl";
  std::vector<std::string> ls;
  {
    std::ifstream in(part);
    for (std::string l; std::getline(in, l);) ls.push_back(l);
  }
  ASSERT_GE(ls.size(), 4u);
  // Line 2: garbage. Line 3: a wrong objective. Last line: cut off in the middle.
  ls[1] = "{\"id\": \"broken\", \"statement\":";
  nlohmann::json j = nlohmann::json::parse(ls[2]);
  std::string wrong_id = j["id"];
  bool had_objective = !j["answer"]["objective"].is_null();
  if (had_objective) j["answer"]["objective"] = j["answer"]["objective"].get<double>() + 7;
  else j["answer"]["status"] = "optimal";
  ls[2] = j.dump();
  std::string text;
  for (size_t k = 0; k + 1 < ls.size(); ++k) text += ls[k] + "\n";
  text += ls.back().substr(0, ls.back().size() / 2);
  write_file_atomic(part, text);
  CorpusCheckReport r = check_corpus(dir, "glpk", 2);
  std::map<long, std::string> by_line;
  for (const CheckIssue& i : r.issues)
    if (i.file == part) by_line[i.line] = i.kind;
  EXPECT_EQ(by_line[2], "corrupt");
  EXPECT_EQ(by_line[3], "disagreement");
  EXPECT_EQ(by_line[long(ls.size())], "truncated");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trex::ordata
