// Endpoint distillation (`trex data distil`): a teacher model behind any OpenAI-compatible chat
// endpoint writes the formulations, and only the ones the solver verifies become SFT rows.
//
// Each sample of a `trex data gen` corpus (its statement already rendered and verified) is sent
// with a prompt template (configs/eval/distil.txt by default); the reply's formulation is
// extracted and passes the gates a reference reconstruction passes, in this order, the first
// failure naming the sample's rejection reason:
//   endpoint_error        no reply after the client's retries (transport errors, 408, 429, 5xx,
//                         a body that is not a chat completion)
//   no_formulation        no python, LP or MPS formulation in the reply
//   execution_failed      the program did not run in oreval's sandbox, or built no model
//   contract_violation    the model's variable counts (all, and integer or binary) differ from
//                         the reference model's
//   direction_mismatch    the objective sense differs
//   status_mismatch,      solved, its status or objective disagrees with the corpus answer
//   objective_mismatch    (under the chosen comparator)
//   duplicate_exact       the same formulation text as an earlier accepted reply
// Accepted replies become chat rows (the question as asked, the reply, with the reasoning in
// <think>...</think> before it when the server sent one); every rejection is kept in the
// manifest with its reason and detail. The chat client's cache under out/cache makes a rerun
// ask only for what is missing (resume); outputs are written to temporary names and renamed.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/chat/chat_client.h"
#include "trex/oreval/execute.h"
#include "trex/oreval/scoring.h"

namespace trex::ordata {

struct DistilOptions {
  std::string corpus_dir;   // written by trex data gen
  std::string out_dir;      // sft.jsonl, manifest.json, cache/
  chat::ChatConfig chat;    // cache_dir defaults to out_dir/cache
  std::string template_file;  // "" = configs/eval/distil.txt
  double temperature = 0;
  double top_p = 1;
  int max_tokens = 4096;
  std::optional<int64_t> seed;
  long limit = 0;           // only the first N samples (0: all)
  int jobs = 2;             // sandboxed executions and solves at once
  oreval::ExecOptions exec;
  oreval::Comparator mode = oreval::Comparator::kSirl;
  std::string solver = "auto";
  bool progress = false;
};

struct DistilRejection {
  std::string id;
  std::string reason;
  std::string detail;
};

struct DistilReport {
  long samples = 0, accepted = 0, from_cache = 0, endpoint_errors = 0;
  std::map<std::string, long> per_reason;
  std::vector<DistilRejection> rejected;
  std::string sft_path, manifest_path;
  double wall_seconds = 0;
};

// Throws InputError naming the corpus file and line for an unreadable corpus, or the template.
DistilReport distil(const DistilOptions& options);

}  // namespace trex::ordata
