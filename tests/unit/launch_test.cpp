// `cellscope launch --msrun` (server/launch.h): mindspore_config.json's `cluster`, the cluster
// resolved from it and the command line, the hostfile format and msrun's command line. The runs
// of msrun itself are tests/mindspore/test_msrun_launch.py.
#include "launch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "project_config.h"

namespace fs = std::filesystem;
using cellscope::server::ClusterConfig;
using cellscope::server::ClusterOverrides;
using cellscope::server::msrun_arguments;
using cellscope::server::parse_hostfile;
using cellscope::server::parse_project_config;
using cellscope::server::resolve_cluster;
using cellscope::server::shell_quote;

TEST(Launch, ClusterSectionOfTheProjectConfig) {
  const auto c = parse_project_config("/w/mindspore_config.json", R"({
  "cluster": {"worker_num": 16, "master_addr": "10.0.0.1", "master_port": 8200,
              "hostfile": [{"host": "10.0.0.1", "slots": 8}, {"host": "10.0.0.2", "slots": 8}],
              "log_dir": "logs", "python": "~/venv/bin/python", "cluster_time_out": 300}})");
  EXPECT_TRUE(c.diagnostics.empty());
  const ClusterConfig& cl = c.cluster;
  EXPECT_TRUE(cl.present);
  EXPECT_EQ(cl.worker_num, 16);
  EXPECT_FALSE(cl.local_worker_num);
  EXPECT_EQ(cl.master_addr, "10.0.0.1");
  EXPECT_EQ(cl.master_port, 8200);
  EXPECT_EQ(cl.cluster_time_out, 300);
  ASSERT_EQ(cl.hosts.size(), 2u);
  EXPECT_EQ(cl.hosts[1].host, "10.0.0.2");
  EXPECT_EQ(cl.hosts[1].slots, 8);
  EXPECT_EQ(cl.log_dir, "logs");
  EXPECT_EQ(cl.python, "~/venv/bin/python");
  // The strategy checks' device count: the cluster's workers when `device_num` is not given.
  EXPECT_EQ(c.device_count(), 16);
}

TEST(Launch, DeviceNumWinsOverTheClusterForTheStrategyChecks) {
  const auto both = parse_project_config("/w/mindspore_config.json",
                                         R"({"device_num": 8, "cluster": {"worker_num": 16}})");
  EXPECT_EQ(both.device_count(), 8);
  const auto none = parse_project_config("/w/mindspore_config.json", R"({"target": "cpu"})");
  EXPECT_FALSE(none.device_count());
}

TEST(Launch, BadClusterValuesAreLocatedAndSkipped) {
  const auto c = parse_project_config("/w/mindspore_config.json", R"({
  "cluster": {"worker_num": 0, "master_port": 80, "local_worker_num": 2,
              "hostfile": [{"host": "a", "slots": 0}], "python": ""}})");
  ASSERT_EQ(c.diagnostics.size(), 4u);
  EXPECT_EQ(c.diagnostics[0].code, "invalid-config");
  EXPECT_EQ(c.diagnostics[0].range.start.line, 1u);  // at "worker_num"
  EXPECT_NE(c.diagnostics[1].message.find("`master_port` must be an integer from 1024 to 65535"),
            std::string::npos);
  EXPECT_FALSE(c.cluster.worker_num);
  EXPECT_FALSE(c.cluster.master_port);
  EXPECT_EQ(c.cluster.local_worker_num, 2);  // the valid field still applies
  EXPECT_TRUE(c.cluster.hosts.empty());      // no partial host list
  const auto d = parse_project_config("/w/mindspore_config.json", R"({"cluster": [1]})");
  ASSERT_EQ(d.diagnostics.size(), 1u);
  EXPECT_FALSE(d.cluster.present);
}

TEST(Launch, Hostfile) {
  std::string error;
  auto hosts =
      parse_hostfile("# nodes\n10.0.0.1 slots=8\n\n  node-b   slots=8 # b\nnode-c\n", &error);
  ASSERT_TRUE(hosts) << error;
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[1].host, "node-b");
  EXPECT_EQ((*hosts)[1].slots, 8);
  EXPECT_EQ((*hosts)[2].slots, 1);
  EXPECT_FALSE(parse_hostfile("a slots=8\nb slots=x\n", &error));
  EXPECT_EQ(error, "line 2: expected \"HOST slots=N\" (N from 1 to 65536)");
  EXPECT_FALSE(parse_hostfile("a slots=0\n", &error));
  EXPECT_FALSE(parse_hostfile("a b c\n", &error));
  EXPECT_FALSE(parse_hostfile("# none\n", &error));
  EXPECT_EQ(error, "no host in it");
}

TEST(Launch, DefaultsAndOverrides) {
  std::string error;
  ClusterConfig cfg;
  // Nothing: msrun's defaults, the logs next to the script.
  auto c = resolve_cluster(nullptr, "", {}, "/p/train.py", &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->worker_num, 8);
  EXPECT_EQ(c->local_worker_num, 8);
  EXPECT_EQ(c->master_addr, "127.0.0.1");
  EXPECT_EQ(c->master_port, 8118);
  EXPECT_EQ(c->log_dir, fs::path("/p/msrun_log"));
  EXPECT_TRUE(c->python.empty());
  // worker_num alone: all local; paths against the configuration's directory.
  cfg.worker_num = 2;
  cfg.log_dir = "runs/a";
  cfg.python = "venv/bin/python";
  c = resolve_cluster(&cfg, "/proj", {}, "/proj/src/train.py", &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->local_worker_num, 2);
  EXPECT_EQ(c->log_dir, fs::path("/proj/runs/a"));
  EXPECT_EQ(c->python, "/proj/venv/bin/python");
  // The command line wins; a bare interpreter name is left to PATH.
  ClusterOverrides cli;
  cli.worker_num = 4;
  cli.local_worker_num = 2;
  cli.node_rank = 1;
  cli.master_port = 9000;
  cli.python = "python3";
  c = resolve_cluster(&cfg, "/proj", cli, "/proj/src/train.py", &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->worker_num, 4);
  EXPECT_EQ(c->local_worker_num, 2);
  EXPECT_EQ(c->node_rank, 1);
  EXPECT_EQ(c->master_port, 9000);
  EXPECT_EQ(c->python, "python3");
  // Contradictions.
  cli = {};
  cli.local_worker_num = 3;
  EXPECT_FALSE(resolve_cluster(&cfg, "/proj", cli, "/proj/train.py", &error));
  EXPECT_EQ(error, "local_worker_num 3 is larger than worker_num 2");
  cli.local_worker_num = 1;  // two nodes, but which one is this?
  EXPECT_FALSE(resolve_cluster(&cfg, "/proj", cli, "/proj/train.py", &error));
  EXPECT_NE(error.find("give a hostfile, or node_rank"), std::string::npos);
}

TEST(Launch, HostfileGivesTheCluster) {
  std::string error;
  ClusterConfig cfg;
  cfg.hosts = {{"10.0.0.1", 4}, {"10.0.0.2", 4}};
  auto c = resolve_cluster(&cfg, "/proj", {}, "/proj/train.py", &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->worker_num, 8);
  EXPECT_EQ(c->local_worker_num, 4);
  EXPECT_EQ(c->master_addr, "10.0.0.1");
  ClusterOverrides cli;
  cli.node_rank = 2;
  EXPECT_FALSE(resolve_cluster(&cfg, "/proj", cli, "/proj/train.py", &error));
  EXPECT_EQ(error, "node_rank 2 is past the hostfile's 2 host(s) (node ranks count from 0)");
  cfg.worker_num = 16;
  EXPECT_FALSE(resolve_cluster(&cfg, "/proj", {}, "/proj/train.py", &error));
  EXPECT_EQ(error, "worker_num is 16 but the hostfile's slots sum to 8");
  cfg.worker_num.reset();
  cfg.hosts[1].slots = 2;
  EXPECT_FALSE(resolve_cluster(&cfg, "/proj", {}, "/proj/train.py", &error));
  EXPECT_NE(error.find("different slots"), std::string::npos);
  // A hostfile path, relative to the configuration's directory.
  const fs::path dir = fs::temp_directory_path() / ("cellscope-launch-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "hosts") << "n1 slots=2\nn2 slots=2\nn3 slots=2\n";
  cfg = {};
  cfg.hostfile = "hosts";
  cli = {};
  cli.node_rank = 2;
  c = resolve_cluster(&cfg, dir, cli, dir / "train.py", &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->worker_num, 6);
  EXPECT_EQ(c->node_rank, 2);
  cfg.hostfile = "missing";
  EXPECT_FALSE(resolve_cluster(&cfg, dir, cli, dir / "train.py", &error));
  EXPECT_EQ(error, "cannot read the hostfile " + (dir / "missing").string());
  fs::remove_all(dir);
}

TEST(Launch, MsrunArguments) {
  cellscope::server::ResolvedCluster c;
  c.worker_num = 4;
  c.local_worker_num = 2;
  c.master_addr = "10.0.0.1";
  c.master_port = 8118;
  c.log_dir = "/p/logs";
  c.cluster_time_out = 60;
  EXPECT_EQ(msrun_arguments(c, 1, 2, "/p/train.py", {"--lr", "0.1"}),
            (std::vector<std::string>{"--worker_num", "4", "--local_worker_num", "2",
                                      "--master_addr", "10.0.0.1", "--master_port", "8118",
                                      "--node_rank", "1", "--log_dir", "/p/logs", "--join=True",
                                      "--cluster_time_out", "60", "/p/train.py", "--lr", "0.1"}));
  EXPECT_EQ(shell_quote("/p/a-b_c.py"), "/p/a-b_c.py");
  EXPECT_EQ(shell_quote("it's here"), "'it'\\''s here'");
  EXPECT_EQ(shell_quote(""), "''");
}
