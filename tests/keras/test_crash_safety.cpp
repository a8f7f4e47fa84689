// Files under crashes (issue 16): a process killed with SIGKILL at random moments while it writes checkpoints
// leaves a checkpoint that loads and no temporary file; saving leaves nothing in the temporary directory; a file
// that crashes libhdf5 is refused with a ValueError while this process lives on.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "osprey/errors.h"
#include "osprey/keras.h"
#include "test_util.h"

extern char** environ;

using namespace osprey;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("osprey_crash_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Files in the temporary directory that Osprey's savers used to leave ("osprey-*.weights.h5").
int osprey_temporaries() {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path())) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("osprey-") && name.ends_with(".weights.h5")) ++n;
  }
  return n;
}

}  // namespace

TEST(CrashSafety, SavingLeavesOnlyTheTargetAndRemovesStaleTemporaries) {
  SKIP_WITHOUT_HDF5();
  const fs::path dir = fresh_dir("save");
  const int before = osprey_temporaries();
  keras::Sequential m({keras::layers::Input({3}), keras::layers::Dense(2)});
  m.compile({.optimizer = "adam", .loss = "mse"});
  // What a process killed between naming its temporary and renaming it would have left (pid 2^22 + 7 is above
  // Linux's pid_max: no such process).
  std::ofstream(dir / ".m.keras.osprey-4194311-0") << "partial";
  m.save((dir / "m.keras").string());
  m.save_weights((dir / "w.weights.h5").string());
  m.save_weights((dir / "w.weights.osp").string());
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"m.keras", "w.weights.h5", "w.weights.osp"}));
  auto back = keras::models::load_model((dir / "m.keras").string());
  EXPECT_EQ(back->to_json(), m.to_json());
  EXPECT_EQ(osprey_temporaries(), before);
  // A directory that does not exist or cannot be written: typed errors naming the path.
  EXPECT_THROW(m.save((dir / "missing" / "m.keras").string()), NotFoundError);
  fs::remove_all(dir);
}

TEST(CrashSafety, AFileThatCrashesLibhdf5IsRefusedAndThisProcessLivesOn) {
  SKIP_WITHOUT_HDF5();
  // Found by tests/fuzz/fuzz_loaders: libhdf5 1.10.8 dies with SIGSEGV reading it (in process, rc 139).
  const std::string file = std::string(OSPREY_TEST_DATA_DIR) + "/hostile/hdf5_crash.weights.h5";
  keras::Sequential m({keras::layers::Input({3}), keras::layers::Dense(2)});
  m.compile({.optimizer = "adam", .loss = "mse"});
  const auto before = m.get_weights()[0].to_vector<float>();
  const std::string error = osprey::testing::error_of<ValueError>([&] { m.load_weights(file); });
  EXPECT_THAT(error, HasSubstr("hdf5_crash.weights.h5")) << error;
  EXPECT_EQ(m.get_weights()[0].to_vector<float>(), before);
}

TEST(CrashSafety, CheckpointsSurviveSigkillAtRandomMoments) {
  SKIP_WITHOUT_HDF5();
  const fs::path dir = fresh_dir("kill");
  std::mt19937 rng(12345);
  int loaded = 0, leftovers = 0;
  const int kills = 24;
  for (int k = 0; k < kills; ++k) {
    const std::string d = dir.string();
    char* argv[] = {const_cast<char*>(OSPREY_CHECKPOINT_VICTIM), const_cast<char*>(d.c_str()), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(::posix_spawn(&pid, OSPREY_CHECKPOINT_VICTIM, nullptr, nullptr, argv, environ), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 400));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the victim exited by itself (status " << status << ")";
    // Whatever is on disk is a whole checkpoint: both files load (or were not written yet).
    for (const auto& name : entries(dir)) {
      if (name == "ckpt.keras") {
        auto m = keras::models::load_model((dir / name).string());
        EXPECT_EQ(m->count_params(), 8 * 64 + 64 + 64 + 1);
        ++loaded;
      } else if (name == "ckpt.weights.h5") {
        keras::Sequential m({keras::layers::Input({8}), keras::layers::Dense(64, "relu"), keras::layers::Dense(1)});
        m.compile({.optimizer = "adam", .loss = "mse"});
        EXPECT_NO_THROW(m.load_weights((dir / name).string()));
      } else {
        ++leftovers;  // a temporary named an instant before its rename: the next save removes it
        EXPECT_TRUE(name.starts_with(".ckpt.")) << name;
      }
    }
  }
  EXPECT_GE(loaded, kills / 2) << "the victim rarely got to its first checkpoint";
  EXPECT_LE(leftovers, 2) << "temporaries outlived their processes";
  // One more save to the same paths clears any leftover; nothing else is there.
  keras::Sequential m({keras::layers::Input({8}), keras::layers::Dense(64, "relu"), keras::layers::Dense(1)});
  m.compile({.optimizer = "adam", .loss = "mse"});
  m.save((dir / "ckpt.keras").string());
  m.save_weights((dir / "ckpt.weights.h5").string());
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"ckpt.keras", "ckpt.weights.h5"}));
  fs::remove_all(dir);
}
