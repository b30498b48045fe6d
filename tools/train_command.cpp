// `matmem train`: for now a short demonstration that the engine learns: a one-layer Matrix RNN
// (H_t = tanh(U_xᵀ X_t V_x + U_hᵀ H_{t-1} V_h + B), Y_t = U_yᵀ H_t V_y + B_y) trained with RMSprop to
// output, at every step, the binary matrix it was shown one step earlier. It prints the loss and the
// bit errors per sequence falling. (The MatNTM on the copy task replaces it as the main job.)
#include <chrono>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "models/layers/init.hpp"
#include "models/training/rmsprop.hpp"
#include "ops/ops.hpp"
#include "tools/commands.hpp"

namespace matmem::tools {
namespace {
struct Options {
  int steps = 400;
  std::uint64_t seed = 1;
  int batch = 16, length = 8, rows = 4, cols = 4, hidden = 8;
  double lr = 3e-3;
};

void run(const Options& o) {
  Rng rng(o.seed);
  ParameterStore params(DType::f32);
  const std::int64_t h = o.hidden, r = o.rows, c = o.cols;
  auto matrix = [&](const std::string& name, std::int64_t a, std::int64_t b) -> Parameter& {
    Parameter& p = params.add(name, parameter(a, b));
    glorot_uniform(p, rng);
    return p;
  };
  Parameter &ux = matrix("demo/x/U", r, h), &vx = matrix("demo/x/V", c, h);
  Parameter &uh = matrix("demo/h/U", h, h), &vh = matrix("demo/h/V", h, h);
  Parameter& bh = params.add("demo/B", parameter(h, h));
  Parameter &uy = matrix("demo/out/U", h, r), &vy = matrix("demo/out/V", h, c);
  Parameter& by = params.add("demo/out/B", parameter(r, c));
  RMSprop opt(params, {.lr = o.lr, .alpha = 0.95, .momentum = 0.9, .eps = 1e-8});

  std::vector<Tensor> xs(o.length, Tensor(DType::f32, matrices(o.batch, r, c)));
  Tensor zero(DType::f32, matrices(o.batch, h, h));
  Tape tape(DType::f32);
  fmt::print("demo: Matrix RNN ({}x{} hidden) learns to recall the {}x{} binary matrix seen one step earlier\n", h, h,
             r, c);
  fmt::print("{:>6} {:>10} {:>16}\n", "step", "loss", "bits wrong/seq");
  const auto t0 = std::chrono::steady_clock::now();
  double loss_avg = 0, bits_avg = 0;
  for (int step = 1; step <= o.steps; ++step) {
    for (auto& x : xs)
      for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, rng.bernoulli(0.5) ? 1.0 : 0.0);
    tape.clear();
    params.zero_grad();
    Var state = tape.input(zero);
    std::vector<Var> losses;
    double bits = 0;
    for (int t = 0; t < o.length; ++t) {
      state = tanh(mat({{tape.input(xs[t]), tape.param(ux), tape.param(vx)},
                        {state, tape.param(uh), tape.param(vh)}},
                       tape.param(bh)));
      if (t == 0) continue;
      Var y = mat({{state, tape.param(uy), tape.param(vy)}}, tape.param(by));
      losses.push_back(bce_with_logits(y, tape.input(xs[t - 1])));
      auto yv = y.value<float>();
      for (std::int64_t k = 0; k < yv.numel(); ++k) bits += (yv[k] > 0) != (xs[t - 1].get(k) > 0.5);
    }
    Var loss = losses[0];
    for (std::size_t k = 1; k < losses.size(); ++k) loss = add(loss, losses[k]);
    loss = scale(loss, 1.0 / double(losses.size()));
    tape.backward(loss);
    opt.step();
    loss_avg += loss.item();
    bits_avg += bits / o.batch;
    if (step % 25 == 0) {
      fmt::print("{:>6} {:>10.4f} {:>16.2f}\n", step, loss_avg / 25, bits_avg / 25);
      loss_avg = bits_avg = 0;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("{} steps in {:.2f} s ({:.2f} ms/step)\n", o.steps, secs, 1e3 * secs / o.steps);
}
}  // namespace

void add_train_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("train", "Train a model (for now: a short Matrix RNN demonstration)");
  cmd->add_option("--steps", o->steps, "Training steps")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--seed", o->seed, "Random seed")->capture_default_str();
  cmd->add_option("--lr", o->lr, "RMSprop learning rate")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->callback([o] { run(*o); });
}

}  // namespace matmem::tools
