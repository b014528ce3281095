// A corpus run: blocks of candidate samples built on all threads, deduplicated in index
// order, and written as shards; then the manifest and the dataset card.
//
// The unit of work is a block of config.block_size candidate indices, built on all threads;
// its ordered pass and files run on a finisher thread while the next block is built
// (finishers one at a time, in block order). Block b is finished
// when blocks/block-BBBBB.json exists; it is written last, after the block's data, CPT and
// SFT parts have been renamed into place. A run that finds finished blocks in its output
// directory (same configuration) rebuilds its dedup state from their data parts and
// continues with the next block, so a killed and resumed run writes the same bytes as one
// that was never interrupted. With --shard i/n a run takes blocks i, i+n, i+2n, ... and
// exports its share of the count, deduplicated within the shard only; merge_manifests()
// combines the shards' manifests. Over MPI ranks (RunOptions::ranks) the run is one corpus:
// the ranks build blocks side by side, rank 0 admits them in block order with the one
// deduplicator, and the files are byte for byte those of one process (see run_ranks in the .cc).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/ordata/config.h"
#include "trex/ordata/rank_group.h"
#include "trex/ordata/sample.h"

namespace trex::ordata {

struct RunOptions {
  CorpusConfig config;  // finalized
  std::string out_dir;
  int threads = 0;  // 0: all CPUs
  int shard = 0, shards = 1;
  // The ranks of an MPI job (nullptr or size 1: this process alone). With more than one, the
  // run writes the whole corpus (no --shard): manifest.json and card.md come from rank 0.
  RankGroup* ranks = nullptr;
  std::vector<std::string> against;  // corpora whose samples count as already seen
  bool progress = false;
  // Parts as zstd-compressed .jsonl.zst (the default) or plain .jsonl; recorded in run.json,
  // so a resume must use the same form.
  bool compress = true;
  // The dedup indexes' page cache (Deduplicator's resident budget). Only speed and memory
  // depend on it, never the corpus.
  uint64_t dedup_memory_bytes = Deduplicator::kDefaultResidentBudget;
  // Testing hook: stop (as if killed) after this many blocks have been written (0: never).
  int stop_after_blocks = 0;
  // Testing hook: this block's ordered pass throws, as a full disk would (-1: never).
  int fail_block = -1;
};

struct RunReport {
  long accepted = 0, candidates = 0;
  int blocks = 0, blocks_resumed = 0;
  double wall_seconds = 0;
  std::string manifest_path;
  nlohmann::ordered_json manifest;
};

// Throws InputError for an output directory that holds a different run or cannot be written.
RunReport run_corpus(const RunOptions& options);

// A data, CPT or SFT part's file name: part-BBBBB.jsonl or part-BBBBB.jsonl.zst.
bool is_corpus_part(const std::string& file_name);

// The manifest's file name for one shard of n ("manifest.json" when n == 1).
std::string manifest_name(int shard, int shards);
// Reads the shard manifests of a sharded run in `dir` and writes manifest.json and card.md
// for the whole corpus. Throws InputError when one is missing or they disagree.
// Whether every one of the `shards` shards has written its manifest into `dir`: the shard that
// finds them all merges; the others leave the merge to it.
bool shards_finished(const std::string& dir, int shards);
nlohmann::ordered_json merge_manifests(const std::string& dir, int shards);
// The dataset card (Markdown) written from a manifest.
std::string dataset_card(const nlohmann::ordered_json& manifest);

}  // namespace trex::ordata
