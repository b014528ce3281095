// Hardware descriptions: one TOML file per device under configs/hw/, the format of
// spec/hardware-and-kernels.md section 1 (documented in docs/hw.md).
//
// Every number carries where it came from (source) and how sure it is (confidence). In the
// file, a table's `source` and `confidence` keys apply to each number in that table, and
// `<field>_source` / `<field>_confidence` override them for one field:
//
//   [peak]
//   source = "NVIDIA H200 datasheet"
//   confidence = "official"
//   flops_bf16 = 989e12
//   flops_fp32 = 67e12
//   flops_fp32_confidence = "third-party"
//
// load_hw_description() checks the whole file: required fields present, numbers positive and
// finite (counts integral, efficiencies in (0, 1]), enumerations spelled right, every number
// with a source and a confidence, and no unknown keys (a misspelt field is an error, not a
// silent default). Any problem is an InputError of one line naming the file, the line when
// known, and the field: "configs/hw/h200.toml:12: peak.flops_bf16: must be a positive number".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trex::core {

enum class Confidence { kMeasured, kOfficial, kThirdParty, kDerived, kUncertain };

// "measured", "official", "third-party", "derived", "uncertain".
const char* to_string(Confidence c);

// A number with its provenance.
struct Quantity {
  double value = 0;
  std::string source;
  Confidence confidence = Confidence::kUncertain;

  bool operator==(const Quantity&) const = default;
};
using OptQuantity = std::optional<Quantity>;

// [device]: what the thing is. For a CPU, cores_matrix = cores_vector = physical cores.
struct HwDevice {
  std::string name;
  std::string kind;  // cpu | npu | gpu
  Quantity clock_hz;
  Quantity cores_matrix;  // units doing matrix math (AI Core AICs, SMs, CPU cores)
  Quantity cores_vector;  // units doing vector math (AIVs, SMs, CPU cores)
  OptQuantity dies;
  OptQuantity sockets;
  OptQuantity threads_per_core;
  std::vector<std::string> simd;  // CPU feature names, e.g. "avx2", "fma", "avx512f"

  bool operator==(const HwDevice&) const = default;
};

// [peak]: dense FLOP/s of the whole device.
struct HwPeak {
  Quantity flops_fp32;
  Quantity flops_bf16;
  OptQuantity flops_fp16;
  OptQuantity flops_fp8;
  OptQuantity flops_int8;  // int8 ops/s
  OptQuantity vector_flops_fp32;
  OptQuantity flops_fp32_one_core;  // one core alone (CPUs: the single-thread peak)

  bool operator==(const HwPeak&) const = default;
};

// [core]: one compute core.
struct HwCore {
  OptQuantity fma_units;
  OptQuantity fma_latency_cycles;
  OptQuantity simd_bytes;
  OptQuantity vector_regs;
  OptQuantity bytes_per_repeat;
  OptQuantity max_repeat;

  bool operator==(const HwCore&) const = default;
};

// [[memory]]: one level of the hierarchy. Bandwidths are bytes/s: of one core for scope core
// and shared levels measured by the probe, of the whole device for scope device.
struct HwMemory {
  std::string name;
  std::string scope;  // core | shared | device
  Quantity size_bytes;
  OptQuantity line_bytes;
  OptQuantity ways;
  OptQuantity align_bytes;
  OptQuantity bw_read;
  OptQuantity bw_write;
  OptQuantity shared_by;  // CPUs (or cores) sharing one instance

  bool operator==(const HwMemory&) const = default;
};

// [[pipe]]: an execution or transfer pipe and its rate per core.
struct HwPipe {
  std::string name;  // cube vec scalar mte1 mte2 mte3 fixpipe | fma load store frontend
  std::string unit;  // e.g. "flop/cycle", "byte/cycle"
  Quantity rate;

  bool operator==(const HwPipe&) const = default;
};

// [[link]]: one level of the interconnect, per device.
struct HwLink {
  std::string level;
  Quantity bw_unidir_bytes_per_s;
  OptQuantity group_size;
  OptQuantity latency_s;
  OptQuantity efficiency;

  bool operator==(const HwLink&) const = default;
};

// [calibration]: the achieved fractions and fixed costs a performance model applies.
struct HwCalibration {
  OptQuantity compute_efficiency;
  OptQuantity memory_efficiency;
  OptQuantity launch_s_matrix;
  OptQuantity launch_s_vector;
  OptQuantity launch_s_comm;

  bool operator==(const HwCalibration&) const = default;
};

// [stream]: STREAM-method bandwidths in bytes/s (CPUs, measured), with the set-up used.
struct HwStream {
  Quantity array_bytes;
  Quantity threads;
  Quantity repetitions;
  OptQuantity copy;
  OptQuantity scale;
  OptQuantity add;
  OptQuantity triad;
  OptQuantity triad_nt;  // triad with non-temporal stores
  OptQuantity read;
  OptQuantity write;

  bool operator==(const HwStream&) const = default;
};

// [[fma_peak]]: measured FMA throughput of one instruction set (CPUs).
struct HwFmaPeak {
  std::string isa;  // "avx2", "avx512", ...
  Quantity accumulators;
  Quantity flops_one_core;
  Quantity flops_all_cores;

  bool operator==(const HwFmaPeak&) const = default;
};

// [system]: a machine built from many devices (CloudMatrix384).
struct HwSystem {
  std::string name;
  Quantity devices;
  OptQuantity nodes;
  OptQuantity devices_per_node;
  OptQuantity host_cpus;
  OptQuantity flops_bf16;
  OptQuantity memory_bytes;

  bool operator==(const HwSystem&) const = default;
};

struct HwDescription {
  HwDevice device;
  HwPeak peak;
  std::optional<HwCore> core;
  std::vector<HwMemory> memory;  // at least one, and one with scope "device" and bw_read
  std::vector<HwPipe> pipes;
  std::vector<HwLink> links;
  std::optional<HwCalibration> calibration;
  std::optional<HwStream> stream;
  std::vector<HwFmaPeak> fma_peaks;
  std::optional<HwSystem> system;

  // The first memory named `name`, or nullptr.
  const HwMemory* find_memory(std::string_view name) const;
  // The first memory of scope "device" (DRAM, HBM); present in every loaded description.
  const HwMemory& device_memory() const;

  bool operator==(const HwDescription&) const = default;
};

// Reads and checks a description. Throws InputError (see above) on any problem, including a
// file that cannot be read or is not valid TOML.
HwDescription load_hw_description(const std::string& path);

// The same from text; `name` stands for the file in error messages.
HwDescription parse_hw_description(std::string_view text, const std::string& name);

// The description as TOML that parse_hw_description() reads back to an equal description.
// `header` (may be empty) is written first, each line as a "# " comment.
std::string to_toml(const HwDescription& d, const std::string& header = "");

}  // namespace trex::core
