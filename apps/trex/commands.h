// The subcommands of `trex`. Each adds itself to the CLI11 app and, when chosen on the
// command line, leaves in *action the function that runs it and returns the exit code.
// Errors a user can cause are thrown as trex::InputError; main() prints them.
#pragma once

#include <functional>
#include <utility>
#include <vector>

// CLI11 is header-only and costs seconds in every file that includes it; only the files that
// add options include it (a demo step does not need it).
namespace CLI {
class App;
}

namespace trex::cli {

using Action = std::function<int()>;

using AddCommand = void (*)(CLI::App& app, Action* action);

// Each subcommand's file registers itself with one static CommandRegistration, so a part
// that lands later adds its own file and edits nothing shared. `order` is the position in
// `trex --help`: demo 10, solve 20, data 30, eval 40, hw 50, kernels 60, model 70,
// train 80, generate 90, profile 100, plan 110, aura 120.
struct CommandRegistration {
  CommandRegistration(int order, AddCommand add);
};

// Adds every registered subcommand to app, in order.
void add_registered_commands(CLI::App& app, Action* action);

// A second level registers the same way, under its command's name: `trex eval gen` lives in a
// file of its own (it needs the chat client, libcurl and its 25 libraries) that trex-eval, the
// lean program for `trex eval run|list|equiv`, does not link. `order` is the position in the
// command's help.
struct SubcommandRegistration {
  SubcommandRegistration(const char* command, int order, AddCommand add);
};

// Adds to the CLI11 app of `command` every subcommand registered under that name, in order.
void add_registered_subcommands(const char* command, CLI::App& app, Action* action);

// `trex demo` runs the lp step, then every registered step in order. A step prints its
// own lines and returns 0 when everything it checked agreed. The same registration
// pattern as commands: a part's demo step lives in that part's apps/trex file.
using DemoStep = int (*)();
struct DemoStepRegistration {
  DemoStepRegistration(int order, DemoStep step);
};
const std::vector<std::pair<int, DemoStep>>& registered_demo_steps();

// Exit code when the input was fine but no back end could solve it (unsupported or failed).
inline constexpr int kSolverFailedExitCode = 3;

}  // namespace trex::cli
