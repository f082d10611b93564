"""``Groups`` behaves like a dict of insertion-ordered dicts, whatever size its groups have."""

from __future__ import annotations

from gateway.stores.file.groups import Groups


def first_letter_groups() -> Groups[str]:
    """Words in named groups, each known in its group by its first letter."""
    return Groups(lambda word: word[0])


def test_members_join_in_order_and_a_same_key_replaces_in_place() -> None:
    groups = first_letter_groups()

    groups.add("g", "apple")
    one = list(groups.members("g"))
    groups.add("g", "berry")
    groups.add("g", "cherry")
    groups.add("g", "bean")

    assert one == ["apple"]
    assert list(groups.members("g")) == ["apple", "bean", "cherry"]
    assert list(groups.members("other")) == []


def test_a_lone_member_is_replaced_by_its_key_and_found_only_by_it() -> None:
    groups = first_letter_groups()

    groups.add("g", "apple")
    groups.add("g", "avocado")

    assert list(groups.members("g")) == ["avocado"]
    assert groups.get("g", "a") == "avocado"
    assert groups.get("g", "b") is None
    assert groups.get("other", "a") is None


def test_removing_shrinks_a_group_and_then_drops_it() -> None:
    groups = first_letter_groups()
    for word in ("apple", "berry", "cherry"):
        groups.add("g", word)

    groups.remove("g", "b")
    two = list(groups.members("g"))
    groups.remove("g", "a")
    one = list(groups.members("g"))
    groups.remove("g", "x")  # no such member: nothing changes
    groups.add("g", "apple")
    regrown = list(groups.members("g"))
    groups.remove("g", "c")
    groups.remove("g", "a")

    assert two == ["apple", "cherry"]
    assert one == ["cherry"]
    assert regrown == ["cherry", "apple"]
    assert list(groups.members("g")) == []
    assert groups.get("g", "a") is None


def test_members_of_many_groups_come_group_after_group() -> None:
    groups = first_letter_groups()
    groups.add("g1", "apple")
    groups.add("g2", "berry")
    groups.add("g2", "cherry")

    in_order = groups.members_of(["g2", "none", "g1"])
    found = groups.members_in({"g1", "g2", "none"})

    assert in_order == ["berry", "cherry", "apple"]
    assert sorted(found) == ["apple", "berry", "cherry"]
