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
#include "matmem/models/tasks/flat_frames.hpp"
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
// --- Each built-in model's config keys, declared once: name, default, meaning and range (check_config()
// checks the ranges before any factory runs; a factory checks only what joins two keys, or a key and the task).

const std::vector<ConfigKey> kRecurrentKeys = {
    {"lstm.forget_bias", "1.0", "a matlstm's forget-gate bias at the start"},
    {"rnn.attention_heads", "0", "matrnn, matlstm, matgru: queries of an attention read over the last layer's states so "
                                 "far, read into the output (with matlstm 1xn: Ba et al.'s A-LSTM; 0: none)",
     {.min = 0, .max = 64, .note = "0: no attention"}},
};

const std::vector<ConfigKey> kFfnKeys = {
    {"ffn.depth", "10", "ffn: hidden layers, each of the shape model.layers (one RxC; 1xn: a vector net); autoencoder: "
                        "all its layers, encoder and decoder (even)",
     {.min = 1, .max = 1000}},
    {"ffn.norm", "\"none\"", "ffn: none, layer (layer norm of each layer's pre-activation, with gain and shift) or batch "
                             "(batch norm of each element over the whole batch, with gain and shift; running averages, "
                             "momentum 0.1, in evaluation); autoencoder: none or batch (every hidden layer, encoder and "
                             "decoder)",
     {.choices = {"none", "layer", "batch"}}},
    {"ffn.residual", "false", "ffn: matrix ResNet blocks H_l = H_{l-1} + F(H_{l-1}) after the first layer (001 §2.2)"},
    {"ffn.activation", "\"relu\"", "ffn: the hidden layers' nonlinearity: relu, tanh or sigmoid",
     {.choices = {"relu", "tanh", "sigmoid"}}},
};

const std::vector<ConfigKey> kGammaKeys = {
    {"gamma.kind", "\"gamma\"", "gamma model's memory: gamma, laguerre, gamma2 or delay (the tap delay line; see "
                                "models/layers/gamma.hpp)",
     {.choices = {"gamma", "laguerre", "gamma2", "delay"}}},
    {"gamma.taps", "4", "gamma model's memory taps K (1: the context unit)", {.min = 1, .max = 64}},
    {"gamma.mu", "0.5", "gamma model's initial μ, in (0, 2) (1: the tap delay line); learned",
     {.min = 0, .max = 2, .above = true, .below = true, .note = "stability"}},
    {"gamma.nu", "0.5", "gamma2 memory's initial ν, in (0, 2/μ − 1) (stable: μ(1 + ν) < 2); learned"},
    {"gamma.placement", "\"input\"",
     "gamma model's memory on the input (focused) or on the first dense layer's output (hidden: distributed)",
     {.choices = {"input", "hidden"}}},
};

const std::vector<ConfigKey> kFastWeightsKeys = {
    {"fw.lambda", "0.95", "fastweights: decay λ of the fast weights, in [0, 1]", {.min = 0, .max = 1}},
    {"fw.eta", "0.5", "fastweights: fast learning rate η"},
    {"fw.inner_steps", "1", "fastweights: inner-loop steps S per time step (1 to 64)", {.min = 1, .max = 64}},
    {"fw.layer_norm", "\"sum\"",
     "fastweights: layer norm over the sum (Ba et al.), over the slow part only (slow, 004 §7), or none",
     {.choices = {"sum", "slow", "none"}}},
    {"fw.init_scale", "0.05", "fastweights: the recurrence starts as this times the identity"},
    {"fw.input_terms", "0",
     "fastweights: bilinear terms of the input map Σ U_iᵀ X V_i (0: the state's rows, which reach any linear map "
     "of the input; 1: every row of the state gets one code of the input, scaled)",
     {.min = 0, .max = 64, .note = "0: the state's rows"}},
    {"fw.output_terms", "1",
     "fastweights: bilinear terms of the output map Σ U_iᵀ H V_i (1: one fixed combination of the state's rows "
     "is read; the rows or more: any linear map of vec(H))",
     {.min = 1, .max = 64}},
    {"fw.layer_norm_over", "\"matrix\"", "fastweights: layer norm over the whole state (matrix) or each row (rows)",
     {.choices = {"matrix", "rows"}}},
    {"fw.learn_lambda", "false", "fastweights: learn λ = σ(θ), starting at fw.lambda (then in (0, 1))"},
    {"fw.learn_eta", "false", "fastweights: learn η = softplus(θ), starting at fw.eta (then > 0)"},
    {"fw.form", "\"auto\"",
     "fastweights: A(H) from the past states (sum), from the n×n matrix A kept per sequence (matrix), or the cheaper by "
     "the cost model (auto)",
     {.choices = {"auto", "sum", "matrix"}}},
    {"irnn.init_scale", "1", "irnn: the recurrence starts as this times the identity (Le et al.)"},
};

const std::vector<ConfigKey> kClnKeys = {
    {"cln.height", "5", "cln: layers T, the hops a node's messages travel (models/graph/cln.hpp)", {.min = 1, .max = 64}},
    {"cln.aggregate", "\"mean\"",
     "cln: the neighbours' read: mean (CLN), attention (multi-attention CLN) or flatten (the neighbours side by "
     "side, 001 §4.4's vector CLN)",
     {.choices = {"mean", "attention", "flatten"}}},
    {"cln.slots", "50", "cln: neighbours read side by side (aggregate = flatten), 1 to 4096", {.min = 1, .max = 4096}},
    {"cln.heads", "10", "cln: attention heads (aggregate = attention), 1 to 64", {.min = 1, .max = 64}},
    {"cln.highway", "true", "cln: highway gates between layers (Pham et al.'s CLN)"},
    {"cln.embed", "\"dense\"",
     "cln: the features into the first state: dense (every word to every unit, as a vector net) or matrix (one "
     "bilinear map of the feature matrix); models/graph/cln.hpp",
     {.choices = {"dense", "matrix"}}},
};

// The MatNTM's, with the controller clip it shares with the MatDNC and the recurrent models.
const std::vector<ConfigKey> kNtmKeys = {
    {"ntm.controller", "\"rnn\"",
     "matntm controller: rnn, lstm (stacked MatRNN or MatLSTM layers) or ff (feed-forward layers, Graves et al. "
     "2014's; models/layers/cells.hpp)",
     {.choices = {"rnn", "lstm", "ff"}}},
    {"controller.clip", "0.0",
     "clip the controller's state to ±this in the forward pass: every layer's H, and a MatLSTM's C (matntm's "
     "controller; matrnn, matlstm and matgru's layers; 0: off; DeepMind's DNC: 20)",
     {.min = 0, .note = "0: off"}},
    {"controller.clip_logits", "false", "clip the output logits to ±controller.clip too (DeepMind's DNC)"},
    {"ntm.forget_bias", "-1.0", "an lstm controller's forget-gate bias at the start (a matlstm's is lstm.forget_bias, 1)"},
    {"ntm.slots", "120", "ntm memory slots N", {.min = 2, .max = double(std::int64_t(1) << 24)}},
    {"ntm.slot_rows", "6", "rows of one memory slot", {.min = 1, .max = 4096}},
    {"ntm.slot_cols", "6", "columns of one memory slot", {.min = 1, .max = 4096}},
    {"ntm.read_heads", "1", "read heads", {.min = 1, .max = 16, .note = "16 heads in all"}},
    {"ntm.write_heads", "1", "write heads", {.min = 0, .max = 15, .note = "16 heads in all"}},
    {"ntm.shift", "1", "shift range S (shifts −S..S)", {.min = 0, .note = "2S+1 ≤ ntm.slots"}},
    {"ntm.memory_segment", "0",
     "keep every n-th time step's memory, recompute the others in backward (1: keep all; 0: n from the memory's "
     "size, 4 at the paper's sizes, 1 under 128 KiB)",
     {.min = 0, .max = double(Tape::kMaxSegment), .note = "0: automatic"}},
    {"ntm.initial_weighting", "\"first_slot\"", "first_slot (w0 = δ1) or zero (see models/ntm/matntm.hpp)",
     {.choices = {"first_slot", "zero"}}},
    {"ntm.memory_init", "\"constant\"",
     "the memory's start: constant (1e-6), learned, or random (fixed N(0, 0.5²) draw; see models/ntm/matntm.hpp)",
     {.choices = {"constant", "learned", "random"}}},
    {"ntm.memory_init_std", "0.01", "ntm.memory_init = learned: the memory starts at N(0, σ²), σ this",
     {.min = 0, .above = true}},
    {"ntm.cosine_eps", "0.0",
     "matntm content addressing's epsilon, under each norm's root and on their product as DeepMind's DNC (0: exact "
     "norms and 1e-8 on their product; > 0 bounds the memory's gradient at a near-empty slot)",
     {.min = 0}},
    {"ntm.add_activation", "\"linear\"",
     "matntm write heads' add vector: linear (the NTM paper's, unbounded) or sigmoid (fumin/ntm's, each element "
     "in (0, 1))",
     {.choices = {"linear", "sigmoid"}}},
};

const std::vector<ConfigKey> kDncKeys = {
    {"dnc.controller", "\"lstm\"",
     "matdnc controller: lstm, rnn (stacked MatLSTM or MatRNN layers, model.layers) or ff (feed-forward layers)",
     {.choices = {"lstm", "rnn", "ff"}}},
    {"dnc.slots", "16", "matdnc memory slots N (DeepMind's DNC trains with 16)",
     {.min = 2, .max = 4096, .note = "the links are N x N per sequence"}},
    {"dnc.slot_rows", "6", "rows of one matdnc memory slot", {.min = 1, .max = 4096}},
    {"dnc.slot_cols", "6", "columns of one matdnc memory slot", {.min = 1, .max = 4096}},
    {"dnc.read_heads", "1", "matdnc read heads, 1 to 16 (one write head)", {.min = 1, .max = double(kDncMaxReadHeads)}},
    {"dnc.usage_gradient", "\"stop\"",
     "matdnc usage's gradient to the previous write weighting: stop (none, DeepMind's) or full (the paper's; what "
     "a gradcheck of more than one step checks)",
     {.choices = {"stop", "full"}}},
    {"dnc.free_gates", "true",
     "matdnc free gates: false holds every f at 0, so no slot is ever freed (the ablation that tells whether a task "
     "needs freeing)"},
    {"dnc.masked_lookup", "false",
     "matdnc masked content lookup (Csordás & Schmidhuber 2019): every head compares its key and each slot through a "
     "mask of its own, dnc.mask_floor + (1 − dnc.mask_floor) σ(mat(H)) (models/dnc/matdnc.hpp)"},
    {"dnc.mask_floor", "0.1", "dnc.masked_lookup: the masks' floor m₀ (Csordás & Schmidhuber's recall: 0.1)",
     {.min = 0, .max = 1}},
    {"dnc.link_sharpness", "false",
     "matdnc link sharpness (Csordás & Schmidhuber 2019): each read head's forward and backward weightings "
     "sharpened by an exponent 1 + softplus(mat(H)) of their own (models/dnc/matdnc.hpp)"},
    {"dnc.deallocation", "false",
     "matdnc de-allocation (Csordás & Schmidhuber 2019): a freed slot's content erased with its usage, the write "
     "acting on M_{t−1} ⊙ ψ_t (models/dnc/matdnc.hpp)"},
    {"dnc.interface_norm", "false",
     "matdnc layer normalisation of the interface (Franke et al. 2018's rsDNC): all its parts normalised as one "
     "vector per sample, then a gain and bias per part, before their activations (models/dnc/matdnc.hpp)"},
    {"dnc.read_fallback", "false",
     "matdnc read weightings: what a head's forward and backward weightings do not place goes to its content "
     "weighting, so every read weighting is a distribution (models/dnc/matdnc.hpp, step 8)"},
    {"dnc.cosine_eps", "1e-6",
     "matdnc content weightings' epsilon, under each norm's root and on their product as DeepMind's DNC (0: the "
     "MatNTM's cosine similarity, exact norms and 1e-8 on their product)",
     {.min = 0}},
};

// A model config's frame sizes: those of the task it trains on.
template <class ModelConfig>
void set_io(ModelConfig& m, const Task& t) {
  m.input_rows = t.input_rows();
  m.input_cols = t.input_cols();
  m.output_rows = t.output_rows();
  m.output_cols = t.output_cols();
}

// controller.clip and controller.clip_logits (the bound's range: its key's).
std::pair<double, bool> controller_clip(const Config& c) {
  const double clip = c.num("controller.clip");
  const bool logits = c.flag("controller.clip_logits");
  if (logits && clip == 0)
    throw Error("config: controller.clip_logits = true needs a bound: set controller.clip > 0");
  return {clip, logits};
}

std::unique_ptr<Model> recurrent(CellKind kind, const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  RecurrentConfig rc;
  rc.cell = kind;
  rc.forget_bias = c.num("lstm.forget_bias");
  std::tie(rc.clip, rc.clip_logits) = controller_clip(c);
  rc.attention_heads = c.integer("rnn.attention_heads");
  rc.layers = c.sizes("model.layers");
  set_io(rc, t);
  return std::make_unique<RecurrentModel>(rc, dtype, seed);
}

// A model's constructor checks what joins its fields (heads in all, the shift against the slots); from a
// config, its refusal names the keys' group.
template <class M, class C>
std::unique_ptr<Model> construct(const char* keys, const C& config, DType dtype, std::uint64_t seed) {
  try {
    return std::make_unique<M>(config, dtype, seed);
  } catch (const Error& e) {
    throw Error(fmt::format("config ({}): {}", keys, e.what()));
  }
}

std::unique_ptr<Model> ntm(const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  NTMConfig nc;
  nc.controller = cell_kind(c.str("ntm.controller"));
  nc.forget_bias = c.num("ntm.forget_bias");
  std::tie(nc.controller_clip, nc.clip_logits) = controller_clip(c);
  nc.layers = c.sizes("model.layers");
  nc.slots = c.integer("ntm.slots");
  nc.slot_rows = c.integer("ntm.slot_rows");
  nc.slot_cols = c.integer("ntm.slot_cols");
  nc.read_heads = int(c.integer("ntm.read_heads"));
  nc.write_heads = int(c.integer("ntm.write_heads"));
  nc.shift = int(c.integer("ntm.shift"));
  nc.memory_segment = int(c.integer("ntm.memory_segment"));
  nc.initial_weighting =
      c.str("ntm.initial_weighting") == "zero" ? NTMConfig::Start::zero : NTMConfig::Start::first_slot;
  const std::string m0 = c.str("ntm.memory_init");
  nc.memory_init = m0 == "learned"  ? NTMConfig::MemoryInit::learned
                   : m0 == "random" ? NTMConfig::MemoryInit::random
                                    : NTMConfig::MemoryInit::constant;
  nc.memory_init_std = c.num("ntm.memory_init_std");
  nc.cosine_eps = c.num("ntm.cosine_eps");
  nc.add_activation = c.str("ntm.add_activation") == "sigmoid" ? NTMConfig::AddActivation::sigmoid
                                                               : NTMConfig::AddActivation::linear;
  set_io(nc, t);
  return construct<MatNTM>("ntm.*", nc, dtype, seed);
}

std::unique_ptr<Model> dnc(const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  DNCConfig dc;
  dc.controller = cell_kind(c.str("dnc.controller"));
  std::tie(dc.controller_clip, dc.clip_logits) = controller_clip(c);
  dc.layers = c.sizes("model.layers");
  dc.slots = c.integer("dnc.slots");
  dc.slot_rows = c.integer("dnc.slot_rows");
  dc.slot_cols = c.integer("dnc.slot_cols");
  dc.read_heads = int(c.integer("dnc.read_heads"));
  dc.usage_gradient =
      c.str("dnc.usage_gradient") == "full" ? DNCConfig::UsageGradient::full : DNCConfig::UsageGradient::stop;
  dc.free_gates = c.flag("dnc.free_gates");
  dc.cosine_eps = c.num("dnc.cosine_eps");
  dc.masked_lookup = c.flag("dnc.masked_lookup");
  dc.mask_floor = c.num("dnc.mask_floor");
  dc.link_sharpness = c.flag("dnc.link_sharpness");
  dc.deallocation = c.flag("dnc.deallocation");
  dc.interface_norm = c.flag("dnc.interface_norm");
  dc.read_fallback = c.flag("dnc.read_fallback");
  set_io(dc, t);
  return construct<MatDNC>("dnc.*", dc, dtype, seed);
}

std::unique_ptr<Model> gamma(const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  GammaNetworkConfig gc;
  gc.memory.kind = gamma_kind(c.str("gamma.kind"));
  gc.memory.taps = int(c.integer("gamma.taps"));
  const double mu = c.num("gamma.mu"), nu = c.num("gamma.nu");
  gc.memory.mu = mu;
  if (gc.memory.kind == GammaKind::gamma2 && !(nu > 0 && nu < 2 / mu - 1))
    throw Error(fmt::format("config: gamma.nu = {}: ν must be in (0, 2/μ − 1) = (0, {}) for gamma.mu = {} (stability: "
                            "μ(1 + ν) < 2)", nu, 2 / mu - 1, mu));
  gc.memory.nu = nu;
  gc.placement = c.str("gamma.placement") == "input" ? GammaNetworkConfig::Placement::input : GammaNetworkConfig::Placement::hidden;
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
    fc.inner_steps = int(c.integer("fw.inner_steps"));
    const std::string norm = c.str("fw.layer_norm");
    fc.norm = norm == "sum"    ? FastWeightsConfig::Norm::sum
              : norm == "slow" ? FastWeightsConfig::Norm::slow
                               : FastWeightsConfig::Norm::none;
    fc.learn_lambda = c.flag("fw.learn_lambda"), fc.learn_eta = c.flag("fw.learn_eta");
    if (fc.learn_lambda && !(fc.lambda > 0 && fc.lambda < 1))
      throw Error(fmt::format("config: fw.lambda = {}: a learned λ = σ(θ) must start in (0, 1)", fc.lambda));
    if (fc.learn_eta && !(fc.eta > 0))
      throw Error(fmt::format("config: fw.eta = {}: a learned η = softplus(θ) must start above 0", fc.eta));
    fc.input_terms = c.integer("fw.input_terms"), fc.output_terms = c.integer("fw.output_terms");
    fc.norm_rows = c.str("fw.layer_norm_over") == "rows";
    const std::string form = c.str("fw.form");
    fc.form = form == "sum"      ? FastWeightsConfig::Form::sum
              : form == "matrix" ? FastWeightsConfig::Form::matrix
                                 : FastWeightsConfig::Form::automatic;
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
  const std::string aggregate = c.str("cln.aggregate");
  cc.aggregate = aggregate == "attention" ? CLNConfig::Aggregate::attention
                 : aggregate == "flatten" ? CLNConfig::Aggregate::flatten
                                          : CLNConfig::Aggregate::mean;
  cc.slots = c.integer("cln.slots");
  cc.heads = c.integer("cln.heads");
  cc.highway = c.flag("cln.highway");
  cc.embed = c.str("cln.embed") == "matrix" ? CLNConfig::Embed::matrix : CLNConfig::Embed::dense;
  if (cc.embed == CLNConfig::Embed::dense && cc.rows > 21)
    throw Error(fmt::format("config: model.layers = {}: the dense embedding (cln.embed) takes at most 21 rows",
                            c.str("model.layers")));
  set_io(cc, t);
  return std::make_unique<CLN>(cc, dtype, seed);
}

// Batch norm takes the statistics of the whole batch: a micro-batch's would not be the batch's
// (ops/batch_norm.hpp).
void batch_norm_needs_whole_batches(const Config& c) {
  if (c.integer("micro_batch") > 0 && c.integer("micro_batch") < c.integer("batch"))
    throw Error(fmt::format("config: micro_batch = {} with ffn.norm = batch: batch norm takes the statistics of the "
                            "whole batch of {}, not of micro-batches (set micro_batch = 0)",
                            c.integer("micro_batch"), c.integer("batch")));
}

// ffn.activation, shared by the feed-forward nets and the auto-encoders.
Activation ffn_activation(const Config& c) {
  const std::string act = c.str("ffn.activation");
  return act == "tanh" ? Activation::tanh : act == "sigmoid" ? Activation::sigmoid : Activation::relu;
}

std::unique_ptr<Model> ffn(const Config& c, const Task& t, DType dtype, std::uint64_t seed) {
  FFNConfig fc;
  const auto layers = c.sizes("model.layers");
  if (layers.size() != 1)
    throw Error(fmt::format("config: model.layers = {}: ffn's hidden layers share one shape RxC (1xn: a vector net); "
                            "their number is ffn.depth", c.str("model.layers")));
  fc.rows = layers[0].first, fc.cols = layers[0].second;
  fc.depth = c.integer("ffn.depth");
  const std::string norm = c.str("ffn.norm");
  fc.norm = norm == "layer" ? FFNConfig::Norm::layer : norm == "batch" ? FFNConfig::Norm::batch : FFNConfig::Norm::none;
  if (fc.norm == FFNConfig::Norm::layer && fc.rows * fc.cols < 2)
    throw Error(fmt::format("config: ffn.norm = layer over model.layers = {}: a layer needs 2 elements or more",
                            c.str("model.layers")));
  fc.residual = c.flag("ffn.residual");
  fc.activation = ffn_activation(c);
  if (fc.norm == FFNConfig::Norm::batch) batch_norm_needs_whole_batches(c);
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
  if (depth % 2 != 0)  // its range, 1 to 1000: its key's
    throw Error(fmt::format("config: ffn.depth = {}: the autoencoder has an even number of layers (half encoder, "
                            "half decoder)", depth));
  ac.encoder_layers = depth / 2;
  if (c.str("ffn.norm") == "batch") ac.batch_norm = true, batch_norm_needs_whole_batches(c);
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

const std::vector<ConfigKey>& builtin_model_keys() {
  static const std::vector<ConfigKey> all = [] {
    std::vector<ConfigKey> keys;
    for (const auto* family : {&kRecurrentKeys, &kFfnKeys, &kGammaKeys, &kFastWeightsKeys, &kClnKeys, &kNtmKeys, &kDncKeys})
      keys.insert(keys.end(), family->begin(), family->end());
    return keys;
  }();
  return all;
}

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
  model->set_vector_u(config.str("model.vector_u") == "one" ? Model::VectorU::one : Model::VectorU::learned);
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

namespace {
std::unique_ptr<Task> make_unflattened_task(const Config& c) {
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
    return std::make_unique<DelayedRecallTask>(DelayedRecallOptions{c.integer("task.rows"), c.integer("task.cols"), d,
                                                                    c.integer("task.min_length"),
                                                                    c.integer("task.max_length"), c.integer("batch")});
  }
  if (name == "retrieval") {
    if (!c.flag("task.fixed"))
      return std::make_unique<RetrievalTask>(RetrievalOptions{c.integer("task.pairs"), c.integer("batch")});
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
    g.seed = std::uint64_t(c.integer("task.graph.seed"));
    o.feature_rows = c.integer("task.graph.feature_rows"), o.sample = c.integer("task.graph.sample");
    return std::make_unique<GraphTask>(o);
  }
  if (name == "fashion_mnist" || name == "fashion_mnist_ae") {
    FashionMnistOptions o;
    o.data_dir = c.str("task.data_dir");
    o.train = c.integer("task.train"), o.validation = c.integer("task.validation"), o.test = c.integer("task.test");
    o.batch = c.integer("batch");
    o.split_seed = std::uint64_t(c.integer("task.split_seed"));
    o.seed = std::uint64_t(c.integer("seed"));
    o.flatten = c.flag("task.flatten");
    if (name == "fashion_mnist") return std::make_unique<FashionMnistTask>(o);
    return std::make_unique<FashionMnistReconstructionTask>(o, c.num("task.noise"));
  }
  if (name == "data") {
    UserDataOptions o;
    o.data = c.str("task.data"), o.loss = c.str("task.loss"), o.classes = c.integer("task.classes");
    o.batch = c.integer("batch");
    o.seed = std::uint64_t(c.integer("seed"));
    return std::make_unique<UserDataTask>(o);
  }
  std::string known;
  for (const std::string& n : task_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(fmt::format("config: unknown task {} (known: {})", name, known));
}
}  // namespace

std::unique_ptr<Task> make_task(const Config& c) {
  check_config(c);
  std::unique_ptr<Task> task = make_unflattened_task(c);
  const std::string name = c.str("task");
  if (!c.flag("task.flatten") || name == "fashion_mnist" || name == "fashion_mnist_ae") return task;
  return std::make_unique<FlatFrames>(std::move(task));  // refuses what it cannot flatten, saying why
}

}  // namespace matmem
