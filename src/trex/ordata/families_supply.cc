// Families about moving and stocking goods, phrased in every industry of the lexicon:
// multi-echelon inventory with backlog (LP), multi-item capacitated lot sizing with setups
// (MILP), aggregate planning (LP), fixed-charge network design (MILP), multi-commodity flow
// (LP), capacitated vehicle routing with MTZ load variables (MILP), the TSP in its
// single-commodity flow form (MILP), single-source facility location (MILP), p-median (IP),
// maximal coverage (IP), supplier selection with a quality limit (MILP) and cutting stock
// in the assignment form (MILP).
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
double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// A symmetric distance table over named stops.
std::vector<std::vector<double>> distances(Draw& d, int n, const std::string& param) {
  std::vector<std::vector<double>> dist(n, std::vector<double>(n, 0));
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) dist[i][j] = dist[j][i] = d(param);
  return dist;
}

// The plant followed by n other stops whose towns differ from the plant's.
// Places named after towns drawn from the sample's stream, distinct across all the groups:
// counts[g] places of nouns[g] each. With the industry's fixed rotation every instance of one
// size and industry named the same places and read as a near duplicate.
std::vector<std::vector<std::string>> drawn_places(const std::vector<std::string>& nouns, const std::vector<int>& counts,
                                                   Rng& rng) {
  int total = 0;
  for (int c : counts) total += c;
  const std::vector<std::string> towns = draw_names(town_names(), total, rng);
  std::vector<std::vector<std::string>> out(nouns.size());
  size_t next = 0;
  for (size_t g = 0; g < nouns.size(); ++g)
    for (int i = 0; i < counts[g]; ++i) out[g].push_back(towns[next++] + " " + nouns[g]);
  return out;
}

std::vector<std::string> tour_stops(const Lexicon& lx, int others) {
  const std::string plant = place_names(lx, lx.plant, 1)[0];
  const std::string town = plant.substr(0, plant.find(' '));
  std::vector<std::string> stops = {plant};
  for (const std::string& c : place_names(lx, lx.customer, others + 1))
    if (int(stops.size()) <= others && c.substr(0, c.find(' ')) != town) stops.push_back(c);
  return stops;
}

Table distance_table(const std::string& caption, const std::vector<std::string>& stops,
                     const std::vector<std::vector<double>>& dist) {
  Table t = table(caption, "From", stops, stops);
  for (size_t i = 0; i < stops.size(); ++i)
    for (size_t j = 0; j < stops.size(); ++j) t.cells[i][j] = i == j ? "-" : num(dist[i][j]);
  return t;
}

// ---------------------------------------------------------------------------------------
// Plant -> distribution centre -> customers over T periods; unmet demand is backlogged at a
// penalty and must be cleared by the end.
void build_multi_echelon(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int T = ctx.size;
  auto per = period_names(lx, T);
  const std::string plant = place_names(lx, lx.plant, 1)[0];
  const std::string dc = place_names(lx, "distribution centre", 2)[1];
  std::vector<double> dem(T);
  for (int t = 0; t < T; ++t) dem[t] = d("demand");
  const double make_cost = d("unit_cost"), hold_plant = d("holding_cost"), hold_dc = d("holding_cost"),
               penalty = d("backlog_cost");
  double total = sum(dem);
  double capa = infeasible(ctx) ? std::floor(total * 0.8 / T)
                                : std::ceil(total / T * (1.05 + 0.6 * (1 - ctx.difficulty)));
  capa = std::max(1.0, capa);
  lp::Model& mod = inst.model;
  mod.objective_name = "total_cost";
  std::vector<int> mk(T), sh(T), ip(T), id(T), bk(T);
  for (int t = 0; t < T; ++t) {
    const std::string k = key(per[t]);
    mk[t] = mod.add_var("make[" + k + "]", 0, capa, lp::VarType::kContinuous, make_cost);
    sh[t] = mod.add_var("ship[" + k + "]", 0, capa, lp::VarType::kContinuous, 0);
    ip[t] = mod.add_var("stock_plant[" + k + "]", 0, lp::kInf, lp::VarType::kContinuous, hold_plant);
    id[t] = mod.add_var("stock_dc[" + k + "]", 0, lp::kInf, lp::VarType::kContinuous, hold_dc);
    bk[t] = mod.add_var("backlog[" + k + "]", 0, t + 1 == T ? 0 : lp::kInf, lp::VarType::kContinuous, penalty);
  }
  for (int t = 0; t < T; ++t) {
    const std::string k = key(per[t]);
    std::vector<Term> a = {{ip[t], 1}, {mk[t], -1}, {sh[t], 1}};
    std::vector<Term> b = {{id[t], 1}, {bk[t], -1}, {sh[t], -1}};
    if (t > 0) a.push_back({ip[t - 1], -1}), b.push_back({id[t - 1], -1}), b.push_back({bk[t - 1], 1});
    mod.add_eq("plant_balance[" + k + "]", a, 0);
    mod.add_eq("dc_balance[" + k + "]", b, -dem[t]);
  }
  inst.shape = {5 * T, 0, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " makes its " + lx.product + "s at the " + plant + " and ships them to the " + dc +
              ", which serves all customers. Nothing is in stock at the start, and a shipment arrives in the " +
              lx.period + " it is sent.";
  s.decision = "how many " + lx.unit + "s to make, ship and hold in each " + lx.period;
  Table t = table("Customer demand", cap(lx.period), {"Demand (" + lx.unit + "s)"}, per);
  for (int k = 0; k < T; ++k) t.cells[k] = {num(dem[k])};
  s.tables.push_back(t);
  s.facts.push_back("The plant can make at most " + num(capa) + " " + lx.unit + "s per " + lx.period +
                    ", and at most as many can be shipped per " + lx.period + ".");
  s.facts.push_back("Making a " + lx.unit + " costs $" + num(make_cost) + ". Holding a " + lx.unit + " for a " + lx.period +
                    " costs $" + num(hold_plant) + " at the plant and $" + num(hold_dc) + " at the distribution centre.");
  s.facts.push_back("Demand not met on time is backlogged at a penalty of $" + num(penalty) + " per " + lx.unit +
                    " per " + lx.period + ".");
  s.rules.push_back("At each site, stock carried out equals stock carried in plus arrivals minus departures.");
  s.rules.push_back("At the distribution centre, demand is served from stock or backlogged; a backlog is served later.");
  s.rules.push_back("All backlog must be cleared by the end of the last " + lx.period + ".");
  s.objective = "minimize the total cost of making, holding and backlog penalties, in dollars";
}

// ---------------------------------------------------------------------------------------
// Several products share one capacity per period; a product made in a period needs a setup.
void build_multi_item_lot_sizing(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int T = ctx.size;
  const int n = T <= 3 ? 3 : 2;
  Rng& rng = ctx.rng;
  auto per = draw_run(period_names(lx, 12), T, rng);
  auto items = draw_names(lx.products, n, rng);
  std::vector<std::vector<double>> dem(n, std::vector<double>(T));
  std::vector<double> hours(n), setup(n), hold(n);
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < T; ++t) dem[i][t] = d("demand");
  for (int i = 0; i < n; ++i) hours[i] = d("hours_per_unit");
  for (int i = 0; i < n; ++i) setup[i] = d("setup_cost");
  for (int i = 0; i < n; ++i) hold[i] = d("holding_cost");
  // Feasible when every prefix of periods has the hours its demand needs.
  double worst = 0, cum = 0, all = 0;
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < n; ++i) cum += hours[i] * dem[i][t];
    worst = std::max(worst, cum / (t + 1));
  }
  all = cum;
  double capa = infeasible(ctx) ? std::floor(all * 0.7 / T) : std::ceil(worst * (1.05 + 0.5 * (1 - ctx.difficulty)));
  capa = std::max(1.0, capa);
  std::vector<double> run(n);
  for (int i = 0; i < n; ++i) run[i] = std::ceil(capa / hours[i]);
  lp::Model& mod = inst.model;
  mod.objective_name = "setup_and_holding_cost";
  std::vector<std::vector<int>> x(n, std::vector<int>(T)), y(n, std::vector<int>(T)), s(n, std::vector<int>(T));
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < T; ++t) {
      const std::string k = key(items[i]) + "," + key(per[t]);
      x[i][t] = mod.add_var("make[" + k + "]", 0, lp::kInf, lp::VarType::kContinuous, 0);
      y[i][t] = mod.add_var("setup[" + k + "]", 0, 1, lp::VarType::kBinary, setup[i]);
      s[i][t] = mod.add_var("stock[" + k + "]", 0, lp::kInf, lp::VarType::kContinuous, hold[i]);
    }
  for (int t = 0; t < T; ++t) {
    std::vector<Term> c;
    for (int i = 0; i < n; ++i) c.push_back({x[i][t], hours[i]});
    mod.add_le("capacity[" + key(per[t]) + "]", c, capa);
  }
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < T; ++t) {
      const std::string k = key(items[i]) + "," + key(per[t]);
      std::vector<Term> b = {{x[i][t], 1}, {s[i][t], -1}};
      if (t > 0) b.push_back({s[i][t - 1], 1});
      mod.add_eq("balance[" + k + "]", b, dem[i][t]);
      mod.add_le("run_limit[" + k + "]", {{x[i][t], 1}, {y[i][t], -run[i]}}, 0);
    }
  inst.shape = {2 * n * T, 0, n * T, true, lp::Sense::kMinimize};

  Story& st = inst.story;
  st.company = lx.company;
  st.setting = draw_wording(rng, {
      lx.company + " makes " + join_and(items) + " on one shared " + lx.machine + " over the " + join_and(per) + ". A " +
          lx.product + " can be made in a " + lx.period + " only if the " + lx.machine + " is set up for it in that " +
          lx.period + ". There is no stock at the start.",
      "One " + lx.machine + " at " + lx.company + " produces the " + join_and(items) + " during the " + join_and(per) +
          "; in each " + lx.period + " it must be set up for every " + lx.product + " it makes then. Nothing is in stock to begin with.",
      "Over the " + join_and(per) + ", " + lx.company + " plans the " + join_and(items) + " on a single " + lx.machine +
          ". Making a " + lx.product + " in a " + lx.period + " needs a setup for it in that same " + lx.period +
          ", and the plan starts from empty stock."});
  st.decision = draw_wording(rng, {
      "in which " + lx.period + "s to set up for each " + lx.product + ", and how much to make and keep in stock",
      "the setups of each " + lx.period + ", the quantities made and the stock carried forward",
      "when to set up for each " + lx.product + ", how many " + lx.unit + "s to make, and what to hold over"});
  std::vector<std::string> cols = per;
  Table t = table(draw_wording(rng, {"Demand in " + lx.unit + "s", cap(lx.unit) + "s ordered, by " + lx.period,
                                     "Orders to meet, in " + lx.unit + "s"}),
                  cap(lx.product), cols, items);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < T; ++k) t.cells[i][k] = num(dem[i][k]);
  Table c = table(draw_wording(rng, {"Product data", "Costs and times by " + lx.product, cap(lx.product) + " data"}),
                  cap(lx.product),
                  {"Machine hours per " + lx.unit, "Setup cost ($)", "Holding cost ($ per " + lx.unit + " per " + lx.period + ")",
                   "Most " + lx.unit + "s per setup"}, items);
  for (int i = 0; i < n; ++i) c.cells[i] = {num(hours[i]), num(setup[i]), num(hold[i]), num(run[i])};
  st.tables = {t, c};
  st.facts.push_back(draw_wording(rng, {"The " + lx.machine + " has " + num(capa) + " hours in each " + lx.period + ".",
                                        "Each " + lx.period + ", " + num(capa) + " hours of the " + lx.machine + " are available."}));
  st.rules.push_back(draw_wording(rng, {"Demand is met on time, from production of the " + lx.period + " or from stock.",
                                        "Every " + lx.period + "'s demand is served on time, out of that " + lx.period +
                                            "'s output or out of stock.",
                                        "No demand may be late: it comes from current production or from stock."}));
  st.rules.push_back(draw_wording(rng, {"The hours used in a " + lx.period + " may not exceed the hours available.",
                                        "A " + lx.period + "'s production may use no more than the " + lx.machine + "'s hours."}));
  st.rules.push_back(draw_wording(rng, {
      "Without a setup nothing of that " + lx.product + " is made; with one, at most its per-setup limit.",
      "A " + lx.product + " is made in a " + lx.period + " only after a setup, and then no more than its per-setup limit."}));
  st.objective = draw_wording(rng, {"minimize the total setup and holding cost, in dollars",
                                    "minimize what setups and stock holding cost together, in dollars",
                                    "minimize the dollars spent on setups and on holding stock"});
  st.integrality = "A setup is made or not.";
}

// ---------------------------------------------------------------------------------------
// Aggregate planning: regular time, overtime and subcontracting, with inventory.
void build_aggregate_planning(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int T = ctx.size;
  auto per = period_names(lx, T);
  std::vector<double> dem(T);
  for (int t = 0; t < T; ++t) dem[t] = d("demand");
  const double reg_cost = d("unit_cost"), hold = d("holding_cost");
  const double ot_cost = reg_cost + d("premium"), sub_cost = ot_cost + d("premium");
  const double avg = sum(dem) / T, peak = *std::max_element(dem.begin(), dem.end());
  const double reg = std::ceil(avg * (0.5 + 0.3 * (1 - ctx.difficulty))), ot = std::ceil(avg * 0.2);
  double sub = std::max(1.0, peak - reg - ot + std::ceil(avg * 0.1));
  if (infeasible(ctx)) sub = std::max(1.0, dem[0] - reg - ot - 1), dem[0] = std::max(dem[0], reg + ot + sub + 1);
  lp::Model& mod = inst.model;
  mod.objective_name = "production_cost";
  std::vector<int> r(T), o(T), u(T), s(T);
  for (int t = 0; t < T; ++t) {
    const std::string k = key(per[t]);
    r[t] = mod.add_var("regular[" + k + "]", 0, reg, lp::VarType::kContinuous, reg_cost);
    o[t] = mod.add_var("overtime[" + k + "]", 0, ot, lp::VarType::kContinuous, ot_cost);
    u[t] = mod.add_var("subcontract[" + k + "]", 0, sub, lp::VarType::kContinuous, sub_cost);
    s[t] = mod.add_var("stock[" + k + "]", 0, lp::kInf, lp::VarType::kContinuous, hold);
  }
  for (int t = 0; t < T; ++t) {
    std::vector<Term> b = {{r[t], 1}, {o[t], 1}, {u[t], 1}, {s[t], -1}};
    if (t > 0) b.push_back({s[t - 1], 1});
    mod.add_eq("meet[" + key(per[t]) + "]", b, dem[t]);
  }
  inst.shape = {4 * T, 0, 0, true, lp::Sense::kMinimize};

  Story& st = inst.story;
  st.company = lx.company;
  st.setting = lx.company + " plans production of its " + lx.product + "s for the " + join_and(per) +
               ". It starts with no stock, and demand must be met on time.";
  st.decision = "how many " + lx.unit + "s to make on regular time, on overtime and by a subcontractor in each " + lx.period +
                ", and how many to carry in stock";
  Table t = table("Demand", cap(lx.period), {"Demand (" + lx.unit + "s)"}, per);
  for (int k = 0; k < T; ++k) t.cells[k] = {num(dem[k])};
  Table c = table("Capacity and cost per " + lx.period, "Source",
                  {"Most " + lx.unit + "s per " + lx.period, "Cost ($ per " + lx.unit + ")"},
                  {"regular time", "overtime", "subcontractor"});
  c.cells = {{num(reg), num(reg_cost)}, {num(ot), num(ot_cost)}, {num(sub), num(sub_cost)}};
  st.tables = {t, c};
  st.facts.push_back("Carrying a " + lx.unit + " from one " + lx.period + " to the next costs $" + num(hold) + ".");
  st.rules.push_back("Production plus stock carried in covers demand plus stock carried out, in every " + lx.period + ".");
  st.rules.push_back("No source may exceed its capacity in any " + lx.period + ".");
  st.objective = "minimize the total production and holding cost, in dollars";
}

// ---------------------------------------------------------------------------------------
// Fixed-charge network design: links from plants to customers must be built (a fixed cost)
// before they carry anything, up to their capacity.
void build_network_design(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size, m = 2;
  // Towns drawn from the sample's stream (version 2): with the industry's fixed rotation, every
  // instance of one size and industry named the same places and read as a near duplicate.
  std::vector<std::string> src = draw_names(town_names(), m + n, ctx.rng), dst;
  for (int j = m; j < m + n; ++j) dst.push_back(src[size_t(j)] + " " + lx.customer);
  src.resize(size_t(m));
  for (std::string& p : src) p += " " + lx.plant;
  std::vector<double> dem(n);
  for (int j = 0; j < n; ++j) dem[j] = d("demand");
  std::vector<std::vector<double>> cost(m, std::vector<double>(n)), fixed(m, std::vector<double>(n)), capa(m, std::vector<double>(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) cost[i][j] = d("unit_cost");
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) fixed[i][j] = d("fixed_cost");
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) capa[i][j] = std::ceil(dem[j] * (0.6 + 0.6 * (1 - ctx.difficulty)));
  if (infeasible(ctx)) capa[0][0] = capa[1][0] = std::max(1.0, std::floor(dem[0] * 0.4));
  const double supply = std::ceil(sum(dem) * 0.7);
  lp::Model& mod = inst.model;
  mod.objective_name = "network_cost";
  std::vector<std::vector<int>> x(m, std::vector<int>(n)), y(m, std::vector<int>(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const std::string k = key(src[i]) + "," + key(dst[j]);
      x[i][j] = mod.add_var("flow[" + k + "]", 0, lp::kInf, lp::VarType::kContinuous, cost[i][j]);
      y[i][j] = mod.add_var("build[" + k + "]", 0, 1, lp::VarType::kBinary, fixed[i][j]);
      mod.add_le("link[" + k + "]", {{x[i][j], 1}, {y[i][j], -capa[i][j]}}, 0);
    }
  for (int i = 0; i < m; ++i) {
    std::vector<Term> t;
    for (int j = 0; j < n; ++j) t.push_back({x[i][j], 1});
    mod.add_le("supply[" + key(src[i]) + "]", t, supply);
  }
  for (int j = 0; j < n; ++j) mod.add_ge("demand[" + key(dst[j]) + "]", {{x[0][j], 1}, {x[1][j], 1}}, dem[j]);
  inst.shape = {m * n, 0, m * n, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  Rng& rng = ctx.rng;
  s.setting = draw_wording(rng, {
      lx.company + " is designing the delivery network from its " + join_and(src) + " to the " + join_and(dst) +
          ". A link must be set up (a one-time cost) before it can carry anything.",
      lx.company + " ships " + lx.unit + "s from " + join_and(src) + " to " + join_and(dst) +
          ", but no link exists yet: each one it wants to use must first be opened at a one-time cost.",
      "Which shipping links should " + lx.company + " open? Its " + join_and(src) + " serve " + join_and(dst) +
          ", and a link carries nothing until it has been opened, which costs a one-time fee."});
  s.decision = draw_wording(rng, {"which links to set up and how many " + lx.unit + "s each carries",
                                  "the links to open and the number of " + lx.unit + "s sent along each",
                                  "for every link, whether to open it and how much it carries"});
  std::vector<std::string> cols;
  for (const auto& p : src) cols.push_back("From " + p + ": $ per " + lx.unit);
  for (const auto& p : src) cols.push_back("From " + p + ": setup cost ($)");
  for (const auto& p : src) cols.push_back("From " + p + ": capacity (" + lx.unit + "s)");
  cols.push_back("Demand (" + lx.unit + "s)");
  Table t = table("Links and demand", cap(lx.customer), cols, dst);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      t.cells[j][size_t(i)] = num(cost[i][j]);
      t.cells[j][size_t(m + i)] = num(fixed[i][j]);
      t.cells[j][size_t(2 * m + i)] = num(capa[i][j]);
    }
    t.cells[j][size_t(3 * m)] = num(dem[j]);
  }
  s.tables.push_back(t);
  s.facts.push_back(draw_wording(rng, {"Each " + lx.plant + " can send at most " + num(supply) + " " + lx.unit + "s in total.",
                                       "No " + lx.plant + " ships more than " + num(supply) + " " + lx.unit + "s altogether."}));
  s.rules.push_back(draw_wording(rng, {"Every " + lx.customer + " receives at least its demand.",
                                       "Each " + lx.customer + "'s demand must be met in full (more is allowed)."}));
  s.rules.push_back(draw_wording(rng, {"Only a link that is set up carries " + lx.unit + "s, and at most its capacity.",
                                       "A link that is not opened carries nothing; an opened one carries up to its capacity."}));
  s.objective = draw_wording(rng, {"minimize the setup costs plus the shipping costs, in dollars",
                                   "minimize the total of one-time link costs and per-unit shipping costs, in dollars"});
  s.integrality = draw_wording(rng, {"A link is set up or not; shipped amounts may be fractional.",
                                     "Opening a link is a yes-or-no choice; the amounts shipped need not be whole."});
}

// ---------------------------------------------------------------------------------------
// Multi-commodity flow: several products share the capacity of the same links, through hubs.
void build_multi_commodity(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size, K = 2, m = 2, h = 2;
  Rng& rng = ctx.rng;
  // Version 2: products and towns drawn from the sample's stream.
  auto goods = draw_names(lx.products, K, rng);
  auto places = drawn_places({lx.plant, "hub", lx.customer}, {m, h, n}, rng);
  const std::vector<std::string>& src = places[0];
  const std::vector<std::string>& hub = places[1];
  const std::vector<std::string>& dst = places[2];
  std::vector<std::vector<double>> dem(K, std::vector<double>(n));
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < n; ++j) dem[k][j] = d("demand");
  std::vector<std::vector<double>> c1(m, std::vector<double>(h)), c2(h, std::vector<double>(n));
  for (int i = 0; i < m; ++i)
    for (int k = 0; k < h; ++k) c1[i][k] = d("unit_cost");
  for (int k = 0; k < h; ++k)
    for (int j = 0; j < n; ++j) c2[k][j] = d("unit_cost");
  double total = 0;
  for (const auto& row : dem) total += sum(row);
  const double tight = 0.6 + 0.3 * (1 - ctx.difficulty);
  const double u1 = std::ceil(total * tight);
  std::vector<double> u2(n);
  for (int j = 0; j < n; ++j) u2[j] = std::ceil((dem[0][j] + dem[1][j]) * tight);
  if (infeasible(ctx)) u2[0] = std::max(1.0, std::floor((dem[0][0] + dem[1][0]) * 0.4));
  lp::Model& mod = inst.model;
  mod.objective_name = "transport_cost";
  // a[g][i][k]: product g from plant i to hub k; b[g][k][j]: hub k to customer j.
  std::vector<std::vector<std::vector<int>>> a(K, std::vector<std::vector<int>>(m, std::vector<int>(h)));
  std::vector<std::vector<std::vector<int>>> b(K, std::vector<std::vector<int>>(h, std::vector<int>(n)));
  for (int g = 0; g < K; ++g) {
    for (int i = 0; i < m; ++i)
      for (int k = 0; k < h; ++k)
        a[g][i][k] = mod.add_var("flow[" + key(goods[g]) + "," + key(src[i]) + "," + key(hub[k]) + "]", 0, lp::kInf,
                                 lp::VarType::kContinuous, c1[i][k]);
    for (int k = 0; k < h; ++k)
      for (int j = 0; j < n; ++j)
        b[g][k][j] = mod.add_var("flow[" + key(goods[g]) + "," + key(hub[k]) + "," + key(dst[j]) + "]", 0, lp::kInf,
                                 lp::VarType::kContinuous, c2[k][j]);
  }
  for (int i = 0; i < m; ++i)
    for (int k = 0; k < h; ++k) {
      std::vector<Term> t;
      for (int g = 0; g < K; ++g) t.push_back({a[g][i][k], 1});
      mod.add_le("cap[" + key(src[i]) + "," + key(hub[k]) + "]", t, u1);
    }
  for (int k = 0; k < h; ++k)
    for (int j = 0; j < n; ++j) {
      std::vector<Term> t;
      for (int g = 0; g < K; ++g) t.push_back({b[g][k][j], 1});
      mod.add_le("cap[" + key(hub[k]) + "," + key(dst[j]) + "]", t, u2[j]);
    }
  for (int g = 0; g < K; ++g) {
    for (int k = 0; k < h; ++k) {
      std::vector<Term> t;
      for (int i = 0; i < m; ++i) t.push_back({a[g][i][k], 1});
      for (int j = 0; j < n; ++j) t.push_back({b[g][k][j], -1});
      mod.add_eq("balance[" + key(goods[g]) + "," + key(hub[k]) + "]", t, 0);
    }
    for (int j = 0; j < n; ++j)
      mod.add_ge("demand[" + key(goods[g]) + "," + key(dst[j]) + "]", {{b[g][0][j], 1}, {b[g][1][j], 1}}, dem[g][j]);
  }
  inst.shape = {K * (m * h + h * n), 0, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = draw_wording(rng, {
      lx.company + " ships " + join_and(goods) + " from its " + join_and(src) + " through the " + join_and(hub) + " to the " +
          join_and(dst) + ". Both products travel on the same links and share their capacity; nothing is stored at a hub.",
      "Two products, " + join_and(goods) + ", leave the " + join_and(src) + " of " + lx.company + ", pass through the " +
          join_and(hub) + " and reach the " + join_and(dst) + ". The links are shared by both products, and hubs keep no stock.",
      lx.company + " must route " + join_and(goods) + " to the " + join_and(dst) + ": every " + lx.unit + " starts at the " +
          join_and(src) + " and passes the " + join_and(hub) + ", where nothing stays. Both products use the same links."});
  s.decision = draw_wording(rng, {"how many " + lx.unit + "s of each product to send on each link",
                                  "the flow of each product, in " + lx.unit + "s, on every link",
                                  "for every link and product, the number of " + lx.unit + "s sent"});
  std::vector<std::string> c1cols;
  for (const auto& x : hub) c1cols.push_back("To " + x + " ($ per " + lx.unit + ")");
  Table t1 = table("Cost from each " + lx.plant + " to each hub", "From", c1cols, src);
  for (int i = 0; i < m; ++i)
    for (int k = 0; k < h; ++k) t1.cells[i][k] = num(c1[i][k]);
  std::vector<std::string> c2cols;
  for (const auto& x : hub) c2cols.push_back("From " + x + " ($ per " + lx.unit + ")");
  c2cols.push_back("Capacity of each inbound link (" + lx.unit + "s)");
  for (const auto& g : goods) c2cols.push_back("Demand for " + g + " (" + lx.unit + "s)");
  Table t2 = table("Customers", cap(lx.customer), c2cols, dst);
  for (int j = 0; j < n; ++j) {
    for (int k = 0; k < h; ++k) t2.cells[j][k] = num(c2[k][j]);
    t2.cells[j][h] = num(u2[j]);
    for (int g = 0; g < K; ++g) t2.cells[j][size_t(h + 1 + g)] = num(dem[g][j]);
  }
  s.tables = {t1, t2};
  s.facts.push_back(draw_wording(rng, {"Every link from a " + lx.plant + " to a hub carries at most " + num(u1) + " " + lx.unit +
                                           "s of both products together.",
                                       "No link from a " + lx.plant + " to a hub takes more than " + num(u1) + " " + lx.unit +
                                           "s, counting both products."}));
  s.rules.push_back(draw_wording(rng, {"Each product's flow into a hub equals its flow out.",
                                       "Whatever of a product enters a hub also leaves it."}));
  s.rules.push_back(draw_wording(rng, {"On every link, the products together stay within the link's capacity.",
                                       "The combined flow of the products on a link never exceeds its capacity."}));
  s.rules.push_back(draw_wording(rng, {"Every " + lx.customer + " receives at least its demand for each product.",
                                       "Each " + lx.customer + " gets at least what it asked for of every product."}));
  s.objective = draw_wording(rng, {"minimize the total transport cost, in dollars",
                                   "minimize what the shipments cost altogether, in dollars"});
}

// ---------------------------------------------------------------------------------------
// Capacitated vehicle routing (MTZ load variables): routes from the depot, each within the
// vehicle capacity, at most K vehicles.
void build_vrp(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;  // customers
  const std::vector<std::string> stops = tour_stops(lx, n);
  auto dist = distances(d, n + 1, "distance");
  std::vector<double> q(n + 1, 0);
  for (int i = 1; i <= n; ++i) q[i] = d("load");
  double total = 0, biggest = 0;
  for (int i = 1; i <= n; ++i) total += q[i], biggest = std::max(biggest, q[i]);
  // Two vehicles of ceil(total / 2) + the largest load always suffice (fill the first until the
  // next stop would overflow it); one vehicle one unit short of the total never does.
  const double vehicles = infeasible(ctx) ? 1 : 2;
  const double capa = infeasible(ctx) ? total - 1
                                      : std::ceil((std::ceil(total / 2) + biggest) * (1 + 0.3 * (1 - ctx.difficulty)));
  lp::Model& mod = inst.model;
  mod.objective_name = "route_length";
  std::vector<std::vector<int>> x(n + 1, std::vector<int>(n + 1, -1));
  for (int i = 0; i <= n; ++i)
    for (int j = 0; j <= n; ++j)
      if (i != j) x[i][j] = mod.add_var("go[" + key(stops[i]) + "," + key(stops[j]) + "]", 0, 1, lp::VarType::kBinary, dist[i][j]);
  std::vector<int> u(n + 1, -1);
  for (int i = 1; i <= n; ++i)
    u[i] = mod.add_var("load[" + key(stops[i]) + "]", q[i], capa, lp::VarType::kContinuous, 0);
  for (int i = 1; i <= n; ++i) {
    std::vector<Term> out, in;
    for (int j = 0; j <= n; ++j)
      if (i != j) out.push_back({x[i][j], 1}), in.push_back({x[j][i], 1});
    mod.add_eq("leave[" + key(stops[i]) + "]", out, 1);
    mod.add_eq("enter[" + key(stops[i]) + "]", in, 1);
  }
  std::vector<Term> dep;
  for (int j = 1; j <= n; ++j) dep.push_back({x[0][j], 1});
  mod.add_le("fleet", dep, vehicles);
  for (int i = 1; i <= n; ++i)
    for (int j = 1; j <= n; ++j)
      if (i != j) {
        mod.add_le("load_flow[" + key(stops[i]) + "," + key(stops[j]) + "]", {{u[i], 1}, {u[j], -1}, {x[i][j], capa}}, capa - q[j]);
        inst.implied_numbers.push_back(capa - q[j]);
      }
  inst.shape = {n, 0, n * (n + 1), true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " delivers from its " + stops[0] + " to " +
              join_and(std::vector<std::string>(stops.begin() + 1, stops.end())) +
              ". Each vehicle used leaves the " + lx.plant + ", visits some of them and returns.";
  s.decision = "the route of each vehicle: which legs are driven";
  s.tables.push_back(distance_table("Driving distance in km (the same in both directions)", stops, dist));
  Table t = table("Deliveries", cap(lx.customer), {"Load (" + lx.unit + "s)"},
                  std::vector<std::string>(stops.begin() + 1, stops.end()));
  for (int i = 1; i <= n; ++i) t.cells[size_t(i - 1)] = {num(q[i])};
  s.tables.push_back(t);
  s.facts.push_back("The number of vehicles available is " + num(vehicles) + ".");
  s.facts.push_back("A vehicle carries at most " + num(capa) + " " + lx.unit + "s.");
  s.rules.push_back("Every " + lx.customer + " is visited exactly once.");
  s.rules.push_back("Each route starts and ends at the " + lx.plant + ", and the loads delivered on one route fit in one vehicle.");
  s.rules.push_back("The cumulative load of a route grows by each stop's load along the route, which also rules out loops that skip the " + lx.plant + ".");
  s.objective = "minimize the total distance driven, in km";
  s.integrality = "A leg is either driven or not.";
}

// ---------------------------------------------------------------------------------------
// TSP as a single-commodity flow: the depot sends one unit to every other stop along the tour.
void build_tsp_flow(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;
  Rng& rng = ctx.rng;
  // Version 2: the stops' towns drawn from the sample's stream.
  auto places = drawn_places({lx.plant, lx.customer}, {1, n - 1}, rng);
  std::vector<std::string> stops = places[0];
  stops.insert(stops.end(), places[1].begin(), places[1].end());
  auto dist = distances(d, n, "distance");
  const double big = n - 1;
  lp::Model& mod = inst.model;
  mod.objective_name = "tour_length";
  std::vector<std::vector<int>> x(n, std::vector<int>(n, -1)), f(n, std::vector<int>(n, -1));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j) x[i][j] = mod.add_var("go[" + key(stops[i]) + "," + key(stops[j]) + "]", 0, 1, lp::VarType::kBinary, dist[i][j]);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j && j != 0) f[i][j] = mod.add_var("carry[" + key(stops[i]) + "," + key(stops[j]) + "]", 0, lp::kInf, lp::VarType::kContinuous, 0);
  for (int i = 0; i < n; ++i) {
    std::vector<Term> out, in;
    for (int j = 0; j < n; ++j)
      if (i != j) out.push_back({x[i][j], 1}), in.push_back({x[j][i], 1});
    mod.add_eq("leave[" + key(stops[i]) + "]", out, 1);
    mod.add_eq("enter[" + key(stops[i]) + "]", in, 1);
  }
  for (int i = 0; i < n; ++i)
    for (int j = 1; j < n; ++j)
      if (i != j) mod.add_le("couple[" + key(stops[i]) + "," + key(stops[j]) + "]", {{f[i][j], 1}, {x[i][j], -big}}, 0);
  for (int v = 0; v < n; ++v) {
    std::vector<Term> t;  // inflow minus outflow of tokens
    for (int u = 0; u < n; ++u) {
      if (u != v && v != 0) t.push_back({f[u][v], 1});
      if (u != v && u != 0) t.push_back({f[v][u], -1});
    }
    mod.add_eq("tokens[" + key(stops[v]) + "]", t, v == 0 ? -big : 1);
  }
  inst.shape = {(n - 1) * (n - 1), 0, n * (n - 1), true, lp::Sense::kMinimize};
  inst.implied_numbers = {big};

  Story& s = inst.story;
  s.company = lx.company;
  const std::string others = join_and(std::vector<std::string>(stops.begin() + 1, stops.end()));
  s.setting = draw_wording(rng, {
      "A service van of " + lx.company + " starts at the " + stops[0] + ", must call at " + others +
          " exactly once each, and return.",
      lx.company + " sends a van out from the " + stops[0] + " to visit " + others + ", each once, before it comes back.",
      "Plan one round trip for a van of " + lx.company + ": out of the " + stops[0] + ", past " + others +
          " (every one of them once), and home again."});
  s.decision = draw_wording(rng, {"the legs of one closed tour through every stop",
                                  "which legs between stops the van drives, forming a single round trip",
                                  "the order of the visits, as the legs of one closed tour"});
  s.tables.push_back(distance_table("Travel time in minutes (the same in both directions)", stops, dist));
  s.rules.push_back(draw_wording(rng, {"Each stop is entered exactly once and left exactly once.",
                                       "The van arrives at every stop once and departs from it once."}));
  s.rules.push_back("Model connectivity as a flow: the van leaves the start carrying one token for every other stop, drops one token at each, "
                    "and can carry tokens only on legs it drives (at most one per other stop).");
  s.objective = draw_wording(rng, {"minimize the total travel time, in minutes",
                                   "minimize the minutes spent driving over the whole tour"});
  s.integrality = draw_wording(rng, {"A leg is either driven or not.", "Each leg is a yes-or-no choice."});
}

// ---------------------------------------------------------------------------------------
// Single-source capacitated facility location: every customer served by one open warehouse.
void build_single_source_location(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size, m = n <= 4 ? 3 : 4;
  auto sites = place_names(lx, "warehouse", m);
  auto cust = place_names(lx, lx.customer, n + m);
  cust.erase(cust.begin(), cust.begin() + m);
  std::vector<double> dem(n), fixed(m), capa(m);
  std::vector<std::vector<double>> cost(m, std::vector<double>(n));
  for (int j = 0; j < n; ++j) dem[j] = d("demand");
  for (int i = 0; i < m; ++i) fixed[i] = d("fixed_cost");
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) cost[i][j] = d("service_cost");
  const double total = sum(dem), biggest = *std::max_element(dem.begin(), dem.end());
  // total / m + the largest demand per warehouse always admits a single-source assignment.
  for (int i = 0; i < m; ++i)
    capa[i] = infeasible(ctx) ? std::floor(total / m * 0.8) : std::ceil((total / m + biggest) * (1 + 0.3 * (1 - ctx.difficulty)));
  lp::Model& mod = inst.model;
  mod.objective_name = "total_cost";
  std::vector<int> y(m);
  std::vector<std::vector<int>> x(m, std::vector<int>(n));
  for (int i = 0; i < m; ++i) y[i] = mod.add_var("open[" + key(sites[i]) + "]", 0, 1, lp::VarType::kBinary, fixed[i]);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      x[i][j] = mod.add_var("serve[" + key(sites[i]) + "," + key(cust[j]) + "]", 0, 1, lp::VarType::kBinary, cost[i][j]);
  for (int j = 0; j < n; ++j) {
    std::vector<Term> t;
    for (int i = 0; i < m; ++i) t.push_back({x[i][j], 1});
    mod.add_eq("one_source[" + key(cust[j]) + "]", t, 1);
  }
  for (int i = 0; i < m; ++i) {
    std::vector<Term> t;
    for (int j = 0; j < n; ++j) t.push_back({x[i][j], dem[j]});
    t.push_back({y[i], -capa[i]});
    mod.add_le("capacity[" + key(sites[i]) + "]", t, 0);
  }
  inst.shape = {0, 0, m + m * n, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " can rent " + join_and(sites) + " to serve " + join_and(cust) +
              ". Each " + lx.customer + " must be served entirely from one warehouse.";
  s.decision = "which warehouses to rent and which warehouse serves each " + lx.customer;
  std::vector<std::string> cols = cust;
  cols.push_back("Rent ($)");
  cols.push_back("Capacity (" + lx.unit + "s)");
  Table t = table("Cost of serving each " + lx.customer + " from each warehouse ($), rent and capacity", "Warehouse", cols, sites);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) t.cells[i][j] = num(cost[i][j]);
    t.cells[i][size_t(n)] = num(fixed[i]);
    t.cells[i][size_t(n + 1)] = num(capa[i]);
  }
  Table td = table("Demand", cap(lx.customer), {"Demand (" + lx.unit + "s)"}, cust);
  for (int j = 0; j < n; ++j) td.cells[j] = {num(dem[j])};
  s.tables = {t, td};
  s.rules.push_back("Only a rented warehouse can serve, and the demand it serves may not exceed its capacity.");
  s.rules.push_back("Each " + lx.customer + " is served by exactly one warehouse.");
  s.objective = "minimize the rent plus the service costs, in dollars";
  s.integrality = "Renting and serving are yes-or-no decisions.";
}

// ---------------------------------------------------------------------------------------
// p-median: open exactly p sites and serve every customer from an open one at the least
// cost; infeasible when each site may serve too few customers.
void build_p_median(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const int m = std::min(n, 5);
  const double p = n <= 5 ? 2 : 3;
  auto towns = place_names(lx, "service point", std::max(n, m));
  auto sites = first(towns, m), cust = first(towns, n);
  std::vector<std::vector<double>> cost(m, std::vector<double>(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) cost[i][j] = i == j ? 0 : d("service_cost");
  const double limit = infeasible(ctx) ? std::ceil(double(n) / p) - 1 : 0;  // p * limit < n
  lp::Model& mod = inst.model;
  mod.objective_name = "service_cost";
  std::vector<int> y(m);
  std::vector<std::vector<int>> x(m, std::vector<int>(n));
  for (int i = 0; i < m; ++i) y[i] = mod.add_var("open[" + key(sites[i]) + "]", 0, 1, lp::VarType::kBinary, 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      x[i][j] = mod.add_var("serve[" + key(sites[i]) + "," + key(cust[j]) + "]", 0, 1, lp::VarType::kBinary, cost[i][j]);
  std::vector<Term> all;
  for (int i = 0; i < m; ++i) all.push_back({y[i], 1});
  mod.add_eq("open_count", all, p);
  for (int j = 0; j < n; ++j) {
    std::vector<Term> t;
    for (int i = 0; i < m; ++i) t.push_back({x[i][j], 1});
    mod.add_eq("served[" + key(cust[j]) + "]", t, 1);
  }
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      mod.add_le("only_open[" + key(sites[i]) + "," + key(cust[j]) + "]", {{x[i][j], 1}, {y[i], -1}}, 0);
  if (limit > 0)
    for (int i = 0; i < m; ++i) {
      std::vector<Term> t;
      for (int j = 0; j < n; ++j) t.push_back({x[i][j], 1});
      t.push_back({y[i], -limit});
      mod.add_le("workload[" + key(sites[i]) + "]", t, 0);
    }
  inst.shape = {0, 0, m + m * n, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " serves " + lx.customer + "s in " + join_and(cust) + " and will staff some of the locations " + join_and(sites) + " as service points.";
  s.decision = "which locations to staff and which staffed location serves each " + lx.customer;
  Table t = table("Cost of serving each area from each candidate location ($ per year)", "Location", cust, sites);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) t.cells[i][j] = num(cost[i][j]);
  s.tables.push_back(t);
  s.facts.push_back("Exactly " + num(p) + " locations are to be staffed.");
  if (limit > 0) s.facts.push_back("A staffed location can serve at most " + num(limit) + " areas.");
  s.rules.push_back("Each area is served by exactly one staffed location.");
  s.objective = "minimize the total yearly service cost, in dollars";
  s.integrality = "Staffing and serving are yes-or-no decisions.";
}

// ---------------------------------------------------------------------------------------
// Maximal coverage: open at most k sites to cover as much demand as possible.
void build_max_coverage(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  Rng& rng = ctx.rng;
  const int m = ctx.size, n = std::min(8, m + 2);
  auto sites = place_names(lx, "depot", m);
  auto zones = place_names(lx, "district", n);
  std::vector<double> pop(n);
  for (int j = 0; j < n; ++j) pop[j] = d("population");
  std::vector<std::vector<bool>> covers(m, std::vector<bool>(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) covers[i][j] = rng.chance(0.35) || j == i;
  const double k = std::max(2.0, std::round(m * (0.5 - 0.25 * ctx.difficulty)));
  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMaximize;
  mod.objective_name = "covered_demand";
  std::vector<int> y(m), z(n);
  for (int i = 0; i < m; ++i) y[i] = mod.add_var("open[" + key(sites[i]) + "]", 0, 1, lp::VarType::kBinary, 0);
  for (int j = 0; j < n; ++j) z[j] = mod.add_var("covered[" + key(zones[j]) + "]", 0, 1, lp::VarType::kBinary, pop[j]);
  std::vector<Term> all;
  for (int i = 0; i < m; ++i) all.push_back({y[i], 1});
  mod.add_le("site_limit", all, k);
  for (int j = 0; j < n; ++j) {
    std::vector<Term> t = {{z[j], 1}};
    for (int i = 0; i < m; ++i)
      if (covers[i][j]) t.push_back({y[i], -1});
    mod.add_le("reach[" + key(zones[j]) + "]", t, 0);
  }
  inst.shape = {0, 0, m + n, true, lp::Sense::kMaximize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " will open some of the candidate depots " + join_and(sites) +
              " to reach its " + lx.customer + "s in " + join_and(zones) + ".";
  s.decision = "which depots to open";
  std::vector<std::string> cols = zones;
  Table t = table("Districts each depot can reach within the service time", "Depot", cols, sites);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) t.cells[i][j] = covers[i][j] ? "yes" : "no";
  Table tp = table("Demand", "District", {"Customers"}, zones);
  for (int j = 0; j < n; ++j) tp.cells[j] = {num(pop[j])};
  s.tables = {t, tp};
  s.facts.push_back("At most " + num(k) + " depots can be opened.");
  s.rules.push_back("A district counts as covered when at least one open depot reaches it.");
  s.objective = "maximize the number of customers in covered districts";
  s.maximize = true;
  s.integrality = "Opening a depot and covering a district are yes-or-no.";
}

// ---------------------------------------------------------------------------------------
// Supplier selection: buy the requirement from suppliers with fixed order costs, capacities
// and defect rates, within a limit on expected defects.
void build_supplier_selection(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;
  std::vector<std::string> sup;
  for (const auto& t : place_names(lx, "supplier", n)) sup.push_back(t.substr(0, t.find(' ')) + " Supply");
  std::vector<double> price(n), fixed(n), capa(n), defect(n);
  for (int i = 0; i < n; ++i) price[i] = d("price");
  for (int i = 0; i < n; ++i) fixed[i] = d("fixed_cost");
  for (int i = 0; i < n; ++i) capa[i] = d("capacity");
  for (int i = 0; i < n; ++i) defect[i] = d("defect_rate");
  const double total_cap = sum(capa);
  const double need = infeasible(ctx) ? total_cap + std::ceil(total_cap * 0.1) : std::round(total_cap * (0.4 + 0.4 * ctx.difficulty));
  // The fewest defects any purchase of `need` can have: fill from the best suppliers.
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return defect[a] < defect[b] || (defect[a] == defect[b] && a < b); });
  double left = std::min(need, total_cap), best = 0, worst_fill = 0;
  for (int i : order) best += defect[i] * std::min(left, capa[i]) / 100, left -= std::min(left, capa[i]);
  left = std::min(need, total_cap);
  for (auto it = order.rbegin(); it != order.rend(); ++it) worst_fill += defect[*it] * std::min(left, capa[*it]) / 100, left -= std::min(left, capa[*it]);
  const double limit = std::ceil(best + (worst_fill - best) * 0.6 * (1 - ctx.difficulty));
  lp::Model& mod = inst.model;
  mod.objective_name = "purchase_cost";
  std::vector<int> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = mod.add_var("buy[" + key(sup[i]) + "]", 0, lp::kInf, lp::VarType::kContinuous, price[i]);
  for (int i = 0; i < n; ++i) y[i] = mod.add_var("contract[" + key(sup[i]) + "]", 0, 1, lp::VarType::kBinary, fixed[i]);
  std::vector<Term> all, bad;
  for (int i = 0; i < n; ++i) all.push_back({x[i], 1}), bad.push_back({x[i], defect[i] / 100});
  mod.add_ge("requirement", all, need);
  mod.add_le("defects", bad, limit);
  for (int i = 0; i < n; ++i) mod.add_le("capacity[" + key(sup[i]) + "]", {{x[i], 1}, {y[i], -capa[i]}}, 0);
  inst.shape = {n, 0, n, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " needs " + lx.material + " for next " + lx.period + "'s production and can buy from " +
              join_and(sup) + ". Buying from a supplier at all requires a contract with a fixed fee.";
  s.decision = "which suppliers to contract and how much " + lx.material + " to buy from each";
  Table t = table("Suppliers", "Supplier",
                  {"Price ($ per " + lx.material_unit + ")", "Contract fee ($)", "Capacity (" + lx.material_unit + ")",
                   "Defective share (defective " + lx.material_unit + " per unit bought)"},
                  sup);
  for (int i = 0; i < n; ++i) t.cells[i] = {num(price[i]), num(fixed[i]), num(capa[i]), num(defect[i] / 100)};
  s.tables.push_back(t);
  s.facts.push_back("At least " + num(need) + " " + lx.material_unit + " must be bought in total.");
  s.facts.push_back("The expected defective quantity may be at most " + num(limit) + " " + lx.material_unit + ".");
  s.rules.push_back("Only a contracted supplier delivers, and at most its capacity.");
  s.objective = "minimize the purchase cost plus the contract fees, in dollars";
  s.integrality = "A contract is signed or not; quantities may be fractional.";
}

// ---------------------------------------------------------------------------------------
// Cutting stock in the assignment (Kantorovich) form: pieces cut from stock lengths.
void build_cutting_stock(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const double width = d("stock_length");
  // Piece names drawn from the sample's stream (version 2), not the industry's first n.
  std::vector<std::string> pieces;
  for (const auto& t : draw_names(machine_names(lx, 12), n, ctx.rng)) pieces.push_back("piece " + t.substr(t.rfind(' ') + 1));
  std::vector<double> w(n), dem(n);
  for (int i = 0; i < n; ++i) w[i] = std::min(width, std::round(width * d("piece_share") / 100));
  for (int i = 0; i < n; ++i) dem[i] = d("pieces");
  double area = 0;
  for (int i = 0; i < n; ++i) area += w[i] * dem[i];
  // At least two stock lengths' worth of pieces: the optimum is never the 1 a statement
  // does not state, and infeasible leaves one length fewer on hand than that.
  while (area <= width) dem[0] += 1, area += w[0];
  // First-fit decreasing gives a number of stock lengths that surely suffices.
  std::vector<double> all;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < int(dem[i]); ++k) all.push_back(w[i]);
  std::sort(all.rbegin(), all.rend());
  std::vector<double> bins;
  for (double p : all) {
    bool put = false;
    for (double& b : bins)
      if (b + p <= width) { b += p, put = true; break; }
    if (!put) bins.push_back(p);
  }
  const double lower = std::ceil(area / width);
  const int R = infeasible(ctx) ? int(lower) - 1 : int(bins.size()) + (ctx.difficulty < 0.5 ? 1 : 0);
  std::vector<std::string> stock;
  for (int r = 0; r < std::max(R, 1); ++r) stock.push_back("stock length " + std::string(1, char('A' + r)));
  lp::Model& mod = inst.model;
  mod.objective_name = "stock_used";
  std::vector<int> y(stock.size());
  std::vector<std::vector<int>> x(n, std::vector<int>(stock.size()));
  for (size_t r = 0; r < stock.size(); ++r) y[r] = mod.add_var("use[" + key(stock[r]) + "]", 0, 1, lp::VarType::kBinary, 1);
  for (int i = 0; i < n; ++i)
    for (size_t r = 0; r < stock.size(); ++r)
      x[i][r] = mod.add_var("cut[" + key(pieces[i]) + "," + key(stock[r]) + "]", 0, lp::kInf, lp::VarType::kInteger, 0);
  for (size_t r = 0; r < stock.size(); ++r) {
    std::vector<Term> t;
    for (int i = 0; i < n; ++i) t.push_back({x[i][r], w[i]});
    t.push_back({y[r], -width});
    mod.add_le("length[" + key(stock[r]) + "]", t, 0);
  }
  for (int i = 0; i < n; ++i) {
    std::vector<Term> t;
    for (size_t r = 0; r < stock.size(); ++r) t.push_back({x[i][r], 1});
    mod.add_ge("order[" + key(pieces[i]) + "]", t, dem[i]);
  }
  inst.shape = {0, n * int(stock.size()), int(stock.size()), true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  Rng& rng = ctx.rng;
  s.setting = draw_wording(rng, {
      lx.company + " cuts " + lx.material + " pieces from stock lengths, and has " + join_and(stock) + " on hand.",
      "An order for " + lx.material + " pieces has reached " + lx.company + ", which cuts them from the stock lengths it keeps: " +
          join_and(stock) + ".",
      lx.company + " must fill a cutting order for " + lx.material + " pieces using its stock lengths on hand (" +
          join_and(stock) + "), wasting as few of them as it can."});
  s.decision = draw_wording(rng, {"how many pieces of each kind to cut from each stock length",
                                  "the number of pieces of every kind cut from every stock length",
                                  "for each stock length, how many pieces of each kind come from it"});
  Table t = table("Pieces ordered", "Piece", {"Length (cm)", "Pieces ordered"}, pieces);
  for (int i = 0; i < n; ++i) t.cells[i] = {num(w[i]), num(dem[i])};
  s.tables.push_back(t);
  s.facts.push_back(draw_wording(rng, {"Every stock length is " + num(width) + " cm long.",
                                       "The stock lengths all measure " + num(width) + " cm."}));
  s.rules.push_back(draw_wording(rng, {
      "The pieces cut from a stock length fit within its length, and only a stock length that is used can be cut.",
      "A stock length is cut only if it is used, and the pieces taken from it may not be longer than it in total."}));
  s.rules.push_back(draw_wording(rng, {"At least the ordered number of each piece is cut.",
                                       "Each kind of piece is cut at least as often as ordered."}));
  s.objective = draw_wording(rng, {"minimize the number of stock lengths used",
                                   "minimize how many stock lengths are used"});
  s.integrality = draw_wording(rng, {"Pieces are whole; a stock length is used or not.",
                                     "Only whole pieces are cut, and each stock length is either used or not."});
}

}  // namespace

void add_supply_families(std::vector<const Family*>& out) {
  static const RecipeFamily families[] = {
      {{.family = "multi_echelon_inventory",
        .title = "Two-echelon inventory with backlog over periods",
        .problem_class = ProblemClass::kLP,
        .params = {size_param(2, 12, 3, 8, "number of periods"), difficulty_param(),
                   data_param("demand", true, 0, 100000, 20, 150, "units per period", "customer demand"),
                   data_param("unit_cost", true, 1, 1000, 5, 40, "$ per unit", "cost of making a unit"),
                   data_param("holding_cost", true, 1, 100, 1, 6, "$ per unit per period", "cost of holding a unit"),
                   data_param("backlog_cost", true, 1, 1000, 8, 40, "$ per unit per period", "penalty for a late unit")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_multi_echelon},
      {{.family = "multi_item_lot_sizing",
        .title = "Capacitated multi-item lot sizing with setups",
        .problem_class = ProblemClass::kMILP,
        .version = "2",
        .params = {size_param(2, 6, 2, 5, "number of periods"), difficulty_param(),
                   data_param("demand", true, 0, 10000, 10, 80, "units per period", "demand for a product"),
                   data_param("hours_per_unit", true, 1, 100, 1, 4, "hours per unit", "machine time of a unit"),
                   data_param("setup_cost", true, 1, 100000, 80, 500, "$", "cost of a setup"),
                   data_param("holding_cost", true, 1, 100, 1, 5, "$ per unit per period", "cost of holding a unit")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_multi_item_lot_sizing},
      {{.family = "aggregate_planning",
        .title = "Aggregate production planning (regular time, overtime, subcontracting, stock)",
        .problem_class = ProblemClass::kLP,
        .params = {size_param(2, 12, 3, 8, "number of periods"), difficulty_param(),
                   data_param("demand", true, 1, 100000, 50, 300, "units per period", "demand"),
                   data_param("unit_cost", true, 1, 1000, 10, 40, "$ per unit", "regular-time cost"),
                   data_param("premium", true, 1, 1000, 2, 15, "$ per unit", "extra cost of the next source"),
                   data_param("holding_cost", true, 1, 100, 1, 6, "$ per unit per period", "cost of holding a unit")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_aggregate_planning},
      {{.family = "network_design",
        .title = "Fixed-charge network design (links built before use)",
        .problem_class = ProblemClass::kMILP,
        .version = "2",
        .params = {size_param(2, 6, 2, 5, "number of customers"), difficulty_param(),
                   data_param("demand", true, 1, 100000, 20, 120, "units", "customer demand"),
                   data_param("unit_cost", true, 1, 1000, 1, 20, "$ per unit", "cost per unit on a link"),
                   data_param("fixed_cost", true, 1, 1000000, 100, 1500, "$", "cost of setting up a link")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_network_design},
      {{.family = "multi_commodity_flow",
        .title = "Multi-commodity flow through hubs with shared link capacities",
        .problem_class = ProblemClass::kLP,
        .version = "2",
        .params = {size_param(2, 5, 2, 4, "number of customers"), difficulty_param(),
                   data_param("demand", true, 1, 100000, 10, 80, "units", "demand for a product"),
                   data_param("unit_cost", true, 1, 1000, 1, 20, "$ per unit", "cost per unit on a link")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_multi_commodity},
      {{.family = "vrp_mtz",
        .title = "Capacitated vehicle routing (MTZ load variables)",
        .problem_class = ProblemClass::kMILP,
        .params = {size_param(3, 5, 3, 4, "number of customers"), difficulty_param(),
                   data_param("distance", true, 1, 10000, 4, 60, "km", "distance between two stops"),
                   data_param("load", true, 1, 1000, 2, 15, "units", "load delivered to a customer")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_vrp},
      {{.family = "tsp_flow",
        .title = "Travelling salesman tour (single-commodity flow formulation)",
        .problem_class = ProblemClass::kMILP,
        .version = "2",
        .params = {size_param(3, 6, 4, 6, "number of stops including the start"), difficulty_param(),
                   data_param("distance", true, 1, 10000, 5, 90, "minutes", "travel between two stops")},
        .modes = {FeasibilityMode::kFeasible}},
       lexicon_industries(), build_tsp_flow},
      {{.family = "single_source_location",
        .title = "Single-source capacitated facility location",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(3, 7, 3, 6, "number of customers"), difficulty_param(),
                   data_param("demand", true, 1, 100000, 10, 80, "units", "customer demand"),
                   data_param("fixed_cost", true, 1, 1000000, 300, 3000, "$", "rent of a warehouse"),
                   data_param("service_cost", true, 1, 100000, 20, 400, "$", "cost of serving a customer from a warehouse")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_single_source_location},
      {{.family = "p_median",
        .title = "p-median location",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(3, 8, 4, 7, "number of areas"), difficulty_param(),
                   data_param("service_cost", true, 1, 100000, 10, 200, "$ per year", "cost of serving an area from a location")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_p_median},
      {{.family = "max_coverage",
        .title = "Maximal covering location",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(3, 8, 4, 7, "number of candidate depots"), difficulty_param(),
                   data_param("population", true, 1, 1000000, 50, 900, "customers", "customers in a district")},
        .modes = {FeasibilityMode::kFeasible}},
       lexicon_industries(), build_max_coverage},
      {{.family = "supplier_selection",
        .title = "Supplier selection with contract fees and a quality limit",
        .problem_class = ProblemClass::kMILP,
        .params = {size_param(2, 8, 3, 6, "number of suppliers"), difficulty_param(),
                   data_param("price", true, 1, 10000, 5, 40, "$ per unit", "price of the material"),
                   data_param("fixed_cost", true, 1, 1000000, 100, 2000, "$", "contract fee"),
                   data_param("capacity", true, 1, 100000, 50, 400, "units", "most a supplier delivers"),
                   data_param("defect_rate", true, 1, 50, 1, 12, "defective units per 100", "defect rate")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_supplier_selection},
      {{.family = "cutting_stock",
        .title = "Cutting stock (assignment form)",
        .problem_class = ProblemClass::kMILP,
        .version = "2",
        .params = {size_param(2, 4, 2, 3, "number of piece kinds"), difficulty_param(),
                   data_param("stock_length", true, 10, 10000, 200, 600, "cm", "length of a stock piece"),
                   data_param("piece_share", true, 5, 100, 15, 55, "percent of the stock length", "length of a piece"),
                   data_param("pieces", true, 1, 100, 1, 3, "pieces", "pieces ordered of a kind")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_cutting_stock},
  };
  for (const RecipeFamily& f : families) out.push_back(&f);
}

}  // namespace trex::ordata
