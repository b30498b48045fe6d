// A shared library that registers a model but never exports it with MATMEM_PLUGIN: refused.
#include <matmem/models/registry.hpp>

void register_forgotten() {}
