// The `osprey` command-line tool: `osprey devices` (what the runtime sees), `osprey doctor` (why a GPU is or is
// not used; exit code 0 only when one is usable), `osprey version`.
#include <iostream>

#include <CLI/CLI.hpp>

#include <osprey/doctor.h>
#include <osprey/osprey.h>

int main(int argc, char** argv) {
  CLI::App app{"Osprey: Keras-style training on a TensorFlow-style device runtime"};
  app.require_subcommand(1);
  auto* devices = app.add_subcommand("devices", "List the logical devices and the physical devices behind them");
  auto* doctor = app.add_subcommand("doctor", "Explain whether this process can use a GPU, and if not why");
  auto* version = app.add_subcommand("version", "Print Osprey's version");
  CLI11_PARSE(app, argc, argv);
  try {
    if (*version) {
      std::cout << "Osprey " << osprey::version() << "\n";
      return 0;
    }
    if (*devices) {
      std::cout << osprey::doctor::devices_table();
      return 0;
    }
    if (*doctor) {
      auto report = osprey::doctor::run();
      std::cout << osprey::doctor::format(report);
      return report.gpu_usable ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "osprey: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
