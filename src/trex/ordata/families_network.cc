// Families on networks: transportation (LP), transshipment / min-cost flow (LP), max flow
// (LP), assignment (IP) and the travelling salesman problem in the MTZ form (MILP).
#include <algorithm>
#include <cmath>

#include "trex/ordata/families.h"
#include "trex/ordata/family_recipe.h"
#include "trex/ordata/family_util.h"

namespace trex::ordata {

namespace {

using lp::Term;

struct ShipFlavor {
  std::string industry;
  std::string company;
  std::string good;   // "pallets of cement"
  std::string unit;   // "pallet"
  std::string source; // "plant"
  std::vector<std::string> sources;
  std::string hub;
  std::vector<std::string> hubs;
  std::string dest;   // "store"
  std::vector<std::string> dests;
};

const std::vector<ShipFlavor>& ship_flavors() {
  static const std::vector<ShipFlavor> f = {
      {"building materials", "Granite Ridge Cement", "pallets of cement", "pallet", "plant",
       {"Northgate plant", "Riverside plant", "Hillcrest plant", "Lakeshore plant"}, "depot",
       {"Central depot", "East depot", "West depot"}, "construction site",
       {"Harbor Tower site", "Elm Street site", "Airport site", "Stadium site", "Mall site", "Bridge site", "School site", "Hospital site"}},
      {"grocery retail", "FreshCart Markets", "crates of produce", "crate", "farm",
       {"Sunny Acres farm", "Valley View farm", "Orchard Hill farm", "Meadowbrook farm"}, "cross-dock",
       {"North cross-dock", "South cross-dock", "Metro cross-dock"}, "store",
       {"Downtown store", "Uptown store", "Suburb store", "Campus store", "Harbor store", "Parkside store", "Mill Road store", "Station store"}},
      {"energy", "Continental Gas", "thousand cubic metres of gas", "thousand cubic metres", "gas field",
       {"Alder field", "Birch field", "Cedar field", "Dune field"}, "compressor station",
       {"Ridge station", "Canyon station", "Plains station"}, "city gate",
       {"Ashford gate", "Brookton gate", "Carlow gate", "Dunmore gate", "Easton gate", "Fairview gate", "Glenwood gate", "Hartley gate"}},
      {"medical supplies", "CareLink Distribution", "boxes of medical supplies", "box", "warehouse",
       {"Lincoln warehouse", "Madison warehouse", "Jefferson warehouse", "Monroe warehouse"}, "regional hub",
       {"Capital hub", "Coastal hub", "Mountain hub"}, "clinic",
       {"Oak clinic", "Pine clinic", "Maple clinic", "Willow clinic", "Cedar clinic", "Aspen clinic", "Birch clinic", "Spruce clinic"}},
      {"beverage distribution", "ClearSpring Water", "cases of bottled water", "case", "bottling plant",
       {"Glacier plant", "Summit plant", "Spring plant", "Canyon plant"}, "distribution centre",
       {"Northern centre", "Southern centre", "Eastern centre"}, "retailer",
       {"Corner Market", "Big Box Depot", "Fuel Stop", "Campus Shop", "Airport Kiosk", "Beach Stand", "Gym Cafe", "Office Pantry"}},
      {"home furnishings", "Nestwell Home", "flat-pack kits", "kit", "factory",
       {"Ashgrove factory", "Beacon factory", "Cobalt factory", "Dovecote factory"}, "warehouse",
       {"Northern warehouse", "Midland warehouse", "Coastal warehouse"}, "showroom",
       {"Abbey showroom", "Bayside showroom", "Crown showroom", "Dockside showroom", "Eden showroom", "Forum showroom", "Gateway showroom", "Hilltop showroom"}},
      {"humanitarian relief", "Relief Without Borders", "tonnes of relief supplies", "tonne", "supply port",
       {"Harbour port", "Delta port", "Cape port", "Bay port"}, "staging camp",
       {"Camp Amber", "Camp Basalt", "Camp Cypress"}, "village",
       {"Akuri village", "Bameno village", "Chalo village", "Dembi village", "Eluru village", "Fenwa village", "Gasa village", "Hosa village"}},
      {"auto parts", "Torque Auto Parts", "crates of spare parts", "crate", "parts plant",
       {"Anvil plant", "Bolt plant", "Crank plant", "Drive plant"}, "cross-dock",
       {"Interstate cross-dock", "Lakeside cross-dock", "Prairie cross-dock"}, "dealership",
       {"Avenue dealership", "Boulevard dealership", "Canal dealership", "Downs dealership", "Esplanade dealership", "Fairway dealership", "Greenway dealership", "Highway dealership"}},
  };
  return f;
}

// ---------------------------------------------------------------------------------------
void build_transportation(const BuildContext& ctx, Instance& inst) {
  const ShipFlavor& f = ship_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const double diff = ctx.difficulty;
  const int m = std::min(4, 2 + n / 4);
  auto src = first(f.sources, m);
  auto dst = first(f.dests, n);
  std::vector<double> dem(n), sup(m);
  std::vector<std::vector<double>> cost(m, std::vector<double>(n));
  for (int j = 0; j < n; ++j) dem[j] = d("demand");
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) cost[i][j] = d("unit_cost");
  double total = 0;
  for (double v : dem) total += v;
  // Supply exceeds demand by a slack that shrinks with difficulty (or falls short on purpose).
  double factor = mode == FeasibilityMode::kInfeasible ? 0.8 : 1.05 + 0.6 * (1 - diff);
  for (int i = 0; i < m; ++i) sup[i] = std::max(1.0, std::ceil(total * factor / m));

  lp::Model& mod = inst.model;
  mod.objective_name = "shipping_cost";
  std::vector<std::vector<int>> x(m, std::vector<int>(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      x[i][j] = mod.add_var("ship[" + key(src[i]) + "," + key(dst[j]) + "]", 0, lp::kInf,
                            lp::VarType::kContinuous, cost[i][j]);
  for (int i = 0; i < m; ++i) {
    std::vector<Term> t;
    for (int j = 0; j < n; ++j) t.push_back({x[i][j], 1});
    mod.add_le("supply[" + key(src[i]) + "]", t, sup[i]);
  }
  for (int j = 0; j < n; ++j) {
    std::vector<Term> t;
    for (int i = 0; i < m; ++i) t.push_back({x[i][j], 1});
    mod.add_ge("demand[" + key(dst[j]) + "]", t, dem[j]);
  }
  inst.shape = {m * n, 0, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = f.company;
  s.setting = std::string(f.company) + " ships " + f.good + " from its " + f.source + "s (" + join_and(src) +
              ") to each " + f.dest + " (" + join_and(dst) + ").";
  s.decision = std::string("how many ") + f.unit + "s to ship on each route (fractions allowed)";
  std::vector<std::string> cols;
  for (const auto& x2 : dst) cols.push_back(x2);
  cols.push_back("Supply (" + std::string(f.unit) + "s)");
  Table t = table("Shipping cost in dollars per " + std::string(f.unit) + ", and supply", "From", cols, src);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) t.cells[i][j] = num(cost[i][j]);
    t.cells[i][n] = num(sup[i]);
  }
  s.tables.push_back(t);
  Table td = table("Requirements", cap(f.dest), {"Demand (" + std::string(f.unit) + "s)"}, dst);
  for (int j = 0; j < n; ++j) td.cells[j] = {num(dem[j])};
  s.tables.push_back(td);
  s.rules.push_back(std::string("No ") + f.source + " may ship more than its supply.");
  s.rules.push_back(std::string("Every ") + f.dest + " must receive at least its demand.");
  s.objective = "minimize the total shipping cost in dollars";
}

// ---------------------------------------------------------------------------------------
void build_min_cost_flow(const BuildContext& ctx, Instance& inst) {
  const ShipFlavor& f = ship_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Rng& rng = ctx.rng;
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const double diff = ctx.difficulty;
  const int m = 2, h = n <= 3 ? 2 : 3;
  auto src = draw_names(f.sources, m, rng), hub = draw_names(f.hubs, h, rng), dst = draw_names(f.dests, n, rng);
  std::vector<double> dem(n);
  for (int j = 0; j < n; ++j) dem[j] = d("demand");
  double total = 0;
  for (double v : dem) total += v;
  std::vector<std::vector<double>> c1(m, std::vector<double>(h)), c2(h, std::vector<double>(n));
  std::vector<std::vector<double>> u1(m, std::vector<double>(h)), u2(h, std::vector<double>(n));
  for (int i = 0; i < m; ++i)
    for (int k = 0; k < h; ++k) c1[i][k] = d("unit_cost");
  for (int k = 0; k < h; ++k)
    for (int j = 0; j < n; ++j) c2[k][j] = d("unit_cost");
  // Capacities: any two hubs can together serve a customer; tighter with difficulty.
  for (int i = 0; i < m; ++i)
    for (int k = 0; k < h; ++k) u1[i][k] = std::ceil(total * (0.9 - 0.3 * diff));
  for (int k = 0; k < h; ++k)
    for (int j = 0; j < n; ++j) u2[k][j] = std::ceil(dem[j] * (1.0 - 0.4 * diff) * rng.real(0.9, 1.1, 2));
  std::vector<double> sup(m);
  double factor = mode == FeasibilityMode::kInfeasible ? 0.4 : 0.6 + 0.3 * (1 - diff);
  for (int i = 0; i < m; ++i) sup[i] = std::ceil(total * factor);

  lp::Model& mod = inst.model;
  mod.objective_name = "flow_cost";
  std::vector<std::vector<int>> a(m, std::vector<int>(h)), b(h, std::vector<int>(n));
  for (int i = 0; i < m; ++i)
    for (int k = 0; k < h; ++k)
      a[i][k] = mod.add_var("flow[" + key(src[i]) + "," + key(hub[k]) + "]", 0, u1[i][k], lp::VarType::kContinuous, c1[i][k]);
  for (int k = 0; k < h; ++k)
    for (int j = 0; j < n; ++j)
      b[k][j] = mod.add_var("flow[" + key(hub[k]) + "," + key(dst[j]) + "]", 0, u2[k][j], lp::VarType::kContinuous, c2[k][j]);
  for (int i = 0; i < m; ++i) {
    std::vector<Term> t;
    for (int k = 0; k < h; ++k) t.push_back({a[i][k], 1});
    mod.add_le("supply[" + key(src[i]) + "]", t, sup[i]);
  }
  for (int k = 0; k < h; ++k) {
    std::vector<Term> t;
    for (int i = 0; i < m; ++i) t.push_back({a[i][k], 1});
    for (int j = 0; j < n; ++j) t.push_back({b[k][j], -1});
    mod.add_eq("balance[" + key(hub[k]) + "]", t, 0);
  }
  for (int j = 0; j < n; ++j) {
    std::vector<Term> t;
    for (int k = 0; k < h; ++k) t.push_back({b[k][j], 1});
    mod.add_ge("demand[" + key(dst[j]) + "]", t, dem[j]);
  }
  inst.shape = {m * h + h * n, 0, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = f.company;
  s.setting = draw_wording(rng, {
      std::string(f.company) + " moves " + f.good + " from " + join_and(src) + " through " + join_and(hub) + " to " +
          join_and(dst) + ". Nothing is stored at a " + f.hub + ": what arrives leaves.",
      "Every shipment of " + f.good + " at " + f.company + " leaves " + join_and(src) + ", passes one of " + join_and(hub) +
          " and ends at " + join_and(dst) + "; a " + f.hub + " keeps no stock.",
      "The " + f.source + "s " + join_and(src) + " of " + f.company + " supply the " + f.dest + "s " + join_and(dst) +
          " by way of " + join_and(hub) + ", each " + f.hub + " passing on all that it receives."});
  s.decision = draw_wording(rng, {std::string("how many ") + f.unit + "s to send on each link",
                                  std::string("the flow of ") + f.good + " on every inbound and outbound link",
                                  std::string("the shipment, in ") + f.unit + "s, on each link of the network"});
  std::vector<std::string> c1cols;
  for (const auto& x2 : hub) c1cols.push_back(x2 + " cost ($ per " + f.unit + ")");
  for (const auto& x2 : hub) c1cols.push_back(x2 + " capacity (" + f.unit + "s)");
  c1cols.push_back("Supply (" + std::string(f.unit) + "s)");
  Table t1 = table(draw_wording(rng, {"Inbound links", "Links into the " + std::string(f.hub) + "s",
                                      "From each " + std::string(f.source) + " to each " + f.hub}),
                   "From", c1cols, src);
  for (int i = 0; i < m; ++i) {
    for (int k = 0; k < h; ++k) t1.cells[i][k] = num(c1[i][k]), t1.cells[i][h + k] = num(u1[i][k]);
    t1.cells[i][2 * h] = num(sup[i]);
  }
  std::vector<std::string> c2cols;
  for (const auto& x2 : hub) c2cols.push_back("From " + x2 + ": cost ($ per " + f.unit + ")");
  for (const auto& x2 : hub) c2cols.push_back("From " + x2 + ": capacity (" + f.unit + "s)");
  c2cols.push_back("Demand (" + std::string(f.unit) + "s)");
  Table t2 = table(draw_wording(rng, {"Outbound links", "Links out of the " + std::string(f.hub) + "s",
                                      "From each " + std::string(f.hub) + " to each " + f.dest}),
                   "To", c2cols, dst);
  for (int j = 0; j < n; ++j) {
    for (int k = 0; k < h; ++k) t2.cells[j][k] = num(c2[k][j]), t2.cells[j][h + k] = num(u2[k][j]);
    t2.cells[j][2 * h] = num(dem[j]);
  }
  s.tables = {t1, t2};
  s.rules.push_back(draw_wording(rng, {
      "No link may carry more than its capacity, and no source may send more than its supply.",
      "Links carry at most their capacities; a " + std::string(f.source) + " ships no more than it has.",
      "Each link has a capacity and each " + std::string(f.source) + " a supply, and neither may be exceeded."}));
  s.rules.push_back(draw_wording(rng, {std::string("Flow into each ") + f.hub + " equals flow out of it.",
                                       std::string("What a ") + f.hub + " receives, it sends on in full.",
                                       std::string("A ") + f.hub + " balances: inflow equals outflow."}));
  s.rules.push_back(draw_wording(rng, {std::string("Each ") + f.dest + " must receive at least its demand.",
                                       std::string("No ") + f.dest + " may get less than it asks for.",
                                       std::string("Every ") + f.dest + "'s demand has to be met."}));
  s.objective = draw_wording(rng, {"minimize the total transport cost in dollars",
                                   "ship at the lowest possible total cost: minimize the dollars spent",
                                   "minimize the dollars spent on all links together"});
}

// ---------------------------------------------------------------------------------------
struct PipeFlavor {
  std::string industry;
  std::string company;
  std::string what;  // "water"
  std::string unit;  // "megalitres per day"
  std::string source;
  std::string sink;
  std::vector<std::string> nodes;
};

const std::vector<PipeFlavor>& pipe_flavors() {
  static const std::vector<PipeFlavor> f = {
      {"water utilities", "Aquaflow Utilities", "water", "megalitres per day", "Reservoir", "Treatment works",
       {"Pump station Ash", "Pump station Beech", "Pump station Cedar", "Pump station Dogwood", "Pump station Elm", "Pump station Fir", "Pump station Gum", "Pump station Hazel"}},
      {"telecommunications", "SkyNet Telecom", "data traffic", "gigabits per second", "Core router", "Data centre",
       {"Switch Amber", "Switch Blue", "Switch Coral", "Switch Denim", "Switch Emerald", "Switch Fuchsia", "Switch Gold", "Switch Indigo"}},
      {"oil pipelines", "Northern Pipeline Co", "crude oil", "thousand barrels per day", "Oil field", "Refinery",
       {"Junction Apex", "Junction Basin", "Junction Crest", "Junction Delta", "Junction Echo", "Junction Forge", "Junction Gulch", "Junction Heath"}},
      {"urban traffic", "Metro Traffic Authority", "vehicles", "vehicles per hour", "Suburb interchange", "City centre",
       {"Avenue Ash", "Avenue Birch", "Avenue Chestnut", "Avenue Dale", "Avenue Elder", "Avenue Flint", "Avenue Grove", "Avenue Holly"}},
      {"evacuation planning", "County Emergency Office", "evacuees", "people per hour", "Old town", "Shelter zone",
       {"Route Alpha", "Route Bravo", "Route Charlie", "Route Delta", "Route Echo", "Route Foxtrot", "Route Golf", "Route Hotel"}},
      {"district heating", "Warmstream Energy", "hot water", "megawatts of heat", "Heat plant", "Housing estate",
       {"Valve Acorn", "Valve Bramble", "Valve Clover", "Valve Dock", "Valve Ember", "Valve Fennel", "Valve Ginger", "Valve Hemlock"}},
      {"rail freight", "Ironroad Freight", "freight trains", "trains per day", "Port yard", "Inland terminal",
       {"Signal box Ayr", "Signal box Bute", "Signal box Clyde", "Signal box Dee", "Signal box Esk", "Signal box Forth", "Signal box Garry", "Signal box Hope"}},
      {"airport passenger flow", "Skyport Authority", "passengers", "passengers per hour", "Check-in hall", "Departure gates",
       {"Corridor Azure", "Corridor Bronze", "Corridor Copper", "Corridor Dune", "Corridor Ebony", "Corridor Flax", "Corridor Granite", "Corridor Honey"}},
  };
  return f;
}

void build_max_flow(const BuildContext& ctx, Instance& inst) {
  const PipeFlavor& f = pipe_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Rng& rng = ctx.rng;
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const double diff = ctx.difficulty;
  auto mid = first(f.nodes, n);
  struct Arc { int from, to; double cap; double low = 0; };  // node -1 source, n sink
  std::vector<Arc> arcs;
  for (int i = 0; i < n; ++i) arcs.push_back({-1, i, d("capacity")});
  for (int i = 0; i + 1 < n; ++i)
    if (rng.chance(0.4 + 0.4 * diff)) arcs.push_back({i, i + 1, d("capacity")});
  for (int i = 0; i < n; ++i) arcs.push_back({i, n, d("capacity")});
  if (mode == FeasibilityMode::kInfeasible) {
    // A contracted minimum on the first inbound link above everything node 0 can pass on.
    double out = 0;
    for (const Arc& a : arcs)
      if (a.from == 0) out += a.cap;
    arcs[0].low = out + 1;
    arcs[0].cap = std::max(arcs[0].cap, arcs[0].low);
  }
  if (mode == FeasibilityMode::kUnbounded) arcs.push_back({-1, n, lp::kInf});
  auto node_name = [&](int v) { return v < 0 ? std::string(f.source) : v == n ? std::string(f.sink) : mid[size_t(v)]; };

  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMaximize;
  mod.objective_name = "throughput";
  std::vector<int> x;
  for (const Arc& a : arcs)
    x.push_back(mod.add_var("flow[" + key(node_name(a.from)) + "," + key(node_name(a.to)) + "]", a.low, a.cap,
                            lp::VarType::kContinuous, a.to == n ? 1.0 : 0.0));
  for (int v = 0; v < n; ++v) {
    std::vector<Term> t;
    for (size_t e = 0; e < arcs.size(); ++e) {
      if (arcs[e].to == v) t.push_back({x[e], 1});
      if (arcs[e].from == v) t.push_back({x[e], -1});
    }
    mod.add_eq("conserve[" + key(mid[size_t(v)]) + "]", t, 0);
  }
  inst.shape = {int(arcs.size()), 0, 0, true, lp::Sense::kMaximize};

  Story& s = inst.story;
  s.company = f.company;
  s.setting = std::string(f.company) + " moves " + f.what + " from " + f.source + " to " + f.sink + " through " +
              join_and(mid) + ". Each link carries " + f.what + " in one direction only, and nothing accumulates at an intermediate point.";
  s.decision = std::string("how much ") + f.what + " to send on each link";
  std::vector<std::string> rows;
  for (const Arc& a : arcs) rows.push_back(node_name(a.from) + " to " + node_name(a.to));
  bool lows = mode == FeasibilityMode::kInfeasible;
  std::vector<std::string> cols = {"Capacity (" + std::string(f.unit) + ")"};
  if (lows) cols.push_back("Contracted minimum (" + std::string(f.unit) + ")");
  Table t = table("Links", "Link", cols, rows);
  for (size_t e = 0; e < arcs.size(); ++e) {
    t.cells[e][0] = arcs[e].cap == lp::kInf ? "no limit" : num(arcs[e].cap);
    if (lows) t.cells[e][1] = num(arcs[e].low);
  }
  s.tables.push_back(t);
  s.rules.push_back("No link may carry more than its capacity.");
  if (lows) s.rules.push_back("Every link must carry at least its contracted minimum.");
  s.rules.push_back("At every intermediate point, inflow equals outflow.");
  s.objective = std::string("maximize the total flow arriving at ") + f.sink + ", in " + f.unit;
  s.maximize = true;
}

// ---------------------------------------------------------------------------------------
struct AssignFlavor {
  std::string industry;
  std::string company;
  std::string worker;
  std::vector<std::string> workers;
  std::string task;
  std::vector<std::string> tasks;
  std::string cost;  // "hours to finish", with unit
  std::string unit;
};

const std::vector<AssignFlavor>& assign_flavors() {
  static const std::vector<AssignFlavor> f = {
      {"software consulting", "Bytecraft Consulting", "developer",
       {"Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan"}, "project",
       {"billing portal", "mobile app", "data pipeline", "search service", "audit tool", "chat bot", "web shop", "reporting suite", "backup system"},
       "hours to finish", "hours"},
      {"ride hailing", "QuickRide", "driver",
       {"Amir", "Beth", "Carlos", "Dmitri", "Elena", "Femi", "Grace", "Hugo", "Iris"}, "pickup request",
       {"airport pickup", "station pickup", "hotel pickup", "mall pickup", "hospital pickup", "campus pickup", "stadium pickup", "harbour pickup", "museum pickup"},
       "minutes of travel", "minutes"},
      {"hospital staffing", "Mercy General Hospital", "nurse",
       {"Abigail", "Bilal", "Chloe", "Diego", "Esther", "Felix", "Gemma", "Hiro", "Isla"}, "ward",
       {"cardiology ward", "oncology ward", "maternity ward", "surgery ward", "paediatrics ward", "geriatrics ward", "emergency ward", "neurology ward", "orthopaedics ward"},
       "dollars of shift cost", "$"},
      {"machine shop", "Precision Parts Ltd", "machine",
       {"lathe Ash", "lathe Birch", "mill Cedar", "mill Dogwood", "grinder Elm", "press Fir", "router Gum", "drill Hazel", "saw Iris"}, "job",
       {"gear blank", "shaft", "bracket", "housing", "flange", "pulley", "bushing", "valve body", "cam"},
       "minutes of processing", "minutes"},
      {"sales territories", "Northstar Insurance", "sales agent",
       {"Ava", "Ben", "Cleo", "Dev", "Eve", "Finn", "Gia", "Hal", "Ida"}, "territory",
       {"north district", "south district", "east district", "west district", "harbour district", "old town", "tech park", "university quarter", "airport zone"},
       "dollars of travel cost", "$"},
      {"legal services", "Hartwell and Price", "lawyer",
       {"Aisha", "Bernard", "Carmen", "Declan", "Eloise", "Fabio", "Greta", "Hamid", "Ines"}, "case",
       {"merger review", "patent dispute", "lease renewal", "tax appeal", "employment claim", "contract audit", "estate plan", "trade mark filing", "insurance claim"},
       "billable hours", "hours"},
      {"home care", "Kindred Home Care", "carer",
       {"Agnes", "Boris", "Celia", "Dylan", "Edith", "Frank", "Gloria", "Henrik", "Imogen"}, "client visit",
       {"morning visit", "breakfast visit", "mid-morning visit", "lunch visit", "afternoon visit", "tea visit", "evening visit", "supper visit", "bedtime visit"},
       "minutes of travel", "minutes"},
      {"event staffing", "Grandstand Events", "steward",
       {"Anton", "Bella", "Cyrus", "Daria", "Ennio", "Freya", "Gideon", "Hazel", "Idris"}, "gate",
       {"north gate", "south gate", "east gate", "west gate", "VIP entrance", "press entrance", "family entrance", "staff entrance", "service gate"},
       "dollars of wage cost", "$"},
  };
  return f;
}

void build_assignment(const BuildContext& ctx, Instance& inst) {
  const AssignFlavor& f = assign_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const double diff = ctx.difficulty;
  // More workers than tasks when easy; fewer than tasks makes the instance infeasible.
  int w = mode == FeasibilityMode::kInfeasible ? n - 1 : n + (diff < 0.5 ? 1 : 0);
  if (w < 1) w = 1;
  Rng& rng = ctx.rng;
  auto wk = draw_names(f.workers, w, rng), tk = draw_names(f.tasks, n, rng);
  std::vector<std::vector<double>> c(w, std::vector<double>(n));
  for (int i = 0; i < w; ++i)
    for (int j = 0; j < n; ++j) c[i][j] = d("cost");

  lp::Model& mod = inst.model;
  mod.objective_name = "total_cost";
  std::vector<std::vector<int>> x(w, std::vector<int>(n));
  for (int i = 0; i < w; ++i)
    for (int j = 0; j < n; ++j)
      x[i][j] = mod.add_var("assign[" + key(wk[i]) + "," + key(tk[j]) + "]", 0, 1, lp::VarType::kBinary, c[i][j]);
  for (int i = 0; i < w; ++i) {
    std::vector<Term> t;
    for (int j = 0; j < n; ++j) t.push_back({x[i][j], 1});
    mod.add_le("one_task[" + key(wk[i]) + "]", t, 1);
  }
  for (int j = 0; j < n; ++j) {
    std::vector<Term> t;
    for (int i = 0; i < w; ++i) t.push_back({x[i][j], 1});
    mod.add_eq("covered[" + key(tk[j]) + "]", t, 1);
  }
  inst.shape = {0, 0, w * n, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = f.company;
  const std::string worker = f.worker, task = f.task;
  s.setting = draw_wording(rng, {
      std::string(f.company) + " must give each " + task + " (" + join_and(tk) + ") to exactly one " + worker + " (" +
          join_and(wk) + ").",
      "The " + task + "s " + join_and(tk) + " are open at " + f.company + ", and the " + worker + "s available are " +
          join_and(wk) + ".",
      "At " + std::string(f.company) + ", " + join_and(wk) + " can take on the " + task + "s " + join_and(tk) +
          ", one each at most."});
  s.decision = draw_wording(rng, {"which " + worker + " takes which " + task,
                                  "a pairing of " + task + "s with " + worker + "s",
                                  "who handles each " + task});
  Table t = table(draw_wording(rng, {"Cost of each " + worker + " on each " + task + ", in " + f.cost,
                                     cap(f.cost) + " when a " + worker + " takes a " + task,
                                     cap(task) + " by " + worker + ": " + f.cost}),
                  cap(worker), tk, wk);
  for (int i = 0; i < w; ++i)
    for (int j = 0; j < n; ++j) t.cells[i][j] = num(c[i][j]);
  s.tables.push_back(t);
  s.rules.push_back(draw_wording(rng, {"Each " + worker + " takes at most one " + task + ".",
                                       "No " + worker + " is given two " + task + "s.",
                                       "A " + worker + " handles one " + task + " or none."}));
  s.rules.push_back(draw_wording(rng, {"Each " + task + " is given to exactly one " + worker + ".",
                                       "Every " + task + " needs one " + worker + ", and only one.",
                                       "No " + task + " is left without a " + worker + " or shared by two."}));
  s.objective = draw_wording(rng, {"minimize the total " + f.cost, "minimize the sum of the " + f.cost + " over the pairings made",
                                   "minimize the " + f.cost + " added over all pairings"});
  s.integrality = draw_wording(rng, {"An assignment is all or nothing: a task cannot be split.",
                                     "A " + task + " goes to one " + worker + " whole; it is never divided."});
}

// ---------------------------------------------------------------------------------------
struct TourFlavor {
  std::string industry;
  std::string company;
  std::string traveller;
  std::string stop;
  std::vector<std::string> stops;
  std::string unit;
};

const std::vector<TourFlavor>& tour_flavors() {
  static const std::vector<TourFlavor> f = {
      {"parcel delivery", "SwiftParcel", "delivery van", "customer",
       {"depot", "Baker Street", "Canal Road", "Dock Lane", "Elm Avenue", "Forge Street", "Green Lane", "High Street"}, "km"},
      {"sales visits", "Apex Pharma Sales", "sales representative", "pharmacy",
       {"head office", "Aldgate pharmacy", "Bow pharmacy", "Camden pharmacy", "Dalston pharmacy", "Ealing pharmacy", "Fulham pharmacy", "Greenwich pharmacy"}, "minutes"},
      {"printed circuit boards", "Circuitry Works", "drilling head", "hole position",
       {"home position", "via Alpha", "via Bravo", "via Charlie", "via Delta", "via Echo", "via Foxtrot", "via Golf"}, "millimetres"},
      {"tourism", "Heritage Tours", "tour bus", "landmark",
       {"hotel", "cathedral", "castle", "museum", "old bridge", "market hall", "botanic garden", "harbour"}, "minutes"},
      {"field maintenance", "WindServe", "maintenance crew", "wind turbine",
       {"service base", "turbine Aster", "turbine Bluebell", "turbine Clover", "turbine Daisy", "turbine Fern", "turbine Heather", "turbine Iris"}, "km"},
      {"school transport", "Brightway School Buses", "school bus", "pick-up point",
       {"bus garage", "Acorn Close", "Bell Road", "Chapel Row", "Duke Street", "Ember Lane", "Ferry Road", "Gate Street"}, "minutes"},
      {"warehouse picking", "Rapid Pick Logistics", "picking trolley", "storage bay",
       {"packing desk", "bay Amber", "bay Bronze", "bay Cobalt", "bay Denim", "bay Ember", "bay Fern", "bay Garnet"}, "metres"},
      {"meter reading", "Citywide Utilities", "meter reader", "meter",
       {"utility office", "Apple Court", "Birch Close", "Cherry Walk", "Daisy Row", "Elder Way", "Finch Lane", "Grove Hill"}, "minutes"},
  };
  return f;
}

void build_tsp_mtz(const BuildContext& ctx, Instance& inst) {
  const TourFlavor& f = tour_flavors()[size_t(ctx.industry)];
  Draw& d = ctx.draw;
  const int n = ctx.size;
  Rng& rng = ctx.rng;
  // The start stays the base; the stops visited are drawn from the rest of the list.
  std::vector<std::string> st = {f.stops[0]};
  for (const std::string& name : draw_names(std::vector<std::string>(f.stops.begin() + 1, f.stops.end()), n - 1, rng))
    st.push_back(name);
  std::vector<std::vector<double>> dist(n, std::vector<double>(n, 0));
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) dist[i][j] = dist[j][i] = d("distance");

  lp::Model& mod = inst.model;
  mod.objective_name = "tour_length";
  std::vector<std::vector<int>> x(n, std::vector<int>(n, -1));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j) x[i][j] = mod.add_var("go[" + key(st[i]) + "," + key(st[j]) + "]", 0, 1, lp::VarType::kBinary, dist[i][j]);
  std::vector<int> u(n, -1);
  for (int i = 1; i < n; ++i) u[i] = mod.add_var("order[" + key(st[i]) + "]", 1, n - 1, lp::VarType::kContinuous, 0);
  for (int i = 0; i < n; ++i) {
    std::vector<Term> out, in;
    for (int j = 0; j < n; ++j)
      if (i != j) out.push_back({x[i][j], 1}), in.push_back({x[j][i], 1});
    mod.add_eq("leave[" + key(st[i]) + "]", out, 1);
    mod.add_eq("enter[" + key(st[i]) + "]", in, 1);
  }
  for (int i = 1; i < n; ++i)
    for (int j = 1; j < n; ++j)
      if (i != j)
        mod.add_le("mtz[" + key(st[i]) + "," + key(st[j]) + "]", {{u[i], 1}, {u[j], -1}, {x[i][j], double(n - 1)}}, n - 2);
  inst.shape = {n - 1, 0, n * (n - 1), true, lp::Sense::kMinimize};
  inst.implied_numbers = {double(n - 1), double(n - 2)};

  Story& s = inst.story;
  s.company = f.company;
  const std::string visits = join_and(std::vector<std::string>(st.begin() + 1, st.end()));
  s.setting = draw_wording(rng, {
      std::string("A ") + f.traveller + " of " + f.company + " starts at the " + st[0] + ", must visit every " + f.stop +
          " (" + visits + ") exactly once, and return to the " + st[0] + ".",
      "Leaving the " + st[0] + ", a " + f.traveller + " of " + f.company + " calls at " + visits + ", each " + f.stop +
          " once, and comes back to the " + st[0] + " at the end.",
      f.company + " sends one " + f.traveller + " on a round trip from the " + st[0] + " through " + visits +
          ", visiting every " + f.stop + " a single time before returning."});
  s.decision = draw_wording(rng, {"the order of the visits, as the legs of one closed tour",
                                  "in which order the " + f.stop + "s are visited, that is which legs the tour uses",
                                  "the route: which " + f.stop + " follows which, closing the loop at the " + st[0]});
  Table t = table(draw_wording(rng, {std::string("Travel between stops, in ") + f.unit + " (the same in both directions)",
                                     "Travel in " + f.unit + " between each pair of stops, the same both ways",
                                     "Leg lengths in " + f.unit + ", either way"}),
                  "From", st, st);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) t.cells[i][j] = i == j ? "-" : num(dist[i][j]);
  s.tables.push_back(t);
  s.rules.push_back(draw_wording(rng, {"Each stop is left exactly once and entered exactly once.",
                                       "The " + f.traveller + " arrives at every stop once and departs from it once.",
                                       "Every stop has one leg in and one leg out."}));
  s.rules.push_back(draw_wording(rng, {"The legs must form a single tour through all stops, with no separate sub-tours.",
                                       "The chosen legs make one loop; smaller loops that miss the " + st[0] + " are not allowed.",
                                       "No group of stops may be toured on its own, apart from the rest."}));
  s.objective = draw_wording(rng, {std::string("minimize the total travel, in ") + f.unit,
                                   "keep the round trip as short as possible: minimize its length in " + f.unit,
                                   "minimize the sum of the legs driven, in " + f.unit});
  s.integrality = draw_wording(rng, {"Each leg between two stops is either driven or not.",
                                     "A leg is used whole or not at all."});
}

}  // namespace

void add_network_families(std::vector<const Family*>& out) {
  static const RecipeFamily families[] = {
      {{.family = "transportation",
        .title = "Transportation problem",
        .problem_class = ProblemClass::kLP,
        .version = "2",
        .params = {size_param(2, 8, 2, 6, "number of destinations"), difficulty_param(),
                 data_param("unit_cost", true, 1, 1000, 2, 30, "$ per unit shipped", "shipping cost per unit"),
                 data_param("demand", true, 1, 100000, 20, 150, "units", "destination requirement")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(ship_flavors()), build_transportation},
      {{.family = "min_cost_flow",
        .title = "Transshipment (min-cost flow through hubs with arc capacities)",
        .problem_class = ProblemClass::kLP,
        .version = "3",
        .params = {size_param(2, 8, 2, 5, "number of customers"), difficulty_param(),
                 data_param("unit_cost", true, 1, 1000, 1, 20, "$ per unit", "arc cost per unit"),
                 data_param("demand", true, 1, 100000, 20, 100, "units", "customer requirement")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(ship_flavors()), build_min_cost_flow},
      {{.family = "max_flow",
        .title = "Maximum flow through a capacitated network",
        .problem_class = ProblemClass::kLP,
        .version = "2",
        .params = {size_param(2, 8, 2, 6, "number of intermediate nodes"), difficulty_param(),
                 data_param("capacity", true, 1, 100000, 5, 60, "flow units", "link capacity")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible, FeasibilityMode::kUnbounded}},
       industries_of(pipe_flavors()), build_max_flow},
      {{.family = "assignment",
        .title = "Assignment of workers to tasks",
        .problem_class = ProblemClass::kIP,
        .version = "3",
        .params = {size_param(2, 8, 3, 6, "number of tasks"), difficulty_param(),
                 data_param("cost", true, 1, 10000, 5, 60, "cost units", "cost of a worker doing a task")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(assign_flavors()), build_assignment},
      {{.family = "tsp_mtz",
        .title = "Travelling salesman tour (Miller-Tucker-Zemlin formulation)",
        .problem_class = ProblemClass::kMILP,
        .version = "3",
        .params = {size_param(3, 8, 4, 6, "number of stops including the start"), difficulty_param(),
                 data_param("distance", true, 1, 10000, 5, 90, "distance or time units", "travel between two stops")},
        .modes = {FeasibilityMode::kFeasible}},
       industries_of(tour_flavors()), build_tsp_mtz},
  };
  for (const RecipeFamily& f : families) out.push_back(&f);
}

}  // namespace trex::ordata
