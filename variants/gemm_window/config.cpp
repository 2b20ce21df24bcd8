#include "variants/gemm_window/config.hpp"

#include <algorithm>
#include <cstring>

#include "core/errors.hpp"
#include "core/problem.hpp"

namespace mk::gemm_window {

const TileConfig* find_tile(const std::string& name) {
  for (const TileConfig& tile : kTileConfigs)
    if (name == tile.name) return &tile;
  return nullptr;
}

const char* to_string(UpdateMode mode) {
  switch (mode) {
    case UpdateMode::Global: return "global";
    case UpdateMode::Shared: return "shared";
    case UpdateMode::Sorted: return "sorted";
  }
  return "?";
}

UpdateMode parse_update(const std::string& text) {
  if (text == "global") return UpdateMode::Global;
  if (text == "shared") return UpdateMode::Shared;
  if (text == "sorted") return UpdateMode::Sorted;
  throw InputError("gemm-window: unknown update '" + text + "' (expected global, shared or sorted)");
}

Geometry make_geometry(int n, int kmin, int kmax, const TileConfig& tile) {
  Geometry geometry;
  geometry.npad = padded_dims(n);
  geometry.chunks = geometry.npad / kChunkDims;
  const KRange range{kmin, kmax};
  int widest = 1;
  for (int k = kmin; k <= kmax; ++k) {
    GroupInfo group;
    group.k = k;
    group.slot_offset = range.slot_offset(k);
    group.first_tile = geometry.total_tiles;
    group.tiles = padded_group(k, tile.bn) / tile.bn;
    geometry.total_tiles += group.tiles;
    widest = std::max(widest, group.tiles * tile.bn);
    geometry.groups.push_back(group);
  }
  geometry.total_columns = geometry.total_tiles * tile.bn;
  geometry.index_bits = bits_for(widest);
  geometry.slots = range.sum();
  return geometry;
}

Geometry make_batch_geometry(int n, int k, int batch, const TileConfig& tile) {
  Geometry geometry = make_geometry(n, k, k, tile);
  const GroupInfo one = geometry.groups[0];
  geometry.groups.clear();
  for (int b = 0; b < batch; ++b) {
    GroupInfo group = one;
    group.slot_offset = b * k;
    group.first_tile = b * one.tiles;
    geometry.groups.push_back(group);
  }
  geometry.total_tiles = batch * one.tiles;
  geometry.total_columns = geometry.total_tiles * tile.bn;
  geometry.slots = batch * k;
  return geometry;
}

}  // namespace mk::gemm_window
