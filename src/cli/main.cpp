// The `verbatim` command: dispatches to the subcommands registered in cmd_*.cpp.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>

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
  app.set_version_flag("--version", VERBATIM_VERSION);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
  for (auto& [order, setup] : verbatim::cli::registry()) {
    size_t before = app.get_subcommands({}).size();
    auto run = setup(app);
    auto subs = app.get_subcommands({});
    if (subs.size() > before) commands.emplace_back(subs.back(), std::move(run));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
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
