// MindIR import (graphcore/mindir_import.h): a small ModelProto built here (no committed
// binaries) imports into the semantic graph; every truncation and a sample of flipped bytes of
// it is an error or a graph, never a crash.
#include <gtest/gtest.h>

#include <string>

#include "graphcore/mindir_import.h"
#include "graphcore_proto/mind_ir.pb.h"

namespace {

namespace pb = cellscope::mindir;

void tensor_type(pb::Tensor* t, std::initializer_list<int64_t> dims) {
  t->set_data_type(pb::Tensor::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
}

// x (2, 3) -> MatMul(x, w^T) with w (4, 3) as a weight -> ReLU; MindSpore's form with Load.
std::string small_model() {
  pb::Model m;
  m.set_ir_version("1.1");
  m.set_producer_name("MindSpore");
  m.set_model_version("2.10.0");
  m.set_little_endian(true);
  m.set_mind_ir_version(3);
  pb::Graph* g = m.mutable_graph();
  g->set_name("1_Net_construct_2");
  pb::ValueInfo* in = g->add_input();
  in->set_name("1_Net_construct_2:x");
  tensor_type(in->add_tensor(), {2, 3});
  pb::Tensor* w = g->add_parameter();
  tensor_type(w, {4, 3});
  w->set_name("1_Net_construct_2:fc.weight");
  w->set_ref_key("fc.weight");
  w->set_raw_data(std::string(48, '\0'));
  auto prim = [&](const char* key, const char* op, pb::Primitive::Kind kind) {
    pb::Primitive* p = m.add_primitives();
    p->set_name(key);
    p->set_op_type(op);
    p->set_prim_type(kind);
  };
  prim("MatMul:1", "MatMul", pb::Primitive::PRIMITIVE_FUNCTION);
  prim("ReLU:2", "ReLU", pb::Primitive::PRIMITIVE_FUNCTION);
  auto constant = [&](const char* name, bool v) {
    pb::Node* n = g->add_node();
    n->set_op_type("Constant");
    n->set_name(name);
    n->add_output(name);
    pb::Attribute* a = n->add_attribute();
    a->set_name("value");
    a->set_type(pb::Attribute::BOOL);
    a->set_i(v ? 1 : 0);
  };
  constant("F", false);
  constant("T", true);
  auto node = [&](const char* name, const char* op, std::initializer_list<const char*> ins) {
    pb::Node* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    n->add_output(name);
    n->set_domain("Default/fc-Dense/MatMul-op0");
    for (const char* i : ins) n->add_input(i);
    pb::Attribute* s = n->add_attribute();
    s->set_name("shape");
    s->set_type(pb::Attribute::TENSORS);
    tensor_type(s->add_tensors(), {2, 4});
  };
  node("mm", "REF::MatMul:1", {"1_Net_construct_2:x", "1_Net_construct_2:fc.weight", "F", "T"});
  node("relu", "REF::ReLU:2", {"mm"});
  g->add_output()->set_name("relu");
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

TEST(MindirImport, SmallModelBecomesTheSemanticGraph) {
  const auto r = graphcore::import_mindir(small_model(), "net.mindir");
  ASSERT_TRUE(r.ok) << r.error;
  const auto& g = r.report.graph;
  ASSERT_EQ(g.nodes.size(), 3u);  // x, fc (MatMul reading fc.weight), ReLU
  EXPECT_EQ(g.nodes[1].op, "MatMul");
  EXPECT_EQ(g.nodes[1].id, "fc");
  ASSERT_EQ(g.nodes[1].params.size(), 1u);
  EXPECT_EQ(g.nodes[1].params[0], "fc.weight");
  EXPECT_EQ(g.nodes[1].outputs[0].shape.str(), "(2, 4)");
  EXPECT_GT(g.nodes[1].flops, 0);  // from the registry's ops.MatMul rule
  EXPECT_EQ(g.nodes[2].op, "ReLU");
  EXPECT_EQ(r.report.total_params, 12);
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0].node, 2u);
  EXPECT_EQ(r.report.graph.scope_classes.at("fc"), "Dense");
}

TEST(MindirImport, BadBytesAreAnErrorNeverACrash) {
  const std::string good = small_model();
  EXPECT_FALSE(graphcore::import_mindir("", "e.mindir").ok);
  auto junk = graphcore::import_mindir("def f(): pass\n", "j.mindir");
  EXPECT_FALSE(junk.ok);
  EXPECT_NE(junk.error.find("not a MindIR file"), std::string::npos) << junk.error;
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = graphcore::import_mindir(good.substr(0, n), "t.mindir");
    EXPECT_TRUE(r.ok || !r.error.empty()) << n;
  }
  auto cut = graphcore::import_mindir(good.substr(0, good.size() / 2), "t.mindir");
  EXPECT_FALSE(cut.ok);
  for (size_t i = 0; i < good.size(); i += 3) {
    for (unsigned char bit : {0x01, 0x80, 0xff}) {
      std::string b = good;
      b[i] = static_cast<char>(static_cast<unsigned char>(b[i]) ^ bit);
      auto r = graphcore::import_mindir(b, "f.mindir");
      EXPECT_TRUE(r.ok || !r.error.empty()) << i;
    }
  }
}

TEST(MindirImport, UnknownInputAndShortRawDataAreNamed) {
  pb::Model m;
  ASSERT_TRUE(m.ParseFromString(small_model()));
  m.mutable_graph()->mutable_node(3)->set_input(0, "nowhere");
  std::string b;
  m.SerializeToString(&b);
  auto r = graphcore::import_mindir(b, "u.mindir");
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("references unknown input 'nowhere'"), std::string::npos) << r.error;
  ASSERT_TRUE(m.ParseFromString(small_model()));
  m.mutable_graph()->mutable_parameter(0)->set_raw_data(std::string(10, '\0'));
  m.SerializeToString(&b);
  r = graphcore::import_mindir(b, "s.mindir");
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("raw_data has 10 bytes"), std::string::npos) << r.error;
  ASSERT_TRUE(m.ParseFromString(small_model()));
  m.mutable_graph()->mutable_parameter(0)->set_dims(0, int64_t{1} << 40);
  m.mutable_graph()->mutable_parameter(0)->set_dims(1, int64_t{1} << 40);
  m.SerializeToString(&b);
  r = graphcore::import_mindir(b, "o.mindir");
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("overflow"), std::string::npos) << r.error;
}

}  // namespace
