#include "matmem/models/registry.hpp"

#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "matmem/models/data/fashion_mnist.hpp"
#include "matmem/models/data/fashion_reconstruction.hpp"
#include "matmem/models/data/user_data.hpp"
#include "matmem/models/dnc/matdnc.hpp"
#include "matmem/models/fastweights/fast_weights.hpp"
#include "matmem/models/ffn/autoencoder.hpp"
#include "matmem/models/ffn/ffn.hpp"
#include "matmem/models/gamma/gamma_network.hpp"
#include "matmem/models/graph/cln.hpp"
#include "matmem/models/ntm/matntm.hpp"
#include "matmem/models/rnn/recurrent.hpp"
#include "matmem/models/tasks/delayed_recall.hpp"
#include "matmem/models/tasks/graph.hpp"
#include "matmem/models/tasks/keep_discard.hpp"
#include "matmem/models/tasks/mackey_glass.hpp"
#include "matmem/models/tasks/ngrams.hpp"
#include "matmem/models/tasks/priority_sort.hpp"
#include "matmem/models/tasks/repeat_copy.hpp"
#include "matmem/models/tasks/retrieval.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {
namespace {
// A model config's frame sizes: those of the task it trains on.
template <class ModelConfig>
void set_io(ModelConfig& m, const Task& t) {
  m.input_rows = t.input_rows();
  m.input_cols = t.input_cols();
  m.output_rows = t.output_rows();
  m.output_cols = t.output_cols();
}

// controller.clip and controller.clip_logits, checked.
std::pair<double, bool> controller_clip(const Config& c) {
  const double clip = c.num("controller.clip");
  const bool logits = c.flag("controller.clip_logits");
  if (!(clip >= 0) || !std::isfinite(clip))
    throw Error(fmt::format("config: controller.clip = {}: give 0 (off) or a finite bound > 0", clip));
  if (logits && clip == 0)
    throw Error("config: controller.clip_logits = true needs a bound: set controller.clip > 0");
  return {clip, logits};
}

// A content addressing's cosine_eps key (ntm.cosine_eps, dnc.cosine_eps), checked: 0, or a finite ε > 0.
double cosine_eps(const Config& c, const char* key) {
  const double eps = c.num(key);
  if (!(eps >= 0) || !std::isfinite(eps))
    throw Error(fmt::format("config: {} = {}: choose a finite value of at least 0 (0: exact norms and 1e-8 on "
                            "their product)", key, eps));
  return eps;
}

std::unique_ptr<Model> recurrent(CellKind kind, const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  RecurrentConfig rc;
  rc.cell = kind;
  rc.forget_bias = c.num("lstm.forget_bias");
  std::tie(rc.clip, rc.clip_logits) = controller_clip(c);
  rc.attention_heads = c.integer("rnn.attention_heads");
  if (rc.attention_heads < 0 || rc.attention_heads > 64)
    throw Error(fmt::format("config: rnn.attention_heads = {}: choose 0 (no attention) to 64", rc.attention_heads));
  rc.layers = c.sizes("model.layers");
  set_io(rc, t);
  return std::make_unique<RecurrentModel>(rc, dtype, seed);
}

std::unique_ptr<Model> ntm(const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  NTMConfig nc;
  const std::string ctrl = c.str("ntm.controller");
  if (ctrl != "rnn" && ctrl != "lstm" && ctrl != "ff")
    throw Error(fmt::format("config: ntm.controller = {}: choose rnn, lstm or ff", ctrl));
  nc.controller = cell_kind(ctrl);
  nc.forget_bias = c.num("ntm.forget_bias");
  std::tie(nc.controller_clip, nc.clip_logits) = controller_clip(c);
  nc.layers = c.sizes("model.layers");
  // The MatNTM checks these too; here each is refused naming its key.
  auto in_range = [&](const char* key, std::int64_t lo, std::int64_t hi, const char* why) {
    const std::int64_t v = c.integer(key);
    if (v < lo || v > hi) throw Error(fmt::format("config: {} = {}: {}", key, v, why));
    return v;
  };
  nc.slots = in_range("ntm.slots", 2, std::int64_t(1) << 24, "the memory needs at least 2 slots");
  nc.slot_rows = in_range("ntm.slot_rows", 1, std::int64_t(1) << 12, "a slot needs at least one row");
  nc.slot_cols = in_range("ntm.slot_cols", 1, std::int64_t(1) << 12, "a slot needs at least one column");
  nc.read_heads = int(in_range("ntm.read_heads", 1, 16, "choose 1 to 16 read heads (16 heads in all)"));
  nc.write_heads = int(in_range("ntm.write_heads", 0, 16 - nc.read_heads,
                                fmt::format("choose 0 to {} write heads ({} read, 16 heads in all)", 16 - nc.read_heads,
                                            nc.read_heads).c_str()));
  nc.shift = int(in_range("ntm.shift", 0, (nc.slots - 1) / 2,
                          fmt::format("shifts -S..S need 2S+1 ≤ ntm.slots ({})", nc.slots).c_str()));
  const std::int64_t segment = c.integer("ntm.memory_segment");
  if (segment < 0 || segment > Tape::kMaxSegment)
    throw Error(fmt::format("config: ntm.memory_segment = {}: choose 0 (automatic) or 1..{}", segment,
                            Tape::kMaxSegment));
  nc.memory_segment = int(segment);
  const std::string w0 = c.str("ntm.initial_weighting");
  if (w0 != "first_slot" && w0 != "zero")
    throw Error(fmt::format("config: ntm.initial_weighting = {}: choose first_slot or zero", w0));
  nc.initial_weighting = w0 == "zero" ? NTMConfig::Start::zero : NTMConfig::Start::first_slot;
  const std::string m0 = c.str("ntm.memory_init");
  if (m0 == "constant") nc.memory_init = NTMConfig::MemoryInit::constant;
  else if (m0 == "learned") nc.memory_init = NTMConfig::MemoryInit::learned;
  else if (m0 == "random") nc.memory_init = NTMConfig::MemoryInit::random;
  else throw Error(fmt::format("config: ntm.memory_init = {}: choose constant, learned or random", m0));
  nc.cosine_eps = cosine_eps(c, "ntm.cosine_eps");
  set_io(nc, t);
  return std::make_unique<MatNTM>(nc, dtype, seed);
}

std::unique_ptr<Model> dnc(const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  DNCConfig dc;
  const std::string ctrl = c.str("dnc.controller");
  if (ctrl != "lstm" && ctrl != "rnn" && ctrl != "ff")
    throw Error(fmt::format("config: dnc.controller = {}: choose lstm, rnn or ff", ctrl));
  dc.controller = cell_kind(ctrl);
  std::tie(dc.controller_clip, dc.clip_logits) = controller_clip(c);
  dc.layers = c.sizes("model.layers");
  auto in_range = [&](const char* key, std::int64_t lo, std::int64_t hi, const char* why) {
    const std::int64_t v = c.integer(key);
    if (v < lo || v > hi) throw Error(fmt::format("config: {} = {}: {}", key, v, why));
    return v;
  };
  dc.slots = in_range("dnc.slots", 2, 4096, "choose 2 to 4096 slots (the links are N x N per sequence)");
  dc.slot_rows = in_range("dnc.slot_rows", 1, std::int64_t(1) << 12, "a slot needs at least one row");
  dc.slot_cols = in_range("dnc.slot_cols", 1, std::int64_t(1) << 12, "a slot needs at least one column");
  dc.read_heads = int(in_range("dnc.read_heads", 1, std::int64_t(kDncMaxReadHeads), "choose 1 to 16 read heads"));
  const std::string usage = c.str("dnc.usage_gradient");
  if (usage != "stop" && usage != "full")
    throw Error(fmt::format("config: dnc.usage_gradient = {}: choose stop (DeepMind's) or full (the paper's)", usage));
  dc.usage_gradient = usage == "full" ? DNCConfig::UsageGradient::full : DNCConfig::UsageGradient::stop;
  dc.free_gates = c.flag("dnc.free_gates");
  dc.cosine_eps = cosine_eps(c, "dnc.cosine_eps");
  set_io(dc, t);
  return std::make_unique<MatDNC>(dc, dtype, seed);
}

std::unique_ptr<Model> gamma(const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  GammaNetworkConfig gc;
  const std::string kind = c.str("gamma.kind");
  try {
    gc.memory.kind = gamma_kind(kind);
  } catch (const Error& e) {
    throw Error(fmt::format("config: gamma.kind = {}: {}", kind, e.what()));
  }
  const std::int64_t taps = c.integer("gamma.taps");
  if (taps < 1 || taps > 64) throw Error(fmt::format("config: gamma.taps = {}: choose 1 to 64 taps", taps));
  gc.memory.taps = int(taps);
  const double mu = c.num("gamma.mu"), nu = c.num("gamma.nu");
  if (!(mu > 0 && mu < 2)) throw Error(fmt::format("config: gamma.mu = {}: μ must be in (0, 2) (stability)", mu));
  gc.memory.mu = mu;
  if (gc.memory.kind == GammaKind::gamma2 && !(nu > 0 && nu < 2 / mu - 1))
    throw Error(fmt::format("config: gamma.nu = {}: ν must be in (0, 2/μ − 1) = (0, {}) for gamma.mu = {} (stability: "
                            "μ(1 + ν) < 2)", nu, 2 / mu - 1, mu));
  gc.memory.nu = nu;
  const std::string placement = c.str("gamma.placement");
  if (placement != "input" && placement != "hidden")
    throw Error(fmt::format("config: gamma.placement = {}: choose input (focused) or hidden (distributed)", placement));
  gc.placement = placement == "input" ? GammaNetworkConfig::Placement::input : GammaNetworkConfig::Placement::hidden;
  gc.layers = c.sizes("model.layers");
  set_io(gc, t);
  return std::make_unique<GammaNetwork>(gc, dtype, seed);
}

std::unique_ptr<Model> fast_weights(bool fast, const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  FastWeightsConfig fc;
  const auto layers = c.sizes("model.layers");
  if (layers.size() != 1)
    throw Error(fmt::format("config: model.layers = {}: {} has one recurrent layer, RxC (1xn: the vector model)",
                            c.str("model.layers"), fast ? "fastweights" : "irnn"));
  fc.rows = layers[0].first, fc.cols = layers[0].second;
  fc.fast = fast;
  fc.init_scale = c.num(fast ? "fw.init_scale" : "irnn.init_scale");
  if (fast) {
    fc.lambda = c.num("fw.lambda"), fc.eta = c.num("fw.eta");
    if (!(fc.lambda >= 0 && fc.lambda <= 1))
      throw Error(fmt::format("config: fw.lambda = {}: the decay λ must be in [0, 1]", fc.lambda));
    if (!std::isfinite(fc.eta)) throw Error(fmt::format("config: fw.eta = {}: η must be finite", fc.eta));
    const std::int64_t inner = c.integer("fw.inner_steps");
    if (inner < 1 || inner > 64) throw Error(fmt::format("config: fw.inner_steps = {}: choose 1 to 64", inner));
    fc.inner_steps = int(inner);
    const std::string norm = c.str("fw.layer_norm");
    if (norm == "sum") fc.norm = FastWeightsConfig::Norm::sum;
    else if (norm == "slow") fc.norm = FastWeightsConfig::Norm::slow;
    else if (norm == "none") fc.norm = FastWeightsConfig::Norm::none;
    else throw Error(fmt::format("config: fw.layer_norm = {}: choose sum (Ba et al.), slow (004 §7) or none", norm));
    fc.learn_lambda = c.flag("fw.learn_lambda"), fc.learn_eta = c.flag("fw.learn_eta");
    if (fc.learn_lambda && !(fc.lambda > 0 && fc.lambda < 1))
      throw Error(fmt::format("config: fw.lambda = {}: a learned λ = σ(θ) must start in (0, 1)", fc.lambda));
    if (fc.learn_eta && !(fc.eta > 0))
      throw Error(fmt::format("config: fw.eta = {}: a learned η = softplus(θ) must start above 0", fc.eta));
    fc.input_terms = c.integer("fw.input_terms"), fc.output_terms = c.integer("fw.output_terms");
    if (fc.input_terms < 0 || fc.input_terms > 64)
      throw Error(fmt::format("config: fw.input_terms = {}: choose 1 to 64 terms, or 0 (the state's rows)", fc.input_terms));
    if (fc.output_terms < 1 || fc.output_terms > 64)
      throw Error(fmt::format("config: fw.output_terms = {}: choose 1 to 64 terms", fc.output_terms));
    const std::string over = c.str("fw.layer_norm_over");
    if (over != "matrix" && over != "rows")
      throw Error(fmt::format("config: fw.layer_norm_over = {}: choose matrix or rows", over));
    fc.norm_rows = over == "rows";
    const std::string form = c.str("fw.form");
    if (form == "auto") fc.form = FastWeightsConfig::Form::automatic;
    else if (form == "sum") fc.form = FastWeightsConfig::Form::sum;
    else if (form == "matrix") fc.form = FastWeightsConfig::Form::matrix;
    else throw Error(fmt::format("config: fw.form = {}: choose auto, sum (the past states) or matrix (A kept)", form));
    // The mean sequence length, for "auto": a few sequences from a stream of their own.
    Rng rng(0x5eed);
    std::int64_t steps = 0;
    for (int k = 0; k < 8; ++k) steps += std::int64_t(t.sample(rng).inputs.size());
    fc.typical_steps = steps / 8;
  }
  set_io(fc, t);
  return std::make_unique<FastWeightsRNN>(fc, dtype, seed);
}

std::unique_ptr<Model> cln(const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  CLNConfig cc;
  const auto layers = c.sizes("model.layers");
  if (layers.size() != 1)
    throw Error(fmt::format("config: model.layers = {}: cln has one node state shape, RxC (1xn: vector states)",
                            c.str("model.layers")));
  cc.rows = layers[0].first, cc.cols = layers[0].second;
  cc.height = c.integer("cln.height");
  if (cc.height < 1 || cc.height > 64) throw Error(fmt::format("config: cln.height = {}: choose 1 to 64", cc.height));
  const std::string aggregate = c.str("cln.aggregate");
  if (aggregate == "mean") cc.aggregate = CLNConfig::Aggregate::mean;
  else if (aggregate == "attention") cc.aggregate = CLNConfig::Aggregate::attention;
  else if (aggregate == "flatten") cc.aggregate = CLNConfig::Aggregate::flatten;
  else throw Error(fmt::format("config: cln.aggregate = {}: choose mean, attention or flatten", aggregate));
  cc.slots = c.integer("cln.slots");
  if (cc.slots < 1 || cc.slots > 4096) throw Error(fmt::format("config: cln.slots = {}: choose 1 to 4096", cc.slots));
  cc.heads = c.integer("cln.heads");
  if (cc.heads < 1 || cc.heads > 64) throw Error(fmt::format("config: cln.heads = {}: choose 1 to 64", cc.heads));
  cc.highway = c.flag("cln.highway");
  const std::string embed = c.str("cln.embed");
  if (embed == "dense") cc.embed = CLNConfig::Embed::dense;
  else if (embed == "matrix") cc.embed = CLNConfig::Embed::matrix;
  else throw Error(fmt::format("config: cln.embed = {}: choose dense or matrix", embed));
  if (cc.embed == CLNConfig::Embed::dense && cc.rows > 21)
    throw Error(fmt::format("config: model.layers = {}: the dense embedding (cln.embed) takes at most 21 rows",
                            c.str("model.layers")));
  set_io(cc, t);
  return std::make_unique<CLN>(cc, dtype, seed);
}

// ffn.activation, shared by the feed-forward nets and the auto-encoders.
Activation ffn_activation(const Config& c) {
  const std::string act = c.str("ffn.activation");
  if (act == "relu") return Activation::relu;
  if (act == "tanh") return Activation::tanh;
  if (act == "sigmoid") return Activation::sigmoid;
  throw Error(fmt::format("config: ffn.activation = {}: choose relu, tanh or sigmoid", act));
}

std::unique_ptr<Model> ffn(const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  FFNConfig fc;
  const auto layers = c.sizes("model.layers");
  if (layers.size() != 1)
    throw Error(fmt::format("config: model.layers = {}: ffn's hidden layers share one shape RxC (1xn: a vector net); "
                            "their number is ffn.depth", c.str("model.layers")));
  fc.rows = layers[0].first, fc.cols = layers[0].second;
  const std::int64_t depth = c.integer("ffn.depth");
  if (depth < 1 || depth > 1000) throw Error(fmt::format("config: ffn.depth = {}: choose 1 to 1000 hidden layers", depth));
  fc.depth = depth;
  const std::string norm = c.str("ffn.norm");
  if (norm == "none") fc.norm = FFNConfig::Norm::none;
  else if (norm == "layer") fc.norm = FFNConfig::Norm::layer;
  else if (norm == "batch") fc.norm = FFNConfig::Norm::batch;
  else throw Error(fmt::format("config: ffn.norm = {}: choose none, layer or batch", norm));
  if (fc.norm == FFNConfig::Norm::layer && fc.rows * fc.cols < 2)
    throw Error(fmt::format("config: ffn.norm = layer over model.layers = {}: a layer needs 2 elements or more",
                            c.str("model.layers")));
  fc.residual = c.flag("ffn.residual");
  fc.activation = ffn_activation(c);
  set_io(fc, t);
  return std::make_unique<FFN>(fc, dtype, seed);
}

std::unique_ptr<Model> autoencoder(const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  AutoencoderConfig ac;
  const auto layers = c.sizes("model.layers");
  if (layers.size() != 1)
    throw Error(fmt::format("config: model.layers = {}: the autoencoder's hidden layers share one shape RxC (1xn: a "
                            "vector auto-encoder); their number is ffn.depth", c.str("model.layers")));
  ac.rows = layers[0].first, ac.cols = layers[0].second;
  const std::int64_t depth = c.integer("ffn.depth");
  if (depth < 2 || depth > 1000 || depth % 2 != 0)
    throw Error(fmt::format("config: ffn.depth = {}: the autoencoder has an even number of layers, 2 to 1000 (half "
                            "encoder, half decoder)", depth));
  ac.encoder_layers = depth / 2;
  if (c.str("ffn.norm") == "batch") ac.batch_norm = true;
  else if (c.str("ffn.norm") != "none")
    throw Error(fmt::format("config: ffn.norm = {}: the autoencoder has none or batch", c.str("ffn.norm")));
  if (c.flag("ffn.residual")) throw Error("config: ffn.residual = true: the autoencoder has no residual blocks");
  ac.activation = ffn_activation(c);
  if (t.output_rows() != t.input_rows() || t.output_cols() != t.input_cols())
    throw Error(fmt::format("config: the autoencoder reconstructs its input, but task {} maps {}x{} frames to {}x{} "
                            "(use fashion_mnist_ae)", t.name(), t.input_rows(), t.input_cols(), t.output_rows(),
                            t.output_cols()));
  ac.input_rows = t.input_rows(), ac.input_cols = t.input_cols();
  return std::make_unique<MatAutoencoder>(ac, dtype, seed);
}

std::map<std::string, ModelFactory>& factories() {
  static std::map<std::string, ModelFactory> all = {
      {"matntm", ntm},
      {"matdnc", dnc},
      {"ffn", ffn},
      {"autoencoder", autoencoder},
      {"gamma", gamma},
      {"cln", cln},
      {"fastweights", [](const Config& c, const Task& t, DType d, std::uint64_t s) { return fast_weights(true, c, t, d, s); }},
      {"irnn", [](const Config& c, const Task& t, DType d, std::uint64_t s) { return fast_weights(false, c, t, d, s); }},
      {"matrnn", [](const Config& c, const Task& t, DType d, std::uint64_t s) { return recurrent(CellKind::rnn, c, t, d, s); }},
      {"matlstm", [](const Config& c, const Task& t, DType d, std::uint64_t s) { return recurrent(CellKind::lstm, c, t, d, s); }},
      {"matgru", [](const Config& c, const Task& t, DType d, std::uint64_t s) { return recurrent(CellKind::gru, c, t, d, s); }},
  };
  return all;
}
}  // namespace

void register_model(const std::string& name, ModelFactory factory) {
  if (factories().count(name) || canonical_model_name(name) != name) throw Error(fmt::format("a model named {} is already registered", name));
  factories()[name] = std::move(factory);
}

std::string canonical_model_name(const std::string& name) { return name == "ntm" ? "matntm" : name; }

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& [name, f] : factories()) names.push_back(name);
  return names;
}

std::unique_ptr<Model> make_model(const Config& config, const Task& task, DType dtype) {
  check_config(config);
  const std::string name = config.str("model");
  auto it = factories().find(name);
  if (it == factories().end()) {
    std::string known;
    for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error(fmt::format("config: unknown model {} (known: {})", name, known));
  }
  auto model = it->second(config, task, dtype, std::uint64_t(config.integer("seed")));
  model->set_state_gradient_clip(config.num("clip.state_gradient"));  // its range: check_config
  model->build();
  return model;
}

namespace {
// The tasks make_task() builds itself.
constexpr const char* kBuiltinTasks[] = {"copy", "recall", "repeat_copy", "priority_sort", "ngrams", "keep_discard",
                                         "delay", "retrieval", "matrix_retrieval", "mackey_glass", "fashion_mnist",
                                         "fashion_mnist_ae", "data", "graph"};

std::vector<std::pair<std::string, TaskFactory>>& task_factories() {
  static std::vector<std::pair<std::string, TaskFactory>> all;
  return all;
}
}  // namespace

void register_task(const std::string& name, TaskFactory factory) {
  for (const std::string& n : task_names())
    if (n == name) throw Error(fmt::format("a task named {} is already registered", name));
  task_factories().emplace_back(name, std::move(factory));
}

std::vector<std::string> task_names() {
  std::vector<std::string> names(std::begin(kBuiltinTasks), std::end(kBuiltinTasks));
  for (const auto& [name, f] : task_factories()) names.push_back(name);
  return names;
}

std::unique_ptr<Task> make_task(const Config& c) {
  const std::string name = c.str("task");
  for (const auto& [n, factory] : task_factories())
    if (n == name) return factory(c);
  if (name == "copy")
    return std::make_unique<CopyTask>(CopyTaskOptions{c.integer("task.rows"), c.integer("task.cols"),
                                                      c.integer("task.min_length"), c.integer("task.max_length"),
                                                      c.integer("batch")});
  if (name == "recall")
    return std::make_unique<RecallTask>(RecallTaskOptions{c.integer("task.rows"), c.integer("task.cols"),
                                                          c.integer("task.item_matrices"), c.integer("task.min_items"),
                                                          c.integer("task.max_items"), c.integer("batch")});
  if (name == "repeat_copy")
    return std::make_unique<RepeatCopyTask>(RepeatCopyOptions{
        c.integer("task.rows"), c.integer("task.cols"), c.integer("task.min_length"), c.integer("task.max_length"),
        c.integer("task.min_repeats"), c.integer("task.max_repeats"), c.integer("batch"), c.str("task.size_by"),
        c.integer("task.fixed_size")});
  if (name == "keep_discard") {
    KeepDiscardOptions o;
    o.rows = c.integer("task.rows"), o.cols = c.integer("task.cols"), o.batch = c.integer("batch");
    o.min_subsequences = c.integer("task.min_subsequences"), o.max_subsequences = c.integer("task.max_subsequences");
    o.keep = c.integer("task.keep"), o.keep_first = c.flag("task.keep_first");
    o.min_keep_length = c.integer("task.min_keep_length"), o.max_keep_length = c.integer("task.max_keep_length");
    o.min_discard_length = c.integer("task.min_discard_length");
    o.max_discard_length = c.integer("task.max_discard_length");
    return std::make_unique<KeepDiscardTask>(o);
  }
  if (name == "priority_sort")
    return std::make_unique<PrioritySortTask>(PrioritySortOptions{c.integer("task.rows"), c.integer("task.cols"),
                                                                  c.integer("task.inputs"), c.integer("task.outputs"),
                                                                  c.integer("batch")});
  if (name == "ngrams")
    return std::make_unique<NgramTask>(NgramOptions{c.integer("task.order"), c.integer("task.bits"), c.integer("batch")});
  if (name == "delay") {
    const std::int64_t d = c.integer("task.delay");
    if (d < 1) throw Error(fmt::format("config: task.delay = {}: the delay must be ≥ 1 step", d));
    return std::make_unique<DelayedRecallTask>(DelayedRecallOptions{c.integer("task.rows"), c.integer("task.cols"), d,
                                                                    c.integer("task.min_length"),
                                                                    c.integer("task.max_length"), c.integer("batch")});
  }
  if (name == "retrieval") {
    if (!c.flag("task.fixed"))
      return std::make_unique<RetrievalTask>(RetrievalOptions{c.integer("task.pairs"), c.integer("batch")});
    for (const char* key : {"task.train_strings", "task.validation_strings", "task.test_strings", "task.data_seed"})
      if (c.integer(key) < 0) throw Error(fmt::format("config: {} = {} must be ≥ 0", key, c.integer(key)));
    FixedRetrievalOptions o;
    o.pairs = c.integer("task.pairs"), o.batch = c.integer("batch");
    o.train = c.integer("task.train_strings"), o.validation = c.integer("task.validation_strings");
    o.test = c.integer("task.test_strings");
    o.data_seed = std::uint64_t(c.integer("task.data_seed")), o.seed = std::uint64_t(c.integer("seed"));
    return std::make_unique<FixedRetrievalTask>(o);
  }
  if (name == "matrix_retrieval")
    return std::make_unique<MatrixRetrievalTask>(MatrixRetrievalOptions{c.integer("task.rows"), c.integer("task.cols"),
                                                                        c.integer("task.pairs"), c.integer("batch")});
  if (name == "mackey_glass")
    return std::make_unique<MackeyGlassTask>(MackeyGlassOptions{c.integer("task.horizon"), c.integer("task.min_length"),
                                                                c.integer("task.max_length"), c.integer("batch")});
  if (name == "graph") {
    if (c.integer("micro_batch") != 0)
      throw Error(fmt::format("config: micro_batch = {}: the graph task is one batch of the whole graph, which must "
                              "not be split: set micro_batch = 0", c.integer("micro_batch")));
    if (c.integer("threads") != 1)
      throw Error(fmt::format("config: threads = {}: the graph task is one batch of the whole graph, which must not "
                              "be split: set threads = 1", c.integer("threads")));
    GraphTaskOptions o;
    CitationGraphOptions& g = o.graph;
    g.nodes = c.integer("task.graph.nodes"), g.classes = c.integer("task.graph.classes");
    g.degree = c.num("task.graph.degree"), g.homophily = c.num("task.graph.homophily");
    g.words = c.integer("task.graph.words"), g.words_per_node = c.integer("task.graph.words_per_node");
    g.topic_words = c.integer("task.graph.topic_words"), g.feature_signal = c.num("task.graph.feature_signal");
    g.test = c.integer("task.graph.test"), g.validation = c.integer("task.graph.validation");
    const std::int64_t seed = c.integer("task.graph.seed");
    if (seed < 0) throw Error(fmt::format("config: task.graph.seed = {} must be ≥ 0", seed));
    g.seed = std::uint64_t(seed);
    o.feature_rows = c.integer("task.graph.feature_rows"), o.sample = c.integer("task.graph.sample");
    return std::make_unique<GraphTask>(o);
  }
  if (name == "fashion_mnist" || name == "fashion_mnist_ae") {
    FashionMnistOptions o;
    o.data_dir = c.str("task.data_dir");
    o.train = c.integer("task.train"), o.validation = c.integer("task.validation"), o.test = c.integer("task.test");
    for (const char* key : {"task.train", "task.validation", "task.test", "task.split_seed"})
      if (c.integer(key) < 0) throw Error(fmt::format("config: {} = {} must be ≥ 0", key, c.integer(key)));
    if (o.train < 1) throw Error(fmt::format("config: task.train = {} must be ≥ 1", o.train));
    o.batch = c.integer("batch");
    o.split_seed = std::uint64_t(c.integer("task.split_seed"));
    o.seed = std::uint64_t(c.integer("seed"));
    o.flatten = c.flag("task.flatten");
    if (name == "fashion_mnist") return std::make_unique<FashionMnistTask>(o);
    const double noise = c.num("task.noise");
    if (!(noise >= 0 && noise < 1)) throw Error(fmt::format("config: task.noise = {} must be in [0, 1)", noise));
    return std::make_unique<FashionMnistReconstructionTask>(o, noise);
  }
  if (name == "data") {
    UserDataOptions o;
    o.data = c.str("task.data"), o.loss = c.str("task.loss"), o.classes = c.integer("task.classes");
    if (o.classes < 0) throw Error(fmt::format("config: task.classes = {} must be ≥ 0", o.classes));
    o.batch = c.integer("batch");
    o.seed = std::uint64_t(c.integer("seed"));
    return std::make_unique<UserDataTask>(o);
  }
  std::string known;
  for (const std::string& n : task_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(fmt::format("config: unknown task {} (known: {})", name, known));
}

}  // namespace matmem
