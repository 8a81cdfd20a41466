// cpu_reference_test.cc - the host side of the harness: element conversions
// and the FP64 reference GEMM on cases with known answers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "mkg_harness.h"

TEST(Reference, Bf16Conversions)
{
    EXPECT_EQ(mkg_float_to_bf16_bits(1.0f), 0x3F80);
    EXPECT_EQ(mkg_float_to_bf16_bits(-2.0f), 0xC000);
    EXPECT_EQ(mkg_bf16_bits_to_float(0x3F80), 1.0f);
    // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: rounds to even (1.0).
    EXPECT_EQ(mkg_float_to_bf16_bits(1.0f + 1.0f / 256.0f), 0x3F80);
    // 1 + 3 * 2^-8 is a tie between 1 + 2^-7 and 1 + 2^-6: rounds to even (1 + 2^-6).
    EXPECT_EQ(mkg_float_to_bf16_bits(1.0f + 3.0f / 256.0f), 0x3F82);
    EXPECT_TRUE(std::isnan(mkg_bf16_bits_to_float(mkg_float_to_bf16_bits(NAN))));
    EXPECT_EQ(mkg_bf16_bits_to_float(mkg_float_to_bf16_bits(INFINITY)), INFINITY);
    for (uint32_t h = 0; h < 0x10000; h += 7) {
        const float f = mkg_bf16_bits_to_float(static_cast<uint16_t>(h));
        if (!std::isnan(f))
            EXPECT_EQ(mkg_float_to_bf16_bits(f), h) << std::hex << h;
    }
}

TEST(Reference, E4m3Conversions)
{
    EXPECT_EQ(mkg_e4m3_bits_to_float(0x38), 1.0f);                   // exponent 7 = bias
    EXPECT_EQ(mkg_e4m3_bits_to_float(0x7E), 448.0f);                 // largest finite
    EXPECT_EQ(mkg_e4m3_bits_to_float(0x01), std::ldexp(1.0f, -9));   // smallest subnormal
    EXPECT_EQ(mkg_e4m3_bits_to_float(0xB8), -1.0f);
    EXPECT_TRUE(std::isnan(mkg_e4m3_bits_to_float(0x7F)));
    EXPECT_TRUE(std::isnan(mkg_e4m3_bits_to_float(0xFF)));
    EXPECT_EQ(mkg_float_to_e4m3_bits(1.0f + 1.0f / 16.0f), 0x38);     // tie between 1 and 1.125: even
    EXPECT_EQ(mkg_float_to_e4m3_bits(1.0f + 3.0f / 16.0f), 0x3A);     // tie between 1.125 and 1.25: even
    EXPECT_EQ(mkg_float_to_e4m3_bits(1000.0f), 0x7E);                 // saturates to 448
    EXPECT_EQ(mkg_float_to_e4m3_bits(-1000.0f), 0xFE);
    EXPECT_EQ(mkg_float_to_e4m3_bits(NAN), 0x7F);
    for (uint32_t b = 0; b < 0x100; ++b) {
        const float f = mkg_e4m3_bits_to_float(static_cast<uint8_t>(b));
        if (!std::isnan(f))
            EXPECT_EQ(mkg_float_to_e4m3_bits(f), b) << std::hex << b;
    }
}

TEST(Reference, Fp16Conversions)
{
    EXPECT_EQ(mkg_float_to_fp16_bits(1.0f), 0x3C00);
    EXPECT_EQ(mkg_float_to_fp16_bits(-2.0f), 0xC000);
    EXPECT_EQ(mkg_float_to_fp16_bits(65504.0f), 0x7BFF);
    EXPECT_EQ(mkg_float_to_fp16_bits(65520.0f), 0x7C00);                 // rounds to +inf
    EXPECT_EQ(mkg_float_to_fp16_bits(std::ldexp(1.0f, -24)), 0x0001);     // smallest subnormal
    EXPECT_EQ(mkg_float_to_fp16_bits(1.0f + 1.0f / 2048.0f), 0x3C00);     // tie to even
    EXPECT_EQ(mkg_float_to_fp16_bits(1.0f + 3.0f / 2048.0f), 0x3C02);     // tie to even
    EXPECT_EQ(mkg_fp16_bits_to_float(0x7C00), INFINITY);
    EXPECT_TRUE(std::isnan(mkg_fp16_bits_to_float(0x7E00)));
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = mkg_fp16_bits_to_float(static_cast<uint16_t>(h));
        if (!std::isnan(f))
            EXPECT_EQ(mkg_float_to_fp16_bits(f), h) << std::hex << h;
    }
}

TEST(Reference, GemmMatchesHandComputedValues)
{
    // A (2 x 3), B (2 x 3): R = A . B^T.
    const float a[6] = {1, 2, 3, 4, 5, 6};
    const float b[6] = {1, 0, -1, 0.5f, 0.25f, 2};
    std::vector<uint16_t> ah(6), bh(6);
    for (int i = 0; i < 6; ++i) {
        ah[i] = mkg_float_to_bf16_bits(a[i]);
        bh[i] = mkg_float_to_bf16_bits(b[i]);
    }
    double r[4] = {0, 0, 0, 0};
    mkg_ref_gemm_cpu(ah.data(), bh.data(), MKG_DTYPE_BF16, 2, 2, 3, 3, 3, r, 2);
    EXPECT_DOUBLE_EQ(r[0], 1 - 3);
    EXPECT_DOUBLE_EQ(r[1], 0.5 + 0.5 + 6);
    EXPECT_DOUBLE_EQ(r[2], 4 - 6);
    EXPECT_DOUBLE_EQ(r[3], 2 + 1.25 + 12);
}

TEST(Reference, GemmHonoursLeadingDimensionsAndFp16)
{
    // 3 x 2 A with lda 4, 2 x 2 B with ldb 3; pads hold values that must not be read.
    std::vector<uint16_t> a = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    std::vector<uint16_t> b = {0, 0, 0, 0, 0, 0};
    const float av[3][2] = {{1, 2}, {3, 4}, {-1, 0.5f}};
    const float bv[2][2] = {{2, 1}, {-1, 3}};
    for (int i = 0; i < 3; ++i) {
        for (int k = 0; k < 2; ++k)
            a[i * 4 + k] = mkg_float_to_fp16_bits(av[i][k]);
        a[i * 4 + 2] = a[i * 4 + 3] = mkg_float_to_fp16_bits(1000.0f);
    }
    for (int j = 0; j < 2; ++j) {
        for (int k = 0; k < 2; ++k)
            b[j * 3 + k] = mkg_float_to_fp16_bits(bv[j][k]);
        b[j * 3 + 2] = mkg_float_to_fp16_bits(-1000.0f);
    }
    double r[6];
    mkg_ref_gemm_cpu(a.data(), b.data(), MKG_DTYPE_FP16, 3, 2, 2, 4, 3, r, 2);
    EXPECT_DOUBLE_EQ(r[0], 4);
    EXPECT_DOUBLE_EQ(r[1], 5);
    EXPECT_DOUBLE_EQ(r[2], 10);
    EXPECT_DOUBLE_EQ(r[3], 9);
    EXPECT_DOUBLE_EQ(r[4], -1.5);
    EXPECT_DOUBLE_EQ(r[5], 2.5);
}
