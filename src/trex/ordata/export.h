// The corpus file formats (docs/data.md documents them field by field).
//
//   data/part-BBBBB.jsonl  one sample per line (sample_json)
//   cpt/part-BBBBB.jsonl   {"id", "text"}: statement, formulation and solution narrative
//   sft/part-BBBBB.jsonl   {"messages": [user, assistant], "metadata": {...}}
//
// Lines hold no timings and no host names, so the same config gives the same bytes.
#pragma once

#include <string>

#include "nlohmann/json.hpp"
#include "trex/ordata/config.h"
#include "trex/ordata/sample.h"

namespace trex::ordata {

inline constexpr int kSampleSchemaVersion = 1;

nlohmann::ordered_json sample_json(const Sample& s, const CorpusConfig& config);
nlohmann::ordered_json cpt_json(const Sample& s);
nlohmann::ordered_json sft_json(const Sample& s);

// One JSON value per line; invalid UTF-8 cannot occur (all text is generated ASCII).
std::string jsonl_line(const nlohmann::ordered_json& j);

}  // namespace trex::ordata
