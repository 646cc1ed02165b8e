#include "client/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace verbatim::client {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += ' ';  // not allowed in XML 1.0
        else out += c;
    }
  }
  return out;
}

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string tick_label(double v) {
  char buf[32];
  if (std::fabs(v) >= 100 || v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (std::fabs(v) >= 1) std::snprintf(buf, sizeof buf, "%.1f", v);
  else std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// 1, 2 or 5 times a power of ten, so that about five ticks cover [0, max].
double nice_step(double max) {
  if (!(max > 0)) return 1;
  double raw = max / 5;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

}  // namespace

std::string svg_line_charts(const std::string& title, const std::vector<PlotPanel>& panels) {
  const double pw = 440, ph = 320;              // one panel
  const double ml = 70, mr = 20, mt = 40, mb = 50;  // plot margins inside a panel
  const double top = 40, legend_h = 24;
  size_t n_series = 0;
  for (const auto& p : panels) n_series = std::max(n_series, p.series.size());
  const double width = pw * static_cast<double>(std::max<size_t>(1, panels.size()));
  const double height = top + ph + legend_h + 18 * static_cast<double>(n_series);

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + num(width) + "\" height=\"" +
       num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + num(width) + "\" height=\"" + num(height) + "\" fill=\"white\"/>\n";
  s += "<text x=\"" + num(width / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">" + xml_escape(title) + "</text>\n";

  for (size_t pi = 0; pi < panels.size(); ++pi) {
    const PlotPanel& panel = panels[pi];
    double ox = pw * static_cast<double>(pi), oy = top;
    double x0 = ox + ml, x1 = ox + pw - mr, y0 = oy + ph - mb, y1 = oy + mt;
    std::set<double> xs;
    double ymax = 0;
    for (const auto& se : panel.series)
      for (const auto& [x, y] : se.points) {
        if (x > 0) xs.insert(x);
        if (std::isfinite(y)) ymax = std::max(ymax, y);
      }
    double step = nice_step(ymax);
    double ytop = std::max(step, std::ceil(ymax / step) * step);
    double lx_min = xs.empty() ? 0 : std::log2(*xs.begin()), lx_max = xs.empty() ? 1 : std::log2(*xs.rbegin());
    auto px = [&](double x) {
      if (lx_max - lx_min < 1e-12) return (x0 + x1) / 2;
      return x0 + (std::log2(x) - lx_min) / (lx_max - lx_min) * (x1 - x0);
    };
    auto py = [&](double y) { return y0 - y / ytop * (y0 - y1); };

    s += "<g>\n";
    s += "<text x=\"" + num((x0 + x1) / 2) + "\" y=\"" + num(oy + 22) + "\" text-anchor=\"middle\" font-size=\"14\">" +
         xml_escape(panel.title) + "</text>\n";
    for (double y = 0; y <= ytop + step / 2; y += step) {  // horizontal grid and y ticks
      s += "<line x1=\"" + num(x0) + "\" y1=\"" + num(py(y)) + "\" x2=\"" + num(x1) + "\" y2=\"" + num(py(y)) +
           "\" stroke=\"#dddddd\"/>\n";
      s += "<text x=\"" + num(x0 - 6) + "\" y=\"" + num(py(y) + 4) + "\" text-anchor=\"end\">" + tick_label(y) + "</text>\n";
    }
    for (double x : xs) {
      s += "<line x1=\"" + num(px(x)) + "\" y1=\"" + num(y0) + "\" x2=\"" + num(px(x)) + "\" y2=\"" + num(y0 + 5) +
           "\" stroke=\"black\"/>\n";
      s += "<text x=\"" + num(px(x)) + "\" y=\"" + num(y0 + 18) + "\" text-anchor=\"middle\">" + tick_label(x) + "</text>\n";
    }
    s += "<line x1=\"" + num(x0) + "\" y1=\"" + num(y0) + "\" x2=\"" + num(x1) + "\" y2=\"" + num(y0) + "\" stroke=\"black\"/>\n";
    s += "<line x1=\"" + num(x0) + "\" y1=\"" + num(y0) + "\" x2=\"" + num(x0) + "\" y2=\"" + num(y1) + "\" stroke=\"black\"/>\n";
    s += "<text x=\"" + num((x0 + x1) / 2) + "\" y=\"" + num(y0 + 38) + "\" text-anchor=\"middle\">" +
         xml_escape(panel.x_label) + "</text>\n";
    s += "<text x=\"" + num(ox + 16) + "\" y=\"" + num((y0 + y1) / 2) + "\" text-anchor=\"middle\" transform=\"rotate(-90 " +
         num(ox + 16) + " " + num((y0 + y1) / 2) + ")\">" + xml_escape(panel.y_label) + "</text>\n";
    for (size_t si = 0; si < panel.series.size(); ++si) {
      const PlotSeries& se = panel.series[si];
      const char* color = kColors[si % (sizeof kColors / sizeof kColors[0])];
      std::vector<std::pair<double, double>> pts;
      for (const auto& p : se.points)
        if (p.first > 0 && std::isfinite(p.second)) pts.push_back(p);
      std::sort(pts.begin(), pts.end());
      std::string points;
      for (const auto& [x, y] : pts) {
        if (!points.empty()) points += ' ';
        points += num(px(x));
        points += ',';
        points += num(py(y));
      }
      s += "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"2\" points=\"" + points + "\">" +
           "<title>" + xml_escape(se.name) + "</title></polyline>\n";
      for (const auto& [x, y] : pts)
        s += "<circle cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"3\" fill=\"" + color + "\"/>\n";
    }
    s += "</g>\n";
  }
  // Legend: one entry per series of the first panel (every panel has the same servers).
  if (!panels.empty())
    for (size_t si = 0; si < panels[0].series.size(); ++si) {
      double y = top + ph + 12 + 18 * static_cast<double>(si);
      const char* color = kColors[si % (sizeof kColors / sizeof kColors[0])];
      s += "<line x1=\"" + num(ml) + "\" y1=\"" + num(y) + "\" x2=\"" + num(ml + 24) + "\" y2=\"" + num(y) +
           "\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
      s += "<text x=\"" + num(ml + 30) + "\" y=\"" + num(y + 4) + "\">" + xml_escape(panels[0].series[si].name) + "</text>\n";
    }
  s += "</svg>\n";
  return s;
}

}  // namespace verbatim::client
