// `matmem gradcheck`: every registered op (or one) through gradcheck in float64, as a table.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "matmem/ops/registry.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tools/commands.hpp"
#include "matmem/tools/options.hpp"

namespace matmem::tools {
namespace {
struct Options {
  bool all = false;
  std::string op;
  std::string size = "all";
  std::uint64_t seed = 1234;
};

int run(const Options& o) {
  std::vector<const OpEntry*> ops;
  if (!o.op.empty()) {
    const OpEntry* e = find_op(o.op);
    if (!e) {
      std::string names;
      for (const OpEntry& x : op_registry()) names += (names.empty() ? "" : ", ") + x.name;
      throw Error(fmt::format("gradcheck: no op named {} (registered: {})", o.op, names));
    }
    ops.push_back(e);
  } else {
    for (const OpEntry& e : op_registry()) ops.push_back(&e);
  }
  std::vector<std::pair<std::string, SampleSize>> sizes;
  for (const auto& [label, size] : {std::pair{"small", SampleSize::small}, std::pair{"large", SampleSize::large},
                                     std::pair{"lanes", SampleSize::lanes}})
    if (o.size == "all" || o.size == label) sizes.push_back({label, size});

  fmt::print("{:<24} {:<6} {:>9} {:>13} {:>13}  {}\n", "op", "size", "elements", "max abs err", "max rel err", "result");
  int failed = 0;
  for (const OpEntry* e : ops)
    for (const auto& [label, size] : sizes) {
      GradcheckReport r = gradcheck_op(*e, size, o.seed);
      fmt::print("{:<24} {:<6} {:>9} {:>13.3e} {:>13.3e}  {}\n", e->name, label, r.elements_checked, r.max_abs_error,
                 r.max_rel_error, r.passed ? "pass" : "FAIL");
      if (!r.passed) {
        ++failed;
        fmt::print("  {}\n", r.str());
      }
    }
  fmt::print("{} checks, {} failed (float64 central differences, random upstream gradient{})\n",
             ops.size() * sizes.size(), failed,
             o.size == "all" || o.size == "small" ? "; small sizes: full Jacobian" : "");
  return failed ? 1 : 0;
}
}  // namespace

void add_gradcheck_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("gradcheck", "Check every op's gradient against central differences");
  cmd->add_flag("--all", o->all, "Check every registered op (the default when --op is not given)");
  cmd->add_option("--op", o->op, "Check one op by name");
  cmd->add_option("--size", o->size,
                  "Sample sizes: small (below any SIMD width), large (past several), lanes (batch 19: the memory "
                  "ops' SIMD lanes over the batch, full and tail) or all")
      ->check(CLI::IsMember({"small", "large", "lanes", "all"}))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed for the sample inputs")->capture_default_str()->check(whole_number(0, kMaxSeed));
  cmd->callback([o] {
    if (int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace matmem::tools
