#pragma once
// Each src/cli/cmd_*.cpp registers one subcommand with a static Registrar, so adding a command
// touches no shared file.
#include <functional>
#include <string>
#include <vector>

namespace CLI { class App; }

namespace verbatim::cli {

// setup adds the subcommand to the app and returns a callback run when it was chosen;
// the callback returns the process exit code.
using SetupFn = std::function<std::function<int()>(CLI::App& app)>;

struct Registrar {
  Registrar(int order, SetupFn fn);
};

}  // namespace verbatim::cli
