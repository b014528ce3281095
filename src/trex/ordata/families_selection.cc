// Families that choose among discrete options: knapsack (IP), multi-dimensional knapsack
// (IP), bin packing (IP), set covering (IP), capacitated facility location (MILP) and shift
// staffing (IP).
#include <algorithm>
#include <cmath>

#include "trex/ordata/families.h"
#include "trex/ordata/family_recipe.h"
#include "trex/ordata/family_util.h"

namespace trex::ordata {

namespace {

using lp::Term;

struct PackFlavor {
  std::string industry;
  std::string company;
  std::string container;  // "cargo plane"
  std::string item;
  std::vector<std::string> items;
  std::string value;  // "expected revenue"
  std::string weight;
  std::string weight_unit;
  std::string volume;
  std::string volume_unit;
};

const std::vector<PackFlavor>& pack_flavors() {
  static const std::vector<PackFlavor> f = {
      {"air cargo", "Skyline Cargo", "cargo plane", "consignment",
       {"flowers", "machine parts", "medicine", "electronics", "textiles", "seafood", "documents", "auto parts", "artwork", "wine", "books", "toys"},
       "freight revenue in dollars", "weight", "kg", "volume", "cubic feet"},
      {"venture investing", "Beacon Ventures", "fund", "start-up",
       {"Alpha Robotics", "Bright Foods", "Civic Apps", "Delta Bio", "Echo Energy", "Fable Games", "Gaia Farms", "Helix Health", "Ion Batteries", "Juno Space", "Kite Mobility", "Lumen Optics"},
       "expected return in thousand dollars", "investment", "thousand dollars", "partner time", "days"},
      {"satellite payloads", "Orbital Dynamics", "launch vehicle", "payload",
       {"weather sensor", "radio relay", "star tracker", "ion engine test", "camera", "spectrometer", "laser link", "magnetometer", "radar", "student cubesat", "dust collector", "thermal probe"},
       "science value in points", "mass", "kg", "power draw", "watts"},
      {"marketing", "BrightPath Media", "campaign budget", "advertising slot",
       {"TV prime time", "radio morning", "billboard downtown", "podcast", "search ads", "social video", "newspaper", "magazine", "cinema", "transit posters", "influencer post", "email blast"},
       "expected new customers", "cost", "thousand dollars", "staff time", "hours"},
      {"trucking", "RoadKing Freight", "truck", "shipment",
       {"furniture", "steel coils", "paper rolls", "glassware", "appliances", "tyres", "paint cans", "lumber", "cement bags", "computers", "bicycles", "tiles"},
       "delivery fee in dollars", "weight", "tonnes", "floor space", "square metres"},
      {"museum exhibitions", "Meridian Museum", "touring exhibition", "artefact",
       {"bronze mask", "silk scroll", "jade vase", "oak chest", "iron helmet", "gold coin set", "clay tablet", "marble bust", "glass bowl", "ivory comb", "silver cup", "stone idol"},
       "visitor interest in points", "insurance value", "thousand dollars", "crate space", "cubic metres"},
      {"research funding", "Northbridge Research Council", "grant budget", "proposal",
       {"battery chemistry", "coral reefs", "quantum sensors", "crop genetics", "urban heat", "rare diseases", "soil carbon", "deep sea vents", "language models", "bird migration", "wind wakes", "glacier melt"},
       "expected impact in points", "grant size", "thousand dollars", "reviewer time", "hours"},
      {"expedition packing", "Summit Guides", "backpack", "gear item",
       {"tent", "stove", "rope", "ice axe", "headlamp", "water filter", "first aid kit", "camera", "radio", "solar panel", "spare boots", "map case"},
       "usefulness in points", "weight", "kg", "pack volume", "litres"},
  };
  return f;
}

// Knapsack with one (dims = 1) or two (dims = 2) capacity constraints.
void build_knapsack(const BuildContext& ctx, Instance& inst) {
  const int dims = ctx.contract.family == "knapsack" ? 1 : 2;
  const PackFlavor& f = pack_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const double diff = ctx.difficulty;
  auto items = first(f.items, n);
  std::vector<double> val(n);
  std::vector<std::vector<double>> w(dims, std::vector<double>(n));
  for (int i = 0; i < n; ++i) val[i] = d("value");
  for (int k = 0; k < dims; ++k)
    for (int i = 0; i < n; ++i) w[k][i] = d("weight");
  std::vector<double> capa(dims);
  for (int k = 0; k < dims; ++k) {
    double total = 0, heaviest = 0;
    for (double v : w[k]) total += v, heaviest = std::max(heaviest, v);
    capa[k] = std::max(heaviest, std::round(total * (0.7 - 0.45 * diff)));
  }
  std::vector<double> must(n, 0);
  if (mode == FeasibilityMode::kInfeasible) {
    // The two heaviest items (in the first resource) are required but do not fit together.
    std::vector<int> o(n);
    for (int i = 0; i < n; ++i) o[i] = i;
    std::sort(o.begin(), o.end(), [&](int a, int b) { return w[0][a] > w[0][b] || (w[0][a] == w[0][b] && a < b); });
    must[o[0]] = must[o[1]] = 1;
    capa[0] = std::max(w[0][o[0]], w[0][o[0]] + w[0][o[1]] - 1);
  }

  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMaximize;
  mod.objective_name = "value";
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i) x[i] = mod.add_var("take[" + key(items[i]) + "]", must[i], 1, lp::VarType::kBinary, val[i]);
  const std::string res[2] = {f.weight, f.volume};
  const std::string units[2] = {f.weight_unit, f.volume_unit};
  for (int k = 0; k < dims; ++k) {
    std::vector<Term> t;
    for (int i = 0; i < n; ++i) t.push_back({x[i], w[k][i]});
    mod.add_le("limit_" + key(res[k]), t, capa[k]);
  }
  inst.shape = {0, 0, n, true, lp::Sense::kMaximize};

  Story& s = inst.story;
  s.company = f.company;
  s.setting = std::string(f.company) + " is choosing which " + f.item + "s to take on for its " + f.container + ": " +
              join_and(items) + ".";
  s.decision = std::string("which ") + f.item + "s to select";
  std::vector<std::string> cols = {cap(f.value)};
  for (int k = 0; k < dims; ++k) cols.push_back(cap(res[k]) + " (" + units[k] + ")");
  if (mode == FeasibilityMode::kInfeasible) cols.push_back("Required");
  Table t = table(std::string("Data per ") + f.item, cap(f.item), cols, items);
  for (int i = 0; i < n; ++i) {
    size_t c = 0;
    t.cells[i][c++] = num(val[i]);
    for (int k = 0; k < dims; ++k) t.cells[i][c++] = num(w[k][i]);
    if (mode == FeasibilityMode::kInfeasible) t.cells[i][c++] = must[i] ? "yes" : "no";
  }
  s.tables.push_back(t);
  for (int k = 0; k < dims; ++k)
    s.facts.push_back(std::string("The ") + f.container + " allows a total " + res[k] + " of at most " + num(capa[k]) + " " + units[k] + ".");
  s.rules.push_back(std::string("Each ") + f.item + " is taken whole or not at all.");
  if (mode == FeasibilityMode::kInfeasible) s.rules.push_back(std::string("Every required ") + f.item + " must be taken.");
  s.objective = std::string("maximize the total ") + f.value;
  s.maximize = true;
  s.integrality = "Selections are yes-or-no decisions.";
}

// ---------------------------------------------------------------------------------------
void build_bin_packing(const BuildContext& ctx, Instance& inst) {
  const PackFlavor& f = pack_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Draw& d = ctx.draw;
  const int n = ctx.size;
  Rng& rng = ctx.rng;
  auto items = draw_names(f.items, n, rng);  // version 3: drawn from the sample's stream, not the first n
  std::vector<double> sz(n);
  for (int i = 0; i < n; ++i) sz[i] = d("item_size");
  double capa = d("bin_capacity");
  double biggest = *std::max_element(sz.begin(), sz.end());
  if (mode == FeasibilityMode::kInfeasible) capa = std::max(1.0, biggest - 1);
  else capa = std::max(capa, biggest);
  static const std::vector<std::string> bin_names = {"A", "B", "C", "D", "E", "F", "G", "H"};

  lp::Model& mod = inst.model;
  mod.objective_name = "containers_used";
  std::vector<int> y(n);
  std::vector<std::vector<int>> x(n, std::vector<int>(n));
  for (int b = 0; b < n; ++b) y[b] = mod.add_var("use[" + bin_names[b] + "]", 0, 1, lp::VarType::kBinary, 1);
  for (int i = 0; i < n; ++i)
    for (int b = 0; b < n; ++b)
      x[i][b] = mod.add_var("put[" + key(items[i]) + "," + bin_names[b] + "]", 0, 1, lp::VarType::kBinary, 0);
  for (int i = 0; i < n; ++i) {
    std::vector<Term> t;
    for (int b = 0; b < n; ++b) t.push_back({x[i][b], 1});
    mod.add_eq("place[" + key(items[i]) + "]", t, 1);
  }
  for (int b = 0; b < n; ++b) {
    std::vector<Term> t;
    for (int i = 0; i < n; ++i) t.push_back({x[i][b], sz[i]});
    t.push_back({y[b], -capa});
    mod.add_le("capacity[" + bin_names[b] + "]", t, 0);
  }
  // Containers are opened in label order. Any packing can be relabelled this way, so the
  // optimum is unchanged, and the search no longer visits every relabelling of a packing.
  for (int b = 0; b + 1 < n; ++b) mod.add_ge("order[" + bin_names[b] + "]", {{y[b], 1}, {y[b + 1], -1}}, 0);
  inst.shape = {0, 0, n + n * n, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = f.company;
  const std::string co = f.company, box = f.container, item = f.item;
  s.setting = draw_wording(rng, {
      co + " must fit " + join_and(items) + " into identical " + box + "s, labelled " + join_and(first(bin_names, n)) +
          ", with as few in use as possible.",
      co + " has to pack " + join_and(items) + ". Identical " + box + "s labelled " + join_and(first(bin_names, n)) +
          " are available, and the fewer of them are used, the better.",
      "At " + co + ", " + join_and(items) + " must be spread over identical " + box + "s (labelled " +
          join_and(first(bin_names, n)) + ") so that as few " + box + "s as possible are used."});
  s.decision = draw_wording(rng, {"which " + box + " each " + item + " goes into",
                                  "the " + box + " to which each " + item + " is assigned",
                                  "for every " + item + ", the " + box + " that holds it"});
  Table t = table(std::string("Size of each ") + f.item, cap(f.item), {cap(f.weight) + " (" + f.weight_unit + ")"}, items);
  for (int i = 0; i < n; ++i) t.cells[i] = {num(sz[i])};
  s.tables.push_back(t);
  const std::string unit = f.weight_unit;
  s.facts.push_back(draw_wording(rng, {"Each " + box + " holds at most " + num(capa) + " " + unit + ".",
                                       "The capacity of every " + box + " is " + num(capa) + " " + unit + "."}));
  s.rules.push_back(draw_wording(rng, {"Every " + item + " goes into exactly one " + box + ", whole.",
                                       "No " + item + " is split: each is placed in exactly one " + box + "."}));
  s.rules.push_back(draw_wording(rng, {
      "A " + box + " that holds anything counts as used, and its contents may not exceed its capacity.",
      "Any " + box + " with something in it is in use, and what it holds must fit within its capacity."}));
  s.rules.push_back(draw_wording(rng, {
      "The " + box + "s are opened in label order: one is used only if the one before it is used.",
      "The " + box + "s are used in the order of their labels, so none is used unless the previous one is."}));
  s.objective = draw_wording(rng, {"minimize the number of " + box + "s used",
                                   "minimize how many " + box + "s are in use"});
  s.integrality = draw_wording(rng, {"Placements and the use of each container are yes-or-no decisions.",
                                     "Each placement, and whether a container is used, is a yes-or-no choice."});
}

// ---------------------------------------------------------------------------------------
struct CoverFlavor {
  std::string industry;
  std::string company;
  std::string site;
  std::vector<std::string> sites;
  std::string zone;
  std::vector<std::string> zones;
};

const std::vector<CoverFlavor>& cover_flavors() {
  static const std::vector<CoverFlavor> f = {
      {"emergency services", "Lakeside County", "ambulance station",
       {"Ash Hill", "Brook Farm", "Cold Harbour", "Dean Cross", "East Gate", "Fox Lane", "Grange Park", "Heath End"}, "district",
       {"Old Town", "Millbrook", "Riverside", "Kingsway", "Southfields", "Northend", "Westmoor", "Eastleigh"}},
      {"telecom coverage", "AirWave Mobile", "cell tower site",
       {"water tower", "church spire", "hill top", "silo", "office roof", "stadium mast", "school roof", "hotel roof"}, "neighbourhood",
       {"Ashby", "Belmont", "Crofton", "Dunstan", "Elmhurst", "Fairlie", "Garston", "Holbeck"}},
      {"retail", "QuickMart", "store location",
       {"Main Square", "Rail Station", "Harbour Front", "Uni Campus", "Retail Park", "Old Mill", "Bus Depot", "Town Hall"}, "residential area",
       {"Abbey Estate", "Bridge End", "Castle View", "Dale Park", "Elm Grove", "Fern Hill", "Glen Rise", "Hill Crest"}},
      {"crew scheduling", "Coastal Airways", "crew pairing",
       {"pairing Amber", "pairing Beryl", "pairing Coral", "pairing Diamond", "pairing Emerald", "pairing Flint", "pairing Garnet", "pairing Jade"}, "flight",
       {"morning shuttle", "noon shuttle", "evening shuttle", "red-eye", "island hop", "coastal loop", "mountain run", "capital express"}},
      {"environmental monitoring", "River Basin Authority", "sensor location",
       {"Weir North", "Weir South", "Bridge Pier", "Lock Gate", "Pump House", "Reed Bed", "Ferry Slip", "Mill Race"}, "river reach",
       {"Upper Reach", "Gorge", "Meander", "Floodplain", "Confluence", "Estuary", "Marsh", "Delta"}},
      {"public libraries", "Greenvale Council", "library branch",
       {"Town Centre", "Canal Wharf", "Market Cross", "Priory Road", "Queens Park", "Station Approach", "Tannery Yard", "Union Street"}, "ward",
       {"Abbotsford", "Bramley", "Carrington", "Dunmore", "Edgeley", "Fulwood", "Gorton", "Haughton"}},
      {"electric vehicle charging", "VoltPoint Charging", "charging hub",
       {"Ring Road", "Motorway Services", "Park and Ride", "Civic Centre", "Leisure Centre", "Hospital Car Park", "Business Park", "Ferry Terminal"}, "commuter zone",
       {"Ashton", "Blakeley", "Castleton", "Denby", "Ellesmere", "Farnley", "Gisburn", "Hanwell"}},
      {"fire safety", "Moorland Fire Service", "fire station",
       {"Bracken Hill", "Copse Lane", "Dell Road", "Fell Top", "Gorse Edge", "Heron Way", "Ivy Bridge", "Juniper Rise"}, "parish",
       {"Alderley", "Barrow", "Calder", "Dalby", "Eskdale", "Fellside", "Grisedale", "Hawkshead"}},
  };
  return f;
}

void build_set_covering(const BuildContext& ctx, Instance& inst) {
  const CoverFlavor& f = cover_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Rng& rng = ctx.rng;
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const double diff = ctx.difficulty;
  const int z = std::min(8, n + 1);
  auto sites = first(f.sites, n), zones = first(f.zones, z);
  std::vector<double> cost(n);
  for (int i = 0; i < n; ++i) cost[i] = d("cost");
  std::vector<std::vector<bool>> covers(n, std::vector<bool>(z, false));
  const double p = 0.45 - 0.25 * diff;  // sparser coverage is harder
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < z; ++j) covers[i][j] = rng.chance(p);
  for (int j = 0; j < z; ++j) {  // every zone reachable from somewhere
    bool any = false;
    for (int i = 0; i < n; ++i) any = any || covers[i][j];
    if (!any) covers[size_t(rng.integer(0, n - 1))][j] = true;
  }
  std::vector<bool> banned(n, false);
  if (mode == FeasibilityMode::kInfeasible) {
    // The first zone's only coverer cannot be used.
    int only = -1;
    for (int i = 0; i < n; ++i) {
      if (covers[i][0] && only < 0) only = i;
      else covers[i][0] = false;
    }
    banned[only] = true;
  }

  lp::Model& mod = inst.model;
  mod.objective_name = "opening_cost";
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i) x[i] = mod.add_var("open[" + key(sites[i]) + "]", 0, banned[i] ? 0 : 1, lp::VarType::kBinary, cost[i]);
  for (int j = 0; j < z; ++j) {
    std::vector<Term> t;
    for (int i = 0; i < n; ++i)
      if (covers[i][j]) t.push_back({x[i], 1});
    mod.add_ge("cover[" + key(zones[j]) + "]", t, 1);
  }
  inst.shape = {0, 0, n, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = f.company;
  s.setting = std::string(f.company) + " must make sure that every " + f.zone + " (" + join_and(zones) +
              ") is served by at least one " + f.site + ".";
  s.decision = std::string("which ") + f.site + "s to open";
  Table t = table(std::string("Candidate ") + f.site + "s", cap(f.site), {"Cost (thousand dollars)", "Serves"}, sites);
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> served;
    for (int j = 0; j < z; ++j)
      if (covers[i][j]) served.push_back(zones[j]);
    t.cells[i] = {num(cost[i]), served.empty() ? "none" : join_and(served)};
  }
  s.tables.push_back(t);
  for (int i = 0; i < n; ++i)
    if (banned[i]) s.facts.push_back(cap(sites[i]) + " cannot be opened this year.");
  s.rules.push_back(std::string("Every ") + f.zone + " must be served by at least one open " + f.site + ".");
  s.objective = "minimize the total cost of the opened sites, in thousand dollars";
  s.integrality = "A site is opened or not.";
}

// ---------------------------------------------------------------------------------------
void build_facility_location(const BuildContext& ctx, Instance& inst) {
  const CoverFlavor& f = cover_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Rng& rng = ctx.rng;
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const double diff = ctx.difficulty;
  const int m = std::min(5, 2 + n / 3);
  auto sites = first(f.sites, m), cust = first(f.zones, n);
  std::vector<double> fix(m), capa(m), dem(n);
  std::vector<std::vector<double>> c(m, std::vector<double>(n));
  for (int i = 0; i < m; ++i) fix[i] = d("fixed_cost");
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) c[i][j] = d("unit_cost");
  for (int j = 0; j < n; ++j) dem[j] = d("demand");
  double total = 0;
  for (double v : dem) total += v;
  double share = mode == FeasibilityMode::kInfeasible ? 0.8 / m : (1.3 + 1.2 * (1 - diff)) / m;
  for (int i = 0; i < m; ++i) capa[i] = std::max(1.0, std::floor(total * share * rng.real(0.9, 1.1, 2)));
  if (mode != FeasibilityMode::kInfeasible) {
    double sum = 0;
    for (double v : capa) sum += v;
    if (sum < total) capa[0] += total - sum;
  } else {
    double sum = 0;
    for (double v : capa) sum += v;
    if (sum >= total) capa[0] = std::max(1.0, capa[0] - (sum - total) - 1);
  }

  lp::Model& mod = inst.model;
  mod.objective_name = "total_cost";
  std::vector<int> y(m);
  std::vector<std::vector<int>> x(m, std::vector<int>(n));
  for (int i = 0; i < m; ++i) y[i] = mod.add_var("open[" + key(sites[i]) + "]", 0, 1, lp::VarType::kBinary, fix[i]);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      x[i][j] = mod.add_var("serve[" + key(sites[i]) + "," + key(cust[j]) + "]", 0, lp::kInf, lp::VarType::kContinuous, c[i][j]);
  for (int j = 0; j < n; ++j) {
    std::vector<Term> t;
    for (int i = 0; i < m; ++i) t.push_back({x[i][j], 1});
    mod.add_ge("demand[" + key(cust[j]) + "]", t, dem[j]);
  }
  for (int i = 0; i < m; ++i) {
    std::vector<Term> t;
    for (int j = 0; j < n; ++j) t.push_back({x[i][j], 1});
    t.push_back({y[i], -capa[i]});
    mod.add_le("capacity[" + key(sites[i]) + "]", t, 0);
  }
  inst.shape = {m * n, 0, m, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = f.company;
  s.setting = std::string(f.company) + " may open facilities at " + join_and(sites) + " to supply " + join_and(cust) + ".";
  s.decision = "which facilities to open and how many units each open facility sends to each area";
  std::vector<std::string> cols = {"Opening cost ($)", "Capacity (units)"};
  for (const auto& cj : cust) cols.push_back("To " + cj + " ($ per unit)");
  Table t = table("Candidate facilities", "Facility", cols, sites);
  for (int i = 0; i < m; ++i) {
    t.cells[i][0] = num(fix[i]);
    t.cells[i][1] = num(capa[i]);
    for (int j = 0; j < n; ++j) t.cells[i][2 + size_t(j)] = num(c[i][j]);
  }
  Table td = table("Demand", "Area", {"Demand (units)"}, cust);
  for (int j = 0; j < n; ++j) td.cells[j] = {num(dem[j])};
  s.tables = {t, td};
  s.rules.push_back("Each area must receive at least its demand, possibly from several facilities.");
  s.rules.push_back("Only an open facility can send anything, and at most its capacity in total.");
  s.objective = "minimize the opening costs plus the delivery costs, in dollars";
  s.integrality = "A facility is opened or not; delivered amounts may be fractional.";
}

// ---------------------------------------------------------------------------------------
struct StaffFlavor {
  std::string industry;
  std::string company;
  std::string worker;
  std::vector<std::string> periods;
};

const std::vector<StaffFlavor>& staff_flavors() {
  static const std::vector<StaffFlavor> f = {
      {"call centre", "HelpLine Services", "agent",
       {"early morning", "late morning", "early afternoon", "late afternoon", "early evening", "late evening", "night", "small hours"}},
      {"hospital nursing", "Riverside Hospital", "nurse",
       {"dawn", "morning", "midday", "afternoon", "dusk", "evening", "night", "early hours"}},
      {"restaurant", "Bistro Central", "server",
       {"breakfast", "brunch", "lunch", "afternoon tea", "early dinner", "dinner", "late dinner", "bar hours"}},
      {"airport security", "Metro Airport", "screening officer",
       {"first wave", "morning peak", "late morning", "midday", "afternoon peak", "evening peak", "late evening", "overnight"}},
      {"warehouse operations", "Stockwell Logistics", "picker",
       {"opening", "morning", "late morning", "noon", "afternoon", "late afternoon", "evening", "closing"}},
      {"hotel front desk", "Harbourview Hotel", "receptionist",
       {"dawn", "breakfast", "mid-morning", "lunchtime", "afternoon", "check-in peak", "evening", "night audit"}},
      {"public transit", "Metro Bus Company", "driver",
       {"first buses", "morning rush", "late morning", "midday", "school run", "evening rush", "late evening", "night buses"}},
      {"customer support chat", "Pixel Support Desk", "chat agent",
       {"early shift", "morning", "late morning", "lunchtime", "afternoon", "late afternoon", "evening", "overnight"}},
  };
  return f;
}

void build_shift_staffing(const BuildContext& ctx, Instance& inst) {
  const StaffFlavor& f = staff_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Draw& d = ctx.draw;
  const int T = ctx.size;
  const double diff = ctx.difficulty;
  const int L = diff < 0.5 ? 2 : 3;  // longer shifts cover more periods but waste more
  const int len = std::min(L, T);
  auto per = first(f.periods, T);
  std::vector<double> req(T);
  for (int t = 0; t < T; ++t) req[t] = d("required");
  const int S = T - len + 1;
  std::vector<double> wage(S);
  for (int k = 0; k < S; ++k) wage[k] = d("wage");
  double peak = *std::max_element(req.begin(), req.end());
  double headcount = -1;
  if (mode == FeasibilityMode::kInfeasible) {
    if (peak < 2) req[0] = peak = 2;
    headcount = peak - 1;
  }
  std::vector<std::string> shift;
  for (int k = 0; k < S; ++k) shift.push_back(per[k] + " to " + per[k + len - 1]);

  lp::Model& mod = inst.model;
  mod.objective_name = "wage_cost";
  std::vector<int> x(S);
  for (int k = 0; k < S; ++k) x[k] = mod.add_var("staff[" + key(per[k]) + "_start]", 0, lp::kInf, lp::VarType::kInteger, wage[k]);
  for (int t = 0; t < T; ++t) {
    std::vector<Term> terms;
    for (int k = 0; k < S; ++k)
      if (k <= t && t < k + len) terms.push_back({x[k], 1});
    if (req[t] > 0) mod.add_ge("need[" + key(per[t]) + "]", terms, req[t]);
  }
  if (headcount >= 0) {
    std::vector<Term> all;
    for (int k = 0; k < S; ++k) all.push_back({x[k], 1});
    mod.add_le("headcount", all, headcount);
  }
  inst.shape = {0, S, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = f.company;
  s.setting = std::string(f.company) + " divides its day into " + join_and(per) + ". Each " + f.worker +
              " works one shift of consecutive periods, and several " + f.worker + "s may work the same shift.";
  s.decision = std::string("how many ") + f.worker + "s to put on each shift";
  Table tr = table("Staff required per period", "Period", {cap(f.worker) + "s needed"}, per);
  for (int t = 0; t < T; ++t) tr.cells[t] = {num(req[t])};
  Table ts = table("Shifts", "Shift (covers the periods from ... to ...)", {"Pay ($ per " + std::string(f.worker) + ")"}, shift);
  for (int k = 0; k < S; ++k) ts.cells[k] = {num(wage[k])};
  s.tables = {tr, ts};
  if (headcount >= 0)
    s.facts.push_back(std::string("Only ") + num(headcount) + " " + f.worker + "s are available for the whole day.");
  s.rules.push_back(std::string("In every period, the ") + f.worker + "s on duty must be at least the requirement.");
  s.objective = "minimize the total pay in dollars";
  s.integrality = std::string("Staff numbers are whole ") + f.worker + "s.";
}

}  // namespace

void add_selection_families(std::vector<const Family*>& out) {
  const std::vector<ParamSpec> kKnapsackParams = {
      size_param(2, 12, 4, 9, "number of items"), difficulty_param(),
      data_param("value", true, 1, 100000, 10, 99, "value units", "value of an item"),
      data_param("weight", true, 1, 100000, 3, 40, "weight units", "resource use of an item")};
  static const RecipeFamily families[] = {
      {{.family = "knapsack",
        .title = "0-1 knapsack",
        .problem_class = ProblemClass::kIP,
        .version = "2",
        .params = kKnapsackParams,
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(pack_flavors()), build_knapsack},
      {{.family = "multi_knapsack",
        .title = "Multi-dimensional 0-1 knapsack",
        .problem_class = ProblemClass::kIP,
        .version = "2",
        .params = kKnapsackParams,
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(pack_flavors()), build_knapsack},
      {{.family = "bin_packing",
        .title = "Bin packing",
        .problem_class = ProblemClass::kIP,
        .version = "3",
        .params = {size_param(2, 8, 3, 6, "number of items"), difficulty_param(),
                 data_param("item_size", true, 1, 10000, 10, 60, "size units", "size of an item"),
                 data_param("bin_capacity", true, 1, 10000, 60, 100, "size units", "capacity of a bin")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(pack_flavors()), build_bin_packing},
      {{.family = "set_covering",
        .title = "Set covering",
        .problem_class = ProblemClass::kIP,
        .version = "2",
        .params = {size_param(3, 8, 4, 8, "number of candidate sites"), difficulty_param(),
                 data_param("cost", true, 1, 100000, 20, 90, "thousand dollars", "cost of opening a site")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(cover_flavors()), build_set_covering},
      {{.family = "facility_location",
        .title = "Capacitated facility location",
        .problem_class = ProblemClass::kMILP,
        .version = "2",
        .params = {size_param(2, 8, 2, 6, "number of customers"), difficulty_param(),
                 data_param("fixed_cost", true, 1, 1000000, 200, 2000, "$", "cost of opening a facility"),
                 data_param("unit_cost", true, 1, 1000, 1, 25, "$ per unit", "cost to serve a unit"),
                 data_param("demand", true, 1, 100000, 10, 90, "units", "customer demand")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(cover_flavors()), build_facility_location},
      {{.family = "shift_staffing",
        .title = "Shift staffing (covering period requirements with shifts)",
        .problem_class = ProblemClass::kIP,
        .version = "2",
        .params = {size_param(3, 8, 4, 8, "number of periods"), difficulty_param(),
                 data_param("required", true, 0, 10000, 2, 20, "staff", "staff needed in a period"),
                 data_param("wage", true, 1, 10000, 60, 160, "$ per shift", "pay for one shift")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(staff_flavors()), build_shift_staffing},
  };
  for (const RecipeFamily& f : families) out.push_back(&f);
}

}  // namespace trex::ordata
