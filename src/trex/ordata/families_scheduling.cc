// Families about time on a shop floor, phrased in every industry of the lexicon: parallel
// machines (makespan, MILP), one machine with weighted completion times (big-M disjunctions,
// MILP), the two-machine flow shop (MILP), project crashing (LP), days-off staffing (IP) and
// workforce planning with hiring and layoffs (IP).
#include <algorithm>
#include <cmath>

#include "trex/ordata/families.h"
#include "trex/ordata/family_recipe.h"
#include "trex/ordata/family_util.h"
#include "trex/ordata/lexicon.h"

namespace trex::ordata {

namespace {

using lp::Term;

const Lexicon& lex_of(const BuildContext& ctx) { return lexicons()[size_t(ctx.industry)]; }

std::vector<std::string> orders_of(const Lexicon& lx, int n) {
  std::vector<std::string> v = first(lx.products, n);
  for (std::string& s : v) s += " order";
  return v;
}

void fill_story_head(const Lexicon& lx, Story& s) { s.company = lx.company; }

// ---------------------------------------------------------------------------------------
// Unrelated parallel machines: each order goes to one machine; the last machine to finish
// sets the makespan.
void build_parallel_machines(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const int m = n <= 4 ? 2 : 3;
  Rng& rng = ctx.rng;
  auto jobs = draw_names(orders_of(lx, int(lx.products.size())), n, rng);
  auto mach = draw_names(machine_names(lx, 12), m, rng);
  std::vector<std::vector<double>> p(m, std::vector<double>(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) p[i][j] = d("hours");
  double cap_hours = 0;
  if (ctx.mode == FeasibilityMode::kInfeasible) {
    double least = 0;  // every order needs at least its fastest machine's time
    for (int j = 0; j < n; ++j) {
      double best = p[0][j];
      for (int i = 1; i < m; ++i) best = std::min(best, p[i][j]);
      least += best;
    }
    cap_hours = std::max(2.0, std::floor((least - 1) / m));
    if (cap_hours * m >= least) cap_hours = std::floor((least - 1) / m);
  }
  lp::Model& mod = inst.model;
  mod.objective_name = "makespan";
  std::vector<std::vector<int>> x(m, std::vector<int>(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) x[i][j] = mod.add_var("run[" + key(mach[i]) + "," + key(jobs[j]) + "]", 0, 1, lp::VarType::kBinary, 0);
  const int cmax = mod.add_var("makespan", 0, lp::kInf, lp::VarType::kContinuous, 1);
  for (int j = 0; j < n; ++j) {
    std::vector<Term> t;
    for (int i = 0; i < m; ++i) t.push_back({x[i][j], 1});
    mod.add_eq("place[" + key(jobs[j]) + "]", t, 1);
  }
  for (int i = 0; i < m; ++i) {
    std::vector<Term> t;
    for (int j = 0; j < n; ++j) t.push_back({x[i][j], p[i][j]});
    std::vector<Term> load = t;
    t.push_back({cmax, -1});
    mod.add_le("finish[" + key(mach[i]) + "]", t, 0);
    if (cap_hours > 0) mod.add_le("available[" + key(mach[i]) + "]", load, cap_hours);
  }
  inst.shape = {1, 0, m * n, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  fill_story_head(lx, s);
  s.setting = draw_wording(rng, {
      lx.company + " has to run the " + join_and(jobs) + " on its " + lx.machine + "s (" + join_and(mach) +
          "). The " + lx.machine + "s differ, so an order takes a different time on each.",
      "The " + join_and(jobs) + " are waiting at " + lx.company + ", and any of the " + join_and(mach) +
          " can take each of them, though not equally fast.",
      "At " + lx.company + ", the " + lx.machine + "s " + join_and(mach) + " share the work of the " + join_and(jobs) +
          "; each " + lx.machine + " has its own speed for every order."});
  s.decision = draw_wording(rng, {"which " + lx.machine + " runs each order",
                                  "an assignment of every order to one of the " + lx.machine + "s",
                                  "on which " + lx.machine + " each order is processed"});
  Table t = table(draw_wording(rng, {"Processing time of each order on each " + lx.machine + ", in hours",
                                     "Hours an order needs on each " + lx.machine,
                                     "Run times in hours, by order and " + lx.machine}),
                  "Order", mach, jobs);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) t.cells[j][i] = num(p[i][j]);
  s.tables.push_back(t);
  if (cap_hours > 0)
    s.facts.push_back(draw_wording(rng, {"Each " + lx.machine + " is available for at most " + num(cap_hours) + " hours.",
                                         "No " + lx.machine + " can work more than " + num(cap_hours) + " hours in total."}));
  s.rules.push_back(draw_wording(rng, {"Each order runs on exactly one " + lx.machine + ", from start to end.",
                                       "An order goes to a single " + lx.machine + " and stays there until it is done.",
                                       "Every order is given to one " + lx.machine + " only."}));
  s.rules.push_back(draw_wording(rng, {
      "A " + lx.machine + " works through its orders one after another, so it finishes after the sum of their times.",
      "A " + lx.machine + " handles one order at a time: its finishing time is the total of the hours of its orders.",
      "The orders on one " + lx.machine + " run back to back; that " + lx.machine + " is busy for the sum of their hours."}));
  if (cap_hours > 0) s.rules.push_back("No " + lx.machine + " may be loaded beyond its available hours.");
  s.objective = draw_wording(rng, {"minimize the makespan: the time, in hours, at which the last " + lx.machine + " finishes",
                                   "finish all orders as early as possible, that is minimize the hours until the busiest " +
                                       lx.machine + " is done",
                                   "minimize the completion time of the whole batch, in hours (the makespan)"});
  s.integrality = draw_wording(rng, {"An order cannot be split between " + lx.machine + "s.",
                                     "Orders are not divisible: each one is run in full on its " + lx.machine + "."});
}

// ---------------------------------------------------------------------------------------
// One machine, weighted completion times, with sequencing disjunctions (big-M, M the total
// processing time). Infeasible: two orders whose deadlines cannot both be met.
void build_single_machine(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;
  Rng& rng = ctx.rng;
  auto jobs = draw_names(orders_of(lx, int(lx.products.size())), n, rng);
  const std::string mach = draw_names(machine_names(lx, 12), 1, rng)[0];
  std::vector<double> p(n), w(n);
  for (int j = 0; j < n; ++j) p[j] = d("hours");
  for (int j = 0; j < n; ++j) w[j] = d("weight");
  double big = 0;
  for (double v : p) big += v;
  std::vector<double> due(n, 0);
  if (ctx.mode == FeasibilityMode::kInfeasible) due[0] = due[1] = p[0] + p[1] - 1;

  lp::Model& mod = inst.model;
  mod.objective_name = "weighted_completion";
  std::vector<int> c(n);
  for (int j = 0; j < n; ++j)
    c[j] = mod.add_var("done[" + key(jobs[j]) + "]", p[j], due[j] > 0 ? due[j] : lp::kInf, lp::VarType::kContinuous, w[j]);
  inst.implied_numbers.push_back(big);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      int y = mod.add_var("first[" + key(jobs[i]) + "," + key(jobs[j]) + "]", 0, 1, lp::VarType::kBinary, 0);
      // y = 1: i before j, so j ends at least p_j after i; y = 0: the other way round.
      mod.add_le("seq[" + key(jobs[i]) + "," + key(jobs[j]) + "]", {{c[i], 1}, {c[j], -1}, {y, big}}, big - p[j]);
      mod.add_le("seq[" + key(jobs[j]) + "," + key(jobs[i]) + "]", {{c[j], 1}, {c[i], -1}, {y, -big}}, -p[i]);
      inst.implied_numbers.push_back(big - p[j]);
    }
  inst.shape = {n, 0, n * (n - 1) / 2, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  fill_story_head(lx, s);
  s.setting = draw_wording(rng, {
      "At " + lx.company + ", the " + mach + " must process the " + join_and(jobs) +
          ", one at a time and without interruption, starting now.",
      lx.company + " has the " + join_and(jobs) + " waiting for the " + mach +
          ", which handles a single order at a time and never stops an order once it has begun. Work starts now.",
      "The " + mach + " at " + lx.company + " is the bottleneck: the " + join_and(jobs) +
          " all need it, it can work on only one at a time, and an order in progress is never interrupted. The clock starts now."});
  s.decision = draw_wording(rng, {"the order in which the " + mach + " processes them, and so when each is finished",
                                  "a processing sequence for the " + mach + " and the resulting finishing time of each order",
                                  "which order goes before which on the " + mach + ", and when each one is completed"});
  std::vector<std::string> cols = {"Processing time (hours)", "Delay cost ($ per hour until finished)"};
  if (ctx.mode == FeasibilityMode::kInfeasible) cols.push_back("Deadline (hours from now)");
  Table t = table("Orders", "Order", cols, jobs);
  for (int j = 0; j < n; ++j) {
    t.cells[j][0] = num(p[j]);
    t.cells[j][1] = num(w[j]);
    if (ctx.mode == FeasibilityMode::kInfeasible) t.cells[j][2] = due[j] > 0 ? num(due[j]) : "none";
  }
  s.tables.push_back(t);
  s.rules.push_back(draw_wording(rng, {"An order finishes no earlier than its processing time after the start.",
                                       "No order can be done sooner than its own processing time from now.",
                                       "Each order's finishing time is at least its processing time."}));
  s.rules.push_back(draw_wording(rng, {"For any two orders, one is processed completely before the other starts.",
                                       "Two orders never overlap: whichever goes first is finished before the other begins.",
                                       "Of every pair of orders, one must be completed before work on the other may start."}));
  if (ctx.mode == FeasibilityMode::kInfeasible) s.rules.push_back("An order with a deadline must be finished by it.");
  s.objective = draw_wording(rng, {"minimize the total delay cost, in dollars: each order's cost per hour times its finishing time",
                                   "minimize the weighted sum of finishing times, each order weighted by its delay cost in dollars per hour",
                                   "minimize the dollars lost to waiting: for every order, its hourly delay cost multiplied by the hour it is finished"});
  s.integrality = draw_wording(rng, {"Which of two orders goes first is a yes-or-no decision.",
                                     "For each pair of orders, the precedence is a binary choice.",
                                     "The sequence is made of yes-or-no choices, one per pair of orders."});
}

// ---------------------------------------------------------------------------------------
// Two-machine permutation flow shop (every order visits the first stage, then the second,
// in the same sequence on both): makespan with big-M sequencing.
void build_flow_shop(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;
  Rng& rng = ctx.rng;
  auto jobs = draw_names(orders_of(lx, int(lx.products.size())), n, rng);
  auto mach = draw_names(machine_names(lx, 12), 2, rng);
  std::vector<std::vector<double>> p(2, std::vector<double>(n));
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < n; ++j) p[k][j] = d("hours");
  double big = 0, first_stage = 0, least_second = p[1][0];
  for (int k = 0; k < 2; ++k)
    for (double v : p[k]) big += v;
  for (int j = 0; j < n; ++j) first_stage += p[0][j], least_second = std::min(least_second, p[1][j]);
  // No sequence finishes before the first stage's total plus the shortest second stage.
  const double horizon = ctx.mode == FeasibilityMode::kInfeasible ? first_stage + least_second - 1 : lp::kInf;

  lp::Model& mod = inst.model;
  mod.objective_name = "makespan";
  std::vector<std::vector<int>> c(2, std::vector<int>(n));
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < n; ++j)
      c[k][j] = mod.add_var("done[" + key(mach[k]) + "," + key(jobs[j]) + "]", k == 0 ? p[0][j] : 0, lp::kInf,
                            lp::VarType::kContinuous, 0);
  const int cmax = mod.add_var("makespan", 0, horizon, lp::VarType::kContinuous, 1);
  inst.implied_numbers.push_back(big);
  for (int j = 0; j < n; ++j) {
    mod.add_ge("route[" + key(jobs[j]) + "]", {{c[1][j], 1}, {c[0][j], -1}}, p[1][j]);
    mod.add_ge("last[" + key(jobs[j]) + "]", {{cmax, 1}, {c[1][j], -1}}, 0);
  }
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      int y = mod.add_var("first[" + key(jobs[i]) + "," + key(jobs[j]) + "]", 0, 1, lp::VarType::kBinary, 0);
      for (int k = 0; k < 2; ++k) {
        const std::string tag = key(mach[k]) + "," + key(jobs[i]) + "," + key(jobs[j]);
        mod.add_le("seq_a[" + tag + "]", {{c[k][i], 1}, {c[k][j], -1}, {y, big}}, big - p[k][j]);
        mod.add_le("seq_b[" + tag + "]", {{c[k][j], 1}, {c[k][i], -1}, {y, -big}}, -p[k][i]);
        inst.implied_numbers.push_back(big - p[k][j]);
      }
    }
  inst.shape = {2 * n + 1, 0, n * (n - 1) / 2, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  fill_story_head(lx, s);
  s.setting = draw_wording(rng, {
      "At " + lx.company + ", every one of the " + join_and(jobs) + " is first processed on the " + mach[0] +
          " and then on the " + mach[1] + ". Both process the orders in the same sequence, one at a time.",
      lx.company + " runs a two-stage line: the " + mach[0] + " handles the first stage and the " + mach[1] +
          " the second. The " + join_and(jobs) + " pass through both stages in one common sequence, one order at a time.",
      "The " + join_and(jobs) + " at " + lx.company + " each need the " + mach[0] + " first and the " + mach[1] +
          " afterwards; the two stages work on one order at a time and keep the same order sequence."});
  s.decision = draw_wording(rng, {"the sequence of the orders and when each finishes on each " + lx.machine,
                                  "an order sequence, shared by both stages, and the finishing time of every order at each stage",
                                  "in what sequence the orders go through the line and when each leaves each " + lx.machine});
  Table t = table("Processing times in hours", "Order", {mach[0], mach[1]}, jobs);
  for (int j = 0; j < n; ++j) t.cells[j] = {num(p[0][j]), num(p[1][j])};
  s.tables.push_back(t);
  if (horizon != lp::kInf) s.facts.push_back("Every order must be finished within " + num(horizon) + " hours.");
  s.rules.push_back(draw_wording(rng, {
      "An order can start on the " + mach[1] + " only after it has finished on the " + mach[0] + ".",
      "The " + mach[1] + " may begin an order only once the " + mach[0] + " is done with it.",
      "No order reaches the " + mach[1] + " before its work on the " + mach[0] + " is complete."}));
  s.rules.push_back(draw_wording(rng, {
      "Each " + lx.machine + " processes one order at a time, and one of any two orders goes first on both.",
      "A " + lx.machine + " never works on two orders at once, and for any two orders the one that goes first does so at both stages.",
      "Orders do not overlap on a " + lx.machine + ", and whichever of two orders leads on the first stage also leads on the second."}));
  s.objective = draw_wording(rng, {"minimize the makespan: the hour at which the last order leaves the " + mach[1],
                                   "minimize the completion time of the whole batch, measured when the " + mach[1] + " finishes its last order",
                                   "minimize the number of hours until every order has left the " + mach[1]});
  s.integrality = draw_wording(rng, {"The sequence is a set of yes-or-no decisions.",
                                     "Whether one order precedes another is a binary choice.",
                                     "Each pairwise ordering of the orders is an all-or-nothing decision."});
}

// ---------------------------------------------------------------------------------------
// Project crashing: activities with precedences may be shortened at a cost per hour, and
// the project must end by a deadline.
void build_project_crashing(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  Rng& rng = ctx.rng;
  const int n = ctx.size;
  std::vector<std::string> acts;
  for (const std::string& tag : machine_names(lx, n)) acts.push_back("task " + tag.substr(tag.rfind(' ') + 1));
  std::vector<double> dur(n), most(n), cost(n);
  for (int j = 0; j < n; ++j) dur[j] = d("duration");
  for (int j = 0; j < n; ++j) cost[j] = d("crash_cost");
  for (int j = 0; j < n; ++j) most[j] = std::max(1.0, std::floor(dur[j] * 0.4));
  std::vector<std::vector<int>> pred(n);
  for (int j = 1; j < n; ++j) {
    pred[j].push_back(int(rng.integer(0, j - 1)));
    if (j >= 2 && rng.chance(0.4)) {
      int other = int(rng.integer(0, j - 1));
      if (other != pred[j][0]) pred[j].push_back(other);
    }
  }
  auto longest = [&](bool crashed) {
    std::vector<double> fin(n);
    double end = 0;
    for (int j = 0; j < n; ++j) {
      double start = 0;
      for (int i : pred[j]) start = std::max(start, fin[i]);
      fin[j] = start + dur[j] - (crashed ? most[j] : 0);
      end = std::max(end, fin[j]);
    }
    return end;
  };
  const double normal = longest(false), fastest = longest(true);
  double deadline = ctx.mode == FeasibilityMode::kInfeasible
                        ? fastest - 1
                        : std::ceil(fastest + (normal - fastest) * (0.2 + 0.7 * (1 - ctx.difficulty)));
  deadline = std::min(deadline, normal - (ctx.mode == FeasibilityMode::kInfeasible ? 0 : 1));

  lp::Model& mod = inst.model;
  mod.objective_name = "crash_cost";
  std::vector<int> st(n), cr(n);
  for (int j = 0; j < n; ++j) st[j] = mod.add_var("start[" + key(acts[j]) + "]", 0, lp::kInf, lp::VarType::kContinuous, 0);
  for (int j = 0; j < n; ++j) cr[j] = mod.add_var("crash[" + key(acts[j]) + "]", 0, most[j], lp::VarType::kContinuous, cost[j]);
  const int end = mod.add_var("project_end", 0, deadline, lp::VarType::kContinuous, 0);
  for (int j = 0; j < n; ++j) {
    for (int i : pred[j])
      mod.add_ge("after[" + key(acts[i]) + "," + key(acts[j]) + "]", {{st[j], 1}, {st[i], -1}, {cr[i], 1}}, dur[i]);
    mod.add_ge("end_after[" + key(acts[j]) + "]", {{end, 1}, {st[j], -1}, {cr[j], 1}}, dur[j]);
  }
  inst.shape = {2 * n + 1, 0, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  fill_story_head(lx, s);
  s.setting = lx.company + " is upgrading its " + lx.plant + ". The upgrade consists of " + join_and(acts) +
              ". A task can be shortened (crashed) by paying for extra crews, up to a limit.";
  s.decision = "when each task starts and by how many hours each is shortened";
  Table t = table("Tasks", "Task", {"Normal duration (hours)", "Most it can be shortened (hours)",
                                    "Cost of shortening ($ per hour)", "Must follow"}, acts);
  for (int j = 0; j < n; ++j) {
    std::vector<std::string> before;
    for (int i : pred[j]) before.push_back(acts[i]);
    t.cells[j] = {num(dur[j]), num(most[j]), num(cost[j]), before.empty() ? "nothing" : join_and(before)};
  }
  s.tables.push_back(t);
  s.facts.push_back("The whole upgrade must be finished within " + num(deadline) + " hours of the start.");
  s.rules.push_back("A task starts only after every task it must follow has finished.");
  s.rules.push_back("A task lasts its normal duration minus the hours it is shortened.");
  s.objective = "minimize the total cost of shortening tasks, in dollars";
}

// ---------------------------------------------------------------------------------------
// Days-off staffing: each worker works a stretch of consecutive days (five in a week of
// seven, wrapping around), starting on any day; every day needs enough workers.
void build_days_off(const BuildContext& ctx, Instance& inst) {
  static const std::vector<std::string> days = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
  static const char* const stretch_words[] = {"", "", "", "three", "four", "five", "six"};
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int len = ctx.size;  // consecutive working days
  std::vector<double> need(7), wage(7);
  for (int k = 0; k < 7; ++k) need[k] = d("required");
  for (int k = 0; k < 7; ++k) wage[k] = d("wage");
  double headcount = 0;
  if (ctx.mode == FeasibilityMode::kInfeasible) {
    double peak = *std::max_element(need.begin(), need.end());
    headcount = std::max(2.0, peak - 1);
    for (double& v : need) v = std::min(v, headcount + 1);
    need[0] = headcount + 1;
  }
  lp::Model& mod = inst.model;
  mod.objective_name = "weekly_wages";
  std::vector<int> x(7);
  for (int k = 0; k < 7; ++k) x[k] = mod.add_var("start[" + key(days[k]) + "]", 0, lp::kInf, lp::VarType::kInteger, wage[k]);
  for (int day = 0; day < 7; ++day) {
    std::vector<Term> t;
    for (int k = 0; k < 7; ++k)
      if ((day - k + 7) % 7 < len) t.push_back({x[k], 1});
    mod.add_ge("cover[" + key(days[day]) + "]", t, need[day]);
  }
  if (headcount > 0) {
    std::vector<Term> all;
    for (int k = 0; k < 7; ++k) all.push_back({x[k], 1});
    mod.add_le("headcount", all, headcount);
  }
  inst.shape = {0, 7, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  fill_story_head(lx, s);
  s.setting = lx.company + " staffs its " + lx.plant + " with " + lx.worker + "s who each work " +
              stretch_words[len] + " consecutive days and then have the rest of the week off; the week wraps around from Sunday to Monday.";
  s.decision = "how many " + lx.worker + "s start their working stretch on each day of the week";
  Table t = table("Daily requirements and weekly pay by starting day", "Day",
                  {cap(lx.worker) + "s needed", "Weekly pay of a " + lx.worker + " starting that day ($)"}, days);
  for (int k = 0; k < 7; ++k) t.cells[k] = {num(need[k]), num(wage[k])};
  s.tables.push_back(t);
  if (headcount > 0) s.facts.push_back("At most " + num(headcount) + " " + lx.worker + "s can be employed.");
  s.rules.push_back("Every day, the " + lx.worker + "s on duty must number at least the requirement.");
  s.objective = "minimize the total weekly pay, in dollars";
  s.integrality = "Staff are hired as whole people.";
}

// ---------------------------------------------------------------------------------------
// Workforce planning over periods: hire and lay off to meet requirements, with a cap on
// hiring per period.
void build_workforce(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int T = ctx.size;
  auto per = period_names(lx, T);
  std::vector<double> need(T);
  for (int t = 0; t < T; ++t) need[t] = d("required");
  const double wage = d("wage"), hire_cost = d("hire_cost"), fire_cost = d("layoff_cost");
  const double start = d("required");
  // The largest rise in requirements bounds what hiring must allow; difficulty removes slack.
  double jump = 0;
  for (int t = 0; t < T; ++t) jump = std::max(jump, need[t] - (t == 0 ? start : need[t - 1]));
  double max_hire = std::max(2.0, jump + std::ceil(10 * (1 - ctx.difficulty)));
  if (ctx.mode == FeasibilityMode::kInfeasible) {
    max_hire = std::max(2.0, std::floor((need[0] - start) / 2));
    need[0] = start + max_hire + 3;
  }
  lp::Model& mod = inst.model;
  mod.objective_name = "staff_cost";
  std::vector<int> w(T), h(T), f(T);
  for (int t = 0; t < T; ++t) {
    w[t] = mod.add_var("staff[" + key(per[t]) + "]", need[t], lp::kInf, lp::VarType::kInteger, wage);
    h[t] = mod.add_var("hire[" + key(per[t]) + "]", 0, max_hire, lp::VarType::kInteger, hire_cost);
    f[t] = mod.add_var("lay_off[" + key(per[t]) + "]", 0, lp::kInf, lp::VarType::kInteger, fire_cost);
  }
  for (int t = 0; t < T; ++t) {
    std::vector<Term> terms = {{w[t], 1}, {h[t], -1}, {f[t], 1}};
    if (t > 0) terms.push_back({w[t - 1], -1});
    mod.add_eq("balance[" + key(per[t]) + "]", terms, t == 0 ? start : 0);
  }
  inst.shape = {0, 3 * T, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  fill_story_head(lx, s);
  s.setting = lx.company + " plans its " + lx.worker + " headcount at the " + lx.plant + " for the " + join_and(per) + ".";
  s.decision = "how many " + lx.worker + "s to hire and to lay off at the start of each " + lx.period;
  Table t = table("Requirements", cap(lx.period), {cap(lx.worker) + "s needed"}, per);
  for (int k = 0; k < T; ++k) t.cells[k] = {num(need[k])};
  s.tables.push_back(t);
  s.facts.push_back("It employs " + num(start) + " " + lx.worker + "s today.");
  s.facts.push_back("Each " + lx.worker + " on the payroll costs $" + num(wage) + " per " + lx.period + ".");
  s.facts.push_back("Hiring costs $" + num(hire_cost) + " per person and a layoff costs $" + num(fire_cost) + " per person.");
  s.facts.push_back("At most " + num(max_hire) + " people can be hired at the start of any " + lx.period + ".");
  s.rules.push_back("The headcount of a " + lx.period + " is the previous headcount plus hires minus layoffs.");
  s.rules.push_back("Every " + lx.period + " must have at least the " + lx.worker + "s it needs.");
  s.objective = "minimize the total of pay, hiring and layoff costs, in dollars";
  s.integrality = "Headcounts, hires and layoffs are whole people.";
}

}  // namespace

void add_scheduling_families(std::vector<const Family*>& out) {
  static const RecipeFamily families[] = {
      {{.family = "parallel_machines",
        .title = "Scheduling orders on unrelated parallel machines (makespan)",
        .problem_class = ProblemClass::kMILP,
        .version = "2",
        .params = {size_param(3, 7, 3, 6, "number of orders"), difficulty_param(),
                   data_param("hours", true, 1, 1000, 2, 20, "hours", "processing time of an order on a machine")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_parallel_machines},
      {{.family = "single_machine",
        .title = "One-machine sequencing with weighted completion times (big-M disjunctions)",
        .problem_class = ProblemClass::kMILP,
        .version = "2",
        .params = {size_param(3, 6, 3, 4, "number of orders"), difficulty_param(),
                   data_param("hours", true, 1, 1000, 1, 30, "hours", "processing time"),
                   data_param("weight", true, 1, 1000, 1, 20, "$ per hour", "cost of each hour until an order is done")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_single_machine},
      {{.family = "flow_shop",
        .title = "Two-machine permutation flow shop (makespan, big-M sequencing)",
        .problem_class = ProblemClass::kMILP,
        .version = "2",
        .params = {size_param(2, 5, 2, 4, "number of orders"), difficulty_param(),
                   data_param("hours", true, 1, 1000, 1, 40, "hours", "processing time on a stage")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_flow_shop},
      {{.family = "project_crashing",
        .title = "Project crashing with precedences and a deadline",
        .problem_class = ProblemClass::kLP,
        .params = {size_param(3, 10, 4, 8, "number of tasks"), difficulty_param(),
                   data_param("duration", true, 3, 1000, 4, 30, "hours", "normal duration of a task"),
                   data_param("crash_cost", true, 1, 10000, 20, 400, "$ per hour", "cost of shortening a task")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_project_crashing},
      {{.family = "days_off_staffing",
        .title = "Days-off staffing (consecutive working days over a cyclic week)",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(3, 6, 4, 6, "consecutive working days per person"), difficulty_param(),
                   data_param("required", true, 0, 10000, 3, 25, "workers", "workers needed on a day"),
                   data_param("wage", true, 1, 100000, 400, 900, "$ per week", "weekly pay by starting day")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_days_off},
      {{.family = "workforce_planning",
        .title = "Workforce planning with hiring and layoffs over periods",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(2, 12, 3, 8, "number of periods"), difficulty_param(),
                   data_param("required", true, 1, 10000, 10, 60, "workers", "workers needed in a period"),
                   data_param("wage", true, 1, 100000, 500, 1500, "$ per period", "pay per worker and period"),
                   data_param("hire_cost", true, 1, 100000, 200, 2000, "$", "cost of one hire"),
                   data_param("layoff_cost", true, 1, 100000, 300, 3000, "$", "cost of one layoff")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_workforce},
  };
  for (const RecipeFamily& f : families) out.push_back(&f);
}

}  // namespace trex::ordata
