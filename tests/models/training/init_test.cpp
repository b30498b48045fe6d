// The config key init: a run started from another run's parameters (Trainer::start_from). Its model starts
// with the source's last parameters bit for bit (from the run directory, its checkpoint file or its best
// parameters), its optimiser state, step and data stream are its own, a resume of it does not read the source
// again, and a source of another model, a missing one and a file that is not a checkpoint are refused naming
// the file and the parameter.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "matmem/runtime/safetensors.hpp"
#include "small_config.hpp"
#include "matmem/models/training/trainer.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
std::string temp_dir(const std::string& name) { return testing::temp_dir("matmem_init_test", name); }
using testing::same_bits;

// A run of `steps` steps saved in `dir` (seed 5, so its parameters are not a fresh seed-1 model's).
std::unique_ptr<Trainer> source_run(const std::string& dir, int steps = 4) {
  Config c = testing::small_config("matntm");
  c.set("seed", "5", "test");
  auto t = std::make_unique<Trainer>(c);
  while (t->steps_done() < steps) t->step();
  t->save(dir);
  return t;
}

Config started_from(const std::string& source) {
  Config c = testing::small_config("matntm");
  c.set("init", "\"" + source + "\"", "test");
  return c;
}
}  // namespace

TEST_CASE("init starts the model from the source run's last parameters, bit for bit", "[trainer][init]") {
  const std::string dir = temp_dir("source");
  const auto source = source_run(dir);
  Trainer fresh(testing::small_config("matntm"));
  REQUIRE_FALSE(same_bits(fresh.model().params(), source->model().params()));
  for (const std::string& given : {dir, dir + "/checkpoint.safetensors"}) {
    INFO("init " << given);
    Trainer t(started_from(given));
    CHECK(same_bits(t.model().params(), source->model().params()));
    CHECK(t.steps_done() == 0);
    // its own data stream (seed 1), not the source's (seed 5, four batches on)
    CHECK(std::memcmp(&t.data_rng().state(), &fresh.data_rng().state(), sizeof(Rng::State)) == 0);
    // and its own optimiser: its first step moves the parameters as a fresh optimiser's would, which a
    // Trainer started from the same values without init shows (its parameters set by hand)
    Trainer by_hand(testing::small_config("matntm"));
    auto& a = by_hand.model().params();
    const auto& b = source->model().params();
    for (std::size_t k = 0; k < a.size(); ++k) a[k].value = b[k].value;
    t.step();
    by_hand.step();
    CHECK(same_bits(t.model().params(), by_hand.model().params()));
  }
}

TEST_CASE("init takes a best-parameters file, and a resumed run does not read its source again", "[trainer][init]") {
  const std::string dir = temp_dir("best-source");
  Config c = testing::small_config("matntm");
  c.set("seed", "5", "test");
  c.set("eval.interval", "2", "test");
  c.set("eval.batches", "2", "test");
  Trainer source(c);
  while (source.steps_done() < 4) source.step();
  source.save(dir);
  REQUIRE(std::filesystem::exists(dir + "/best.safetensors"));
  const std::string copy = temp_dir("best-copy") + "/best.safetensors";
  std::filesystem::copy_file(dir + "/best.safetensors", copy);
  Trainer from_best(started_from(copy));
  const TensorFile best = read_safetensors(copy);
  for (const auto& p : from_best.model().params()) {
    const Tensor& want = best.tensors.at("param/" + p->name);
    CHECK(std::memcmp(p->value.raw(), want.raw(), std::size_t(want.numel()) * size_of(want.dtype())) == 0);
  }

  const std::string run = temp_dir("started");
  Trainer t(started_from(copy));
  t.step();
  t.save(run);
  std::filesystem::remove(copy);  // the source is gone: a resume takes everything from its own checkpoint
  auto resumed = Trainer::resume(run);
  CHECK(resumed->steps_done() == 1);
  CHECK(same_bits(resumed->model().params(), t.model().params()));
  CHECK(resumed->config().str("init") == copy);
}

TEST_CASE("init refuses a missing source, a file that is not a checkpoint and another model's parameters",
          "[trainer][init][errors]") {
  const std::string dir = temp_dir("refusals");
  source_run(dir, 1);
  const std::string path = dir + "/checkpoint.safetensors";

  CHECK_THROWS_WITH(Trainer(started_from(dir + "/nothing")), Contains("init " + dir + "/nothing") && Contains("no such"));
  const std::string empty = temp_dir("empty-run");
  CHECK_THROWS_WITH(Trainer(started_from(empty)), Contains("init " + empty) && Contains("checkpoint.safetensors"));

  TensorFile f = read_safetensors(path);
  TensorFile other = f;
  other.metadata["format"] = "something-else";
  write_safetensors(dir + "/other.safetensors", other);
  CHECK_THROWS_WITH(Trainer(started_from(dir + "/other.safetensors")),
                    Contains(dir + "/other.safetensors") && Contains("not a matmem checkpoint"));

  // A model of other shapes: the first parameter that differs is named with both shapes.
  Config wider = testing::small_config("matntm");
  wider.set("model.layers", "\"5x3,3x3\"", "test");
  wider.set("init", "\"" + dir + "\"", "test");
  CHECK_THROWS_WITH(Trainer(wider), Contains(path) && Contains("ntm/ctrl/l1/x/U") && Contains("in this run's model"));

  // A parameter missing from the file, and one the model lacks.
  TensorFile missing = f;
  missing.tensors.erase("param/ntm/ctrl/l1/x/U");
  write_safetensors(dir + "/missing.safetensors", missing);
  CHECK_THROWS_WITH(Trainer(started_from(dir + "/missing.safetensors")),
                    Contains("parameter ntm/ctrl/l1/x/U of model ntm is missing"));
  TensorFile extra = f;
  extra.tensors.emplace("param/ntm/elsewhere/V", f.tensors.at("param/ntm/ctrl/l1/x/U"));
  write_safetensors(dir + "/extra.safetensors", extra);
  CHECK_THROWS_WITH(Trainer(started_from(dir + "/extra.safetensors")),
                    Contains("holds parameter ntm/elsewhere/V, which model ntm does not have"));
}
