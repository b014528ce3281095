// The lists behind CommandRegistration, SubcommandRegistration and DemoStepRegistration. They
// are function-local statics so that registrations in other files' static initializers find
// them built, whatever order the linker chose for those initializers.
#include <algorithm>
#include <string>

#include "commands.h"

namespace trex::cli {

namespace {

std::vector<std::pair<int, AddCommand>>& commands() {
  static std::vector<std::pair<int, AddCommand>> list;
  return list;
}

struct Subcommand {
  std::string command;
  int order;
  AddCommand add;
};

std::vector<Subcommand>& subcommands() {
  static std::vector<Subcommand> list;
  return list;
}

std::vector<std::pair<int, DemoStep>>& demo_steps() {
  static std::vector<std::pair<int, DemoStep>> list;
  return list;
}

}  // namespace

CommandRegistration::CommandRegistration(int order, AddCommand add) {
  commands().emplace_back(order, add);
}

void add_registered_commands(CLI::App& app, Action* action) {
  auto& list = commands();
  std::stable_sort(list.begin(), list.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [order, add] : list) add(app, action);
}

SubcommandRegistration::SubcommandRegistration(const char* command, int order, AddCommand add) {
  subcommands().push_back({command, order, add});
}

void add_registered_subcommands(const char* command, CLI::App& app, Action* action) {
  auto& list = subcommands();
  std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  for (const Subcommand& s : list)
    if (s.command == command) s.add(app, action);
}

DemoStepRegistration::DemoStepRegistration(int order, DemoStep step) {
  demo_steps().emplace_back(order, step);
}

const std::vector<std::pair<int, DemoStep>>& registered_demo_steps() {
  auto& list = demo_steps();
  std::stable_sort(list.begin(), list.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return list;
}

}  // namespace trex::cli
