#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "matmem/runtime/float_env.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "small_config.hpp"
#include "matmem/models/training/trainer.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
Config small(const std::string& model) { return testing::small_config(model); }
std::string temp_dir(const std::string& name) { return testing::temp_dir("matmem_trainer_test", name); }
using testing::same_bits;
}  // namespace

TEST_CASE("a run interrupted at a checkpoint and resumed equals the uninterrupted run bit for bit", "[trainer]") {
  for (const char* model : {"matntm", "matlstm"})
    for (const char* threads : {"1", "2"}) {
      INFO(model << ", threads " << threads);
      Config c = small(model);
      c.set("steps", "8", "test");
      c.set("batch", "8", "test");  // two parts of four with two threads
      c.set("threads", threads, "test");
      Trainer whole(c);
      REQUIRE(whole.threads() == std::stoi(threads));
      while (whole.steps_done() < 8) whole.step();

      const std::string dir = temp_dir(std::string("resume-") + model + "-" + threads);
      Trainer first(c);
      while (first.steps_done() < 3) first.step();
      first.save(dir);
      for (int k = 0; k < 2; ++k) first.step();  // work after the checkpoint is lost, as in a crash
      auto resumed = Trainer::resume(dir);
      CHECK(resumed->steps_done() == 3);
      CHECK(resumed->threads() == whole.threads());
      while (resumed->steps_done() < 8) resumed->step();
      CHECK(same_bits(whole.model().params(), resumed->model().params()));
      CHECK(std::memcmp(&whole.data_rng().state(), &resumed->data_rng().state(), sizeof(Rng::State)) == 0);
    }
}

TEST_CASE("a resumed run equals the uninterrupted one with Adam and with SGD momentum too", "[trainer]") {
  // Adam's two moments and step count, and SGD's velocity, go through the checkpoint.
  for (const char* optimizer : {"adam", "sgd"})
    for (const char* threads : {"1", "2"}) {
      INFO(optimizer << ", threads " << threads);
      Config c = small("matntm");
      c.set("optimizer", std::string("\"") + optimizer + "\"", "test");
      c.set("sgd.momentum", "0.9", "test");
      c.set("steps", "7", "test");
      c.set("batch", "8", "test");
      c.set("threads", threads, "test");
      Trainer whole(c);
      while (whole.steps_done() < 7) whole.step();

      const std::string dir = temp_dir(std::string("resume-") + optimizer + "-" + threads);
      Trainer first(c);
      while (first.steps_done() < 3) first.step();
      first.save(dir);
      first.step();  // lost, as in a crash
      auto resumed = Trainer::resume(dir);
      REQUIRE(resumed->steps_done() == 3);
      CHECK(resumed->config().str("optimizer") == optimizer);
      while (resumed->steps_done() < 7) resumed->step();
      CHECK(same_bits(whole.model().params(), resumed->model().params()));
      // and the run moved: a resume that dropped the optimiser state would differ from it
      Trainer fresh(c);
      CHECK_FALSE(same_bits(whole.model().params(), fresh.model().params()));
    }
}

TEST_CASE("the same seed and config give the same run and another seed a different one", "[trainer]") {
  Config c = small("matrnn");
  Trainer a(c), b(c);
  c.set("seed", "2", "test");
  Trainer d(c);
  for (int k = 0; k < 3; ++k) {
    a.step();
    b.step();
    d.step();
  }
  CHECK(same_bits(a.model().params(), b.model().params()));
  CHECK_FALSE(same_bits(a.model().params(), d.model().params()));
}

TEST_CASE("lstm.forget_bias and ntm.forget_bias set the forget gate's starting bias of a MatLSTM and of a "
          "MatNTM's LSTM controller, each only its own",
          "[trainer]") {
  struct Case {
    const char *model, *key, *other, *forget, *input;
  };
  for (const Case& k : {Case{"matlstm", "lstm.forget_bias", "ntm.forget_bias", "matlstm/l2/f/B", "matlstm/l2/i/B"},
                        Case{"matntm", "ntm.forget_bias", "lstm.forget_bias", "ntm/ctrl/l2/f/B", "ntm/ctrl/l2/i/B"}}) {
    INFO(k.model);
    Config c = small(k.model);
    c.set("ntm.controller", "\"lstm\"", "test");
    const double start = Trainer(c).model().params().at(k.forget).value.get(0);
    CHECK(start == c.num(k.key));
    c.set(k.other, "-2.0", "test");
    CHECK(Trainer(c).model().params().at(k.forget).value.get(0) == start);
    c.set(k.key, "-0.5", "test");
    Trainer t(c);
    CHECK(t.model().params().at(k.forget).value.get(0) == -0.5);
    CHECK(t.model().params().at(k.forget).value.get(5) == -0.5);
    CHECK(t.model().params().at(k.input).value.get(0) == 0.0);
  }
}

TEST_CASE("bad configs are refused before training, naming the key", "[trainer][errors]") {
  Config c;
  CHECK_THROWS_WITH(c.set("ntm.slot", "5", "--set ntm.slot=5"), Contains("unknown config key ntm.slot") && Contains("--set"));
  CHECK_THROWS_WITH(c.set("batch", "\"many\"", "config file x.json"),
                    Contains("x.json") && Contains("batch must be an integer"));
  CHECK_THROWS_WITH(c.set("lr", "true", "--set"), Contains("lr must be a number"));
  // "key=value" as --set gives it: split at the first '=', the whole assignment named in errors
  c.assign("model.layers=\"3x3=x\"", "--set");
  CHECK(c.str("model.layers") == "3x3=x");
  c.assign("batch=7", "--set");
  CHECK(c.integer("batch") == 7);
  CHECK_THROWS_WITH(c.assign("batch", "--set"), Contains("--set batch: expected key=value"));
  CHECK_THROWS_WITH(c.assign("=3", "--set"), Contains("--set =3: expected key=value"));
  CHECK_THROWS_WITH(c.assign("batch=x1", "bench"), Contains("bench batch=x1") && Contains("batch must be an integer"));
  Config m = small("nosuchmodel");
  CHECK_THROWS_WITH(Trainer(m), Contains("unknown model nosuchmodel") && Contains("matntm"));
  Config t = small("matrnn");
  t.set("task", "sort", "--task");
  CHECK_THROWS_WITH(Trainer(t), Contains("unknown task sort"));
  Config s = small("matrnn");
  s.set("model.layers", "\"15x0\"", "--set");
  CHECK_THROWS_WITH(Trainer(s), Contains("model.layers") && Contains("RxC"));
  Config h = small("matntm");
  h.set("ntm.shift", "4", "--set");
  CHECK_THROWS_WITH(Trainer(h), Contains("config (ntm.*)") && Contains("shift 4 needs 2 shift + 1 ≤ slots (6)"));
  Config mi = small("matntm");
  mi.set("ntm.memory_init", "\"zeros\"", "--set");
  CHECK_THROWS_WITH(Trainer(mi), Contains("ntm.memory_init = \"zeros\"") && Contains("\"constant\", \"learned\" or \"random\""));
  Config l = small("matrnn");
  l.set("task.min_length", "9", "--set");
  CHECK_THROWS_WITH(Trainer(l), Contains("min_length"));
}

TEST_CASE("a checkpoint of another model is refused naming the parameter", "[trainer][errors]") {
  const std::string dir = temp_dir("mismatch");
  Trainer a(small("matrnn"));
  a.save(dir);
  // Rewrite its config to claim a different layer size: the shapes no longer fit.
  const std::string path = dir + "/checkpoint.safetensors";
  TensorFile f = read_safetensors(path);
  Config other = small("matrnn");
  other.set("model.layers", "\"5x3,3x3\"", "test");
  f.metadata["config"] = other.dump();
  write_safetensors(path, f);
  CHECK_THROWS_WITH(Trainer::resume(dir), Contains(path) && Contains("parameter matrnn/l1/x/U"));
}

TEST_CASE("a checkpoint whose step counts are not whole numbers is refused naming the count", "[trainer][errors]") {
  const std::string dir = temp_dir("bad_counts");
  Trainer a(small("matrnn"));
  a.step();
  a.save(dir);
  const std::string path = dir + "/checkpoint.safetensors";
  const TensorFile good = read_safetensors(path);
  for (const char* key : {"step", "optimizer_steps", "nonfinite_skips"})
    for (const char* value : {"12x", "", "-1", "99999999999999999999"}) {
      INFO(key << " = \"" << value << "\"");
      TensorFile f = good;
      f.metadata[key] = value;
      write_safetensors(path, f);
      CHECK_THROWS_WITH(Trainer::resume(dir), Contains(path) && Contains(std::string(key) + " \"" + value + "\" is not a whole number"));
    }
  write_safetensors(path, good);
  CHECK(Trainer::resume(dir)->steps_done() == 1);
}

namespace {
// A model whose output overflows: exp of a large learned scale.
class Exploding : public Model {
 public:
  Exploding(const Task& t) : Model("exploding", DType::f32, 1) {
    set_io(t.input_rows(), t.input_cols(), t.output_rows(), t.output_cols());
  }
  void step(Step& s) override {
    Var y = s.mat("exploding/out", {{"x", s.input()}}, output_rows(), output_cols());
    Var big = s.parameter("exploding", "", "scale", parameter(1, 1), Init::Constant(200.0));
    s.output(exp(hadamard(big, one_minus(sigmoid(y)))));
  }
};

// The registry refuses a second model of one name: each test model registers once per process, whichever case
// runs first (one static a model type).
template <class M>
void register_once(const char* name) {
  static const bool registered = [name] {
    register_model(name, [](const Config&, const Task& t, DType, std::uint64_t) {
      return std::unique_ptr<Model>(new M(t));
    });
    return true;
  }();
  (void)registered;
}
void register_exploding() { register_once<Exploding>("exploding"); }
}  // namespace

namespace {
// A model that counts, at each time step it builds, whether its thread flushes subnormals to zero.
std::atomic<int> flushing{0}, not_flushing{0};
class FloatModeSpy : public Model {
 public:
  explicit FloatModeSpy(const Task& t) : Model("float_mode_spy", DType::f32, 1) {
    set_io(t.input_rows(), t.input_cols(), t.output_rows(), t.output_cols());
  }
  void step(Step& s) override {
    ++(flushes_denormals() ? flushing : not_flushing);
    s.output(s.mat("spy/out", {{"x", s.input()}}, output_rows(), output_cols()));
  }
};
void register_spy() { register_once<FloatModeSpy>("float_mode_spy"); }
}  // namespace

TEST_CASE("a training step and its evaluation flush subnormals to zero on every thread, unless flush_denormals "
          "is false, and leave the caller's mode as it was",
          "[trainer][threads]") {
  register_spy();
  REQUIRE_FALSE(flushes_denormals());
  for (const bool flush : {true, false})
    for (const int threads : {1, 2}) {
      Config c = small("float_mode_spy");
      c.set("batch", "8", "test");
      c.set("threads", std::to_string(threads), "test");
      c.set("flush_denormals", flush ? "true" : "false", "test");
      c.set("eval.interval", "1", "test");  // the held-out evaluation runs in the trainer's own thread
      c.set("eval.batches", "1", "test");
      Trainer t(c);
      REQUIRE(t.threads() == threads);
      flushing = 0, not_flushing = 0;  // the models' builds counted too
      t.step();
      INFO("flush_denormals " << flush << ", " << threads << " threads");
      CHECK((flush ? flushing : not_flushing) > 0);
      CHECK((flush ? not_flushing : flushing) == 0);
      CHECK_FALSE(flushes_denormals());
    }
}

TEST_CASE("a non-finite loss stops the step, names the op and leaves parameters and checkpoint intact", "[trainer][errors]") {
  register_exploding();
  Config c = small("exploding");
  Trainer t(c);
  const std::string dir = temp_dir("nan");
  t.save(dir);
  const auto before = std::filesystem::file_size(dir + "/checkpoint.safetensors");
  Tensor scale = t.model().params().at("exploding/scale").value;
  CHECK_THROWS_WITH(t.step(), Contains("step 1") && Contains("not finite") && Contains("op exp"));
  CHECK(t.steps_done() == 0);
  CHECK(t.model().params().at("exploding/scale").value.get(0) == scale.get(0));
  CHECK(std::filesystem::file_size(dir + "/checkpoint.safetensors") == before);
  CHECK_NOTHROW(Trainer::resume(dir));
}

TEST_CASE("with the batch split over threads a non-finite loss is caught the same way", "[trainer][errors][threads]") {
  register_exploding();
  Config c = small("exploding");
  c.set("batch", "8", "test");
  c.set("threads", "2", "test");
  Trainer t(c);
  REQUIRE(t.threads() == 2);
  const double scale = t.model().params().at("exploding/scale").value.get(0);
  CHECK_THROWS_WITH(t.step(), Contains("step 1") && Contains("not finite") && Contains("op exp"));
  CHECK(t.steps_done() == 0);
  CHECK(t.model().params().at("exploding/scale").value.get(0) == scale);
}

TEST_CASE("a step in micro-batches has the whole batch's loss and gradient, up to rounding", "[trainer][micro]") {
  for (const char* threads : {"1", "2"}) {
    Config c = small("matntm");
    c.set("batch", "24", "test");
    c.set("threads", threads, "test");
    c.set("micro_batch", "0", "test");
    Trainer whole(c);
    c.set("micro_batch", "5", "test");  // parts of 24 or 12: micro-batches of 5, 5, 5, 5, 4 or 5, 5, 2
    Trainer split(c);
    INFO("threads " << threads);
    const StepStats a = whole.step(), b = split.step();
    CHECK(b.loss == Approx(a.loss).epsilon(1e-6));
    CHECK(b.bits == Approx(a.bits).epsilon(1e-6));
    double largest = 0, diff = 0;
    const ParameterStore &p = whole.model().params(), &q = split.model().params();
    for (std::size_t k = 0; k < p.size(); ++k)
      for (std::int64_t e = 0; e < p[k].grad.numel(); ++e) {
        largest = std::max(largest, std::abs(p[k].grad.get(e)));
        diff = std::max(diff, std::abs(p[k].grad.get(e) - q[k].grad.get(e)));
      }
    CHECK(largest > 1e-3);
    CHECK(diff < 1e-5 * largest);
    CHECK(diff > 0);  // the sums are split differently: not the same bits (so this test sees the split run)
  }
}

TEST_CASE("micro-batches: a run is reproducible, a batch of at most one micro-batch is the unsplit step bit for "
          "bit, and the memory estimate counts one micro-batch's tape", "[trainer][micro]") {
  Config c = small("matntm");
  c.set("batch", "8", "test");
  c.set("micro_batch", "8", "test");
  Trainer one(c);
  c.set("micro_batch", "0", "test");
  Trainer zero(c);
  for (int k = 0; k < 3; ++k) one.step(), zero.step();
  CHECK(same_bits(one.model().params(), zero.model().params()));
  c.set("micro_batch", "3", "test");
  Trainer x(c), y(c);
  for (int k = 0; k < 3; ++k) x.step(), y.step();
  CHECK(same_bits(x.model().params(), y.model().params()));
  // A batch of 64 in micro-batches of 16 holds the tape of a batch of 16; all at once, 4 times more.
  c.set("batch", "16", "test");
  c.set("micro_batch", "0", "test");
  const double sixteen = Trainer(c).memory_estimate().tape_bytes;
  c.set("batch", "64", "test");
  c.set("micro_batch", "16", "test");
  CHECK(Trainer(c).memory_estimate().tape_bytes == Approx(sixteen).epsilon(1e-9));
  c.set("micro_batch", "0", "test");
  CHECK(Trainer(c).memory_estimate().tape_bytes > 3 * sixteen);
  c.set("micro_batch", "-1", "test");
  CHECK_THROWS_WITH(Trainer(c), Contains("micro_batch = -1 must be ≥ 0"));
}

TEST_CASE("micro-batches are halved until their memory state fits micro_batch.state_kib, and a step runs them",
          "[trainer][micro]") {
  Config c = small("matntm");
  c.set("ntm.slots", "64", "test");
  c.set("ntm.slot_rows", "4", "test");
  c.set("ntm.slot_cols", "4", "test");  // a memory of 64 × 4 × 4 floats: 4 KiB per sequence
  c.set("batch", "16", "test");
  c.set("micro_batch", "16", "test");
  c.set("micro_batch.state_kib", "0", "test");
  Trainer unlimited(c);
  CHECK(unlimited.memory_estimate().state_bytes == 4096);
  CHECK(unlimited.memory_estimate().micro_batch == 16);
  c.set("micro_batch.state_kib", "64", "test");
  CHECK(Trainer(c).memory_estimate().micro_batch == 16);  // 64 KiB fits
  c.set("micro_batch.state_kib", "20", "test");           // 16 → 8 → 4 sequences: 16 KiB
  Trainer halved(c);
  CHECK(halved.memory_estimate().micro_batch == 4);
  CHECK_THAT(halved.memory_estimate().str(), Contains("micro-batches of 4 (16 KiB of state)"));
  c.set("micro_batch", "4", "test");
  c.set("micro_batch.state_kib", "0", "test");
  Trainer four(c);
  for (int k = 0; k < 2; ++k) unlimited.step(), halved.step(), four.step();
  CHECK(same_bits(halved.model().params(), four.model().params()));
  CHECK_FALSE(same_bits(halved.model().params(), unlimited.model().params()));
  c.set("micro_batch.state_kib", "-1", "test");
  CHECK_THROWS_WITH(Trainer(c), Contains("micro_batch.state_kib = -1 must be ≥ 0"));
}

TEST_CASE("the micro-batch's state counts what each sequence holds, not the vector NTM's stacked V the batch shares",
          "[trainer][micro]") {
  Config c = small("matntm");
  c.set("model.layers", "1x256", "test");  // a vector controller: its heads' V_k stacked once a pass, [256, C]
  c.set("ntm.slots", "32", "test");
  c.set("ntm.slot_rows", "1", "test");
  c.set("ntm.slot_cols", "8", "test");  // a memory of 32 × 8 floats: 1 KiB per sequence
  c.set("ntm.read_heads", "4", "test");
  c.set("ntm.write_heads", "4", "test");
  c.set("batch", "16", "test");
  c.set("micro_batch", "16", "test");
  c.set("micro_batch.state_kib", "16", "test");  // 16 sequences of 1 KiB fit
  const MemoryEstimate m = Trainer(c).memory_estimate();
  CHECK(m.state_bytes == 1024);
  CHECK(m.micro_batch == 16);
}

TEST_CASE("every real-valued key takes a fraction, and a step runs with it", "[trainer]") {
  // A default written as an integer would make its key integer-typed and refuse 0.5.
  Config c = small("matrnn");
  for (const char* key : {"lr", "weight_decay", "clip.value", "clip.norm", "curriculum.threshold"}) {
    INFO(key);
    CHECK_NOTHROW(c.set(key, "0.5", "--set"));
    CHECK(c.num(key) == 0.5);
  }
  c.set("lr", "0.001", "--set");
  Trainer t(c);
  CHECK(std::isfinite(t.step().loss));
}

TEST_CASE("a step's FLOPs count every micro-batch and every thread's part", "[trainer][micro]") {
  auto flops = [](int batch, int micro, int threads) {
    Config c = small("matntm");
    c.set("task.min_length", "4", "test");  // every sequence alike: FLOPs are linear in the batch
    c.set("batch", std::to_string(batch), "test");
    c.set("micro_batch", std::to_string(micro), "test");
    c.set("threads", std::to_string(threads), "test");
    Trainer t(c);
    t.step();
    return t.step_flops();
  };
  const double one = flops(8, 0, 1);
  REQUIRE(one > 0);
  // a few ops do not scale with the batch (the stack of the heads' U's, once a pass)
  CHECK(flops(32, 0, 1) == Approx(4 * one).epsilon(3e-4));
  CHECK(flops(32, 8, 1) == Approx(4 * one).epsilon(1e-12));  // four micro-batches of 8
  CHECK(flops(32, 8, 2) == Approx(4 * one).epsilon(1e-12));  // two parts of two micro-batches
}

TEST_CASE("loss.reduction = sequence: the gradient of the BCE summed over a sequence's target elements (a step "
          "checked by hand), the logged loss staying the mean", "[trainer]") {
  Config c = small("matntm");
  c.set("task.min_length", "3", "test");
  c.set("task.max_length", "3", "test");  // three target frames of 2×3: E = 18 elements a sequence
  c.set("clip.value", "0", "test");
  c.set("optimizer", "\"sgd\"", "test");
  c.set("sgd.momentum", "0", "test");
  c.set("lr", "0.01", "test");
  Trainer mean(c);
  c.set("loss.reduction", "\"sequence\"", "test");
  Trainer summed(c);
  const ParameterStore &p = mean.model().params(), &q = summed.model().params();
  std::vector<Tensor> start;
  for (std::size_t k = 0; k < q.size(); ++k) start.push_back(q[k].value);
  const StepStats a = mean.step(), b = summed.step();
  CHECK(b.loss == a.loss);
  CHECK(b.bits == a.bits);
  CHECK(b.grad_norm == Approx(18 * a.grad_norm).epsilon(1e-6));
  double largest = 0;
  for (std::size_t k = 0; k < q.size(); ++k)
    for (std::int64_t e = 0; e < q[k].grad.numel(); ++e) {
      const double g = p[k].grad.get(e);  // the mean loss's gradient
      largest = std::max(largest, std::abs(g));
      INFO(q[k].name << " element " << e);
      CHECK(q[k].grad.get(e) == Approx(18 * g).epsilon(1e-6).margin(1e-12));
      // SGD without momentum: θ ← θ − lr · E · ∂L/∂θ
      CHECK(q[k].value.get(e) == Approx(start[k].get(e) - 0.01 * 18 * g).epsilon(1e-6).margin(1e-9));
    }
  CHECK(largest > 1e-4);
}

TEST_CASE("loss.reduction is refused when unknown, and \"sequence\" for a task not of unmasked BCE targets",
          "[trainer][errors]") {
  Config c = small("matntm");
  c.set("loss.reduction", "\"sum\"", "--set");
  CHECK_THROWS_WITH(Trainer(c), Contains("loss.reduction = \"sum\"") && Contains("\"mean\" or \"sequence\""));
  Config r = small("matrnn");
  r.set("task", "\"mackey_glass\"", "--set");
  r.set("loss.reduction", "\"sequence\"", "--set");
  CHECK_THROWS_WITH(Trainer(r), Contains("loss.reduction = \"sequence\"") && Contains("BCE"));
}

TEST_CASE("dtype = float64: the run's parameters, values and optimiser state are float64, it follows the float32 "
          "run up to rounding, and it resumes bit for bit", "[trainer]") {
  Config c = small("matntm");
  c.set("steps", "6", "test");
  c.set("batch", "4", "test");
  Config c64 = c;
  c64.set("dtype", "\"float64\"", "test");
  Trainer t32(c), t64(c64);
  CHECK(t32.model().dtype() == DType::f32);
  REQUIRE(t64.model().dtype() == DType::f64);
  CHECK(t64.tape().dtype() == DType::f64);
  for (const auto& [name, t] : t64.optimizer().state_tensors()) CHECK(t->dtype() == DType::f64);
  // The same start, rounded: each float32 parameter is its float64 value to float32's precision.
  const ParameterStore &p32 = t32.model().params(), &p64 = t64.model().params();
  REQUIRE(p32.size() == p64.size());
  for (std::size_t k = 0; k < p32.size(); ++k)
    for (std::int64_t e = 0; e < p32[k].value.numel(); ++e)
      CHECK(std::abs(p32[k].value.get(e) - p64[k].value.get(e)) <= 1e-7 * std::abs(p64[k].value.get(e)));
  // The same batches, the same computation: the losses agree to float32's rounding.
  for (int k = 0; k < 3; ++k) {
    const double l32 = t32.step().loss, l64 = t64.step().loss;
    CHECK(l64 == Approx(l32).epsilon(1e-4));
  }
  const std::string dir = temp_dir("float64");
  t64.save(dir);
  auto resumed = Trainer::resume(dir);
  CHECK(resumed->model().dtype() == DType::f64);
  while (t64.steps_done() < 6) t64.step();
  while (resumed->steps_done() < 6) resumed->step();
  CHECK(same_bits(t64.model().params(), resumed->model().params()));
}
