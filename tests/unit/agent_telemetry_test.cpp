// The agent's power reading (server/agent/telemetry.h) against fake sysfs trees and a fake
// npu-smi: npu-smi's reading first, else RAPL's energy counter, else a hwmon power file
// (microwatts), else "n/a"; never a number from nowhere. The sysfs tests pass no npu-smi ("").
#include <gtest/gtest.h>

#include <unistd.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agent/telemetry.h"

namespace fs = std::filesystem;
using cellscope::agent::find_power_sensor;
using cellscope::agent::parse_npu_smi_power;
using cellscope::agent::PowerSensor;
using cellscope::agent::Telemetry;

namespace {

class AgentPowerSensor : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("cellscope-telemetry-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "class");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const fs::path& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }

  fs::path root_;
};

TEST_F(AgentPowerSensor, NoSensorIsNotApplicable) {
  write("class/hwmon/hwmon0/name", "coretemp\n");
  write("class/hwmon/hwmon0/temp1_input", "45000\n");  // a temperature, not a power
  EXPECT_EQ(find_power_sensor(root_, "").kind, PowerSensor::Kind::None);
  Telemetry t(root_, "");
  const auto j = t.sample();
  EXPECT_EQ(j["power_w"], "n/a");
  EXPECT_FALSE(j.contains("power_source"));
}

TEST_F(AgentPowerSensor, HwmonPowerInputInMicrowatts) {
  write("class/hwmon/hwmon0/name", "coretemp\n");
  write("class/hwmon/hwmon0/temp1_input", "45000\n");
  write("class/hwmon/hwmon2/name", "ina3221\n");
  write("class/hwmon/hwmon2/power2_input", "1250000\n");
  write("class/hwmon/hwmon2/power1_label", "VDD_IN\n");
  write("class/hwmon/hwmon2/power1_input", "4731000\n");
  write("class/hwmon/hwmon2/power10_input", "999000000\n");  // ordered by number: not first
  const PowerSensor s = find_power_sensor(root_, "");
  ASSERT_EQ(s.kind, PowerSensor::Kind::Hwmon);
  EXPECT_EQ(s.file.filename(), "power1_input");
  Telemetry t(root_, "");
  auto j = t.sample();
  EXPECT_DOUBLE_EQ(j["power_w"].get<double>(), 4.731);
  const std::string source = j["power_source"];
  EXPECT_NE(source.find("hwmon2 ina3221 power1_input (VDD_IN)"), std::string::npos) << source;
  // The sensor's reading each second, not a value kept from the start.
  write("class/hwmon/hwmon2/power1_input", "5000000\n");
  j = t.sample();
  EXPECT_DOUBLE_EQ(j["power_w"].get<double>(), 5.0);
  // A sensor that stops answering: "n/a" for that second.
  write("class/hwmon/hwmon2/power1_input", "");
  j = t.sample();
  EXPECT_EQ(j["power_w"], "n/a");
}

TEST_F(AgentPowerSensor, HwmonNumberOrderAndAverageFallback) {
  // hwmon10 sorts after hwmon9 (numbers, not text); an unreadable file is skipped;
  // power*_average is used when a chip has no power*_input.
  write("class/hwmon/hwmon10/power1_input", "7000000\n");
  write("class/hwmon/hwmon9/power1_input", "not a number\n");
  write("class/hwmon/hwmon9/power3_average", "2500000\n");
  const PowerSensor s = find_power_sensor(root_, "");
  ASSERT_EQ(s.kind, PowerSensor::Kind::Hwmon);
  EXPECT_EQ(s.file, root_ / "class/hwmon/hwmon9/power3_average");
  Telemetry t(root_, "");
  EXPECT_DOUBLE_EQ(t.sample()["power_w"].get<double>(), 2.5);
}

TEST_F(AgentPowerSensor, RaplBeforeHwmonAsARate) {
  write("class/powercap/intel-rapl:0/energy_uj", "1000000\n");
  write("class/hwmon/hwmon0/power1_input", "4000000\n");
  ASSERT_EQ(find_power_sensor(root_, "").kind, PowerSensor::Kind::Rapl);
  Telemetry t(root_, "");
  // 3 J more: the power is that energy over the time since the last sample (> 0, finite).
  write("class/powercap/intel-rapl:0/energy_uj", "4000000\n");
  const auto j = t.sample();
  ASSERT_TRUE(j["power_w"].is_number()) << j.dump();
  EXPECT_GT(j["power_w"].get<double>(), 3.0);  // 3 J in well under a second
  EXPECT_NE(j["power_source"].get<std::string>().find("rapl"), std::string::npos);
  // A counter that went backwards (wrapped): no figure that second.
  write("class/powercap/intel-rapl:0/energy_uj", "10\n");
  EXPECT_EQ(t.sample()["power_w"], "n/a");
}

// `npu-smi info -t power -i 0` as Huawei's npu-smi reference shows it (Atlas 200I A2,
// hiascend.com .../re/npu/npusmi_023.html): the card's Power Dissipation is preferred.
constexpr const char* kNpuSmiPower =
    "        NPU ID                         : 0\n"
    "        Chip Count                     : 1\n"
    "\n"
    "        Chip ID                        : 0\n"
    "        NPU Real-time Power(W)         : 9.1\n"
    "        \n"
    "        Power Dissipation(W)           : 16.9\n"
    "        Chip Name                      : MCU\n";

TEST(AgentNpuSmi, ParsesTheDocumentedOutput) {
  std::string field;
  EXPECT_EQ(parse_npu_smi_power(kNpuSmiPower, &field), 16.9);
  EXPECT_EQ(field, "Power Dissipation(W), the whole card");
  // A card without the whole-card field (the per-chip query, npusmi_024.html).
  EXPECT_EQ(parse_npu_smi_power("NPU Real-time Power(W)         : 9.1\n", &field), 9.1);
  EXPECT_EQ(field, "NPU Real-time Power(W)");
  EXPECT_FALSE(parse_npu_smi_power("Power Dissipation(W) : NA\n"));
  EXPECT_FALSE(parse_npu_smi_power("Power Dissipation(W) : -3\n"));
  EXPECT_FALSE(parse_npu_smi_power("Temperature(C) : 45\n"));
  EXPECT_FALSE(parse_npu_smi_power(""));
}

TEST_F(AgentPowerSensor, NpuSmiBeforeRaplEachSecond) {
  write("class/powercap/intel-rapl:0/energy_uj", "1000000\n");
  // A fake npu-smi: checks its arguments, prints the file `reading` (or fails without it).
  const fs::path tool = root_ / "npu-smi";
  write("npu-smi",
        "#!/bin/sh\n"
        "[ \"$*\" = \"info -t power -i 0\" ] || exit 3\n"
        "cat \"" +
            (root_ / "reading").string() + "\" || exit 1\n");
  ASSERT_EQ(::chmod(tool.c_str(), 0755), 0);
  write("reading", kNpuSmiPower);
  const PowerSensor s = find_power_sensor(root_, tool.string());
  ASSERT_EQ(s.kind, PowerSensor::Kind::NpuSmi);
  Telemetry t(root_, tool.string());
  auto j = t.sample();
  EXPECT_DOUBLE_EQ(j["power_w"].get<double>(), 16.9);
  EXPECT_NE(j["power_source"].get<std::string>().find("npu-smi NPU 0 Power Dissipation(W)"),
            std::string::npos)
      << j.dump();
  // Read again each second.
  write("reading", "        Power Dissipation(W)           : 71.25\n");
  EXPECT_DOUBLE_EQ(t.sample()["power_w"].get<double>(), 71.25);
  // npu-smi failing that second: "n/a", not the last value.
  fs::remove(root_ / "reading");
  j = t.sample();
  EXPECT_EQ(j["power_w"], "n/a");
  EXPECT_FALSE(j.contains("power_source"));
}

TEST_F(AgentPowerSensor, NpuSmiThatGivesNoReadingFallsBack) {
  write("class/hwmon/hwmon0/power1_input", "4000000\n");
  const fs::path tool = root_ / "npu-smi";
  write("npu-smi", "#!/bin/sh\necho 'Error: no device'\nexit 0\n");
  ASSERT_EQ(::chmod(tool.c_str(), 0755), 0);
  EXPECT_EQ(find_power_sensor(root_, tool.string()).kind, PowerSensor::Kind::Hwmon);
  // Not installed at all (PATH lookup fails): the same.
  EXPECT_EQ(find_power_sensor(root_, "cellscope-no-such-npu-smi").kind, PowerSensor::Kind::Hwmon);
}

}  // namespace
