// mlomb's leaderboard library for Node.js (npm `redis-rank` 2.2.3, on
// ioredis 5.6.1), unchanged, against a Redis-protocol server, with its
// boards in the database given (the library's own tests use database 15).
// The library keeps its update policies and its reads in Lua scripts that
// ioredis sends as EVALSHA (EVAL after a NOSCRIPT). scripts/test.sh
// installs it with
//   npm install --prefix target/node-redis-rank ... redis-rank@2.2.3 ioredis@5.6.1
// and this script finds it through NODE_PATH, which must name that
// prefix's node_modules directory:
//   NODE_PATH=target/node-redis-rank/node_modules node redis_rank_test.js PORT DB
// It runs the library's documented flow (boards of both sort policies,
// each update policy, top N limits, find/rank/score/at, list, top, bottom,
// around, listByScore, remove, clear, the export stream, periodic
// leaderboards and a matrix with its showcase), compares exact values,
// exits non-zero on the first mismatch and prints "redis-rank library OK"
// at the end.
'use strict';

const assert = require('assert');

const port = Number(process.argv[2]);
const db = Number(process.argv[3] || '0');
if (!Number.isInteger(port) || port <= 0 || !Number.isInteger(db) || db < 0) {
    console.error('usage: NODE_PATH=<prefix>/node_modules node redis_rank_test.js PORT [DB]');
    process.exit(2);
}

// A hang (a reply the library waits for forever) fails instead of
// blocking the test run.
const watchdog = setTimeout(() => {
    console.error('redis-rank test: no progress after 60 s (a reply never came?) at: ' + step);
    process.exit(1);
}, 60000);

const pkg = require('redis-rank/package.json');
assert.strictEqual(pkg.version, '2.2.3',
    'redis-rank ' + pkg.version + ' installed, 2.2.3 expected: ' +
    'remove target/node-redis-rank and run scripts/test.sh');
const ioredisPkg = require('ioredis/package.json');
assert.strictEqual(ioredisPkg.version, '5.6.1',
    'ioredis ' + ioredisPkg.version + ' installed, 5.6.1 expected');
const Redis = require('ioredis');
const { Leaderboard, PeriodicLeaderboard, LeaderboardMatrix } = require('redis-rank');

// A connection error is fatal (ioredis would otherwise retry forever).
function connect(database) {
    const client = new Redis({
        host: '127.0.0.1',
        port: port,
        db: database,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
    });
    client.on('error', (err) => {
        console.error('redis connection error (db ' + database + '): ' + err);
        process.exit(1);
    });
    return client;
}

let step = '';
function eq(actual, expected, what) {
    step = what;
    assert.deepStrictEqual(actual, expected, what);
}
const e = (id, score, rank) => ({ id, score, rank });

async function exported(lb, batchSize) {
    const batches = [];
    for await (const batch of lb.exportStream(batchSize)) batches.push(batch);
    return batches;
}

async function main() {
    const client = connect(db);
    await client.flushdb();

    // --- a high-to-low board, replace policy
    const lb = new Leaderboard(client, 'rr:scores', {
        sortPolicy: 'high-to-low',
        updatePolicy: 'replace',
    });
    eq(await lb.count(), 0, 'count of a new board');
    eq(await lb.find('nobody'), null, 'find on an empty board');
    eq(await lb.top(3), [], 'top of an empty board');
    eq(await lb.update([
        { id: 'alice', value: 10 },
        { id: 'bob', value: 20 },
        { id: 'carol', value: 15 },
        { id: 'dave', value: 5 },
        { id: 'erin', value: 12.5 },
    ]), [1, 1, 1, 1, 1], 'replace: ZADD counts');
    eq(await lb.updateOne('alice', 11), 0, 'replace one: not new');
    eq(await lb.count(), 5, 'count');
    eq(await lb.score('alice'), 11, 'score');
    eq(await lb.score('nobody'), null, 'score of a missing entry');
    eq(await lb.rank('bob'), 1, 'rank of the best');
    eq(await lb.rank('dave'), 5, 'rank of the worst');
    eq(await lb.rank('nobody'), null, 'rank of a missing entry');
    eq(await lb.find('carol'), e('carol', 15, 2), 'find');
    eq(await lb.at(3), e('erin', 12.5, 3), 'at 3');
    eq(await lb.at(6), null, 'at past the end');
    eq(await lb.at(0), null, 'at 0');
    eq(await lb.top(3), [e('bob', 20, 1), e('carol', 15, 2), e('erin', 12.5, 3)], 'top 3');
    // bottom() lists worst first and numbers its ranks from ZCARD minus
    // the length of the WITHSCORES reply (two items an entry): the
    // library's own arithmetic, the same on any server.
    eq(await lb.bottom(2), [e('dave', 5, 3), e('alice', 11, 2)], 'bottom 2');
    eq(await lb.list(2, 4), [e('carol', 15, 2), e('erin', 12.5, 3), e('alice', 11, 4)], 'list 2..4');
    eq(await lb.list(5, 9), [e('dave', 5, 5)], 'list past the end');
    eq(await lb.listByScore(11, 15),
        [e('carol', 15, 2), e('erin', 12.5, 3), e('alice', 11, 4)], 'listByScore 11..15');
    eq(await lb.listByScore(100, 200), [], 'listByScore out of range');
    eq(await lb.around('erin', 1), [e('carol', 15, 2), e('erin', 12.5, 3), e('alice', 11, 4)],
        'around erin, distance 1');
    eq(await lb.around('bob', 1, false), [e('bob', 20, 1), e('carol', 15, 2)],
        'around the first, no fill');
    eq(await lb.around('bob', 1, true), [e('bob', 20, 1), e('carol', 15, 2), e('erin', 12.5, 3)],
        'around the first, filled');
    // Filled at the end, the window reaches one past 2*distance+1.
    eq(await lb.around('dave', 2, true),
        [e('bob', 20, 1), e('carol', 15, 2), e('erin', 12.5, 3), e('alice', 11, 4), e('dave', 5, 5)],
        'around the last, filled');
    eq(await lb.around('nobody', 2), [], 'around a missing entry');

    // The policy overridden per call.
    eq(await lb.update({ id: 'dave', value: 30 }, 'aggregate'), [35], 'aggregate override');
    eq(await lb.update({ id: 'dave', value: 1 }, 'best'), [35], 'best override keeps 35');
    eq(await lb.update({ id: 'dave', value: 40 }, 'best'), [40], 'best override takes 40');
    eq(await lb.top(1), [e('dave', 40, 1)], 'dave leads');

    // Export: batches in rank order.
    eq(await exported(lb, 2), [
        [e('dave', 40, 1), e('bob', 20, 2)],
        [e('carol', 15, 3), e('erin', 12.5, 4)],
        [e('alice', 11, 5)],
    ], 'export in batches of 2');
    eq(await exported(lb, 5), [
        [e('dave', 40, 1), e('bob', 20, 2), e('carol', 15, 3), e('erin', 12.5, 4), e('alice', 11, 5)],
    ], 'export in one full batch');

    await lb.remove('bob');
    await lb.remove(['carol', 'nobody']);
    eq(await lb.count(), 3, 'count after remove');
    eq(await lb.top(5), [e('dave', 40, 1), e('erin', 12.5, 2), e('alice', 11, 3)], 'top after remove');
    await lb.clear();
    eq(await lb.count(), 0, 'count after clear');
    eq(await client.exists('rr:scores'), 0, 'clear deletes the key');

    // --- a low-to-high board, best policy (lowest time wins), limited to 3
    const times = new Leaderboard(client, 'rr:times', {
        sortPolicy: 'low-to-high',
        updatePolicy: 'best',
        limitTopN: 3,
    });
    // The best policy's script returns a Lua number, which Redis turns
    // into an integer reply: 61.5 comes back as 61 (the board keeps 61.5).
    eq(await times.update([
        { id: 'p1', value: 61.5 },
        { id: 'p2', value: 59 },
        { id: 'p3', value: 70 },
    ]), [61, 59, 70], 'best: first times');
    eq(await times.updateOne('p1', 65), 61, 'best: a worse time is ignored');
    eq(await times.updateOne('p1', 58.25), 58, 'best: a better time is taken');
    eq(await times.update({ id: 'p4', value: 60 }), [60], 'best: p4 enters');
    eq(await times.count(), 3, 'limitTopN keeps 3');
    eq(await times.find('p3'), null, 'the slowest was dropped');
    eq(await times.top(10), [e('p1', 58.25, 1), e('p2', 59, 2), e('p4', 60, 3)], 'low-to-high top');
    eq(await times.bottom(1), [e('p4', 60, 2)], 'low-to-high bottom (the same rank arithmetic)');
    eq(await times.listByScore(59, 100), [e('p2', 59, 2), e('p4', 60, 3)], 'low-to-high listByScore');
    eq(await times.around('p2', 5), [e('p1', 58.25, 1), e('p2', 59, 2), e('p4', 60, 3)],
        'low-to-high around');

    // --- aggregate policy (ZINCRBY), high-to-low, limited to 2
    const points = new Leaderboard(client, 'rr:points', {
        sortPolicy: 'high-to-low',
        updatePolicy: 'aggregate',
        limitTopN: 2,
    });
    eq(await points.update([{ id: 'a', value: 5 }, { id: 'b', value: 3 }, { id: 'a', value: 2 }]),
        [5, 3, 7], 'aggregate: running totals');
    eq(await points.update([{ id: 'c', value: 4 }]), [4], 'aggregate: c');
    eq(await points.top(5), [e('a', 7, 1), e('c', 4, 2)], 'aggregate board keeps its top 2');
    eq(await points.updateOne('c', -0.5), 3.5, 'aggregate: a negative increment');
    eq(await points.find('c'), e('c', 3.5, 2), 'aggregate find');

    // --- a periodic leaderboard on a fixed clock (local time; the
    // library numbers months from 0)
    let now = new Date(2026, 0, 5, 10, 30);
    const daily = new PeriodicLeaderboard(client, 'rr:daily', {
        leaderboardOptions: { sortPolicy: 'high-to-low', updatePolicy: 'best' },
        cycle: 'daily',
        now: () => now,
    });
    eq(daily.getKeyNow(), 'y2026-m00-d05', 'daily key');
    await daily.getLeaderboardNow().update([{ id: 'x', value: 3 }, { id: 'y', value: 9 }]);
    now = new Date(2026, 0, 6, 1, 0);
    await daily.getLeaderboardNow().update([{ id: 'x', value: 4 }]);
    eq((await daily.getExistingKeys()).sort(), ['y2026-m00-d05', 'y2026-m00-d06'],
        'existing cycles (SCAN)');
    eq(await daily.getLeaderboard('y2026-m00-d05').top(5), [e('y', 9, 1), e('x', 3, 2)],
        'the first day');
    eq(await daily.getLeaderboardNow().top(5), [e('x', 4, 1)], 'the second day');

    // --- a matrix: two dimensions (all time, monthly) by two features
    const matrix = new LeaderboardMatrix(client, 'rr:mx', {
        dimensions: [
            { name: 'global' },
            { name: 'monthly', cycle: 'monthly' },
        ],
        features: [
            { name: 'kills', options: { updatePolicy: 'aggregate', sortPolicy: 'high-to-low' } },
            { name: 'time', options: { updatePolicy: 'best', sortPolicy: 'low-to-high' } },
        ],
        now: () => now,
    });
    await matrix.update([
        { id: 'ann', values: { kills: 10, time: 120 } },
        { id: 'ben', values: { kills: 7, time: 95 } },
        { id: 'cat', values: { kills: 12, time: 130 } },
    ]);
    await matrix.update({ id: 'ben', values: { kills: 6, time: 99 } });
    eq(await matrix.count(), { global: { kills: 3, time: 3 }, monthly: { kills: 3, time: 3 } },
        'matrix count');
    eq(await matrix.find('ben'), {
        id: 'ben',
        ranks: { global: { kills: 1, time: 1 }, monthly: { kills: 1, time: 1 } },
        scores: { global: { kills: 13, time: 95 }, monthly: { kills: 13, time: 95 } },
    }, 'matrix find');
    eq((await matrix.top('global', 'time', 2)).map((x) => [x.id, x.scores.global.time]),
        [['ben', 95], ['ann', 120]], 'matrix top by time');
    eq((await matrix.list('global', 'kills', 2, 3)).map((x) => [x.id, x.ranks.global.kills]),
        [['cat', 2], ['ann', 3]], 'matrix list by kills');
    eq((await matrix.bottom('monthly', 'kills', 1)).map((x) => x.id), ['ann'], 'matrix bottom');
    eq((await matrix.around('global', 'kills', 'cat', 1)).map((x) => x.id),
        ['ben', 'cat', 'ann'], 'matrix around');
    const show = await matrix.showcase(['monthly', 'global'], 'kills', 2);
    eq([show.dimension, show.feature, show.entries.map((x) => x.id)],
        ['monthly', 'kills', ['ben', 'cat']], 'matrix showcase');
    await matrix.remove('cat');
    eq(await matrix.count(), { global: { kills: 2, time: 2 }, monthly: { kills: 2, time: 2 } },
        'matrix count after remove');
    eq(await matrix.find('cat'), null, 'matrix find after remove');

    // The boards live in the database asked for, and nowhere else.
    const keys = (await client.keys('rr:*')).sort();
    eq(keys, [
        'rr:daily:y2026-m00-d05', 'rr:daily:y2026-m00-d06',
        'rr:mx:global:kills', 'rr:mx:global:time',
        'rr:mx:monthly:kills:y2026-m00', 'rr:mx:monthly:time:y2026-m00',
        'rr:points', 'rr:times',
    ], 'the keys the library wrote');
    if (db !== 0) {
        const zero = connect(0);
        eq(await zero.exists(...keys), 0, 'database 0 holds none of the boards');
        zero.disconnect();
    }
    eq(await client.type('rr:times'), 'zset', 'a board is a sorted set');

    client.disconnect();
    clearTimeout(watchdog);
    console.log('redis-rank library OK (db ' + db + ')');
}

main().catch((err) => {
    console.error('redis-rank test failed at "' + step + '": ' + (err && err.stack || err));
    process.exit(1);
});
