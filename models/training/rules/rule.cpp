#include "matmem/models/training/rules/rule.hpp"

#include <cctype>
#include <cstdlib>

namespace matmem {

bool parse_state_fields(const std::string& text, std::initializer_list<std::variant<std::int64_t*, double*>> out) {
  const char* p = text.c_str();
  for (auto field = out.begin(); field != out.end(); ++field) {
    if (field != out.begin() && !std::isspace(static_cast<unsigned char>(*p))) return false;
    char* end = nullptr;
    if (std::int64_t* const* i = std::get_if<std::int64_t*>(&*field)) **i = std::strtoll(p, &end, 10);
    else *std::get<double*>(*field) = std::strtod(p, &end);
    if (end == p) return false;
    p = end;
  }
  return *p == '\0';
}

}  // namespace matmem
