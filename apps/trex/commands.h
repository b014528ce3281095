// The subcommands of `trex`. Each adds itself to the CLI11 app and, when chosen on the
// command line, leaves in *action the function that runs it and returns the exit code.
// Errors a user can cause are thrown as trex::InputError; main() prints them.
#pragma once

#include <functional>

#include "CLI/CLI.hpp"

namespace trex::cli {

using Action = std::function<int()>;

void add_demo_command(CLI::App& app, Action* action);
void add_solve_command(CLI::App& app, Action* action);
void add_hw_command(CLI::App& app, Action* action);

// Exit code when the input was fine but no back end could solve it (unsupported or failed).
inline constexpr int kSolverFailedExitCode = 3;

}  // namespace trex::cli
