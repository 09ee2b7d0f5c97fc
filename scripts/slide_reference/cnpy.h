// Stand-in for cnpy (https://github.com/rogersce/cnpy), which the reference SLIDE code links
// only to load and save weights. scripts/slide_reference_check.py never does either, so
// loading fails loudly and saving does nothing.
#pragma once
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace cnpy {
struct NpyArray {
    template <typename T> T* data() { throw std::runtime_error("cnpy stand-in: weights are never loaded"); }
};
typedef std::map<std::string, NpyArray> npz_t;
inline npz_t npz_load(const std::string&) { throw std::runtime_error("cnpy stand-in: weights are never loaded"); }
template <typename T>
void npz_save(const std::string&, const std::string&, const T*, std::vector<size_t>, const std::string&) {}
}  // namespace cnpy
