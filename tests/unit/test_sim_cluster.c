/* test_sim_cluster: the Cluster mode simulation (tests/sim/sim_cluster.h,
 * docs/simulation.md) run in the unit suite: a million steps over many seeds, each a
 * RedisCluster in mode Cluster, 3 shards x (1 + R) nodes going 3 -> 4 -> 3 shards under
 * faults drawn from its seed, cluster_topo's ctopo_compute deciding every reconcile and
 * slotmove_run moving the slots; every invariant checked as it runs. A broken invariant
 * prints its seed, its step and the command that replays it.
 *
 * By hand (the same binary):
 *   SIM_TOTAL=N       steps in all (default 1000000), over seeds of SIM_STEPS steps each
 *   SIM_STEPS=N       steps of one seed's run (default 40000; its last 2000 without faults)
 *   SIM_SEED=X        the first seed (default 1); with SIM_TOTAL unset, only that seed:
 *                     a replay (SIM_TRACE=1 prints every event of it to stderr)
 *   SIM_REPLICAS=N    replicas per shard (1..2; default: drawn from each seed)
 *   SIM_OVERLAP=1     faults that hurt nodes may overlap
 *   SIM_FAULTS=a,b    only these fault kinds (sc_fault_name), e.g. kill-master,partition;
 *                     lose-conf-early (a master's pod back with a new node id before the
 *                     old one is FAIL) is the one left out of the default set
 *   SIM_EVERY=N       mean steps between faults (default 300)
 *   SIM_NO_RESHARD=1  the layout stays 3 shards
 *   SIM_FINDINGS=1    also run the findings' seeds (docs/simulation.md, "Cluster mode"):
 *                     each must still break an invariant while its bug is there
 */
#include "cu_table.h"
#include "sim_cluster.h"
#include "sim_env.h"
#include "sim_test.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TOTAL 1000000
#define DEFAULT_STEPS 40000
#define MAX_FAILURES 3

static sc_cfg_t cfg_of(uint64_t seed, int64_t steps)
{
    sc_cfg_t c = {0};
    SIM_TEST_CFG_STEPS(c, seed, steps);
    c.replicas = (int)sim_env_int("SIM_REPLICAS", 0);
    c.overlap = (int)sim_env_int("SIM_OVERLAP", 0);
    c.faults = sim_env_kinds("SIM_FAULTS", SC_F_COUNT, sc_fault_name);
    c.fault_every = sim_env_int("SIM_EVERY", 0);
    c.no_reshard = (int)sim_env_int("SIM_NO_RESHARD", 0);
    c.no_force_guard = (int)sim_env_int("SIM_NO_FORCE_GUARD", 0);
    c.no_move_wait = (int)sim_env_int("SIM_NO_MOVE_WAIT", 0);
    c.no_broadcast = (int)sim_env_int("SIM_NO_BROADCAST", 0);
    return c;
}

static void print_failure(const sc_cfg_t *c, const sc_result_t *r)
{
    static const char *const knobs[] = {"SIM_REPLICAS",   "SIM_OVERLAP",        "SIM_FAULTS",      "SIM_EVERY",
                                        "SIM_NO_RESHARD", "SIM_NO_FORCE_GUARD", "SIM_NO_MOVE_WAIT",
                                        "SIM_NO_BROADCAST"};
    char size[32];
    snprintf(size, sizeof(size), "3 shards x %d", 1 + r->replicas);
    sim_test_print_failure("test_sim_cluster", c->seed, c->steps, r->step, size, r->why, knobs,
                           sizeof(knobs) / sizeof(knobs[0]));
}

typedef struct {
    int64_t seeds, failed, steps, writes, acked, unsafe, reconciles, decisions, commands, refused, moves;
    int64_t slots_moved, keys_moved, elections, manual, noaddr, reshards, recoveries, recover_max, converge_max;
    int64_t faults[SC_F_COUNT];
} totals_t;

static void add(totals_t *t, const sc_result_t *r)
{
    SIM_TEST_ADD_SHARED(t, r);
    t->unsafe += r->unsafe_acked;
    t->decisions += r->decisions;
    t->refused += r->refused;
    t->moves += r->moves;
    t->slots_moved += r->slots_moved;
    t->keys_moved += r->keys_moved;
    t->elections += r->elections;
    t->manual += r->manual_failovers;
    t->noaddr += r->noaddr;
    t->reshards += r->reshards_done;
}

static void print_totals(const void *totals, double secs)
{
    const totals_t *t = totals;
    fprintf(stderr,
            "\n  %lld steps (%.1f simulated hours) over %lld seeds in %.1f s (%.0f steps/s): %lld failed; %lld writes, "
            "%lld acknowledged (%lld by a master flagged FAIL, not kept by Redis Cluster); %lld reconciles (%lld "
            "decided anew), %lld Redis commands (%lld refused)",
            (long long)t->steps, (double)t->steps / 36000.0, (long long)t->seeds, secs, (double)t->steps / secs,
            (long long)t->failed, (long long)t->writes, (long long)t->acked, (long long)t->unsafe,
            (long long)t->reconciles, (long long)t->decisions, (long long)t->commands, (long long)t->refused);
    fprintf(stderr,
            "; %lld slot move runs (%lld slots, %lld keys), %lld shards retired; %lld Redis Cluster elections, %lld "
            "manual failovers, %lld noaddr marks; %lld recoveries, longest %.1f s; convergence after the last fault "
            "within %.1f s",
            (long long)t->moves, (long long)t->slots_moved, (long long)t->keys_moved, (long long)t->reshards,
            (long long)t->elections, (long long)t->manual, (long long)t->noaddr, (long long)t->recoveries,
            (double)t->recover_max / 10.0, (double)t->converge_max / 10.0);
    sim_test_print_faults(t->faults, SC_F_COUNT, sc_fault_name);
}

/* The simulation for sim_test.h (one trace level: every event). */
static void run(void *totals, uint64_t seed, int64_t steps, FILE *trace, int64_t level, sim_test_run_t *out)
{
    (void)level;
    sc_cfg_t c = cfg_of(seed, steps);
    c.trace = trace;
    sc_result_t r;
    int rc = sc_run(&c, &r); /* r zeroed first, also for no world */
    if (rc > 0 && totals)
        print_failure(&c, &r);
    if (rc >= 0 && totals)
        add(totals, &r);
    *out = (sim_test_run_t){rc, r.steps, r.step, r.acked, r.digest};
}

/* Seeds from SIM_SEED on, SIM_STEPS each, until SIM_TOTAL steps; every one must hold. */
static void test_million_steps(void)
{
    totals_t t = {0};
    if (sim_test_seeds(run, &t, print_totals, DEFAULT_TOTAL, DEFAULT_STEPS, MAX_FAILURES))
        return; /* a replay */
    /* Not vacuous: the faults led to what the invariants are about. */
    CU_ASSERT(t.acked > t.steps / 10);
    CU_ASSERT(t.elections > 0);
    /* (3 -> 4 moves 4096 slots, 4 -> 3 as many; a slot finished by a run after a crash may
     * count as skipped there) */
    CU_ASSERT(t.slots_moved > 2 * 4000 * (t.seeds - t.failed));
    CU_ASSERT(t.reshards >= t.seeds - t.failed);
    CU_ASSERT(t.recoveries > 0);
}

/* The same seed gives the same run, event for event, traced or not. */
static void test_replay_is_deterministic(void)
{
    sim_test_replay(run, 101, 102, 0);
}

#define F(kind) SC_FAULT_BIT(SC_F_##kind)

/* The operator's bugs the simulation found (docs/simulation.md, "Cluster mode"), each a
 * seed and the faults that show it. OPEN: its trigger is kept out of the default set; with
 * SIM_FINDINGS=1 it is run and must still fail. FIXED: a regression row, run every time,
 * that must hold (and that failed before its fix: where the simulation can leave the fix
 * out, UNFIX, SIM_FINDINGS=1 runs it so too and it must fail). MOVED: open or unproven,
 * but its seed no longer shows it since the model's observer changed (FRESHNESS: every
 * pod probed after a command), so it is listed, not asserted. Without SIM_FINDINGS the
 * replays of the others are listed. The sets named _V1 are those the seeds were found
 * with, before kill-target (a fault drawn by the slot moves) existed. */
enum { OPEN, FIXED, MOVED };
enum { KEEP, UNFIX }; /* UNFIX: the seed was found before findings 8's and 5's fixes, which the
                       * simulation can leave out (SIM_NO_FORCE_GUARD=1 SIM_NO_MOVE_WAIT=1) */
static const struct {
    const char *what;
    uint64_t seed;
    unsigned faults;
    int64_t every;
    int state;
    int unfix; /* FIXED: UNFIX when the simulation can leave the fix out (KEEP: it cannot) */
    int no_broadcast; /* 1: the model of before finding 9's fix (SIM_NO_BROADCAST=1) */
} rows[] = {
    {"1: a pod back without nodes.conf but with its AOF is met and wins its keys' slots by an epoch "
     "collision", 4, F(STALE_AOF), 0, MOVED, KEEP, 0},
    {"1 (fixed by step 9, CLUSTER BUMPEPOCH of a master at epoch 0): (the same: two masters in a shard for "
     "good)", 2, F(STALE_AOF), 0, FIXED, KEEP, 0},
    {"7 (fixed with 4: the same RETIRE): with stale-aof among the default faults, no convergence: a fourth "
     "shard StatefulSet stays", 7, SC_FAULTS_DEFAULT_V1 | F(STALE_AOF), 0, FIXED, KEEP, 0},
    {"8 (fixed: the executor checks FAILOVER FORCE against each candidate's INFO replication): every fault kind "
     "on: FAILOVER FORCE (2b) promoted a replica one write behind (chosen by offsets an observation reported, "
     "which offsets alone never refresh) while another had the acknowledged write (since finding 9's change of "
     "the model the seed holds without the fix as well: the next row shows it)", 7, SC_FAULTS_ALL_V1, 0, FIXED,
     KEEP, 0},
    {"8 (fixed): (the same with lose-conf-early alone; the check's first form, offsets and histories without "
     "the replica's own CLUSTER NODES, let a FORCE from a look older than a FORCE since take a live master's "
     "role)", 1, F(LOSE_CONF_EARLY), 0, FIXED, UNFIX, 0},
    {"2 (fixed by Cluster mode's FRESHNESS: this seed failed without it and held with it; since the RETIRE "
     "fix its schedule ends in finding 8 instead): a master back with a new node id before FAIL: FAILOVER "
     "FORCE (step 2b) sent again from an observation older than the last one, promoting a replica behind", 1,
     F(LOSE_CONF_EARLY), 0, MOVED, KEEP, 0},
    {"3 (FRESHNESS; its trigger obs-stall is now a default fault): FLUSHALL from an observation older than "
     "the operator's own REPLICATE wipes a promoted replica", 2,
     F(OBS_STALL) | F(KILL_REPLICA) | F(KILL_MASTER) | F(LOSE_CONF), 150, MOVED, KEEP, 0},
    {"4 (fixed: RETIRE waits while a leaving replica's master holds slots and is no live wanted master): RETIRE "
     "resets the replicas of a leaving shard whose failed master still holds its slots", 1, F(LOSE_LEAVING), 0,
     FIXED, KEEP, 0},
    {"5: a master killed just after a MIGRATE into it: its replica, promoted, never got the keys (the seed of "
     "its discovery)", 0x3eb, SC_FAULTS_DEFAULT_V1, 0, MOVED, KEEP, 0},
    {"5 (fixed: a slot move's run confirms the target's replica acknowledged the moved keys, slotmove.h "
     "REPLICATED): the same with kill-target, a move's target killed 0.1..0.3 s after the run", 0x10,
     F(KILL_TARGET), 0, FIXED, UNFIX, 0},
    {"6 (a decision from a stale look: FRESHNESS): step 2b takes a node the operator reset (RETIRE) for a "
     "replaced master and forces a leaving replica over another shard's slots", 0x3fb, SC_FAULTS_DEFAULT_V1, 0,
     MOVED, KEEP, 0},
    {"9 (fixed: the model sends Redis 7's PONG to every node when SETSLOT NODE closes an import; a run waits "
     "until the target's replica credits it with the slots; step 5b moves a second master's slots to the "
     "first): a move's target killed before its replica heard of its new slots: two masters in the shard for "
     "good (TwoMasters), the leaving shard never goes", 2, F(KILL_TARGET), 0, FIXED, KEEP, 0},
    {"9 (fixed): the same in the model of its discovery (SIM_NO_BROADCAST=1: the cluster hears of the target's "
     "slots a step later, so the two masters arise, and step 5b repairs them)", 2, F(KILL_TARGET), 0, FIXED, KEEP,
     1},
    {"9 (fixed): (the same, 3 shards x 3)", 0x19, F(KILL_TARGET), 0, FIXED, KEEP, 1},
    {"10 (fixed in the model: BUMPEPOCH changed a node's epoch without its CLUSTER NODES saying so, so step 9 "
     "sent it again and again, and a look of the pod's old node from before its restart had the new node, "
     "back with its AOF, bumped and then win slots by collisions): no convergence, a second master in shard 1",
     0x440, SC_FAULTS_DEFAULT_V1, 0, FIXED, KEEP, 0},
    {"11 (fixed: step 2b names every replica of the gone master in the shard to the executor's check, not only "
     "those whose own look shows it replaced): FAILOVER FORCE to a replica one write behind, the other replica, "
     "its look older, left out of the check", 0x3fb, SC_FAULTS_DEFAULT_V1, 0, FIXED, KEEP, 0},
};

/* Row i's configuration; unfixed: with its fix left out. */
static sc_cfg_t row_cfg(size_t i, int unfixed)
{
    sc_cfg_t c = cfg_of(rows[i].seed, DEFAULT_STEPS);
    c.faults = rows[i].faults;
    c.fault_every = rows[i].every;
    c.replicas = 0;
    c.overlap = 0;
    c.no_force_guard = c.no_move_wait = unfixed; /* the operator before both fixes (8 and 5) */
    c.no_broadcast = rows[i].no_broadcast;
    return c;
}

static void test_findings(void)
{
    int run = sim_env_int("SIM_FINDINGS", 0) != 0;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        sc_cfg_t c = row_cfg(i, 0);
        char names[160] = "";
        for (int f = 0; f < SC_F_COUNT; f++)
            if (c.faults & SC_FAULT_BIT(f))
                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", *names ? "," : "",
                         sc_fault_name(f));
        if (!run && rows[i].state != FIXED) {
            char every[32] = "";
            if (rows[i].every)
                snprintf(every, sizeof(every), " SIM_EVERY=%lld", (long long)rows[i].every);
            fprintf(stderr,
                    "\n  finding %s\n    replay: SIM_SEED=%#llx SIM_FAULTS=%s%s SIM_TRACE=1 "
                    "build/tests/test_sim_cluster",
                    rows[i].what, (unsigned long long)c.seed, names, every);
            continue;
        }
        sc_result_t r;
        int rc = sc_run(&c, &r);
        fprintf(stderr, "\n  finding %s: seed %#llx: %s", rows[i].what, (unsigned long long)c.seed,
                rc ? r.why : rows[i].state == OPEN ? "HOLDS NOW (fixed? make it a regression row)" : "holds");
        if (rows[i].state == OPEN)
            CU_ASSERT_EQUAL(rc, 1);
        if (rows[i].state == FIXED)
            CU_ASSERT_EQUAL(rc, 0);
        if (run && rows[i].state == FIXED && rows[i].unfix != KEEP) { /* and it failed before the fix */
            sc_cfg_t u = row_cfg(i, 1);
            int urc = sc_run(&u, &r);
            fprintf(stderr, "\n    without the fixes (SIM_NO_FORCE_GUARD=1 SIM_NO_MOVE_WAIT=1): %s",
                    urc ? r.why : "HOLDS (the row no longer shows the bug)");
            CU_ASSERT_EQUAL(urc, 1);
        }
    }
    fprintf(stderr, "\n");
}

static const cu_entry_t tests[] = {
    CU_SUITE("cluster simulation"),
    {"a replay is deterministic", test_replay_is_deterministic},
    {"the findings' seeds (SIM_FINDINGS=1 runs them)", test_findings},
    {"a million steps across seeds", test_million_steps},
};
CU_MAIN(tests)
