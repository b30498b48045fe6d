// `matmem capacity`: prints the Fisher memory curve J(i) and its running sum for a linear matrix RNN
// (paper 000 eqs. 12, 16), its exact counterpart, a vector RNN (eq. 14) or the one-slot queue-memory network
// (eqs. 34–41); `--sweep` gives J_tot across sizes (Figures 2 D/E, 3–4). The math is in
// models/capacity/*.hpp; the findings in models/capacity/README.md. `--plot FILE` also draws the table
// (tools/plot/charts.hpp: J(i) and the running sum, or J_tot by N for a sweep).
#include "matmem/tools/capacity_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "matmem/models/capacity/capacity.hpp"
#include "matmem/models/capacity/checkpoint.hpp"
#include "matmem/models/capacity/generators.hpp"
#include "matmem/models/capacity/queue.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tools/csv_file.hpp"
#include "matmem/tools/options.hpp"
#include "matmem/tools/plot/charts.hpp"

namespace matmem::tools {
namespace {

using namespace matmem::capacity;

struct Options {
  std::string kind = "matrix";
  std::size_t n = 4, rows = 0, cols = 0, neurons = 0;
  double eps1 = 1.0, eps2 = 1.0;
  int k = 20;
  std::string connectivity = "normal";
  double rho_min = 0.0, rho_max = 0.95, strength = 1.0;
  std::uint64_t seed = 1;
  int depth = 10;
  int horizon = 40;
  std::string checkpoint, prefix = "matrnn/l1", param_w;
  std::string csv;
  std::string sweep;
  int samples = 10;
  std::string plot;  // also draw the table here
  struct Table {
    std::vector<std::string> header;
    std::vector<std::vector<double>> columns;
  };
  std::shared_ptr<Table> table = std::make_shared<Table>();  // the table printed, for --plot

  std::size_t r() const { return rows ? rows : n; }
  std::size_t c() const { return cols ? cols : n; }
  Noise noise() const { return Noise{eps1, eps2}; }
  GeneratorOptions generator() const { return GeneratorOptions{rho_min, rho_max, strength}; }
};

// Text goes to stdout, or to stderr when the CSV goes to stdout; the CSV goes to its file or stdout.
class Output {
 public:
  explicit Output(const Options& o) : file_(o.csv, "capacity"), csv_(file_.get()), table_(o.table) {
    if (file_.to_stdout()) text_ = stderr;
  }

  template <class... A>
  void text(fmt::format_string<A...> f, A&&... a) {
    fmt::print(text_, f, std::forward<A>(a)...);
  }

  // Column 0 is an integer index; the others are numbers.
  void table(const std::vector<std::string>& header, const std::vector<std::vector<double>>& columns) {
    *table_ = {header, columns};
    const std::size_t rows = columns.empty() ? 0 : columns[0].size();
    if (csv_) {
      fmt::print(csv_, "{}\n", fmt::join(header, ","));
      for (std::size_t i = 0; i < rows; ++i) {
        std::string line = fmt::format("{}", static_cast<long long>(columns[0][i]));
        for (std::size_t c = 1; c < columns.size(); ++c) line += fmt::format(",{:.12g}", columns[c][i]);
        fmt::print(csv_, "{}\n", line);
      }
      return;
    }
    std::string h = fmt::format("{:>5}", header[0]);
    for (std::size_t c = 1; c < header.size(); ++c) h += fmt::format(" {:>14}", header[c]);
    fmt::print(text_, "{}\n", h);
    for (std::size_t i = 0; i < rows; ++i) {
      std::string line = fmt::format("{:>5}", static_cast<long long>(columns[0][i]));
      for (std::size_t c = 1; c < columns.size(); ++c) line += fmt::format(" {:>14.6g}", columns[c][i]);
      fmt::print(text_, "{}\n", line);
    }
  }

 private:
  CsvFile file_;
  std::FILE* text_ = stdout;
  std::FILE* csv_;
  std::shared_ptr<Options::Table> table_;
};

std::vector<double> indices(std::size_t n) {
  std::vector<double> i(n);
  for (std::size_t k = 0; k < n; ++k) i[k] = double(k);
  return i;
}

// "N=2,4,8", "2,4,8", "2:10" or "2:20:2" (inclusive).
std::vector<std::size_t> parse_sweep(const std::string& given) {
  std::string spec = given;
  if (spec.rfind("N=", 0) == 0 || spec.rfind("n=", 0) == 0) spec = spec.substr(2);
  auto number = [&](const std::string& s) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(s, &used);
      if (used != s.size() || v < 1 || v > kMaxCapacitySide) throw std::invalid_argument(s);
      return std::size_t(v);
    } catch (const std::exception&) {
      throw Error(fmt::format("capacity: --sweep '{}': '{}' is not a size from 1 to {} (use N=a,b,c or a:b[:step])",
                              given, s, kMaxCapacitySide));
    }
  };
  std::vector<std::size_t> sizes;
  if (spec.find(':') != std::string::npos) {
    std::vector<std::string> parts;
    std::size_t start = 0, pos;
    while ((pos = spec.find(':', start)) != std::string::npos) {
      parts.push_back(spec.substr(start, pos - start));
      start = pos + 1;
    }
    parts.push_back(spec.substr(start));
    if (parts.size() < 2 || parts.size() > 3) throw Error(fmt::format("capacity: --sweep '{}': expected a:b or a:b:step", given));
    const std::size_t a = number(parts[0]), b = number(parts[1]), step = parts.size() == 3 ? number(parts[2]) : 1;
    for (std::size_t v = a; v <= b; v += step) sizes.push_back(v);
  } else {
    std::size_t start = 0, pos;
    while ((pos = spec.find(',', start)) != std::string::npos) {
      sizes.push_back(number(spec.substr(start, pos - start)));
      start = pos + 1;
    }
    sizes.push_back(number(spec.substr(start)));
  }
  if (sizes.empty()) throw Error(fmt::format("capacity: --sweep '{}' gives no sizes", given));
  return sizes;
}

MatrixNet make_net(const Options& o, Output& out) {
  if (!o.checkpoint.empty()) {
    Rng rng(o.seed);
    MatrixNet net = load_matrix_net(CheckpointSource{o.checkpoint, o.prefix, o.param_w}, o.noise(), rng);
    out.text("checkpoint {}: U = {}/h/U ({}×{}), V = {}/h/V ({}×{}), W {}\n", o.checkpoint, o.prefix, net.u.rows,
             net.u.cols, o.prefix, net.v.rows, net.v.cols,
             o.param_w.empty() ? fmt::format("drawn with Tr(WᵀW) = 1 (seed {})", o.seed) : "= " + o.param_w);
    return net;
  }
  Rng rng(o.seed);
  return random_matrix_net(o.r(), o.c(), connectivity_from_name(o.connectivity), rng, o.noise(), o.generator());
}

// eq. 12 needs convergent U and V; the system only needs ρ(U)ρ(V) < 1. Balance the (U, V) gauge if needed.
MatrixNet convergent_gauge(const MatrixNet& net, Output& out) {
  const double ru = spectral_radius(net.u), rv = spectral_radius(net.v);
  if (ru * rv >= 1.0)
    throw Error(fmt::format("capacity: ρ(U)ρ(V) = {:.6g} ≥ 1: the network has no stationary state and no Fisher "
                            "memory curve",
                            ru * rv));
  if (ru < 1.0 && rv < 1.0) return net;
  const double c = std::sqrt(rv / ru);
  out.text("note: ρ(U) = {:.4g}, ρ(V) = {:.4g}; eq. 49 needs both < 1, so U, V are rescaled to (cU, V/c), c = {:.4g} "
           "(same dynamics; eq. 12 depends on this choice, the exact curve does not)\n",
           ru, rv, c);
  return rescaled(net, c);
}

void describe(const MatrixNet& net, const Options& o, Output& out) {
  const bool normal = is_normal(net.u) && is_normal(net.v);
  out.text("matrix network X(n) = Uᵀ X(n−1) V + W s(n) + Z(n): {}×{} state ({} neurons), ε₁ = {}, ε₂ = {}\n",
           net.rows(), net.cols(), net.rows() * net.cols(), net.noise.eps1, net.noise.eps2);
  if (o.checkpoint.empty())
    out.text("  connectivity {} (seed {}, ρ ∈ [{}, {}]{}), ", o.connectivity, o.seed, o.rho_min, o.rho_max,
             o.connectivity == "nonnormal" ? fmt::format(", strength {}", o.strength) : "");
  else
    out.text("  ");
  out.text("ρ(U) = {:.4f}, ρ(V) = {:.4f}, U and V {}normal, Tr(WᵀW) = {:.6g}\n", spectral_radius(net.u),
           spectral_radius(net.v), normal ? "" : "not ", frobenius_squared(net.w));
}

void run_matrix(const Options& o) {
  Output out(o);
  MatrixNet net = convergent_gauge(make_net(o, out), out);
  describe(net, o, out);
  const MemoryCurve paper = fmc_eq12(net, o.k), exact = fmc_exact(net, o.k);
  const Covariances cov = row_column_covariances(net);
  out.table({"i", "J_eq12", "sum_eq12", "J_exact", "sum_exact"},
            {indices(paper.j.size()), paper.j, paper.running_sum(), exact.j, exact.running_sum()});
  out.text("input Fisher information Tr(WᵀW)/(ε₁ε₂) = {:.6g} (eq. 24)\n", paper.input_information);
  out.text("J_tot eq. 16 (infinite sum): {:.6f}   relative {:.6f}\n", paper.total, paper.relative());
  if (is_normal(net.u) && is_normal(net.v))
    out.text("J_tot eq. 18 closed form   : {:.6f}   (|eq. 16 − eq. 18| = {:.2e})\n", fmc_normal_eq17(net, 0).total,
             std::abs(fmc_normal_eq17(net, 0).total - paper.total));
  out.text("J_tot exact (true law)     : {:.6f}   relative {:.6f}   (Theorem 3 bound: {})\n", exact.total,
           exact.relative(), net.rows() * net.cols());
  out.text("eq. 49 relative residuals: max|Ψ − UᵀΨU − ε₁I|/max|Ψ| = {:.2e}, max|Σ − VᵀΣV − ε₂I|/max|Σ| = {:.2e}\n", cov.psi_residual,
           cov.sigma_residual);
}

void run_vector(const Options& o) {
  Output out(o);
  VectorNet net;
  if (!o.checkpoint.empty()) {
    net = vectorise(make_net(o, out));
    out.text("vector network: the checkpoint's matrix network vectorised, A = Uᵀ ⊗ Vᵀ ({} neurons)\n", net.v.size());
  } else {
    const std::size_t neurons = o.neurons ? o.neurons : o.r() * o.c();
    Rng rng(o.seed);
    net = random_vector_net(neurons, connectivity_from_name(o.connectivity), rng, o.eps1 * o.eps2, o.generator());
    out.text("vector network x(n) = A x(n−1) + v s(n) + z(n): {} neurons, {} A (seed {}, ρ(A) = {:.4f}), ‖v‖ = 1, "
             "ε = ε₁ε₂ = {}\n",
             neurons, o.connectivity, o.seed, spectral_radius(net.a), net.eps);
  }
  const MemoryCurve c = fmc_vector(net, o.k);
  out.table({"i", "J", "sum"}, {indices(c.j.size()), c.j, c.running_sum()});
  out.text("input Fisher information ‖v‖²/ε = {:.6g}\n", c.input_information);
  out.text("J_tot eq. 14 (infinite sum): {:.6f}   relative {:.6f}\n", c.total, c.relative());
}

std::vector<int> depth_ladder(int depth) {
  std::vector<int> d;
  for (int x : {0, 1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 100000, 1000000})
    if (x <= depth) d.push_back(x);
  if (d.back() != depth) d.push_back(depth);
  return d;
}

void run_queue(const Options& o) {
  Output out(o);
  MatrixNet net = convergent_gauge(make_net(o, out), out);
  describe(net, o, out);
  out.text("one-slot queue memory (eq. 34, p = 1, α₁ = 1): X(n) = Uᵀ X(n−1) V + W s(n) + X(n−2) + Z(n)\n");
  const QueueCurve q = fmc_queue(net, o.k, o.depth);
  const MemoryCurve base = fmc_eq12(net, o.k);
  const int horizon = std::max(o.horizon, o.k + 1);
  const HorizonCurve tq = fmc_horizon(net, horizon, true), tm = fmc_horizon(net, horizon, false);
  auto head = [&](const std::vector<double>& v) { return std::vector<double>(v.begin(), v.begin() + o.k + 1); };
  out.table({"k", fmt::format("J_eq41_D{}", o.depth), "sum_eq41", "J_eq12_nomem", "sum_eq12",
             fmt::format("J_queue_n{}", horizon), "sum_queue", fmt::format("J_nomem_n{}", horizon), "sum_nomem"},
            {indices(q.curve.j.size()), q.curve.j, q.curve.running_sum(), base.j, base.running_sum(), head(tq.curve.j),
             head(tq.curve.running_sum()), head(tm.curve.j), head(tm.curve.running_sum())});
  out.text("input Fisher information Tr(WᵀW)/(ε₁ε₂) = {:.6g}\n", q.curve.input_information);
  out.text("paper's series (eqs. 40–41), J'_tot by truncation depth D (D = 0: no memory, eq. 16){}:\n",
           is_normal(net.u) && is_normal(net.v) ? " [normal U, V: eigenbasis closed form]" : " [Stein recursion]");
  for (int d : depth_ladder(o.depth)) {
    const QueueCurve qd = fmc_queue(net, 0, d);
    out.text("  D = {:>7}: J'_tot = {:.6g}   relative {:.6g}{}\n", d, qd.curve.total, qd.curve.relative(),
             qd.reliable() ? "" : fmt::format("   (unreliable: cond Ψ_D = {:.1e}, Σ_D = {:.1e})", qd.psi_condition, qd.sigma_condition));
  }
  out.text("stability: companion matrix [[Uᵀ⊗Vᵀ, I], [I, 0]] has spectral radius {:.6f} (≥ 1 always: the queue network "
           "has no stationary state)\n",
           queue_spectral_radius(net));
  out.text("true law at horizon n = {} from rest: J_tot,rel with queue = {:.6f}{}, without = {:.6f} (bound {})\n",
           horizon, tq.curve.relative(),
           tq.reliable() ? "" : fmt::format(" (unreliable: cond C_n = {:.1e})", tq.condition), tm.curve.relative(),
           net.rows() * net.cols());
}

struct Stats {
  double mean = 0, sd = 0, min = INFINITY, max = -INFINITY;
};
Stats stats(const std::vector<double>& x) {
  Stats s;
  for (double v : x) {
    s.mean += v / double(x.size());
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  for (double v : x) s.sd += (v - s.mean) * (v - s.mean);
  s.sd = x.size() > 1 ? std::sqrt(s.sd / double(x.size() - 1)) : 0.0;
  return s;
}

void run_sweep(const Options& o) {
  if (!o.checkpoint.empty()) throw Error("capacity: --sweep draws random networks; it cannot be combined with --checkpoint");
  Output out(o);
  const Connectivity kind = connectivity_from_name(o.connectivity);
  const std::vector<std::size_t> sizes = parse_sweep(o.sweep);
  const double info = 1.0 / (o.eps1 * o.eps2);  // Tr(WᵀW) = 1
  out.text("sweep: {} networks, {} instances per size N (N×N state, N² neurons; vector nets have N² neurons), seed {}, "
           "ε₁ = {}, ε₂ = {}, ρ ∈ [{}, {}]; Tr(WᵀW) = 1 so J_tot = {} × J_tot,rel\n",
           o.connectivity, o.samples, o.seed, o.eps1, o.eps2, o.rho_min, o.rho_max, info);
  std::vector<std::string> header;
  std::vector<std::vector<double>> cols;
  Rng base(o.seed);
  for (std::size_t n : sizes) {
    std::vector<double> a, b, c;  // per kind: see headers below
    for (int s = 0; s < o.samples; ++s) {
      Rng rng = base.split(std::uint64_t(n) * 1000003u + std::uint64_t(s));
      if (o.kind == "vector") {
        const VectorNet vn = random_vector_net(n * n, kind, rng, o.eps1 * o.eps2, o.generator());
        a.push_back(fmc_vector(vn, 0).relative());
        continue;
      }
      const MatrixNet net = random_matrix_net(n, n, kind, rng, o.noise(), o.generator());
      if (o.kind == "matrix") {
        a.push_back(fmc_eq12(net, 0).relative());
        b.push_back(fmc_exact(net, 0).relative());
      } else {
        a.push_back(fmc_queue(net, 0, o.depth).curve.relative());
        b.push_back(fmc_eq12(net, 0).relative());
        c.push_back(fmc_horizon(net, o.horizon, true).curve.relative());
      }
    }
    std::vector<double> row{double(n), double(n * n)};
    const Stats sa = stats(a);
    row.insert(row.end(), {sa.mean * info, sa.mean, sa.sd, sa.min, sa.max});
    if (o.kind != "vector") {
      const Stats sb = stats(b);
      row.insert(row.end(), {sb.mean * info, sb.mean, sb.sd, sb.min, sb.max});
    }
    if (o.kind == "queue") {
      const Stats sc = stats(c);
      row.insert(row.end(), {sc.mean, sc.min, sc.max});
    }
    if (cols.empty()) cols.resize(row.size());
    for (std::size_t i = 0; i < row.size(); ++i) cols[i].push_back(row[i]);
  }
  if (o.kind == "matrix")
    header = {"N",        "neurons",   "Jtot_eq16",  "rel_eq16",  "sd_eq16",  "min_eq16",
              "max_eq16", "Jtot_exact", "rel_exact", "sd_exact", "min_exact", "max_exact"};
  else if (o.kind == "vector")
    header = {"N", "neurons", "Jtot_vec", "rel_vec", "sd_vec", "min_vec", "max_vec"};
  else
    header = {"N",        "neurons",  fmt::format("Jtot_eq41_D{}", o.depth), "rel_eq41", "sd_eq41", "min_eq41",
              "max_eq41", "Jtot_eq16", "rel_eq16", "sd_eq16", "min_eq16", "max_eq16",
              fmt::format("rel_queue_n{}", o.horizon), "min_queue", "max_queue"};
  out.table(header, cols);
}

void run_table(const Options& o) {
  if (!o.sweep.empty()) return run_sweep(o);
  if (o.kind == "matrix") return run_matrix(o);
  if (o.kind == "vector") return run_vector(o);
  return run_queue(o);
}
void run(const Options& o) {
  if (!o.plot.empty()) plot::format_of(o.plot, "--plot");  // refuse a wrong extension before computing
  run_table(o);
  if (o.plot.empty()) return;
  const std::string net = o.kind == "vector" ? "vector RNN" : o.kind == "queue" ? "matrix RNN with queue memory" : "matrix RNN";
  const std::string title =
      !o.sweep.empty()
          ? fmt::format("Relative capacity by size: {} ({} {} networks per N)", net, o.samples, o.connectivity)
          : fmt::format("Fisher memory curve: {}{}", net,
                        o.checkpoint.empty() ? fmt::format(" ({}×{}, {})", o.r(), o.c(), o.connectivity)
                                             : fmt::format(" ({})", o.checkpoint));
  plot::capacity_chart(o.plot, title, o.table->header, o.table->columns);
  fmt::print(o.csv == "-" ? stderr : stdout, "wrote {}\n", o.plot);
}

}  // namespace

void add_capacity_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "capacity", "Fisher memory curve J(i) and capacity J_tot of linear matrix RNNs (paper 000 §2–5)");
  cmd->add_option("--kind", o->kind, "matrix (eqs. 12/16 and the exact curve), vector (eq. 14) or queue (eqs. 34–41)")
      ->check(CLI::IsMember({"matrix", "vector", "queue"}))
      ->capture_default_str();
  cmd->add_option("--n", o->n, "state size N (N×N matrices)")
      ->check(whole_number(1, kMaxCapacitySide))
      ->capture_default_str();
  cmd->add_option("--rows", o->rows, "rectangular state: rows r (overrides --n)")->check(whole_number(1, kMaxCapacitySide));
  cmd->add_option("--cols", o->cols, "rectangular state: columns c (overrides --n)")->check(whole_number(1, kMaxCapacitySide));
  cmd->add_option("--neurons", o->neurons, "vector network size (default: r·c, as many neurons as the matrix net)")
      ->check(whole_number(1, kMaxCapacityNeurons));
  cmd->add_option("--eps1", o->eps1, "row noise variance ε₁")
      ->check(real_number(0, kMaxCapacityNoise, true))
      ->capture_default_str();
  cmd->add_option("--eps2", o->eps2, "column noise variance ε₂")
      ->check(real_number(0, kMaxCapacityNoise, true))
      ->capture_default_str();
  cmd->add_option("--k", o->k, "print J(i) for i = 0..K")->check(whole_number(0, kMaxCapacityLag))->capture_default_str();
  cmd->add_option("--connectivity", o->connectivity, "random U, V: normal (convergent) or nonnormal")
      ->check(CLI::IsMember({"normal", "nonnormal"}))
      ->capture_default_str();
  cmd->add_option("--rho-min", o->rho_min, "smallest eigenvalue modulus of normal U, V")
      ->check(real_number(0, 1))
      ->capture_default_str();
  cmd->add_option("--rho-max", o->rho_max, "largest eigenvalue modulus of random U, V (< 1)")
      ->check(real_number(0, 1))
      ->capture_default_str();
  cmd->add_option("--strength", o->strength, "non-normal part of nonnormal U, V")
      ->check(real_number(0, kMaxCapacityStrength))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed")->check(whole_number(0, kMaxSeed))->capture_default_str();
  cmd->add_option("--depth", o->depth, "queue: truncation depth D of the series over m (eq. 40)")
      ->check(whole_number(0, kMaxCapacityDepth))
      ->capture_default_str();
  cmd->add_option("--horizon", o->horizon, "queue: horizon n of the exact finite-time curve")
      ->check(whole_number(1, kMaxCapacityHorizon))
      ->capture_default_str();
  cmd->add_option("--checkpoint", o->checkpoint, "take U, V from a checkpoint: a run directory or its checkpoint.safetensors")->check(CLI::ExistingPath);
  cmd->add_option("--prefix", o->prefix, "checkpoint: layer whose <prefix>/h/U, <prefix>/h/V are used")->capture_default_str();
  cmd->add_option("--param-w", o->param_w, "checkpoint: tensor to use as W (default: random, Tr(WᵀW) = 1)");
  cmd->add_option("--csv", o->csv, "write the table as CSV to FILE, or '-' for stdout (text then goes to stderr)");
  cmd->add_option("--plot", o->plot, "also draw the table: FILE.png or FILE.svg (J(i) and its running sum; J_tot by N with --sweep)");
  cmd->add_option("--sweep", o->sweep, "J_tot across sizes: N=a,b,c or a:b[:step]");
  cmd->add_option("--samples", o->samples, "sweep: random instances per size")
      ->check(whole_number(1, kMaxCapacitySamples))
      ->capture_default_str();
  cmd->callback([o] { run(*o); });
}

}  // namespace matmem::tools
