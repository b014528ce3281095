// `trex demo`, serve-and-evaluate step: the training step's checkpoint served by `trex serve`
// on a free local port, two OR questions put to it by `trex eval gen` through the
// OpenAI-compatible HTTP API (greedy, a few tokens), the server stopped with SIGTERM, and the
// completions scored by `trex eval run`. Every part runs as a separate trex process, as a user
// would run them. The 30-step licence-text model writes no program, so Pass@1 is 0: the step
// checks the loop (served, answered, drained, scored), not the model.
#pragma once

#include <string>

namespace trex::cli {

// `run_dir`: a `trex train` run folder (its newest checkpoint is served); `work_dir`: a scratch
// folder for the benchmark file and the eval outputs. Prints its lines; 0 when every part worked.
int serve_and_evaluate_demo(const std::string& run_dir, const std::string& work_dir);

}  // namespace trex::cli
