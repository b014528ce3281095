// Families about making things: product mix (LP), production planning with setups (MILP),
// diet (LP), blending (LP) and multi-period lot sizing (MILP).
#include <algorithm>
#include <cmath>

#include "trex/ordata/families.h"
#include "trex/ordata/family_recipe.h"
#include "trex/ordata/family_util.h"

namespace trex::ordata {

namespace {

using lp::Term;

// The vocabulary of one industry for the families that make products from resources.
struct MakerFlavor {
  std::string industry;
  std::string company;
  std::string item;  // singular noun: "product"
  std::vector<std::string> items;
  std::vector<std::string> resources;  // "carpentry time"
  std::vector<std::string> units;      // "hours", one per resource
  std::string item_unit;               // "unit", "batch", "crate"
  std::string period;                  // "week"
};

const std::vector<MakerFlavor>& maker_flavors() {
  static const std::vector<MakerFlavor> f = {
      {"furniture manufacturing", "Oakline Furniture", "product",
       {"dining chair", "coffee table", "bookshelf", "writing desk", "bed frame", "wardrobe", "bench", "cabinet"},
       {"carpentry time", "finishing time", "lumber"}, {"hours", "hours", "board feet"}, "unit", "week"},
      {"industrial bakery", "Golden Crust Bakery", "product",
       {"sourdough loaf", "rye loaf", "baguette", "brioche", "croissant tray", "bagel pack", "muffin box", "pretzel pack"},
       {"oven time", "flour", "labour"}, {"hours", "kg", "hours"}, "batch", "day"},
      {"electronics assembly", "Voltix Devices", "device",
       {"router", "smart speaker", "tablet", "headset", "camera", "thermostat", "smartwatch", "game controller"},
       {"assembly time", "testing time", "chips"}, {"hours", "hours", "units"}, "unit", "week"},
      {"paint and coatings", "Huebright Coatings", "product",
       {"matte white", "gloss black", "primer", "varnish", "wood stain", "enamel", "floor sealant", "roof coating"},
       {"mixer time", "pigment", "solvent"}, {"hours", "kg", "litres"}, "drum", "week"},
      {"craft brewing", "Riverbend Brewing", "beer",
       {"pale ale", "stout", "lager", "porter", "wheat beer", "pilsner", "amber ale", "saison"},
       {"brewhouse time", "malt", "hops"}, {"hours", "kg", "kg"}, "barrel", "month"},
      {"cosmetics", "Velvet Bloom Cosmetics", "product",
       {"lip balm", "face cream", "hand lotion", "shampoo", "conditioner", "body wash", "sun cream", "night serum"},
       {"filling time", "base oil", "fragrance"}, {"hours", "litres", "litres"}, "case", "week"},
      {"toy manufacturing", "Tinker Toys", "toy",
       {"wooden train", "puzzle box", "rocking horse", "doll house", "kite", "building set", "spinning top", "toy boat"},
       {"moulding time", "painting time", "plastic"}, {"hours", "hours", "kg"}, "carton", "week"},
      {"garment making", "Threadline Apparel", "garment",
       {"shirt", "blouse", "jacket", "skirt", "trousers", "dress", "hoodie", "coat"},
       {"cutting time", "sewing time", "fabric"}, {"hours", "hours", "metres"}, "bundle", "week"},
  };
  return f;
}

// ---------------------------------------------------------------------------------------
void build_product_mix(const BuildContext& ctx, Instance& inst) {
  const MakerFlavor& f = maker_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Rng& rng = ctx.rng;
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const double diff = ctx.difficulty;
  const int m = n <= 3 ? 2 : 3;
  auto items = first(f.items, n);
  std::vector<double> profit(n), demand(n);
  std::vector<std::vector<double>> use(m, std::vector<double>(n));
  for (int i = 0; i < n; ++i) profit[i] = d("profit");
  for (int i = 0; i < n; ++i) demand[i] = d("demand");
  for (int r = 0; r < m; ++r)
    for (int i = 0; i < n; ++i) use[r][i] = d("usage");
  const int free_item = mode == FeasibilityMode::kUnbounded ? int(rng.integer(0, n - 1)) : -1;
  if (free_item >= 0)
    for (int r = 0; r < m; ++r) use[r][free_item] = 0;
  std::vector<double> avail(m);
  for (int r = 0; r < m; ++r) {
    double full = 0;
    for (int i = 0; i < n; ++i) full += use[r][i] * demand[i];
    avail[r] = std::max(1.0, std::round(full * (0.9 - 0.6 * diff)));
  }
  // Infeasible: delivery commitments that need more of the first resource than there is.
  std::vector<double> commit(n, 0);
  if (mode == FeasibilityMode::kInfeasible) {
    double need = 0;
    for (int i = 0; i < n; ++i) need += use[0][i] * demand[i];
    if (need <= avail[0]) avail[0] = std::max(1.0, std::floor(need * 0.5));
    for (int i = 0; i < n; ++i) commit[i] = demand[i];
  }

  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMaximize;
  mod.objective_name = "profit";
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i)
    x[i] = mod.add_var("make[" + key(items[i]) + "]", commit[i], i == free_item ? lp::kInf : demand[i],
                       lp::VarType::kContinuous, profit[i]);
  for (int r = 0; r < m; ++r) {
    std::vector<Term> t;
    for (int i = 0; i < n; ++i)
      if (use[r][i] != 0) t.push_back({x[i], use[r][i]});
    mod.add_le(key(f.resources[r]), t, avail[r]);
  }
  inst.shape = {n, 0, 0, true, lp::Sense::kMaximize};

  Story& s = inst.story;
  s.company = f.company;
  s.setting = std::string(f.company) + " makes " + join_and(items) + " and plans next " + f.period +
              "'s production.";
  s.decision = std::string("how many ") + f.item_unit + "s of each " + f.item + " to make (fractional " +
               f.item_unit + "s are allowed, since the plan is a " + f.period + "ly average)";
  std::vector<std::string> cols = {"Profit ($ per " + std::string(f.item_unit) + ")"};
  for (int r = 0; r < m; ++r) cols.push_back(cap(f.resources[r]) + " (" + f.units[r] + " per " + f.item_unit + ")");
  cols.push_back("Market limit (" + std::string(f.item_unit) + "s)");
  if (mode == FeasibilityMode::kInfeasible) cols.push_back("Committed orders (" + std::string(f.item_unit) + "s)");
  Table t = table("Data per " + std::string(f.item), cap(f.item), cols, items);
  for (int i = 0; i < n; ++i) {
    size_t c = 0;
    t.cells[i][c++] = num(profit[i]);
    for (int r = 0; r < m; ++r) t.cells[i][c++] = num(use[r][i]);
    t.cells[i][c++] = i == free_item ? "unlimited" : num(demand[i]);
    if (mode == FeasibilityMode::kInfeasible) t.cells[i][c++] = num(commit[i]);
  }
  s.tables.push_back(t);
  for (int r = 0; r < m; ++r)
    s.facts.push_back("The " + f.period + " offers " + num(avail[r]) + " " + f.units[r] + " of " + f.resources[r] + ".");
  s.rules.push_back("The " + std::string(f.item) + "s together may not use more of any resource than is available.");
  s.rules.push_back("No " + std::string(f.item) + " may be made beyond its market limit.");
  if (mode == FeasibilityMode::kInfeasible)
    s.rules.push_back("Every committed order must be made in full.");
  s.objective = std::string("maximize the total ") + f.period + "ly profit in dollars";
  s.maximize = true;
}

// ---------------------------------------------------------------------------------------
void build_production_planning(const BuildContext& ctx, Instance& inst) {
  const MakerFlavor& f = maker_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const double diff = ctx.difficulty;
  const int m = 2;
  Rng& rng = ctx.rng;
  auto items = draw_names(f.items, n, rng);
  // Two of the industry's resources, in a drawn order, each with its own unit.
  std::vector<std::string> res = draw_names(f.resources, m, rng), res_unit;
  for (const std::string& r : res)
    res_unit.push_back(f.units[size_t(std::find(f.resources.begin(), f.resources.end(), r) - f.resources.begin())]);
  std::vector<double> profit(n), setup(n), limit(n), minimum(n, 0);
  std::vector<std::vector<double>> use(m, std::vector<double>(n));
  for (int i = 0; i < n; ++i) profit[i] = d("profit");
  for (int i = 0; i < n; ++i) setup[i] = d("setup_cost");
  for (int i = 0; i < n; ++i) limit[i] = d("batch_limit");
  for (int r = 0; r < m; ++r)
    for (int i = 0; i < n; ++i) use[r][i] = d("usage");
  std::vector<double> hours(m);
  for (int r = 0; r < m; ++r) {
    double full = 0;
    for (int i = 0; i < n; ++i) full += use[r][i] * limit[i];
    hours[r] = std::max(1.0, std::round(full * (0.9 - 0.6 * diff)));
  }
  if (mode == FeasibilityMode::kInfeasible) {
    double need = 0;
    for (int i = 0; i < n; ++i) need += use[0][i] * limit[i];
    hours[0] = std::max(1.0, std::floor(need * 0.6));
    minimum = limit;
  }

  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMaximize;
  mod.objective_name = "profit";
  std::vector<int> x(n), y(n);
  for (int i = 0; i < n; ++i)
    x[i] = mod.add_var("make[" + key(items[i]) + "]", minimum[i], lp::kInf, lp::VarType::kInteger, profit[i]);
  for (int i = 0; i < n; ++i)
    y[i] = mod.add_var("setup[" + key(items[i]) + "]", 0, 1, lp::VarType::kBinary, -setup[i]);
  for (int r = 0; r < m; ++r) {
    std::vector<Term> t;
    for (int i = 0; i < n; ++i) t.push_back({x[i], use[r][i]});
    mod.add_le(key(res[r]), t, hours[r]);
  }
  for (int i = 0; i < n; ++i) mod.add_le("link[" + key(items[i]) + "]", {{x[i], 1}, {y[i], -limit[i]}}, 0);
  inst.shape = {0, n, n, true, lp::Sense::kMaximize};

  Story& s = inst.story;
  s.company = f.company;
  s.setting = draw_wording(rng, {
      std::string(f.company) + " can make " + join_and(items) + ". A " + f.item + " can only be made if its line is set up for the " +
          f.period + ", which costs a fixed amount.",
      "This " + std::string(f.period) + ", " + f.company + " chooses among " + join_and(items) + "; each " + f.item +
          " it makes needs its line set up first, at a fixed cost.",
      std::string(f.company) + " plans the " + f.period + "'s output of " + join_and(items) + ". Setting up the line of a " +
          f.item + " has a fixed cost, and without a setup that " + f.item + " cannot be made."});
  s.decision = draw_wording(rng, {std::string("which lines to set up and how many whole ") + f.item_unit + "s of each " + f.item + " to make",
                                  std::string("the setups and the number of ") + f.item_unit + "s of each " + f.item,
                                  std::string("what to make, in whole ") + f.item_unit + "s, and which lines that needs set up"});
  std::vector<std::string> cols = {"Profit ($ per " + std::string(f.item_unit) + ")", "Setup cost ($)",
                                   "Most " + std::string(f.item_unit) + "s per setup"};
  for (int r = 0; r < m; ++r) cols.push_back(cap(res[r]) + " (" + res_unit[r] + " per " + f.item_unit + ")");
  if (mode == FeasibilityMode::kInfeasible) cols.push_back("Committed orders (" + std::string(f.item_unit) + "s)");
  Table t = table(draw_wording(rng, {"Data per " + std::string(f.item), cap(f.item) + " figures",
                                     "Profit, setup and resource use by " + std::string(f.item)}),
                  cap(f.item), cols, items);
  for (int i = 0; i < n; ++i) {
    size_t c = 0;
    t.cells[i][c++] = num(profit[i]);
    t.cells[i][c++] = num(setup[i]);
    t.cells[i][c++] = num(limit[i]);
    for (int r = 0; r < m; ++r) t.cells[i][c++] = num(use[r][i]);
    if (mode == FeasibilityMode::kInfeasible) t.cells[i][c++] = num(minimum[i]);
  }
  s.tables.push_back(t);
  for (int r = 0; r < m; ++r)
    s.facts.push_back(draw_wording(rng, {"There are " + num(hours[r]) + " " + res_unit[r] + " of " + res[r] + " this " + f.period + ".",
                                         cap(res[r]) + " available this " + f.period + ": " + num(hours[r]) + " " + res_unit[r] + "."}));
  s.rules.push_back(draw_wording(rng, {"Total use of each resource may not exceed what is available.",
                                       "No resource may be used beyond its availability.",
                                       "The plan must fit within the " + res[0] + " and the " + res[1] + " available."}));
  s.rules.push_back("A " + std::string(f.item) + " that is made needs its line set up, and then at most its per-setup limit can be made.");
  if (mode == FeasibilityMode::kInfeasible) s.rules.push_back("Committed orders must be made in full.");
  s.objective = draw_wording(rng, {"maximize the profit from sales minus the setup costs, in dollars",
                                   "maximize the sales profit net of setup costs, in dollars",
                                   "maximize the dollars earned once setup costs are paid out of the profit"});
  s.maximize = true;
  s.integrality = std::string("Quantities are whole ") + f.item_unit + "s; a line is either set up or not.";
}

// ---------------------------------------------------------------------------------------
struct DietFlavor {
  std::string industry;
  std::string company;
  std::string subject;  // "each patient's daily menu"
  std::vector<std::string> foods;
  std::string serving;  // "serving"
  std::vector<std::string> nutrients;
  std::vector<std::string> units;
};

const std::vector<DietFlavor>& diet_flavors() {
  static const std::vector<DietFlavor> f = {
      {"hospital catering", "St. Avery Hospital", "a patient's daily menu",
       {"oatmeal", "chicken breast", "brown rice", "lentil soup", "yogurt", "spinach salad", "whole-wheat bread", "salmon"},
       "serving", {"protein", "fibre", "calories", "calcium"}, {"g", "g", "kcal", "mg"}},
      {"livestock farming", "Green Pastures Dairy", "a cow's daily ration",
       {"alfalfa hay", "corn silage", "soybean meal", "barley", "beet pulp", "cottonseed", "wheat bran", "grass hay"},
       "kg", {"protein", "energy", "fibre", "phosphorus"}, {"g", "Mcal", "g", "g"}},
      {"school meals", "Northfield School District", "a pupil's lunch",
       {"pasta bake", "fish fingers", "vegetable curry", "bean chili", "apple slices", "milk carton", "cheese roll", "carrot sticks"},
       "portion", {"protein", "iron", "calories", "vitamin C"}, {"g", "mg", "kcal", "mg"}},
      {"pet food", "Happy Paws Petfood", "a can of dog food",
       {"beef meal", "chicken meal", "rice flour", "pea protein", "fish oil", "sweet potato", "oat groats", "egg powder"},
       "scoop", {"protein", "fat", "fibre", "calcium"}, {"g", "g", "g", "mg"}},
      {"expedition provisioning", "Polar Trek Outfitters", "a climber's daily ration",
       {"trail mix", "freeze-dried stew", "energy bar", "instant noodles", "dried fruit", "peanut butter", "jerky", "cocoa drink"},
       "pack", {"protein", "calories", "carbohydrate", "sodium"}, {"g", "kcal", "g", "mg"}},
      {"zoo nutrition", "Wildwood Zoo", "a gorilla's daily feed",
       {"leafy greens", "sweet potato", "primate biscuit", "banana", "celery", "carrot", "alfalfa cube", "green beans"},
       "portion", {"protein", "fibre", "calories", "vitamin A"}, {"g", "g", "kcal", "mg"}},
      {"sports nutrition", "Peak Form Athletics", "an athlete's recovery meal",
       {"whey shake", "egg omelette", "quinoa bowl", "turkey wrap", "cottage cheese", "banana smoothie", "tuna salad", "rice cakes"},
       "serving", {"protein", "carbohydrate", "calories", "potassium"}, {"g", "g", "kcal", "mg"}},
      {"aquaculture", "Bluewater Fish Farms", "a day's feed for a salmon pen",
       {"fish meal", "krill meal", "soy concentrate", "wheat gluten", "fish oil", "rapeseed oil", "pea meal", "algae meal"},
       "scoop", {"protein", "fat", "energy", "phosphorus"}, {"g", "g", "MJ", "g"}},
  };
  return f;
}

void build_diet(const BuildContext& ctx, Instance& inst) {
  const DietFlavor& f = diet_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const double diff = ctx.difficulty;
  const int k = n <= 3 ? 2 : 3;
  auto foods = first(f.foods, n);
  std::vector<double> cost(n), maxs(n);
  std::vector<std::vector<double>> a(k, std::vector<double>(n));
  for (int i = 0; i < n; ++i) cost[i] = d("cost");
  for (int i = 0; i < n; ++i) maxs[i] = d("max_servings");
  for (int q = 0; q < k; ++q)
    for (int i = 0; i < n; ++i) a[q][i] = d("content");
  std::vector<double> req(k);
  for (int q = 0; q < k; ++q) {
    double most = 0;
    for (int i = 0; i < n; ++i) most += a[q][i] * maxs[i];
    // Infeasible: one requirement above what the largest allowed menu provides.
    req[q] = mode == FeasibilityMode::kInfeasible && q == 0 ? most + 1 + std::floor(most * 0.2)
                                                            : std::max(1.0, std::round(most * (0.15 + 0.6 * diff)));
    if (most == 0 && mode != FeasibilityMode::kInfeasible) {
      a[q][0] = 1;  // every nutrient comes from some food
      req[q] = 1;
    }
  }

  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMinimize;
  mod.objective_name = "cost";
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i) x[i] = mod.add_var("serve[" + key(foods[i]) + "]", 0, maxs[i], lp::VarType::kContinuous, cost[i]);
  for (int q = 0; q < k; ++q) {
    std::vector<Term> t;
    for (int i = 0; i < n; ++i)
      if (a[q][i] != 0) t.push_back({x[i], a[q][i]});
    mod.add_ge("need[" + key(f.nutrients[q]) + "]", t, req[q]);
  }
  inst.shape = {n, 0, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = f.company;
  s.setting = std::string(f.company) + " composes " + f.subject + " from " + join_and(foods) + ".";
  s.decision = std::string("how many ") + f.serving + "s of each food to include (fractions allowed)";
  std::vector<std::string> cols = {"Cost ($ per " + std::string(f.serving) + ")"};
  for (int q = 0; q < k; ++q) cols.push_back(cap(f.nutrients[q]) + " (" + f.units[q] + " per " + f.serving + ")");
  cols.push_back("Most " + std::string(f.serving) + "s");
  Table t = table("Food data", "Food", cols, foods);
  for (int i = 0; i < n; ++i) {
    size_t c = 0;
    t.cells[i][c++] = num(cost[i]);
    for (int q = 0; q < k; ++q) t.cells[i][c++] = num(a[q][i]);
    t.cells[i][c++] = num(maxs[i]);
  }
  s.tables.push_back(t);
  for (int q = 0; q < k; ++q)
    s.facts.push_back(cap(f.subject) + " must provide at least " + num(req[q]) + " " + f.units[q] + " of " + f.nutrients[q] + ".");
  s.rules.push_back("Each nutrient requirement must be met by the foods chosen.");
  s.rules.push_back("No food may exceed its most " + std::string(f.serving) + "s.");
  s.objective = "minimize the total cost in dollars";
}

// ---------------------------------------------------------------------------------------
struct BlendFlavor {
  std::string industry;
  std::string company;
  std::string product;  // "a batch of feed"
  std::vector<std::string> inputs;
  std::string good;  // attribute with a minimum
  std::string good_unit;
  std::string bad;  // attribute with a maximum
  std::string bad_unit;
};

const std::vector<BlendFlavor>& blend_flavors() {
  static const std::vector<BlendFlavor> f = {
      {"animal feed milling", "Prairie Feeds", "a batch of poultry feed",
       {"corn", "soymeal", "wheat middlings", "fish meal", "sorghum", "canola meal", "oats", "limestone"},
       "protein", "kg", "fibre", "kg"},
      {"steel making", "Ironvale Foundry", "a heat of alloy steel",
       {"scrap steel", "pig iron", "ferro-chrome", "ferro-nickel", "ferro-manganese", "direct reduced iron", "alloy scrap", "nickel shot"},
       "chromium", "kg", "carbon", "kg"},
      {"fuel refining", "Bayline Refinery", "a tank of gasoline",
       {"straight-run naphtha", "reformate", "alkylate", "isomerate", "FCC gasoline", "butane", "raffinate", "ethanol"},
       "octane-barrels", "units", "sulfur", "kg"},
      {"juice bottling", "Sunvale Juices", "a production run of fruit juice",
       {"orange concentrate", "apple juice", "grape juice", "mango puree", "pineapple juice", "pear juice", "cherry juice", "lemon juice"},
       "vitamin C", "g", "sugar", "kg"},
      {"fertilizer blending", "AgriMix Fertilizers", "a truckload of fertilizer blend",
       {"urea", "ammonium nitrate", "potash", "superphosphate", "ammonium sulfate", "compost", "bone meal", "gypsum"},
       "nitrogen", "kg", "chloride", "kg"},
      {"concrete batching", "Solidset Concrete", "a batch of ready-mix concrete",
       {"portland cement", "fly ash", "slag", "river sand", "crushed stone", "gravel", "silica fume", "lime"},
       "strength index", "points", "chloride", "g"},
      {"coffee roasting", "Ember Roasters", "a lot of house blend coffee",
       {"Colombian beans", "Brazilian beans", "Ethiopian beans", "Kenyan beans", "Sumatran beans", "Guatemalan beans", "Peruvian beans", "Honduran beans"},
       "aroma score", "points", "bitterness", "points"},
      {"glass making", "Clearview Glassworks", "a melt of container glass",
       {"silica sand", "soda ash", "limestone", "dolomite", "feldspar", "cullet", "salt cake", "borax"},
       "silica", "kg", "iron oxide", "g"},
  };
  return f;
}

void build_blending(const BuildContext& ctx, Instance& inst) {
  const BlendFlavor& f = blend_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Draw& d = ctx.draw;
  const int n = ctx.size;
  const double diff = ctx.difficulty;
  auto ins = first(f.inputs, n);
  std::vector<double> cost(n), good(n), bad(n), stock(n);
  for (int i = 0; i < n; ++i) cost[i] = d("cost");
  for (int i = 0; i < n; ++i) good[i] = d("content");
  for (int i = 0; i < n; ++i) bad[i] = d("content");
  for (int i = 0; i < n; ++i) stock[i] = d("stock");
  double total_stock = 0;
  for (double v : stock) total_stock += v;
  double batch = std::min(d("batch"), std::floor(total_stock * 0.8));
  if (mode == FeasibilityMode::kInfeasible) batch = total_stock + std::round(total_stock * 0.1) + 1;
  // Requirement levels between the batch's worst and best achievable content.
  double gmax = 0, bmin = 0;
  {
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    auto greedy = [&](const std::vector<double>& attr, bool high) {
      std::vector<int> o = order;
      std::sort(o.begin(), o.end(), [&](int a, int b) { return high ? attr[a] > attr[b] : attr[a] < attr[b]; });
      double left = std::min(batch, total_stock), val = 0;
      for (int i : o) {
        double take = std::min(left, stock[i]);
        val += take * attr[i];
        left -= take;
      }
      return val;
    };
    gmax = greedy(good, true);
    bmin = greedy(bad, false);
  }
  double good_req = std::max(1.0, std::floor(gmax * (0.3 + 0.5 * diff)));
  double bad_cap = std::ceil(bmin + (batch * 0.6 - bmin) * (1 - 0.5 * diff));
  if (bad_cap <= bmin) bad_cap = std::ceil(bmin) + 1;

  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMinimize;
  mod.objective_name = "cost";
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i) x[i] = mod.add_var("use[" + key(ins[i]) + "]", 0, stock[i], lp::VarType::kContinuous, cost[i]);
  std::vector<Term> all, g, b;
  for (int i = 0; i < n; ++i) {
    all.push_back({x[i], 1});
    if (good[i] != 0) g.push_back({x[i], good[i]});
    if (bad[i] != 0) b.push_back({x[i], bad[i]});
  }
  mod.add_eq("batch_size", all, batch);
  mod.add_ge("min_" + key(f.good), g, good_req);
  mod.add_le("max_" + key(f.bad), b, bad_cap);
  inst.shape = {n, 0, 0, true, lp::Sense::kMinimize};

  Story& s = inst.story;
  s.company = f.company;
  s.setting = std::string(f.company) + " blends " + f.product + " from " + join_and(ins) + ".";
  s.decision = "how many kg of each ingredient to put into the blend";
  Table t = table("Ingredient data", "Ingredient",
                  {"Price ($ per kg)", cap(f.good) + " (" + f.good_unit + " per kg)",
                   cap(f.bad) + " (" + f.bad_unit + " per kg)", "Available (kg)"}, ins);
  for (int i = 0; i < n; ++i) t.cells[i] = {num(cost[i]), num(good[i]), num(bad[i]), num(stock[i])};
  s.tables.push_back(t);
  s.facts.push_back(cap(f.product) + " weighs exactly " + num(batch) + " kg.");
  s.facts.push_back("It must contain at least " + num(good_req) + " " + f.good_unit + " of " + f.good + " in total.");
  s.facts.push_back("It may contain at most " + num(bad_cap) + " " + f.bad_unit + " of " + f.bad + " in total.");
  s.rules.push_back("No ingredient can be used beyond the amount available.");
  s.objective = "minimize the cost of the ingredients in dollars";
}

// ---------------------------------------------------------------------------------------
struct LotFlavor {
  std::string industry;
  std::string company;
  std::string product;
  std::string unit;
  std::vector<std::string> periods;
};

const std::vector<LotFlavor>& lot_flavors() {
  static const std::vector<LotFlavor> f = {
      {"appliance manufacturing", "Brightline Appliances", "washing machines", "machine",
       {"January", "February", "March", "April", "May", "June", "July", "August"}},
      {"pharmaceuticals", "Medora Pharma", "vaccine lots", "lot",
       {"week one", "week two", "week three", "week four", "week five", "week six", "week seven", "week eight"}},
      {"bicycle assembly", "Spoke & Chain Cycles", "bicycles", "bicycle",
       {"spring", "summer", "autumn", "winter", "next spring", "next summer", "next autumn", "next winter"}},
      {"packaged foods", "Harvest Table Foods", "cases of soup", "case",
       {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "next Monday"}},
      {"semiconductor fabrication", "Quartzline Fab", "wafer batches", "batch",
       {"first quarter", "second quarter", "third quarter", "fourth quarter", "fifth quarter", "sixth quarter", "seventh quarter", "eighth quarter"}},
      {"furniture making", "Hearthwood Furniture", "sofas", "sofa",
       {"the first month", "the second month", "the third month", "the fourth month", "the fifth month", "the sixth month", "the seventh month", "the eighth month"}},
      {"printing", "Inkwell Press", "print runs of catalogues", "run",
       {"week Alpha", "week Bravo", "week Charlie", "week Delta", "week Echo", "week Foxtrot", "week Golf", "week Hotel"}},
      {"brewing", "Copperhill Brewery", "brews of lager", "brew",
       {"early January", "late January", "early February", "late February", "early March", "late March", "early April", "late April"}},
  };
  return f;
}

void build_lot_sizing(const BuildContext& ctx, Instance& inst) {
  const LotFlavor& f = lot_flavors()[size_t(ctx.industry)];
  const FeasibilityMode mode = ctx.mode;
  Draw& d = ctx.draw;
  const int T = ctx.size;
  const double diff = ctx.difficulty;
  auto per = draw_run(f.periods, T, ctx.rng);
  std::vector<double> dem(T), pc(T), sc(T), hc(T), capa(T);
  for (int t = 0; t < T; ++t) dem[t] = d("demand");
  for (int t = 0; t < T; ++t) pc[t] = d("unit_cost");
  for (int t = 0; t < T; ++t) sc[t] = d("setup_cost");
  for (int t = 0; t < T; ++t) hc[t] = d("holding_cost");
  double total = 0, peak = 0;
  for (double v : dem) total += v, peak = std::max(peak, v);
  for (int t = 0; t < T; ++t) capa[t] = std::max(peak, std::round(total / T * (2.5 - 1.5 * diff)));
  if (mode == FeasibilityMode::kInfeasible) {
    dem[0] = std::max(dem[0], 20.0);
    capa[0] = std::max(1.0, std::floor(dem[0] / 2));  // nothing in stock before the first period
  }

  lp::Model& mod = inst.model;
  mod.sense = lp::Sense::kMinimize;
  mod.objective_name = "cost";
  std::vector<int> x(T), y(T), s(T);
  for (int t = 0; t < T; ++t) x[t] = mod.add_var("make[" + key(per[t]) + "]", 0, lp::kInf, lp::VarType::kContinuous, pc[t]);
  for (int t = 0; t < T; ++t) s[t] = mod.add_var("stock[" + key(per[t]) + "]", 0, lp::kInf, lp::VarType::kContinuous, hc[t]);
  for (int t = 0; t < T; ++t) y[t] = mod.add_var("run[" + key(per[t]) + "]", 0, 1, lp::VarType::kBinary, sc[t]);
  for (int t = 0; t < T; ++t) {
    std::vector<Term> terms = {{x[t], 1}, {s[t], -1}};
    if (t > 0) terms.push_back({s[t - 1], 1});
    mod.add_eq("balance[" + key(per[t]) + "]", terms, dem[t]);
  }
  for (int t = 0; t < T; ++t) mod.add_le("capacity[" + key(per[t]) + "]", {{x[t], 1}, {y[t], -capa[t]}}, 0);
  inst.shape = {2 * T, 0, T, true, lp::Sense::kMinimize};

  Story& st = inst.story;
  st.company = f.company;
  Rng& rng = ctx.rng;
  const std::string u = f.unit;
  st.setting = draw_wording(rng, {
      std::string(f.company) + " plans production of " + f.product + " over " + join_and(per) +
          ". The warehouse is empty at the start, and stock left over at the end of a period is carried into the next.",
      "The planners at " + std::string(f.company) + " must schedule " + f.product + " for " + join_and(per) +
          ". No stock is on hand before the first period; whatever is not sold in a period stays in the warehouse for later.",
      "Over the coming periods (" + join_and(per) + "), " + std::string(f.company) + " has to decide when to produce " +
          f.product + ". It starts with an empty warehouse, and unsold " + u + "s roll over from one period to the next."});
  st.decision = draw_wording(rng, {"in which periods to run production, how much to make in each, and how much to keep in stock",
                                   "a production plan: which periods get a run, the quantity made in each, and the stock kept",
                                   "when to set up production, how many " + u + "s to make each period, and what to hold in stock"});
  Table t = table("Data per period", "Period",
                  {"Demand (" + std::string(f.unit) + "s)", "Production cost ($ per " + std::string(f.unit) + ")",
                   "Run cost ($)", "Holding cost ($ per " + std::string(f.unit) + " in stock at the end of the period)",
                   "Capacity when running (" + std::string(f.unit) + "s)"},
                  per);
  for (int k = 0; k < T; ++k) t.cells[k] = {num(dem[k]), num(pc[k]), num(sc[k]), num(hc[k]), num(capa[k])};
  st.tables.push_back(t);
  st.rules.push_back(draw_wording(rng, {
      "Demand in each period must be met on time from that period's production and the stock carried in; no backlog is allowed.",
      "Every period's demand is served from what is made in that period plus what was left over; late deliveries are not allowed.",
      "No order may be delivered late: the " + u + "s made in a period together with the stock brought in must cover its demand."}));
  st.rules.push_back(draw_wording(rng, {
      "Nothing can be made in a period without a production run, and a run makes at most that period's capacity.",
      "Production in a period requires a run (which incurs the run cost), and a run is limited to the period's capacity.",
      "A period without a setup produces nothing; with a setup, output may not exceed that period's capacity."}));
  st.objective = draw_wording(rng, {"minimize the total of production, run and holding costs in dollars",
                                    "minimize the dollar cost of making, setting up and storing over the whole horizon",
                                    "minimize total cost in dollars: production plus run costs plus holding costs"});
  st.integrality = draw_wording(rng, {"Each period either has a production run or not; quantities may be fractional.",
                                      "Whether to run in a period is a yes-or-no choice, while quantities may take fractional values.",
                                      "Runs are all-or-nothing decisions; the amounts produced and stored need not be whole."});
}

}  // namespace

void add_production_families(std::vector<const Family*>& out) {
  static const RecipeFamily families[] = {
      {{.family = "product_mix",
        .title = "Product mix (continuous production quantities)",
        .problem_class = ProblemClass::kLP,
        .version = "2",
        .params = {size_param(2, 8, 2, 5, "number of products"), difficulty_param(),
                 data_param("profit", true, 1, 1000, 10, 120, "$ per unit", "profit per unit of each product"),
                 data_param("usage", true, 0, 100, 1, 9, "resource units per unit", "resource use per unit made"),
                 data_param("demand", true, 1, 1000, 20, 90, "units", "most units the market takes")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible, FeasibilityMode::kUnbounded}},
       industries_of(maker_flavors()), build_product_mix},
      {{.family = "production_planning",
        .title = "Production planning with setup costs (whole units, setup decisions)",
        .problem_class = ProblemClass::kMILP,
        .version = "3",
        .params = {size_param(2, 8, 2, 5, "number of products"), difficulty_param(),
                 data_param("profit", true, 1, 1000, 20, 150, "$ per unit", "profit per unit made"),
                 data_param("setup_cost", true, 0, 10000, 100, 900, "$", "cost of setting up a product's line"),
                 data_param("usage", true, 1, 100, 1, 8, "hours per unit", "machine hours per unit"),
                 data_param("batch_limit", true, 1, 1000, 10, 60, "units", "most units per line setup")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(maker_flavors()), build_production_planning},
      {{.family = "diet",
        .title = "Diet / least-cost ration",
        .problem_class = ProblemClass::kLP,
        .version = "2",
        .params = {size_param(2, 8, 3, 6, "number of foods"), difficulty_param(),
                 data_param("cost", false, 0.01, 100, 0.2, 4, "$ per serving", "cost of one serving", 2),
                 data_param("content", true, 0, 1000, 0, 40, "nutrient units per serving", "nutrient content"),
                 data_param("max_servings", true, 1, 100, 2, 6, "servings", "most servings of a food")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(diet_flavors()), build_diet},
      {{.family = "blending",
        .title = "Blending to a recipe at least cost",
        .problem_class = ProblemClass::kLP,
        .version = "2",
        .params = {size_param(2, 8, 3, 6, "number of ingredients"), difficulty_param(),
                 data_param("cost", false, 0.01, 100, 0.1, 3, "$ per kg", "ingredient price", 2),
                 data_param("content", false, 0, 1, 0.01, 0.6, "kg of attribute per kg", "attribute share", 2),
                 data_param("stock", true, 1, 100000, 200, 900, "kg", "ingredient available"),
                 data_param("batch", true, 1, 100000, 500, 1500, "kg", "batch size")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(blend_flavors()), build_blending},
      {{.family = "lot_sizing",
        .title = "Multi-period lot sizing with setups and inventory",
        .problem_class = ProblemClass::kMILP,
        .version = "2",
        .params = {size_param(2, 8, 3, 6, "number of periods"), difficulty_param(),
                 data_param("demand", true, 0, 10000, 20, 120, "units per period", "demand to meet"),
                 data_param("unit_cost", true, 1, 1000, 5, 30, "$ per unit", "production cost"),
                 data_param("setup_cost", true, 1, 100000, 100, 600, "$", "cost of a production run"),
                 data_param("holding_cost", true, 1, 100, 1, 6, "$ per unit per period", "inventory cost")},
        .modes = {FeasibilityMode::kFeasible, FeasibilityMode::kInfeasible}},
       industries_of(lot_flavors()), build_lot_sizing},
  };
  for (const RecipeFamily& f : families) out.push_back(&f);
}

}  // namespace trex::ordata
