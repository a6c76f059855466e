// Internals shared by the hardware model's sources.
#pragma once

#include <cstdint>

#include "graphcore/hardware.h"

namespace graphcore::hw {

// A core's own HBM/DDR rate (bytes per cycle): the target file's per-core rate, raised to the
// core's share of the chip bandwidth over all AI cores when the per-core figure is lower.
double core_rate(const HardwareTarget& t, double config_rate);
// Bytes per cycle one core reads from (writes to) HBM/DDR when `active_cores` stream at once.
double gm_read_rate(const HardwareTarget& t, uint32_t active_cores);
double gm_write_rate(const HardwareTarget& t, uint32_t active_cores);
// Bytes per cycle of the chip's HBM/DDR bandwidth available to each of `active_cores`.
double chip_rate(const HardwareTarget& t, uint32_t active_cores);
// Cycles of a software pipeline: `fill` before the first tile, `steady` per tile (the slowest
// stage), `drain` after the last.
double pipeline(double tiles, double fill, double steady, double drain);

}  // namespace graphcore::hw
