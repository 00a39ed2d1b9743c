/* corpus/lmdb/bench.c: LMDB's benchmark driver for the corpus, compiled with the
 * library's mdb.c and midl.c at each commit (build_bench.sh).
 *
 *     bench MODE N
 *
 * makes a fresh environment in a new directory under /tmp (mkdtemp, removed at the
 * end; MDB_NOSYNC, so no run waits on the disk), runs MODE on N records, prints a
 * checksum of what it read, and exits 1 on any LMDB error.  Keys are 16-byte decimal
 * text, values 100 bytes (overwrite: 60-140); "random" order is a fixed LCG, so every
 * run does the same operations.  Modes:
 *   fillseq     N puts in key order, 1000 per write transaction
 *   fillrandom  N puts in random order, 1000 per write transaction
 *   readrandom  fillseq in one transaction, then 4N gets in random order (read-only
 *               transactions of 1000 gets)
 *   readseq     fillseq in one transaction, then 10 cursor scans forward and 10 back
 *   overwrite   fillseq in one transaction, then N random overwrites with values of
 *               varying size, 1000 per transaction
 *   delete      fillseq in one transaction, then deletes of a random half and a scan
 *   dupsort     an MDB_DUPSORT database: 100 keys with N/100 sorted duplicates each,
 *               put in random order, then a MDB_NEXT_DUP scan of every key and
 *               MDB_GET_BOTH lookups
 * The API used (mdb_dbi_open, mdb_cursor_get, MDB_NOSYNC) is that of LMDB 0.9. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lmdb.h"

static MDB_env *env;
static MDB_dbi dbi;
static char dir[] = "/tmp/lmdb-bench-XXXXXX";
static unsigned long long seed = 12345;
static unsigned long long check;

static void fail(const char *what, int rc)
{
    fprintf(stderr, "bench: %s: %s\n", what, mdb_strerror(rc));
    exit(1);
}
#define E(expr) do { int rc_ = (expr); if (rc_ != MDB_SUCCESS) fail(#expr, rc_); } while (0)

static unsigned rnd(void)
{
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(seed >> 33);
}

static void key_of(char *buf, unsigned i) { snprintf(buf, 17, "%016u", i); }

static void value_of(char *buf, unsigned i, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++)
        buf[k] = (char)('a' + (i + k * 7) % 26);
}

static void put_range(unsigned n, int random_order, unsigned per_txn)
{
    MDB_txn *txn;
    MDB_val key, data;
    char kbuf[17], vbuf[100];
    unsigned i;
    E(mdb_txn_begin(env, NULL, 0, &txn));
    for (i = 0; i < n; i++) {
        unsigned id = random_order ? rnd() % (n * 4) : i;
        key_of(kbuf, id);
        value_of(vbuf, id, sizeof vbuf);
        key.mv_size = 16; key.mv_data = kbuf;
        data.mv_size = sizeof vbuf; data.mv_data = vbuf;
        E(mdb_put(txn, dbi, &key, &data, 0));
        if (per_txn && (i + 1) % per_txn == 0) {
            E(mdb_txn_commit(txn));
            E(mdb_txn_begin(env, NULL, 0, &txn));
        }
    }
    E(mdb_txn_commit(txn));
}

static void scan(int forward)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val key, data;
    int rc;
    E(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    E(mdb_cursor_open(txn, dbi, &cur));
    for (rc = mdb_cursor_get(cur, &key, &data, forward ? MDB_FIRST : MDB_LAST); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cur, &key, &data, forward ? MDB_NEXT : MDB_PREV))
        check += ((unsigned char *)key.mv_data)[15] + data.mv_size;
    if (rc != MDB_NOTFOUND)
        fail("mdb_cursor_get", rc);
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
}

static void cleanup(void)
{
    char path[64];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/lock.mdb", dir);
    unlink(path);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    MDB_txn *txn;
    MDB_val key, data;
    char kbuf[17], vbuf[140];
    const char *mode;
    unsigned n, i;
    int dupsort;
    if (argc != 3 || (n = (unsigned)atoi(argv[2])) < 100) {
        fprintf(stderr, "usage: bench MODE N (N >= 100)\n");
        return 2;
    }
    mode = argv[1];
    dupsort = strcmp(mode, "dupsort") == 0;
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    atexit(cleanup);
    E(mdb_env_create(&env));
    E(mdb_env_set_mapsize(env, (size_t)1 << 30));
    E(mdb_env_open(env, dir, MDB_NOSYNC, 0600));
    E(mdb_txn_begin(env, NULL, 0, &txn));
    E(mdb_dbi_open(txn, NULL, dupsort ? MDB_DUPSORT : 0, &dbi));
    E(mdb_txn_commit(txn));
    if (strcmp(mode, "fillseq") == 0) {
        put_range(n, 0, 1000);
        scan(1);
    } else if (strcmp(mode, "fillrandom") == 0) {
        put_range(n, 1, 1000);
        scan(1);
    } else if (strcmp(mode, "readrandom") == 0) {
        put_range(n, 0, 0);
        E(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
        for (i = 0; i < 4 * n; i++) {
            int rc;
            key_of(kbuf, rnd() % (n + n / 10));   /* one in eleven is not there */
            key.mv_size = 16; key.mv_data = kbuf;
            rc = mdb_get(txn, dbi, &key, &data);
            if (rc == MDB_SUCCESS)
                check += ((unsigned char *)data.mv_data)[0];
            else if (rc != MDB_NOTFOUND)
                fail("mdb_get", rc);
            if ((i + 1) % 1000 == 0) {
                mdb_txn_reset(txn);
                E(mdb_txn_renew(txn));
            }
        }
        mdb_txn_abort(txn);
    } else if (strcmp(mode, "readseq") == 0) {
        put_range(n, 0, 0);
        for (i = 0; i < 10; i++) {
            scan(1);
            scan(0);
        }
    } else if (strcmp(mode, "overwrite") == 0) {
        put_range(n, 0, 0);
        E(mdb_txn_begin(env, NULL, 0, &txn));
        for (i = 0; i < n; i++) {
            unsigned id = rnd() % n;
            size_t size = 60 + rnd() % 81;
            key_of(kbuf, id);
            value_of(vbuf, id + i, size);
            key.mv_size = 16; key.mv_data = kbuf;
            data.mv_size = size; data.mv_data = vbuf;
            E(mdb_put(txn, dbi, &key, &data, 0));
            if ((i + 1) % 1000 == 0) {
                E(mdb_txn_commit(txn));
                E(mdb_txn_begin(env, NULL, 0, &txn));
            }
        }
        E(mdb_txn_commit(txn));
        scan(1);
    } else if (strcmp(mode, "delete") == 0) {
        put_range(n, 0, 0);
        E(mdb_txn_begin(env, NULL, 0, &txn));
        for (i = 0; i < n / 2; i++) {
            int rc;
            key_of(kbuf, rnd() % n);
            key.mv_size = 16; key.mv_data = kbuf;
            rc = mdb_del(txn, dbi, &key, NULL);
            if (rc == MDB_SUCCESS)
                check++;
            else if (rc != MDB_NOTFOUND)
                fail("mdb_del", rc);
            if ((i + 1) % 1000 == 0) {
                E(mdb_txn_commit(txn));
                E(mdb_txn_begin(env, NULL, 0, &txn));
            }
        }
        E(mdb_txn_commit(txn));
        scan(1);
    } else if (dupsort) {
        MDB_cursor *cur;
        unsigned per = n / 100;
        E(mdb_txn_begin(env, NULL, 0, &txn));
        for (i = 0; i < n; i++) {
            unsigned r = rnd();
            snprintf(kbuf, sizeof kbuf, "key%03u", r % 100);
            snprintf(vbuf, sizeof vbuf, "dup%010u", (r / 100) % (per * 8));
            key.mv_size = strlen(kbuf); key.mv_data = kbuf;
            data.mv_size = strlen(vbuf); data.mv_data = vbuf;
            E(mdb_put(txn, dbi, &key, &data, 0));
        }
        E(mdb_txn_commit(txn));
        E(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
        E(mdb_cursor_open(txn, dbi, &cur));
        for (i = 0; i < 100; i++) {
            int rc;
            snprintf(kbuf, sizeof kbuf, "key%03u", i);
            key.mv_size = strlen(kbuf); key.mv_data = kbuf;
            for (rc = mdb_cursor_get(cur, &key, &data, MDB_SET); rc == MDB_SUCCESS;
                 rc = mdb_cursor_get(cur, &key, &data, MDB_NEXT_DUP))
                check += ((unsigned char *)data.mv_data)[12];
        }
        for (i = 0; i < n; i++) {
            unsigned r = rnd();
            snprintf(kbuf, sizeof kbuf, "key%03u", r % 100);
            snprintf(vbuf, sizeof vbuf, "dup%010u", (r / 100) % (per * 8));
            key.mv_size = strlen(kbuf); key.mv_data = kbuf;
            data.mv_size = strlen(vbuf); data.mv_data = vbuf;
            if (mdb_cursor_get(cur, &key, &data, MDB_GET_BOTH) == MDB_SUCCESS)
                check++;
        }
        mdb_cursor_close(cur);
        mdb_txn_abort(txn);
    } else {
        fprintf(stderr, "bench: unknown mode %s\n", mode);
        return 2;
    }
    mdb_env_close(env);
    printf("%s %u %llu\n", mode, n, check);
    return 0;
}
