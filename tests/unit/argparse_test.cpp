// argparse evaluated statically (graphcore/src/argparse_model.cpp): a training script's
// hyperparameters come from `parser.parse_args()`, parsed from AnalysisOptions::script_args
// (none: the defaults) with argparse's rules; a command line the script would reject is a
// located warning, and what cannot be known stays unknown (no false error).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/training.h"

namespace {

using graphcore::AnalysisOptions;
using graphcore::AnalysisResult;
using graphcore::AttrValue;
using graphcore::PlanCall;
using graphcore::Severity;

constexpr const char* kScript = R"(import argparse
import mindspore as ms
import mindspore.dataset as ds
import mindspore.dataset.transforms as transforms
import mindspore.dataset.vision as vision
from mindspore import nn


def str2bool(v):
    return v.lower() in ("yes", "true", "1")


class Net(nn.Cell):
    def __init__(self, hidden):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(28 * 28, hidden)
        self.fc2 = nn.Dense(hidden, 10)

    def construct(self, x):
        return self.fc2(self.fc1(self.flatten(x)))


def get_args():
    parser = argparse.ArgumentParser(description="train")
    parser.add_argument("--lr", "--learning-rate", type=float, default="0.05")
    group = parser.add_argument_group("model")
    group.add_argument("--hidden-size", type=int, default=64)
    parser.add_argument("-e", "--epochs", default=3, type=int)
    parser.add_argument("--data_path", type=str, default="./MNIST_Data")
    parser.add_argument("--nesterov", action="store_true")
    parser.add_argument("--amp", type=str2bool, default=False)
    parser.add_argument("--decay", dest="weight_decay", type=float, default=0.0)
    parser.add_argument("--milestones", type=int, nargs="+", default=[10, 20])
    parser.add_argument("-v", "--verbose", action="count", default=0)
    return parser.parse_args()


args = get_args()
data = ds.MnistDataset(args.data_path, usage="train")
data = data.map(vision.Rescale(1.0 / 255.0, 0.0), input_columns="image")
data = data.map(transforms.TypeCast(ms.int32), input_columns="label").batch(32)
net = Net(args.hidden_size + args.verbose + len(args.milestones) + int(args.amp))
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
opt = nn.SGD(net.trainable_params(), learning_rate=args.lr, momentum=0.9,
             nesterov=args.nesterov, weight_decay=args.weight_decay)
ms.Model(net, loss_fn, opt).train(args.epochs, data)
)";

AnalysisResult analyse(const std::vector<std::string>& argv, const std::string& text = kScript) {
  graphcore::MemorySourceProvider mem("/ws/train.py", text);
  AnalysisOptions opts;
  opts.script_args = argv;
  return graphcore::analyze_file("/ws/train.py", opts, mem);
}

const AttrValue* arg(const PlanCall& c, const std::string& name) { return c.arg(name); }

double num(const PlanCall& c, const std::string& name) {
  const AttrValue* v = arg(c, name);
  if (!v) return -1;
  if (auto* d = std::get_if<double>(v)) return *d;
  if (auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  return -2;
}

int errors(const AnalysisResult& r) {
  int n = 0;
  for (const auto& d : r.diagnostics) n += d.severity == Severity::Error ? 1 : 0;
  return n;
}

std::string messages(const AnalysisResult& r) {
  std::string s;
  for (const auto& d : r.diagnostics) s += d.message + "\n";
  return s;
}

TEST(Argparse, DefaultsAreTheRunWithoutArguments) {
  AnalysisResult r = analyse({});
  ASSERT_EQ(r.training.size(), 1U) << messages(r);
  const auto& p = r.training[0];
  EXPECT_EQ(errors(r), 0) << messages(r);
  // A string default goes through `type` (argparse converts it): 0.05, a float.
  EXPECT_DOUBLE_EQ(num(p.optimizer, "learning_rate"), 0.05);
  EXPECT_DOUBLE_EQ(num(p.optimizer, "weight_decay"), 0.0);
  const AttrValue* nesterov = arg(p.optimizer, "nesterov");
  ASSERT_TRUE(nesterov && std::holds_alternative<bool>(*nesterov));
  EXPECT_FALSE(std::get<bool>(*nesterov));
  ASSERT_TRUE(p.epochs.has_value());
  EXPECT_EQ(*p.epochs, 3);
  ASSERT_TRUE(p.dataset.has_value());
  const AttrValue* dir = p.dataset->source.arg("dataset_dir");
  ASSERT_TRUE(dir && std::holds_alternative<std::string>(*dir));
  EXPECT_EQ(std::get<std::string>(*dir), "./MNIST_Data");
  // The hidden width: hidden-size (from a group, dashes to underscores) 64 + verbose 0 + two
  // milestones + amp False = 66.
  const int64_t h = 66;
  EXPECT_EQ(p.loss_graph.trainable_params, 784 * h + h + h * 10 + 10);
}

TEST(Argparse, CommandLineOverridesWithArgparseRules) {
  // A unique prefix (--hid), an alias (--learning-rate=...), a short option, store_true, a dest,
  // a user type function run statically, nargs="+", count.
  AnalysisResult r = analyse({"--learning-rate=0.5", "--hid", "32", "-e", "1", "--nesterov",
                              "--decay", "1e-4", "--amp", "yes", "--milestones", "3", "6", "9",
                              "-v", "-v", "--data_path", "/data/mnist"});
  ASSERT_EQ(r.training.size(), 1U) << messages(r);
  const auto& p = r.training[0];
  EXPECT_EQ(errors(r), 0) << messages(r);
  EXPECT_DOUBLE_EQ(num(p.optimizer, "learning_rate"), 0.5);
  EXPECT_DOUBLE_EQ(num(p.optimizer, "weight_decay"), 1e-4);
  const AttrValue* nesterov = arg(p.optimizer, "nesterov");
  ASSERT_TRUE(nesterov && std::holds_alternative<bool>(*nesterov));
  EXPECT_TRUE(std::get<bool>(*nesterov));
  EXPECT_EQ(*p.epochs, 1);
  EXPECT_EQ(std::get<std::string>(*p.dataset->source.arg("dataset_dir")), "/data/mnist");
  // 32 + verbose 2 + three milestones + amp True (str2bool("yes")) = 38.
  const int64_t h = 38;
  EXPECT_EQ(p.loss_graph.trainable_params, 784 * h + h + h * 10 + 10);
}

TEST(Argparse, ACommandLineTheScriptRejectsIsALocatedWarning) {
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {"--lr", "abc"}, {"--bogus", "1"}, {"--epochs"}, {"--nesterov=1"}}) {
    AnalysisResult r = analyse(argv);
    bool found = false;
    for (const auto& d : r.diagnostics) {
      if (d.code == "raises" && d.message.find("parse_args() exits") != std::string::npos) {
        found = true;
        EXPECT_EQ(d.severity, Severity::Warning);
        EXPECT_EQ(d.range.start.line, 35) << d.message;  // `return parser.parse_args()`
      }
    }
    EXPECT_TRUE(found) << argv[0] << "\n" << messages(r);
    // The namespace is unknown then: nothing downstream is an error.
    EXPECT_EQ(errors(r), 0) << messages(r);
  }
}

TEST(Argparse, NumbersAreReadAsPythonsIntAndFloatReadThem) {
  // type=int / type=float read the text with the interpreter's int()/float() rules
  // (graphcore/pynumber.h): whitespace, underscores between digits, a sign.
  AnalysisResult r = analyse({"--hid", " 1_6 ", "--lr", "1_0.5e-2", "-e", "+2", "--decay", "-.5"});
  ASSERT_EQ(r.training.size(), 1U) << messages(r);
  const auto& p = r.training[0];
  EXPECT_EQ(errors(r), 0) << messages(r);
  EXPECT_DOUBLE_EQ(num(p.optimizer, "learning_rate"), 0.105);
  EXPECT_DOUBLE_EQ(num(p.optimizer, "weight_decay"), -0.5);  // "-.5" is a number to argparse
  EXPECT_EQ(*p.epochs, 2);
  const int64_t h = 16 + 2;  // hidden 16 + two default milestones
  EXPECT_EQ(p.loss_graph.trainable_params, 784 * h + h + h * 10 + 10);
  // What Python's int() rejects, argparse reports as an invalid value; "-1e5" is an option
  // string to argparse (its negative-number pattern is -digits or -digits.digits).
  for (const auto& [argv, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"-e", "0x10"}, "invalid int value: '0x10'"},
           {{"-e", "1__0"}, "invalid int value: '1__0'"},
           {{"--lr", "0x1p3"}, "invalid float value: '0x1p3'"},
           {{"--lr", "-1e5"}, "expected one argument"}}) {
    AnalysisResult bad = analyse(argv);
    EXPECT_NE(messages(bad).find(says), std::string::npos) << argv[1] << "\n" << messages(bad);
    EXPECT_EQ(errors(bad), 0) << messages(bad);
  }
}

TEST(Argparse, WhatCannotBeKnownStaysUnknown) {
  // Sub-commands, a flag computed at run time, a custom Action and parse_known_args.
  const std::string text = R"(import argparse
import sys
from mindspore import nn


class Act(argparse.Action):
    pass


parser = argparse.ArgumentParser()
sub = parser.add_subparsers()
parser.add_argument("--" + sys.argv[0], default=1)
parser.add_argument("--width", action=Act, default=4)
args, rest = parser.parse_known_args()
layer = nn.Dense(args.width, args.anything)
extra = args.not_declared
)";
  AnalysisResult r = analyse({"--other", "5"}, text);
  EXPECT_EQ(errors(r), 0) << messages(r);
}

TEST(Argparse, AnAttributeTheParserDoesNotDeclareIsUnknown) {
  // Programs add attributes the evaluator may not see (vars(args).update(cfg), a parser built
  // partly elsewhere): a missing one is unknown, not an error; the declared ones are known.
  const std::string text = R"(import argparse
from mindspore import nn

parser = argparse.ArgumentParser()
parser.add_argument("--width", type=int, default=8)
args = parser.parse_args()
vars(args).update({"depth": 3})
layer = nn.Dense(args.width, args.depth)
)";
  AnalysisResult r = analyse({}, text);
  EXPECT_EQ(errors(r), 0) << messages(r);
}

}  // namespace
