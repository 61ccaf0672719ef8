// Internal to the exporters: the tree a flame graph is drawn from and the SVG page it is drawn
// on (layout, legend, search box, zoom script), shared by `report --format svg` and the
// differential flame graph of `perfscope diff`, which differ in where the tree comes from and
// how frames are coloured.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace perfscope::export_detail {

enum class FrameKind : std::uint8_t { other, user, inlined, kernel, unknown };

struct Rgb {
  int r, g, b;
};

Rgb hsl_to_rgb(double hue, double saturation, double lightness);

struct FlameNode {
  std::uint32_t label = 0;
  std::uint32_t depth = 0;
  std::uint64_t samples = 0;  // the width
  std::uint64_t start = 0;    // set by the layout
  std::vector<std::uint32_t> children;
  std::uint64_t base_samples = 0;  // a differential graph's other profile; 0 otherwise
};

// Frames of one name (and kind) under one parent are one node; node 0 is the root, "all".
class FlameTree {
 public:
  FlameTree();
  std::uint32_t label(std::string name, FrameKind kind);
  std::uint32_t child(std::uint32_t parent, std::uint32_t label);

  std::vector<FlameNode> nodes;
  std::vector<std::string> names;  // by label
  std::vector<FrameKind> kinds;

 private:
  std::unordered_map<std::string, std::uint32_t> label_index_;
  std::unordered_map<std::uint64_t, std::uint32_t> child_of_;
};

struct FlameGraphLook {
  std::string title = "Flame Graph";
  std::string subtitle;
  std::vector<std::pair<Rgb, std::string>> legend;
  std::function<Rgb(const FlameTree&, const FlameNode&)> colour;
  // The words after the name in a frame's tooltip, inside its parentheses: "12 samples, 3.40 %".
  std::function<std::string(const FlameNode&, std::uint64_t total)> details;
};

// Lays the tree out (siblings by name) and writes the page.
void write_flame_tree_svg(FlameTree& tree, const FlameGraphLook& look, std::ostream& out);

}  // namespace perfscope::export_detail
