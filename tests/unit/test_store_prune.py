"""What `cache prune --remote` removes from a shared store's listing (`store_prune.plan`): listings as the
back ends give them (a directory's `mtime` in seconds, S3's `LastModified` as a datetime)."""

from __future__ import annotations

import datetime

from trt_tui.core.cache.store_prune import STALE, plan

NOW = 1_000_000.0
DAY = 86400.0


def key(n: int) -> str:
    return f"{n:064x}"


def stored(listing: dict, n: int, size: int, age: float, root: str = "/store") -> None:
    """Engine `n` of `size` bytes (and its 100-byte record) stored `age` seconds before NOW."""
    k = key(n)
    listing[f"{root}/{k[:2]}/{k}.engine"] = {"size": size, "mtime": NOW - age}
    listing[f"{root}/{k[:2]}/{k}.json"] = {"size": 100, "mtime": NOW - age}


def test_a_size_removes_the_oldest_stored_first_each_record_before_its_engine() -> None:
    listing: dict = {}
    stored(listing, 1, 3000, 3 * DAY)
    stored(listing, 2, 2000, 1 * DAY)
    stored(listing, 3, 1000, 2 * DAY)
    decided = plan(listing, NOW, max_bytes=3000)
    k1, k3 = key(1), key(3)
    assert decided.removals == [[f"/store/{k1[:2]}/{k1}.json", f"/store/{k1[:2]}/{k1}.engine"],
                                [f"/store/{k3[:2]}/{k3}.json", f"/store/{k3[:2]}/{k3}.engine"]]
    assert (decided.removed, decided.removed_bytes, decided.kept_bytes) == (2, 4200, 2100)
    assert plan(listing, NOW, max_bytes=10_000).removals == []
    assert plan(listing, NOW, max_bytes=0).removed == 3


def test_age_and_size_together_and_s3_times() -> None:
    listing: dict = {}
    for n, (size, age) in enumerate([(3000, 10 * DAY), (2000, 2 * DAY), (1000, 1 * DAY)], start=1):
        k = key(n)
        when = datetime.datetime.fromtimestamp(NOW - age, tz=datetime.timezone.utc)
        listing[f"bucket/team/{k[:2]}/{k}.engine"] = {"size": size, "LastModified": when}
        listing[f"bucket/team/{k[:2]}/{k}.json"] = {"size": 100, "LastModified": when}
    decided = plan(listing, NOW, older_than=7 * DAY, max_bytes=2500)
    assert [r[1].rsplit("/", 1)[1] for r in decided.removals] == [f"{key(1)}.engine", f"{key(2)}.engine"]
    assert decided.kept_bytes == 1100


def test_a_store_under_way_is_left_alone_and_counted_and_leftovers_go() -> None:
    listing: dict = {}
    stored(listing, 1, 1000, 2 * DAY)
    under_way, killed, alone = key(2), key(3), key(4)
    listing[f"/store/{under_way[:2]}/{under_way}.engine"] = {"size": 500, "mtime": NOW - 5}
    listing[f"/store/{killed[:2]}/{killed}.engine"] = {"size": 700, "mtime": NOW - STALE - 1}
    listing[f"/store/{alone[:2]}/{alone}.json"] = {"size": 100, "mtime": NOW - 5}  # its engine was removed by hand
    stale_tmp = f"/store/{under_way[:2]}/{under_way}.{'a' * 32}.tmp.engine"
    fresh_tmp = f"/store/{under_way[:2]}/{under_way}.{'b' * 32}.tmp.json"
    listing[stale_tmp] = {"size": 300, "mtime": NOW - STALE - 1}
    listing[fresh_tmp] = {"size": 100, "mtime": NOW - 1}
    listing["/store/README.txt"] = {"size": 10_000, "mtime": NOW - 10 * DAY}  # not the store's: never touched
    decided = plan(listing, NOW, max_bytes=1000)
    removed = [path for objects in decided.removals for path in objects]
    assert sorted(removed) == sorted([stale_tmp, f"/store/{killed[:2]}/{killed}.engine",
                                      f"/store/{alone[:2]}/{alone}.json",
                                      f"/store/{key(1)[:2]}/{key(1)}.json", f"/store/{key(1)[:2]}/{key(1)}.engine"])
    assert decided.removed == 1 and decided.kept_bytes == 500  # the store under way, counted against the size
    # without a limit, only the leftovers go
    assert plan(listing, NOW, older_than=7 * DAY).removed == 0
