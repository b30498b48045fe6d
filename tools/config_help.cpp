#include "matmem/tools/config_help.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <vector>

#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "matmem/models/training/config.hpp"

namespace matmem::tools {
namespace {

// Display columns of UTF-8 text: one per character (the docs' ε, ², … are one column each).
std::size_t columns(const std::string& s) {
  return std::size_t(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// `text` after `first` (already `columns(first)` wide), wrapped at `width`, continuation lines indented by
// `indent` spaces; a word longer than a line gets a line of its own.
std::string wrap(const std::string& first, const std::string& text, std::size_t indent, std::size_t width) {
  std::string out = first, word;
  std::size_t at = columns(first);
  bool line_empty = first.empty();
  std::istringstream words(text);
  while (words >> word) {
    const std::size_t w = columns(word);
    if (!line_empty && at + 1 + w > width) {
      out += "\n" + std::string(indent, ' ');
      at = indent;
      line_empty = true;
    }
    if (!line_empty) {
      out += ' ';
      ++at;
    }
    out += word;
    at += w;
    line_empty = false;
  }
  return out + "\n";
}

std::string group_of(const std::string& key) {
  const std::size_t dot = key.find('.');
  return dot == std::string::npos ? "" : key.substr(0, dot);
}

}  // namespace

int output_width() {
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS"); c && std::atoi(c) > 0) return std::atoi(c);
  return 100;
}

std::string config_help(int width_asked) {
  const std::size_t width = std::size_t(std::max(width_asked, 60));
  constexpr std::size_t kKey = 24, kDefault = 16, kMeaning = kKey + 1 + kDefault + 1;
  // The keys, each line after a key's first indented to the meaning's column.
  std::vector<std::string> key_lines;
  std::vector<std::pair<std::string, std::size_t>> groups;  // a prefix with more than 3 keys, and its first line
  for (const ConfigKey& k : config_keys()) {
    // The key and its default, padded to the meaning's column; a longer pair puts the meaning on a line of its own.
    std::string lead = fmt::format("{:<{}} {}", k.key, kKey, k.default_json);
    const bool fits = columns(lead) < kMeaning;
    if (fits) lead += std::string(kMeaning - 1 - columns(lead), ' ');
    const std::string range = describe_range(k.range);  // the values check_config() takes
    const std::string doc = range.empty() ? k.doc : k.doc + " [" + range + "]";
    const std::string text = fits ? wrap(lead, doc, kMeaning, width)
                                  : lead + "\n" + wrap(std::string(kMeaning - 1, ' '), doc, kMeaning, width);
    const std::string g = group_of(k.key);
    const auto n = std::count_if(config_keys().begin(), config_keys().end(),
                                 [&](const ConfigKey& o) { return group_of(o.key) == g; });
    if (!g.empty() && n > 3 && std::none_of(groups.begin(), groups.end(), [&](const auto& x) { return x.first == g; }))
      groups.push_back({g, key_lines.size()});
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) key_lines.push_back(line);
  }
  std::string presets_text;
  for (const Preset& p : presets())
    presets_text += wrap(fmt::format("  --model {} --task {}:", p.model, p.task), p.json, 4, width);

  // The index: its own lines, then a blank line and the header, before the first key.
  auto index_text = [&](std::size_t index_lines) {
    const std::size_t first_key = index_lines + 3;  // 1-based: the index, a blank line, the header
    std::string groups_text;
    for (const auto& [g, line] : groups) groups_text += fmt::format("{}{}.* {}", groups_text.empty() ? "" : ", ", g, first_key + line);
    return wrap("sections (by line):",
                fmt::format("keys {} ({}); presets {}", first_key, groups_text, first_key + key_lines.size() + 1), 2,
                width);
  };
  std::string index = index_text(1);
  index = index_text(std::size_t(std::count(index.begin(), index.end(), '\n')));  // its own length, settled

  std::string out = index + "\n" + fmt::format("{:<{}} {:<{}} {}\n", "key", kKey, "default", kDefault, "meaning");
  for (const std::string& line : key_lines) out += line + "\n";
  out += "\nPresets (applied before --config and --set):\n" + presets_text;
  return out;
}

}  // namespace matmem::tools
