// Builds without protobuf or ISA-L (the GPU machine's bundle-only build): event files are unavailable and
// every call says so.
#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/summary.h"

namespace osprey::summary {

namespace {
[[noreturn]] void unavailable(const char* what) {
  throw FailedPreconditionError(fmt::format(
      "{}: this Osprey was built without TensorBoard event files (it needs protobuf and ISA-L at build time: "
      "Debian's libprotobuf-dev, protobuf-compiler and libisal-dev, then rebuild)", what));
}
}  // namespace

bool available() { return false; }

struct SummaryWriter::Impl {};
SummaryWriter::SummaryWriter(const std::string&, WriterOptions) { unavailable("SummaryWriter"); }
SummaryWriter::~SummaryWriter() = default;
void SummaryWriter::scalar(const std::string&, double, int64_t) { unavailable("SummaryWriter::scalar"); }
void SummaryWriter::scalars(const std::map<std::string, double>&, int64_t, const std::string&) {
  unavailable("SummaryWriter::scalars");
}
void SummaryWriter::histogram(const std::string&, const Tensor&, int64_t, int) { unavailable("SummaryWriter::histogram"); }
void SummaryWriter::text(const std::string&, const std::string&, int64_t) { unavailable("SummaryWriter::text"); }
void SummaryWriter::write_string(const std::string&, const std::string&, int64_t, const std::string&,
                                 const std::string&) {
  unavailable("SummaryWriter::write_string");
}
void SummaryWriter::flush() { unavailable("SummaryWriter::flush"); }
void SummaryWriter::close() {}
const std::string& SummaryWriter::path() const { unavailable("SummaryWriter::path"); }
std::vector<Event> read_events(const std::string&, const ReadOptions&, bool) { unavailable("read_events"); }

}  // namespace osprey::summary
