// The per-kernel analytical models: a matrix product on the Cube, an elementwise-like kernel on the
// Vector unit. Both tile the problem into the target's buffers with double buffering, derive the
// loop nest and the per-tile instruction sequence, bind each transfer to its DMA channel, and count
// cycles as a software pipeline: fill + tiles x the slowest stage + drain. docs/hardware-model.md.
#include <algorithm>
#include <cmath>
#include <string>

#include "graphcore/hardware.h"
#include "hw/model.h"

namespace graphcore {

namespace hw {

// A core's own HBM/DDR rate. The per-core rates come from test configs whose units are
// undocumented (docs/hardware-model.md); the chip bandwidth is a product figure. A per-core rate
// that would keep all the AI cores together below the chip's bandwidth (310P3: 17 B/cycle x 8
// cores = 145 GB/s < 204 GB/s) contradicts it, and the chip figure wins: every core streams at
// least its share of the chip bandwidth over the AI cores.
double core_rate(const HardwareTarget& t, double config_rate) {
  const double chip = t.gm_bandwidth_gbps * 1e3 / t.frequency_mhz;  // bytes per cycle
  return std::max(config_rate, chip / std::max(1u, t.ai_cores));
}

double gm_read_rate(const HardwareTarget& t, uint32_t active_cores) {
  // Per core: its own MTE2 rate, or its share of the chip's HBM/DDR bandwidth when all active
  // cores stream at once.
  return std::min(core_rate(t, t.gm_read_bytes_per_cycle), chip_rate(t, active_cores));
}

double gm_write_rate(const HardwareTarget& t, uint32_t active_cores) {
  return std::min(core_rate(t, t.gm_write_bytes_per_cycle), chip_rate(t, active_cores));
}

double chip_rate(const HardwareTarget& t, uint32_t active_cores) {
  return t.gm_bandwidth_gbps * 1e3 / t.frequency_mhz / std::max(1u, active_cores);
}

double pipeline(double tiles, double fill, double steady, double drain) {
  if (tiles <= 0) return 0;
  return fill + tiles * steady + drain;
}

}  // namespace hw

namespace {

double ceil_div(double a, double b) { return std::ceil(a / b); }

std::string num(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// The MMAD instruction of one k-step as the schedule names it: the blocks the tiling and loops
// describe (m x k x n), and, when edge blocks are smaller, the average the cycles are counted
// with ("mmad 16x1024x16 (16x922x16 on average: edge blocks are smaller)"; it used to print
// only the average next to "K steps of 1024").
std::string mmad_label(double m, double k, double n, double avg_m, double avg_k, double avg_n) {
  const auto dims = [](double a, double b, double c) {
    return num(a) + "x" + num(b) + "x" + num(c);
  };
  std::string label = "mmad " + dims(m, k, n);
  if (num(avg_m) != num(m) || num(avg_k) != num(k) || num(avg_n) != num(n))
    label += " (" + dims(avg_m, avg_k, avg_n) + " on average: edge blocks are smaller)";
  return label;
}

}  // namespace

KernelEstimate model_cube_kernel(const HardwareTarget& t, const CubeProblem& p) {
  KernelEstimate k;
  KernelDetail d;
  k.unit = Unit::Cube;
  const bool int8 = p.in_bytes == 1;
  const double k0_elems = int8 ? 32 : 16;  // K elements of one fractal ([DtypeMKN])
  const double frac_bytes = 16 * k0_elems * (int8 ? 1 : 2);  // 512 B: one L0A/L0B fractal
  const double acc_frac_bytes = 16 * 16 * 4;  // one L0C fractal of fp32/int32 accumulators
  const double mf = ceil_div(std::max(1.0, p.m), 16);
  const double kf = ceil_div(std::max(1.0, p.k), k0_elems);
  const double nf = ceil_div(std::max(1.0, p.n), 16);
  const double batch = std::max(1.0, p.batch);
  k.macs = batch * p.m * p.k * p.n;

  // L0 tile (in fractals): the largest m0 x n0 output tile whose fp32 accumulators fit half of L0C
  // (double buffered), then the deepest k0 whose A (m0 x k0) and B (k0 x n0) fractals fit half of
  // L0A and L0B.
  const double l0c_fracs = std::floor(static_cast<double>(t.l0c_bytes) / 2 / acc_frac_bytes);
  const double l0a_fracs = std::floor(static_cast<double>(t.l0a_bytes) / 2 / frac_bytes);
  const double l0b_fracs = std::floor(static_cast<double>(t.l0b_bytes) / 2 / frac_bytes);
  double m0 = 1, n0 = 1;
  double best = 0;
  for (double mc = 1; mc <= std::min(mf, l0c_fracs); mc *= 2) {
    for (double nc = 1; nc <= std::min(nf, l0c_fracs); nc *= 2) {
      if (mc * nc > l0c_fracs || mc > l0a_fracs || nc > l0b_fracs) continue;
      // Prefer the largest tile, then the squarest (fewest operand reloads).
      const double score = mc * nc * 4 - std::abs(std::log2(mc) - std::log2(nc));
      if (score > best) best = score, m0 = mc, n0 = nc;
    }
  }
  m0 = std::min(m0, mf);
  n0 = std::min(n0, nf);
  // Multi-core first: shrink the tile (the larger side) until every core gets an output tile.
  while (std::max(1.0, p.batch) * ceil_div(mf, m0) * ceil_div(nf, n0) < t.ai_cores &&
         (m0 > 1 || n0 > 1)) {
    (m0 >= n0 ? m0 : n0) = std::ceil((m0 >= n0 ? m0 : n0) / 2);
  }
  double k0 = std::max(1.0, std::min({kf, std::floor(l0a_fracs / m0), std::floor(l0b_fracs / n0)}));
  // L1 tile: A and B panels of k1 = a multiple of k0, double buffered.
  const double l1_fracs = std::floor(static_cast<double>(t.l1_bytes) / 2 / frac_bytes);
  double k1 = std::floor(l1_fracs / (m0 + n0) / k0) * k0;
  k1 = std::max(k0, std::min(k1, std::ceil(kf / k0) * k0));

  const double m_tiles = ceil_div(mf, m0), n_tiles = ceil_div(nf, n0);
  const double out_tiles_mn = batch * m_tiles * n_tiles;
  const uint32_t cores = t.ai_cores;
  // Split K across cores when there are fewer output tiles than cores and K is deep (weight
  // gradients: a small M x N, K = batch x spatial); partial sums are atomically added in GM.
  const double k_split =
      out_tiles_mn >= cores
          ? 1
          : std::max(1.0, std::min(std::floor(cores / out_tiles_mn), std::floor(kf / (4 * k0))));
  const double out_tiles = out_tiles_mn * k_split;
  const double k_steps = ceil_div(kf / k_split, k0);
  k.block_dim = static_cast<uint32_t>(std::min<double>(cores, out_tiles));
  const double tiles_per_core = ceil_div(out_tiles, k.block_dim);
  k.tiles = static_cast<uint64_t>(tiles_per_core);
  // Average tile extents (edge tiles are smaller).
  const double am = mf / m_tiles, an = nf / n_tiles, ak = kf / k_split / k_steps;

  // Per k-step stages.
  // One 16x16xK0 fractal product per cycle (4096 MAC fp16), plus the fixed cost of issuing the
  // MMAD instruction: the cube pipeline fills and drains around each instruction (its
  // accumulation into the same L0C tile waits for the previous one) and the scalar unit's
  // wait_flag/set_flag handshake with MTE1 on the double-buffered L0A/L0B.
  const double mmad_macs = am * ak * an;
  const double mmad = mmad_macs + t.mmad_issue_cycles;
  const double mte1 = am * ak * frac_bytes / t.l1_to_l0a_bytes_per_cycle +
                      ak * an * frac_bytes / t.l1_to_l0b_bytes_per_cycle;
  // GM -> L1 (MTE2): each output tile streams its A row panel and B column panel. First touches
  // come from HBM/DDR; re-reads of a panel already streamed (A for the next N tile, B for the next
  // M tile) hit L2 when the operand fits there.
  const double a_unique = p.a_gm_bytes > 0 ? p.a_gm_bytes : batch * mf * kf * frac_bytes;
  const double b_unique = p.b_gm_bytes > 0 ? p.b_gm_bytes : batch * kf * nf * frac_bytes;
  const double a_stream = batch * mf * kf * frac_bytes * n_tiles;
  const double b_stream = batch * kf * nf * frac_bytes * m_tiles;
  const double stream = std::max(a_stream + b_stream, a_unique + b_unique);
  const double hbm_bytes = a_unique * (1 - p.a_l2_fraction) + b_unique;
  const double l2_bytes = stream - hbm_bytes;
  const double rd_rate = hw::gm_read_rate(t, k.block_dim);
  const double mte2_total = hbm_bytes / k.block_dim / rd_rate +
                            std::max(0.0, l2_bytes) / k.block_dim / t.l2_read_bytes_per_cycle;
  const double mte2 = mte2_total / (tiles_per_core * k_steps);
  // Output: coupled cores move L0C -> UB (vector epilogue: fused bias/BN/activation, cast) -> GM
  // (MTE3); separated cores write L0C -> GM through FixPipe (which applies the epilogue).
  const double out_elems_tile = am * an * 256;
  const double out_bytes_total =
      (p.c_gm_bytes > 0 ? p.c_gm_bytes : batch * p.m * p.n * p.out_bytes) *
      (k_split > 1 ? k_split * 4.0 / std::max<uint32_t>(1, p.out_bytes) : 1);  // fp32 partials
  const double wr_rate = hw::gm_write_rate(t, k.block_dim);
  const double store = out_bytes_total / out_tiles / wr_rate;
  // A fused residual Add: the epilogue loads the shortcut's tile (MTE2, GM/L2 -> UB) and adds it.
  const double res_hbm = p.residual_gm_bytes * (1 - p.residual_l2_fraction);
  const double res_l2 = p.residual_gm_bytes - res_hbm;
  const double res_load =
      (res_hbm / rd_rate + res_l2 / t.l2_read_bytes_per_cycle) / std::max(1.0, out_tiles);
  double out_stage = std::max(store, res_load);
  double l0c_ub = 0, vec = 0;
  if (!t.separated) {
    l0c_ub = out_elems_tile * 4 / t.l0c_to_ub_bytes_per_cycle;
    vec = out_elems_tile * (1 + p.epilogue_ops) / (t.vector_bytes_per_cycle / 4);
    out_stage = std::max({l0c_ub, vec, store, res_load});
  }
  // HBM/DDR reads and writes of one output tile share the chip's bandwidth.
  const double gm_shared = (hbm_bytes + res_hbm + out_bytes_total) / k.block_dim / tiles_per_core /
                           hw::chip_rate(t, k.block_dim);
  const double k_loop = std::max(k_steps * std::max({mmad, mte1, mte2}), gm_shared);
  const double fill = mte2 + mte1;  // the first k-step's loads cannot overlap
  const double steady = std::max(k_loop, out_stage);
  k.cycles = hw::pipeline(tiles_per_core, fill, steady, out_stage);
  k.compute_cycles = tiles_per_core * (k_steps * mmad + vec);
  k.movement_cycles = tiles_per_core * std::max({k_steps * mte1, k_steps * mte2 + res_load,
                                                 gm_shared, t.separated ? store : l0c_ub + store});
  k.gm_read_bytes = stream + p.residual_gm_bytes;
  k.gm_write_bytes = out_bytes_total;
  k.bound = k_steps * mmad + vec >= std::max({k_steps * std::max(mte1, mte2), gm_shared, out_stage})
                ? "compute"
                : "memory";

  const std::string dt = int8 ? "int8" : "fp16";
  d.tiling = {
      {"L1",
       "A " + num(m0 * 16) + "x" + num(k1 * k0_elems) + " + B " + num(k1 * k0_elems) + "x" +
           num(n0 * 16) + " " + dt,
       static_cast<uint64_t>((m0 + n0) * k1 * frac_bytes), 2, t.l1_bytes},
      {"L0A",
       "A " + num(m0 * 16) + "x" + num(k0 * k0_elems) + " " + dt + " (" + num(m0 * k0) +
           " fractals, FRACTAL_ZZ)",
       static_cast<uint64_t>(m0 * k0 * frac_bytes), 2, t.l0a_bytes},
      {"L0B",
       "B " + num(k0 * k0_elems) + "x" + num(n0 * 16) + " " + dt + " (" + num(k0 * n0) +
           " fractals, FRACTAL_ZN)",
       static_cast<uint64_t>(k0 * n0 * frac_bytes), 2, t.l0b_bytes},
      {"L0C", "C " + num(m0 * 16) + "x" + num(n0 * 16) + " fp32 (FRACTAL_NZ)",
       static_cast<uint64_t>(m0 * n0 * acc_frac_bytes), 2, t.l0c_bytes},
  };
  if (!t.separated) {
    const double ub_tile = std::min(static_cast<double>(t.ub_bytes) / 2, m0 * n0 * acc_frac_bytes);
    d.tiling.push_back({"UB", "C tile epilogue (fp32 -> " + dt + ")",
                        static_cast<uint64_t>(ub_tile), 2, t.ub_bytes});
  }
  d.loops = {
      {"b", static_cast<uint64_t>(batch), "independent products"},
      {"mo", static_cast<uint64_t>(m_tiles), "M blocks of " + num(m0 * 16) + " rows"},
      {"no", static_cast<uint64_t>(n_tiles), "N blocks of " + num(n0 * 16) + " columns"},
      {"ks", static_cast<uint64_t>(k_split),
       "K split across cores (partial sums atomically added in GM)"},
      {"ko", static_cast<uint64_t>(k_steps),
       "K steps of " + num(k0 * k0_elems) + " (accumulate in L0C)"},
      {"core", k.block_dim,
       "b x mo x no x ks tiles split across cores: " + num(tiles_per_core) + " per core"},
  };
  const double per_core_in = stream / k.block_dim;
  d.dma = {
      {"MTE2", "GM", "L1", per_core_in},
      {"MTE1", "L1", "L0A", tiles_per_core * k_steps * am * ak * frac_bytes},
      {"MTE1", "L1", "L0B", tiles_per_core * k_steps * ak * an * frac_bytes},
  };
  if (p.residual_gm_bytes > 0) {
    d.dma.push_back({"MTE2", "GM", "UB", p.residual_gm_bytes / k.block_dim});
  }
  if (t.separated) {
    d.dma.push_back({"FixPipe", "L0C", "GM", out_bytes_total / k.block_dim});
  } else {
    d.dma.push_back({"MTE1", "L0C", "UB", tiles_per_core * out_elems_tile * 4});
    d.dma.push_back({"MTE3", "UB", "GM", out_bytes_total / k.block_dim});
  }
  const auto ks = static_cast<uint64_t>(k_steps);
  d.schedule = {
      {"load A,B panels GM->L1", "MTE2", ks, k_steps * mte2},
      {"load3d/load2d A L1->L0A", "MTE1", ks,
       k_steps * am * ak * frac_bytes / t.l1_to_l0a_bytes_per_cycle},
      {"load2d B L1->L0B", "MTE1", ks,
       k_steps * ak * an * frac_bytes / t.l1_to_l0b_bytes_per_cycle},
      {mmad_label(m0 * 16, k0 * k0_elems, n0 * 16, am * 16, ak * k0_elems, an * 16), "Cube", ks,
       k_steps * mmad},
  };
  if (p.residual_gm_bytes > 0) {
    d.schedule.push_back({"load residual tile GM->UB", "MTE2", 1, res_load});
  }
  if (t.separated) {
    d.schedule.push_back({"fixpipe L0C->GM (+epilogue)", "FixPipe", 1, store});
  } else {
    d.schedule.push_back({"move L0C->UB", "MTE1", 1, l0c_ub});
    d.schedule.push_back(
        {"vector epilogue (" + num(1 + p.epilogue_ops) + " ops)", "Vector",
         static_cast<uint64_t>((1 + p.epilogue_ops) *
                               ceil_div(out_elems_tile, t.vector_bytes_per_cycle / 4)),
         vec});
    d.schedule.push_back({"store UB->GM", "MTE3", 1, store});
  }
  k.detail = std::make_shared<const KernelDetail>(std::move(d));
  return k;
}

KernelEstimate model_vector_kernel(const HardwareTarget& t, const VectorProblem& p) {
  KernelEstimate k;
  KernelDetail d;
  k.unit = Unit::Vector;
  const double elems = std::max(0.0, p.elements);
  const double total = p.in_bytes + p.out_bytes;
  if (elems <= 0 || total <= 0) {
    k.block_dim = 1;
    k.bound = "none";
    return k;
  }
  const double eb = std::max<uint32_t>(1, p.elem_bytes);
  // Split across the vector cores in chunks of at least 8 KiB of output (smaller pieces cost more
  // in per-core setup than they save).
  const double chunks = std::max(1.0, std::ceil(elems * eb / 8192));
  k.block_dim = static_cast<uint32_t>(std::min<double>(t.vector_cores, chunks));
  const double per_core_elems = elems / k.block_dim;
  // UB tile: half of UB (double buffered) shared by every input and output stream of the tile,
  // in whole 32-byte blocks.
  const double bytes_per_elem = total / elems;
  const double ub_half = static_cast<double>(t.ub_bytes) / 2;
  double tile_elems = std::floor(ub_half / bytes_per_elem / (32 / eb)) * (32 / eb);
  tile_elems =
      std::max(32 / eb, std::min(tile_elems, std::ceil(per_core_elems / (32 / eb)) * (32 / eb)));
  const double tiles = std::ceil(per_core_elems / tile_elems);
  k.tiles = static_cast<uint64_t>(tiles);
  const double lanes = t.vector_bytes_per_cycle / eb;  // elements per repeat (one cycle)
  const double repeats = std::ceil(tile_elems / lanes);
  // Each instruction issues up to 255 repeats; each issue costs a few scalar cycles.
  const double issues = std::ceil(repeats / 255) * p.ops_per_element;
  const double vec = repeats * p.ops_per_element + issues * 8;
  const double in_tile = p.in_bytes / elems * tile_elems;
  const double out_tile = p.out_bytes / elems * tile_elems;
  const double in_rate = hw::gm_read_rate(t, k.block_dim);
  const double l2_in = in_tile * p.l2_fraction;
  const double mte2 = (in_tile - l2_in) / in_rate + l2_in / t.l2_read_bytes_per_cycle;
  const double mte3 = out_tile / hw::gm_write_rate(t, k.block_dim);
  // Reads (MTE2) and writes (MTE3) run in parallel but share the chip's HBM/DDR bandwidth.
  const double gm_shared = (in_tile - l2_in + out_tile) / hw::chip_rate(t, k.block_dim);
  k.cycles = hw::pipeline(tiles, mte2, std::max({mte2, vec, mte3, gm_shared}), mte3 + vec);
  k.compute_cycles = tiles * vec;
  k.movement_cycles = tiles * std::max({mte2, mte3, gm_shared});
  k.gm_read_bytes = p.in_bytes;
  k.gm_write_bytes = p.out_bytes;
  k.bound = vec >= std::max(mte2, mte3) ? "compute" : "memory";
  const std::string dt = eb == 2 ? "fp16" : eb == 4 ? "fp32" : eb == 1 ? "int8" : "x" + num(eb);
  d.tiling = {{"UB",
               num(tile_elems) + " elements " + dt + " (in " + num(in_tile) + " B + out " +
                   num(out_tile) + " B)",
               static_cast<uint64_t>(in_tile + out_tile), 2, t.ub_bytes}};
  d.loops = {
      {"core", k.block_dim, num(per_core_elems) + " elements per core"},
      {"tile", static_cast<uint64_t>(tiles), num(tile_elems) + " elements per UB tile"},
      {"repeat", static_cast<uint64_t>(repeats),
       num(lanes) + " lanes x " + num(p.ops_per_element) + " ops, <= 255 repeats per instruction"},
  };
  d.dma = {{"MTE2", "GM", "UB", p.in_bytes / k.block_dim},
           {"MTE3", "UB", "GM", p.out_bytes / k.block_dim}};
  d.schedule = {
      {"load GM->UB", "MTE2", 1, mte2},
      {"vector ops", "Vector", static_cast<uint64_t>(issues), vec},
      {"store UB->GM", "MTE3", 1, mte3},
  };
  k.detail = std::make_shared<const KernelDetail>(std::move(d));
  return k;
}

}  // namespace graphcore
