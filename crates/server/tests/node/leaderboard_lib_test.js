// agoragames' leaderboard library for Node.js (npm `agoragames-leaderboard`
// 2.1.0, on node_redis 0.8), unchanged, against a Redis-protocol server.
// scripts/test.sh installs it with
//   npm install --prefix target/node-leaderboard ... agoragames-leaderboard@2.1.0
// and this script finds it through NODE_PATH, which must name that prefix's
// node_modules directory:
//   NODE_PATH=target/node-leaderboard/node_modules node leaderboard_lib_test.js PORT
// It runs the flow of tests/python/leaderboard_lib_test.py with this
// library's callback API, compares exact values, exits non-zero on the
// first mismatch and prints "node leaderboard library OK" at the end.
'use strict';

const assert = require('assert');

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
    console.error('usage: NODE_PATH=<prefix>/node_modules node leaderboard_lib_test.js PORT');
    process.exit(2);
}

// A hang (a reply the library waits for forever) fails instead of
// blocking the test run; the timer is cleared once every check passed.
const watchdog = setTimeout(() => {
    console.error('node leaderboard library test: no progress after 60 s (a reply never came?)');
    process.exit(1);
}, 60000);

const pkg = require('agoragames-leaderboard/package.json');
assert.strictEqual(pkg.version, '2.1.0',
    'agoragames-leaderboard ' + pkg.version + ' installed, 2.1.0 expected: ' +
    'remove target/node-leaderboard and run scripts/test.sh');
const Leaderboard = require('agoragames-leaderboard');
const TieRankingLeaderboard = require('agoragames-leaderboard/lib/tie_ranking_leaderboard');
const CompetitionRankingLeaderboard =
    require('agoragames-leaderboard/lib/competition_ranking_leaderboard');

// The library's defaults, spelled out: a partial options hash leaves
// pageSize undefined.
function options(extra) {
    return Object.assign({
        pageSize: 25,
        reverse: false,
        memberKey: 'member',
        rankKey: 'rank',
        scoreKey: 'score',
        memberDataKey: 'member_data',
        memberDataNamespace: 'member_data',
        tiesNamespace: 'ties',
    }, extra || {});
}
const redisOptions = () => ({ host: '127.0.0.1', port: port });

// Every method takes its callback last and calls it with one value.
function call(lb, method, ...args) {
    return new Promise((resolve) => lb[method](...args, resolve));
}

let step = '';
function eq(actual, expected, what) {
    step = what;
    assert.deepStrictEqual(actual, expected, what);
}
const members = (page) => page.map((e) => e.member);

async function main() {
    const opened = [];
    const open = (Kind, name, extra) => {
        const lb = new Kind(name, options(extra), redisOptions());
        // A connection error is fatal (node_redis would otherwise retry).
        lb.redisConnection.on('error', (err) => {
            console.error('redis connection error: ' + err);
            process.exit(1);
        });
        opened.push(lb);
        return lb;
    };

    const lb = open(Leaderboard, 'highscores');
    await call(lb, 'deleteLeaderboard');
    await call(lb, 'deleteLeaderboardNamed', 'other');
    await call(lb, 'deleteLeaderboardNamed', 'merged');
    await call(lb, 'deleteLeaderboardNamed', 'intersected');
    eq(await call(lb, 'totalMembers'), 0, 'totalMembers of a deleted leaderboard');

    // rankMember with member data: MULTI ZADD HSET EXEC.
    for (let i = 1; i <= 100; i++) {
        eq(await call(lb, 'rankMember', 'member_' + i, i, '{"n": ' + i + '}'), [1, 1],
            'rankMember member_' + i + ' (ZADD, HSET replies)');
    }
    eq(await call(lb, 'rankMember', 'member_100', 100, '{"n": 100}'), [0, 0],
        'rankMember again (nothing new)');
    eq(await call(lb, 'totalMembers'), 100, 'totalMembers');
    eq(await call(lb, 'totalPages', null), 4, 'totalPages');
    eq(await call(lb, 'totalPages', 10), 10, 'totalPages(10)');

    eq(await call(lb, 'rankFor', 'member_100'), 1, 'rankFor member_100');
    eq(await call(lb, 'rankFor', 'member_1'), 100, 'rankFor member_1');
    eq(await call(lb, 'rankFor', 'nobody'), undefined, 'rankFor nobody');
    eq(await call(lb, 'scoreFor', 'member_42'), 42, 'scoreFor member_42');
    eq(await call(lb, 'scoreFor', 'nobody'), null, 'scoreFor nobody');
    eq(await call(lb, 'checkMember', 'member_42'), true, 'checkMember member_42');
    eq(await call(lb, 'checkMember', 'nobody'), false, 'checkMember nobody');

    // leaders: ZCARD, ZREVRANGE, then MULTI (ZREVRANK ZSCORE)* EXEC.
    let page = await call(lb, 'leaders', 1, {});
    eq(page.length, 25, 'leaders(1) length');
    eq(members(page.slice(0, 3)), ['member_100', 'member_99', 'member_98'], 'leaders(1) order');
    eq(page[0], { member: 'member_100', rank: 1, score: 100 }, 'leaders(1)[0]');
    eq(page[24], { member: 'member_76', rank: 25, score: 76 }, 'leaders(1)[24]');
    page = await call(lb, 'leaders', 4, {});
    eq(page.length, 25, 'leaders(4) length');
    eq(page[24], { member: 'member_1', rank: 100, score: 1 }, 'leaders(4)[24]');
    page = await call(lb, 'leaders', 9, {});
    eq(page[0], { member: 'member_25', rank: 76, score: 25 }, 'leaders past the end: the last page');
    page = await call(lb, 'leaders', 1, { pageSize: 10, withMemberData: true });
    eq(page.length, 10, 'leaders pageSize 10 length');
    eq(page[0], { member: 'member_100', rank: 1, score: 100, member_data: '{"n": 100}' },
        'leaders withMemberData [0]');
    eq(page[9], { member: 'member_91', rank: 10, score: 91, member_data: '{"n": 91}' },
        'leaders withMemberData [9]');
    page = await call(lb, 'allLeaders', {});
    eq(page.length, 100, 'allLeaders length');
    eq(page[99], { member: 'member_1', rank: 100, score: 1 }, 'allLeaders last');

    // aroundMe: ZREVRANK 50 -> ZREVRANGE 38 62.
    page = await call(lb, 'aroundMe', 'member_50', {});
    eq(page.length, 25, 'aroundMe length');
    eq(page[0], { member: 'member_62', rank: 39, score: 62 }, 'aroundMe first');
    eq(page[12], { member: 'member_50', rank: 51, score: 50 }, 'aroundMe middle');
    eq(page[24], { member: 'member_38', rank: 63, score: 38 }, 'aroundMe last');
    eq(await call(lb, 'aroundMe', 'nobody', {}), [], 'aroundMe nobody');

    // member data: HGET, HSET, HDEL.
    eq(await call(lb, 'memberDataFor', 'member_7'), '{"n": 7}', 'memberDataFor member_7');
    eq(await call(lb, 'memberDataFor', 'nobody'), null, 'memberDataFor nobody');
    eq(await call(lb, 'updateMemberData', 'member_7', 'seven'), 0, 'updateMemberData (HSET)');
    eq(await call(lb, 'memberDataFor', 'member_7'), 'seven', 'memberDataFor after update');
    eq(await call(lb, 'removeMemberData', 'member_7'), 1, 'removeMemberData (HDEL)');
    eq(await call(lb, 'memberDataFor', 'member_7'), null, 'memberDataFor after remove');

    eq(await call(lb, 'rankedInList', ['member_1', 'member_100', 'nobody'], {}), [
        { member: 'member_1', rank: 100, score: 1 },
        { member: 'member_100', rank: 1, score: 100 },
        { member: 'nobody', rank: null, score: null },
    ], 'rankedInList');
    eq(await call(lb, 'membersFromScoreRange', 10, 12, {}), [
        { member: 'member_12', rank: 89, score: 12 },
        { member: 'member_11', rank: 90, score: 11 },
        { member: 'member_10', rank: 91, score: 10 },
    ], 'membersFromScoreRange 10..12');
    eq(members(await call(lb, 'membersFromRankRange', 1, 3, {})),
        ['member_100', 'member_99', 'member_98'], 'membersFromRankRange 1..3');
    eq(await call(lb, 'memberAt', 5, {}), [{ member: 'member_96', rank: 5, score: 96 }], 'memberAt 5');
    eq(await call(lb, 'pageFor', 'member_1', 25), 4, 'pageFor member_1');
    eq(await call(lb, 'pageFor', 'member_100', 25), 1, 'pageFor member_100');
    eq(await call(lb, 'pageFor', 'nobody', 25), 0, 'pageFor nobody');
    // ZRANGE key i j WITHSCORES, interpolated.
    eq(await call(lb, 'scoreForPercentile', 0), 1, 'scoreForPercentile 0');
    eq(await call(lb, 'scoreForPercentile', 100), 100, 'scoreForPercentile 100');
    eq(await call(lb, 'scoreForPercentile', 50), 50.5, 'scoreForPercentile 50');

    // ZINCRBY replies the new score as a bulk string.
    eq(await call(lb, 'changeScoreFor', 'member_1', 1000), '1001', 'changeScoreFor (ZINCRBY)');
    eq(await call(lb, 'rankFor', 'member_1'), 1, 'rankFor after changeScoreFor');
    eq(await call(lb, 'scoreFor', 'member_1'), 1001, 'scoreFor after changeScoreFor');
    eq(await call(lb, 'changeScoreFor', 'member_1', -0.5), '1000.5', 'changeScoreFor by -0.5');
    eq(await call(lb, 'removeMember', 'member_1'), [1, 1], 'removeMember (ZREM, HDEL)');
    eq(await call(lb, 'totalMembers'), 99, 'totalMembers after removeMember');
    eq(await call(lb, 'totalMembersInScoreRange', 10, 20), 11, 'totalMembersInScoreRange');
    eq(await call(lb, 'percentileFor', 'member_100'), 99, 'percentileFor member_100');
    eq(await call(lb, 'percentileFor', 'member_2'), 0, 'percentileFor member_2');
    eq(await call(lb, 'percentileFor', 'nobody'), undefined, 'percentileFor nobody');
    eq(await call(lb, 'scoreAndRankFor', 'member_99'), { score: 99, rank: 2, member: 'member_99' },
        'scoreAndRankFor member_99');
    eq(await call(lb, 'scoreAndRankFor', 'nobody'), { score: null, rank: null, member: 'nobody' },
        'scoreAndRankFor nobody');
    eq(await call(lb, 'removeMembersInScoreRange', 2, 10), 9, 'removeMembersInScoreRange 2..10');
    eq(await call(lb, 'totalMembers'), 90, 'totalMembers after removeMembersInScoreRange');
    // ZREMRANGEBYRANK key 0 -81: keep the top 80 (member_21 .. member_100).
    eq(await call(lb, 'removeMembersOutsideRank', 80), 10, 'removeMembersOutsideRank 80');
    eq(await call(lb, 'totalMembers'), 80, 'totalMembers after removeMembersOutsideRank');
    eq(await call(lb, 'rankFor', 'member_21'), 80, 'rankFor member_21');
    eq(await call(lb, 'scoreFor', 'member_20'), null, 'scoreFor member_20 (removed)');
    eq(await call(lb, 'rankMembers', ['member_5', 5, 'member_6', 6]), [1, 1], 'rankMembers');
    eq(await call(lb, 'totalMembers'), 82, 'totalMembers after rankMembers');

    // ZUNIONSTORE / ZINTERSTORE dest 2 highscores other AGGREGATE ...
    eq(await call(lb, 'rankMemberIn', 'other', 'member_100', 500, null), [1], 'rankMemberIn other');
    eq(await call(lb, 'rankMemberIn', 'other', 'outsider', 7, null), [1], 'rankMemberIn other');
    eq(await call(lb, 'mergeLeaderboards', 'merged', ['other'], { aggregate: 'sum' }), 83,
        'mergeLeaderboards (ZUNIONSTORE)');
    eq(await call(lb, 'scoreForIn', 'merged', 'member_100'), 600, 'merged score member_100');
    eq(await call(lb, 'scoreForIn', 'merged', 'outsider'), 7, 'merged score outsider');
    eq(await call(lb, 'intersectLeaderboards', 'intersected', ['other'], { aggregate: 'max' }), 1,
        'intersectLeaderboards (ZINTERSTORE)');
    eq(await call(lb, 'scoreForIn', 'intersected', 'member_100'), 500, 'intersected score');

    // reverse: lowest score first (ZRANK, ZRANGE).
    const low = open(Leaderboard, 'highscores', { reverse: true });
    eq(await call(low, 'rankFor', 'member_5'), 1, 'reverse rankFor member_5');
    eq(members(await call(low, 'leaders', 1, { pageSize: 3 })),
        ['member_5', 'member_6', 'member_21'], 'reverse leaders');

    // Tie ranking: equal scores share a rank, the next score the next rank
    // (a second sorted set of the distinct scores).
    const t = open(TieRankingLeaderboard, 'ties');
    await call(t, 'deleteLeaderboard');
    for (const [m, s] of [['a', 10], ['b', 10], ['c', 5], ['d', 1]]) {
        await call(t, 'rankMember', m, s, null);
    }
    const tieRanks = async () => {
        const r = [];
        for (const m of ['a', 'b', 'c', 'd']) r.push(await call(t, 'rankFor', m));
        return r;
    };
    eq(await tieRanks(), [1, 1, 2, 3], 'tie ranks');
    eq(await call(t, 'scoreAndRankFor', 'c'), { score: 5, rank: 2, member: 'c' }, 'tie scoreAndRankFor c');
    eq(await call(t, 'rankedInList', ['d', 'a', 'c'], {}), [
        { member: 'd', score: 1, rank: 3 },
        { member: 'a', score: 10, rank: 1 },
        { member: 'c', score: 5, rank: 2 },
    ], 'tie rankedInList');
    eq(members(await call(t, 'leaders', 1, {})), ['b', 'a', 'c', 'd'], 'tie leaders order');
    // d: 1 -> 10, so score 1 leaves the ties set.
    await call(t, 'changeScoreFor', 'd', 9);
    eq(await tieRanks(), [1, 1, 2, 1], 'tie ranks after changeScoreFor');
    // c was alone at 5: removing it removes score 5 from the ties set.
    await call(t, 'removeMember', 'c');
    await call(t, 'rankMember', 'e', 3, null);
    eq(await call(t, 'rankFor', 'e'), 2, 'tie rankFor e after removeMember c');
    eq(await call(t, 'removeMembersInScoreRange', 0, 4), [1, 1], 'tie removeMembersInScoreRange');
    eq(await call(t, 'totalMembers'), 3, 'tie totalMembers');

    // Competition ranking ("1224"): ZCOUNT key (score +inf.
    const c = open(CompetitionRankingLeaderboard, 'competition');
    await call(c, 'deleteLeaderboard');
    for (const [m, s] of [['a', 10], ['b', 10], ['c', 5], ['d', 1]]) {
        await call(c, 'rankMember', m, s, null);
    }
    const compRanks = [];
    for (const m of ['a', 'b', 'c', 'd']) compRanks.push(await call(c, 'rankFor', m));
    eq(compRanks, [1, 1, 3, 4], 'competition ranks');
    eq(await call(c, 'scoreAndRankFor', 'c'), { score: 5, rank: 3, member: 'c' },
        'competition scoreAndRankFor c');
    eq(await call(c, 'rankedInList', ['b', 'd'], {}), [
        { member: 'b', score: 10, rank: 1 },
        { member: 'd', score: 1, rank: 4 },
    ], 'competition rankedInList');

    for (const l of opened) l.disconnect();
    clearTimeout(watchdog);
    console.log('node leaderboard library OK');
}

// An exception thrown inside the library's own callbacks (node_redis
// rethrows them) also names the last step.
process.on('uncaughtException', (err) => {
    console.error('node leaderboard library test failed after "' + step + '":');
    console.error(err && err.stack ? err.stack : err);
    process.exit(1);
});

main().catch((err) => {
    console.error('node leaderboard library test failed at "' + step + '":');
    console.error(err && err.stack ? err.stack : err);
    process.exit(1);
});
