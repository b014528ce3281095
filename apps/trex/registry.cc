// The lists behind CommandRegistration and DemoStepRegistration. They are function-local
// statics so that registrations in other files' static initializers find them built,
// whatever order the linker chose for those initializers.
#include <algorithm>

#include "commands.h"

namespace trex::cli {

namespace {

std::vector<std::pair<int, AddCommand>>& commands() {
  static std::vector<std::pair<int, AddCommand>> list;
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
