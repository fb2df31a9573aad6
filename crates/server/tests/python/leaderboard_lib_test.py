"""The agoragames `leaderboard` library for Python (3.7.3, PyPI), unchanged,
against a Redis-protocol server: run with the venv scripts/test.sh builds
(it pins redis-py 2.10.6, the client API that library is written for).
Usage: leaderboard_lib_test.py PORT; exits non-zero on the first mismatch."""
import sys
from leaderboard.leaderboard import Leaderboard
from leaderboard.tie_ranking_leaderboard import TieRankingLeaderboard
port = int(sys.argv[1])
def s(x):
    return x.decode() if isinstance(x, bytes) else x
lb = Leaderboard('highscores', port=port, host='127.0.0.1')
lb.delete_leaderboard()
for i in range(1, 101):
    lb.rank_member('member_%d' % i, i, '{"n": %d}' % i)
assert lb.total_members() == 100, lb.total_members()
assert lb.total_pages() == 4, lb.total_pages()
assert lb.rank_for('member_100') == 1, lb.rank_for('member_100')
assert lb.score_for('member_42') == 42.0
page = lb.leaders(1)
assert [s(e['member']) for e in page[:3]] == ['member_100', 'member_99', 'member_98'], page[:3]
assert page[0]['rank'] == 1 and page[0]['score'] == 100.0
around = lb.around_me('member_50')
assert len(around) == 25 and any(s(e['member']) == 'member_50' for e in around), around
assert s(lb.member_data_for('member_7')) == '{"n": 7}'
ranked = lb.ranked_in_list(['member_1', 'member_100', 'nobody'])
assert [r['rank'] for r in ranked[:2]] == [100, 1], ranked
lb.change_score_for('member_1', 1000)
assert lb.rank_for('member_1') == 1
lb.remove_member('member_1')
assert lb.total_members() == 99
assert lb.total_members_in_score_range(10, 20) == 11
assert lb.percentile_for('member_100') == 99, lb.percentile_for('member_100')
assert lb.score_and_rank_for('member_99')['rank'] == 2
lb.remove_members_in_score_range(2, 10)
assert lb.total_members() == 90, lb.total_members()
t = TieRankingLeaderboard('ties', port=port, host='127.0.0.1')
t.delete_leaderboard()
for m, s in [('a', 10), ('b', 10), ('c', 5), ('d', 1)]:
    t.rank_member(m, s)
assert [t.rank_for(m) for m in 'abcd'] == [1, 1, 2, 3], [t.rank_for(m) for m in 'abcd']
print('leaderboard library OK')
