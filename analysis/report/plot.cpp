// gnuplot scripts and data files for line plots and Gantt charts, rendered in a temporary folder.
#include "analysis/report/plot.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "runtime/core/error.hpp"

namespace spsim::analysis {

namespace fs = std::filesystem;

namespace {

// A gnuplot double-quoted string (backslash and quote escaped; used with `noenhanced`).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A folder made by mkdtemp, removed with its files when the guard goes.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "spsim-plot-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot create a temporary folder for gnuplot");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string terminal_for(const fs::path& out, const std::string& where) {
  const std::string ext = out.extension().string();
  const std::string size = " size " + std::to_string(plot_width) + "," + std::to_string(plot_height);
  if (ext == ".svg")
    return "set terminal svg" + size + " dynamic noenhanced font \"sans,12\" background \"white\"\n";
  if (ext == ".png")
    return "set terminal pngcairo" + size + " noenhanced font \"sans,11\" background \"white\"\n";
  throw InputError(where, "'" + out.string() + "' must end in .svg or .png");
}

void run_gnuplot(const std::string& script, const TempDir& dir, const fs::path& out,
                 const std::string& where) {
  const fs::path gnuplot = find_gnuplot(where);
  const fs::path script_path = dir.path() / "plot.gp", err_path = dir.path() / "stderr.txt";
  std::ofstream(script_path) << script;
  const std::string cmd =
      "'" + gnuplot.string() + "' '" + script_path.string() + "' 2> '" + err_path.string() + "'";
  const int rc = std::system(cmd.c_str());
  std::ifstream err_in(err_path);
  const std::string err((std::istreambuf_iterator<char>(err_in)), std::istreambuf_iterator<char>());
  if (rc != 0 || !fs::exists(out))
    throw InputError(where,
                     "gnuplot could not write '" + out.string() + "': " + (err.empty() ? "no message" : err));
}

std::string output_line(const fs::path& out) {
  return "set output " + quoted(fs::absolute(out).string()) + "\n";
}

}  // namespace

fs::path find_gnuplot(const std::string& where) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const fs::path candidate = fs::path(dir) / "gnuplot";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw InputError(where,
                   "gnuplot is not on PATH; install it (scripts/setup installs the Debian package) or "
                   "leave out " +
                       where);
}

void write_line_plot(const LinePlot& plot, const fs::path& out, const std::string& where) {
  std::string script = terminal_for(out, where);
  const TempDir dir;
  script += output_line(out);
  script += "set title " + quoted(plot.title) + "\nset xlabel " + quoted(plot.x_label) + "\nset ylabel " +
            quoted(plot.y_label) + "\nset grid\n";
  // Many long series names would squeeze the plot: put the key under it.
  script += plot.series.size() > 6 ? "set key outside below\n" : "set key outside right top\n";
  if (plot.log_x) script += "set logscale x 2\n";
  if (plot.log_y) script += "set logscale y 10\n";
  std::string plot_cmd;
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const fs::path data = dir.path() / ("series" + std::to_string(i) + ".dat");
    std::ofstream f(data);
    f.precision(17);
    for (const auto& [x, y] : plot.series[i].points) f << x << ' ' << y << '\n';
    plot_cmd += (i == 0 ? "plot " : ", ") + quoted(data.string()) +
                " using 1:2 with linespoints lw 2 pt 7 title " + quoted(plot.series[i].name);
  }
  if (plot.series.empty()) throw InputError(where, "nothing to plot: no point of the sweep has a result");
  script += plot_cmd + "\n";
  run_gnuplot(script, dir, out, where);
}

void write_gantt(const std::vector<GanttBar>& bars, const std::string& title, const fs::path& out,
                 const std::string& where) {
  std::string script = terminal_for(out, where);
  if (bars.empty()) throw InputError(where, "nothing to draw: the step has no ops");
  const TempDir dir;
  int ranks = 0;
  double end = 0;
  for (const auto& b : bars) ranks = std::max(ranks, b.rank + 1), end = std::max(end, b.end_s);
  const bool ms = end >= 1e-3;
  const double unit = ms ? 1e3 : 1e6;
  // boxxyerror rows: x y xlow xhigh ylow yhigh. Compute in the lower half of a rank's row, comm above.
  for (int stream = 0; stream < 2; ++stream) {
    std::ofstream f(dir.path() / (stream == 0 ? "compute.dat" : "comm.dat"));
    f.precision(12);
    for (const auto& b : bars) {
      if (b.comm != (stream == 1)) continue;
      const double lo = b.rank + (b.comm ? 0.02 : -0.42), hi = lo + 0.4;
      f << b.start_s * unit << ' ' << b.rank << ' ' << b.start_s * unit << ' ' << b.end_s * unit << ' ' << lo
        << ' ' << hi << '\n';
    }
    f << "NaN NaN NaN NaN NaN NaN\n";  // an empty stream still yields a (blank) series
  }
  script += output_line(out);
  script += "set title " + quoted(title) + "\nset xlabel " + quoted(ms ? "time (ms)" : "time (µs)") +
            "\nset ylabel \"rank\"\nset yrange [-0.6:" + std::to_string(ranks - 1) +
            ".6]\nset ytics 1\n"
            "set xrange [0:" +
            std::to_string(end * unit) + "]\nset key outside right top\nset grid x\n";
  script +=
      "plot " + quoted((dir.path() / "compute.dat").string()) +
      " using 1:2:3:4:5:6 with boxxyerror fs solid 0.8 noborder lc rgb \"#3b75af\" title \"compute\", " +
      quoted((dir.path() / "comm.dat").string()) +
      " using 1:2:3:4:5:6 with boxxyerror fs solid 0.8 noborder lc rgb \"#ef8636\" title \"communication\"\n";
  run_gnuplot(script, dir, out, where);
}

}  // namespace spsim::analysis
