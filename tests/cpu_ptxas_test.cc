// cpu_ptxas_test.cc - reads the ptxas -v reports of the device translation units
// (built by the mkgemm_ptxas_report target) and requires, for every kernel:
// no spills, no stack frame, and no C75xx wgmma serialization advisory.
// The sample megakernel (megakernel/mkg_megakernel.cu) is held to no C75xx advisory
// and a bounded stack: it still spills (bench/NOTES.md), and this keeps it from growing.
// One more bounded exception: the run-time-epilogue variant of the one-GEMM dispatch test
// kernel (tests/mkg_dispatch_test_kernel.cu, the README's dispatch example) spills 8 bytes
// since v53: its consumer region sits at the 232-register setmaxnreg cap on the wide rows'
// run-time epilogues, and four more switch cases tipped it (bench/NOTES.md, v53).
// And a bounded stack for the chunk-stepping form of that test kernel (tests/
// mkg_dispatch_test_kernel_chunked.cu, v86): its loop over several layers per launch keeps a few
// more registers live across the switch of chunk-folding rows than the bench's one-layer
// chunk-stepping kernel (bench/mkg_bench_dispatch_chunked.cu), which is held to no spills here.
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

// The run-time-epilogue dispatch test kernel: its mangled name, and the spill it is allowed.
constexpr const char *kDispatchRuntimeEpilogue = "mkg_dispatch_test_kernelILi0ELin1E";
constexpr const char *kDispatchRuntimeEpilogueSpill = "8 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads";
constexpr const char *kDispatchRuntimeEpilogueWarning = "', 8 bytes spill stores, 4 bytes spill loads";

// The chunk-stepping dispatch test kernels (any input dtype, run-time epilogue, CHUNKS = 1, either
// pick) and the stack and spill stores they are allowed today (bench/NOTES.md, v86 and v88).
constexpr const char *kDispatchChunkedTest = "ELin1ELi1ELb";
constexpr int kDispatchChunkedTestStackBytes = 768;
constexpr int kDispatchChunkedTestSpillBytes = 1536;

std::string trimmed(const std::string &s)
{
    const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t\r");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

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
        std::string function;                          // of the last "Function properties for" line
        while (std::getline(f, line)) {
            if (line.find("Compiling entry function") != std::string::npos)
                ++entries;
            const size_t fp = line.find("Function properties for ");
            if (fp != std::string::npos)
                function = line.substr(fp + 24);
            if (line.find("spill stores") != std::string::npos) {
                ++properties;
                if (path.find("mkg_megakernel") != std::string::npos) {
                    const int stack = std::stoi(line.substr(line.find_first_of("0123456789")));
                    EXPECT_LE(stack, kMegakernelStackBytes) << path << ": " << line;
                    continue;
                }
                if (function.find(kDispatchRuntimeEpilogue) != std::string::npos &&
                    trimmed(line) == kDispatchRuntimeEpilogueSpill)
                    continue;
                if (function.find("mkg_dispatch_test_kernel") != std::string::npos &&
                    function.find(kDispatchChunkedTest) != std::string::npos) {
                    // "<stack> bytes stack frame, <stores> bytes spill stores, <loads> bytes spill loads"
                    const size_t comma = line.find(',');
                    const int stack = std::stoi(line.substr(line.find_first_of("0123456789")));
                    const int stores = std::stoi(line.substr(line.find_first_of("0123456789", comma)));
                    EXPECT_LE(stack, kDispatchChunkedTestStackBytes) << path << ": " << line;
                    EXPECT_LE(stores, kDispatchChunkedTestSpillBytes) << path << ": " << line;
                    continue;
                }
                EXPECT_NE(line.find("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
                          std::string::npos)
                    << path << ": " << line;
            }
            EXPECT_EQ(line.find("(C75"), std::string::npos) << path << ": " << line;
            EXPECT_EQ(line.find("error"), std::string::npos) << path << ": " << line;
            const bool allowed_spill_warning = line.find(kDispatchRuntimeEpilogue) != std::string::npos &&
                                               line.find(kDispatchRuntimeEpilogueWarning) != std::string::npos;
            if (path.find("mkg_megakernel") == std::string::npos && !allowed_spill_warning)
                EXPECT_EQ(line.find("warning"), std::string::npos) << path << ": " << line;
        }
        EXPECT_GT(entries, 0) << path << " lists no kernels";
        EXPECT_GE(properties, entries) << path;
    }
}
