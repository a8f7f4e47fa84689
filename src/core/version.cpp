#include <string>

#include "osprey/random.h"

namespace osprey {
std::string version() { return OSPREY_VERSION_STRING; }
}  // namespace osprey

namespace osprey::keras::utils {
void set_random_seed(uint64_t seed) { random::set_seed(seed); }
}  // namespace osprey::keras::utils
