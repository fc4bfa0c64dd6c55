// `spsim gantt CONFIG --out FILE.svg|.png`: a per-rank Gantt chart of one simulated step.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "analysis/json_reader.hpp"
#include "analysis/plot.hpp"
#include "analysis/simulate.hpp"
#include "cli/cluster_option.hpp"
#include "cli/commands.hpp"
#include "runtime/core/error.hpp"

namespace spsim::cli {

namespace {
struct GanttArgs {
  std::string config;
  std::string out;
  std::string cluster;
};
}  // namespace

Action add_gantt(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "gantt",
      "Simulate one step of the config and draw every rank's compute and communication streams as a\n"
      "Gantt chart (gnuplot; .svg or .png by the extension). Exit 0 on success, 2 on bad input.\n"
      "Example: spsim gantt configs/experiments/rsa-ring-dgx-a100.json --out out/rsa-ring.svg");
  auto args = std::make_shared<GanttArgs>();
  sub->add_option("CONFIG", args->config, "experiment config without a sweep (JSON)")->required();
  add_cluster_option(sub, args->cluster);
  sub->add_option("--out", args->out, "output image, .svg or .png")->required();
  return [args]() -> int {
    (void)analysis::find_gnuplot("--out");
    const auto config = load_config_with_cluster(args->config, args->cluster);
    // The Chrome trace is the replay's full timeline; it goes to a private temporary file.
    std::string path = (std::filesystem::temp_directory_path() / "spsim-gantt-XXXXXX").string();
    const int fd = mkstemp(path.data());
    if (fd < 0) throw InputError("--out", "cannot create a temporary file for the timeline");
    close(fd);
    struct Remove {
      std::string p;
      ~Remove() { std::filesystem::remove(p); }
    } remove{path};
    const auto summary = analysis::simulate(config, {path, false});
    const auto bars = analysis::gantt_from_chrome_trace(analysis::read_json_file(path, path));
    analysis::write_gantt(bars, config.name + ": one step (" + std::to_string(config.strategy.degree) + " ranks)",
                          args->out, "--out");
    std::cout << "wrote " << args->out << " (step " << summary.step_time_s * 1e3 << " ms)\n";
    return 0;
  };
}

}  // namespace spsim::cli
