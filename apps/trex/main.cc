// trex: one binary, one subcommand per part. Usage errors and bad input end here as a
// single line on stderr and exit code 2, whichever subcommand raised them.
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "trex/util/data_dir.h"
#include "trex/util/error.h"
#include "trex/util/io_error.h"

int main(int argc, char** argv) {
  // Under a file size limit (ulimit -f) a write past it raises SIGXFSZ, whose default action
  // ends the process without a word; ignored, the write fails with EFBIG and the error names
  // the file like any other failed write.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"trex: MoE post-training systems and solver-grounded OR tools"};
  app.set_version_flag("--version", std::string("trex ") + trex::version());
  app.require_subcommand(1);
  app.fallthrough();

  trex::cli::Action action;
  trex::cli::add_registered_commands(app, &action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty()) {
      bool known = false;
      for (const CLI::App* sub : app.get_subcommands({})) known |= sub->get_name() == argv[1];
      if (!known) what = std::string("unknown command '") + argv[1] + "'";
    }
    std::fprintf(stderr, "trex: error: %s (see trex --help)\n", what.c_str());
    return trex::kUsageExitCode;
  }

  try {
    return action ? action() : trex::kUsageExitCode;
  } catch (const trex::InputError& e) {
    std::fprintf(stderr, "trex: error: %s\n", e.what());
    return trex::kUsageExitCode;
  } catch (const trex::IoError& e) {
    std::fprintf(stderr, "trex: error: %s\n", e.what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A directory that cannot be made or listed (read-only, full): the path and the reason.
    std::fprintf(stderr, "trex: error: %s: %s\n", e.path1().string().c_str(), e.code().message().c_str());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "trex: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trex: internal error: %s\n", e.what());
    return 1;
  }
}
