// Precision drift: graphcore/drift.h, docs/precision.md.
#include "graphcore/drift.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "graphcore/dataset.h"
#include "graphcore/opdef.h"
#include "internal.h"

namespace graphcore::runtime {

std::string_view eval_precision_name(EvalPrecision p) {
  switch (p) {
    case EvalPrecision::Fp32:
      return "fp32";
    case EvalPrecision::Target:
      return "target";
    case EvalPrecision::Int8:
      return "int8";
  }
  return "fp32";
}

std::optional<EvalPrecision> eval_precision_from_name(std::string_view name) {
  if (name == "fp32") return EvalPrecision::Fp32;
  if (name == "target") return EvalPrecision::Target;
  if (name == "int8") return EvalPrecision::Int8;
  return std::nullopt;
}

namespace drift {

namespace {
// fp16's largest finite value is 65504; round-to-nearest-even sends 65520 (the midpoint to the
// next power of two, 65536) and everything beyond it to inf.
constexpr double kFp16Inf = 65520.0;
}  // namespace

int64_t count_fp16_overflows(const Tensor& t) {
  if (!t.is_float()) return 0;
  const auto* p = t.data<float>();
  int64_t n = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (std::isfinite(p[i]) && std::abs(static_cast<double>(p[i])) >= kFp16Inf) ++n;
  }
  return n;
}

double cosine(const Tensor& a, const Tensor& b) {
  double dot = 0, aa = 0, bb = 0;
  const int64_t n = std::min(a.numel(), b.numel());
  for (int64_t i = 0; i < n; ++i) {
    const double x = a.at(i), y = b.at(i);
    if (!std::isfinite(x) || !std::isfinite(y)) return 0;
    dot += x * y;
    aa += x * x;
    bb += y * y;
  }
  if (aa == 0 && bb == 0) return 1;
  if (aa == 0 || bb == 0) return 0;
  return dot / std::sqrt(aa * bb);
}

std::vector<int64_t> argmax_rows(const Tensor& logits) {
  std::vector<int64_t> r;
  if (logits.rank() == 0) return r;
  const int64_t classes = logits.shape().back();
  if (classes <= 0) return r;
  const int64_t rows = logits.numel() / classes;
  r.reserve(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    int64_t best = 0;
    double bv = logits.at(i * classes);
    for (int64_t c = 1; c < classes; ++c) {
      double v = logits.at(i * classes + c);
      if (v > bv || (std::isnan(v) && !std::isnan(bv))) {
        bv = v;
        best = c;
      }
    }
    r.push_back(best);
  }
  return r;
}

}  // namespace drift

namespace {

std::string location(const TrainingPlan& plan) {
  return plan.file + ":" + std::to_string(plan.range.start.line + 1);
}

struct Accum {
  double dot = 0, pp = 0, rr = 0;
  double max_abs = 0, max_rel = 0;
  int64_t nonfinite = 0;
  int64_t overflows = 0;
  bool compared = false;
};

void accumulate(Accum& a, const Tensor& ref, const Tensor& got) {
  if (!ref.is_float() || !got.is_float() || ref.numel() != got.numel()) return;
  a.compared = true;
  const auto* r = ref.data<float>();
  const auto* p = got.data<float>();
  const int64_t n = ref.numel();
  double rmax = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(r[i])) rmax = std::max(rmax, std::abs(static_cast<double>(r[i])));
  }
  const double guard = rmax > 0 ? 1e-3 * rmax : 1e-30;
  for (int64_t i = 0; i < n; ++i) {
    const double x = r[i], y = p[i];
    if (!std::isfinite(x)) continue;  // both runs overflowed at fp32 already: not a drift
    if (!std::isfinite(y)) {
      ++a.nonfinite;
      continue;
    }
    const double d = std::abs(y - x);
    a.max_abs = std::max(a.max_abs, d);
    a.max_rel = std::max(a.max_rel, d / std::max(std::abs(x), guard));
    a.dot += x * y;
    a.pp += y * y;
    a.rr += x * x;
  }
}

double cosine_of(const Accum& a) {
  if (a.nonfinite > 0) return 0;
  if (a.pp == 0 && a.rr == 0) return 1;
  if (a.pp == 0 || a.rr == 0) return 0;
  return std::clamp(a.dot / std::sqrt(a.pp * a.rr), -1.0, 1.0);
}

// The label of each row: sparse class ids, or the argmax of one-hot / probability rows shaped as
// the logits. Empty when the labels are neither.
std::vector<int64_t> labels_of(const Tensor& labels, const Tensor& logits, size_t rows) {
  if (!labels.defined()) return {};
  if (!labels.is_float() && static_cast<size_t>(labels.numel()) == rows) {
    std::vector<int64_t> r(rows);
    for (size_t i = 0; i < rows; ++i)
      r[i] = static_cast<int64_t>(labels.at(static_cast<int64_t>(i)));
    return r;
  }
  if (labels.is_float() && labels.shape() == logits.shape()) return drift::argmax_rows(labels);
  return {};
}

struct EvalData {
  std::unique_ptr<DatasetReader> reader;
  std::string what;
  std::vector<std::string> notes;
};

std::string arg_string(const PlanCall& call, std::string_view name) {
  const AttrValue* v = call.arg(name);
  if (!v) return "";
  if (const auto* s = std::get_if<std::string>(v)) {
    std::string t = *s;
    if (t.size() >= 2 && (t.front() == '\'' || t.front() == '"') && t.back() == t.front())
      t = t.substr(1, t.size() - 2);
    return t;
  }
  return "";
}

// A pipeline as the drift reads it: in file order (its source's shuffle and every .shuffle()
// off), every batch() at `batch` when given. False when a batch is asked of a pipeline that does
// not batch.
bool in_file_order(DatasetPlan& data, std::optional<int64_t> batch) {
  for (Attr& a : data.source.args) {
    if (a.name == "shuffle") a.value = false;
  }
  if (!data.source.arg("shuffle")) data.source.args.push_back(Attr{"shuffle", false});
  std::erase_if(data.ops, [](const DatasetOp& op) { return op.kind == DatasetOp::Kind::Shuffle; });
  if (!batch) return true;
  bool batched = false;
  for (DatasetOp& op : data.ops) {
    if (op.kind != DatasetOp::Kind::Batch) continue;
    batched = true;
    for (Attr& a : op.call.args) {
      if (a.name == "batch_size") a.value = *batch;
    }
  }
  return batched;
}

// The batch size a pipeline's (last) batch() gives, when it is a number.
std::optional<int64_t> batch_size_of(const DatasetPlan& data) {
  std::optional<int64_t> b;
  for (const DatasetOp& op : data.ops) {
    if (op.kind != DatasetOp::Kind::Batch) continue;
    const AttrValue* v = op.call.arg("batch_size");
    if (const auto* i = v ? std::get_if<int64_t>(v) : nullptr) b = *i;
  }
  return b;
}

// The pipeline the drift reads, in file order with the batch override: the program's own
// evaluation pipeline (model.eval's dataset, a test loop's) when the plan has one it can read, at
// the batch size the network was compiled for; else the training pipeline, on the source's test
// split when the script trains on usage='train' of a source that has one and its files are there.
EvalData open_eval_data(const TrainingPlan& plan, const DriftOptions& o) {
  if (!plan.dataset) {
    throw RuntimeError(location(plan) +
                       ": the training plan has no dataset pipeline the runtime reads: precision "
                       "drift needs real batches");
  }
  if (!plan.dataset->opaque_reason.empty()) {
    throw RuntimeError(location(plan) + ": precision drift needs real batches, and " +
                       plan.dataset->opaque_reason);
  }
  DatasetPlan data = *plan.dataset;
  if (!in_file_order(data, o.batch))
    throw RuntimeError(location(plan) + ": a batch size needs a pipeline that batches");
  EvalData r;
  if (plan.eval_dataset) {
    const std::string where = "the program's evaluation pipeline (line " +
                              std::to_string(plan.eval_range.start.line + 1) + ", " +
                              plan.eval_dataset->source.api + ", file order)";
    DatasetPlan ev = *plan.eval_dataset;
    const std::optional<int64_t> compiled = o.batch ? o.batch : batch_size_of(data);
    if (!ev.opaque_reason.empty()) {
      r.notes.push_back(where + " is not read: " + ev.opaque_reason);
    } else if (ev.columns.size() != data.columns.size()) {
      r.notes.push_back(where + " gives " + std::to_string(ev.columns.size()) +
                        " columns, the training pipeline " + std::to_string(data.columns.size()) +
                        ": the training pipeline is used");
    } else if (!in_file_order(ev, compiled)) {
      r.notes.push_back(where + " does not batch: the training pipeline is used");
    } else {
      // A data directory given for the run replaces the training source's; it stands for the
      // evaluation source's only when both read the same directory (usage='train' / 'test').
      const bool same_dir =
          arg_string(ev.source, "dataset_dir") == arg_string(data.source, "dataset_dir") &&
          ev.source.api == data.source.api;
      try {
        r.reader =
            std::make_unique<DatasetReader>(ev, same_dir ? o.data_dir : std::nullopt, o.seed);
        r.what = where;
        if (compiled && batch_size_of(*plan.eval_dataset) != compiled) {
          r.notes.push_back("its batches are made of " + std::to_string(*compiled) +
                            " rows, the batch the network was compiled for");
        }
        return r;
      } catch (const RuntimeError& e) {
        r.notes.push_back(where + " cannot be read (" + e.what() +
                          "): the training pipeline is used");
      }
    }
  }
  const std::string& api = data.source.api;
  const bool has_test_split = api == "dataset.MnistDataset" ||
                              api == "dataset.FashionMnistDataset" ||
                              api == "dataset.Cifar10Dataset";
  if (has_test_split && arg_string(data.source, "usage") == "train") {
    DatasetPlan test = data;
    for (Attr& a : test.source.args) {
      if (a.name == "usage") a.value = std::string("test");
    }
    try {
      r.reader = std::make_unique<DatasetReader>(test, o.data_dir, o.seed);
      r.what = "the test split (usage='test') of the training pipeline's " + api;
      return r;
    } catch (const RuntimeError& e) {
      r.notes.push_back(std::string("the test split cannot be read (") + e.what() +
                        "): the training batches are compared instead");
    }
  }
  r.reader = std::make_unique<DatasetReader>(data, o.data_dir, o.seed);
  r.what = "batches of the training pipeline (" + api + ", file order)";
  return r;
}

}  // namespace

DriftReport measure_drift(const TrainingPlan& plan, std::span<const CheckpointTensor> params,
                          const DriftOptions& o) {
  if (o.eval_batches <= 0) throw RuntimeError("precision drift: eval batches must be positive");
  if (o.precision == EvalPrecision::Int8 && o.calibration_batches <= 0)
    throw RuntimeError("precision drift: int8 needs at least one calibration batch");
  if (!plan.loss_graph.compiled) {
    throw RuntimeError(location(plan) + ": the loss graph of " + plan.network +
                       " did not compile: its diagnostics say why");
  }
  DriftReport rep;
  rep.precision = o.precision;
  rep.threshold = o.cosine_threshold;
  rep.top1_agreement = std::numeric_limits<double>::quiet_NaN();

  ExecOptions base;
  base.seed = o.seed;
  base.training = false;  // BatchNorm on its moving statistics, Dropout the identity
  base.keep_values = true;
  ExecOptions prec_opts = base;
  // The precision run is compared node by node as it runs (Hooks::after) against the float32
  // run's kept values, so it frees its own as it goes: one network's activations, not two.
  prec_opts.keep_values = false;
  if (o.precision == EvalPrecision::Target) prec_opts.precision = Precision::Target;
  Executor ref(plan.loss_graph, base);
  Executor prec(plan.loss_graph, prec_opts);
  const Graph& g = ref.graph();

  // The parameters, into both runs (Target stores them as fp16 except where amp keeps float32).
  std::set<std::string, std::less<>> loaded;
  for (const CheckpointTensor& e : params) {
    if (!e.value.defined() || ref.param(e.name) == nullptr) continue;
    ref.set_param(e.name, e.value);
    prec.set_param(e.name, e.value);
    loaded.insert(e.name);
  }
  std::vector<std::string> missing;
  for (const ParamState& p : ref.params()) {
    if (!loaded.contains(p.name)) missing.push_back(p.name);
  }
  if (!missing.empty()) {
    std::string names;
    for (size_t i = 0; i < missing.size() && i < 6; ++i) names += (i ? ", " : "") + missing[i];
    if (missing.size() > 6) names += ", ...";
    rep.notes.push_back(std::to_string(missing.size()) +
                        " parameter(s) not in the given weights keep their initializer: " + names);
  }

  // The network's output: the first input of the plan's loss; its label the second.
  std::optional<size_t> loss_node;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].kind == NodeKind::Op && !plan.loss.api.empty() &&
        g.nodes[i].api == plan.loss.api && !g.nodes[i].inputs.empty()) {
      loss_node = i;
      break;
    }
  }
  if (!loss_node && !g.outputs.empty()) {
    const Node& out = g.nodes[g.outputs[0].node];
    if (out.kind == NodeKind::Op && out.inputs.size() >= 2) loss_node = g.outputs[0].node;
  }
  std::optional<ValueRef> logits, labels;
  if (loss_node) {
    logits = g.nodes[*loss_node].inputs[0];
    if (g.nodes[*loss_node].inputs.size() >= 2) labels = g.nodes[*loss_node].inputs[1];
    rep.logits = g.nodes[logits->node].id;
  } else {
    rep.notes.emplace_back("the network's output was not found in the loss graph: no top-1");
  }

  // The forward graph's nodes: Op nodes the logits depend on (every Op node before the loss when
  // the loss was not found).
  std::vector<char> in_net(g.nodes.size(), 0);
  if (logits) {
    in_net[logits->node] = 1;
    for (size_t i = logits->node + 1; i-- > 0;) {
      if (!in_net[i]) continue;
      for (const ValueRef& r : g.nodes[i].inputs) in_net[r.node] = 1;
    }
  } else {
    const size_t end = g.outputs.empty() ? g.nodes.size() : g.outputs[0].node;
    for (size_t i = 0; i < end; ++i) in_net[i] = 1;
  }
  std::vector<size_t> layer_nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (in_net[i] && g.nodes[i].kind == NodeKind::Op) layer_nodes.push_back(i);
  }

  EvalData data = open_eval_data(plan, o);
  rep.data = data.what;
  for (std::string& n : data.notes) rep.notes.push_back(std::move(n));
  data.reader->start_epoch(0);
  const size_t n_inputs = ref.num_inputs();
  if (data.reader->column_names().size() < n_inputs) {
    throw RuntimeError(location(plan) + ": the loss graph takes " + std::to_string(n_inputs) +
                       " inputs but the dataset yields " +
                       std::to_string(data.reader->column_names().size()) + " columns");
  }
  int64_t skipped = 0;
  // The next batch whose shapes are the compiled ones (a last, smaller batch is skipped).
  auto next_batch = [&]() -> std::optional<std::vector<Tensor>> {
    while (auto b = data.reader->next()) {
      bool fits = b->size() >= n_inputs;
      for (size_t i = 0; fits && i < n_inputs; ++i) {
        auto dims = known_dims(ref.input_type(i));
        fits = dims && *dims == (*b)[i].shape();
      }
      if (fits) return b;
      ++skipped;
    }
    return std::nullopt;
  };
  auto run = [&](Executor& ex, const std::vector<Tensor>& batch, const Hooks& hooks) {
    ex.reset();
    for (size_t i = 0; i < n_inputs; ++i) ex.set_input(i, batch[i]);
    RunStatus s = ex.run(hooks);
    if (s.kind != RunStatus::Kind::Finished) throw RuntimeError(s.message, s.node);
  };

  // int8 (graphcore/quant.h): the activation ranges calibrated on the float32 run over the
  // calibration batches (kept: the histogram methods read them twice), then Conv2D/MatMul/Dense
  // of the precision run computed on int8 operands with int32 sums.
  std::optional<quant::Int8Runner> int8;
  if (o.precision == EvalPrecision::Int8) {
    quant::Calibrator cal(g, o.calibration, layer_nodes);
    std::vector<std::vector<Tensor>> calibration;
    for (int64_t k = 0; k < o.calibration_batches; ++k) {
      auto b = next_batch();
      if (!b) break;
      const int64_t rows = b->at(0).rank() > 0 ? b->at(0).shape()[0] : 1;
      rep.calibration_samples += rows;
      cal.add_samples(rows);
      calibration.push_back(std::move(*b));
    }
    if (calibration.empty()) throw RuntimeError(location(plan) + ": no batch to calibrate int8 on");
    if (static_cast<int64_t>(calibration.size()) < o.calibration_batches) {
      rep.notes.push_back("calibrated on " + std::to_string(calibration.size()) +
                          " batch(es): the data has no more");
    }
    for (int pass = 0; pass < cal.passes(); ++pass) {
      cal.begin_pass(pass);
      const Hooks observe = cal.hooks();
      for (const std::vector<Tensor>& b : calibration) run(ref, b, observe);
    }
    rep.quant_table = cal.finish(prec);
    int8.emplace(g, *rep.quant_table, prec);
    for (const std::string& n : int8->notes()) rep.notes.push_back(n);
  }

  std::vector<Accum> acc(g.nodes.size());
  Hooks prec_hooks;
  if (int8) {
    prec_hooks.compute = [&](const Node& n, size_t index, const std::vector<Tensor>& inputs,
                             std::vector<Tensor>& outputs) {
      return int8->compute(n, index, inputs, outputs);
    };
  } else if (o.precision == EvalPrecision::Target) {
    prec_hooks.rewrite_outputs = [&](const Node&, size_t index, std::vector<Tensor>& outputs) {
      for (const Tensor& t : outputs) acc[index].overflows += drift::count_fp16_overflows(t);
    };
  }

  int64_t agree = 0, correct_ref = 0, correct_prec = 0, labelled = 0;
  for (int64_t b = 0; b < o.eval_batches; ++b) {
    auto batch = next_batch();
    if (!batch) break;
    run(ref, *batch, {});
    Tensor prec_logits;
    prec_hooks.after = [&](const NodeEvent& e) {
      if (in_net[e.index] && e.node.kind == NodeKind::Op) {
        for (size_t k = 0; k < e.outputs.size(); ++k) {
          if (const Tensor* r = ref.value(e.index, k)) accumulate(acc[e.index], *r, e.outputs[k]);
        }
      }
      if (logits && e.index == logits->node && logits->output < e.outputs.size())
        prec_logits = e.outputs[logits->output];
      return HookAction::Continue;
    };
    run(prec, *batch, prec_hooks);
    ++rep.batches;
    if (logits) {
      const Tensor* lr = ref.value(*logits);
      const Tensor* lp = prec_logits.defined() ? &prec_logits : nullptr;
      if (lr && lp && lr->is_float()) {
        auto ar = drift::argmax_rows(*lr);
        auto ap = drift::argmax_rows(*lp);
        rep.samples += static_cast<int64_t>(ar.size());
        for (size_t i = 0; i < ar.size() && i < ap.size(); ++i) agree += ar[i] == ap[i] ? 1 : 0;
        const Tensor* lab = labels ? ref.value(*labels) : nullptr;
        auto truth = lab ? labels_of(*lab, *lr, ar.size()) : std::vector<int64_t>{};
        for (size_t i = 0; i < truth.size(); ++i) {
          ++labelled;
          correct_ref += ar[i] == truth[i] ? 1 : 0;
          correct_prec += ap[i] == truth[i] ? 1 : 0;
        }
      }
    } else {
      rep.samples += batch->at(0).rank() > 0 ? batch->at(0).shape()[0] : 1;
    }
  }
  if (rep.batches == 0) {
    throw RuntimeError(
        location(plan) + ": no batch left to evaluate on (" + rep.data +
        (o.precision == EvalPrecision::Int8
             ? ", after " + std::to_string(o.calibration_batches) + " calibration batch(es))"
             : ")"));
  }
  if (rep.batches < o.eval_batches) {
    rep.notes.push_back("evaluated " + std::to_string(rep.batches) + " batch(es) of the " +
                        std::to_string(o.eval_batches) + " asked: the data has no more");
  }
  if (skipped > 0) {
    rep.notes.push_back(std::to_string(skipped) +
                        " batch(es) of another size than the compiled one skipped");
  }
  if (logits && rep.samples > 0)
    rep.top1_agreement = static_cast<double>(agree) / static_cast<double>(rep.samples);
  if (labelled > 0) {
    rep.accuracy_fp32 = static_cast<double>(correct_ref) / static_cast<double>(labelled);
    rep.accuracy_precision = static_cast<double>(correct_prec) / static_cast<double>(labelled);
  }

  for (size_t i : layer_nodes) {
    if (!acc[i].compared) continue;  // integer outputs (Argmax, shapes): nothing to compare
    const Node& n = g.nodes[i];
    LayerDrift d;
    d.node = n.id;
    d.op = std::string(n.op);
    d.scope = std::string(n.scope);
    d.file = std::string(n.file);
    d.line = n.range.start.line + 1;
    d.max_abs = acc[i].nonfinite > 0 ? std::numeric_limits<double>::infinity() : acc[i].max_abs;
    d.max_rel = acc[i].nonfinite > 0 ? std::numeric_limits<double>::infinity() : acc[i].max_rel;
    d.cosine = cosine_of(acc[i]);
    d.nonfinite = acc[i].nonfinite;
    d.fp16_overflows = acc[i].overflows;
    d.quantized = int8 && int8->quantized(i);
    if (rep.first_below.empty() && d.cosine < o.cosine_threshold) rep.first_below = d.node;
    rep.layers.push_back(std::move(d));
  }
  return rep;
}

namespace {

std::string num(double v, int digits, bool sci) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream s;
  if (sci) {
    s << std::scientific << std::setprecision(digits) << v;
  } else {
    s << std::fixed << std::setprecision(digits) << v;
  }
  return s.str();
}

std::string pct(double v) { return num(100.0 * v, 1, false) + " %"; }

std::string precision_words(EvalPrecision p) {
  switch (p) {
    case EvalPrecision::Fp32:
      return "fp32";
    case EvalPrecision::Target:
      return "target (fp16 storage, fp32 accumulation)";
    case EvalPrecision::Int8:
      return "int8 (per-channel weights, per-tensor activations, int32 accumulation)";
  }
  return "";
}

}  // namespace

std::string drift_table_text(const DriftReport& r) {
  std::ostringstream out;
  out << "precision drift: " << precision_words(r.precision) << " against fp32, " << r.batches
      << " batch(es), " << r.samples << " sample(s) of " << r.data << "\n";
  if (r.precision == EvalPrecision::Int8 && r.quant_table) {
    const quant::CalibrationOptions& c = r.quant_table->calibration;
    out << "calibrated on " << r.calibration_samples << " sample(s) by ";
    switch (c.method) {
      case quant::Calibration::MinMax:
        out << "min/max";
        break;
      case quant::Calibration::Percentile:
        out << "percentile " << c.percentile << " % (" << c.bins << " bins)";
        break;
      case quant::Calibration::KL:
        out << "KL divergence (" << c.bins << " bins)";
        break;
    }
    out << "\n";
  }
  size_t w_node = 4, w_op = 2;
  for (const LayerDrift& d : r.layers) {
    w_node = std::max(w_node, d.node.size());
    w_op = std::max(w_op, d.op.size());
  }
  auto pad = [](const std::string& s, size_t w) {
    return s + std::string(w - std::min(w, s.size()), ' ');
  };
  auto lpad = [](const std::string& s, size_t w) {
    return std::string(w - std::min(w, s.size()), ' ') + s;
  };
  out << "  " << pad("node", w_node) << "  " << pad("op", w_op) << "  " << lpad("line", 5) << "  "
      << lpad("max abs", 10) << "  " << lpad("max rel", 10) << "  " << lpad("cosine", 10) << "  "
      << lpad("fp16 ovf", 8) << "\n";
  for (const LayerDrift& d : r.layers) {
    const bool first = d.node == r.first_below;
    out << (first ? "> " : "  ") << pad(d.node, w_node) << "  "
        << pad(d.op + (d.quantized ? "*" : ""), w_op) << "  " << lpad(std::to_string(d.line), 5)
        << "  " << lpad(num(d.max_abs, 3, true), 10) << "  " << lpad(num(d.max_rel, 3, true), 10)
        << "  " << lpad(num(d.cosine, 8, false), 10) << "  "
        << lpad(std::to_string(d.fp16_overflows), 8) << "\n";
  }
  if (r.precision == EvalPrecision::Int8) out << "(* quantised: int8 operands, int32 sums)\n";
  if (r.first_below.empty()) {
    out << "every layer keeps cosine >= " << r.threshold << "\n";
  } else {
    for (const LayerDrift& d : r.layers) {
      if (d.node != r.first_below) continue;
      out << "first layer under cosine " << r.threshold << ": " << d.node << " (" << d.op << ", "
          << d.file << ":" << d.line << ") cosine " << num(d.cosine, 8, false) << "\n";
    }
  }
  out << "top-1 agreement: " << pct(r.top1_agreement);
  if (r.accuracy_fp32 && r.accuracy_precision) {
    out << "; accuracy fp32 " << pct(*r.accuracy_fp32) << ", " << eval_precision_name(r.precision)
        << " " << pct(*r.accuracy_precision);
  }
  out << "\n";
  for (const std::string& n : r.notes) out << "note: " << n << "\n";
  return out.str();
}

}  // namespace graphcore::runtime
