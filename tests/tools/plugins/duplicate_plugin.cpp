// A plugin registering a model under a built-in name (matntm): refused, naming the plugin and the name.
#include <matmem/models/plugin.hpp>
#include <matmem/models/registry.hpp>

namespace {
void register_duplicate() {
  matmem::register_model("matntm", [](const matmem::Config&, const matmem::Task&, matmem::DType,
                                      std::uint64_t) -> std::unique_ptr<matmem::Model> { return nullptr; });
}
}  // namespace

MATMEM_PLUGIN(register_duplicate)
