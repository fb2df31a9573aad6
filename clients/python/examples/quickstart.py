"""A typed tour of the podium client: submit scores, read the board, follow it live.

Run against a server: PODIUM_URL=http://127.0.0.1:7070 python examples/quickstart.py
"""

from __future__ import annotations

import uuid

from podium_client import Client, Event, MemberNotFound, Page, Submission


def show(page: Page) -> None:
    for e in page.entries:
        print(f"{e.rank}. {e.display_name} {e.score:g}")


def main() -> None:
    board = "quickstart-" + uuid.uuid4().hex[:8]
    with Client() as c:  # $PODIUM_URL and $PODIUM_API_KEY, else http://127.0.0.1:7070
        c.put_board(board, {"order": "desc", "update": "best"})
        with c.events(board, top=3, snapshot=True) as live:
            snapshot: Event = next(live)
            print(f"watching {board}: {snapshot.size} members")

            c.submit(board, "ann", 120, name="Ann")
            c.submit_many(board, [Submission("bea", 150, name="Bea"), Submission("cy", 90)])
            c.submit(board, "ann", 100)  # not an improvement: kept at 120

            show(c.top(board, page_size=10))
            me = c.entry(board, "cy")
            print(f"cy is #{me.rank}, better than {me.percentile:.0f}% of the board")
            try:
                c.rank(board, "nobody")
            except MemberNotFound as err:
                print(f"{err.code}: {err.message}")

            for _ in range(4):  # ann enters; bea enters above her, ann moves; cy enters
                ev = next(live)
                print(f"live: {ev.type} {ev.member} -> #{ev.rank}")
        c.delete_board(board)


if __name__ == "__main__":
    main()
