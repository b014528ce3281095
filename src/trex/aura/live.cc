// The live evaluator (see live.h).
#include "trex/aura/live.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "trex/util/error.h"

namespace trex::aura {

const char* to_string(Timing t) {
  switch (t) {
    case Timing::kMinimum: return "min";
    case Timing::kMedian: return "median";
    case Timing::kAuto: return "auto";
  }
  return "?";
}

Timing parse_timing(const std::string& text, const std::string& field) {
  if (text == "median") return Timing::kMedian;
  if (text == "min") return Timing::kMinimum;
  if (text == "auto") return Timing::kAuto;
  throw InputError::field(field, "'" + text + "' is not a timing statistic (min, median or auto)");
}

LiveEvaluator::LiveEvaluator(const TuneTarget& target, core::ThreadPool* pool, double min_seconds, Timing timing)
    : target_(target), pool_(pool), min_seconds_(min_seconds), timing_(timing) {
  std::vector<kernels::KernelCase> cases = kernels::make_cases_at(target.kernel, target.dims, 1, pool);
  bool found = false;
  for (kernels::KernelCase& c : cases)
    if (c.dtype == target.dtype) {
      timed_ = std::move(c);
      found = true;
      break;
    }
  if (!found) throw InputError::field("--dtype", target.kernel + " has no " + target.dtype + " case");
  // The reference once, with no tuning in effect (the reference does not read it anyway).
  timed_.ref();
  for (const kernels::SuiteBuffer& b : timed_.ref_outputs)
    ref_.emplace_back(static_cast<const char*>(b.data), static_cast<const char*>(b.data) + b.bytes());
  timed_.ref = [this] {
    for (size_t i = 0; i < ref_.size(); ++i) std::memcpy(timed_.ref_outputs[i].data, ref_[i].data(), ref_[i].size());
  };
}

Measurement LiveEvaluator::operator()(const Config& c) {
  ++count_;
  std::shared_ptr<const kernels::Tuning> before = kernels::active_tuning();
  auto t = std::make_shared<kernels::Tuning>();
  t->set(target_.kernel, "*", c);
  t->set(target_.kernel, target_.shape_class, c);
  kernels::set_active_tuning(t);
  Measurement m;
  try {
    for (const auto& [name, v] : c) kernels::check_param(target_.kernel, name, v);
    for (kernels::KernelCase& kc : kernels::make_cases(target_.kernel, kernels::SuiteSize::kCheck,
                                                       uint32_t(count_ % 7 + 1), pool_)) {
      kernels::CheckResult r = kernels::check_case(kc);
      if (!r.passed) {
        m.message = "gate: " + kc.dtype + " " + kc.shape + ": " + r.message;
        kernels::set_active_tuning(before);
        return m;
      }
    }
    kernels::CheckResult r = kernels::check_case(timed_);
    if (!r.passed) {
      m.message = "gate: " + timed_.dtype + " " + timed_.shape + ": " + r.message;
      kernels::set_active_tuning(before);
      return m;
    }
    const bool cpu = pool_ != nullptr && pool_->num_threads() == 1;
    const Timing timing = timing_ != Timing::kAuto ? timing_ : cpu ? Timing::kMinimum : Timing::kMedian;
    kernels::CaseTiming tm =
        kernels::time_call(timed_.fused, min_seconds_, 5, 200, true,
                           cpu ? kernels::TimeClock::kThreadCpu : kernels::TimeClock::kWall,
                           timing == Timing::kMinimum ? kernels::TimeStat::kFastest : kernels::TimeStat::kMedian);
    m.passed = true;
    m.seconds = tm.seconds;
    m.message = std::string(timing == Timing::kMinimum ? "fastest" : "median") + " of " + std::to_string(tm.runs) +
                " calls, " + (cpu ? "thread CPU time" : "wall time");
  } catch (const InputError& e) {
    m.passed = false;
    m.message = std::string("illegal: ") + e.what();
  }
  kernels::set_active_tuning(before);
  return m;
}

}  // namespace trex::aura
