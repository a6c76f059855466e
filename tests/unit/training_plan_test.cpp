// The training plan the static evaluator reads from MindSpore training scripts (issue 17): one
// test per script of tests/training/scripts, checking every field of the plan, plus what is not
// followed (GeneratorDataset) and a file without training.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/optim.h"
#include "graphcore/training.h"
#include "temp_dir.h"

namespace {

using graphcore::AnalysisOptions;
using graphcore::AnalysisResult;
using graphcore::AttrValue;
using graphcore::DatasetOp;
using graphcore::DType;
using graphcore::PlanCall;
using graphcore::Severity;
using graphcore::TrainingPlan;

const std::string kScripts = CELLSCOPE_SOURCE_DIR "/tests/training/scripts/";

AnalysisResult analyse(const std::string& name) {
  graphcore::DiskSourceProvider disk;
  AnalysisOptions opts;
  return graphcore::analyze_file(kScripts + name, opts, disk);
}

AnalysisResult analyse_text(const std::string& text) {
  graphcore::MemorySourceProvider mem("/ws/train.py", text);
  AnalysisOptions opts;
  return graphcore::analyze_file("/ws/train.py", opts, mem);
}

std::string str(const PlanCall& c, const std::string& name) {
  const AttrValue* v = c.arg(name);
  if (!v) return "<missing>";
  if (auto* s = std::get_if<std::string>(v)) return *s;
  return graphcore::attr_to_string(*v);
}

double num(const PlanCall& c, const std::string& name) {
  const AttrValue* v = c.arg(name);
  if (!v) return -1;
  if (auto* d = std::get_if<double>(v)) return *d;
  if (auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  return -2;
}

bool flag(const PlanCall& c, const std::string& name) {
  const AttrValue* v = c.arg(name);
  return v && std::holds_alternative<bool>(*v) && std::get<bool>(*v);
}

std::string shape(const graphcore::TensorType& t) {
  return t.shape.str() + " " + std::string(graphcore::dtype_name(t.dtype));
}

void expect_no_errors(const AnalysisResult& r) {
  for (const auto& d : r.diagnostics)
    EXPECT_NE(d.severity, Severity::Error)
        << d.file << ":" << d.range.start.line + 1 << " " << d.message;
}

TEST(TrainingPlan, LeNetModelTrain) {
  AnalysisResult r = analyse("lenet_model_train.py");
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  const TrainingPlan& p = r.training[0];
  EXPECT_EQ(p.idiom, TrainingPlan::Idiom::ModelTrain);
  EXPECT_EQ(p.range.start.line, 55u);  // model.train(...)
  EXPECT_EQ(p.network, "LeNet5");
  EXPECT_EQ(p.loss.api, "nn.SoftmaxCrossEntropyWithLogits");
  EXPECT_TRUE(flag(p.loss, "sparse"));
  EXPECT_EQ(str(p.loss, "reduction"), "mean");
  EXPECT_EQ(p.optimizer.api, "nn.Momentum");
  EXPECT_EQ(str(p.optimizer, "params"), "net.trainable_params()");
  EXPECT_DOUBLE_EQ(num(p.optimizer, "learning_rate"), 0.01);
  EXPECT_DOUBLE_EQ(num(p.optimizer, "momentum"), 0.9);
  EXPECT_TRUE(p.param_groups.empty());
  EXPECT_FALSE(p.lr_schedule);
  EXPECT_FALSE(p.loss_scale_manager);
  EXPECT_FALSE(p.clip_global_norm);
  ASSERT_TRUE(p.epochs);
  EXPECT_EQ(*p.epochs, 1);
  EXPECT_FALSE(p.dataset_sink_mode);
  EXPECT_FALSE(p.sink_size);
  ASSERT_EQ(p.callbacks.size(), 3u);
  EXPECT_EQ(p.callbacks[0].api, "train.ModelCheckpoint");
  EXPECT_EQ(str(p.callbacks[0], "prefix"), "checkpoint_lenet");
  EXPECT_EQ(str(p.callbacks[0], "config"),
            "train.CheckpointConfig(save_checkpoint_steps=1875, keep_checkpoint_max=10)");
  EXPECT_EQ(p.callbacks[1].api, "train.LossMonitor");
  EXPECT_DOUBLE_EQ(num(p.callbacks[1], "per_print_times"), 125);
  EXPECT_EQ(p.callbacks[2].api, "train.TimeMonitor");
  ASSERT_EQ(p.exports.size(), 1u);
  EXPECT_EQ(str(p.exports[0], "file_format"), "MINDIR");
  // The pipeline, in program order, and one batch's columns through it (MindSpore 2.10:
  // MnistDataset rows are (28, 28, 1) uint8 / () uint32).
  ASSERT_TRUE(p.dataset);
  const auto& d = *p.dataset;
  EXPECT_EQ(d.source.api, "dataset.MnistDataset");
  EXPECT_EQ(str(d.source, "dataset_dir"), "./MNIST_Data/train");
  EXPECT_EQ(str(d.source, "usage"), "train");
  EXPECT_TRUE(d.opaque_reason.empty());
  ASSERT_EQ(d.ops.size(), 4u);
  EXPECT_EQ(d.ops[0].kind, DatasetOp::Kind::Map);
  ASSERT_EQ(d.ops[0].transforms.size(), 1u);
  EXPECT_EQ(d.ops[0].transforms[0].api, "transforms.TypeCast");
  EXPECT_EQ(d.ops[0].input_columns, std::vector<std::string>{"label"});
  ASSERT_EQ(d.ops[1].transforms.size(), 4u);
  EXPECT_EQ(d.ops[1].transforms[0].api, "vision.Resize");
  EXPECT_EQ(d.ops[1].transforms[3].api, "vision.HWC2CHW");
  EXPECT_EQ(d.ops[2].kind, DatasetOp::Kind::Batch);
  EXPECT_TRUE(flag(d.ops[2].call, "drop_remainder"));
  EXPECT_EQ(d.ops[3].kind, DatasetOp::Kind::Repeat);
  ASSERT_EQ(d.columns.size(), 2u);
  EXPECT_EQ(d.columns[0].name, "image");
  EXPECT_EQ(shape(d.columns[0].type), "(32, 1, 32, 32) float32");
  EXPECT_EQ(shape(d.columns[1].type), "(32,) int32");
  // The loss graph: the network's parameters under their MindSpore names, the batch as inputs.
  const auto& g = p.loss_graph;
  EXPECT_TRUE(g.compiled);
  EXPECT_EQ(g.trainable_params, 61684);
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(shape(g.inputs[0].type), "(32, 1, 32, 32) float32");
  EXPECT_TRUE(std::any_of(g.params.begin(), g.params.end(),
                          [](const auto& q) { return q.name == "conv1.weight"; }));
  EXPECT_TRUE(std::any_of(g.graph.nodes.begin(), g.graph.nodes.end(),
                          [](const auto& n) { return n.id == "fc3"; }));
}

TEST(TrainingPlan, FunctionalQuickStart) {
  AnalysisResult r = analyse("functional_quickstart.py");
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  const TrainingPlan& p = r.training[0];
  EXPECT_EQ(p.idiom, TrainingPlan::Idiom::Functional);
  EXPECT_EQ(p.range.start.line, 63u);  // the loop over create_tuple_iterator()
  EXPECT_EQ(p.network, "Network");
  EXPECT_EQ(p.loss.api, "nn.CrossEntropyLoss");
  EXPECT_EQ(p.optimizer.api, "nn.SGD");
  EXPECT_DOUBLE_EQ(num(p.optimizer, "learning_rate"), 0.01);  // positional, bound by name
  ASSERT_TRUE(p.epochs);
  EXPECT_EQ(*p.epochs, 3);  // `for t in range(epochs)` around train_loop
  ASSERT_TRUE(p.dataset);
  ASSERT_EQ(p.dataset->ops.size(), 3u);
  EXPECT_EQ(p.dataset->ops[0].transforms[1].api, "vision.Normalize");
  EXPECT_EQ(shape(p.dataset->columns[0].type), "(64, 1, 28, 28) float32");
  EXPECT_EQ(shape(p.dataset->columns[1].type), "(64,) int32");
  EXPECT_TRUE(p.callbacks.empty());
  EXPECT_TRUE(p.loss_graph.compiled);
  EXPECT_EQ(p.loss_graph.trainable_params, 669706);
  ASSERT_EQ(p.loss_graph.inputs.size(), 2u);
  EXPECT_EQ(shape(p.loss_graph.inputs[1].type), "(64,) int32");
  // The network itself got its input from the loop's batch (a call site of forward_fn).
  ASSERT_FALSE(r.cells.empty());
  auto net = std::find_if(r.cells.begin(), r.cells.end(),
                          [](const auto& c) { return c.class_name == "Network"; });
  ASSERT_NE(net, r.cells.end());
  EXPECT_EQ(shape(net->inputs[0].type), "(64, 1, 28, 28) float32");
}

TEST(TrainingPlan, TrainOneStepCellInMain) {
  AnalysisResult r = analyse("train_one_step.py");
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  const TrainingPlan& p = r.training[0];
  EXPECT_EQ(p.idiom, TrainingPlan::Idiom::TrainOneStepCell);
  EXPECT_EQ(p.network, "SmallNet");
  EXPECT_EQ(p.loss.api, "nn.SoftmaxCrossEntropyWithLogits");
  EXPECT_EQ(p.optimizer.api, "nn.Adam");
  EXPECT_DOUBLE_EQ(num(p.optimizer, "learning_rate"), 1e-3);
  ASSERT_TRUE(p.epochs);
  EXPECT_EQ(*p.epochs, 2);
  ASSERT_TRUE(p.dataset);
  EXPECT_EQ(p.dataset->source.api, "dataset.Cifar10Dataset");
  ASSERT_EQ(p.dataset->ops.size(), 4u);
  EXPECT_EQ(p.dataset->ops[2].kind, DatasetOp::Kind::Shuffle);
  EXPECT_DOUBLE_EQ(num(p.dataset->ops[2].call, "buffer_size"), 1000);
  EXPECT_EQ(shape(p.dataset->columns[0].type), "(16, 3, 32, 32) float32");
  EXPECT_EQ(shape(p.dataset->columns[1].type), "(16,) int32");
  EXPECT_TRUE(p.loss_graph.compiled);
  EXPECT_EQ(p.loss_graph.trainable_params, 3 * 8 * 9 + 8 * 10 + 10);
}

// A training step called in the file passes its inputs to the network it wraps
// (TrainOneStepCell.construct: `loss = self.network(*inputs)`), so the wrapped network's shapes
// are checked with them: (8, 32) into Dense(16, 4) is the error MindSpore raises at the first
// step; (8, 16) is clean.
std::string one_step_source(int features) {
  return "import numpy as np\n"
         "import mindspore as ms\n"
         "from mindspore import nn, Tensor\n"
         "net = nn.Dense(16, 4)\n"
         "loss = nn.MSELoss()\n"
         "opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)\n"
         "step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)\n"
         "x = Tensor(np.ones((8, " +
         std::to_string(features) +
         "), np.float32))\n"
         "y = Tensor(np.ones((8, 4), np.float32))\n"
         "step(x, y)\n";
}

TEST(TrainingPlan, TrainOneStepCallChecksTheWrappedNetwork) {
  AnalysisResult bad = analyse_text(one_step_source(32));
  auto err = std::find_if(bad.diagnostics.begin(), bad.diagnostics.end(),
                          [](const auto& d) { return d.severity == Severity::Error; });
  ASSERT_NE(err, bad.diagnostics.end());
  EXPECT_EQ(err->code, "shape-mismatch");
  EXPECT_NE(err->message.find("receives 32"), std::string::npos) << err->message;
  expect_no_errors(analyse_text(one_step_source(16)));
}

TEST(TrainingPlan, ResNetSgdNesterovCosineGroups) {
  AnalysisResult r = analyse("resnet18_cifar_sgd.py");
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  const TrainingPlan& p = r.training[0];
  EXPECT_EQ(p.network, "ResNet18");
  EXPECT_EQ(p.optimizer.api, "nn.SGD");
  EXPECT_TRUE(flag(p.optimizer, "nesterov"));
  EXPECT_DOUBLE_EQ(num(p.optimizer, "weight_decay"), 5e-4);
  ASSERT_EQ(p.param_groups.size(), 2u);
  const auto& g0 = p.param_groups[0];
  const auto& g1 = p.param_groups[1];
  EXPECT_TRUE(std::count(g0.params.begin(), g0.params.end(), "conv1.weight"));
  EXPECT_TRUE(std::count(g1.params.begin(), g1.params.end(), "bn1.gamma"));
  EXPECT_TRUE(std::count(g1.params.begin(), g1.params.end(), "fc.bias"));
  EXPECT_EQ(g0.params.size() + g1.params.size(), p.loss_graph.params.size() - 40);  // - moving
  ASSERT_EQ(g0.overrides.size(), 1u);
  EXPECT_EQ(g0.overrides[0].name, "weight_decay");
  EXPECT_DOUBLE_EQ(std::get<double>(g0.overrides[0].value), 5e-4);
  EXPECT_DOUBLE_EQ(std::get<double>(g1.overrides[0].value), 0.0);
  ASSERT_TRUE(p.lr_schedule);
  EXPECT_EQ(p.lr_schedule->api, "nn.cosine_decay_lr");
  EXPECT_DOUBLE_EQ(num(*p.lr_schedule, "max_lr"), 0.1);
  EXPECT_DOUBLE_EQ(num(*p.lr_schedule, "total_step"), 7800);
  EXPECT_DOUBLE_EQ(num(*p.lr_schedule, "decay_epoch"), 20);
  EXPECT_EQ(*p.epochs, 20);
  EXPECT_TRUE(p.dataset_sink_mode);
  ASSERT_TRUE(p.sink_size);
  EXPECT_EQ(*p.sink_size, 100);
  EXPECT_EQ(shape(p.dataset->columns[0].type), "(128, 3, 32, 32) float32");
  EXPECT_EQ(p.dataset->ops[0].transforms.size(), 5u);
  EXPECT_EQ(p.loss_graph.trainable_params, 11173962);
}

TEST(TrainingPlan, TransformerAdamWeightDecayWarmupClip) {
  AnalysisResult r = analyse("transformer_adamw_warmup.py");
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  const TrainingPlan& p = r.training[0];
  EXPECT_EQ(p.idiom, TrainingPlan::Idiom::Functional);
  EXPECT_EQ(p.network, "EncoderBlock");
  EXPECT_EQ(p.optimizer.api, "nn.AdamWeightDecay");
  EXPECT_EQ(str(p.optimizer, "learning_rate"), "schedule");
  EXPECT_DOUBLE_EQ(num(p.optimizer, "eps"), 1e-8);
  ASSERT_EQ(p.param_groups.size(), 3u);
  EXPECT_EQ(p.param_groups[2].overrides[0].name, "order_params");
  EXPECT_EQ(p.param_groups[0].params.size() + p.param_groups[1].params.size(),
            p.param_groups[2].params.size());
  ASSERT_TRUE(p.lr_schedule);
  EXPECT_EQ(p.lr_schedule->api, "WarmupCosine");
  // The user's LearningRateSchedule subclass: its construct compiled with global_step.
  EXPECT_TRUE(p.lr_graph.compiled) << p.lr_graph_reason;
  ASSERT_EQ(p.lr_graph.inputs.size(), 1u);
  EXPECT_EQ(shape(p.lr_graph.inputs[0].type), "(1,) int32");
  ASSERT_EQ(p.lr_graph.outputs.size(), 1u);
  EXPECT_EQ(p.lr_graph.outputs[0].type.dtype, DType::Float32);
  ASSERT_TRUE(p.clip_global_norm);
  EXPECT_DOUBLE_EQ(*p.clip_global_norm, 1.0);
  EXPECT_EQ(*p.epochs, 3);
  ASSERT_TRUE(p.dataset);
  EXPECT_EQ(p.dataset->source.api, "dataset.NumpySlicesDataset");
  EXPECT_TRUE(p.loss_graph.compiled);
}

// The compiled schedule evaluated by the runtime at each global step equals the learning rate
// MindSpore 2.10's own call of the class gives: WarmupCosine(2e-3, 5, 20, min_lr=1e-4)(Tensor([k],
// int32)) for k = 0..23, printed with %.9g from the msvenv (float32, so equal to the last bit).
TEST(TrainingPlan, LearningRateScheduleSubclassMatchesMindSpore) {
  AnalysisResult r = analyse("transformer_adamw_warmup.py");
  ASSERT_EQ(r.training.size(), 1u);
  ASSERT_TRUE(r.training[0].lr_graph.compiled) << r.training[0].lr_graph_reason;
  const graphcore::runtime::OptimizerConfig cfg =
      graphcore::runtime::optimizer_config_from_plan(r.training[0]);
  ASSERT_EQ(cfg.learning_rate.kind, graphcore::runtime::LrSchedule::Kind::Graph);
  EXPECT_FALSE(cfg.learning_rate.is_parameter());
  const std::vector<float> mindspore = {
      0.000400000019f, 0.000800000038f, 0.00120000006f,  0.00160000008f,  0.00200000009f,
      0.00200000009f,  0.00197924022f,  0.00191786804f,  0.00181856612f,  0.00168567395f,
      0.00152499997f,  0.00134356611f,  0.001149302f,    0.000950697868f, 0.000756433699f,
      0.000574999955f, 0.000414325856f, 0.000281433779f, 0.000182131786f, 0.000120759752f,
      9.99999975e-05f, 9.99999975e-05f, 9.99999975e-05f, 9.99999975e-05f};
  for (size_t k = 0; k < mindspore.size(); ++k) {
    const float lr = cfg.learning_rate.at(static_cast<int64_t>(k));
    EXPECT_NEAR(lr, mindspore[k], 1e-6 * mindspore[k]) << "global_step " << k;
  }
  // Copies share the compiled schedule; evaluating again gives the same value.
  const graphcore::runtime::LrSchedule copy = cfg.learning_rate;
  EXPECT_EQ(copy.at(7), cfg.learning_rate.at(7));
}

// A construct the evaluator cannot follow (a function of a module it cannot read) is a located
// note naming
// the class and why, not an error of the analysis; the runtime refuses it with the same reason.
TEST(TrainingPlan, LearningRateScheduleSubclassNotFollowed) {
  AnalysisResult r = analyse_text(R"(import numpy as np
import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn
from mindspore.nn.learning_rate_schedule import LearningRateSchedule
from lr_tables import halving


class Halving(LearningRateSchedule):
    def __init__(self, lr):
        super().__init__()
        self.lr = lr

    def construct(self, global_step):
        return halving(self.lr, global_step)


x = np.zeros((64, 8), np.float32)
y = np.zeros((64,), np.int32)
dataset = ds.NumpySlicesDataset((x, y), column_names=["x", "y"]).batch(8)
net = nn.Dense(8, 2)
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
optimizer = nn.Adam(net.trainable_params(), learning_rate=Halving(0.01))
model = ms.Model(net, loss_fn, optimizer)
model.train(1, dataset)
)");
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  const TrainingPlan& p = r.training[0];
  EXPECT_FALSE(p.lr_graph.compiled);
  EXPECT_FALSE(p.lr_graph_reason.empty());
  const auto note = std::find_if(r.diagnostics.begin(), r.diagnostics.end(), [](const auto& d) {
    return d.message.find("the learning rate Halving") != std::string::npos;
  });
  ASSERT_NE(note, r.diagnostics.end());
  EXPECT_EQ(note->severity, Severity::Information);
  EXPECT_EQ(note->range.start.line, 8u);  // class Halving(LearningRateSchedule)
  try {
    (void)graphcore::runtime::optimizer_config_from_plan(p);
    ADD_FAILURE() << "a schedule that was not compiled was accepted";
  } catch (const graphcore::runtime::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("Halving"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(p.lr_graph_reason), std::string::npos) << e.what();
  }
}

// A .npy file as numpy writes it (format 1.0): magic, version, header length, the header dict
// padded with spaces to a multiple of 64 bytes, then the data (zeros here).
std::string npy(const std::string& descr, const std::string& shape, size_t data_bytes) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + std::string(data_bytes, '\0');
}

// np.load of .npy files handed to NumpySlicesDataset, as users write it: the evaluator reads the
// arrays' types from the files' headers and the plan's source names the files for the runtime;
// with a training data directory, the files are looked for there by name.
TEST(TrainingPlan, NumpySlicesOfNpLoadedFiles) {
  cellscope::testing::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string script = R"(
import numpy as np
import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn

features = np.load("./data/x.npy")
labels = np.load("./data/y.npy")
dataset = ds.NumpySlicesDataset((features, labels), column_names=["x", "y"], shuffle=True)
dataset = dataset.batch(4, drop_remainder=True)
net = nn.Dense(3, 2)
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
opt = nn.Adam(net.trainable_params(), learning_rate=1e-3)
model = ms.train.Model(net, loss, opt)
model.train(1, dataset)
)";
  const std::string file = dir.write("train.py", script);
  const std::string x = dir.write("data/x.npy", npy("<f4", "(10, 3)", 10 * 3 * 4));
  const std::string y = dir.write("data/y.npy", npy("<i4", "(10,)", 10 * 4));
  graphcore::DiskSourceProvider disk;
  AnalysisOptions opts;
  AnalysisResult r = graphcore::analyze_file(file, opts, disk);
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  const TrainingPlan& p = r.training[0];
  ASSERT_TRUE(p.dataset);
  EXPECT_TRUE(p.dataset->opaque_reason.empty()) << p.dataset->opaque_reason;
  ASSERT_EQ(p.dataset->columns.size(), 2u);
  EXPECT_EQ(shape(p.dataset->columns[0].type), "(4, 3) float32");
  EXPECT_EQ(shape(p.dataset->columns[1].type), "(4,) int32");
  const auto canonical = [](const std::string& f) {
    return std::filesystem::weakly_canonical(f).string();
  };
  EXPECT_EQ(str(p.dataset->source, "data"), canonical(x) + ";" + canonical(y));
  EXPECT_EQ(str(p.dataset->source, "column_names"), "x, y");
  EXPECT_TRUE(p.loss_graph.compiled);

  // --data DIR: the same file names in another directory, of another length.
  dir.write("elsewhere/x.npy", npy("<f4", "(6, 3)", 6 * 3 * 4));
  dir.write("elsewhere/y.npy", npy("<i4", "(6,)", 6 * 4));
  opts.data_dir = dir.path() / "elsewhere";
  r = graphcore::analyze_file(file, opts, disk);
  ASSERT_EQ(r.training.size(), 1u);
  ASSERT_TRUE(r.training[0].dataset);
  EXPECT_EQ(str(r.training[0].dataset->source, "data"),
            canonical((dir.path() / "elsewhere/x.npy").string()) + ";" +
                canonical((dir.path() / "elsewhere/y.npy").string()));

  // A missing file or an .npz: the column types are unknown, a note and no error.
  opts.data_dir = dir.path() / "nowhere";
  r = graphcore::analyze_file(file, opts, disk);
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  ASSERT_TRUE(r.training[0].dataset);
  EXPECT_FALSE(r.training[0].dataset->opaque_reason.empty());
}

// Parameter.name is the name in the Cell tree once the network is built ("norm1.gamma", not
// LayerNorm's own "gamma"), so the filters users write over trainable_params() split the groups
// as MindSpore does (the LayerNorm parameters went to the weight-decay group before).
TEST(TrainingPlan, ParameterNamesAreTreePathsInGroupFilters) {
  AnalysisResult r = analyse("transformer_encoder_adamw.py");
  ASSERT_EQ(r.training.size(), 1u);
  const TrainingPlan& p = r.training[0];
  ASSERT_EQ(p.param_groups.size(), 3u);
  const auto& decay = p.param_groups[0].params;
  const auto& other = p.param_groups[1].params;
  for (const std::string n : {"norm1.gamma", "norm1.beta", "norm2.gamma", "norm2.beta"}) {
    EXPECT_TRUE(std::count(other.begin(), other.end(), n)) << n;
    EXPECT_FALSE(std::count(decay.begin(), decay.end(), n)) << n;
  }
  EXPECT_TRUE(std::count(decay.begin(), decay.end(), "query.weight"));
  EXPECT_TRUE(std::count(other.begin(), other.end(), "query.bias"));
  EXPECT_EQ(decay.size() + other.size(), p.param_groups[2].params.size());
}

// The graph names Parameters as MindSpore 2.10 does (measured: trainable_params() names of this
// Cell are ['tk', 'enc.cls_token', 'enc.pos']): a root Cell's own Parameter keeps the name given
// at creation; a sub-Cell's are renamed to their path when the sub-Cell is bound (a given name
// included); a generated name takes the attribute's.
TEST(TrainingPlan, ParameterNamesFollowMindSporeBinding) {
  AnalysisResult r = analyse_text(R"(import numpy as np
import mindspore as ms
from mindspore import nn, Parameter, Tensor


class Inner(nn.Cell):
    def __init__(self):
        super().__init__()
        self.cls_token = Parameter(Tensor(np.zeros((1, 2)), ms.float32), name='cls')
        self.pos = Parameter(Tensor(np.zeros((1, 2)), ms.float32))

    def construct(self, x):
        return x + self.cls_token + self.pos


class Outer(nn.Cell):
    def __init__(self):
        super().__init__()
        self.enc = Inner()
        self.tok = Parameter(Tensor(np.zeros((1, 2)), ms.float32), name='tk')

    def construct(self, x):
        return self.enc(x) + self.tok


net = Outer()
out = net(ms.Tensor(np.zeros((1, 2)), ms.float32))
)");
  ASSERT_EQ(r.cells.size(), 1u);
  std::vector<std::string> names;
  for (const auto& p : r.cells[0].params) names.push_back(p.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"tk", "enc.cls_token", "enc.pos"}));  // MindSpore's order
  std::vector<std::string> graph_params;
  for (const auto& n : r.cells[0].graph.nodes) {
    if (n.kind == graphcore::NodeKind::Parameter) graph_params.push_back(n.params.at(0));
  }
  std::sort(graph_params.begin(), graph_params.end());
  EXPECT_EQ(graph_params, (std::vector<std::string>{"enc.cls_token", "enc.pos", "tk"}));
}

// A layer bound twice (mindcv's SqueezeNet: `self.final_conv = nn.Conv2d(...)`, then
// `self.classifier = nn.SequentialCell([..., self.final_conv, ...])`): MindSpore names its
// Parameters after the last binding (`classifier.1.weight`, checked with MindSpore 2.10 on
// mindcv 0.3.0's squeezenet1_0), and the layer's node reads them by that name, the name the
// report lists (the runtime binds and export writes parameters by it).
TEST(TrainingPlan, ALayerBoundTwiceReadsItsParametersByTheirMindSporeName) {
  AnalysisResult r = analyse_text(R"(import numpy as np
import mindspore as ms
from mindspore import nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.final_conv = nn.Conv2d(4, 2, 1, has_bias=True)
        self.classifier = nn.SequentialCell([nn.ReLU(), self.final_conv, nn.ReLU()])

    def construct(self, x):
        return self.classifier(x)


net = Net()
out = net(ms.Tensor(np.zeros((1, 4, 8, 8)), ms.float32))
)");
  ASSERT_EQ(r.cells.size(), 1u);
  std::set<std::string> listed;
  for (const auto& p : r.cells[0].params) listed.insert(p.name);
  EXPECT_EQ(listed, (std::set<std::string>{"classifier.1.weight", "classifier.1.bias"}));
  size_t convs = 0;
  for (const auto& n : r.cells[0].graph.nodes) {
    for (const std::string& p : n.params) EXPECT_TRUE(listed.count(p)) << n.id << " reads " << p;
    if (n.op == "Conv2D") {
      ++convs;
      EXPECT_EQ(n.params, (std::vector<std::string>{"classifier.1.weight", "classifier.1.bias"}));
    }
  }
  EXPECT_EQ(convs, 1u);
}

// CellList / SequentialCell append, extend and insert name the added Cell's Parameters with the
// prefix MindSpore 2.10's _get_prefix_and_index reads from the names the items have already: a
// CellList bound empty and filled by append gives "0.0.weight", "0.1.0.gamma", ... (mindcv's
// EdgeNeXt: 134 of its 160 checkpoint names are of this kind). The expected names are
// MindSpore 2.10's `p.name` for this Net, in parameters_and_names() order.
TEST(TrainingPlan, ContainerAppendExtendInsertNameParametersAsMindSporeDoes) {
  AnalysisResult r = analyse_text(R"(import mindspore as ms
from mindspore import nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.down = nn.CellList()
        stem = nn.SequentialCell(nn.Conv2d(3, 8, 4, stride=4), nn.BatchNorm2d(8))
        self.down.append(stem)
        for i in range(2):
            self.down.append(nn.SequentialCell(nn.BatchNorm2d(8), nn.Conv2d(8, 8, 1)))
        self.stages = nn.CellList()
        for i in range(3):
            self.stages.append(nn.SequentialCell(*[nn.Conv2d(8, 8, 3) for _ in range(2)]))
        self.head = nn.Dense(8, 10)
        self.cls = nn.SequentialCell([nn.Dense(10, 10), nn.ReLU()])
        self.od = nn.SequentialCell(nn.CellList([nn.Dense(10, 4)]))
        self.ex = nn.CellList([nn.Dense(4, 4)])
        self.ex.extend([nn.Dense(4, 5), nn.SequentialCell(nn.Dense(5, 5))])
        self.ex.insert(1, nn.Dense(3, 3))
        self.ex.insert(-1, nn.SequentialCell([nn.Dense(2, 2), nn.Dense(2, 2)]))
        seq = nn.SequentialCell(nn.Dense(6, 6))
        seq.append(nn.Dense(6, 7))
        self.seq = seq
        empty = nn.CellList()
        empty.append(nn.ReLU())
        empty.append(nn.SequentialCell(nn.Dense(9, 9)))
        empty.append(nn.Dense(9, 8))
        self.empty = empty

    def construct(self, x):
        for i in range(3):
            x = self.down[i](x)
            x = self.stages[i](x)
        x = x.mean((2, 3))
        return self.cls(self.head(x))


net = Net()
out = net(ms.ops.zeros((1, 3, 32, 32), ms.float32))
)");
  ASSERT_EQ(r.cells.size(), 1u);
  std::vector<std::string> listed;
  for (const auto& p : r.cells[0].params) listed.push_back(p.name);
  const std::vector<std::string> mindspore = {"0.0.weight",
                                              "0.1.moving_mean",
                                              "0.1.moving_variance",
                                              "0.1.gamma",
                                              "0.1.beta",
                                              "0.1.0.moving_mean",
                                              "0.1.0.moving_variance",
                                              "0.1.0.gamma",
                                              "0.1.0.beta",
                                              "0.1.1.weight",
                                              "0.2.0.moving_mean",
                                              "0.2.0.moving_variance",
                                              "0.2.0.gamma",
                                              "0.2.0.beta",
                                              "0.2.1.weight",
                                              "0.0.weight",
                                              "0.1.weight",
                                              "0.1.0.weight",
                                              "0.1.1.weight",
                                              "0.2.0.weight",
                                              "0.2.1.weight",
                                              "head.weight",
                                              "head.bias",
                                              "cls.0.weight",
                                              "cls.0.bias",
                                              "od.0.0.weight",
                                              "od.0.0.bias",
                                              "ex.0.weight",
                                              "ex.0.bias",
                                              "ex.1.weight",
                                              "ex.1.bias",
                                              "ex.2.weight",
                                              "ex.2.bias",
                                              "ex.3.0.weight",
                                              "ex.3.0.bias",
                                              "ex.3.1.weight",
                                              "ex.3.1.bias",
                                              "ex.4.0.weight",
                                              "ex.4.0.bias",
                                              "seq.0.weight",
                                              "seq.0.bias",
                                              "seq.1.weight",
                                              "seq.1.bias",
                                              "empty.1.0.weight",
                                              "empty.1.0.bias",
                                              "empty.2.weight",
                                              "empty.2.bias"};
  EXPECT_EQ(listed, mindspore);
}

TEST(TrainingPlan, DynamicLossScaleTwice) {
  AnalysisResult r = analyse("dynamic_loss_scale.py");
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 2u);
  const TrainingPlan& a = r.training[0];
  EXPECT_EQ(a.idiom, TrainingPlan::Idiom::ModelTrain);
  ASSERT_TRUE(a.loss_scale_manager);
  EXPECT_EQ(a.loss_scale_manager->api, "train.DynamicLossScaleManager");
  EXPECT_DOUBLE_EQ(num(*a.loss_scale_manager, "init_loss_scale"), 65536);
  EXPECT_DOUBLE_EQ(num(*a.loss_scale_manager, "scale_window"), 50);
  ASSERT_EQ(a.callbacks.size(), 1u);  // callbacks=LossMonitor(), not a list
  EXPECT_EQ(*a.epochs, 2);
  EXPECT_EQ(shape(a.dataset->columns[0].type), "(64, 1, 28, 28) float32");
  const TrainingPlan& b = r.training[1];
  EXPECT_EQ(b.idiom, TrainingPlan::Idiom::TrainOneStepCell);
  EXPECT_EQ(b.network, "MLP");
  ASSERT_TRUE(b.loss_scale_manager);
  EXPECT_EQ(b.loss_scale_manager->api, "nn.DynamicLossScaleUpdateCell");
  EXPECT_DOUBLE_EQ(num(*b.loss_scale_manager, "loss_scale_value"), 4096);
  EXPECT_EQ(*b.epochs, 1);
  EXPECT_EQ(shape(b.dataset->columns[0].type), "(32, 1, 28, 28) float32");
}

TEST(TrainingPlan, FunctionalDynamicLossScaler) {
  // mindspore.amp.DynamicLossScaler in the functional idiom: scale() in forward_fn, unscale(),
  // all_finite() and adjust() in train_step; the scaler is the plan's loss-scale manager.
  AnalysisResult r = analyse("functional_loss_scaler.py");
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  const TrainingPlan& p = r.training[0];
  EXPECT_EQ(p.idiom, TrainingPlan::Idiom::Functional);
  EXPECT_EQ(p.network, "Network");
  ASSERT_TRUE(p.loss_scale_manager);
  EXPECT_EQ(p.loss_scale_manager->api, "amp.DynamicLossScaler");
  EXPECT_DOUBLE_EQ(num(*p.loss_scale_manager, "scale_value"), 0x1p122);
  EXPECT_DOUBLE_EQ(num(*p.loss_scale_manager, "scale_factor"), 2);
  EXPECT_DOUBLE_EQ(num(*p.loss_scale_manager, "scale_window"), 3);
  EXPECT_EQ(p.optimizer.api, "nn.Momentum");
  EXPECT_TRUE(p.loss_graph.compiled);
}

TEST(TrainingPlan, ArticleNetwork) {
  AnalysisResult r = analyse("article_net.py");
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  const TrainingPlan& p = r.training[0];
  EXPECT_EQ(p.network, "Net");
  EXPECT_EQ(*p.epochs, 5);
  ASSERT_EQ(p.callbacks.size(), 2u);
  EXPECT_TRUE(p.loss_graph.compiled);
  // Conv2d has no bias by default in MindSpore: 288 + 18432 + 92170.
  EXPECT_EQ(p.loss_graph.trainable_params, 110890);
  EXPECT_EQ(shape(p.loss_graph.inputs[0].type), "(64, 1, 28, 28) float32");
}

TEST(TrainingPlan, GeneratorDatasetIsOpaqueWithALocatedNote) {
  AnalysisResult r = analyse_text(R"(import mindspore.dataset as ds
from mindspore import nn, Model

def gen():
    for i in range(10):
        yield i, i

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 2)
    def construct(self, x):
        return self.fc(x)

data = ds.GeneratorDataset(gen, column_names=["x", "y"]).batch(2)
net = Net()
model = Model(net, nn.MSELoss(), nn.Momentum(net.trainable_params(), 0.1, 0.9))
model.train(3, data)
)");
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  ASSERT_TRUE(r.training[0].dataset);
  EXPECT_NE(r.training[0].dataset->opaque_reason.find("GeneratorDataset"), std::string::npos);
  EXPECT_EQ(r.training[0].dataset->ops.size(), 1u);
  bool noted = std::any_of(r.diagnostics.begin(), r.diagnostics.end(), [](const auto& d) {
    return d.code == "training-not-followed" && d.severity == Severity::Information &&
           d.range.start.line == 14;
  });
  EXPECT_TRUE(noted);
}

TEST(TrainingPlan, NoTrainingNoPlan) {
  AnalysisResult r = analyse_text(R"(from mindspore import nn
import mindspore.dataset as ds

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 2)
    def construct(self, x):
        return self.fc(x)

data = ds.MnistDataset("./mnist")
for image, label in data.create_tuple_iterator():
    print(image.shape)
)");
  expect_no_errors(r);
  EXPECT_TRUE(r.training.empty());
}

TEST(TrainingPlan, ColumnsThroughTransforms) {
  // Verified with MindSpore 2.10 on a generated MNIST: OneHot keeps uint32, CenterCrop and
  // RandomCrop take the size, Resize(int) of a square is square, project keeps the order given.
  AnalysisResult r = analyse_text(R"(import mindspore.dataset as ds
from mindspore.dataset import vision, transforms
from mindspore import nn, Model

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 2)
    def construct(self, x):
        return self.fc(x)

d = ds.MnistDataset("./mnist")
d = d.map(transforms.OneHot(10), "label").map([vision.CenterCrop(20), vision.Resize(24)], "image")
d = d.project(["label", "image"]).batch(8)
net = Net()
Model(net, nn.MSELoss(), nn.SGD(net.trainable_params())).train(1, d)
)");
  ASSERT_EQ(r.training.size(), 1u);
  const auto& cols = r.training[0].dataset->columns;
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[0].name, "label");
  EXPECT_EQ(shape(cols[0].type), "(8, 10) uint32");
  EXPECT_EQ(shape(cols[1].type), "(8, 24, 24, 1) uint8");
}

}  // namespace

// The program's own evaluation pipeline: the quick-start tutorial's test_loop (a loop over
// another dataset that calls the network without a training step), Model.eval on the same Model,
// Model.fit's valid_dataset; nothing when the only other loop trains or calls another Cell.
const char* const kEvalPipe = R"(import mindspore
from mindspore import nn
from mindspore.dataset import vision, transforms, MnistDataset
from mindspore.train import Model


def datapipe(path, batch_size):
    dataset = MnistDataset(path)
    dataset = dataset.map([vision.Rescale(1.0 / 255.0, 0), vision.HWC2CHW()], 'image')
    dataset = dataset.map(transforms.TypeCast(mindspore.int32), 'label')
    return dataset.batch(batch_size)


class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense = nn.Dense(28 * 28, 10)

    def construct(self, x):
        return self.dense(self.flatten(x))


)";

TEST(TrainingPlan, FunctionalTestLoopIsTheEvaluationPipeline) {
  std::string text = std::string(kEvalPipe) + R"(train_dataset = datapipe('MNIST_Data/train', 64)
test_dataset = datapipe('MNIST_Data/test', 32)
model = Network()
other = Network()
loss_fn = nn.CrossEntropyLoss()
optimizer = nn.SGD(model.trainable_params(), 1e-2)


def forward_fn(data, label):
    logits = model(data)
    return loss_fn(logits, label), logits


grad_fn = mindspore.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)


def train_loop(model, dataset):
    model.set_train()
    for data, label in dataset.create_tuple_iterator():
        (loss, _), grads = grad_fn(data, label)
        optimizer(grads)


def probe(cell, dataset):
    for data, label in dataset.create_tuple_iterator():
        cell(data)


def test_loop(model, dataset):
    model.set_train(False)
    correct = 0
    for data, label in dataset.create_tuple_iterator():
        pred = model(data)
        correct += (pred.argmax(1) == label).asnumpy().sum()


for t in range(2):
    train_loop(model, train_dataset)
    probe(other, test_dataset)
    test_loop(model, test_dataset)
)";
  AnalysisResult r = analyse_text(text);
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  const TrainingPlan& p = r.training[0];
  ASSERT_TRUE(p.dataset);
  EXPECT_EQ(str(p.dataset->source, "dataset_dir"), "MNIST_Data/train");
  ASSERT_TRUE(p.eval_dataset);  // test_loop's, not probe's (another Cell)
  EXPECT_EQ(str(p.eval_dataset->source, "dataset_dir"), "MNIST_Data/test");
  EXPECT_EQ(p.eval_range.start.line, 54u);  // test_loop's `for`
  ASSERT_EQ(p.eval_dataset->columns.size(), 2u);
  EXPECT_EQ(shape(p.eval_dataset->columns[0].type), "(32, 1, 28, 28) float32");
}

TEST(TrainingPlan, ModelEvalOnTheSameModelIsTheEvaluationPipeline) {
  std::string text = std::string(kEvalPipe) + R"(net = Network()
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')
opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)
other = Model(Network(), loss, nn.Momentum(net.trainable_params(), 0.01, 0.9))
other.eval(datapipe('MNIST_Data/other', 32))
model = Model(net, loss, opt, metrics={'acc'})
model.train(1, datapipe('MNIST_Data/train', 32))
model.eval(datapipe('MNIST_Data/test', 32))
)";
  AnalysisResult r = analyse_text(text);
  expect_no_errors(r);
  ASSERT_EQ(r.training.size(), 1u);
  const TrainingPlan& p = r.training[0];
  ASSERT_TRUE(p.eval_dataset);  // this Model's eval, not the other Model's
  EXPECT_EQ(str(p.eval_dataset->source, "dataset_dir"), "MNIST_Data/test");
  EXPECT_EQ(p.eval_range.start.line, 30u);

  std::string fit = std::string(kEvalPipe) + R"(net = Network()
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')
model = Model(net, loss, nn.Momentum(net.trainable_params(), 0.01, 0.9))
model.fit(2, datapipe('MNIST_Data/train', 32), datapipe('MNIST_Data/valid', 32))
)";
  AnalysisResult rf = analyse_text(fit);
  ASSERT_EQ(rf.training.size(), 1u);
  ASSERT_TRUE(rf.training[0].eval_dataset);
  EXPECT_EQ(str(rf.training[0].eval_dataset->source, "dataset_dir"), "MNIST_Data/valid");

  std::string none = std::string(kEvalPipe) + R"(net = Network()
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')
model = Model(net, loss, nn.Momentum(net.trainable_params(), 0.01, 0.9))
model.train(1, datapipe('MNIST_Data/train', 32))
)";
  AnalysisResult rn = analyse_text(none);
  ASSERT_EQ(rn.training.size(), 1u);
  EXPECT_FALSE(rn.training[0].eval_dataset);
}
