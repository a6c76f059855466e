// `cellscope deploy MODEL.mindir|FILE.py --device NAME` (host) and `cellscope agent` (device):
// docs/deploy.md. A .py is exported first by run_export (the same export as `cellscope export`)
// into a temporary folder; the device comes from mindspore_config.json's `devices`; the agent's
// certificate fingerprint is pinned on first contact in ~/.config/cellscope/known_devices.json
// (written atomically) and a changed one is refused before anything is sent.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/agent.h"
#include "agent/protocol.h"
#include "agent/transfer.h"
#include "commands.h"
#include "files.h"
#include "graphcore/dataset.h"
#include "graphcore/mindir_import.h"
#include "project_config.h"

namespace cellscope::server {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// `--progress json`: one JSON object a line on stdout, flushed (a parent process reads it live).
bool g_json = false;

void emit(const Json& event) {
  if (g_json) std::cout << event.dump() << std::endl;  // NOLINT(performance-avoid-endl)
}

void deploy_error(const std::string& message, const std::string& code = "error") {
  std::cerr << "cellscope deploy: error: " << message << "\n";
  emit({{"phase", "error"}, {"code", code}, {"message", message}});
}

// `--watch`: the agent's telemetry stream, one JSON line a message on stdout, until killed. A link
// that drops is reconnected for `retry_for` seconds after the last message; a refusal (changed
// fingerprint, wrong token) ends it at once.
int watch_device(agent::Client& client, const DeviceConfig& device,
                 std::chrono::seconds retry_for) {
  auto last_message = std::chrono::steady_clock::now();
  auto backoff = std::chrono::milliseconds(500);
  bool announced = false;
  for (;;) {
    try {
      client.stream(std::string(agent::kPathStream), std::chrono::seconds(10),
                    [&](const std::string& text) {
                      const Json j = Json::parse(text, nullptr, false);
                      if (j.is_discarded()) return true;  // not JSON: not ours to relay
                      if (!announced) {
                        std::cerr << "cellscope deploy: watching " << device.name << " ("
                                  << device.address << ")\n";
                        announced = true;
                      }
                      std::cout << j.dump() << std::endl;  // NOLINT(performance-avoid-endl)
                      last_message = std::chrono::steady_clock::now();
                      backoff = std::chrono::milliseconds(500);
                      return static_cast<bool>(std::cout);
                    });
      return kExitOk;  // stdout closed: nobody reads any more
    } catch (const agent::TransportError& e) {
      if (std::chrono::steady_clock::now() - last_message + backoff > retry_for) {
        std::cerr << "cellscope deploy: error: device '" << device.name << "' (" << device.address
                  << ") is unreachable: " << e.what() << " (gave up after " << retry_for.count()
                  << " s)\n";
        return kExitErrors;
      }
      std::cerr << "cellscope deploy: " << e.what() << "; reconnecting\n";
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
      announced = false;
    }
  }
}

fs::path home_dir() {
  const char* h = std::getenv("HOME");
  return h != nullptr ? fs::path(h) : fs::path("/tmp");
}

fs::path expand_home(const std::string& p) {
  if (p.starts_with("~/")) return home_dir() / p.substr(2);
  return p;
}

// The pinned fingerprint of `address`, or "" when it was never contacted.
std::string pinned_fingerprint(const fs::path& file, const std::string& address) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  const Json j = Json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("devices") || !j["devices"].is_object()) {
    throw agent::DeployError(0, "known-devices",
                             file.string() + " is not a known-devices file: fix or remove it");
  }
  const auto it = j["devices"].find(address);
  return it != j["devices"].end() && it->is_object() ? it->value("fingerprint", "") : "";
}

void pin_fingerprint(const fs::path& file, const std::string& address, const std::string& name,
                     const std::string& fingerprint) {
  Json j = {{"devices", Json::object()}};
  if (std::ifstream in(file, std::ios::binary); in) {
    Json old = Json::parse(in, nullptr, false);
    if (old.is_object() && old.contains("devices") && old["devices"].is_object()) j = old;
  }
  j["devices"][address] = {{"name", name}, {"fingerprint", fingerprint}};
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  write_file_atomic(file, j.dump(2) + "\n");
}

}  // namespace

fs::path known_devices_file() {
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x != nullptr && x[0] == '/')
    return fs::path(x) / "cellscope" / "known_devices.json";
  return home_dir() / ".config" / "cellscope" / "known_devices.json";
}

int run_deploy(const DeployCommandOptions& options) {
  g_json = options.progress == "json";
  if (options.precision == "int8" && options.calibration_data.empty() && !options.rollback) {
    deploy_error(
        "--precision int8 needs --calibration-data FILE.npy|FILE.npz (inputs to calibrate on)");
    return kExitUsage;
  }
  if (options.precision == "fp32" &&
      (!options.calibration_data.empty() || !options.labels.empty())) {
    deploy_error("--calibration-data and --labels go with --precision int8 or target");
    return kExitUsage;
  }
  if (!options.labels.empty() && options.calibration_data.empty()) {
    deploy_error("--labels go with --calibration-data (one label per sample)");
    return kExitUsage;
  }
  // The data files are read here with the device's parsers, so a file that is not a .npy / .npz
  // is refused before anything is sent (which array goes to which input is the device's check).
  if (!options.rollback && !options.watch) {
    for (const std::string& f : {options.calibration_data, options.labels}) {
      if (f.empty()) continue;
      const bool npz = fs::path(f).extension() == ".npz";
      if (!npz && fs::path(f).extension() != ".npy") {
        deploy_error(f +
                     ": calibration inputs are a .npy (one input) or a .npz (one array per "
                     "input), labels a .npy");
        return kExitUsage;
      }
      if (npz && f == options.labels) {
        deploy_error(f + ": labels are a .npy of N integers, not a .npz");
        return kExitUsage;
      }
      try {
        std::ifstream in(f, std::ios::binary);
        if (!in) throw std::runtime_error("cannot read " + f);
        const std::string bytes{std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>()};
        if (npz) {
          if (graphcore::runtime::parse_array_npz(bytes, f).empty())
            throw std::runtime_error(f + " holds no arrays");
        } else {
          (void)graphcore::runtime::parse_array_npy(bytes, f);
        }
      } catch (const std::exception& e) {
        deploy_error(e.what());
        return kExitUsage;
      }
    }
  }
  // The device: mindspore_config.json nearest to the model (else the current directory).
  const fs::path model_dir = fs::path(options.model).parent_path();
  ProjectConfig config = load_project_config(model_dir.empty() ? fs::path(".") : model_dir);
  if (config.file.empty()) config = load_project_config(".");
  for (const auto& d : config.diagnostics) {
    if (d.code == "invalid-config") {
      std::cerr << display_path(config.file) << ":" << d.range.start.line + 1
                << ": warning: " << d.message << "\n";
    }
  }
  if (config.devices.empty()) {
    deploy_error("no devices: add \"devices\": [{\"name\", \"address\", \"token_file\"}] to " +
                 (config.file.empty() ? std::string("mindspore_config.json") : config.file));
    return kExitUsage;
  }
  const DeviceConfig* device = nullptr;
  std::string names;
  for (const auto& d : config.devices) {
    names += (names.empty() ? "" : ", ") + d.name;
    if (d.name == options.device || (options.device.empty() && config.devices.size() == 1))
      device = &d;
  }
  if (device == nullptr) {
    deploy_error(options.device.empty()
                     ? "several devices are configured: pick one with --device (" + names + ")"
                     : "no device '" + options.device + "' in " + config.file + " (" + names + ")");
    return kExitUsage;
  }
  std::string token;
  if (!device->token_env.empty()) {
    const char* v = std::getenv(device->token_env.c_str());
    if (v == nullptr) {
      deploy_error("device '" + device->name + "': the environment variable " + device->token_env +
                   " (its token) is not set");
      return kExitUsage;
    }
    token = v;
  } else {
    fs::path tf = expand_home(device->token_file);
    if (tf.is_relative()) tf = fs::path(config.file).parent_path() / tf;
    std::ifstream in(tf, std::ios::binary);
    if (!in || !std::getline(in, token)) {
      deploy_error("device '" + device->name + "': cannot read its token file " + tf.string());
      return kExitUsage;
    }
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  }

  const fs::path known = known_devices_file();
  auto check = [&](const std::string& fp) {
    const std::string pinned = pinned_fingerprint(known, device->address);
    if (pinned.empty()) {
      pin_fingerprint(known, device->address, device->name, fp);
      std::cerr << "cellscope deploy: first contact with " << device->name << " ("
                << device->address << "): pinned its certificate SHA-256 " << fp << " in "
                << known.string() << "\n";
      return;
    }
    if (pinned != fp) {
      throw agent::DeployError(
          0, "fingerprint-changed",
          "the certificate of device '" + device->name + "' (" + device->address +
              ") has changed: pinned SHA-256 " + pinned + ", now " + fp +
              ". Nothing was sent. If the device was reinstalled, remove its entry from " +
              known.string() + "; otherwise someone may be intercepting the connection");
    }
  };
  agent::Client client(device->address, token, check);
  auto progress = [](const std::string& m) {
    std::cerr << "cellscope deploy: " << m << "\n";
    emit({{"phase", "message"}, {"message", m}});
  };

  try {
    if (options.watch) {
      g_json = false;  // stdout carries the telemetry lines only
      return watch_device(client, *device, std::chrono::seconds(options.retry_for));
    }
    emit({{"phase", "connect"}, {"device", device->name}, {"address", device->address}});
    if (options.rollback) {
      const Json r = agent::with_retries(
          [&] {
            auto resp = client.request("POST", std::string(agent::kPathRollback), "{}");
            agent::throw_if_error(resp);
            return resp.body;
          },
          std::chrono::seconds(options.retry_for), progress);
      if (g_json) {
        emit({{"phase", "done"},
              {"rollback", true},
              {"device", device->name},
              {"bundle", r.value("bundle", "")}});
      } else {
        std::cout << "rolled back " << device->name << " to " << r.value("bundle", "") << "\n";
      }
      return kExitOk;
    }

    // The model file: a .mindir as it is, a .py exported first.
    fs::path file = options.model;
    std::string tmpdir;
    struct Cleanup {
      std::string& dir;
      ~Cleanup() {
        std::error_code ec;
        if (!dir.empty()) fs::remove_all(dir, ec);
      }
    } cleanup{tmpdir};
    if (!graphcore::is_mindir_path(file)) {
      if (file.extension() != ".py") {
        deploy_error(file.string() + " is neither a .mindir nor a .py model file");
        return kExitUsage;
      }
      std::string tmpl = (fs::temp_directory_path() / "cellscope-deploy-XXXXXX").string();
      if (::mkdtemp(tmpl.data()) == nullptr) {
        deploy_error("cannot make a temporary directory");
        return kExitErrors;
      }
      tmpdir = tmpl;
      ExportCommandOptions ex = options.export_options;
      ex.model.file = options.model;
      ex.format = "mindir";
      const std::string stem =
          ex.model.cell ? *ex.model.cell : fs::path(options.model).stem().string();
      ex.output = (fs::path(tmpdir) / (stem + ".mindir")).string();
      if (!ex.model.cell && ex.model.entries.empty() && ex.model.inputs.empty() &&
          ex.project == nullptr) {
        deploy_error(
            "to deploy a .py, say what to export: --cell and --input (or inputs in "
            "mindspore_config.json)");
        return kExitUsage;
      }
      emit({{"phase", "export"}, {"file", options.model}});
      const int rc = run_export(ex);
      if (rc != kExitOk) {
        deploy_error("the export failed: nothing was sent");
        return rc;
      }
      file = ex.output;
    }
    if (!fs::is_regular_file(file)) {
      deploy_error("no such model file: " + file.string());
      return kExitUsage;
    }
    agent::UploadOptions up;
    up.name = options.name.empty() ? file.filename().string() : options.name;
    up.chunk_bytes = options.chunk_kib * 1024;
    up.retry_for = std::chrono::seconds(options.retry_for);
    up.chunk_delay = std::chrono::milliseconds(options.chunk_delay_ms);
    if (options.fault_corrupt_chunk >= 0)
      up.corrupt_chunk = static_cast<uint64_t>(options.fault_corrupt_chunk);
    up.progress = progress;
    if (g_json) up.event = [](const Json& e) { emit(e); };
    up.precision = options.precision;
    up.backend = options.backend;
    up.calibration = options.calibration;
    up.percentile = options.percentile;
    up.calibration_data = options.calibration_data;
    up.labels = options.labels;
    const Json r = agent::upload_and_commit(client, file, up);
    const Json& m = r.contains("manifest") ? r["manifest"] : Json::object();
    if (g_json) {
      Json done = {{"phase", "done"},
                   {"device", device->name},
                   {"address", device->address},
                   {"name", up.name},
                   {"bundle", r.value("bundle", "")},
                   {"sha256", m.value("sha256", "")},
                   {"already_current", r.value("already_current", false)}};
      if (m.contains("check")) done["check"] = m["check"];
      if (m.contains("backend")) done["backend"] = m["backend"];
      if (m.contains("backend_reason")) done["backend_reason"] = m["backend_reason"];
      emit(done);
      return kExitOk;
    }
    std::cout << "deployed " << up.name << " to " << device->name << " (" << device->address
              << "): bundle " << r.value("bundle", "") << ", sha256 " << m.value("sha256", "")
              << "\n";
    if (m.contains("check")) std::cout << "check: " << m["check"].dump() << "\n";
    if (m.contains("backend_reason")) {
      std::cout << "served by " << m.value("backend", "cellscope-cpu") << ", not "
                << m.value("requested_backend", "") << ": "
                << m["backend_reason"].get<std::string>() << "\n";
    }
    if (m.contains("quality")) {
      std::cout << m.value("precision", "int8") << " vs fp32: " << m["quality"].dump() << "\n";
    }
    return kExitOk;
  } catch (const agent::DeployError& e) {
    std::string message = e.what();
    // The device names the data by the bundle's file (the same bytes, SHA-256 checked): say
    // the user's file instead.
    if (!options.calibration_data.empty()) {
      for (const std::string device_name : {"calibration.npz", "calibration.npy"}) {
        for (size_t at = message.find(device_name); at != std::string::npos;
             at = message.find(device_name, at + options.calibration_data.size())) {
          message.replace(at, device_name.size(), options.calibration_data);
        }
      }
    }
    deploy_error(message + (e.code().empty() ? std::string() : " [" + e.code() + "]"),
                 e.code().empty() ? "error" : e.code());
    return kExitErrors;
  } catch (const agent::TransportError& e) {
    deploy_error(e.what(), "unreachable");
    return kExitErrors;
  }
}

}  // namespace cellscope::server
