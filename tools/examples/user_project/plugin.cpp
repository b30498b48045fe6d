// The plugin: loaded with `matmem --plugin build/libmine.so <command> ...`, it adds the model `memrnn`, its
// config keys and the op `matrix_square` to every matmem command (train, eval, sweep, gradcheck, bench ops, ...).
#include <matmem/models/plugin.hpp>
#include <matmem/models/registry.hpp>
#include <matmem/models/training/config.hpp>
#include <matmem/ops/registry.hpp>

#include "matrix_square.hpp"
#include "memory_rnn.hpp"

namespace {
void register_mine() {
  matmem::register_config_key({"memrnn.slots", "16", "memrnn: memory slots N"});
  matmem::register_config_key({"memrnn.slot", "\"6x6\"", "memrnn: one memory slot's size, RxC"});
  matmem::register_model("memrnn", &mine::make_memory_rnn);
  matmem::register_op(mine::matrix_square_entry());
}
}  // namespace

MATMEM_PLUGIN(register_mine)
