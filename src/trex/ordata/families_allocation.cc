// Families about allocating people, money, machines and slots, phrased in every industry of
// the lexicon: generalized assignment (IP), assignment under a budget (IP), bottleneck
// assignment (MILP), capital budgeting with dependencies (IP), media selection (IP),
// unit commitment (MILP), economic dispatch with an emission cap (LP), conflict slotting as
// graph colouring (IP), team pairing as a matching (IP), a linear treasury portfolio (LP) and
// course timetabling (IP).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "trex/ordata/families.h"
#include "trex/ordata/family_recipe.h"
#include "trex/ordata/family_util.h"
#include "trex/ordata/lexicon.h"

namespace trex::ordata {

namespace {

using lp::Term;

const Lexicon& lex_of(const BuildContext& ctx) { return lexicons()[size_t(ctx.industry)]; }
bool infeasible(const BuildContext& ctx) { return ctx.mode == FeasibilityMode::kInfeasible; }

std::vector<std::string> tagged(const Lexicon& lx, const std::string& noun, int n) {
  std::vector<std::string> v;
  for (const auto& t : machine_names(lx, n)) v.push_back(noun + " " + t.substr(t.rfind(' ') + 1));
  return v;
}

// x[i][j] for i in rows, j in cols, binary, with the given costs.
std::vector<std::vector<int>> binary_grid(lp::Model& mod, const std::string& name, const std::vector<std::string>& rows,
                                          const std::vector<std::string>& cols, const std::vector<std::vector<double>>& cost) {
  std::vector<std::vector<int>> x(rows.size(), std::vector<int>(cols.size()));
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < cols.size(); ++j)
      x[i][j] = mod.add_var(name + "[" + key(rows[i]) + "," + key(cols[j]) + "]", 0, 1, lp::VarType::kBinary,
                            cost.empty() ? 0 : cost[i][j]);
  return x;
}

Table grid_table(const std::string& caption, const std::string& header, const std::vector<std::string>& rows,
                 const std::vector<std::string>& cols, const std::vector<std::vector<double>>& v) {
  Table t = table(caption, header, cols, rows);
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < cols.size(); ++j) t.cells[i][j] = num(v[i][j]);
  return t;
}

// ---------------------------------------------------------------------------------------
void build_generalized_assignment(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size, m = n <= 4 ? 2 : 3;
  auto jobs = first(lx.products, n);
  for (auto& j : jobs) j += " run";
  auto mach = machine_names(lx, m);
  std::vector<std::vector<double>> cost(m, std::vector<double>(n)), load(m, std::vector<double>(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) cost[i][j] = d("cost");
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) load[i][j] = d("hours");
  double sum_max = 0, sum_min = 0, biggest = 0;
  for (int j = 0; j < n; ++j) {
    double lo = load[0][j], hi = load[0][j];
    for (int i = 1; i < m; ++i) lo = std::min(lo, load[i][j]), hi = std::max(hi, load[i][j]);
    sum_max += hi, sum_min += lo, biggest = std::max(biggest, hi);
  }
  // sum_max / m + the largest load per machine always admits an assignment (fill in turn).
  const double capa = infeasible(ctx) ? std::floor(sum_min / m * 0.8)
                                      : std::ceil((sum_max / m + biggest) * (1 + 0.3 * (1 - ctx.difficulty)));
  lp::Model& mod = inst.model;
  mod.objective_name = "assignment_cost";
  auto x = binary_grid(mod, "assign", mach, jobs, cost);
  for (int j = 0; j < n; ++j) {
    std::vector<Term> t;
    for (int i = 0; i < m; ++i) t.push_back({x[i][j], 1});
    mod.add_eq("once[" + key(jobs[j]) + "]", t, 1);
  }
  for (int i = 0; i < m; ++i) {
    std::vector<Term> t;
    for (int j = 0; j < n; ++j) t.push_back({x[i][j], load[i][j]});
    mod.add_le("hours[" + key(mach[i]) + "]", t, capa);
  }
  inst.shape = {0, 0, m * n, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " must place the " + join_and(jobs) + " on its " + join_and(mach) +
              ". Each run costs and takes a different amount on each " + lx.machine + ".";
  s.decision = "which " + lx.machine + " takes each run";
  s.tables.push_back(grid_table("Cost of each run on each " + lx.machine + " ($)", cap(lx.machine), mach, jobs, cost));
  s.tables.push_back(grid_table("Hours each run takes on each " + lx.machine, cap(lx.machine), mach, jobs, load));
  s.facts.push_back("Each " + lx.machine + " has " + num(capa) + " hours available.");
  s.rules.push_back("Each run goes to exactly one " + lx.machine + ".");
  s.rules.push_back("The hours of the runs on a " + lx.machine + " may not exceed its available hours.");
  s.objective = "minimize the total cost in dollars";
  s.integrality = "A run is not split.";
}

// ---------------------------------------------------------------------------------------
void build_assignment_budget(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size, w = n + 1;
  auto staff = person_names(lx, w);
  auto posts = machine_names(lx, n);
  std::vector<std::vector<double>> score(w, std::vector<double>(n)), cost(w, std::vector<double>(n));
  for (int i = 0; i < w; ++i)
    for (int j = 0; j < n; ++j) score[i][j] = d("score");
  for (int i = 0; i < w; ++i)
    for (int j = 0; j < n; ++j) cost[i][j] = d("cost");
  double diagonal = 0, least = 0;  // one feasible assignment (i to i), and a bound no assignment beats
  for (int j = 0; j < n; ++j) {
    diagonal += cost[j][j];
    double lo = cost[0][j];
    for (int i = 1; i < w; ++i) lo = std::min(lo, cost[i][j]);
    least += lo;
  }
  const double budget = infeasible(ctx) ? least - 1 : std::ceil(diagonal + (diagonal - least) * (1 - ctx.difficulty));
  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMaximize;
  mod.objective_name = "skill_score";
  auto x = binary_grid(mod, "assign", staff, posts, score);
  for (int j = 0; j < n; ++j) {
    std::vector<Term> t;
    for (int i = 0; i < w; ++i) t.push_back({x[i][j], 1});
    mod.add_eq("staffed[" + key(posts[j]) + "]", t, 1);
  }
  for (int i = 0; i < w; ++i) {
    std::vector<Term> t;
    for (int j = 0; j < n; ++j) t.push_back({x[i][j], 1});
    mod.add_le("one_post[" + key(staff[i]) + "]", t, 1);
  }
  std::vector<Term> money;
  for (int i = 0; i < w; ++i)
    for (int j = 0; j < n; ++j) money.push_back({x[i][j], cost[i][j]});
  mod.add_le("budget", money, budget);
  inst.shape = {0, 0, w * n, true, lp::Sense::kMaximize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = "At " + lx.company + ", each of the " + join_and(posts) + " needs one " + lx.worker + " for the next " + lx.period +
              ". The candidates are " + join_and(staff) + "; each can take at most one " + lx.machine + ".";
  s.decision = "which " + lx.worker + " runs which " + lx.machine;
  s.tables.push_back(grid_table("Skill score of each " + lx.worker + " on each " + lx.machine + " (points)", cap(lx.worker), staff, posts, score));
  s.tables.push_back(grid_table("Cost of each pairing, including overtime and travel ($)", cap(lx.worker), staff, posts, cost));
  s.facts.push_back("The pairings may cost at most $" + num(budget) + " in total.");
  s.rules.push_back("Every " + lx.machine + " gets exactly one " + lx.worker + ", and nobody runs two.");
  s.rules.push_back("The total cost stays within the budget.");
  s.objective = "maximize the total skill score";
  s.maximize = true;
  s.integrality = "A pairing is made or not.";
}

// ---------------------------------------------------------------------------------------
void build_bottleneck_assignment(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const int w = infeasible(ctx) ? n - 1 : n;
  Rng& rng = ctx.rng;
  auto crews = draw_names(person_names(lx, 12), w, rng);
  for (auto& c : crews) c += "'s crew";
  auto jobs = draw_names(place_names(lx, "site", 12), n, rng);
  std::vector<std::vector<double>> hours(w, std::vector<double>(n));
  for (int i = 0; i < w; ++i)
    for (int j = 0; j < n; ++j) hours[i][j] = d("hours");
  lp::Model& mod = inst.model;
  mod.objective_name = "longest_job";
  auto x = binary_grid(mod, "send", crews, jobs, {});
  const int z = mod.add_var("longest", 0, lp::kInf, lp::VarType::kContinuous, 1);
  for (int i = 0; i < w; ++i) {
    std::vector<Term> t;
    for (int j = 0; j < n; ++j) t.push_back({x[i][j], 1});
    mod.add_le("one_site[" + key(crews[i]) + "]", t, 1);
  }
  for (int j = 0; j < n; ++j) {
    std::vector<Term> t, h;
    for (int i = 0; i < w; ++i) t.push_back({x[i][j], 1}), h.push_back({x[i][j], hours[i][j]});
    mod.add_eq("covered[" + key(jobs[j]) + "]", t, 1);
    h.push_back({z, -1});
    mod.add_le("bottleneck[" + key(jobs[j]) + "]", h, 0);
  }
  inst.shape = {1, 0, w * n, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = draw_wording(rng, {
      lx.company + " sends its maintenance crews (" + join_and(crews) + ") to the " + join_and(jobs) +
          ". All sites are worked on at the same time, so the plant is back when the slowest site is done.",
      "During a shutdown, " + lx.company + " has the " + join_and(jobs) + " repaired by " + join_and(crews) +
          ", all in parallel: operations restart only when the last site is finished.",
      "The " + join_and(jobs) + " of " + lx.company + " need maintenance at once. The crews available are " +
          join_and(crews) + ", and the work is over when the slowest site is."});
  s.decision = draw_wording(rng, {"which crew goes to which site", "an assignment of the crews to the sites",
                                  "where each crew is sent"});
  s.tables.push_back(grid_table(draw_wording(rng, {"Hours each crew needs at each site", "Repair time in hours, by crew and site",
                                                   "How long each crew would take at each site (hours)"}),
                                "Crew", crews, jobs, hours));
  s.rules.push_back(draw_wording(rng, {"Every site gets exactly one crew, and a crew works at one site at most.",
                                       "Every site needs exactly one crew, and no crew works at two sites.",
                                       "Each site is handled by a single crew, and each crew takes at most one site."}));
  s.objective = draw_wording(rng, {"minimize the longest time, in hours, that any site takes",
                                   "finish the slowest site as early as possible: minimize the largest repair time, in hours",
                                   "minimize the hours until every site is back, which is the time of the slowest one"});
  s.integrality = draw_wording(rng, {"A crew is sent or not.", "Crews are sent whole: no crew is split."});
}

// ---------------------------------------------------------------------------------------
void build_capital_budgeting(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  Rng& rng = ctx.rng;
  const int n = ctx.size;
  auto proj = tagged(lx, "project", n);
  std::vector<double> npv(n), c1(n), c2(n);
  for (int j = 0; j < n; ++j) npv[j] = d("value");
  for (int j = 0; j < n; ++j) c1[j] = d("outlay");
  for (int j = 0; j < n; ++j) c2[j] = d("outlay");
  double t1 = std::accumulate(c1.begin(), c1.end(), 0.0), t2 = std::accumulate(c2.begin(), c2.end(), 0.0);
  const double share = 0.3 + 0.4 * (1 - ctx.difficulty);
  double b1 = std::round(t1 * share), b2 = std::round(t2 * share);
  const int a = int(rng.integer(0, n - 1));
  int b = int(rng.integer(0, n - 2));
  if (b >= a) ++b;  // b needs a
  std::vector<double> must(n, 0);
  if (infeasible(ctx)) {
    must[a] = must[b] = 1;
    b1 = std::max(1.0, c1[a] + c1[b] - 1);
  }
  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMaximize;
  mod.objective_name = "net_present_value";
  std::vector<int> x(n);
  for (int j = 0; j < n; ++j) x[j] = mod.add_var("fund[" + key(proj[j]) + "]", must[j], 1, lp::VarType::kBinary, npv[j]);
  std::vector<Term> y1, y2;
  for (int j = 0; j < n; ++j) y1.push_back({x[j], c1[j]}), y2.push_back({x[j], c2[j]});
  mod.add_le("budget_year_one", y1, b1);
  mod.add_le("budget_year_two", y2, b2);
  mod.add_le("needs[" + key(proj[b]) + "," + key(proj[a]) + "]", {{x[b], 1}, {x[a], -1}}, 0);
  inst.shape = {0, 0, n, true, lp::Sense::kMaximize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " is choosing which improvement projects for its " + lx.plant + "s to fund: " + join_and(proj) + ".";
  s.decision = "which projects to fund";
  std::vector<std::string> cols = {"Net present value ($ thousand)", "Outlay in year one ($ thousand)", "Outlay in year two ($ thousand)"};
  if (infeasible(ctx)) cols.push_back("Committed");
  Table t = table("Projects", "Project", cols, proj);
  for (int j = 0; j < n; ++j) {
    t.cells[j][0] = num(npv[j]), t.cells[j][1] = num(c1[j]), t.cells[j][2] = num(c2[j]);
    if (infeasible(ctx)) t.cells[j][3] = must[j] ? "yes" : "no";
  }
  s.tables.push_back(t);
  s.facts.push_back("The capital budget is $" + num(b1) + " thousand in year one and $" + num(b2) + " thousand in year two.");
  s.rules.push_back("The funded projects' outlays stay within each year's budget.");
  s.rules.push_back(cap(proj[b]) + " can only be funded if " + proj[a] + " is funded too.");
  if (infeasible(ctx)) s.rules.push_back("Every committed project must be funded.");
  s.objective = "maximize the total net present value, in thousands of dollars";
  s.maximize = true;
  s.integrality = "A project is funded in full or not at all.";
}

// ---------------------------------------------------------------------------------------
void build_media_selection(const BuildContext& ctx, Instance& inst) {
  static const std::vector<std::string> media = {"television", "radio", "newspapers", "billboards",
                                                 "social media", "podcasts", "magazines", "search ads"};
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;
  auto ch = first(media, n);
  std::vector<double> price(n), reach(n), most(n), least(n, 0);
  for (int i = 0; i < n; ++i) price[i] = d("price");
  for (int i = 0; i < n; ++i) reach[i] = d("reach");
  for (int i = 0; i < n; ++i) most[i] = d("max_ads");
  double full = 0;
  for (int i = 0; i < n; ++i) full += price[i] * most[i];
  double budget = std::round(full * (0.3 + 0.4 * (1 - ctx.difficulty)));
  if (infeasible(ctx)) {
    least = most;
    budget = std::max(1.0, std::floor(full * 0.5));
  }
  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMaximize;
  mod.objective_name = "audience";
  std::vector<int> x(n);
  std::vector<Term> spend;
  for (int i = 0; i < n; ++i) {
    x[i] = mod.add_var("ads[" + key(ch[i]) + "]", least[i], most[i], lp::VarType::kInteger, reach[i]);
    spend.push_back({x[i], price[i]});
  }
  mod.add_le("budget", spend, budget);
  inst.shape = {0, n, 0, true, lp::Sense::kMaximize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " is planning an advertising campaign for its " + lx.products[0] + " in " + join_and(ch) + ".";
  s.decision = "how many advertisements to place in each medium";
  std::vector<std::string> cols = {"Cost per advertisement ($)", "Audience per advertisement (thousand people)", "Most advertisements"};
  if (infeasible(ctx)) cols.push_back("Advertisements already promised");
  Table t = table("Media", "Medium", cols, ch);
  for (int i = 0; i < n; ++i) {
    t.cells[i][0] = num(price[i]), t.cells[i][1] = num(reach[i]), t.cells[i][2] = num(most[i]);
    if (infeasible(ctx)) t.cells[i][3] = num(least[i]);
  }
  s.tables.push_back(t);
  s.facts.push_back("The campaign budget is $" + num(budget) + ".");
  s.rules.push_back("Spending stays within the budget, and no medium gets more than its maximum.");
  if (infeasible(ctx)) s.rules.push_back("Every promised advertisement must be placed.");
  s.objective = "maximize the total audience reached, in thousands of people";
  s.maximize = true;
  s.integrality = "Advertisements are placed in whole numbers.";
}

// ---------------------------------------------------------------------------------------
const std::vector<std::string>& day_blocks() {
  static const std::vector<std::string> v = {"night", "early morning", "morning", "midday", "afternoon", "evening"};
  return v;
}

void build_unit_commitment(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int T = ctx.size, G = 3;
  auto blocks = first(day_blocks(), T);
  auto gens = tagged(lx, "generator", G);
  std::vector<double> pmin(G), pmax(G), fixed(G), marg(G), dem(T);
  for (int g = 0; g < G; ++g) pmax[g] = d("capacity");
  for (int g = 0; g < G; ++g) pmin[g] = std::max(1.0, std::round(pmax[g] * 0.3));
  for (int g = 0; g < G; ++g) fixed[g] = d("fixed_cost");
  for (int g = 0; g < G; ++g) marg[g] = d("energy_cost");
  const double total = pmax[0] + pmax[1] + pmax[2];
  for (int t = 0; t < T; ++t) dem[t] = std::round(total * d("load_share") / 100);
  if (infeasible(ctx)) dem[size_t(T - 1)] = total + std::ceil(total * 0.05);
  lp::Model& mod = inst.model;
  mod.objective_name = "generation_cost";
  std::vector<std::vector<int>> u(G, std::vector<int>(T)), p(G, std::vector<int>(T));
  for (int g = 0; g < G; ++g)
    for (int t = 0; t < T; ++t) {
      const std::string k = key(gens[g]) + "," + key(blocks[t]);
      u[g][t] = mod.add_var("on[" + k + "]", 0, 1, lp::VarType::kBinary, fixed[g]);
      p[g][t] = mod.add_var("output[" + k + "]", 0, lp::kInf, lp::VarType::kContinuous, marg[g]);
      mod.add_ge("min_output[" + k + "]", {{p[g][t], 1}, {u[g][t], -pmin[g]}}, 0);
      mod.add_le("max_output[" + k + "]", {{p[g][t], 1}, {u[g][t], -pmax[g]}}, 0);
    }
  for (int t = 0; t < T; ++t) {
    std::vector<Term> s;
    for (int g = 0; g < G; ++g) s.push_back({p[g][t], 1});
    mod.add_ge("demand[" + key(blocks[t]) + "]", s, dem[t]);
  }
  inst.shape = {G * T, 0, G * T, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = "The " + lx.plant + " of " + lx.company + " runs on its own power station with " + join_and(gens) +
              ". The day is planned in blocks of one hour each: " + join_and(blocks) + ".";
  s.decision = "which generators run in each block and how many MWh each produces";
  Table t = table("Generators", "Generator",
                  {"Minimum output when on (MWh)", "Maximum output (MWh)", "Running cost per block ($)", "Energy cost ($ per MWh)"}, gens);
  for (int g = 0; g < G; ++g) t.cells[g] = {num(pmin[g]), num(pmax[g]), num(fixed[g]), num(marg[g])};
  Table td = table("Demand", "Block", {"Demand (MWh)"}, blocks);
  for (int k = 0; k < T; ++k) td.cells[k] = {num(dem[k])};
  s.tables = {t, td};
  s.rules.push_back("A generator that is on produces between its minimum and maximum output; one that is off produces nothing.");
  s.rules.push_back("In every block, total output covers demand.");
  s.objective = "minimize the running costs plus the energy costs over the day, in dollars";
  s.integrality = "A generator is on or off in each block.";
}

// ---------------------------------------------------------------------------------------
void build_economic_dispatch(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int G = ctx.size;
  auto gens = tagged(lx, "boiler", G);
  std::vector<double> pmax(G), cost(G), rate(G);
  for (int g = 0; g < G; ++g) pmax[g] = d("capacity");
  for (int g = 0; g < G; ++g) cost[g] = d("energy_cost");
  for (int g = 0; g < G; ++g) rate[g] = d("emission_rate");
  const double total = std::accumulate(pmax.begin(), pmax.end(), 0.0);
  const double demand = std::round(total * (0.4 + 0.4 * ctx.difficulty));
  // The least emissions that can meet demand: cleanest boilers first.
  std::vector<int> order(G);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return rate[a] < rate[b] || (rate[a] == rate[b] && a < b); });
  double left = demand, cleanest = 0, dirtiest = 0;
  for (int g : order) cleanest += rate[g] * std::min(left, pmax[g]), left -= std::min(left, pmax[g]);
  left = demand;
  for (auto it = order.rbegin(); it != order.rend(); ++it) dirtiest += rate[*it] * std::min(left, pmax[*it]), left -= std::min(left, pmax[*it]);
  const double cap_em = infeasible(ctx) ? std::floor(cleanest * 0.9)
                                        : std::ceil(cleanest + (dirtiest - cleanest) * 0.5 * (1 - ctx.difficulty));
  lp::Model& mod = inst.model;
  mod.objective_name = "fuel_cost";
  std::vector<int> p(G);
  std::vector<Term> all, em;
  for (int g = 0; g < G; ++g) {
    p[g] = mod.add_var("steam[" + key(gens[g]) + "]", 0, pmax[g], lp::VarType::kContinuous, cost[g]);
    all.push_back({p[g], 1}), em.push_back({p[g], rate[g]});
  }
  mod.add_ge("demand", all, demand);
  mod.add_le("emissions", em, cap_em);
  inst.shape = {G, 0, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = "The " + lx.plant + " of " + lx.company + " raises its steam with " + join_and(gens) + ".";
  s.decision = "how many tonnes of steam per hour each boiler produces";
  Table t = table("Boilers", "Boiler", {"Capacity (tonnes of steam per hour)", "Fuel cost ($ per tonne of steam)",
                                         "CO2 emitted (tonnes per tonne of steam)"}, gens);
  for (int g = 0; g < G; ++g) t.cells[g] = {num(pmax[g]), num(cost[g]), num(rate[g])};
  s.tables.push_back(t);
  s.facts.push_back("The plant needs " + num(demand) + " tonnes of steam per hour.");
  s.facts.push_back("The permit allows at most " + num(cap_em) + " tonnes of CO2 per hour.");
  s.rules.push_back("The boilers together produce at least the steam needed, each within its capacity.");
  s.rules.push_back("Total emissions stay within the permit.");
  s.objective = "minimize the fuel cost per hour, in dollars";
}

// ---------------------------------------------------------------------------------------
// Conflict slotting (graph colouring): batches that must not share a production window are
// placed in different windows; use as few windows as possible.
void build_slotting(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  Rng& rng = ctx.rng;
  const int n = ctx.size, C = n <= 5 ? 3 : 4;
  // Version 2: batches and windows drawn from the sample's stream, not the industry's first n.
  auto batches = draw_names(lx.products, n, rng);
  for (auto& b : batches) b += " batch";
  std::vector<std::string> windows = draw_names(tagged(lx, "window", 12), C, rng);
  // A hidden colouring with C windows; conflicts only across its classes keep it feasible.
  std::vector<int> klass(n);
  for (int v = 0; v < n; ++v) klass[v] = v < C ? v : int(rng.integer(0, C - 1));
  std::vector<std::vector<bool>> conflict(n, std::vector<bool>(n, false));
  for (int u = 0; u < n; ++u)
    for (int v = u + 1; v < n; ++v)
      conflict[u][v] = conflict[v][u] = klass[u] != klass[v] && rng.chance(0.3 + 0.5 * ctx.difficulty);
  if (infeasible(ctx))  // C + 1 batches that all conflict need C + 1 windows
    for (int u = 0; u <= C && u < n; ++u)
      for (int v = u + 1; v <= C && v < n; ++v) conflict[u][v] = conflict[v][u] = true;
  std::vector<double> price(C);
  for (int c = 0; c < C; ++c) price[c] = d("window_cost");
  lp::Model& mod = inst.model;
  mod.objective_name = "window_cost";
  std::vector<int> w(C);
  for (int c = 0; c < C; ++c) w[c] = mod.add_var("use[" + key(windows[c]) + "]", 0, 1, lp::VarType::kBinary, price[c]);
  auto x = binary_grid(mod, "slot", batches, windows, {});
  for (int v = 0; v < n; ++v) {
    std::vector<Term> t;
    for (int c = 0; c < C; ++c) t.push_back({x[v][c], 1});
    mod.add_eq("placed[" + key(batches[v]) + "]", t, 1);
  }
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < n; ++v) mod.add_le("open[" + key(batches[v]) + "," + key(windows[c]) + "]", {{x[v][c], 1}, {w[c], -1}}, 0);
  std::vector<std::string> pairs;
  for (int u = 0; u < n; ++u)
    for (int v = u + 1; v < n; ++v)
      if (conflict[u][v]) {
        pairs.push_back(batches[u] + " and " + batches[v]);
        for (int c = 0; c < C; ++c)
          mod.add_le("apart[" + key(batches[u]) + "," + key(batches[v]) + "," + key(windows[c]) + "]",
                     {{x[u][c], 1}, {x[v][c], 1}}, 1);
      }
  inst.shape = {0, 0, C + n * C, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = draw_wording(rng, {
      lx.company + " must run the " + join_and(batches) + " in its production windows " + join_and(windows) +
          ". Some batches cannot share a window, because cleaning between them is not possible within a window.",
      "The " + join_and(batches) + " of " + lx.company + " have to be scheduled into its production windows (" +
          join_and(windows) + "). Certain batches may not share a window: there is no time to clean between them.",
      lx.company + " is assigning the " + join_and(batches) + " to the production windows " + join_and(windows) +
          ". A window cannot hold two batches that conflict, since the line cannot be cleaned in between."});
  s.decision = draw_wording(rng, {"which window each batch runs in", "the production window of every batch",
                                  "for each batch, the window it is assigned to"});
  Table tw = table("Cost of using a window (cleaning and staffing, $)", "Window", {"Cost ($)"}, windows);
  for (int c = 0; c < C; ++c) tw.cells[c] = {num(price[c])};
  s.tables.push_back(tw);
  const std::string listed = pairs.empty() ? std::string("none") : join_and(pairs);
  s.facts.push_back(draw_wording(rng, {"These pairs cannot share a window: " + listed + ".",
                                       "The conflicting pairs are: " + listed + "."}));
  s.rules.push_back(draw_wording(rng, {
      "Every batch runs in exactly one window, and a window counts as used when any batch runs in it.",
      "Each batch is placed in one window only; a window with at least one batch in it is in use."}));
  s.rules.push_back(draw_wording(rng, {"Conflicting batches run in different windows.",
                                       "Two batches that conflict never share a window."}));
  s.objective = draw_wording(rng, {"minimize the total cost of the windows used, in dollars",
                                   "minimize what the windows in use cost together, in dollars"});
  s.integrality = draw_wording(rng, {"Placements are yes-or-no decisions.", "Each placement is a yes-or-no choice."});
}

// ---------------------------------------------------------------------------------------
// Team pairing (maximum-weight matching); infeasible when everyone must be paired and the
// headcount is odd.
void build_team_pairing(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  Rng& rng = ctx.rng;
  int n = ctx.size;
  if (infeasible(ctx) && n % 2 == 0) --n;
  auto people = person_names(lx, n);
  struct Edge { int a, b; double w; };
  std::vector<Edge> edges;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (b == a + 1 || rng.chance(0.4 + 0.4 * (1 - ctx.difficulty))) edges.push_back({a, b, 0});
  for (Edge& e : edges) e.w = d("score");
  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMaximize;
  mod.objective_name = "compatibility";
  std::vector<int> x;
  for (const Edge& e : edges) x.push_back(mod.add_var("pair[" + key(people[e.a]) + "," + key(people[e.b]) + "]", 0, 1, lp::VarType::kBinary, e.w));
  for (int v = 0; v < n; ++v) {
    std::vector<Term> t;
    for (size_t k = 0; k < edges.size(); ++k)
      if (edges[k].a == v || edges[k].b == v) t.push_back({x[k], 1});
    if (infeasible(ctx)) mod.add_eq("paired[" + key(people[v]) + "]", t, 1);
    else mod.add_le("paired[" + key(people[v]) + "]", t, 1);
  }
  inst.shape = {0, 0, int(edges.size()), true, lp::Sense::kMaximize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " pairs its " + lx.worker + "s (" + join_and(people) + ") into two-person teams for the next " + lx.period + ".";
  s.decision = "which possible pairs to form";
  std::vector<std::string> rows;
  for (const Edge& e : edges) rows.push_back(people[e.a] + " with " + people[e.b]);
  Table t = table("Possible pairs and their compatibility score (points)", "Pair", {"Score"}, rows);
  for (size_t k = 0; k < edges.size(); ++k) t.cells[k] = {num(edges[k].w)};
  s.tables.push_back(t);
  s.rules.push_back("Only the listed pairs can be formed.");
  s.rules.push_back(infeasible(ctx) ? "Everyone must be in exactly one team." : "Nobody is in more than one team.");
  s.objective = "maximize the total compatibility score of the teams formed";
  s.maximize = true;
  s.integrality = "A pair is formed or not.";
}

// ---------------------------------------------------------------------------------------
void build_treasury_portfolio(const BuildContext& ctx, Instance& inst) {
  static const std::vector<std::string> assets = {"government bonds", "money market fund", "corporate bonds", "equity index fund",
                                                  "real estate fund", "commodity fund", "green bonds", "emerging market fund"};
  static const std::vector<bool> risky = {false, false, false, true, true, true, false, true};
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;
  auto a = first(assets, n);
  std::vector<double> ret(n);
  for (int i = 0; i < n; ++i) ret[i] = d("return") / 100;
  const double reserve = d("reserve");  // amounts in $ thousand throughout
  const double per_asset = std::round(reserve * (0.3 + 0.3 * (1 - ctx.difficulty)));
  double risky_cap = std::round(reserve * 0.4);
  double safe_min = std::round(reserve * (0.2 + 0.2 * ctx.difficulty));
  int safe_count = 0;
  for (int i = 0; i < n; ++i) safe_count += !risky[size_t(i)];
  if (infeasible(ctx)) safe_min = safe_count * per_asset + 1;
  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMaximize;
  mod.objective_name = "expected_return";
  std::vector<int> x(n);
  std::vector<Term> all, hi, lo;
  for (int i = 0; i < n; ++i) {
    x[i] = mod.add_var("invest[" + key(a[i]) + "]", 0, per_asset, lp::VarType::kContinuous, ret[i]);
    all.push_back({x[i], 1});
    (risky[size_t(i)] ? hi : lo).push_back({x[i], 1});
  }
  mod.add_le("reserve", all, reserve);
  if (!hi.empty()) mod.add_le("risky_limit", hi, risky_cap);
  mod.add_ge("safe_minimum", lo, safe_min);
  inst.shape = {n, 0, 0, true, lp::Sense::kMaximize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = "The treasury of " + lx.company + " invests its cash reserve for one year in " + join_and(a) + ".";
  s.decision = "how much to put into each investment, in thousands of dollars";
  Table t = table("Investments", "Investment", {"Expected return (dollars per dollar invested)", "Risk class"}, a);
  for (int i = 0; i < n; ++i) t.cells[i] = {num(ret[i]), risky[size_t(i)] ? "risky" : "safe"};
  s.tables.push_back(t);
  s.facts.push_back("The reserve is $" + num(reserve) + " thousand.");
  s.facts.push_back("No single investment may receive more than $" + num(per_asset) + " thousand.");
  if (!hi.empty()) s.facts.push_back("Risky investments together may receive at most $" + num(risky_cap) + " thousand.");
  s.facts.push_back("Safe investments together must receive at least $" + num(safe_min) + " thousand.");
  s.rules.push_back("The amounts invested add up to no more than the reserve.");
  s.objective = "maximize the expected return over the year, in thousands of dollars";
  s.maximize = true;
}

// ---------------------------------------------------------------------------------------
void build_timetabling(const BuildContext& ctx, Instance& inst) {
  static const std::vector<std::string> slots = {"Monday morning", "Tuesday afternoon", "Wednesday morning", "Thursday afternoon"};
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  Rng& rng = ctx.rng;
  const int n = ctx.size, S = n <= 5 ? 3 : 4;
  auto sl = first(slots, S);
  std::vector<std::string> courses;
  for (const auto& p : first(lx.products, n)) courses.push_back(p + " training");
  // Rooms per slot: enough for a hidden timetable, or one short of the course count.
  const double rooms = infeasible(ctx) ? std::floor(double(n - 1) / S) : std::ceil(double(n) / S);
  std::vector<int> hidden(n);
  for (int c = 0; c < n; ++c) hidden[c] = c % S;
  rng.shuffle(hidden);
  std::vector<std::vector<double>> pen(n, std::vector<double>(S));
  for (int c = 0; c < n; ++c)
    for (int k = 0; k < S; ++k) pen[c][k] = d("penalty");
  std::vector<std::pair<int, int>> conflicts;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (hidden[a] != hidden[b] && rng.chance(0.25 + 0.4 * ctx.difficulty)) conflicts.push_back({a, b});
  lp::Model& mod = inst.model;
  mod.objective_name = "inconvenience";
  auto x = binary_grid(mod, "hold", courses, sl, pen);
  for (int c = 0; c < n; ++c) {
    std::vector<Term> t;
    for (int k = 0; k < S; ++k) t.push_back({x[c][k], 1});
    mod.add_eq("scheduled[" + key(courses[c]) + "]", t, 1);
  }
  for (int k = 0; k < S; ++k) {
    std::vector<Term> t;
    for (int c = 0; c < n; ++c) t.push_back({x[c][k], 1});
    mod.add_le("rooms[" + key(sl[k]) + "]", t, rooms);
  }
  std::vector<std::string> pairs;
  for (auto [a, b] : conflicts) {
    pairs.push_back(courses[a] + " and " + courses[b]);
    for (int k = 0; k < S; ++k)
      mod.add_le("clash[" + key(courses[a]) + "," + key(courses[b]) + "," + key(sl[k]) + "]", {{x[a][k], 1}, {x[b][k], 1}}, 1);
  }
  inst.shape = {0, 0, n * S, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " runs training courses for its " + lx.worker + "s: " + join_and(courses) +
              ". Each is held once, in one of the slots " + join_and(sl) + ".";
  s.decision = "which slot each course is held in";
  s.tables.push_back(grid_table("Inconvenience of holding each course in each slot (points)", "Course", courses, sl, pen));
  s.facts.push_back("Each slot has " + num(rooms) + " training rooms, one course per room.");
  s.facts.push_back("Courses that share trainees cannot be held in the same slot: " +
                    (pairs.empty() ? std::string("no such pairs this time") : join_and(pairs)) + ".");
  s.rules.push_back("Every course is held in exactly one slot, and no slot holds more courses than it has rooms.");
  s.objective = "minimize the total inconvenience in points";
  s.integrality = "A course is held in a slot or not.";
}

}  // namespace

void add_allocation_families(std::vector<const Family*>& out) {
  static const RecipeFamily families[] = {
      {{.family = "generalized_assignment",
        .title = "Generalized assignment (runs to machines with hour capacities)",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(3, 8, 3, 7, "number of runs"), difficulty_param(),
                   data_param("cost", true, 1, 10000, 10, 90, "$", "cost of a run on a machine"),
                   data_param("hours", true, 1, 1000, 2, 15, "hours", "time of a run on a machine")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_generalized_assignment},
      {{.family = "assignment_budget",
        .title = "Assignment with a budget side constraint",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(2, 7, 3, 6, "number of machines to staff"), difficulty_param(),
                   data_param("score", true, 1, 1000, 10, 99, "points", "skill score of a pairing"),
                   data_param("cost", true, 1, 10000, 50, 400, "$", "cost of a pairing")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_assignment_budget},
      {{.family = "bottleneck_assignment",
        .title = "Bottleneck assignment (minimize the longest job)",
        .problem_class = ProblemClass::kMILP,
        .version = "2",
        .params = {size_param(2, 7, 3, 6, "number of sites"), difficulty_param(),
                   data_param("hours", true, 1, 1000, 2, 40, "hours", "time a crew needs at a site")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_bottleneck_assignment},
      {{.family = "capital_budgeting",
        .title = "Two-year capital budgeting with a project dependency",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(3, 12, 4, 9, "number of projects"), difficulty_param(),
                   data_param("value", true, 1, 100000, 20, 300, "$ thousand", "net present value"),
                   data_param("outlay", true, 1, 100000, 10, 150, "$ thousand", "outlay in a year")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_capital_budgeting},
      {{.family = "media_selection",
        .title = "Media selection (advertisements under a budget)",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(2, 8, 3, 6, "number of media"), difficulty_param(),
                   data_param("price", true, 1, 1000000, 200, 5000, "$", "cost of an advertisement"),
                   data_param("reach", true, 1, 10000, 5, 120, "thousand people", "audience of an advertisement"),
                   data_param("max_ads", true, 1, 1000, 3, 20, "advertisements", "most advertisements in a medium")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_media_selection},
      {{.family = "unit_commitment",
        .title = "Unit commitment (on/off generators with minimum and maximum output)",
        .problem_class = ProblemClass::kMILP,
        .params = {size_param(2, 6, 3, 6, "number of time blocks"), difficulty_param(),
                   data_param("capacity", true, 1, 10000, 20, 120, "MWh per block", "maximum output"),
                   data_param("fixed_cost", true, 0, 100000, 100, 900, "$ per block", "cost of running a generator"),
                   data_param("energy_cost", true, 1, 1000, 20, 90, "$ per MWh", "energy cost"),
                   data_param("load_share", true, 5, 95, 20, 85, "percent of total capacity", "demand in a block")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_unit_commitment},
      {{.family = "economic_dispatch",
        .title = "Economic dispatch with an emission cap",
        .problem_class = ProblemClass::kLP,
        .params = {size_param(2, 8, 2, 6, "number of boilers"), difficulty_param(),
                   data_param("capacity", true, 1, 10000, 10, 80, "tonnes of steam per hour", "boiler capacity"),
                   data_param("energy_cost", true, 1, 1000, 10, 60, "$ per tonne of steam", "fuel cost"),
                   data_param("emission_rate", false, 0.1, 2, 0.1, 0.9, "tonnes CO2 per tonne of steam", "emission rate", 1)},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_economic_dispatch},
      {{.family = "conflict_slotting",
        .title = "Conflict slotting (graph colouring with few windows)",
        .problem_class = ProblemClass::kIP,
        .version = "2",
        .params = {size_param(4, 7, 4, 6, "number of batches"), difficulty_param(),
                   data_param("window_cost", true, 1, 100000, 100, 900, "$", "cost of using a window")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_slotting},
      {{.family = "team_pairing",
        .title = "Team pairing (maximum-weight matching)",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(3, 8, 4, 8, "number of people"), difficulty_param(),
                   data_param("score", true, 1, 1000, 5, 95, "points", "compatibility of a pair")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_team_pairing},
      {{.family = "treasury_portfolio",
        .title = "Treasury portfolio (linear, with risk-class limits)",
        .problem_class = ProblemClass::kLP,
        .params = {size_param(3, 8, 3, 8, "number of investments"), difficulty_param(),
                   data_param("return", true, 1, 30, 1, 12, "percent per year", "expected return"),
                   data_param("reserve", true, 10, 100000, 200, 5000, "$ thousand", "cash to invest")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_treasury_portfolio},
      {{.family = "timetabling",
        .title = "Course timetabling with clashes and room limits",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(4, 8, 4, 7, "number of courses"), difficulty_param(),
                   data_param("penalty", true, 0, 1000, 0, 9, "points", "inconvenience of a slot for a course")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_timetabling},
  };
  for (const RecipeFamily& f : families) out.push_back(&f);
}

}  // namespace trex::ordata
