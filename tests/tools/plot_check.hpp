// Reading back the pictures tools/plot writes, for the tests: a PNG's header and pixels (libpng), an SVG's
// root, nesting and text.
#pragma once
#include <png.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace matmem::testing {

inline std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct PngHeader {
  bool signature = false;
  std::uint32_t width = 0, height = 0;
};
// The 8-byte signature and the IHDR chunk, read from the bytes themselves.
inline PngHeader png_header(const std::filesystem::path& path) {
  const std::string b = file_bytes(path);
  PngHeader h;
  h.signature = b.size() >= 24 && b.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0 && b.compare(12, 4, "IHDR") == 0;
  if (!h.signature) return h;
  auto be32 = [&](std::size_t at) {
    return std::uint32_t(std::uint8_t(b[at])) << 24 | std::uint32_t(std::uint8_t(b[at + 1])) << 16 |
           std::uint32_t(std::uint8_t(b[at + 2])) << 8 | std::uint32_t(std::uint8_t(b[at + 3]));
  };
  h.width = be32(16);
  h.height = be32(20);
  return h;
}

struct Pixels {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  // row-major, 3 bytes a pixel
  const std::uint8_t* at(int x, int y) const { return rgb.data() + 3 * (std::size_t(y) * std::size_t(width) + std::size_t(x)); }
  double luminance(int x, int y) const {
    const std::uint8_t* p = at(x, y);
    return 0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2];
  }
};
// Decoded with libpng, composited on white.
inline Pixels read_png(const std::filesystem::path& path) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  Pixels p;
  if (!png_image_begin_read_from_file(&image, path.string().c_str())) return p;
  image.format = PNG_FORMAT_RGB;
  p.width = int(image.width);
  p.height = int(image.height);
  p.rgb.resize(PNG_IMAGE_SIZE(image));
  png_color white{255, 255, 255};
  if (!png_image_finish_read(&image, &white, p.rgb.data(), 0, nullptr)) return {};
  return p;
}

// Well-formed enough for the tests: every element opened is closed, in order, and the root is <svg>.
inline bool svg_well_formed(const std::string& s, std::string* root = nullptr) {
  std::vector<std::string> open;
  std::string first;
  std::size_t k = 0;
  while ((k = s.find('<', k)) != std::string::npos) {
    if (s.compare(k, 4, "<!--") == 0) {
      k = s.find("-->", k);
      if (k == std::string::npos) return false;
      continue;
    }
    const std::size_t end = s.find('>', k);
    if (end == std::string::npos) return false;
    const std::string tag = s.substr(k + 1, end - k - 1);
    k = end + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1, tag.find_first_of(" \t\r\n") - 1);
      if (open.empty() || open.back() != name) return false;
      open.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \t\r\n/"));
    if (first.empty()) first = name;
    if (tag.back() != '/') open.push_back(name);
  }
  if (root) *root = first;
  return open.empty() && !first.empty();
}

// The value of attribute `name` on the root <svg> element.
inline std::string svg_root_attribute(const std::string& s, const std::string& name) {
  const std::size_t root = s.find("<svg");
  const std::size_t end = s.find('>', root);
  const std::size_t at = s.find(" " + name + "=\"", root);
  const std::size_t at2 = s.find("\n" + name + "=\"", root);
  std::size_t a = std::min(at, at2);
  if (a == std::string::npos || a > end) {
    a = s.find(name + "=\"", root);
    if (a == std::string::npos || a > end) return "";
  } else {
    a += 1;
  }
  a += name.size() + 2;
  return s.substr(a, s.find('"', a) - a);
}

// Every <text> element's characters (entities decoded), one string per element.
inline std::vector<std::string> svg_texts(const std::string& s) {
  std::vector<std::string> out;
  std::size_t k = 0;
  while ((k = s.find("<text", k)) != std::string::npos) {
    const std::size_t end = s.find("</text>", k);
    if (end == std::string::npos) break;
    std::string text;
    bool in_tag = false;
    for (std::size_t i = k; i < end; ++i) {
      const char c = s[i];
      if (c == '<') in_tag = true;
      else if (c == '>') in_tag = false;
      else if (!in_tag) {
        if (c == '&') {
          const std::size_t semi = s.find(';', i);
          const std::string e = s.substr(i + 1, semi - i - 1);
          unsigned long cp = 0;
          if (e == "amp") cp = '&';
          else if (e == "lt") cp = '<';
          else if (e == "gt") cp = '>';
          else if (e == "quot") cp = '"';
          else if (e == "apos") cp = '\'';
          else if (e.size() > 2 && e[0] == '#' && (e[1] == 'x' || e[1] == 'X')) cp = std::stoul(e.substr(2), nullptr, 16);
          else if (e.size() > 1 && e[0] == '#') cp = std::stoul(e.substr(1));
          if (cp < 0x80) text += char(cp);
          else if (cp < 0x800) text += char(0xC0 | (cp >> 6)), text += char(0x80 | (cp & 0x3F));
          else text += char(0xE0 | (cp >> 12)), text += char(0x80 | ((cp >> 6) & 0x3F)), text += char(0x80 | (cp & 0x3F));
          i = semi;
        } else {
          text += c;
        }
      }
    }
    out.push_back(text);
    k = end + 7;
  }
  return out;
}

inline bool svg_has_text(const std::string& s, const std::string& wanted) {
  for (const std::string& t : svg_texts(s))
    if (t.find(wanted) != std::string::npos) return true;
  return false;
}

}  // namespace matmem::testing
