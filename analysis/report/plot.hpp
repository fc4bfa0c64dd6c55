// Plots through gnuplot: line plots (step time vs a swept value, one series per variant) and a per-rank
// Gantt chart of one simulated step. Data and a script go to a fresh temporary folder, gnuplot renders
// SVG (terminal svg) or PNG (terminal pngcairo) by the output's extension, and the folder is removed.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace spsim::analysis {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), plotted in this order
};

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  bool log_y = false;
  std::vector<PlotSeries> series;
};

// One bar of a Gantt chart: an op on a rank's compute or communication stream.
struct GanttBar {
  int rank = 0;
  bool comm = false;  // communication stream (drawn in the upper half of the rank's row)
  double start_s = 0;
  double end_s = 0;
};

// PNG images are this size (pixels); SVGs use it as their viewport.
inline constexpr int plot_width = 900;
inline constexpr int plot_height = 560;

// The gnuplot binary on PATH; InputError at `where` (the option that asked for a plot) when missing.
[[nodiscard]] std::filesystem::path find_gnuplot(const std::string& where);

// Renders to `out` (.svg or .png; any other extension is an InputError at `where`).
void write_line_plot(const LinePlot& plot, const std::filesystem::path& out,
                     const std::string& where = "--plot");
void write_gantt(const std::vector<GanttBar>& bars, const std::string& title,
                 const std::filesystem::path& out, const std::string& where = "--gantt");

}  // namespace spsim::analysis
