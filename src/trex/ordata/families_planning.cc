// Five more families on the industry lexicon: the shortest delivery route through junctions
// (LP, flow form), make-or-buy (LP), cargo loading with whole counts (IP), inspection cover of
// conveyor links (vertex cover, IP) and fleet mix (IP).
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
bool infeasible(const BuildContext& ctx) { return ctx.mode == FeasibilityMode::kInfeasible; }

// ---------------------------------------------------------------------------------------
// Shortest route from the plant to a customer through junction towns, as a unit flow on a
// directed road network (each junction reachable and able to reach the customer).
void build_shortest_path(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  Rng& rng = ctx.rng;
  const int n = ctx.size;  // junctions
  auto towns = place_names(lx, "junction", n + 2);
  std::vector<std::string> nodes = {place_names(lx, lx.plant, 1)[0]};
  for (int i = 0; i < n; ++i) nodes.push_back(towns[size_t(i)]);
  nodes.push_back(place_names(lx, lx.customer, n + 3)[size_t(n + 2)]);
  const int s = 0, t = n + 1;
  struct Road { int a, b; double km; };
  std::vector<Road> roads;
  for (int i = 1; i <= n; ++i) roads.push_back({s, i, 0}), roads.push_back({i, t, 0});
  for (int i = 1; i <= n; ++i)
    for (int j = 1; j <= n; ++j)
      if (i != j && rng.chance(0.3 + 0.3 * ctx.difficulty)) roads.push_back({i, j, 0});
  for (Road& r : roads) r.km = d("distance");
  lp::Model& mod = inst.model;
  mod.objective_name = "route_length";
  std::vector<int> x;
  for (const Road& r : roads)
    x.push_back(mod.add_var("drive[" + key(nodes[r.a]) + "," + key(nodes[r.b]) + "]", 0, lp::kInf, lp::VarType::kContinuous, r.km));
  for (int v = 0; v <= t; ++v) {
    std::vector<Term> terms;
    for (size_t e = 0; e < roads.size(); ++e) {
      if (roads[e].a == v) terms.push_back({x[e], 1});
      if (roads[e].b == v) terms.push_back({x[e], -1});
    }
    mod.add_eq("flow[" + key(nodes[v]) + "]", terms, v == s ? 1 : v == t ? -1 : 0);
  }
  inst.shape = {int(roads.size()), 0, 0, true, lp::Sense::kMinimize};

  Story& st = inst.story;
  st.company = lx.company;
  st.setting = "A truck of " + lx.company + " must drive from the " + nodes[s] + " to the " + nodes[t] +
               ", on one-way roads through the junctions " + join_and(std::vector<std::string>(nodes.begin() + 1, nodes.end() - 1)) + ".";
  st.decision = "which roads the truck takes";
  std::vector<std::string> rows;
  for (const Road& r : roads) rows.push_back(nodes[r.a] + " to " + nodes[r.b]);
  Table tb = table("One-way roads", "Road", {"Length (km)"}, rows);
  for (size_t e = 0; e < roads.size(); ++e) tb.cells[e] = {num(roads[e].km)};
  st.tables.push_back(tb);
  st.rules.push_back("The truck leaves the start once, arrives at the destination once, and leaves every junction it enters.");
  st.rules.push_back("Model the route as one unit of flow from the start to the destination; fractions need not be ruled out, since a shortest route is always a whole one.");
  st.objective = "minimize the length of the route, in km";
}

// ---------------------------------------------------------------------------------------
// Make or buy: each product is made in house (using two resources) or bought from a supplier
// at a higher price, up to the supplier's limit; demand must be met.
void build_make_or_buy(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;
  auto items = first(lx.products, n);
  const std::vector<std::string> res = {lx.machine + " hours", "labour hours"};
  std::vector<double> dem(n), cost(n), buy(n), limit(n);
  std::vector<std::vector<double>> use(2, std::vector<double>(n));
  for (int i = 0; i < n; ++i) dem[i] = d("demand");
  for (int i = 0; i < n; ++i) cost[i] = d("unit_cost");
  for (int i = 0; i < n; ++i) buy[i] = cost[i] + d("markup");
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < n; ++i) use[r][i] = d("hours_per_unit");
  std::vector<double> avail(2);
  for (int r = 0; r < 2; ++r) {
    double full = 0;
    for (int i = 0; i < n; ++i) full += use[r][i] * dem[i];
    avail[r] = std::max(1.0, std::round(full * (0.8 - 0.5 * ctx.difficulty)));
  }
  // Feasible: the supplier alone can cover all demand; infeasible: it covers half, and the
  // first resource cannot make the rest.
  for (int i = 0; i < n; ++i) limit[i] = infeasible(ctx) ? std::floor(dem[i] / 2) : dem[i];
  if (infeasible(ctx)) {
    double rest = 0;
    for (int i = 0; i < n; ++i) rest += use[0][i] * (dem[i] - limit[i]);
    avail[0] = std::max(1.0, std::floor(rest * 0.5));
  }
  lp::Model& mod = inst.model;
  mod.objective_name = "supply_cost";
  std::vector<int> mk(n), bu(n);
  for (int i = 0; i < n; ++i) {
    mk[i] = mod.add_var("make[" + key(items[i]) + "]", 0, lp::kInf, lp::VarType::kContinuous, cost[i]);
    bu[i] = mod.add_var("buy[" + key(items[i]) + "]", 0, limit[i], lp::VarType::kContinuous, buy[i]);
    mod.add_ge("demand[" + key(items[i]) + "]", {{mk[i], 1}, {bu[i], 1}}, dem[i]);
  }
  for (int r = 0; r < 2; ++r) {
    std::vector<Term> t;
    for (int i = 0; i < n; ++i) t.push_back({mk[i], use[r][i]});
    mod.add_le(key(res[size_t(r)]), t, avail[r]);
  }
  inst.shape = {2 * n, 0, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " must supply " + join_and(items) + " next " + lx.period +
              ". Each can be made in house or bought from an outside supplier.";
  s.decision = "how many " + lx.unit + "s of each to make and to buy (fractions allowed)";
  Table t = table("Products", cap(lx.product),
                  {"Demand (" + lx.unit + "s)", "Cost to make ($ per " + lx.unit + ")", "Price to buy ($ per " + lx.unit + ")",
                   "Most the supplier delivers (" + lx.unit + "s)", cap(res[0]) + " per " + lx.unit, "Labour hours per " + lx.unit},
                  items);
  for (int i = 0; i < n; ++i) t.cells[i] = {num(dem[i]), num(cost[i]), num(buy[i]), num(limit[i]), num(use[0][i]), num(use[1][i])};
  s.tables.push_back(t);
  s.facts.push_back("In house there are " + num(avail[0]) + " " + res[0] + " and " + num(avail[1]) + " labour hours.");
  s.rules.push_back("Made plus bought covers each product's demand.");
  s.rules.push_back("Making may not use more hours than there are, and buying may not exceed the supplier's limit.");
  s.objective = "minimize the total cost of making and buying, in dollars";
}

// ---------------------------------------------------------------------------------------
// Cargo loading: whole counts of each product on one truck, within weight and volume.
void build_cargo_loading(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  const int n = ctx.size;
  auto items = first(lx.products, n);
  std::vector<double> val(n), wt(n), vol(n), most(n), least(n, 0);
  for (int i = 0; i < n; ++i) val[i] = d("value");
  for (int i = 0; i < n; ++i) wt[i] = d("weight");
  for (int i = 0; i < n; ++i) vol[i] = d("volume");
  for (int i = 0; i < n; ++i) most[i] = d("available");
  double w_all = 0, v_all = 0;
  for (int i = 0; i < n; ++i) w_all += wt[i] * most[i], v_all += vol[i] * most[i];
  double wcap = std::round(w_all * (0.6 - 0.3 * ctx.difficulty)), vcap = std::round(v_all * (0.7 - 0.3 * ctx.difficulty));
  if (infeasible(ctx)) least = most, wcap = std::max(1.0, std::floor(w_all * 0.5));
  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMaximize;
  mod.objective_name = "load_value";
  std::vector<int> x(n);
  std::vector<Term> tw, tv;
  for (int i = 0; i < n; ++i) {
    x[i] = mod.add_var("load[" + key(items[i]) + "]", least[i], most[i], lp::VarType::kInteger, val[i]);
    tw.push_back({x[i], wt[i]}), tv.push_back({x[i], vol[i]});
  }
  mod.add_le("weight", tw, wcap);
  mod.add_le("volume", tv, vcap);
  inst.shape = {0, n, 0, true, lp::Sense::kMaximize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " is loading one truck with " + lx.unit + "s of " + join_and(items) + ".";
  s.decision = "how many " + lx.unit + "s of each product to load";
  std::vector<std::string> cols = {"Value ($ per " + lx.unit + ")", "Weight (kg per " + lx.unit + ")",
                                   "Volume (litres per " + lx.unit + ")", cap(lx.unit) + "s available"};
  if (infeasible(ctx)) cols.push_back(cap(lx.unit) + "s promised to the customer");
  Table t = table("Products", cap(lx.product), cols, items);
  for (int i = 0; i < n; ++i) {
    t.cells[i] = {num(val[i]), num(wt[i]), num(vol[i]), num(most[i])};
    if (infeasible(ctx)) t.cells[i].push_back(num(least[i]));
  }
  s.tables.push_back(t);
  s.facts.push_back("The truck carries at most " + num(wcap) + " kg and " + num(vcap) + " litres.");
  s.rules.push_back("The load stays within the truck's weight and volume limits and the units available.");
  if (infeasible(ctx)) s.rules.push_back("Every promised unit must be loaded.");
  s.objective = "maximize the value of the load, in dollars";
  s.maximize = true;
  s.integrality = "Only whole " + lx.unit + "s are loaded.";
}

// ---------------------------------------------------------------------------------------
// Inspection cover (weighted vertex cover): every conveyor link between two stations is
// watched by an inspector at one of its ends. Infeasible: a cap on inspectors below the size
// of a set of links that share no station (each needs its own inspector).
void build_inspection_cover(const BuildContext& ctx, Instance& inst) {
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  Rng& rng = ctx.rng;
  const int n = ctx.size;
  std::vector<std::string> st;
  for (const auto& m : machine_names(lx, n)) st.push_back("station " + m.substr(m.rfind(' ') + 1));
  std::vector<std::pair<int, int>> links;
  for (int i = 0; i + 1 < n; i += 2) links.push_back({i, i + 1});  // a matching of floor(n/2) links
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (!(j == i + 1 && i % 2 == 0) && rng.chance(0.25 + 0.3 * ctx.difficulty)) links.push_back({i, j});
  std::vector<double> cost(n);
  for (int i = 0; i < n; ++i) cost[i] = d("cost");
  const double cap_inspectors = infeasible(ctx) ? double(n / 2 - 1) : 0;
  lp::Model& mod = inst.model;
  mod.objective_name = "inspection_cost";
  std::vector<int> y(n);
  for (int i = 0; i < n; ++i) y[i] = mod.add_var("inspect[" + key(st[i]) + "]", 0, 1, lp::VarType::kBinary, cost[i]);
  std::vector<std::string> rows;
  for (auto [a, b] : links) {
    mod.add_ge("watch[" + key(st[a]) + "," + key(st[b]) + "]", {{y[a], 1}, {y[b], 1}}, 1);
    rows.push_back(st[a] + " and " + st[b]);
  }
  if (infeasible(ctx)) {
    std::vector<Term> all;
    for (int i = 0; i < n; ++i) all.push_back({y[i], 1});
    mod.add_le("inspectors", all, cap_inspectors);
  }
  inst.shape = {0, 0, n, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = "Conveyor links join stations of the " + lx.plant + " of " + lx.company + ". An inspector placed at a station watches every link that touches it.";
  s.decision = "at which stations to place inspectors";
  Table t = table("Cost of an inspector at each station ($ per shift)", "Station", {"Cost ($)"}, st);
  for (int i = 0; i < n; ++i) t.cells[i] = {num(cost[i])};
  s.tables.push_back(t);
  s.facts.push_back("The conveyor links join " + join_and(rows) + ".");
  if (infeasible(ctx)) s.facts.push_back("At most " + num(cap_inspectors) + " inspectors are available.");
  s.rules.push_back("Every link is watched from at least one of its two stations.");
  s.objective = "minimize the cost of the inspectors, in dollars per shift";
  s.integrality = "A station has an inspector or not.";
}

// ---------------------------------------------------------------------------------------
// Fleet mix: whole numbers of vehicles of each type, enough capacity for the week's volume and
// enough refrigerated capacity, at least cost.
void build_fleet_mix(const BuildContext& ctx, Instance& inst) {
  static const std::vector<std::string> types = {"small van", "large van", "box truck", "rigid truck", "articulated truck", "cargo bike"};
  const Lexicon& lx = lex_of(ctx);
  Draw& d = ctx.draw;
  Rng& rng = ctx.rng;
  const int n = ctx.size;
  auto kinds = first(types, n);
  std::vector<double> capa(n), rent(n), avail(n), cold(n);
  for (int i = 0; i < n; ++i) capa[i] = d("capacity");
  for (int i = 0; i < n; ++i) rent[i] = d("rent");
  for (int i = 0; i < n; ++i) avail[i] = d("available");
  for (int i = 0; i < n; ++i) cold[i] = rng.chance(0.5) || i == 0 ? 1 : 0;
  double all = 0, all_cold = 0;
  for (int i = 0; i < n; ++i) all += capa[i] * avail[i], all_cold += capa[i] * avail[i] * cold[i];
  const double need = infeasible(ctx) ? all + 1 : std::round(all * (0.3 + 0.4 * ctx.difficulty));
  const double need_cold = std::max(1.0, std::round(std::min(need, all_cold) * 0.4));
  lp::Model& mod = inst.model;
  mod.objective_name = "fleet_cost";
  std::vector<int> x(n);
  std::vector<Term> tc, tf;
  for (int i = 0; i < n; ++i) {
    x[i] = mod.add_var("rent[" + key(kinds[i]) + "]", 0, avail[i], lp::VarType::kInteger, rent[i]);
    tc.push_back({x[i], capa[i]});
    if (cold[i] != 0) tf.push_back({x[i], capa[i]});
  }
  mod.add_ge("volume", tc, need);
  mod.add_ge("refrigerated", tf, need_cold);
  inst.shape = {0, n, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = lx.company;
  s.setting = lx.company + " rents vehicles for next " + lx.period + "'s deliveries of its " + lx.product + "s: " + join_and(kinds) + ".";
  s.decision = "how many vehicles of each type to rent";
  Table t = table("Vehicle types", "Type", {"Capacity (" + lx.unit + "s)", "Rent ($)", "Available", "Refrigerated"}, kinds);
  for (int i = 0; i < n; ++i) t.cells[i] = {num(capa[i]), num(rent[i]), num(avail[i]), cold[i] != 0 ? "yes" : "no"};
  s.tables.push_back(t);
  s.facts.push_back("The rented fleet must carry at least " + num(need) + " " + lx.unit + "s, of which at least " + num(need_cold) +
                    " need refrigerated vehicles.");
  s.rules.push_back("No more vehicles of a type can be rented than are available.");
  s.objective = "minimize the total rent, in dollars";
  s.integrality = "Vehicles are rented whole.";
}

}  // namespace

void add_planning_families(std::vector<const Family*>& out) {
  static const RecipeFamily families[] = {
      {{.family = "shortest_path",
        .title = "Shortest route through a one-way road network (unit flow)",
        .problem_class = ProblemClass::kLP,
        .params = {size_param(2, 8, 3, 7, "number of junctions"), difficulty_param(),
                   data_param("distance", true, 1, 10000, 3, 60, "km", "length of a road")},
        .modes = {FeasibilityMode::kFeasible}},
       lexicon_industries(), build_shortest_path},
      {{.family = "make_or_buy",
        .title = "Make or buy with in-house capacity and supplier limits",
        .problem_class = ProblemClass::kLP,
        .params = {size_param(2, 8, 2, 6, "number of products"), difficulty_param(),
                   data_param("demand", true, 1, 100000, 20, 200, "units", "demand for a product"),
                   data_param("unit_cost", true, 1, 1000, 5, 60, "$ per unit", "cost to make"),
                   data_param("markup", true, 1, 1000, 2, 25, "$ per unit", "extra price of buying"),
                   data_param("hours_per_unit", true, 1, 100, 1, 6, "hours per unit", "time to make a unit")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_make_or_buy},
      {{.family = "cargo_loading",
        .title = "Cargo loading with whole counts (bounded knapsack, two limits)",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(2, 8, 3, 7, "number of products"), difficulty_param(),
                   data_param("value", true, 1, 100000, 20, 300, "$ per unit", "value of a unit"),
                   data_param("weight", true, 1, 10000, 5, 80, "kg per unit", "weight of a unit"),
                   data_param("volume", true, 1, 10000, 5, 60, "litres per unit", "volume of a unit"),
                   data_param("available", true, 1, 1000, 2, 12, "units", "units available")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_cargo_loading},
      {{.family = "inspection_cover",
        .title = "Inspection cover of conveyor links (weighted vertex cover)",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(4, 10, 4, 9, "number of stations"), difficulty_param(),
                   data_param("cost", true, 1, 10000, 50, 400, "$ per shift", "cost of an inspector")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_inspection_cover},
      {{.family = "fleet_mix",
        .title = "Fleet mix (whole vehicles with capacity and refrigeration needs)",
        .problem_class = ProblemClass::kIP,
        .params = {size_param(2, 6, 2, 6, "number of vehicle types"), difficulty_param(),
                   data_param("capacity", true, 1, 10000, 10, 120, "units", "capacity of a vehicle"),
                   data_param("rent", true, 1, 100000, 100, 1500, "$", "rent of a vehicle for the period"),
                   data_param("available", true, 1, 100, 1, 8, "vehicles", "vehicles of a type available")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       lexicon_industries(), build_fleet_mix},
  };
  for (const RecipeFamily& f : families) out.push_back(&f);
}

}  // namespace trex::ordata
