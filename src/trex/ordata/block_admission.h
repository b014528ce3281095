// The ordered pass of one block: which of its candidates the deduplicator admits, in index
// order, until the run has its count. This is the only step of a corpus run that depends on
// earlier blocks, so it is what one process (or rank 0 of an MPI run) decides for every block;
// building and writing do not depend on it and run anywhere.
//
// Under MPI the candidates travel to rank 0 and the verdicts back, as bytes (encode_/decode_
// below). The encoding is the machine's own byte order: the ranks of one run are one build of
// trex on machines of one kind.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trex/ordata/dedup.h"
#include "trex/ordata/sample.h"

namespace trex::ordata {

// What the ordered pass needs of one candidate.
struct Candidate {
  bool passed = false;  // passed every check before dedup (only those are offered to dedup)
  std::string id;
  Fingerprint fingerprint;
};

// The verdict on one candidate: new (or not offered: it failed a check) or a duplicate.
struct Verdict {
  std::string duplicate;  // "" or reason::kDuplicate*
  std::string of;         // the id it duplicates
};

struct BlockVerdict {
  // Candidates taken, in index order: the block is cut where the run reaches its count.
  // -1: the run had its count before this block, which is then neither written nor counted.
  long examined = -1;
  long kept = 0;
  std::vector<Verdict> verdicts;  // [examined]
  double seconds = 0;             // time the pass took (the manifest's dedup stage)
};

std::vector<Candidate> candidates_of(const std::vector<Sample>& samples);

// Offers the block's candidates to dedup in order until `need` (>= 1) are kept.
BlockVerdict admit_block(Deduplicator& dedup, const std::vector<Candidate>& block, long need);

// Applies a verdict to the block's samples: duplicates get their rejection. REQUIRES:
// v.examined >= 0, samples.size() >= v.examined.
void apply_verdict(const BlockVerdict& v, std::vector<Sample>& samples);

std::string encode_candidates(const std::vector<Candidate>& block);
// Throws InputError when the bytes are not a candidate block (a broken peer).
std::vector<Candidate> decode_candidates(const std::string& bytes);
std::string encode_verdicts(const std::vector<BlockVerdict>& blocks);
std::vector<BlockVerdict> decode_verdicts(const std::string& bytes);

}  // namespace trex::ordata
