// The corpus file formats (docs/data.md documents them field by field).
//
//   data/part-BBBBB.jsonl  one sample per line (sample_json)
//   cpt/part-BBBBB.jsonl   {"id", "text"}: statement, formulation and solution narrative
//   sft/part-BBBBB.jsonl   {"messages": [user, assistant], "metadata": {...}}; the answer is the
//                          model, program and result, or (sft_view "program") the program alone
//
// Lines hold no timings and no host names, so the same config gives the same bytes.
#pragma once

#include <string>

#include "trex/ordata/config.h"
#include "trex/ordata/sample.h"

namespace trex::ordata {

inline constexpr int kSampleSchemaVersion = 1;

// Each returns one JSON object and a newline. All text is generated ASCII, so no line can
// hold invalid UTF-8.
std::string sample_line(const Sample& s, const CorpusConfig& config);
std::string cpt_line(const Sample& s);
std::string sft_line(const Sample& s, CorpusConfig::SftView view = CorpusConfig::kSftFull);

}  // namespace trex::ordata
