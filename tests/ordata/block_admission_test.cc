// The ordered pass of a block and the bytes its candidates and verdicts travel as between ranks.
#include "trex/ordata/block_admission.h"

#include <gtest/gtest.h>

#include "trex/util/error.h"

namespace trex::ordata {
namespace {

Candidate candidate(const std::string& id, const std::string& statement, uint64_t structure) {
  Candidate c;
  c.passed = true;
  c.id = id;
  c.fingerprint.text = text_hash(statement);
  c.fingerprint.signature = minhash(statement);
  c.fingerprint.structure = structure;
  return c;
}

std::vector<Candidate> block() {
  std::vector<Candidate> b;
  b.push_back(candidate("a-1", "a bakery makes bread and cakes from flour sugar and eggs each morning", 1));
  b.push_back(Candidate{});  // failed a check before dedup: never offered
  b.push_back(candidate("a-3", "A bakery makes bread and cakes from flour sugar and eggs each morning", 2));
  b.push_back(candidate("a-4", "a refinery blends three crude oils into gasoline subject to octane limits", 1));
  b.push_back(candidate("a-5", "a school assigns teachers to classes so that every class is covered once", 5));
  b.push_back(candidate("a-6", "a port schedules cranes over eight shifts to unload container ships fast", 6));
  return b;
}

TEST(BlockAdmission, AdmitsInOrderAndCutsTheBlockAtTheCount) {
  Deduplicator dedup(0.8);
  BlockVerdict v = admit_block(dedup, block(), 3);
  // a-1 new, (failed), a-3 exact duplicate of a-1, a-4 structural duplicate of a-1, a-5 new,
  // a-6 new: the third kept, so the block ends there.
  ASSERT_EQ(v.examined, 6);
  EXPECT_EQ(v.kept, 3);
  EXPECT_EQ(v.verdicts[1].duplicate, "");
  EXPECT_EQ(v.verdicts[2].duplicate, reason::kDuplicateExact);
  EXPECT_EQ(v.verdicts[2].of, "a-1");
  EXPECT_EQ(v.verdicts[3].duplicate, reason::kDuplicateStructural);
  Deduplicator fresh(0.8);
  BlockVerdict cut = admit_block(fresh, block(), 1);
  EXPECT_EQ(cut.examined, 1);
  EXPECT_EQ(cut.kept, 1);

  std::vector<Sample> samples(6);
  apply_verdict(v, samples);
  EXPECT_EQ(samples[2].rejection, reason::kDuplicateExact);
  EXPECT_EQ(samples[2].rejection_detail, "duplicates a-1");
  EXPECT_EQ(samples[4].rejection, "");
}

TEST(BlockAdmission, CandidatesAndVerdictsSurviveTheirBytes) {
  std::vector<Candidate> b = block();
  std::vector<Candidate> back = decode_candidates(encode_candidates(b));
  ASSERT_EQ(back.size(), b.size());
  for (size_t k = 0; k < b.size(); ++k) {
    EXPECT_EQ(back[k].passed, b[k].passed);
    EXPECT_EQ(back[k].id, b[k].id);
    EXPECT_EQ(back[k].fingerprint.text, b[k].fingerprint.text);
    EXPECT_EQ(back[k].fingerprint.signature, b[k].fingerprint.signature);
    EXPECT_EQ(back[k].fingerprint.structure, b[k].fingerprint.structure);
  }
  Deduplicator dedup(0.8);
  std::vector<BlockVerdict> round(3);  // the third: not needed (examined -1)
  round[0] = admit_block(dedup, b, 10);
  round[1] = admit_block(dedup, back, 10);  // every one a duplicate now
  std::vector<BlockVerdict> got = decode_verdicts(encode_verdicts(round));
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i].examined, round[i].examined);
    EXPECT_EQ(got[i].kept, round[i].kept);
    ASSERT_EQ(got[i].verdicts.size(), round[i].verdicts.size());
    for (size_t k = 0; k < got[i].verdicts.size(); ++k) {
      EXPECT_EQ(got[i].verdicts[k].duplicate, round[i].verdicts[k].duplicate);
      EXPECT_EQ(got[i].verdicts[k].of, round[i].verdicts[k].of);
    }
  }
  EXPECT_EQ(got[1].kept, 0);
  EXPECT_EQ(got[2].examined, -1);
}

TEST(BlockAdmission, ABrokenMessageIsAnError) {
  std::string c = encode_candidates(block());
  EXPECT_THROW(decode_candidates(c.substr(0, c.size() - 1)), InputError);
  EXPECT_THROW(decode_candidates(c + "x"), InputError);
  EXPECT_THROW(decode_candidates(""), InputError);
  Deduplicator dedup(0.8);
  std::string v = encode_verdicts({admit_block(dedup, block(), 10)});
  EXPECT_THROW(decode_verdicts(v.substr(0, v.size() - 2)), InputError);
  std::string huge(8, '\xff');  // a count no message of this size can hold
  EXPECT_THROW(decode_verdicts(huge), InputError);
  EXPECT_THROW(decode_candidates(huge), InputError);
}

}  // namespace
}  // namespace trex::ordata
