// trex recipe run FILE: the CPT -> SFT -> serve -> eval chain of a recipe, each stage cached by
// the hash of its inputs, then report.md and report.html (src/trex/recipe/recipe.h).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "trex/recipe/recipe.h"
#include "trex/util/error.h"

namespace trex::cli {

namespace {

struct RecipeArgs {
  std::string file, out;
  bool quiet = false;
};

int run_recipe_command(const RecipeArgs& a) {
  const recipe::Recipe r = recipe::load_recipe(a.file);
  recipe::RunOptions o;
  o.out_dir = a.out.empty() ? "runs/recipe-" + r.name : a.out;
  std::error_code ec;
  o.trex = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw InputError("cannot find the trex binary (/proc/self/exe)");
  if (!a.quiet) o.log = [](const std::string& line) { std::fprintf(stderr, "recipe: %s\n", line.c_str()); };
  const std::vector<recipe::StageResult> results = recipe::run_recipe(r, o);
  recipe::write_report(r, o.out_dir, results);
  int cached = 0;
  for (const auto& s : results) cached += s.cached;
  std::printf("trex recipe: %s: %zu stages (%d cached) in %s\n", r.name.c_str(), results.size(), cached, o.out_dir.c_str());
  for (const auto& s : results)
    if (s.kind == "serve" && !s.skipped.empty()) {
      std::printf("  %-16s skipped: %s\n", s.details.value("label", s.name).c_str(), s.skipped.c_str());
    } else if (s.kind == "serve") {
      const long k = s.details.value("correct", 0L), n = s.details.value("items", 0L);
      const auto [lo, hi] = recipe::wilson_interval(k, n);
      std::printf("  %-16s Pass@1 %.3f (%ld/%ld, 95%% [%.3f, %.3f])\n", s.details.value("label", s.name).c_str(),
                  s.details.value("pass_at_1", 0.0), k, n, lo, hi);
    }
  std::printf("  report: %s/report.md, %s/report.html\n", o.out_dir.c_str(), o.out_dir.c_str());
  return 0;
}

void add_recipe(CLI::App& app, Action* action) {
  CLI::App* cmd = app.add_subcommand("recipe", "CPT -> SFT -> serve -> eval chains, each stage cached, with a report");
  cmd->require_subcommand(1);
  auto args = std::make_shared<RecipeArgs>();
  CLI::App* run = cmd->add_subcommand("run", "Run a recipe's stages (reusing those whose inputs did not change)");
  run->add_option("file", args->file, "Recipe TOML (configs/recipe/)")->required();
  run->add_option("--out", args->out, "Output folder (default runs/recipe-NAME)");
  run->add_flag("--quiet", args->quiet, "No per-stage lines");
  run->callback([args, action] { *action = [args] { return run_recipe_command(*args); }; });
}

const CommandRegistration kRecipeRegistration(97, add_recipe);

}  // namespace

}  // namespace trex::cli
