// Adam, SGD and clipping against numbers computed by hand from the formulas in their headers.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "matmem/models/training/adam.hpp"
#include "matmem/models/training/sgd.hpp"
#include "matmem/models/training/clip.hpp"
#include "matmem/models/training/rmsprop.hpp"

using namespace matmem;

TEST_CASE("Adam's first two steps match the bias-corrected formula", "[optim]") {
  ParameterStore params(DType::f64);
  Parameter& p = params.add("w", matrices(1, 1, 1));
  p.value.set(0, 1.0);
  Adam opt(params, {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8});
  p.grad.set(0, 2.0);
  opt.step();
  // m = 0.2, v = 0.04; m̂ = 2, v̂ = 4: p = 1 - 0.1 * 2 / (2 + 1e-8)
  CHECK(p.value.get(0) == Approx(1.0 - 0.1 * 2.0 / (2.0 + 1e-8)).epsilon(1e-12));
  const double x1 = p.value.get(0);
  p.grad.set(0, -1.0);
  opt.step();
  const double m = 0.9 * 0.2 - 0.1, v = 0.99 * 0.04 + 0.01;
  const double mhat = m / (1 - 0.81), vhat = v / (1 - 0.9801);
  CHECK(p.value.get(0) == Approx(x1 - 0.1 * mhat / (std::sqrt(vhat) + 1e-8)).epsilon(1e-12));
  CHECK(opt.steps() == 2);
}

TEST_CASE("SGD with momentum matches PyTorch's update", "[optim]") {
  ParameterStore params(DType::f32);
  Parameter& p = params.add("w", matrices(1, 1, 1));
  p.value.set(0, 1.0);
  SGD opt(params, {.lr = 0.5, .momentum = 0.9});
  p.grad.set(0, 1.0);
  opt.step();  // b = 1, p = 0.5
  CHECK(p.value.get(0) == Approx(0.5));
  p.grad.set(0, 1.0);
  opt.step();  // b = 1.9, p = 0.5 - 0.95
  CHECK(p.value.get(0) == Approx(-0.45));
}

TEST_CASE("clipping by value and by global norm", "[optim]") {
  ParameterStore params(DType::f64);
  Parameter& a = params.add("a", matrices(1, 1, 2));
  Parameter& b = params.add("b", matrices(1, 1, 1));
  a.grad.set(0, 30.0);
  a.grad.set(1, -4.0);
  b.grad.set(0, -12.0);
  clip_by_value(params, 10.0);
  CHECK(a.grad.get(0) == 10.0);
  CHECK(a.grad.get(1) == -4.0);
  CHECK(b.grad.get(0) == -10.0);
  // norm √(100 + 16 + 100) = √216 > 6: scaled to norm 6
  const double n = clip_by_global_norm(params, 6.0);
  CHECK(n == Approx(std::sqrt(216.0)));
  CHECK(gradient_norm(params) == Approx(6.0));
  CHECK(a.grad.get(1) == Approx(-4.0 * 6.0 / std::sqrt(216.0)));
  // Over parameters of 1,003 and 5 elements (whole groups of eight and a tail): the norm of every element.
  ParameterStore big(DType::f32);
  Parameter& c = big.add("c", matrices(1, 17, 59));
  Parameter& d = big.add("d", matrices(1, 1, 5));
  double want = 0;
  for (Parameter* p : {&c, &d})
    for (std::int64_t k = 0; k < p->grad.numel(); ++k) {
      const double g = double(float(std::sin(double(k) + double(p->grad.numel()))));
      p->grad.set(k, g);
      want += g * g;
    }
  CHECK(gradient_norm(big) == Approx(std::sqrt(want)).epsilon(1e-14));
}

namespace {
// Every value and state tensor of `params` and `opt`, copied.
std::vector<Tensor> snapshot(ParameterStore& params, Optimizer& opt) {
  std::vector<Tensor> all;
  for (auto& p : params) all.push_back(p->value);
  for (auto& [name, t] : opt.state_tensors()) all.push_back(*t);
  return all;
}

bool same_bits(const std::vector<Tensor>& x, const std::vector<Tensor>& y) {
  if (x.size() != y.size()) return false;
  for (std::size_t k = 0; k < x.size(); ++k)
    if (x[k].bytes() != y[k].bytes() || std::memcmp(x[k].raw(), y[k].raw(), x[k].bytes()) != 0) return false;
  return true;
}

// Two float32 parameters a (2 values) and b (3), with gradients set from `ga` and `gb`.
void set_grads(ParameterStore& params, std::array<float, 2> ga, std::array<float, 3> gb) {
  for (int k = 0; k < 2; ++k) params.at("a").grad.set(k, ga[std::size_t(k)]);
  for (int k = 0; k < 3; ++k) params.at("b").grad.set(k, gb[std::size_t(k)]);
}

// An update of `make`'s optimiser that would overflow (`bad`, in b's gradient) is not taken: it names `what`,
// and every value, state and steps() is as before, bit for bit, so the next finite step is the one a run without
// the bad step takes.
template <class Make>
void check_refused_whole(Make make, float bad, const std::string& what) {
  ParameterStore run(DType::f32), clean(DType::f32);
  for (ParameterStore* store : {&run, &clean}) {
    Parameter& a = store->add("a", matrices(1, 1, 2));
    Parameter& b = store->add("b", matrices(1, 1, 3));
    for (int k = 0; k < 2; ++k) a.value.set(k, 0.5 - k);
    for (int k = 0; k < 3; ++k) b.value.set(k, 0.25 * k);
  }
  std::unique_ptr<Optimizer> opt = make(run), ref = make(clean);
  for (auto [store, o] : {std::pair{&run, opt.get()}, std::pair{&clean, ref.get()}}) {
    set_grads(*store, {0.3f, -0.2f}, {0.1f, 0.7f, -0.4f});
    REQUIRE_FALSE(o->step());
  }
  const std::vector<Tensor> before = snapshot(run, *opt);
  set_grads(run, {0.3f, -0.2f}, {0.1f, bad, -0.4f});
  const std::optional<std::string> refused = opt->step();
  REQUIRE(refused);
  CHECK(*refused == what);
  CHECK(same_bits(snapshot(run, *opt), before));
  CHECK(opt->steps() == 1);
  for (auto [store, o] : {std::pair{&run, opt.get()}, std::pair{&clean, ref.get()}}) {
    set_grads(*store, {-0.6f, 0.9f}, {0.2f, -0.1f, 0.5f});
    REQUIRE_FALSE(o->step());
  }
  CHECK(same_bits(snapshot(run, *opt), snapshot(clean, *ref)));
  CHECK(opt->steps() == 2);
}
}  // namespace

TEST_CASE("an update that would make a value non-finite is not taken: nothing changes, and it is named",
          "[optim]") {
  SECTION("RMSprop, Graves': (1 − α) g² overflows the square average") {
    check_refused_whole([](ParameterStore& p) -> std::unique_ptr<Optimizer> {
      return std::make_unique<RMSprop>(p, RMSpropOptions{.lr = 1e-2, .alpha = 0.95, .momentum = 0.9, .eps = 1e-4,
                                                         .centered = true, .eps_inside = true});
    }, 1e21f, "optimiser state b/square_avg");
  }
  SECTION("RMSprop, plain") {
    check_refused_whole([](ParameterStore& p) -> std::unique_ptr<Optimizer> {
      return std::make_unique<RMSprop>(p, RMSpropOptions{.lr = 1e-2, .momentum = 0});
    }, 1e21f, "optimiser state b/square_avg");
  }
  SECTION("Adam") {
    check_refused_whole([](ParameterStore& p) -> std::unique_ptr<Optimizer> {
      return std::make_unique<Adam>(p, AdamOptions{.lr = 1e-2});
    }, 1e21f, "optimiser state b/exp_avg_sq");
  }
  SECTION("SGD with momentum: the value overflows") {
    check_refused_whole([](ParameterStore& p) -> std::unique_ptr<Optimizer> {
      return std::make_unique<SGD>(p, SGDOptions{.lr = 1e3, .momentum = 0.9});
    }, 1e36f, "parameter b");
  }
  SECTION("SGD") {
    check_refused_whole([](ParameterStore& p) -> std::unique_ptr<Optimizer> {
      return std::make_unique<SGD>(p, SGDOptions{.lr = 1e3, .momentum = 0});
    }, 1e36f, "parameter b");
  }
}

namespace {
// `make(store, mode)` in place and whole over the same parameters (1,003 and 5 values: whole SIMD vectors and a
// tail) and the same gradients for five steps: every value and state equal bit for bit after each step.
template <class Make>
void check_in_place_is_whole(Make make, DType dtype) {
  ParameterStore whole_params(dtype), in_place_params(dtype);
  for (ParameterStore* store : {&whole_params, &in_place_params}) {
    Parameter& c = store->add("c", matrices(1, 17, 59));
    Parameter& d = store->add("d", matrices(1, 1, 5));
    for (Parameter* p : {&c, &d})
      for (std::int64_t k = 0; k < p->value.numel(); ++k) p->value.set(k, 0.3 * std::sin(0.7 * double(k)));
  }
  std::unique_ptr<Optimizer> whole = make(whole_params, UpdateMode::whole);
  std::unique_ptr<Optimizer> in_place = make(in_place_params, UpdateMode::in_place);
  REQUIRE(in_place->mode() == UpdateMode::in_place);
  for (int step = 1; step <= 5; ++step) {
    for (ParameterStore* store : {&whole_params, &in_place_params})
      for (auto& p : *store)
        for (std::int64_t k = 0; k < p->grad.numel(); ++k)
          p->grad.set(k, std::cos(1.3 * double(k) + double(step)) * (k % 7 == 0 ? 30.0 : 0.2));
    REQUIRE_FALSE(whole->step());
    REQUIRE_FALSE(in_place->step());
    INFO("step " << step);
    CHECK(same_bits(snapshot(whole_params, *whole), snapshot(in_place_params, *in_place)));
  }
  CHECK(in_place->steps() == 5);
}
}  // namespace

TEST_CASE("an update in place gives the whole update's values and state, bit for bit", "[optim]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(name_of(dtype));
    SECTION("RMSprop, Graves' (centred, momentum, ε inside)") {
      check_in_place_is_whole([](ParameterStore& p, UpdateMode m) -> std::unique_ptr<Optimizer> {
        return std::make_unique<RMSprop>(p, RMSpropOptions{.lr = 1e-2, .alpha = 0.95, .momentum = 0.9, .eps = 1e-4,
                                                           .centered = true, .eps_inside = true}, m);
      }, dtype);
    }
    SECTION("RMSprop, plain, weight decay") {
      check_in_place_is_whole([](ParameterStore& p, UpdateMode m) -> std::unique_ptr<Optimizer> {
        return std::make_unique<RMSprop>(p, RMSpropOptions{.lr = 1e-2, .momentum = 0, .weight_decay = 0.01}, m);
      }, dtype);
    }
    SECTION("RMSprop, centred without momentum; momentum without centring") {
      check_in_place_is_whole([](ParameterStore& p, UpdateMode m) -> std::unique_ptr<Optimizer> {
        return std::make_unique<RMSprop>(p, RMSpropOptions{.lr = 1e-2, .momentum = 0, .eps = 1e-4, .centered = true}, m);
      }, dtype);
      check_in_place_is_whole([](ParameterStore& p, UpdateMode m) -> std::unique_ptr<Optimizer> {
        return std::make_unique<RMSprop>(p, RMSpropOptions{.lr = 1e-2, .momentum = 0.5}, m);
      }, dtype);
    }
    SECTION("Adam") {
      check_in_place_is_whole([](ParameterStore& p, UpdateMode m) -> std::unique_ptr<Optimizer> {
        return std::make_unique<Adam>(p, AdamOptions{.lr = 1e-2, .weight_decay = 0.01}, m);
      }, dtype);
    }
    SECTION("SGD, with and without momentum") {
      check_in_place_is_whole([](ParameterStore& p, UpdateMode m) -> std::unique_ptr<Optimizer> {
        return std::make_unique<SGD>(p, SGDOptions{.lr = 1e-2, .momentum = 0.9, .weight_decay = 0.01}, m);
      }, dtype);
      check_in_place_is_whole([](ParameterStore& p, UpdateMode m) -> std::unique_ptr<Optimizer> {
        return std::make_unique<SGD>(p, SGDOptions{.lr = 1e-2, .momentum = 0}, m);
      }, dtype);
    }
  }
}

TEST_CASE("an update in place that overflows names what the whole update would and counts no step", "[optim]") {
  ParameterStore params(DType::f32);
  Parameter& a = params.add("a", matrices(1, 1, 2));
  params.add("b", matrices(1, 1, 3));
  a.value.set(0, 0.5);
  RMSprop opt(params, {.lr = 1e-2, .alpha = 0.95, .momentum = 0.9, .eps = 1e-4, .centered = true, .eps_inside = true},
              UpdateMode::in_place);
  set_grads(params, {0.3f, -0.2f}, {0.1f, 0.7f, -0.4f});
  REQUIRE_FALSE(opt.step());
  set_grads(params, {0.3f, -0.2f}, {0.1f, 1e21f, -0.4f});
  const std::optional<std::string> refused = opt.step();
  REQUIRE(refused);
  CHECK(*refused == "optimiser state b/square_avg");  // as the whole update names it (above)
  CHECK(opt.steps() == 1);
  CHECK_FALSE(opt.state_tensors().at("b/square_avg")->all_finite());  // written over: the update is in part there
}
