#pragma once
// Line charts written as plain SVG 1.1 (no library): panels side by side, one line per series,
// x on a log2 scale (users 1, 8, 32, 64 spread evenly), y from 0.
#include <string>
#include <utility>
#include <vector>

namespace verbatim::client {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), x > 0
};

struct PlotPanel {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<PlotSeries> series;
};

std::string svg_line_charts(const std::string& title, const std::vector<PlotPanel>& panels);

// Escapes &, <, >, " and ' for text and attribute values.
std::string xml_escape(const std::string& s);

}  // namespace verbatim::client
