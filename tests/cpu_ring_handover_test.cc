// cpu_ring_handover_test.cc - the ring handover of mkg_ring_handover.h, run on a model of the
// shared-memory ring: a producer that fills stages of units of random schedules and changes the
// layout as mkg_ring_switch does (drain or handover gates), consumers that release stages in
// fill order at random times, and mbarrier parity waits as the hardware answers them. No fill
// may overwrite the bytes or re-arm the barrier pair of a stage that is not yet released, and
// the producer must never wait for a release that cannot come.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "mkgemm.h"
#include "mkg_ring_handover.h"

namespace {

constexpr int kBarriers = 16;   // MKG_LAUNCH_MAX_STAGES

// Ring geometry of schedule s as the dispatcher lays it out (mkg_shape::STAGE_BYTES: TK / 64
// sub-tiles of (TM + TN) 128-byte rows).
int key_of(int s)
{
    const mkg_schedule_info *i = mkg_schedule_get(s);
    return mkg_ring_key(i->stages, (unsigned)((i->tile_m + i->tile_n) * 128 * (i->tile_k / 64)));
}

std::vector<int> ring_keys()
{
    std::vector<int> keys;
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)
        if (mkg_schedule_get(s)->cluster == 1)
            keys.push_back(key_of(s));
    return keys;
}

// Reference forms of the handover's choices, written plainly (mkg_ring_handover.h walks the
// slots once with running offsets instead).
int ref_recency(int i, int p, int st)
{
    return ((i - p) % st + st) % st;
}

int ref_gate(int old_key, int p, int new_key, int j)
{
    const int sto = mkg_ring_key_stages(old_key), so = mkg_ring_key_kb(old_key), sn = mkg_ring_key_kb(new_key);
    int gate = p, best = -1;
    for (int i = 0; i < sto; ++i)
        if (i * so < (j + 1) * sn && j * sn < (i + 1) * so && ref_recency(i, p, sto) > best) {
            best = ref_recency(i, p, sto);
            gate = i;
        }
    return gate;
}

int ref_first_wait(int old_key, int p, int new_key, int j)
{
    const int sto = mkg_ring_key_stages(old_key);
    int w = ref_recency(ref_gate(old_key, p, new_key, j), p, sto);
    if (j < sto)
        w = std::max(w, ref_recency(j, p, sto));
    return w;
}

struct Fill {
    int slot, lo, hi;   // barrier pair, bytes in KB
};

struct Ring {
    // Hardware: completed phases of each empty barrier (one per release).
    int phase[kBarriers] = {};
    // Producer state, as mkg_ring.
    uint32_t parity = 0;
    int slot = 0, layout = -1;
    uint32_t fills = 0;
    int gate[kBarriers] = {};
    std::deque<Fill> pending;   // filled, not yet released, in fill order

    // mbarrier.try_wait.parity: the phase of parity `par` has completed.
    bool passed(int b, uint32_t par) const { return (uint32_t)(phase[b] & 1) != par; }
    uint32_t bit(int s) const { return (parity >> s) & 1u; }
    void release()
    {
        ++phase[pending.front().slot];
        pending.pop_front();
    }
};

// One run: `units` units of random schedules and stage counts; the consumers release with
// probability `release_p` per step. Returns the number of handovers that ran gated.
int run_ring(uint32_t seed, int units, double release_p, bool handover)
{
    std::mt19937 rng(seed);
    const std::vector<int> keys = ring_keys();
    std::uniform_int_distribution<int> pick(0, (int)keys.size() - 1), stages(1, 40);
    std::bernoulli_distribution rel(release_p);
    Ring r;
    int gated_switches = 0;
    for (int u = 0; u < units; ++u) {
        // Runs of one layout, as a model's GEMMs come: keep the last key half of the time.
        const int key = (u > 0 && rng() % 2) ? r.layout : keys[pick(rng)];
        const int n = stages(rng);
        // mkg_ring_switch
        if (r.layout != key) {
            int start = 0;
            bool gated = false;
            uint32_t gates = 0;
            if (handover && r.layout >= 0) {
                start = mkg_ring_handover_start(r.layout, r.slot, key);
                if (r.fills >= (uint32_t)mkg_ring_key_stages(r.layout)) {
                    gated = true;
                    unsigned char g[kBarriers];
                    gates = mkg_ring_handover_gates(r.layout, r.slot, key, start, r.parity, g);
                    for (int j = 0; j < kBarriers; ++j)
                        if ((gates >> j) & 1u) {
                            EXPECT_LT(g[j] & 31, mkg_ring_key_stages(r.layout));
                            r.gate[j] = g[j];
                        }
                }
            }
            if (r.layout >= 0 && !gated) {
                for (;;) {   // the whole drain
                    bool all = true;
                    for (int b = 0; b < kBarriers; ++b)
                        all = all && r.passed(b, r.bit(b) ^ 1u);
                    if (all)
                        break;
                    if (r.pending.empty()) {
                        ADD_FAILURE() << "seed " << seed << ": the drain waits for a release that cannot come";
                        return -1;
                    }
                    r.release();
                }
            }
            gated_switches += gated;
            r.parity = (r.parity & 0xffffu) | gates << 16;
            r.layout = key;
            r.slot = start;
            r.fills = 0;
        }
        const int st = mkg_ring_key_stages(key), kb = mkg_ring_key_kb(key);
        for (int i = 0; i < n; ++i) {
            const int s = r.slot;
            // mkg_ring_wait_empty: the gate (first fill after a handover), then the own pair.
            for (;;) {
                const bool gate_ok = !((r.parity >> 16 >> s) & 1u) ||
                                     r.passed(r.gate[s] & 31, (uint32_t)(r.gate[s] >> 7));
                if (gate_ok && r.passed(s, r.bit(s) ^ 1u))
                    break;
                if (r.pending.empty()) {
                    ADD_FAILURE() << "seed " << seed << " unit " << u << ": slot " << s
                                  << " waits for a release that cannot come";
                    return -1;
                }
                r.release();
            }
            // Consumers run on meanwhile.
            while (!r.pending.empty() && rel(rng))
                r.release();
            const Fill f{s, s * kb, s * kb + kb};
            for (const Fill &o : r.pending) {
                if (o.slot == s) {
                    ADD_FAILURE() << "seed " << seed << " unit " << u << ": barrier pair " << s
                                  << " re-armed before its stage was released";
                    return -1;
                }
                if (f.lo < o.hi && o.lo < f.hi) {
                    ADD_FAILURE() << "seed " << seed << " unit " << u << ": slot " << s << " [" << f.lo << ", "
                                  << f.hi << ") KB overwrites slot " << o.slot << " [" << o.lo << ", " << o.hi
                                  << ") before its release";
                    return -1;
                }
            }
            EXPECT_LE(f.hi, 192) << "a stage past the launch-wide ring";
            r.pending.push_back(f);
            r.parity = (r.parity ^ (1u << s)) & ~(0x10000u << s);   // mkg_ring_advance
            r.slot = s + 1 == st ? 0 : s + 1;
        }
        r.fills += (uint32_t)n;
    }
    return gated_switches;
}

TEST(RingHandover, NoFillOverwritesAStageBeforeItsRelease)
{
    int gated = 0;
    for (uint32_t seed = 1; seed <= 400; ++seed) {
        const double p = seed % 4 == 0 ? 0.02 : seed % 4 == 1 ? 0.3 : seed % 4 == 2 ? 0.7 : 0.97;
        const int g = run_ring(seed, 200, p, true);
        ASSERT_GE(g, 0);
        gated += g;
    }
    EXPECT_GT(gated, 1000) << "the gated handover hardly ran: the test would not see its mistakes";
}

TEST(RingHandover, TheDrainItReplacesPassesTheSameModel)
{
    for (uint32_t seed = 1; seed <= 100; ++seed)
        ASSERT_EQ(run_ring(seed, 200, 0.3, false), 0);
}

// The one-pass start and gates agree with the plain definitions for every pair of ring
// geometries and every old ring position.
TEST(RingHandover, OnePassChoicesMatchTheDefinitions)
{
    const std::vector<int> keys = ring_keys();
    for (int a : keys)
        for (int b : keys) {
            if (a == b)
                continue;
            const int sto = mkg_ring_key_stages(a), stn = mkg_ring_key_stages(b);
            for (int p = 0; p < sto; ++p) {
                const int start = mkg_ring_handover_start(a, p, b);
                ASSERT_GE(start, 0);
                ASSERT_LT(start, stn);
                int best = 1 << 30, first = -1;
                for (int j = 0; j < stn; ++j)
                    if (ref_first_wait(a, p, b, j) < best) {
                        best = ref_first_wait(a, p, b, j);
                        first = j;
                    }
                ASSERT_EQ(start, first) << "keys " << a << " -> " << b << " p " << p;
                const unsigned int parity = 0x5a5au;
                unsigned char g[kBarriers];
                const unsigned int mask = mkg_ring_handover_gates(a, p, b, start, parity, g);
                for (int j = 0; j < stn; ++j) {
                    const int want = ref_gate(a, p, b, j);
                    const bool left_out = want == j || (want < stn && ref_recency(want, start, stn) <
                                                                          ref_recency(j, start, stn));
                    ASSERT_EQ((mask >> j) & 1u, left_out ? 0u : 1u) << "keys " << a << " -> " << b << " p " << p
                                                                    << " slot " << j;
                    if (!left_out) {
                        ASSERT_EQ(g[j] & 31, want);
                        ASSERT_EQ((unsigned)g[j] >> 7, ((parity >> want) & 1u) ^ 1u);
                    }
                }
                ASSERT_EQ(mask >> stn, 0u);
            }
        }
}

// The decode megakernel's change from gate_up's ring (5 x 34 KB) to down's (8 x 20 KB) with
// gate_up's last stage in slot 0: down's first fill needs only the two oldest of the five old
// stages released, not all five.
TEST(RingHandover, GateUpToDownStartsBehindTheOldestStages)
{
    const int up = key_of(mkg_schedule_find("m8n128k128_s5_swap_rn_g8"));
    const int down = key_of(mkg_schedule_find("m16n64k128_s8_swap_rn_g8_sk8"));
    ASSERT_EQ(mkg_ring_key_stages(up), 5);
    ASSERT_EQ(mkg_ring_key_kb(up), 34);
    ASSERT_EQ(mkg_ring_key_kb(down), 20);
    const int p = 1;   // the next old slot: slot 0 holds the newest stage
    const int start = mkg_ring_handover_start(up, p, down);
    EXPECT_LE(ref_first_wait(up, p, down, start), 1);
    EXPECT_EQ(ref_first_wait(up, p, down, 0), 4) << "slot 0 lies under the newest old stage";
    // Every key is its geometry: rows of one stage count and size share a layout.
    EXPECT_EQ(key_of(mkg_schedule_find("m16n64k128_s8_swap_rn_g8")), down);
}

}  // namespace
