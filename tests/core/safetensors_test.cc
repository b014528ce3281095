// safetensors: round trips (in-memory and streamed tensors, every dtype, metadata, empty
// tensors), cross-checks with PyTorch in both directions, one-line errors for corrupt files, and
// atomic writes (a failed write leaves neither the file nor a temporary).
//
// The Python side: /usr/bin/python3 with torch (Debian's python3-torch). The `safetensors`
// package is not installed here, so the scripts below write and read the format by hand (json +
// struct + torch tensors' raw bytes); where `safetensors` is importable the reading script uses
// safetensors.torch.load_file instead and the test prints which one ran.
#include "trex/core/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trex/core/bf16.h"
#include "trex/util/error.h"
#include "trex/util/io_error.h"
#include "trex/util/subprocess.h"

namespace trex::core {
namespace {

namespace fs = std::filesystem;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trex_st_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The message of the InputError that reading `path` throws ("" when none).
std::string read_error(const std::string& path) {
  try {
    SafetensorsFile f(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

template <class T>
std::vector<T> as(const SafetensorsFile& f, const std::string& name) {
  auto b = f.bytes(f.get(name));
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

TEST_F(SafetensorsTest, RoundTripEveryDtypeAndMetadata) {
  std::vector<float> f32 = {1.5f, -2.f, 0.f, 3.25f, 1e-30f, -7.f};
  std::vector<bf16> b16 = {to_bf16(1.f), to_bf16(-0.5f), to_bf16(3e38f)};
  std::vector<int32_t> i32 = {-1, 2, 2147483647};
  std::vector<int64_t> i64 = {int64_t(1) << 40, -3};
  std::vector<double> f64 = {0.1};
  std::vector<uint8_t> u8 = {0, 255, 7};
  std::string path = file("a.safetensors");
  write_safetensors(path,
                    {{"w.f32", StDtype::kF32, {2, 3}, f32.data(), {}},
                     {"w.bf16", StDtype::kBF16, {3}, b16.data(), {}},
                     {"i32", StDtype::kI32, {3, 1}, i32.data(), {}},
                     {"i64", StDtype::kI64, {2}, i64.data(), {}},
                     {"f64", StDtype::kF64, {}, f64.data(), {}},
                     {"u8", StDtype::kU8, {3}, u8.data(), {}},
                     {"none", StDtype::kF32, {0, 5}, nullptr, {}}},
                    {{"step", "12"}, {"format", "test"}});
  SafetensorsFile f(path);
  EXPECT_EQ(f.tensors().size(), 7u);
  EXPECT_EQ(f.metadata().at("step"), "12");
  EXPECT_EQ(f.metadata().at("format"), "test");
  EXPECT_EQ(f.get("w.f32").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.get("f64").shape, std::vector<int64_t>{});
  EXPECT_EQ(f.get("none").numel(), 0);
  EXPECT_EQ(as<float>(f, "w.f32"), f32);
  auto b = as<uint16_t>(f, "w.bf16");
  for (size_t i = 0; i < b16.size(); ++i) EXPECT_EQ(b[i], b16[i].bits);
  EXPECT_EQ(as<int32_t>(f, "i32"), i32);
  EXPECT_EQ(as<int64_t>(f, "i64"), i64);
  EXPECT_EQ(as<double>(f, "f64"), f64);
  EXPECT_EQ(as<uint8_t>(f, "u8"), u8);
  // The header is padded so the data buffer starts on an 8-byte boundary.
  std::string raw = slurp(path);
  uint64_t n;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(raw[8], '{');
}

// A tensor produced in pieces (larger than the writer's 4 MiB piece) reads back whole.
TEST_F(SafetensorsTest, StreamedTensorRoundTrips) {
  const int64_t n = (int64_t(5) << 20) / 4 + 3;  // 5 MiB + 12 bytes of F32
  std::string path = file("s.safetensors");
  std::vector<std::pair<uint64_t, uint64_t>> asked;
  auto fill = [&](uint64_t off, uint64_t size, std::byte* dst) {
    asked.emplace_back(off, size);
    for (uint64_t k = 0; k < size; k += 4) {
      float x = float((off + k) / 4) * 0.5f;
      std::memcpy(dst + k, &x, 4);
    }
  };
  write_safetensors(path, {{"big", StDtype::kF32, {n}, nullptr, fill}});
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[1].first, asked[0].second);
  SafetensorsFile f(path);
  auto v = as<float>(f, "big");
  ASSERT_EQ(int64_t(v.size()), n);
  for (int64_t i = 0; i < n; i += 9973) EXPECT_EQ(v[size_t(i)], float(i) * 0.5f);
  EXPECT_EQ(v.back(), float(n - 1) * 0.5f);
}

TEST_F(SafetensorsTest, CorruptFilesGiveOneLineErrors) {
  std::vector<float> x = {1, 2, 3, 4};
  std::string good = file("good.safetensors");
  write_safetensors(good, {{"x", StDtype::kF32, {4}, x.data(), {}}}, {{"k", "v"}});
  std::string raw = slurp(good);
  uint64_t hlen;
  std::memcpy(&hlen, raw.data(), 8);
  std::string header = raw.substr(8, hlen);
  auto with_header = [&](const std::string& h, const std::string& data) {
    std::string out(8, '\0');
    uint64_t n = h.size();
    std::memcpy(out.data(), &n, 8);
    return out + h + data;
  };
  std::string data = raw.substr(8 + hlen);
  struct Case {
    std::string name, bytes, expect;
  };
  std::vector<Case> cases = {
      {"empty", "", "shorter than the 8-byte header length"},
      {"cut_in_data", raw.substr(0, raw.size() - 3), "truncated"},
      {"cut_in_header", raw.substr(0, 8 + hlen / 2), "truncated: header length"},
      {"huge_length", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}", "100 MB"},
      {"not_json", with_header("{\"x\": [", data), "not a JSON object"},
      {"foreign", "PK\x03\x04 this is a zip file, not safetensors at all", "not a safetensors"},
      {"bad_dtype", with_header(R"({"x":{"dtype":"F12","shape":[4],"data_offsets":[0,16]}})", data),
       "unsupported dtype"},
      {"bad_shape", with_header(R"({"x":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", data),
       "is not a list of sizes"},
      {"size_mismatch",
       with_header(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data),
       "do not match shape [3] of F32 (12 bytes)"},
      {"hole", with_header(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[4,16]}})", data),
       "leave a hole"},
      {"trailing", with_header(header, data + "junk"), "bytes after the last tensor"},
      {"meta_not_string",
       with_header(R"({"__metadata__":{"a":1},"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
                   data),
       "is not a string"},
      {"missing_field", with_header(R"({"x":{"dtype":"F32","shape":[4]}})", data),
       "needs dtype, shape and data_offsets"},
  };
  for (const Case& c : cases) {
    std::string path = file(c.name + ".safetensors");
    spit(path, c.bytes);
    std::string err = read_error(path);
    EXPECT_NE(err.find(path), std::string::npos) << c.name << ": " << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.name << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << c.name << ": " << err;
  }
  EXPECT_NE(read_error(file("absent.safetensors")).find("cannot open"), std::string::npos);
  SafetensorsFile f(good);
  EXPECT_THROW(f.get("y"), InputError);
}

TEST_F(SafetensorsTest, FailedWritesLeaveNothing) {
  std::vector<float> x = {1, 2};
  // The system refusing the write (here: no such directory) is an IoError, exit 1 at the command
  // line; a bad tensor list is the caller's input, an InputError.
  EXPECT_THROW(write_safetensors(file("no/such/dir/a.safetensors"),
                                 {{"x", StDtype::kF32, {2}, x.data(), {}}}),
               IoError);
  EXPECT_THROW(write_safetensors(file("dup.safetensors"), {{"x", StDtype::kF32, {2}, x.data(), {}},
                                                           {"x", StDtype::kF32, {2}, x.data(), {}}}),
               InputError);
  // A source that fails half way: the old file stays as it was, and no temporary is left.
  std::string path = file("keep.safetensors");
  write_safetensors(path, {{"x", StDtype::kF32, {2}, x.data(), {}}});
  std::string before = slurp(path);
  auto failing = [](uint64_t, uint64_t, std::byte*) { throw InputError("source broke"); };
  EXPECT_THROW(write_safetensors(path, {{"x", StDtype::kF32, {2}, x.data(), {}},
                                        {"y", StDtype::kF32, {8}, nullptr, failing}}),
               InputError);
  EXPECT_EQ(slurp(path), before);
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir_)) entries += e.is_regular_file();
  EXPECT_EQ(entries, 1);
}

// ---- PyTorch cross-checks ---------------------------------------------------------------------

ProcessOptions python_options() {
  ProcessOptions o;
  o.timeout_s = 120;
  return o;
}

bool have_torch() {
  if (!program_available("/usr/bin/python3")) return false;
  return run_process({"/usr/bin/python3", "-c", "import torch"}).exit_code == 0;
}

// Values whose fp32 -> bf16 rounding exercises ties to even, a denormal, a large value, NaN.
const double kBf16Values[] = {1.00390625, 1.01171875, 1.0 / 3.0, -2.5e-3, 3.0e38, 1e-40, -0.0,
                              65504.0};

const char kTorchWriter[] = R"PY(
import json, struct, sys, torch
vals = [float(v) for v in sys.argv[2].split(",")]
tensors = {
    "f32": torch.arange(12, dtype=torch.float32).reshape(3, 4) * 0.25 - 1.0,
    "bf16": torch.tensor(vals, dtype=torch.float32).to(torch.bfloat16),
    "i32": torch.arange(5, dtype=torch.int32) * -7 + 3,
    "i64": torch.tensor([[2**40 + 1, -5]], dtype=torch.int64),
    "empty": torch.zeros((0, 3), dtype=torch.float32),
}
names = {torch.float32: "F32", torch.bfloat16: "BF16", torch.int32: "I32", torch.int64: "I64"}
header = {"__metadata__": {"writer": "torch " + torch.__version__}}
blobs, at = [], 0
for k, t in tensors.items():
    raw = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
    b = raw.contiguous().numpy().tobytes()
    header[k] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [at, at + len(b)]}
    blobs.append(b)
    at += len(b)
h = json.dumps(header).encode()
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)))
    f.write(h)
    for b in blobs:
        f.write(b)
)PY";

TEST_F(SafetensorsTest, ReadsFileWrittenByTorch) {
  if (!have_torch()) GTEST_SKIP() << "/usr/bin/python3 with torch not available";
  std::string vals;  // every digit, so Python parses the same doubles
  for (double v : kBf16Values) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    vals += (vals.empty() ? "" : ",") + std::string(buf);
  }
  std::string path = file("torch.safetensors");
  ProcessResult r = run_process({"/usr/bin/python3", "-c", kTorchWriter, path, vals},
                                python_options());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  SafetensorsFile f(path);
  EXPECT_EQ(f.metadata().at("writer").rfind("torch ", 0), 0u);
  auto f32 = as<float>(f, "f32");
  ASSERT_EQ(f32.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(f32[size_t(i)], float(i) * 0.25f - 1.f);
  EXPECT_EQ(f.get("f32").shape, (std::vector<int64_t>{3, 4}));
  // torch's fp32 -> bf16 rounding and core::to_bf16 agree bit for bit.
  auto b = as<uint16_t>(f, "bf16");
  ASSERT_EQ(b.size(), std::size(kBf16Values));
  for (size_t i = 0; i < b.size(); ++i)
    EXPECT_EQ(b[i], to_bf16(float(kBf16Values[i])).bits) << kBf16Values[i];
  EXPECT_EQ(as<int32_t>(f, "i32"), (std::vector<int32_t>{3, -4, -11, -18, -25}));
  EXPECT_EQ(as<int64_t>(f, "i64"), (std::vector<int64_t>{(int64_t(1) << 40) + 1, -5}));
  EXPECT_EQ(f.get("empty").shape, (std::vector<int64_t>{0, 3}));
}

const char kTorchReader[] = R"PY(
import json, struct, sys, torch
path = sys.argv[1]
try:
    from safetensors.torch import load_file
    tensors, how = load_file(path), "safetensors"
except ImportError:
    how = "hand-written reader"
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = bytearray(blob[8 + n:])
    dt = {"F32": torch.float32, "BF16": torch.bfloat16, "I32": torch.int32, "I64": torch.int64}
    tensors = {}
    for k, e in header.items():
        if k == "__metadata__":
            continue
        b, end = e["data_offsets"]
        tensors[k] = torch.frombuffer(data[b:end], dtype=dt[e["dtype"]]).reshape(e["shape"])
out = {"how": how}
for k, t in tensors.items():
    out[k] = {"shape": list(t.shape), "values": [float(x) for x in t.flatten().float().tolist()]
              if t.is_floating_point() else [int(x) for x in t.flatten().tolist()]}
print(json.dumps(out))
)PY";

TEST_F(SafetensorsTest, TorchReadsFileWeWrote) {
  if (!have_torch()) GTEST_SKIP() << "/usr/bin/python3 with torch not available";
  std::vector<float> f32 = {0.5f, -1.25f, 3.f, 1e-3f, 7.f, -0.f};
  std::vector<bf16> b16;
  for (double v : kBf16Values) b16.push_back(to_bf16(float(v)));
  std::vector<int32_t> i32 = {-2147483647, 0, 42};
  std::vector<int64_t> i64 = {-(int64_t(1) << 50), 9};
  std::string path = file("ours.safetensors");
  write_safetensors(path, {{"f32", StDtype::kF32, {2, 3}, f32.data(), {}},
                           {"bf16", StDtype::kBF16, {int64_t(b16.size())}, b16.data(), {}},
                           {"i32", StDtype::kI32, {3}, i32.data(), {}},
                           {"i64", StDtype::kI64, {1, 2}, i64.data(), {}}},
                    {{"by", "trex"}});
  ProcessResult r = run_process({"/usr/bin/python3", "-c", kTorchReader, path}, python_options());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  std::printf("  torch side read the file with: %s\n", j["how"].get<std::string>().c_str());
  EXPECT_EQ(j["f32"]["shape"], nlohmann::json({2, 3}));
  for (size_t i = 0; i < f32.size(); ++i) EXPECT_EQ(j["f32"]["values"][i].get<float>(), f32[i]);
  for (size_t i = 0; i < b16.size(); ++i)
    EXPECT_EQ(j["bf16"]["values"][i].get<float>(), to_float(b16[i])) << i;
  for (size_t i = 0; i < i32.size(); ++i) EXPECT_EQ(j["i32"]["values"][i].get<int32_t>(), i32[i]);
  EXPECT_EQ(j["i64"]["shape"], nlohmann::json({1, 2}));
  for (size_t i = 0; i < i64.size(); ++i) EXPECT_EQ(j["i64"]["values"][i].get<int64_t>(), i64[i]);
}

}  // namespace
}  // namespace trex::core
