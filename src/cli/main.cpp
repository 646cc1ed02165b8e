// The `verbatim` command: dispatches to the subcommands registered in cmd_*.cpp.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <string>

#include "cli/build_info.h"
#include "cli/commands.h"
#include "core/error.h"

namespace verbatim::cli {
namespace {
std::multimap<int, SetupFn>& registry() {
  static std::multimap<int, SetupFn> r;
  return r;
}
}  // namespace

Registrar::Registrar(int order, SetupFn fn) { registry().emplace(order, std::move(fn)); }

}  // namespace verbatim::cli

int main(int argc, char** argv) {
  CLI::App app{"verbatim: an LLM inference server whose same request gives the same tokens, bit for bit"};
  // The build's commit beside the version: an operator can tell which build a server runs.
  app.set_version_flag("--version", std::string(VERBATIM_VERSION) + " (commit " + verbatim::build_commit() + ")");
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
  for (auto& [order, setup] : verbatim::cli::registry()) {
    size_t before = app.get_subcommands({}).size();
    auto run = setup(app);
    auto subs = app.get_subcommands({});
    if (subs.size() > before) commands.emplace_back(subs.back(), std::move(run));
  }
  // `verbatim help` is --help; an unknown command is named (CLI11 says only "A subcommand is required").
  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    if (first == "help") {
      std::fputs(app.help().c_str(), stdout);
      return 0;
    }
    std::string names;
    bool known = false;
    for (auto& [sub, run] : commands) {
      known = known || sub->get_name() == first;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "verbatim: unknown command '%s' (commands: %s; see verbatim --help)\n", first.c_str(),
                   names.c_str());
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints the message (or the help, exit 0). A usage error exits 2, as argparse does and
    // as check / bench document for "could not run", not CLI11's own codes (105, 106, ...).
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (auto& [sub, run] : commands)
      if (sub->parsed()) return run();
  } catch (const verbatim::Error& e) {
    std::fprintf(stderr, "verbatim: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "verbatim: error: %s\n", e.what());
    return 1;
  }
  return 1;
}
