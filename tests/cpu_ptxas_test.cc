// cpu_ptxas_test.cc - reads the ptxas -v reports of the device translation units
// (built by the mkgemm_ptxas_report target) and requires, for every kernel:
// no spills, no stack frame, and no C75xx wgmma serialization advisory.
// The sample megakernel (megakernel/mkg_megakernel.cu) is held to no C75xx advisory
// and a bounded stack: it still spills (bench/NOTES.md), and this keeps it from growing.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifndef MKG_PTXAS_LOGS
#error "MKG_PTXAS_LOGS must list the ptxas report files"
#endif

namespace {

std::vector<std::string> split_list(const std::string &s)
{
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, '|'))
        if (!item.empty())
            out.push_back(item);
    return out;
}

// Stack frame (spill slots) the sample megakernel is allowed today.
constexpr int kMegakernelStackBytes = 512;

}  // namespace

TEST(Ptxas, NoSpillsNoStackNoWgmmaSerialization)
{
    const std::vector<std::string> logs = split_list(MKG_PTXAS_LOGS);
    ASSERT_FALSE(logs.empty());
    for (const std::string &path : logs) {
        std::ifstream f(path);
        ASSERT_TRUE(f.good()) << "missing ptxas report " << path;
        std::string line;
        int entries = 0, properties = 0;
        while (std::getline(f, line)) {
            if (line.find("Compiling entry function") != std::string::npos)
                ++entries;
            if (line.find("spill stores") != std::string::npos) {
                ++properties;
                if (path.find("mkg_megakernel") != std::string::npos) {
                    const int stack = std::stoi(line.substr(line.find_first_of("0123456789")));
                    EXPECT_LE(stack, kMegakernelStackBytes) << path << ": " << line;
                    continue;
                }
                EXPECT_NE(line.find("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
                          std::string::npos)
                    << path << ": " << line;
            }
            EXPECT_EQ(line.find("(C75"), std::string::npos) << path << ": " << line;
            EXPECT_EQ(line.find("error"), std::string::npos) << path << ": " << line;
            if (path.find("mkg_megakernel") == std::string::npos)
                EXPECT_EQ(line.find("warning"), std::string::npos) << path << ": " << line;
        }
        EXPECT_GT(entries, 0) << path << " lists no kernels";
        EXPECT_GE(properties, entries) << path;
    }
}
